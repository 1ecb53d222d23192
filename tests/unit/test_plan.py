"""The pure planner over recorded snapshots: gates, attestations, bounds and strategies."""

from __future__ import annotations

import json

from kubectl_nodefail import planfile, render
from kubectl_nodefail.actions import summary
from kubectl_nodefail.analysis.findings import Report
from kubectl_nodefail.errors import Exit
from kubectl_nodefail.plan import Options, Plan, make_plan
from tests.unit.conftest import report_of

NODE = "flaky-a"


def _by_action(plan: Plan, action: str) -> list:  # type: ignore[type-arg]
    return [s for s in plan.steps if s.action == action]


def test_without_attestation_the_destructive_step_is_refused(after_eviction: Report) -> None:
    plan = make_plan(after_eviction, Options(server_minor=36))
    step = _by_action(plan, "taint-out-of-service")[0]
    assert not step.allowed and f"--node-shutdown-confirmed {NODE}" in step.gate
    assert plan.exit_code() == Exit.PARTIAL
    waits = {s.target for s in _by_action(plan, "wait")}
    assert any("/agent-" in t for t in waits) and any("/web-" in t for t in waits)


def test_attestation_unlocks_only_that_node(after_eviction: Report) -> None:
    plan = make_plan(after_eviction, Options(attested=[NODE], server_minor=36))
    step = _by_action(plan, "taint-out-of-service")[0]
    assert step.allowed and "attested" in step.gate and step.lease_renewed
    assert "db-0 (statefulset)" in step.why and "agent" not in step.why
    assert plan.exit_code() == Exit.OK


def test_force_delete_strategy_spares_daemonsets_and_replaced_pods(after_eviction: Report) -> None:
    plan = make_plan(after_eviction, Options(strategy="force-delete", attested=[NODE]))
    targets = {s.target.rsplit("/", 1)[1] for s in _by_action(plan, "force-delete-pod")}
    assert "db-0" in targets and "lonely" in targets
    assert not any(t.startswith(("agent-", "web-", "batch-m")) for t in targets)
    step = next(s for s in _by_action(plan, "force-delete-pod") if s.target.endswith("/db-0"))
    assert step.uid and step.resource_version  # sent as delete preconditions


def test_old_servers_fall_back_to_force_delete(after_eviction: Report) -> None:
    plan = make_plan(after_eviction, Options(attested=[NODE], server_minor=26))
    assert plan.strategy == "force-delete" and _by_action(plan, "force-delete-pod")


def test_mass_failure_and_node_bound_refuse() -> None:
    report = report_of("three-nodes-down")
    plan = make_plan(report, Options(attested=["flaky-b", "flaky-c", "flaky-d"], max_nodes=3))
    assert any("3 of 6 nodes are down" in r for r in plan.refusals)
    assert not any(s.allowed for s in plan.steps if s.action != "wait")
    plan = make_plan(report, Options(attested=["flaky-b"], max_nodes=1, allow_disruption=True))
    assert any("at most 1 per run" in r for r in plan.refusals)
    plan = make_plan(
        report, Options(attested=["flaky-b"], only_nodes=["flaky-b"], allow_disruption=True)
    )
    assert plan.refusals == [] and all(s.node == "flaky-b" for s in plan.steps)
    assert _by_action(plan, "taint-out-of-service")[0].allowed


def test_zone_disruption_refuses_even_with_attestation() -> None:
    report = report_of("zone-partial-disruption")
    plan = make_plan(report, Options(attested=["flaky-z4"], only_nodes=["flaky-z4"]))
    assert any("PartialDisruption" in r for r in plan.refusals)
    assert plan.exit_code() == Exit.PARTIAL


def test_cloud_shutdown_needs_no_attestation() -> None:
    plan = make_plan(report_of("cloud-shutdown"), Options(only_nodes=["flaky-s2"]))
    step = _by_action(plan, "taint-out-of-service")[0]
    assert step.allowed and "cloud provider" in step.gate


def test_stale_out_of_service_taint_is_the_only_step_on_a_ready_node() -> None:
    plan = make_plan(report_of("out-of-service-stale"), Options(only_nodes=["flaky-d"]))
    assert [(s.action, s.allowed) for s in plan.steps] == [("remove-out-of-service", True)]


def test_healthy_cluster_has_nothing_to_do() -> None:
    plan = make_plan(report_of("node-down-recovered"), Options())
    assert plan.steps == [] and plan.exit_code() == Exit.NOTHING_TO_DO


def test_saved_plan_round_trips(after_eviction: Report) -> None:
    plan = make_plan(after_eviction, Options(attested=[NODE], strategy="force-delete"))
    data = json.loads(render.as_json(planfile.document(plan, summary(plan))))
    again = planfile.load(data)
    assert again.steps == plan.steps and again.strategy == plan.strategy
