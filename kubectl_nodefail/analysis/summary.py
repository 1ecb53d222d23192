"""What a report adds up to: the headline counts, the NEXT words of each pod, and the groups
pods Terminating on healthy nodes are shown in.

Pure functions over a Report; the renderer shows them and the invariants check them, so the
table, the JSON summary and the checks can never count differently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from kubectl_nodefail.analysis import eviction
from kubectl_nodefail.analysis.advice import finalizer_owner
from kubectl_nodefail.analysis.claims import Claim, Premise, claim, once
from kubectl_nodefail.analysis.findings import PodFinding, Report
from kubectl_nodefail.analysis.text import ago, plural

# on a node that failed; on-unmarked-node: a Ready one nothing marks (analysis/unmarked.py)
ON_FAILED = ("on-failed-node", "terminating-on-failed-node", "on-unmarked-node")
WAITING_FOR_VOLUME = "waiting-for-volume"
WAITING_FOR_NODE = "waiting-for-node"  # Pending, and may run only on failed nodes
ELSEWHERE = "terminating-elsewhere"
ON_DELETED = "on-deleted-node"  # bound to a node whose Node object was deleted: PodGC's


@dataclass
class Counts:
    """The headline numbers. `node_failure` counts pods stuck because a node failed (on it,
    waiting for its volume, or Pending where only failed nodes may run them); `elsewhere` pods
    are Terminating on nodes that did not fail."""

    nodes_total: int
    nodes_not_ready: int
    on_failed_nodes: int
    waiting_for_volume: int
    waiting_for_node: int
    elsewhere: int
    held_by_finalizers: int  # of `elsewhere`
    on_deleted_nodes: int = 0  # bound to a node whose Node object was deleted

    @property
    def node_failure(self) -> int:
        return (
            self.on_failed_nodes
            + self.waiting_for_volume
            + self.waiting_for_node
            + self.on_deleted_nodes
        )


def counts(report: Report) -> Counts:
    elsewhere = [p for p in report.pods if p.category == ELSEWHERE]
    return Counts(
        nodes_total=report.nodes_total,
        nodes_not_ready=report.nodes_not_ready_total,
        on_failed_nodes=sum(1 for p in report.pods if p.category in ON_FAILED),
        waiting_for_volume=sum(1 for p in report.pods if p.category == WAITING_FOR_VOLUME),
        waiting_for_node=sum(1 for p in report.pods if p.category == WAITING_FOR_NODE),
        elsewhere=len(elsewhere),
        held_by_finalizers=sum(1 for p in elsewhere if p.finalizers),
        on_deleted_nodes=sum(1 for p in report.pods if p.category == ON_DELETED),
    )


def leaderless(pod: PodFinding) -> bool:
    """The pod's report was made with no kube-controller-manager leader (its claim says so)."""
    return any(c.kind == "no-leader" for c in pod.claims)


def passed_over(pod: PodFinding) -> bool:
    """A pod bound to a deleted node that PodGC, with a leader running, has not removed well
    past its time since the node's RemovingNode Event (analysis/orphans.py: investigate)."""
    return pod.category == ON_DELETED and pod.action.code == "investigate" and not leaderless(pod)


def next_step(pod: PodFinding, now: datetime) -> str:
    """What happens next to the pod, in a few words (the NEXT column)."""
    if pod.category == WAITING_FOR_VOLUME:
        return "waits for volume"
    if pod.category == WAITING_FOR_NODE:
        return "waits for node"
    if pod.category == ON_DELETED:
        if pod.action.code == "finalizer-held":
            return "held (finalizers)"
        if passed_over(pod):
            return "not removed (PodGC)"
        return "PodGC, once a leader" if leaderless(pod) else "PodGC removes"
    if not pod.node_failed:
        return "held (finalizers)" if pod.finalizers else "kubelet slow"
    if not pod.terminating:
        if pod.eviction_at is not None and pod.eviction_at <= now:
            return "evicting now"  # due within the controller's lag: no deletion seen yet
        if pod.eviction_at is not None:
            return f"evicted {ago((now - pod.eviction_at).total_seconds())}"
        if eviction.NEVER in pod.timeline:
            return "never evicted"
        if eviction.PAUSED in pod.timeline:
            return "not evicted (zone)"
        said = (eviction.NOT_EVICTING, eviction.UNMARKED, eviction.UNTAINTED)
        if any(w in pod.timeline for w in said):
            return "not evicted (controller)"
        if eviction.UNKNOWN in pod.timeline:
            return "eviction time unknown"
        return "eviction pending"
    return {
        "running": "replaced",
        "finished": "replaced",
        "pending": "replacement Pending",
        "blocked": "BLOCKED",
        "none": "lost",
        "not-wanted": "not wanted",
        "not-needed": "nothing needed",
        "missing": "no replacement",
    }.get(pod.replacement.state, pod.replacement.state)


@dataclass
class PodGroup:
    """Pods Terminating on healthy nodes for the same reason: one finalizer set, one owner."""

    namespace: str
    finalizers: tuple[str, ...]
    owner: str  # Kind/name of the top owner, or (none)
    pods: list[PodFinding] = field(default_factory=list)

    @property
    def nodes(self) -> list[str]:
        return sorted({p.node for p in self.pods if p.node})


def owner_of(pod: PodFinding) -> str:
    if not pod.owner_chain:
        return "(none)" if pod.controller != "mirror" else "Node (static)"
    top = pod.owner_chain[-1]
    return f"{top.kind}/{top.name}"


def elsewhere_groups(report: Report) -> list[PodGroup]:
    """Pods Terminating on nodes that did not fail, grouped by namespace, finalizers and owner
    (in the order first seen)."""
    return _groups(report.pods)


def _groups(pods: list[PodFinding]) -> list[PodGroup]:
    groups: dict[tuple[str, tuple[str, ...], str], PodGroup] = {}
    for pod in pods:
        if pod.category != ELSEWHERE:
            continue
        key = (pod.namespace, tuple(pod.finalizers), owner_of(pod))
        groups.setdefault(key, PodGroup(*key)).pods.append(pod)
    return list(groups.values())


# what a held group's line rests on, from each of its pods' claims: the deletion asked and the
# finalizers (status-meaning), and who owns it (its owner's claims, or that none does)
_HELD_FROM = ("status-meaning", "no-owner", "owner-wants", "static-pod", "unknown-owner")


def held_claims(pods: list[PodFinding]) -> list[Claim]:
    """One claim per group of pods finalizers hold on nodes that did not fail: how many, where,
    whose, which finalizers and who removes them (the "HELD BY FINALIZERS" lines)."""
    out = []
    for group in _groups(pods):
        if not group.finalizers:
            continue
        who = "; ".join(f"{f}: {finalizer_owner(f)}" for f in group.finalizers)
        because = [
            *[
                Premise(f"Pod/{p.namespace}/{p.name}", "spec.nodeName", p.node or None)
                for p in group.pods
            ],
            *[f for p in group.pods for c in p.claims if c.kind in _HELD_FROM for f in c.because],
        ]
        out.append(
            claim(
                "held-by-finalizers",
                "cluster",
                f"{plural(len(group.pods), 'pod')} in {group.namespace} owned by {group.owner}, "
                f"on {plural(len(group.nodes), 'node')}: finalizers {', '.join(group.finalizers)} "
                f"(removed by {who})",
                *once(because),
            )
        )
    return out
