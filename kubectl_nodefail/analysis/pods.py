"""One stuck pod: what kubectl shows, what it really means, why, what next, and the fix."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from kubectl_nodefail.analysis import advice, controllers, eviction, facts, owners, storage
from kubectl_nodefail.analysis.claims import Claim, Premise, claim, fact, text_of
from kubectl_nodefail.analysis.findings import (
    Action,
    NodeFinding,
    PodFinding,
    Replacement,
    ZoneFinding,
)
from kubectl_nodefail.analysis.nodes import kubelet_alive
from kubectl_nodefail.analysis.podstatus import TERMINAL_PHASES, kubectl_status, ready_column
from kubectl_nodefail.analysis.text import ago, duration
from kubectl_nodefail.snapshot.model import Obj, Snapshot, parse_time

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


def _node_clause(node: NodeFinding, now: datetime) -> str:
    """Why the pod's real state is or is not known, following the node's own signals."""
    if kubelet_alive(node):
        lease = (
            f", lease renewed {ago(node.lease_age_seconds)}"
            if node.lease_age_seconds is not None
            else ""
        )
        return (
            f"its kubelet is alive{lease} and reports the node not Ready "
            f"({node.cause.summary}): pod states there are reported by that kubelet, not unknown"
        )
    since = ""
    renewed = ago((now - node.lease_renewed).total_seconds()) if node.lease_renewed else ""
    if node.lease_renewed is not None and node.lease_stale:
        since = f" since its node's lease went stale (last renewed {renewed})"
    elif node.lease_renewed is not None:
        since = f" (its node's lease was renewed {renewed}: the kubelet may be returning)"
    elif node.ready and node.ready.last_heartbeat:
        since = (
            " since the node's last heartbeat "
            f"({ago((now - node.ready.last_heartbeat).total_seconds())})"
        )
    return f"its real state is unknown{since}"


def _node_facts(node: NodeFinding, snap: Snapshot) -> list[Premise]:
    """The node signals _node_clause reads: Ready's status and last heartbeat, the lease."""
    raw = snap.node(node.name)
    out = []
    if raw is not None:
        out.append(fact("Node", raw, "status.conditions[type=Ready].status"))
        if not kubelet_alive(node) and node.lease_renewed is None and node.ready:
            out.append(fact("Node", raw, "status.conditions[type=Ready].lastHeartbeatTime"))
    lease = snap.lease(node.name)
    if lease is not None and node.lease_renewed is not None:
        out.append(fact("Lease", lease, "spec.renewTime"))
    return out


def _meaning(
    pod: Obj,
    status: str,
    node: NodeFinding | None,
    stuck: float | None,
    now: datetime,
    snap: Snapshot,
) -> list[Claim]:
    """What the pod's status really means, as claims with the facts they rest on: who asked
    for the deletion, what holds the object, and what the node's signals say."""
    meta = pod["metadata"]
    reason = disruption_reason(pod)
    deleter = DELETERS.get(reason or "", "deletion requested (by a user or a controller)")
    deletion = [fact("Pod", pod, "metadata.deletionTimestamp")]
    if reason is not None:
        deletion.append(fact("Pod", pod, "status.conditions[type=DisruptionTarget].reason"))
    finalizers = list(meta.get("finalizers") or [])
    held_by = [fact("Pod", pod, "metadata.finalizers")] if finalizers else []
    held = (
        f" Finalizers {', '.join(finalizers)} keep the object even after that, until removed."
        if advice.foreign_finalizers(finalizers)
        else ""
    )
    phase = (pod.get("status") or {}).get("phase")

    def says(text: str, *because: Premise) -> list[Claim]:
        return [claim("status-meaning", "meaning", text, *because)]

    if meta.get("deletionTimestamp") and phase in TERMINAL_PHASES:
        # The API server deletes a finished pod at once (grace period 0, no kubelet needed):
        # only finalizers can keep such an object.
        return says(
            f"{deleter} after it had finished (phase {phase}): a finished pod needs no kubelet "
            "to go, so "
            + (
                f"only finalizers {', '.join(finalizers)} keep the object, until removed"
                if finalizers
                else "the object is about to disappear"
            ),
            *deletion,
            fact("Pod", pod, "status.phase"),
            *held_by,
        )
    if node is not None and node.failed:
        clause = _node_clause(node, now)
        signals = _node_facts(node, snap)
        if not meta.get("deletionTimestamp"):
            if kubelet_alive(node):
                return says(
                    f"'{status}' is what the kubelet last reported: {clause}. Its containers "
                    "may still run; no new pod is scheduled there while it is not Ready." + held,
                    *deletion,
                    *signals,
                    *held_by,
                )
            return says(
                f"'{status}' is only the last report: {clause}. The containers may still be "
                "running (kubelet or network down) or be gone (machine down)." + held,
                *deletion,
                *signals,
                *held_by,
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
        lost = [fact("Pod", pod, "status.reason")] if era else []
        confirm = (
            "this node's kubelet has not confirmed (it is alive but reports the node not Ready)"
            if kubelet_alive(node)
            else "this node's kubelet is not reporting"
        )
        return says(
            f"{deleter}; the API server keeps the object until the kubelet confirms the "
            f"containers stopped, and {confirm}: {waited}{era}. "
            f"{clause[0].upper()}{clause[1:]}." + held,
            *deletion,
            *signals,
            *lost,
            *held_by,
        )
    if finalizers:
        return says(
            f"{deleter}; finalizers {', '.join(finalizers)} keep the object until removed",
            *deletion,
            *held_by,
        )
    if stuck is not None and stuck > 0:
        ready = snap.node(node.name) if node is not None else None
        return says(
            f"{deleter}; the node is Ready but its kubelet has not confirmed the stop "
            f"{duration(stuck)} after the grace period",
            *deletion,
            *([fact("Node", ready, "status.conditions[type=Ready].status")] if ready else []),
        )
    return says(f"{deleter}; within its grace period", *deletion)


def _finalizers_outlast(pod: Obj, node_failed: bool) -> list[Claim]:
    """The claim that leads "if the node returns" when finalizers outlast the kubelet: the
    object stays until they are removed, and only then does the rest happen."""
    finalizers = list(pod["metadata"].get("finalizers") or [])
    foreign = advice.foreign_finalizers(finalizers)
    if not node_failed or not foreign:
        return []
    who = ", ".join(f"{f} (removed by {advice.finalizer_owner(f)})" for f in foreign)
    return [
        claim(
            "held-by-finalizers",
            "returns",
            "the kubelet stops the containers, but the object stays until its finalizers are "
            f"removed: {who}. Only then does what follows happen:",
            fact("Pod", pod, "metadata.finalizers"),
        )
    ]


def _deletion_claim(pod: Obj, deletion: datetime, node: NodeFinding | None, now: datetime) -> Claim:
    """The timeline of a pod already deleted: when its grace period ends, and what keeps the
    object past it (finalizers alone on a finished pod; the kubelet on a failed node)."""
    phase = (pod.get("status") or {}).get("phase")
    node_failed = bool(node and node.failed)
    text = f"deletion requested, grace period ends {ago((now - deletion).total_seconds())}" + (
        "; only finalizers keep the object (a finished pod needs no kubelet)"
        if phase in TERMINAL_PHASES
        else "; the object stays until the kubelet confirms (never, while the node is down)"
        if node_failed
        else ""
    )
    because = [fact("Pod", pod, "metadata.deletionTimestamp"), fact("Pod", pod, "status.phase")]
    if phase in TERMINAL_PHASES:
        because.append(fact("Pod", pod, "metadata.finalizers"))
    elif node is not None and node_failed:
        because += node.cause.because
    return claim("deletion", "eviction", text, *because)


def analyse_pod(
    pod: Obj,
    snap: Snapshot,
    node: NodeFinding | None,
    zone: ZoneFinding | None,
    master_disruption: bool,
    failed_nodes: set[str],
    now: datetime,
    braked: Claim | None = None,
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
    node_obj = snap.node(node_name) if node_name else None
    when: list[Claim] = []  # the timeline's sentence, as a claim
    if node_failed and node is not None:
        ev = eviction.eviction_time(pod, node.taints, zone, master_disruption, now)
        eviction_at = ev.at
        when = [eviction.as_claim(ev, pod, node_obj, zone)]
    else:
        ev, eviction_at = None, None
    ctx = controllers.Context(
        pod,
        kind,
        owner_objs,
        snap,
        node_name,
        node_failed,
        failed_nodes,
        terminating,
        now,
        owner_kinds=[link.kind for link in links[: len(owner_objs)]],
        never_evicted=ev is not None and ev.state == "never",
    )
    explained = controllers.explain(ctx)
    replacement = explained.replacement
    rep_pods = [p for p in (snap.pod(namespace, n) for n in replacement.pods) if p]
    notes = storage.blockers(pod, node_name, rep_pods, snap, now) if node_failed else []
    if terminating and deletion is not None:
        when = [_deletion_claim(pod, deletion, node, now)]
    holds_rwo = storage.holds_single_node_volume(pod, snap)
    meaning = _meaning(pod, status, node, stuck, now, snap)
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
    # "if the node returns" leads with the finalizers that outlast the kubelet, if any
    said = meaning + _finalizers_outlast(pod, node_failed) + explained.claims + when + notes
    finding = PodFinding(
        namespace=namespace,
        name=name,
        uid=meta.get("uid", ""),
        resource_version=meta.get("resourceVersion", ""),
        node=node_name,
        node_failed=node_failed,
        kubectl_status=status,
        ready=ready_column(pod),
        meaning=text_of(meaning, "meaning"),
        category=category,
        terminating=terminating,
        stuck_seconds=stuck,
        deletion_timestamp=deletion,
        owner_chain=links,
        controller=kind,
        explanation=text_of(explained.claims, "why"),
        replacement=replacement,
        storage=[c.text for c in notes],
        timeline=text_of(when, "eviction"),
        eviction_at=eviction_at,
        if_node_returns=text_of(said, "returns") if node_failed else "",
        action=Action("investigate", "", "none"),
        evidence=evidence,
        era=era,
        finalizers=list(meta.get("finalizers") or []),
        claims=said,
        phase=str((pod.get("status") or {}).get("phase") or ""),
        stays_under_out_of_service=eviction.stays_under_out_of_service(pod),
    )
    finding.action = advice.rests_on(
        advice.for_pod(
            finding, node, ev, holds_rwo, advice.default_strategy(snap.server_minor), braked
        ),
        said,
        node if node_failed else None,  # elsewhere, its node's state decides nothing
    )
    return finding


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
    outlook = {
        va["metadata"]["name"]: storage.detach_outlook(va, snap, now, node_ready=False)
        for _, _, va in held
    }
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
        advice.for_waiting_pod(
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


# PodGC (pkg/controller/podgc): pods bound to a node that does not exist are force-deleted once
# the node has been missing for the quarantine (40 s), checked on each pass (every 20 s).
PODGC_QUARANTINE_SECONDS = 40
PODGC_PERIOD_SECONDS = 20


def analyse_orphan_pod(pod: Obj, snap: Snapshot, now: datetime) -> PodFinding:
    """A pod bound to a node whose Node object no longer exists (deleted): no kubelet, no node
    lifecycle controller, no taint acts on it; PodGC force-deletes it (marking it Failed first),
    within about a minute of the node's deletion. Finalizers other than the Job's tracking one
    still keep the object. Its replacement is the owner's own rule's (controllers.explain, on
    the node as failed: nothing runs there), its sentences this function's."""
    meta = pod["metadata"]
    namespace, name = meta.get("namespace", ""), meta["name"]
    node_name = str((pod.get("spec") or {}).get("nodeName") or "")
    links, owner_objs = owners.chain(pod, snap)
    kind = owners.controller_type(pod, links)
    deletion = parse_time(meta.get("deletionTimestamp"))
    terminating = deletion is not None
    finalizers = list(meta.get("finalizers") or [])
    held = advice.holding_finalizers(finalizers, terminating, "delete-node")
    within = PODGC_QUARANTINE_SECONDS + PODGC_PERIOD_SECONDS
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
    why = (
        "no kubelet confirms anything and no taint applies; PodGC force-deletes a pod bound to "
        f"a missing node once the node has been missing {PODGC_QUARANTINE_SECONDS}s (it looks "
        f"every {PODGC_PERIOD_SECONDS}s), so it goes within about {within}s of the node's "
        "deletion"
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
                "finalizer-held" if held else "wait",
                (
                    f"PodGC removes it, but finalizers {', '.join(held)} keep the object: "
                    f"{'; '.join(advice.finalizer_owner(f) for f in held)}"
                    if held
                    else f"PodGC removes it within about {within}s of the node's deletion; if "
                    "it stays longer, check kube-controller-manager (its podgc controller)"
                ),
                "none",
            ),
            claims,
        ),
        evidence=[f"spec.nodeName {node_name}: no such Node"],
        finalizers=finalizers,
        claims=claims,
        phase=str((pod.get("status") or {}).get("phase") or ""),
    )
