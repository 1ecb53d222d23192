"""The claims issue 8 found wrong, on snapshots recorded from the real control plane."""

from __future__ import annotations

from kubectl_nodefail import render
from kubectl_nodefail.analysis import summary
from kubectl_nodefail.analysis.findings import Report
from tests.unit.conftest import pod, report_of


def _next(report: Report, namespace: str, name: str) -> str:
    return summary.next_step(pod(report, namespace, name), report.captured_at)


def test_live_kubelet_pods_are_reported_not_unknown() -> None:
    report = report_of("kubelet-reports-not-ready")
    node = next(n for n in report.nodes if n.name == "flaky-s1")
    assert node.lease_stale is False and node.ready is not None and node.ready.status == "False"
    for p in report.pods:
        if p.node == "flaky-s1":
            assert "lease went stale" not in p.meaning and "state is unknown" not in p.meaning
            assert "kubelet is alive" in p.meaning
    db = pod(report, "scenario-signals", "db-s1-0")
    assert db.action.code == "investigate" and "powered off" not in db.action.summary


def test_zone_brake_text_follows_the_taints() -> None:
    report = report_of("zone-partial-disruption")
    zone = next(z for z in report.zones if z.state == "PartialDisruption")
    tainted = [
        n.name
        for n in report.nodes
        if n.zone == zone.zone and n.failed and any(t.effect == "NoExecute" for t in n.taints)
    ]
    assert tainted and "flaky-z4" not in tainted
    assert f"the {len(tainted)} node(s) tainted before the brake still evict" in zone.explanation
    assert "pods are not evicted" not in zone.explanation
    late = [p for p in report.pods if p.node == "flaky-z4"]
    assert late and all(p.controller == "daemonset" for p in late)
    # DaemonSet pods tolerate the taints forever: never evicted, brake or not.
    assert all(summary.next_step(p, report.captured_at) == "never evicted" for p in late)


def test_headline_counts_node_failure_pods_only() -> None:
    report = report_of("finalizer-on-healthy-node", namespaces=["scenario-other"])
    held = pod(report, "scenario-other", "held")
    assert held.if_node_returns == "" and held.finalizers == ["e2e.nodefail/hold"]
    first = render.table(report).splitlines()[0]
    c = summary.counts(report)
    assert f"{c.node_failure} stuck pod" in first
    assert "1 pod Terminating on nodes that did not fail (1 held by finalizers)" in first
