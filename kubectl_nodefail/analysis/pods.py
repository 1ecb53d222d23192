"""One stuck pod: what kubectl shows, what it really means, why, what next, and the fix."""

from __future__ import annotations

from datetime import datetime

from kubectl_nodefail.analysis import advice, controllers, eviction, facts, owners, storage
from kubectl_nodefail.analysis.findings import NodeFinding, PodFinding, ZoneFinding
from kubectl_nodefail.analysis.podstatus import kubectl_status, ready_column
from kubectl_nodefail.analysis.text import ago, duration
from kubectl_nodefail.snapshot import Obj, Snapshot, parse_time

DELETERS = {
    "DeletionByTaintManager": "evicted by the taint-eviction controller (NoExecute taint)",
    "DeletionByPodGC": "deleted by PodGC (node gone, or out-of-service)",
    "TerminationByKubelet": "terminated by the kubelet (graceful node shutdown or eviction)",
    "EvictionByEvictionAPI": "evicted through the Eviction API (drain)",
    "PreemptionByScheduler": "preempted by the scheduler",
}


def disruption_reason(pod: Obj) -> str | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "DisruptionTarget" and cond.get("status") == "True":
            return str(cond.get("reason") or "")
    return None


def _meaning(
    pod: Obj, status: str, node: NodeFinding | None, stuck: float | None, now: datetime
) -> str:
    meta = pod["metadata"]
    deleter = DELETERS.get(
        disruption_reason(pod) or "", "deletion requested (by a user or a controller)"
    )
    if node is not None and node.failed:
        since = ""
        if node.lease_renewed is not None:
            stale_for = (now - node.lease_renewed).total_seconds()
            since = f" since its node's lease went stale ({ago(stale_for)})"
        elif node.ready and node.ready.last_heartbeat:
            since = (
                " since the node's last heartbeat "
                f"({ago((now - node.ready.last_heartbeat).total_seconds())})"
            )
        if not meta.get("deletionTimestamp"):
            return (
                f"'{status}' is only the last report: the true state is unknown{since}. The "
                "containers may still be running (kubelet or network down) or be gone "
                "(machine down)."
            )
        waited = (
            f"stuck {duration(stuck)} past its grace period"
            if stuck is not None and stuck > 0
            else "still within its grace period"
        )
        era = (
            " (kubectl prints Unknown because the pre-1.27 node controller set reason NodeLost)"
            if status == "Unknown"
            else ""
        )
        return (
            f"{deleter}; the API server keeps the object until the kubelet confirms the "
            f"containers stopped, and this node's kubelet is not reporting: {waited}{era}. "
            f"Its real state is unknown{since}."
        )
    finalizers = meta.get("finalizers") or []
    if finalizers:
        return f"{deleter}; finalizers {', '.join(finalizers)} keep the object until removed"
    if stuck is not None and stuck > 0:
        return (
            f"{deleter}; the node is Ready but its kubelet has not confirmed the stop "
            f"{duration(stuck)} after the grace period"
        )
    return f"{deleter}; within its grace period"


def analyse_pod(
    pod: Obj,
    snap: Snapshot,
    node: NodeFinding | None,
    zone: ZoneFinding | None,
    master_disruption: bool,
    failed_nodes: set[str],
    now: datetime,
) -> PodFinding:
    meta = pod["metadata"]
    namespace, name = meta.get("namespace", ""), meta["name"]
    node_name = (pod.get("spec") or {}).get("nodeName") or ""
    status = kubectl_status(pod)
    deletion = parse_time(meta.get("deletionTimestamp"))
    terminating = deletion is not None
    stuck = (now - deletion).total_seconds() if deletion else None
    links, owner_objs = owners.chain(pod, snap)
    kind = owners.controller_type(pod, links)
    node_failed = bool(node and node.failed)
    ctx = controllers.Context(
        pod, kind, owner_objs, snap, node_name, node_failed, failed_nodes, terminating, now
    )
    why, replacement, returns = controllers.explain(ctx)
    rep_pods = [p for p in (snap.pod(namespace, n) for n in replacement.pods) if p]
    notes = storage.blockers(pod, node_name, rep_pods, snap, now) if node_failed else []
    if node_failed and node is not None:
        ev = eviction.eviction_time(pod, node.taints, zone, master_disruption, now)
        timeline, eviction_at = ev.text, ev.at
    else:
        ev, timeline, eviction_at = None, "", None
    if terminating and deletion is not None:
        timeline = (
            f"deletion requested, grace period ends {ago((now - deletion).total_seconds())}"
            + (
                "; the object stays until the kubelet confirms (never, while the node is down)"
                if node_failed
                else ""
            )
        )
    holds_rwo = storage.holds_single_node_volume(pod, snap)
    action = advice.for_pod(
        kind,
        namespace,
        name,
        node,
        terminating,
        replacement,
        eviction_at,
        holds_rwo,
        list(meta.get("finalizers") or []),
    )
    evidence = [
        f"phase {(pod.get('status') or {}).get('phase')}",
        f"owner chain: {owners.describe(links)}",
    ]
    if disruption_reason(pod):
        evidence.append(f"DisruptionTarget=True reason {disruption_reason(pod)}")
    if deletion:
        evidence.append(
            f"deletionTimestamp {meta['deletionTimestamp']} "
            f"(grace {meta.get('deletionGracePeriodSeconds')}s)"
        )
    if meta.get("finalizers"):
        evidence.append(f"finalizers: {', '.join(meta['finalizers'])}")
    if node is not None and node.failed:
        for cond in (pod.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "Ready" and cond.get("status") != "True":
                evidence.append(
                    f"pod Ready={cond.get('status')} since {cond.get('lastTransitionTime')}"
                    + (f" ({cond['reason']})" if cond.get("reason") else "")
                )
    if node_failed:
        category = "terminating-on-failed-node" if terminating else "on-failed-node"
    else:
        category = "terminating-elsewhere"
    era = (
        "nodelost"
        if (pod.get("status") or {}).get("reason") == facts.REASON_NODE_LOST
        else "current"
    )
    return PodFinding(
        namespace=namespace,
        name=name,
        uid=meta.get("uid", ""),
        resource_version=meta.get("resourceVersion", ""),
        node=node_name,
        node_failed=node_failed,
        kubectl_status=status,
        ready=ready_column(pod),
        meaning=_meaning(pod, status, node, stuck, now),
        category=category,
        terminating=terminating,
        stuck_seconds=stuck,
        deletion_timestamp=deletion,
        owner_chain=links,
        controller=kind,
        explanation=why,
        replacement=replacement,
        storage=notes,
        timeline=timeline,
        eviction_at=eviction_at,
        if_node_returns=returns,
        action=action,
        evidence=evidence,
        era=era,
        finalizers=list(meta.get("finalizers") or []),
    )
