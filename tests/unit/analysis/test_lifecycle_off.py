"""A node not Ready while the node lifecycle controller does not run (kube-controller-manager
with --controllers=*,-node-lifecycle-controller; its leader renews its Lease): nothing taints
the node, so nothing evicts or replaces its pods. Recorded by tests/e2e/test_no_leader.py (a
live kubelet posting Ready=False; the control plane put no NoExecute taint on the node and
evicted nothing for 20 s after). What says the controller does not run is what its absence
leaves: Ready nodes keeping the not-ready NoSchedule taint a kubelet registers with, which it
takes off a node once Ready (nodes.lifecycle_off)."""

from __future__ import annotations

from datetime import timedelta

from kubectl_nodefail.analysis import eviction, summary
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.findings import PodFinding, Report, ZoneFinding
from kubectl_nodefail.analysis.nodes import is_ready, nothing_marks
from kubectl_nodefail.render import render, words
from kubectl_nodefail.snapshot.model import Snapshot, format_time
from tests.oracles import invariants, premises
from tests.unit.conftest import load, stale_ready_node

RECORDED = "lifecycle-off-not-ready"
NODE = "untainted-o2"
SIGN = "spec.taints[key=node.kubernetes.io/not-ready,effect=NoSchedule]"


def _report(snap: Snapshot) -> Report:
    report = diagnose(snap, snap.captured_at, timelines=True)
    false = premises.check(snap.to_dump(), render.report_data(report))
    assert false == [], false
    assert invariants.check(report) == []
    return report


def _zone(report: Report) -> ZoneFinding:
    [zone] = [z for z in report.zones if z.not_ready]
    return zone


def _pod(report: Report) -> PodFinding:
    [row] = [p for p in report.pods if p.node == NODE]
    return row


def _without_the_sign(snap: Snapshot) -> Snapshot:
    """The same cluster with the Ready nodes' registration taint gone (a controller that runs
    took it off): nothing then says it does not run."""
    for node in snap.nodes:
        if is_ready(node):
            node["spec"]["taints"] = [
                t for t in node["spec"].get("taints") or [] if t["effect"] != "NoSchedule"
            ]
    return snap


def test_the_recorded_node_reported_not_ready_is_said_to_get_no_taint() -> None:
    report = _report(load(RECORDED))
    zone, row = _zone(report), _pod(report)
    assert (zone.state, zone.eviction) == ("Normal", "stopped")
    assert "tainting runs" not in zone.explanation, zone.explanation
    assert "by all signs it does not run" in zone.explanation and "healthy-0" in zone.explanation
    # the zone's line rests on the Ready nodes' kept taint, as well as on the counts
    paths = {(p.object, p.field) for c in zone.claims for p in c.because}
    assert ("Node/healthy-0", SIGN) in paths, sorted(paths)
    assert row.eviction_at is None and eviction.UNMARKED in row.timeline, row.timeline
    assert eviction.PENDING not in row.timeline and "rate-limited per zone);" not in row.timeline
    assert summary.next_step(row, report.captured_at) == "not evicted (controller)"
    said = next(c for c in row.claims if c.kind == "eviction")
    assert ("Node/healthy-0", SIGN) in {(p.object, p.field) for p in said.because}
    # its kubelet reports: fix the node, not a wait for a taint that does not come
    assert row.action.code == "investigate" and "is coming" not in row.action.summary
    back = next(c for c in row.claims if c.kind == "if-node-returns")
    assert "taints are lifted" not in back.text, back.text  # nothing lifts them either


def test_without_the_sign_the_taint_is_said_to_come() -> None:
    """The same moment, the registration taint gone from the Ready nodes: the controller
    runs as far as the snapshot shows, and its taint is still to come."""
    report = _report(_without_the_sign(load(RECORDED)))
    zone, row = _zone(report), _pod(report)
    assert zone.eviction == "proceeding" and "tainting runs" in zone.explanation
    assert eviction.PENDING in row.timeline and eviction.UNMARKED not in row.timeline
    back = next(c for c in row.claims if c.kind == "if-node-returns")
    assert "taints are lifted" in back.text


def test_a_silent_node_marked_before_the_controller_stopped_is_freed_not_waited_for() -> None:
    """The node's kubelet silent (Ready Unknown, set before the controller stopped running,
    and no taint on it): its pod's suggestion is not to wait for a taint, but to start that
    controller or free the pod."""
    row = _pod(_report(_silent()))
    assert eviction.UNMARKED in row.timeline, row.timeline
    assert row.action.code != "wait", row.action
    assert row.action.summary.startswith("nothing taints its node"), row.action.summary
    assert "kube-controller-manager's --controllers" in row.action.summary
    fresh = _report(_without_the_sign(_silent()))  # without the sign: a taint still to come
    assert "is coming" in _pod(fresh).action.summary, _pod(fresh).action


def _silent() -> Snapshot:
    """The recording with NODE's kubelet silent for ten minutes and its Ready Unknown."""
    snap = load(RECORDED)
    node = snap.node(NODE)
    assert node is not None
    since = snap.captured_at - timedelta(minutes=10)
    for cond in node["status"]["conditions"]:
        cond.update(
            status="Unknown",
            reason="NodeStatusUnknown",
            message="Kubelet stopped posting node status.",
            lastTransitionTime=format_time(since),
            lastHeartbeatTime=format_time(since - timedelta(seconds=40)),
        )
    for lease in snap.leases:
        if lease["metadata"]["name"] == NODE:
            lease["spec"]["renewTime"] = format_time(since - timedelta(seconds=40))
    return snap


def test_a_late_kubelet_is_said_to_be_marked_by_nothing_before_its_time() -> None:
    """A Ready node's kubelet late (25 s since its last renewal of a 40 s lease: two renewals
    missed), before the default grace is over: where the controller does not run, nothing is
    said to mark it NotReady, then or later (not "NotReady is coming"), and the node's advice is
    not to wait for it. Without the sign, the controller's mark is said to come."""
    snap, name = stale_ready_node(RECORDED, 25)
    report = _report(snap)
    node = next(n for n in report.nodes if n.name == name)
    assert node.cause.code == "lease-not-renewed" and nothing_marks(node.cause)
    assert "nothing marks the node NotReady" in node.cause.summary, node.cause.summary
    assert "sets Ready Unknown" not in node.cause.summary
    assert node.action.code == "investigate" and "--controllers" in node.action.summary
    top = words.headline(report)
    assert "NotReady is coming" not in top and "nothing marks them NotReady" in top, top
    snap, name = stale_ready_node(RECORDED, 25)
    fresh = _report(_without_the_sign(snap))
    node = next(n for n in fresh.nodes if n.name == name)
    assert not nothing_marks(node.cause) and "sets Ready Unknown" in node.cause.summary
    assert node.action.code == "wait" and "NotReady is coming" in words.headline(fresh)


def _later(snap: Snapshot, seconds: float) -> Snapshot:
    """The snapshot read `seconds` later: the Ready nodes' kubelets and the leader still
    renewing, nothing else changed (the not-Ready node still reporting, still untainted)."""
    snap.captured_at += timedelta(seconds=seconds)
    stamp = format_time(snap.captured_at)
    for lease in snap.leases:
        lease["spec"]["renewTime"] = stamp
    for node in snap.nodes:
        for cond in node["status"]["conditions"]:
            cond["lastHeartbeatTime"] = stamp
    return snap


def test_a_node_untainted_past_its_zones_rate_is_said_not_to_be_tainted() -> None:
    """Without the registration-taint sign, the recorded not-Ready node read again: a minute on,
    its taint is still to come (one not-Ready node: 10 s at the default rate, the controller's
    look and a minute's slack); three hours on, the zone's line says the controller is not
    tainting there, the pod's timeline that nothing evicts it, NEXT 'not evicted (controller)'.
    A leader that took over a minute before the reading queues every not-Ready node again:
    not late then."""
    soon = _report(_later(_without_the_sign(load(RECORDED)), 60))
    assert _zone(soon).eviction == "proceeding" and eviction.PENDING in _pod(soon).timeline
    late = _report(_later(_without_the_sign(load(RECORDED)), 3 * 3600))
    zone, row = _zone(late), _pod(late)
    assert zone.eviction == "stopped" and NODE in zone.late, zone
    assert "it is not tainting here" in zone.explanation and "tainting runs" not in zone.explanation
    paths = {(p.object, p.field) for c in zone.claims for p in c.because}
    assert (f"Node/{NODE}", "status.conditions[type=Ready].lastTransitionTime") in paths
    assert eviction.UNTAINTED in row.timeline and row.eviction_at is None, row.timeline
    assert summary.next_step(row, late.captured_at) == "not evicted (controller)"
    snap = _later(_without_the_sign(load(RECORDED)), 3 * 3600)
    for lease in snap.leases:
        if lease["metadata"]["namespace"] == "kube-system":
            lease["spec"]["acquireTime"] = format_time(snap.captured_at - timedelta(minutes=1))
    fresh = _report(snap)
    assert _zone(fresh).eviction == "proceeding" and not _zone(fresh).late
    assert eviction.PENDING in _pod(fresh).timeline


def test_a_leader_that_just_took_over_is_not_said_not_to_run() -> None:
    """The recording with its leader taken over 5 s before the reading: it has not looked at
    the Ready nodes yet, so their registration taint says nothing of it (counted from its
    start as from their Ready transition)."""
    snap = load(RECORDED)
    for lease in snap.leases:
        if lease["metadata"]["namespace"] == "kube-system":
            lease["spec"]["acquireTime"] = format_time(snap.captured_at - timedelta(seconds=5))
    report = _report(snap)
    assert "by all signs" not in _zone(report).explanation, _zone(report).explanation
    assert eviction.UNMARKED not in _pod(report).timeline
