"""The pods a failed node keeps from running without being on it: one waiting for a volume
still attached to it (`analyse_waiting_pod`) and one Pending that may run only there
(`pinned_to`, `analyse_pinned_pod`). One bound to a Node object since deleted: orphans.py.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from kubectl_nodefail.analysis import advice, controllers, facts, owners, pod_advice, storage
from kubectl_nodefail.analysis.claims import Claim, claim, fact, text_of
from kubectl_nodefail.analysis.findings import Action, NodeFinding, PodFinding, Replacement
from kubectl_nodefail.analysis.podstatus import kubectl_status, ready_column
from kubectl_nodefail.snapshot.model import Obj, Snapshot


def analyse_waiting_pod(
    pod: Obj,
    snap: Snapshot,
    held: list[tuple[str, str, Obj]],
    failed: dict[str, NodeFinding],
    now: datetime,
    braked: Claim | None = None,
) -> PodFinding:
    """A pod on a working node that cannot start: a single-node volume it needs is still
    attached to a failed node (typically the replacement of a pod force-deleted there)."""
    meta = pod["metadata"]
    namespace, name = meta.get("namespace", ""), meta["name"]
    links, _ = owners.chain(pod, snap)
    holders = sorted({va["spec"]["nodeName"] for _, _, va in held})
    volumes = "; ".join(
        f"PVC {claim} -> PV {pv} is still attached to {va['spec']['nodeName']} "
        f"(VolumeAttachment {va['metadata']['name']})"
        for claim, pv, va in held
    )
    controller = owners.controller_type(pod, links)
    outlook = {va["metadata"]["name"]: storage.detach_outlook(va, snap, now) for _, _, va in held}
    detach = "; ".join(f"{pv}: {outlook[va['metadata']['name']]}" for _, pv, va in held)
    users = {
        va["metadata"]["name"]: storage.users_of(snap, va["spec"]["nodeName"], pv)
        for _, pv, va in held
    }
    # The advice is about the holder that blocks longest: one whose pod objects still use the
    # volume (nothing removes them while it is down) before one that only waits for a timer.
    held_by = sorted(
        held, key=lambda h: (not users[h[2]["metadata"]["name"]], h[2]["spec"]["nodeName"])
    )
    va = held_by[0][2]
    holder = failed[va["spec"]["nodeName"]]
    blocking = users[va["metadata"]["name"]]
    action = advice.braked(
        pod_advice.for_waiting_pod(
            holder,
            outlook[va["metadata"]["name"]],
            [storage.pod_name(u) for u in blocking],
            all_terminating=all(u["metadata"].get("deletionTimestamp") for u in blocking),
        ),
        braked,
    )
    because = [fact("Pod", pod, "status.phase")]
    for claim_name, _pv, va in held:
        pvc = snap.pvc(namespace, claim_name)
        if pvc is not None:
            because.append(fact("PersistentVolumeClaim", pvc, "spec.volumeName"))
        because += [
            fact("VolumeAttachment", va, "spec.nodeName"),
            fact("VolumeAttachment", va, "spec.source.persistentVolumeName"),
        ]
    because += [
        fact("Node", node_obj, "status.conditions[type=Ready].status")
        for n in holders
        if (node_obj := snap.node(n)) is not None
    ]
    notes = [
        claim("volume", "storage", volumes, *because),
        *storage.multi_attach_claims(pod, snap, now, ""),
    ]
    said = [
        claim(
            "status-meaning",
            "meaning",
            f"it cannot start: a ReadWriteOnce volume it needs is still attached to the failed "
            f"node {', '.join(holders)}, and a single-node volume attaches to one node at a time",
            *because,
        ),
        claim(
            "blocked-by",
            "why",
            f"stuck because of the failed node {', '.join(holders)}: {volumes}.",
            *because,
        ),
        *notes,
        claim(  # its timeline: when each attachment is detached
            "volume",
            "eviction",
            detach,
            *[p for _, _, va in held for p in storage.detach_facts(va, snap)],
        ),
    ]
    return PodFinding(
        namespace=namespace,
        name=name,
        uid=meta.get("uid", ""),
        resource_version=meta.get("resourceVersion", ""),
        node=(pod.get("spec") or {}).get("nodeName") or "",
        node_failed=False,
        kubectl_status=kubectl_status(pod),
        ready=ready_column(pod),
        meaning=text_of(said, "meaning"),
        claims=said,
        category="waiting-for-volume",
        terminating=False,
        stuck_seconds=None,
        deletion_timestamp=None,
        owner_chain=links,
        controller=controller,
        explanation=text_of(said, "why"),
        replacement=Replacement(
            "not-needed", "none needed: this pod starts once the volume is detached"
        ),
        storage=[c.text for c in notes],
        timeline=text_of(said, "eviction"),
        eviction_at=None,
        if_node_returns="",
        action=advice.rests_on(action, said, holder),
        evidence=[
            f"phase {(pod.get('status') or {}).get('phase')}",
            f"owner chain: {owners.describe(links)}",
        ],
        finalizers=list(meta.get("finalizers") or []),
        held_by=holders,
    )


def pinned_to(pod: Obj, failed: Collection[str]) -> list[str]:
    """The failed nodes an unscheduled Pending pod is restricted to: its nodeSelector hostname,
    or a required node affinity that allows only failed nodes by hostname; [] otherwise."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName") or (pod.get("status") or {}).get("phase") != "Pending":
        return []
    host = (spec.get("nodeSelector") or {}).get(facts.LABEL_HOSTNAME)
    if host:
        return [host] if host in failed else []
    hosts = controllers.required_hosts(spec)
    return sorted(hosts) if hosts and set(hosts) <= set(failed) else []


def analyse_pinned_pod(pod: Obj, snap: Snapshot, nodes: list[str]) -> PodFinding:
    """A Pending pod that may run only on failed nodes (typically the replacement of a pod that
    was pinned there): a victim of the failure although it is on no node."""
    meta = pod["metadata"]
    namespace, name = meta.get("namespace", ""), meta["name"]
    links, _ = owners.chain(pod, snap)
    where = ", ".join(nodes)
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    field = (
        f"spec.nodeSelector[{facts.LABEL_HOSTNAME}]"
        if selector.get(facts.LABEL_HOSTNAME)
        else "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    )
    because = [fact("Pod", pod, field), fact("Pod", pod, "status.phase")]
    because += [
        fact("Node", node, "status.conditions[type=Ready].status")
        for n in nodes
        if (node := snap.node(n)) is not None
    ]
    by = "its nodeSelector" if "nodeSelector" in field else "its required node affinity"
    text = (
        f"it may run only on {where} ({by}), "
        f"which {'is' if len(nodes) == 1 else 'are'} not Ready: it stays Pending until "
        f"{'that node returns' if len(nodes) == 1 else 'one of them returns'} or the "
        "selector is changed."
    )
    claims = [
        claim(
            "status-meaning",
            "meaning",
            f"Pending: the only nodes it may run on ({where}) failed",
            *because,
        ),
        claim("blocked-by", "why", text, *because),
    ]
    return PodFinding(
        namespace=namespace,
        name=name,
        uid=meta.get("uid", ""),
        resource_version=meta.get("resourceVersion", ""),
        node="",
        node_failed=False,
        kubectl_status=kubectl_status(pod),
        ready=ready_column(pod),
        meaning=text_of(claims, "meaning"),
        category="waiting-for-node",
        terminating=False,
        stuck_seconds=None,
        deletion_timestamp=None,
        owner_chain=links,
        controller=owners.controller_type(pod, links),
        explanation=text_of(claims, "why"),
        replacement=Replacement("not-needed", "none needed: this pod runs once its node returns"),
        storage=[],
        timeline="",
        eviction_at=None,
        if_node_returns="",  # its explanation says: Pending until the node returns
        action=advice.rests_on(
            Action(
                "investigate",
                f"pinned to the failed node {where}: bring the node back, or relax the selector / "
                "affinity (the owner's template) so it can run elsewhere; nothing remediate does "
                "schedules it",
                "low",
            ),
            claims,
        ),
        evidence=[f"phase {meta.get('phase') or (pod.get('status') or {}).get('phase')}"],
        finalizers=list(meta.get("finalizers") or []),
        claims=claims,
        phase="Pending",
    )
