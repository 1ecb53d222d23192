"""The whole diagnosis: nodes, zones and stuck pods of one snapshot at one moment."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from kubectl_nodefail.analysis import (
    advice,
    automation,
    brake,
    facts,
    outage,
    summary,
    timeline,
    unmarked,
    versions,
)
from kubectl_nodefail.analysis.claims import Claim, claim, fact
from kubectl_nodefail.analysis.findings import (
    NodeFinding,
    NodeTimeline,
    PodFinding,
    Report,
    ZoneFinding,
)
from kubectl_nodefail.analysis.leader import leader
from kubectl_nodefail.analysis.nodes import (
    analyse_node,
    has_problem_condition,
    is_ready,
    lease_late,
    lease_renew_time,
    lifecycle_off,
)
from kubectl_nodefail.analysis.pods import (
    analyse_orphan_pod,
    analyse_pinned_pod,
    analyse_pod,
    analyse_waiting_pod,
    pinned_to,
)
from kubectl_nodefail.analysis.podstatus import TERMINAL_PHASES
from kubectl_nodefail.analysis.storage import held_by_failed_node
from kubectl_nodefail.analysis.text import plural
from kubectl_nodefail.analysis.zones import analyse_zones
from kubectl_nodefail.snapshot.model import Obj, Snapshot, parse_time


def _listed(node: NodeFinding) -> bool:
    """Failed, shut down or out of service, or Ready but reporting a known problem condition
    (pressure, NetworkUnavailable, node-problem-detector); unknown custom conditions never."""
    return (
        node.failed
        or node.cause.code in ("lease-not-renewed", "lease-overdue", "no-controller-leader")
        or node.stale_out_of_service
        or node.cloud_shutdown
        or node.out_of_service
        or any(c.problem for c in node.conditions)
    )


# The taints that list a Ready node (NodeFinding.out_of_service, .cloud_shutdown)
_LISTING_TAINTS = (facts.TAINT_OUT_OF_SERVICE, facts.TAINT_CLOUD_SHUTDOWN)


def _quiet(node: Obj, snap: Snapshot, now: datetime) -> bool:
    """Ready, its lease not late, no out-of-service or shutdown taint, no problem condition:
    its finding would be neither failed, nor `_listed`, nor unmarked (unmarked.of: a lease
    cause), so it is made only if one of its pods is stuck (most of a big cluster's nodes)."""
    if not is_ready(node) or has_problem_condition(node):
        return False
    if any(t.get("key") in _LISTING_TAINTS for t in (node.get("spec") or {}).get("taints") or []):
        return False
    renew, seconds = lease_renew_time(snap, node["metadata"]["name"])
    return renew is None or not lease_late(now, renew, seconds)


def _leaderless(zones: list[ZoneFinding], snap: Snapshot, now: datetime) -> None:
    """With kube-controller-manager's leader Lease expired, what a zone line says its node
    lifecycle controller does is not done: each zone with a node not Ready says that instead."""
    chief = leader(snap)
    if chief is None or not chief.expired():
        return
    for zone in zones:
        if not zone.not_ready:
            continue
        zone.explanation = (
            f"{zone.not_ready}/{zone.nodes} nodes not Ready ({zone.state}, as the node lifecycle "
            f"controller would count it); {chief.no_leader(now)}: no node is tainted and no "
            "pod evicted until a leader takes over."
        )
        zone.eviction = "stopped"
        zone.claims = [
            claim(c.kind, c.section, zone.explanation, *c.because, *chief.premises())
            for c in zone.claims
        ]


def _untainting(zones: list[ZoneFinding], snap: Snapshot, now: datetime) -> None:
    """Where by all signs the node lifecycle controller does not run (nodes.lifecycle_off),
    the tainting a zone line says it does is not done: each zone with a node not Ready says
    that instead. With no leader, _leaderless has said more."""
    chief = leader(snap)
    words, because = lifecycle_off(snap, now)
    if not words or (chief is not None and chief.expired()):
        return
    for zone in zones:
        if not zone.not_ready:
            continue
        zone.explanation = (
            f"{zone.not_ready}/{zone.nodes} nodes not Ready ({zone.state}, as the node lifecycle "
            f"controller would count it); by all signs it does not run ({words}; "
            "kube-controller-manager's --controllers, its health): it taints no node, so pods "
            "on a not-Ready node without its NoExecute taint are not evicted."
        )
        zone.eviction = "stopped"
        zone.claims = [
            claim(c.kind, c.section, zone.explanation, *c.because, *because) for c in zone.claims
        ]


def _leaderless_pods(pods: list[PodFinding], snap: Snapshot, now: datetime) -> None:
    """With kube-controller-manager's leader Lease expired, what a pod's report says its
    controllers do (the owner's replacement, PodGC, the garbage collector, the CronJob's next
    run) comes only once a leader takes over: each pod's explanation opens with that."""
    chief = leader(snap)
    if chief is None or not chief.expired():
        return
    text = (
        f"{chief.no_leader(now)}: what its controllers do for this pod, its owner and its "
        "volumes comes only once a leader takes over."
    )
    for pod in pods:
        note = claim("no-leader", "why", text, *chief.premises())  # one per pod: its own
        pod.claims.insert(0, note)
        pod.explanation = f"{note.text} {pod.explanation}".strip()


def _stuck_pod(pod: Obj, node: NodeFinding | None, now: datetime) -> bool:
    """On a failed node (and not finished), or deleted and past its grace period anywhere."""
    deletion = parse_time(pod["metadata"].get("deletionTimestamp"))
    if node is not None and node.failed:
        return deletion is not None or (pod.get("status") or {}).get("phase") not in TERMINAL_PHASES
    return deletion is not None and deletion <= now


def _finished(pod: Obj) -> bool:
    """Ran to the end and not deleted: nothing is stuck, wherever it is bound."""
    meta = pod["metadata"]
    return (
        not meta.get("deletionTimestamp")
        and (pod.get("status") or {}).get("phase") in TERMINAL_PHASES
    )


def diagnose(
    snap: Snapshot,
    now: datetime,
    only_nodes: Collection[str] = (),
    namespaces: Collection[str] = (),
    timelines: bool = False,
) -> Report:
    """`timelines`: also each listed node's incident timeline (Report.timelines), for the
    outputs that show them."""
    minor = snap.server_minor
    named = {n["metadata"]["name"]: n for n in snap.nodes}  # a name twice: the last, as ever
    quiet = {name: n for name, n in named.items() if _quiet(n, snap, now)}
    node_findings = {
        name: analyse_node(n, snap, now) for name, n in named.items() if name not in quiet
    }
    chief = leader(snap)
    # which nodes the zone's tainting is late for, judged only with a leader that renews (with
    # none, _leaderless says why nothing is tainted) and from its start (a new leader queues
    # every not-Ready node again)
    alive = chief is not None and not chief.expired()
    zones, master_disruption = analyse_zones(
        snap.nodes, now if alive else None, chief.premises() if chief is not None else []
    )
    _leaderless(zones, snap, now)
    _untainting(zones, snap, now)
    zone_by_name = {z.zone: z for z in zones}
    failed = {name for name, f in node_findings.items() if f.failed}
    # computed over every node, whatever the view's scope: remediate NODE sees the same brake
    braked = brake.find(snap.nodes, zones, len(failed), master_disruption, leader(snap), now)
    pods = []
    unmarked_views = unmarked.views(node_findings)
    # what holds pods as a failed node does: a replacement there is not running, a volume
    # attached there is not detached (a Pending pod may still be scheduled there: not pinned)
    down = failed | set(unmarked_views)
    for pod in snap.pods:
        node_name = (pod.get("spec") or {}).get("nodeName") or ""
        node = node_findings.get(node_name)
        if node is None and node_name in quiet and _stuck_pod(pod, None, now):
            node = node_findings[node_name] = analyse_node(quiet[node_name], snap, now)
        if node is not None and (node.failed or node_name in unmarked_views):
            node.pod_count += 1
        node = unmarked_views.get(node_name, node)  # its pods' reports see it as failed
        if namespaces and pod["metadata"].get("namespace") not in namespaces:
            continue
        if node_name and node is None and node_name not in quiet and not _finished(pod):
            # its Node object was deleted
            if not only_nodes or node_name in only_nodes:
                pods.append(analyse_orphan_pod(pod, snap, now))
            continue
        if (not only_nodes or node_name in only_nodes) and _stuck_pod(pod, node, now):
            zone = zone_by_name.get(node.zone) if node else None
            found = analyse_pod(pod, snap, node, zone, master_disruption, down, now, braked)
            if node_name in unmarked_views:
                unmarked.tell(found, node_findings[node_name], chief, now)
            pods.append(found)
            continue
        pinned = pinned_to(pod, failed) if failed else []
        if pinned:
            if not only_nodes or set(pinned) & set(only_nodes):
                pods.append(analyse_pinned_pod(pod, snap, pinned))
            continue
        held = held_by_failed_node(pod, snap, down) if down else []
        holders = {va["spec"]["nodeName"] for _, _, va in held}
        if held and (not only_nodes or holders & set(only_nodes)):
            by_failed = {n: unmarked_views.get(n) or node_findings[n] for n in down}
            pods.append(analyse_waiting_pod(pod, snap, held, by_failed, now, braked))
    pods.sort(key=lambda p: (not p.node_failed, p.node, p.namespace, p.name))
    _leaderless_pods(pods, snap, now)
    listed = [
        f
        for name, f in sorted(node_findings.items())
        if _listed(f) and (not only_nodes or name in only_nodes)
    ]
    on_failed: dict[str, list[PodFinding]] = {}  # each failed node's stuck pods, in one pass
    waiting: dict[str, list[PodFinding]] = {}  # and the pods elsewhere its volumes hold
    for p in pods:
        if p.node_failed:
            on_failed.setdefault(p.node, []).append(p)
        for holder in p.held_by:
            waiting.setdefault(holder, []).append(p)
    for finding in listed:
        node_obj = snap.node(finding.name)
        if finding.failed and node_obj is not None:
            finding.automation = automation.covering(node_obj, snap, now)
        finding.action = advice.for_node(
            finding, minor, on_failed.get(finding.name, []), braked, waiting.get(finding.name)
        )
    notes = _cluster_notes(snap, zones, len(failed), master_disruption, minor, pods)
    behaviour = versions.applied_claims(snap.server_version, minor)
    return Report(
        timelines=_timelines(snap, listed, now) if timelines else None,
        captured_at=snap.captured_at,
        source=snap.source,
        server_version=snap.server_version,
        nodes_total=len(snap.nodes),
        nodes=listed,
        zones=zones,
        pods=pods,
        cluster=[c.text for c in notes],
        gaps=list(snap.gaps),
        server_behaviour=[c.text for c in behaviour],
        server_behaviour_claims=behaviour,
        scope_nodes=sorted(only_nodes),
        scope_namespaces=sorted(namespaces),
        nodes_not_ready_total=len(failed),
        brake=braked,
        cluster_claims=notes,
        held_claims=summary.held_claims(pods),
        workloads=outage.owner_groups(pods, snap, snap.captured_at),
        headline=claim(
            "headline",
            "cluster",
            f"{len(failed)} of {len(snap.nodes)} nodes not Ready",
            *brake.cluster_counts(snap.nodes),
        ),
    )


def _timelines(snap: Snapshot, listed: list[NodeFinding], now: datetime) -> dict[str, NodeTimeline]:
    """Each listed node's timeline, with the automation the diagnosis found for a failed one
    (found once; the timeline reads it at the snapshot's time, as the diagnosis did when `now`
    is that time)."""
    return {
        f.name: NodeTimeline(
            timeline.node_timeline(
                snap, f.name, f.automation if f.failed and now == snap.captured_at else None
            ),
            timeline.untimed_taints(snap, f.name),
        )
        for f in listed
    }


def _cluster_notes(
    snap: Snapshot,
    zones: list,
    failed: int,
    master_disruption: bool,
    minor: int | None,
    pods: list[PodFinding],
) -> list[Claim]:
    notes = []
    total = len(snap.nodes)
    if master_disruption:
        # nodes the controller leaves out of zone states (Ready ones too): said, with the label
        excluded = [
            n
            for n in snap.nodes
            if facts.LABEL_EXCLUDE_DISRUPTION in (n["metadata"].get("labels") or {})
        ]
        counted = (
            f" (of the nodes it counts: {plural(len(excluded), 'node')} labelled "
            f"{facts.LABEL_EXCLUDE_DISRUPTION} are left out of zone states, Ready or not)"
            if excluded
            else ""
        )
        left_out = [
            fact("Node", n, f"metadata.labels[{facts.LABEL_EXCLUDE_DISRUPTION}]") for n in excluded
        ]
        notes.append(
            claim(
                "cluster-note",
                "cluster",
                f"every zone has no Ready node{counted}: the node lifecycle controller is in "
                "master disruption mode and taints no more nodes (pods on nodes without the "
                "NoExecute taint are not evicted). This is almost always the control "
                "plane's own connectivity (network, API server, load balancer), not the "
                "machines.",
                *(p for z in zones for p in brake.counted(z)),
                *left_out,
            )
        )
    elif brake.is_mass_failure(failed, total):
        notes.append(
            claim(
                "cluster-note",
                "cluster",
                f"{failed} of {total} nodes are not Ready at once: a failure this wide is most "
                "likely the network or the control plane, not the machines. Fix that first; "
                "do not force-delete pods.",
                *brake.cluster_counts(snap.nodes),
            )
        )
    # Only what the pods show: a pre-1.27 server marks pods NodeLost only when its
    # controller-manager runs with --enable-taint-manager=false (seen on a real 1.26).
    lost = [p for p in pods if p.era == "nodelost"]
    lost_obj = snap.pod(lost[0].namespace, lost[0].name) if lost else None
    if lost_obj is not None:
        where = f"server 1.{minor}" if minor is not None else "the server"
        notes.append(
            claim(
                "cluster-note",
                "cluster",
                f"NodeLost era: pods carry reason NodeLost, set when {where}'s node lifecycle "
                "controller deleted them itself (--enable-taint-manager=false, possible before "
                "1.27): kubectl prints them Unknown; this is the older spelling of Terminating "
                "on a lost node.",
                fact("Pod", lost_obj, "status.reason"),
            )
        )
    return notes
