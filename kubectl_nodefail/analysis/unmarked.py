"""Pods on a node nothing marks: its kubelet stopped renewing its lease while
kube-controller-manager has no leader (nodes.classify's `no-controller-leader`), or while its
node lifecycle controller, past its default time to, does not mark it (`lease-overdue`: it
does not run, or its grace is longer than the default), so the node stays Ready, with no
unreachable taint. Such a pod is as stuck as one on a node marked NotReady: nothing evicts it,
nothing replaces it, and the API still says Running.

Its report is made as on a failed node (pods.analyse_pod with the node seen as failed: what it
says of the missing taint and the missing leader holds), then told apart here: its category is
`on-unmarked-node`, and its suggestion is the leader's return or the controller's, not a step on
the node (remediate takes none on a Ready node, and refuses every destructive one while there is
no leader).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from datetime import datetime

from kubectl_nodefail.analysis import brake, facts
from kubectl_nodefail.analysis.claims import claim, once
from kubectl_nodefail.analysis.findings import Action, NodeFinding, PodFinding
from kubectl_nodefail.analysis.leader import Leader, leader
from kubectl_nodefail.analysis.nodes import LEADER_GAP, is_ready, overdue
from kubectl_nodefail.analysis.text import ago
from kubectl_nodefail.snapshot.model import Obj, Snapshot

CAUSE = "no-controller-leader"  # the node's cause (nodes.classify)
CAUSES = (CAUSE, "lease-overdue")  # nothing marks the node: no leader, or it is past its time
CATEGORY = "on-unmarked-node"


def silent(
    nodes: list[Obj],
    leases: list[Obj],
    chief: Leader | None,
    minor: int | None,
    now: datetime,
    leader_read: bool = True,
) -> list[str]:
    """The Ready nodes among `leases`' (the late ones a read took) that nothing marks, so
    whose pods are as stuck as a failed node's: every one while kube-controller-manager has no
    leader, else those the node lifecycle controller was due to mark and has not
    (nodes.overdue) when its Lease was read (unread, a new leader's later first look may have
    started the grace again). cluster/gather.py reads their pods."""
    ready = {n["metadata"]["name"]: n for n in nodes if is_ready(n)}
    late = [
        x
        for x in leases
        if x["metadata"].get("namespace") == facts.NODE_LEASE_NAMESPACE
        and x["metadata"].get("name") in ready
    ]
    if chief is not None and chief.expired():
        return [str(x["metadata"]["name"]) for x in late]
    if not leader_read:
        return []
    return [
        str(x["metadata"]["name"])
        for x in late
        if overdue(ready[x["metadata"]["name"]], x, chief, minor, now)
    ]


def read_for(snap: Snapshot, only_nodes: Collection[str] = ()) -> set[str]:
    """The Ready nodes whose pods a read took because nothing marks them (cluster/gather.py,
    with no node filter and the leader's Lease read: their leases are in the snapshot)."""
    if only_nodes:
        return set()
    unread = any(g.startswith(LEADER_GAP) for g in snap.gaps)
    chief, now = leader(snap), snap.captured_at
    return set(silent(snap.nodes, snap.leases, chief, snap.server_minor, now, not unread))


def views(findings: dict[str, NodeFinding]) -> dict[str, NodeFinding]:
    """Each unmarked node as its pods' reports see it: failed (its kubelet is silent past its
    lease), though its Ready condition does not say so."""
    return {name: dataclasses.replace(f, failed=True) for name, f in findings.items() if of(f)}


def of(node: NodeFinding) -> bool:
    """Ready, its kubelet's lease expired, and nothing to mark it: no controller leader, or a
    node lifecycle controller past its time (nodes.classify's `lease-overdue`)."""
    return node.cause.code in CAUSES and not node.failed and bool(node.lease_stale)


def tell(pod: PodFinding, node: NodeFinding, chief: Leader | None, now: datetime) -> None:
    """The pod's category and suggestion, once its report is made."""
    pod.category = CATEGORY
    renewed = node.lease_age_seconds
    leaderless = chief is not None and chief.expired() and node.cause.code == CAUSE
    lead = [*chief.premises()] if chief is not None else []
    said = claim(
        "unmarked-node",
        "why",
        f"its node {node.name} is still Ready, but its kubelet "
        + (f"last renewed its lease {ago(renewed)}" if renewed is not None else "is silent")
        + " (past the lease's duration), and "
        + (
            "no controller marks the node NotReady or taints it for that without a leader."
            if leaderless
            else "the node lifecycle controller has not marked it NotReady, past its default "
            "time to (the node's cause): the unreachable taint it puts on a failed node, which "
            "evicts pods there, does not come until it does."
        ),
        *once([*node.cause.because, *lead]),
    )
    pod.claims.insert(0, said)  # after the missing leader's (diagnose._leaderless_pods)
    pod.explanation = f"{said.text} {pod.explanation}".strip()
    then = (
        f"once it marks {node.name} NotReady and taints it, what then happens to this pod is "
        "what happens on any failed node (diagnose again then); remediate takes no step on "
        "this node while it is Ready"
    )
    if leaderless and chief is not None:
        pod.action = Action(
            "investigate",
            f"{brake.ADVICE_OPENINGS[1]} (its pods or service on the control plane, its log): "
            f"once a leader runs, it marks {node.name} NotReady and taints it, and what then "
            "happens to this pod is what happens on any failed node (diagnose again then); "
            "remediate takes no step on this node while it is Ready",
            "none",
            kubectl=f"kubectl -n kube-system get lease {chief.lease['metadata']['name']} -o yaml",
            because=once([*node.cause.because, *chief.premises()]),
            rests_on=["no-leader", "unmarked-node", "cause"],
        )
        return
    pod.action = Action(
        "investigate",
        "find out why the node lifecycle controller has not marked its node (kube-controller-"
        "manager's --node-monitor-grace-period and --controllers, its log) and check the "
        f"machine: {then}",
        "none",
        kubectl=f"kubectl -n {facts.NODE_LEASE_NAMESPACE} get lease {node.name} -o yaml",
        because=once([*node.cause.because, *lead]),
        rests_on=["unmarked-node", "cause"],
    )
