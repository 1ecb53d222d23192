"""A stuck pod's replacement: the owner's pods created since its deletion, their state (Running,
finished, Pending) with the facts that say so, and why a Pending one does not schedule (its own
spec or the scheduler's message).
"""

from __future__ import annotations

import re

from kubectl_nodefail.analysis import facts
from kubectl_nodefail.analysis.claims import Claim, claim, fact
from kubectl_nodefail.analysis.controllers.context import Context, _active
from kubectl_nodefail.analysis.findings import Replacement
from kubectl_nodefail.analysis.podstatus import TERMINAL_PHASES
from kubectl_nodefail.snapshot.model import Obj, parse_time, shifted

# "0/5 nodes are available: 1 node(s) had untolerated taint {...}, 4 node(s) didn't match ...
# preemption: ..." -> the per-reason parts, as the scheduler wrote them.
_AVAILABLE = re.compile(r"^\s*\d+/\d+ nodes are available:\s*(.*)$", re.S)
# The per-node part ends at the first period followed by a space or the end: what follows
# ("preemption: ...", "no new claims to deallocate, preemption: ...") is not a node's reason.
_END = re.compile(r"\.(?:\s|$)")
_SPLIT = re.compile(r",\s*(?=\d+ node\(s\) )")
_PART = re.compile(r"(\d+) (node\(s\) .+)", re.S)


def scheduler_reasons(message: str) -> list[str]:
    """The scheduler's per-node reasons ('4 node(s) didn't match pod anti-affinity rules'), in
    its order; [] when the message is not in that form."""
    m = _AVAILABLE.match(message)
    if not m:
        return []
    head = _END.split(m.group(1), maxsplit=1)[0]
    parts = [_PART.fullmatch(part.strip()) for part in _SPLIT.split(head)]
    if not all(parts):
        return []  # not in the form we know: the caller quotes the whole message
    return [f"{p.group(1)} {p.group(2).strip()}" for p in parts if p]


def scheduled_condition(pod: Obj) -> Obj | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") != "True":
            return dict(cond)
    return None


def pending_reason(pod: Obj, dead_node: str) -> str:
    """Why a replacement does not schedule: its own spec where it names the failed node, else
    the scheduler's message as written (never a cause guessed from a keyword)."""
    spec = pod.get("spec") or {}
    selector = spec.get("nodeSelector") or {}
    if selector.get(facts.LABEL_HOSTNAME) == dead_node:
        return f"pinned: nodeSelector {facts.LABEL_HOSTNAME}={dead_node} names the failed node"
    if required_hosts(spec) == [dead_node]:
        return (
            f"pinned: its required node affinity allows only {facts.LABEL_HOSTNAME} "
            f"{dead_node}, the failed node"
        )
    cond = scheduled_condition(pod)
    message = (cond or {}).get("message") or (cond or {}).get("reason") or ""
    reasons = scheduler_reasons(message)
    if reasons:
        return "the scheduler found no node: " + "; ".join(reasons)
    if message:
        return f"the scheduler says: {message}"
    return "not scheduled yet (no scheduler message)"


def required_hosts(spec: Obj) -> list[str] | None:
    """The hostnames a required node affinity allows, when it is one `hostname In [...]` term."""
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if len(terms) != 1:
        return None
    exprs = terms[0].get("matchExpressions") or []
    if len(exprs) != 1 or terms[0].get("matchFields"):
        return None
    e = exprs[0]
    if e.get("key") != facts.LABEL_HOSTNAME or e.get("operator") != "In":
        return None
    return list(e.get("values") or [])


def _replacements(ctx: Context, owner_uid: str, finished_too: bool = False) -> list[Obj]:
    """Pods of the same owner created since the stuck pod's deletion was requested (for Jobs,
    finished ones count too: a replacement that already completed did its job)."""
    meta = ctx.pod["metadata"]
    since = parse_time(meta.get("deletionTimestamp"))
    if since is not None:
        since = shifted(since, -((meta.get("deletionGracePeriodSeconds") or 0) + 5))
    out = []
    for other in ctx.snap.pods_owned_by(owner_uid):
        if other["metadata"].get("uid") == meta.get("uid"):
            continue
        finished = (other.get("status") or {}).get("phase") in TERMINAL_PHASES
        if not (_active(other, ctx.failed_nodes) or (finished_too and finished)):
            continue
        created = parse_time(other["metadata"].get("creationTimestamp"))
        if since is None or (created is not None and created >= since):
            out.append(other)
    return out


def _where(found: list[Obj]) -> str:
    return ", ".join(f"{p['metadata']['name']} on {p['spec'].get('nodeName')}" for p in found)


def _found(pods: list[Obj], dead_node: str, what: str) -> tuple[Replacement, Claim]:
    """A replacement found: Running, finished or Pending, with the facts that say so. `pods`
    names the replacements in the state said (a Pending one is never listed as Running)."""
    running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
    done = [p for p in pods if (p.get("status") or {}).get("phase") in TERMINAL_PHASES]
    waiting = [p for p in pods if p not in running and p not in done]
    if waiting and (running or done):
        return _partly_replaced(running or done, waiting, dead_node, what)
    if running:
        names = [p["metadata"]["name"] for p in running]
        rep = Replacement("running", f"{what} Running: {_where(running)}", names)
        because = [fact("Pod", p, "status.phase") for p in running]
        because += [fact("Pod", p, "spec.nodeName") for p in running]
        return rep, claim("replacement", "replacement", rep.summary, *because)
    if done:
        phases = "/".join(sorted({p["status"]["phase"] for p in done}))
        rep = Replacement("finished", f"{what} already ran to the end ({phases}): {_where(done)}")
        rep.pods = [p["metadata"]["name"] for p in done]
        return rep, claim(
            "replacement",
            "replacement",
            rep.summary,
            *(fact("Pod", p, "status.phase") for p in done),
        )
    pending = pods[0]
    reason = pending_reason(pending, dead_node)
    rep = Replacement(
        "pending",
        f"{what} {pending['metadata']['name']} is Pending: {reason}",
        [p["metadata"]["name"] for p in pods],
        pending_reason=reason,
    )
    because = [fact("Pod", pending, "status.phase"), fact("Pod", pending, "spec.nodeName")]
    if scheduled_condition(pending) is not None:
        because.append(fact("Pod", pending, "status.conditions[type=PodScheduled].message"))
    return rep, claim("blocked-by", "replacement", rep.summary, *because)


def _partly_replaced(
    serving: list[Obj], waiting: list[Obj], dead_node: str, what: str
) -> tuple[Replacement, Claim]:
    """Some of the owner's new pods run (or ran), others wait: which one stands in for this pod
    the API cannot say, so the pod is not called replaced while one of them is Pending."""
    pending = waiting[0]
    reason = pending_reason(pending, dead_node)
    state = "Running" if serving[0].get("status", {}).get("phase") == "Running" else "finished"
    rep = Replacement(
        "pending",
        f"{what}s: {len(serving)} {state} ({_where(serving)}), {len(waiting)} Pending "
        f"({pending['metadata']['name']}: {reason})",
        [p["metadata"]["name"] for p in waiting],
        pending_reason=reason,
    )
    because = [fact("Pod", p, "status.phase") for p in serving + waiting]
    because += [fact("Pod", p, "spec.nodeName") for p in serving + waiting]
    if scheduled_condition(pending) is not None:
        because.append(fact("Pod", pending, "status.conditions[type=PodScheduled].message"))
    return rep, claim("blocked-by", "replacement", rep.summary, *because)


def _returns_after_replacement(rep: Replacement) -> str:
    """What becomes of the replacement when the old node returns, from its state only."""
    if rep.state == "running":
        return "the replacement keeps running."
    if rep.state == "finished":
        return "the replacement's result stands."
    if rep.state == "pending":
        return (
            "the Pending replacement is scheduled again (the returning node is a candidate "
            "once its taints are lifted)."
        )
    if rep.state == "not-wanted":
        return "nothing is recreated (the owner wants no replacement)."
    return "nothing else is recreated by that alone."
