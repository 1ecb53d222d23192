"""Pods on a node nothing marks: its kubelet stopped renewing its lease while
kube-controller-manager has no leader, so the node stays Ready, untainted (nodes.classify's
`no-controller-leader`). Such a pod is as stuck as one on a node marked NotReady: nothing
evicts it, nothing replaces it, and the API still says Running.

Its report is made as on a failed node (pods.analyse_pod with the node seen as failed: what it
says of the missing taint and the missing leader holds), then told apart here: its category is
`on-unmarked-node`, and its suggestion is the leader's return, not a step on the node (remediate
takes none on a Ready node, and refuses every destructive one while there is no leader).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from datetime import datetime

from kubectl_nodefail.analysis import brake, facts
from kubectl_nodefail.analysis.claims import claim, once
from kubectl_nodefail.analysis.findings import Action, NodeFinding, PodFinding
from kubectl_nodefail.analysis.leader import Leader, leader
from kubectl_nodefail.analysis.nodes import is_ready
from kubectl_nodefail.analysis.text import ago
from kubectl_nodefail.snapshot.model import Snapshot

CAUSE = "no-controller-leader"  # the node's cause (nodes.classify)
CATEGORY = "on-unmarked-node"


def read_for(snap: Snapshot, only_nodes: Collection[str] = ()) -> set[str]:
    """The Ready nodes whose pods a read took because nothing marks them (cluster/gather.py
    reads them when the leader's Lease has expired, with no node filter; their leases are in
    the snapshot)."""
    chief = leader(snap)
    if chief is None or not chief.expired() or only_nodes:
        return set()
    ready = {n["metadata"]["name"] for n in snap.nodes if is_ready(n)}
    return {
        str(x["metadata"].get("name"))
        for x in snap.leases
        if x["metadata"].get("namespace") == facts.NODE_LEASE_NAMESPACE
        and x["metadata"].get("name") in ready
    }


def views(findings: dict[str, NodeFinding]) -> dict[str, NodeFinding]:
    """Each unmarked node as its pods' reports see it: failed (its kubelet is silent past its
    lease), though its Ready condition does not say so."""
    return {name: dataclasses.replace(f, failed=True) for name, f in findings.items() if of(f)}


def of(node: NodeFinding) -> bool:
    """Ready, its kubelet's lease expired, and no controller leader to mark it."""
    return node.cause.code == CAUSE and not node.failed and bool(node.lease_stale)


def tell(pod: PodFinding, node: NodeFinding, chief: Leader, now: datetime) -> None:
    """The pod's category and suggestion, once its report is made."""
    pod.category = CATEGORY
    renewed = node.lease_age_seconds
    said = claim(
        "unmarked-node",
        "why",
        f"its node {node.name} is still Ready, but its kubelet "
        + (f"last renewed its lease {ago(renewed)}" if renewed is not None else "is silent")
        + " (past the lease's duration), and no controller marks the node NotReady or taints "
        "it for that without a leader.",
        *once([*node.cause.because, *chief.premises()]),
    )
    pod.claims.insert(0, said)  # after the missing leader's (diagnose._leaderless_pods)
    pod.explanation = f"{said.text} {pod.explanation}".strip()
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
