"""The claims issue 8 found wrong, on snapshots recorded from the real control plane."""

from __future__ import annotations

from kubectl_nodefail.analysis import summary
from kubectl_nodefail.analysis.findings import Report
from kubectl_nodefail.render import render
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


# --- recorded by the issue-8 scenarios (tests/e2e/test_claims_*.py) ---

CLAIMS = "scenario-claims"
ZONES = "scenario-zones"


def test_forever_toleration_advice_frees_it_instead_of_calling_it_cosmetic() -> None:
    report = report_of("dead-node-claims", namespaces=[CLAIMS])
    forever = pod(report, CLAIMS, "forever")
    # Never evicted: never replaced while the node is down (not "created when evicted").
    assert forever.replacement.state == "none" and not forever.terminating
    assert "never evicted and never replaced" in forever.replacement.summary
    assert _next(report, CLAIMS, forever.name) == "never evicted"
    assert forever.action.code == "out-of-service"
    assert "serves" not in forever.action.summary and "delete the Node" in forever.action.summary


def test_finalizer_on_dead_node_names_both_causes_and_the_remover() -> None:
    report = report_of("dead-node-claims", namespaces=[CLAIMS])
    held = pod(report, CLAIMS, "held-dead")
    assert held.finalizers == ["e2e.nodefail/hold"]
    assert "kubelet is not reporting" in held.meaning and "e2e.nodefail/hold" in held.meaning
    assert "removed by the controller that set it (e2e.nodefail)" in held.action.summary
    assert "object stays until its finalizers are removed" in held.if_node_returns


def test_statefulset_policies_name_their_pending_work() -> None:
    report = report_of("dead-node-claims", namespaces=[CLAIMS])
    par, ord0 = pod(report, CLAIMS, "par-0"), pod(report, CLAIMS, "ord-0")
    assert "scaling proceeds" in par.explanation and "rolling update to revision" in (
        par.explanation
    )
    assert "ordinals 1, 2 not created yet (replicas 3)" in ord0.explanation
    assert "not finished: ordinals 0 still on" in ord0.explanation


def test_finalizer_held_pods_elsewhere_are_grouped_and_kept_out_of_the_headline() -> None:
    report = report_of("dead-node-claims", namespaces=[CLAIMS])
    c = summary.counts(report)
    assert c.held_by_finalizers == 60 and c.elsewhere == 60 and c.on_failed_nodes == 4
    groups = summary.elsewhere_groups(report)
    assert [(g.owner, len(g.pods), g.finalizers) for g in groups] == [
        ("Deployment/held-many", 60, ("e2e.nodefail/hold",))
    ]
    text = render.table(report)
    assert "4 stuck pods; 60 pods Terminating on nodes that did not fail" in text.splitlines()[0]
    assert sum(1 for line in text.splitlines() if line.startswith(f"{CLAIMS}/held-many")) == 1
    assert all(p.if_node_returns == "" for p in report.pods if not p.node_failed)


def test_live_kubelet_runtime_down_recorded() -> None:
    report = report_of("kubelet-alive-runtime-down", namespaces=[ZONES])
    steady = pod(report, ZONES, "steady")
    assert "reported by that kubelet, not unknown" in steady.meaning
    assert steady.action.code == "investigate"


def test_zone_brake_is_decided_per_node() -> None:
    report = report_of("zone-brake-per-node", namespaces=[ZONES])
    assert _next(report, ZONES, "zp-4") == "not evicted (zone)"
    assert pod(report, ZONES, "zp-1").terminating
    zone = next(z for z in report.zones if z.zone.endswith("zone-p"))
    assert "tainted before the brake still evict" in zone.explanation


def test_full_master_and_large_zones() -> None:
    full = report_of("zone-full-disruption", namespaces=[ZONES])
    zone = next(z for z in full.zones if z.zone.endswith("zone-f"))
    assert (zone.state, zone.eviction) == ("FullDisruption", "proceeding")
    master = report_of("master-disruption", namespaces=[ZONES])
    assert any("master disruption mode" in note for note in master.cluster)
    assert _next(master, ZONES, "zm") == "not evicted (zone)"
    large = report_of("large-zone-partial")
    zone = next(z for z in large.zones if z.zone.endswith("zone-l"))
    assert (zone.nodes, zone.state, zone.eviction) == (60, "PartialDisruption", "slowed")


def test_pod_waiting_for_a_dead_nodes_volume_is_listed() -> None:
    report = report_of("volume-held-by-dead-node", namespaces=["scenario-volume-wait"])
    waiting = pod(report, "scenario-volume-wait", "db-v2-0")
    assert waiting.category == "waiting-for-volume" and waiting.node == "flaky-v3"
    assert summary.counts(report).waiting_for_volume == 1
    first = render.table(report).splitlines()[0]
    assert "1 stuck pod (1 waiting for a volume held by a failed node)" in first
