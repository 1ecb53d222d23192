"""A pod bound to a node whose Node object no longer exists (deleted): how and when PodGC
removes it (`analyse_orphan_pod`). The node lifecycle controller records the deletion as a
RemovingNode Event about the Node ("Removing Node N from Controller"): where the snapshot holds
it (gather reads the events of such nodes; an Event lasts --event-ttl, an hour by default), PodGC's
time is dated from it, and a pod still bound past it is said to be passed over.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from kubectl_nodefail.analysis import advice, controllers, owners
from kubectl_nodefail.analysis.claims import Premise, claim, fact, text_of
from kubectl_nodefail.analysis.facts import (
    PODGC_PERIOD_SECONDS,
    PODGC_QUARANTINE_SECONDS,
    PODGC_SLACK_SECONDS,
)
from kubectl_nodefail.analysis.findings import Action, PodFinding
from kubectl_nodefail.analysis.leader import leader
from kubectl_nodefail.analysis.podstatus import kubectl_status, ready_column
from kubectl_nodefail.analysis.text import duration
from kubectl_nodefail.snapshot.model import Obj, Snapshot, format_time, parse_time, shifted

REMOVING_NODE = "RemovingNode"  # the node lifecycle controller's Event when a Node is deleted
# the first pass after the quarantine: the latest PodGC deletes such a pod
PODGC_WITHIN_SECONDS = PODGC_QUARANTINE_SECONDS + 2 * PODGC_PERIOD_SECONDS


def removed(snap: Snapshot, node_name: str) -> tuple[datetime, Obj, str] | None:
    """(when, the Event, its time field) of the newest RemovingNode Event about `node_name`:
    when its Node was deleted, as the node lifecycle controller saw it. None when the snapshot
    holds none (that controller off, the Event expired or unread)."""
    found = []
    for ev in snap.events_about("Node", "", node_name):
        if ev.get("reason") != REMOVING_NODE:
            continue
        for path in ("lastTimestamp", "eventTime", "firstTimestamp"):
            when = parse_time(ev.get(path))
            if when is not None:
                found.append((when, ev, path))
                break
    return max(found, key=lambda f: f[0]) if found else None


def analyse_orphan_pod(pod: Obj, snap: Snapshot, now: datetime) -> PodFinding:
    """A pod bound to a node whose Node object no longer exists (deleted): no kubelet, no node
    lifecycle controller, no taint acts on it; PodGC force-deletes it (marking it Failed first),
    40-80 s after the node's deletion (dated by its RemovingNode Event where the snapshot has
    it; past that and the slack, with a leader running since, passed over). Finalizers other
    than the Job's tracking one still keep the object. Its replacement is the owner's own
    rule's (controllers.explain, on the node as failed: nothing runs there), its sentences
    this function's."""
    meta = pod["metadata"]
    namespace, name = meta.get("namespace", ""), meta["name"]
    node_name = str((pod.get("spec") or {}).get("nodeName") or "")
    links, owner_objs = owners.chain(pod, snap)
    kind = owners.controller_type(pod, links)
    deletion = parse_time(meta.get("deletionTimestamp"))
    terminating = deletion is not None
    finalizers = list(meta.get("finalizers") or [])
    held = advice.holding_finalizers(finalizers, terminating, "delete-node")
    within = PODGC_WITHIN_SECONDS
    because = [fact("Pod", pod, "spec.nodeName"), fact("Pod", pod, "metadata.deletionTimestamp")]
    if held:
        because.append(fact("Pod", pod, "metadata.finalizers"))
    meaning = claim(
        "status-meaning",
        "meaning",
        f"bound to {node_name}, whose Node object no longer exists (deleted): PodGC "
        "force-deletes it",
        *because[:1],
    )
    chief = leader(snap)
    leaderless = chief is not None and chief.expired()
    if leaderless and chief is not None:
        because += chief.premises()
    # PodGC runs in kube-controller-manager, its quarantine in the leader's memory: without a
    # leader it does not look, and the count starts at a new leader's first look
    counted_from = "a leader takes over" if leaderless else "the node's deletion"
    dated = None if leaderless or held else _dated(snap, pod, node_name, now, because)
    why = (
        "no kubelet confirms anything and no taint applies; PodGC force-deletes a pod bound to "
        f"a missing node once the node has been missing {PODGC_QUARANTINE_SECONDS}s from its "
        f"first look (it looks every {PODGC_PERIOD_SECONDS}s)"
        + (", but it runs in kube-controller-manager, which has no leader" if leaderless else "")
        + f", so it goes {PODGC_QUARANTINE_SECONDS}-{within}s after {counted_from}"
        + (dated.words if dated is not None else "")
        + (
            f"; finalizers {', '.join(held)} then keep the object until removed "
            f"({'; '.join(advice.finalizer_owner(f) for f in held)})"
            if held
            else ""
        )
        + "."
    )
    ctx = controllers.Context(
        pod,
        kind,
        owner_objs,
        snap,
        node_name,
        True,
        {node_name},
        terminating,
        now,
        owner_kinds=[link.kind for link in links[: len(owner_objs)]],
        gone=True,
    )
    explained = controllers.explain(ctx)
    claims = [meaning, claim("released-by", "why", why, *because)]
    claims += [c for c in explained.claims if c.section == "replacement"]
    return PodFinding(
        namespace=namespace,
        name=name,
        uid=meta.get("uid", ""),
        resource_version=meta.get("resourceVersion", ""),
        node=node_name,
        node_failed=False,
        kubectl_status=kubectl_status(pod),
        ready=ready_column(pod),
        meaning=text_of(claims, "meaning"),
        category="on-deleted-node",
        terminating=terminating,
        stuck_seconds=(now - deletion).total_seconds() if deletion else None,
        deletion_timestamp=deletion,
        owner_chain=links,
        controller=kind,
        explanation=text_of(claims, "why"),
        replacement=explained.replacement,
        storage=[],
        timeline="",
        eviction_at=None,
        if_node_returns="",  # the node cannot return: a node registering again is a new object
        action=advice.rests_on(
            Action(
                "finalizer-held"
                if held
                else "investigate"
                if leaderless or (dated is not None and dated.over)
                else "wait",
                (
                    f"PodGC removes it, but finalizers {', '.join(held)} keep the object: "
                    f"{'; '.join(advice.finalizer_owner(f) for f in held)}"
                    if held
                    else f"bring kube-controller-manager back: PodGC removes it "
                    f"{PODGC_QUARANTINE_SECONDS}-{within}s after a leader takes over"
                    if leaderless
                    else dated.advice
                    if dated is not None
                    else f"PodGC removes it {PODGC_QUARANTINE_SECONDS}-{within}s after the node's "
                    "deletion; if "
                    "it stays longer, check kube-controller-manager (its podgc controller)"
                ),
                "none",
                until=dated.due if dated is not None and not dated.over else None,
            ),
            claims,
        ),
        evidence=[f"spec.nodeName {node_name}: no such Node"],
        finalizers=finalizers,
        claims=claims,
        phase=str((pod.get("status") or {}).get("phase") or ""),
    )


@dataclass
class _Dated:
    """PodGC's time for the pod, from the node's RemovingNode Event."""

    due: datetime  # the latest PodGC deletes it, counted from the deletion or a later leader
    over: bool  # past `due` and the slack: passed over
    words: str  # what the explanation adds
    advice: str  # the action's words


def _dated(
    snap: Snapshot, pod: Obj, node_name: str, now: datetime, because: list[Premise]
) -> _Dated | None:
    """PodGC's time dated by the node's RemovingNode Event (None without one), counted from
    the latest of it, the pod's creation (a pod made bound to that name later starts PodGC's
    count at its first look at it) and a later leader's start; their facts join `because`."""
    found = removed(snap, node_name)
    if found is None:
        return None
    when, ev, path = found
    because += [fact("Event", ev, "reason"), fact("Event", ev, path)]
    at = f"{format_time(when)} (its {REMOVING_NODE} Event)"
    start, counted = when, ""
    created = parse_time(pod["metadata"].get("creationTimestamp"))
    if created is not None and created > start:
        because.append(fact("Pod", pod, "metadata.creationTimestamp"))
        start = created
        counted = f"; the pod was made after it, at {format_time(start)}, and counts from then"
    chief = leader(snap)
    if chief is not None and chief.since > start:
        because += chief.premises()
        start = chief.since
        counted = f"; a leader took over after it, at {format_time(start)}, and counts from then"
    due = shifted(start, PODGC_WITHIN_SECONDS)
    if (now - due).total_seconds() <= PODGC_SLACK_SECONDS:
        left = max((due - now).total_seconds(), 0.0)
        return _Dated(
            due,
            False,
            f", which was at {at}{counted}: by {format_time(due)}",
            f"PodGC removes it by {format_time(due)} ({duration(left)} from now; the node was "
            f"deleted at {at}{counted}); if it stays longer, check kube-controller-manager (its "
            "podgc controller)",
        )
    late = duration((now - when).total_seconds())
    return _Dated(
        due,
        True,
        f", which was at {at}, {late} ago{counted}, and the pod is still bound to it: the "
        "podgc controller does not run or passes it over (kube-controller-manager's "
        "--controllers, its log)",
        f"PodGC has not removed it {late} after the node's deletion at {at}{counted}: check "
        "kube-controller-manager's podgc controller (--controllers, its log)",
    )
