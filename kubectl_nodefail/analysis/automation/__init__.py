"""Who else acts on a failed node: remediation automation found in the snapshot, per node.

Pure: the snapshot's objects and `now` in, one Coverage per automation that covers the node out,
each stated by claims (claims.py) whose premises premises.py re-reads from the raw dump. What
each automation does, its defaults and the fields read are cited in docs/automation.md; the
short citations here name the source file the fact comes from.

One module per automation (CRDs read by cluster/automation_read.py): capi.py (Cluster API
MachineHealthCheck), medik8s.py (Medik8s NodeHealthCheck), karpenter.py (Karpenter's node
repair), autoscaler.py (cluster-autoscaler and the cloud node lifecycle controller); coverage.py
holds the Coverage each returns and the readers they share. Here: every automation covering a
node (`covering`), the objects whose events belong in its timeline (`timeline_objects`), and
the names read outside the package.
"""

from __future__ import annotations

from datetime import datetime

from kubectl_nodefail.analysis.automation.autoscaler import (
    CA_DELETION_CANDIDATE,
    CA_SCALE_DOWN_UNREADY_SECONDS,
    CA_TO_BE_DELETED,
    _autoscaler,
    _cloud_lifecycle,
)
from kubectl_nodefail.analysis.automation.capi import (
    CAPI_PAUSED,
    CAPI_SKIP_REMEDIATION,
    CLUSTER_NAMESPACE_ANNOTATION,
    MACHINE_ANNOTATION,
    _machine_health_checks,
    _machine_of,
)
from kubectl_nodefail.analysis.automation.coverage import (
    ACTING,
    DUE,
    OVERDUE,
    OVERDUE_SECONDS,
    SCHEDULED,
    STALLED,
    STALLED_SECONDS,
    Coverage,
    _of,
    go_duration,
    scaled,
    selects,
    stands_back,
)
from kubectl_nodefail.analysis.automation.karpenter import _karpenter
from kubectl_nodefail.analysis.automation.medik8s import NHC_EXCLUDE_LABEL, NHC_GROUP, _nhc
from kubectl_nodefail.snapshot.model import Obj, Snapshot

# the names read outside the package (remediate/plan.py, cluster/, timeline.py, advice.py,
# findings.py, tests)
__all__ = [
    "ACTING",
    "CAPI_PAUSED",
    "CAPI_SKIP_REMEDIATION",
    "CA_DELETION_CANDIDATE",
    "CA_SCALE_DOWN_UNREADY_SECONDS",
    "CA_TO_BE_DELETED",
    "CLUSTER_NAMESPACE_ANNOTATION",
    "DUE",
    "KINDS",
    "MACHINE_ANNOTATION",
    "NHC_EXCLUDE_LABEL",
    "OVERDUE",
    "OVERDUE_SECONDS",
    "SCHEDULED",
    "STALLED",
    "STALLED_SECONDS",
    "Coverage",
    "covering",
    "go_duration",
    "scaled",
    "selects",
    "stands_back",
    "timeline_objects",
]

KINDS = ("Machine", "MachineHealthCheck", "NodeHealthCheck", "NodeClaim")


def covering(node: Obj, snap: Snapshot, now: datetime) -> list[Coverage]:
    """Every automation in the snapshot that covers `node`."""
    out = _machine_health_checks(node, snap, now)
    out += [_nhc(node, nhc, snap, now) for nhc in _of(snap, "NodeHealthCheck", NHC_GROUP)]
    out += [_karpenter(node, snap, now), _autoscaler(node, now), _cloud_lifecycle(node, now)]
    return [c for c in out if c is not None]


def timeline_objects(node: Obj, snap: Snapshot) -> list[tuple[str, str, str]]:
    """(kind, namespace, name) of the automation objects about `node`: their events belong in
    its timeline."""
    out: list[tuple[str, str, str]] = []
    machine, _, _ = _machine_of(node, snap)
    if machine is not None:
        out.append(
            ("Machine", machine["metadata"].get("namespace", ""), machine["metadata"]["name"])
        )
    for cov in covering(node, snap, snap.captured_at):
        if cov.object.startswith("Node/"):
            continue  # the node's own events are in the timeline already
        kind, _, rest = cov.object.partition("/")
        namespace, _, name = rest.rpartition("/")
        out.append((kind, namespace, name))
    return list(dict.fromkeys(out))
