"""The rules tests/e2e/test_claims_rules.py reached on the real control plane, re-checked on the
snapshots it recorded: the exact wording of each cause, replacement state and eviction text."""

from __future__ import annotations

from datetime import timedelta

from kubectl_nodefail.analysis import eviction, summary
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.findings import NodeFinding, Report
from tests.unit.conftest import load, pod, report_of


def _node(report: Report, name: str) -> NodeFinding:
    found = [n for n in report.nodes if n.name == name]
    assert found, [n.name for n in report.nodes]
    return found[0]


def test_lease_renewed_while_ready_unknown_is_not_promised_to_heal() -> None:
    node = _node(report_of("kubelet-returning"), "rules-live")
    assert node.ready is not None and node.ready.status == "Unknown"
    assert node.lease_stale is False
    assert node.cause.code == "kubelet-returning"
    assert node.cause.summary == (
        "kubelet is renewing its lease again, but Ready stays Unknown until it posts node status"
    )
    assert node.action.code == "wait" and "post node status" in node.action.summary


def test_live_kubelet_causes_by_their_ready_message() -> None:
    expected = {
        "pleg-unhealthy": (
            "pleg-unhealthy",
            "kubelet is alive but its pod lifecycle event generator is unhealthy "
            "(runtime slow or hung)",
        ),
        "kubelet-not-ready": (
            "kubelet-not-ready",
            "kubelet is alive and reports the node not ready",
        ),
        "not-ready-with-pressure": (
            "resource-pressure",
            "kubelet reports trouble MemoryPressure=True",
        ),
    }
    for fixture, (code, text) in expected.items():
        node = _node(report_of(fixture), "rules-live")
        assert node.ready is not None and node.ready.status == "False", fixture
        assert node.lease_stale is False, fixture
        assert (node.cause.code, node.cause.summary) == (code, text), fixture
        assert node.action.code == "investigate", fixture


def test_node_object_without_a_kubelet() -> None:
    fresh = _node(report_of("node-without-status"), "rules-ghost")
    assert fresh.ready is None and fresh.failed
    assert fresh.cause.code == "no-ready-condition"
    assert fresh.cause.summary == "node has never reported a Ready condition"
    later = _node(report_of("node-never-updated"), "rules-ghost")
    assert later.ready is not None and later.ready.reason == "NodeStatusNeverUpdated"
    assert later.cause.code == "never-registered"
    assert later.cause.summary == "kubelet registered the node but never posted status"


def test_replacement_refused_by_quota_is_missing() -> None:
    report = report_of("replacement-refused-by-quota", namespaces=["scenario-rules-quota"])
    web = pod(report, "scenario-rules-quota", "quota-web")
    assert web.terminating and web.replacement.state == "missing"
    assert web.replacement.summary == (
        "0/1 replicas active and no replacement pod found (quota, admission or a controller "
        "problem: check the ReplicaSet's events)"
    )
    assert summary.next_step(web, report.captured_at) == "no replacement"
    assert "cosmetic" not in web.action.summary


def test_replicaset_scaled_to_zero_wants_no_replacement() -> None:
    report = report_of("replicaset-scaled-to-zero", namespaces=["scenario-rules"])
    shrink = pod(report, "scenario-rules", "shrink")
    assert shrink.terminating and shrink.replacement.state == "not-wanted"
    assert shrink.replacement.summary == (
        "the ReplicaSet was scaled to 0 (rollout or scale-down): no replacement is wanted"
    )
    # Not wanted is not lost: nothing replaces it because nothing should.
    assert summary.next_step(shrink, report.captured_at) != "lost"
    assert "creates a replacement at once" not in shrink.explanation
    assert "wants 0 replicas now" in shrink.explanation
    assert "the replacement keeps running" not in shrink.if_node_returns


def test_intolerant_pod_was_deleted_at_the_taint_time() -> None:
    snap = load("intolerant-pod-evicted")
    raw = next(p for p in snap.pods if p["metadata"]["name"] == "intolerant")
    node = next(n for n in snap.nodes if n["metadata"]["name"] == "rules-dead")
    taint = next(
        t
        for t in node["spec"]["taints"]
        if t["key"] == "node.kubernetes.io/unreachable" and t["effect"] == "NoExecute"
    )
    from kubectl_nodefail.snapshot.model import parse_time

    added, deadline = (
        parse_time(taint["timeAdded"]),
        parse_time(raw["metadata"]["deletionTimestamp"]),
    )
    assert added is not None and deadline is not None
    grace = raw["metadata"]["deletionGracePeriodSeconds"]
    assert abs((deadline - timedelta(seconds=grace) - added).total_seconds()) <= 3
    report = diagnose(snap, snap.captured_at, namespaces=["scenario-rules"])
    assert pod(report, "scenario-rules", "intolerant").terminating


def test_intolerant_pod_wording_fresh_and_stale() -> None:
    """The same pod as recorded before its deletion: the taint seconds old is the instant the
    controller closes; minutes old, that controller is not evicting (no eviction promised)."""
    snap = load("intolerant-pod-evicted")
    raw = next(p for p in snap.pods if p["metadata"]["name"] == "intolerant")
    del raw["metadata"]["deletionTimestamp"]
    node = _node(diagnose(snap, snap.captured_at), "rules-dead")
    added = next(t.time_added for t in node.taints if t.effect == "NoExecute")
    assert added is not None
    fresh = eviction.eviction_time(raw, node.taints, None, False, added + timedelta(seconds=1))
    assert fresh.state == "immediate"
    assert fresh.text == (
        "does not tolerate node.kubernetes.io/unreachable:NoExecute: evicted as soon as the "
        "taint-eviction controller sees it"
    )
    stale = eviction.eviction_time(raw, node.taints, None, False, added + timedelta(minutes=5))
    assert stale.state == "not-evicting" and stale.at is None
    assert eviction.NOT_EVICTING in stale.text and "added 5m ago" in stale.text


def test_rate_limited_tainting_leaves_one_node_waiting() -> None:
    report = report_of("eviction-rate-limited", namespaces=["scenario-rules"])
    failing = [n for n in report.nodes if n.name.startswith("flaky-q")]
    tainted = [n for n in failing if any(t.effect == "NoExecute" for t in n.taints)]
    assert len(failing) == 2 and len(tainted) == 1
    late = next(n for n in failing if n not in tainted)
    row = next(p for p in report.pods if p.node == late.name)
    assert row.timeline == (
        "the NoExecute taint is not on the node yet (rate-limited per zone); eviction follows "
        "its tolerationSeconds after that"
    )
    assert summary.next_step(row, report.captured_at) == "eviction pending"
    zone = next(z for z in report.zones if z.zone == late.zone)
    assert zone.state == "Normal" and zone.eviction == "proceeding"
