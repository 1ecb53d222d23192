"""Per controller type: why a pod on a failed node is stuck, what replaces it, and what happens
if the node returns. The knowledge comes from the controllers' sources (see the reference doc).

Every statement is a claim (claims.py) with the snapshot facts it rests on. A statement true in
the usual case is made only where its premise holds: the owner still wants the pod (replica
count, ordinal range, a Job not yet finished), the pod had not finished, no finalizer holds it,
a replacement exists and is in the state named.

One module per controller kind (replicasets, statefulsets, jobs; simple for the kinds with a
fixed story), beside the shared context, the replacement search and the overrides that come
before the kind's rule; here, the table of rules and `explain`.
"""

from __future__ import annotations

from kubectl_nodefail.analysis.controllers.context import Context, Explained
from kubectl_nodefail.analysis.controllers.jobs import job
from kubectl_nodefail.analysis.controllers.overrides import (
    _deleting_owner,
    _finished,
    orphaned,
    owner_deleting,
    owner_gone,
)
from kubectl_nodefail.analysis.controllers.replacement import (
    pending_reason,
    required_hosts,
    scheduler_reasons,
)
from kubectl_nodefail.analysis.controllers.replicasets import DEPLOYMENT_REVISION, replicaset
from kubectl_nodefail.analysis.controllers.simple import bare, daemonset, mirror, other
from kubectl_nodefail.analysis.controllers.statefulsets import statefulset

# the names used outside the package (pods.py, cluster/redact.py, tests)
__all__ = [
    "DEPLOYMENT_REVISION",
    "RULES",
    "Context",
    "Explained",
    "explain",
    "pending_reason",
    "required_hosts",
    "scheduler_reasons",
]


RULES = {
    "deployment": replicaset,
    "replicaset": replicaset,
    "replicationcontroller": replicaset,
    "statefulset": statefulset,
    "daemonset": daemonset,
    "job": job,
    "cronjob": job,
    "mirror": mirror,
    "bare": bare,
    "other": other,
}


def explain(ctx: Context) -> Explained:
    """The pod's claims (why it is stuck, its replacement, what happens if the node returns)
    and its replacement. A finished pod that was deleted is explained as such, whatever owns it."""
    if ctx.terminating and ctx.finished and ctx.kind != "mirror":
        return _finished(ctx)
    if owner_gone(ctx):
        return orphaned(ctx)
    deleting = _deleting_owner(ctx)
    if deleting is not None:
        return owner_deleting(ctx, deleting)
    return RULES[ctx.kind](ctx)
