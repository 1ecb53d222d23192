"""One stuck pod on a failed node, or Terminating elsewhere: what kubectl shows, what it
really means, why, what next, and the fix. The pods a failed node blocks without being on it:
waiting.py."""

from __future__ import annotations

from datetime import datetime

from kubectl_nodefail.analysis import (
    advice,
    controllers,
    eviction,
    evictionclock,
    facts,
    owners,
    pod_advice,
    storage,
)
from kubectl_nodefail.analysis.claims import Claim, Premise, claim, fact, text_of
from kubectl_nodefail.analysis.controllers.jobs import replaces_only_failed
from kubectl_nodefail.analysis.facts import PODGC_PERIOD_SECONDS, TAINT_OUT_OF_SERVICE
from kubectl_nodefail.analysis.findings import (
    Action,
    NodeFinding,
    PodFinding,
    Replacement,
    ZoneFinding,
)
from kubectl_nodefail.analysis.leader import leader
from kubectl_nodefail.analysis.machine import kubelet_alive, out_of_service_overdue
from kubectl_nodefail.analysis.nodes import lifecycle_off

# analysed in orphans.py and waiting.py, read from here by diagnose.py and cluster/gather.py
from kubectl_nodefail.analysis.orphans import analyse_orphan_pod as analyse_orphan_pod
from kubectl_nodefail.analysis.podstatus import TERMINAL_PHASES, kubectl_status, ready_column
from kubectl_nodefail.analysis.text import ago, duration
from kubectl_nodefail.analysis.waiting import analyse_pinned_pod as analyse_pinned_pod
from kubectl_nodefail.analysis.waiting import analyse_waiting_pod as analyse_waiting_pod
from kubectl_nodefail.analysis.waiting import pinned_to as pinned_to
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


def _bound_after_last_report(pod: Obj, node: NodeFinding) -> datetime | None:
    """When a Pending pod no kubelet ever reported on (no start time) was bound to the node, if
    that was after the node's kubelet last reported (its lease, else Ready's heartbeat): that
    kubelet never saw it (a pod tolerating the node's taints is scheduled there all the same)."""
    status = pod.get("status") or {}
    if status.get("phase") != "Pending" or status.get("startTime"):
        return None
    bound = next(
        (
            parse_time(c.get("lastTransitionTime"))
            for c in status.get("conditions") or []
            if c.get("type") == "PodScheduled" and c.get("status") == "True"
        ),
        None,
    )
    last = node.lease_renewed or (node.ready.last_heartbeat if node.ready else None)
    return bound if bound is not None and last is not None and bound > last else None


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
        (
            f" Finalizers {', '.join(finalizers)} keep the object even after that, until removed."
            if meta.get("deletionTimestamp")
            else f" Once it is deleted, finalizers {', '.join(finalizers)} keep the object until "
            "removed."
        )
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
            late = _bound_after_last_report(pod, node)
            if late is not None:
                return says(
                    f"'{status}': bound to this node {ago((now - late).total_seconds())}, after "
                    f"its kubelet last reported; no kubelet has reported on it (no start time), "
                    "so its containers have not started here as far as the API knows, and do "
                    "not while the node is down." + held,
                    fact("Pod", pod, "status.phase"),
                    fact("Pod", pod, "status.startTime"),
                    fact("Pod", pod, "status.conditions[type=PodScheduled].lastTransitionTime"),
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


REPLACED_KINDS = (*advice.REPLICA_KINDS, "statefulset", "job", "cronjob")


def _placement(pod: Obj, node: NodeFinding, node_obj: Obj | None, kind: str) -> list[Claim]:
    """A pod that tolerates every NoSchedule taint on its failed node: those taints, which keep
    other pods off a NotReady node, do not keep a pod with its tolerations off (the scheduler's
    TaintToleration filter), so its replacement may be bound there again, and not start."""
    taints = [t for t in node.taints if t.effect == "NoSchedule"]
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    if kind not in REPLACED_KINDS or node_obj is None or not taints:
        return []
    if not all(any(evictionclock.tolerates(t, taint) for t in tolerations) for taint in taints):
        return []
    keys = ", ".join(sorted({t.key for t in taints}))
    return [
        claim(
            "placement",
            "why",
            f"It tolerates this node's NoSchedule taints ({keys}), which keep other pods off a "
            "node that is not Ready: a pod with its tolerations is not kept off, so its "
            "replacement may be bound here again and not start while the node is down.",
            fact("Pod", pod, "spec.tolerations"),
            *[fact("Node", node_obj, f"spec.taints[key={t.key}].effect") for t in taints],
        )
    ]


def _bound_by_template(
    pod: Obj, owner_objs: list[Obj], node_name: str, node_obj: Obj | None, replacement: Replacement
) -> list[Claim]:
    """A pod whose owner's template sets spec.nodeName to its failed node: every pod the owner
    makes is bound here, no scheduler involved, and none starts while the node is down; each
    is evicted by its tolerations and made again, here (tests/e2e/test_reaching_the_node.py).
    "Freeing it only makes another here" only while its owner wants it replaced."""
    owner = owner_objs[0] if owner_objs else None
    if owner is None or node_obj is None or owners.template_node(owner) != node_name:
        return []
    ref = f"{owner.get('kind')} {owner['metadata']['name']}"
    premises = (
        fact(str(owner.get("kind")), owner, "spec.template.spec.nodeName"),
        fact("Pod", pod, "spec.nodeName"),
        fact("Node", node_obj, "status.conditions[type=Ready].status"),
    )
    text = (
        f"{ref}'s pod template sets spec.nodeName: {node_name}: every pod it makes is bound to "
        "this node, no scheduler involved, and none starts while the node is down."
    )
    if replacement.state != "not-wanted":
        text += " Freeing this pod only makes another here."
    return [claim("placement", "why", text, *premises)]


def _finalizers_outlast(pod: Obj, node_failed: bool, on_phase: bool = False) -> list[Claim]:
    """The claim that leads "if the node returns" when finalizers outlast the kubelet (of a pod
    being deleted): the object stays until they are removed, and only then does the rest
    happen, or (`on_phase`: an owner that counts phases) the rest needs only the pod ended (not
    for a finished pod: no kubelet stops anything, and its own words say what the finalizers
    keep)."""
    finalizers = list(pod["metadata"].get("finalizers") or [])
    foreign = advice.foreign_finalizers(finalizers)
    if not node_failed or not foreign or not pod["metadata"].get("deletionTimestamp"):
        return []  # not deleted: back with its node, it carries on, whatever its finalizers
    if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
        return []  # nothing left to stop: the finished pod's own words name the finalizers
    who = ", ".join(f"{f} (removed by {advice.finalizer_owner(f)})" for f in foreign)
    return [
        claim(
            "held-by-finalizers",
            "returns",
            "the kubelet stops the containers, but the object stays until its finalizers are "
            f"removed: {who}. "
            + (
                "What follows needs only the pod ended (Failed or Succeeded), not the object gone:"
                if on_phase
                else "Only then does what follows happen:"
            ),
            fact("Pod", pod, "metadata.finalizers"),
        )
    ]


def _deletion_claim(
    pod: Obj, deletion: datetime, node: NodeFinding | None, node_obj: Obj | None, now: datetime
) -> Claim:
    """The timeline of a pod already deleted: when its grace period ends, and what keeps the
    object past it (finalizers alone on a finished pod; the kubelet on a failed node, unless
    the out-of-service taint is on it: PodGC force-deletes it then)."""
    phase = (pod.get("status") or {}).get("phase")
    node_failed = bool(node and node.failed)
    forced = node_failed and node is not None and node.out_of_service and node_obj is not None
    foreign = advice.foreign_finalizers(list(pod["metadata"].get("finalizers") or []))
    overdue = out_of_service_overdue(node) if forced and node is not None else None
    text = f"deletion requested, grace period ends {ago((now - deletion).total_seconds())}" + (
        "; only finalizers keep the object (a finished pod needs no kubelet)"
        if phase in TERMINAL_PHASES
        # as the advice says it (pod_advice._free_it): past PodGC's time, it is not removing it
        else f"; the out-of-service taint has been on its node {duration(overdue)}, past "
        "PodGC's time, and the object is still here: PodGC is not removing it (an admission "
        "webhook or policy refused its delete, or the podgc controller does not run)"
        if overdue is not None
        else "; the out-of-service taint is on its node: PodGC force-deletes it on its next "
        f"pass (every {PODGC_PERIOD_SECONDS} s), without the kubelet"
        + (
            f", then finalizers {', '.join(foreign)} keep the object until removed"
            if foreign
            else ""
        )
        + (
            " (the taint has no timeAdded: when it was added is not recorded)"
            if node is not None and node.out_of_service_seconds is None
            else ""
        )
        if forced
        else "; the object stays until the kubelet confirms (never, while the node is down)"
        if node_failed
        else ""
    )
    because = [fact("Pod", pod, "metadata.deletionTimestamp"), fact("Pod", pod, "status.phase")]
    if phase in TERMINAL_PHASES:
        because.append(fact("Pod", pod, "metadata.finalizers"))
    elif forced and node is not None and node_obj is not None:
        because += [
            fact("Node", node_obj, f"spec.taints[key={TAINT_OUT_OF_SERVICE}].effect"),
            fact("Node", node_obj, f"spec.taints[key={TAINT_OUT_OF_SERVICE}].timeAdded"),
            *([fact("Pod", pod, "metadata.finalizers")] if foreign else []),
            *node.cause.because,
        ]
    elif node is not None and node_failed:
        because += node.cause.because
    return claim("deletion", "eviction", text, *because)


def _earlier(
    snap: Snapshot, node: NodeFinding, zone: ZoneFinding | None, now: datetime
) -> evictionclock.Spell | None:
    """The not-ready spell the node had before its current taints, where its kubelet's events
    tell of one and its zone's tainting went on (a brake or a slowed zone may not have tainted
    it then)."""
    if zone is not None and zone.eviction != "proceeding":
        return None
    return evictionclock.earlier_not_ready(
        evictionclock.node_spells(node.taints, now),
        node.ready.status if node.ready else "",
        snap.events_about("Node", "", node.name),
    )


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
        earlier = snap.memo(
            f"eviction.earlier/{node_name}", lambda snap: _earlier(snap, node, zone, now)
        )
        oldest = snap.memo("eviction.oldest", lambda snap: evictionclock.oldest_update(snap.events))
        kept = evictionclock.kept_since(snap.events_about("Node", "", node_name), oldest, now)
        overdue = node.cause.because if node.cause.code == "lease-overdue" else None
        ev = eviction.eviction_time(
            pod,
            node.taints,
            zone,
            master_disruption,
            now,
            earlier,
            leader(snap),
            node_obj,
            kept,
            overdue,
            lifecycle_off(snap, now),
        )
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
    bound_here = ""
    if node_failed and node is not None:
        explained.claims += _placement(pod, node, node_obj, kind)
        bound = _bound_by_template(pod, owner_objs, node_name, node_obj, explained.replacement)
        if bound and explained.replacement.state != "not-wanted":
            top = owner_objs[-1]  # whose template to change: a Deployment's, a CronJob's
            bound_here = f"{top.get('kind')}/{top['metadata']['name']}"
        explained.claims += bound
    replacement = explained.replacement
    rep_pods = [p for p in (snap.pod(namespace, n) for n in replacement.pods) if p]
    notes = storage.blockers(pod, node_name, rep_pods, snap, now) if node_failed else []
    if terminating and deletion is not None:
        when = [_deletion_claim(pod, deletion, node, node_obj, now)]
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
    said = (
        meaning
        + _finalizers_outlast(pod, node_failed, explained.on_phase)
        + explained.claims
        + when
        + notes
    )
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
        bound_here=bound_here,
        waits_for_failed=kind in advice.JOBS
        and replaces_only_failed(owner_objs[0] if owner_objs else None),
    )
    finding.action = advice.rests_on(
        pod_advice.for_pod(
            finding, node, ev, holds_rwo, advice.default_strategy(snap.server_minor), braked, now
        ),
        said,
        node if node_failed else None,  # elsewhere, its node's state decides nothing
    )
    return finding
