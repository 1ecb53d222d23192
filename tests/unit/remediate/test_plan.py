"""The pure planner over recorded snapshots: gates, attestations, bounds and strategies."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

from kubectl_nodefail.analysis.advice import JOB_TRACKING_FINALIZER, holding_finalizers
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.findings import Report
from kubectl_nodefail.common.errors import Exit
from kubectl_nodefail.remediate import planfile
from kubectl_nodefail.remediate.actions import summary
from kubectl_nodefail.remediate.plan import (
    MUTATING,
    Options,
    Plan,
    _cosmetic,
    finalizer_owner,
    make_plan,
    narrow,
)
from kubectl_nodefail.render import render
from kubectl_nodefail.render.plantext import plan_table
from kubectl_nodefail.snapshot.model import format_time
from tests.unit.conftest import load, report_of

NODE = "flaky-a"


def _by_action(plan: Plan, action: str) -> list:  # type: ignore[type-arg]
    return [s for s in plan.steps if s.action == action]


def test_without_attestation_the_destructive_step_is_refused(after_eviction: Report) -> None:
    plan = make_plan(after_eviction, Options(server_minor=36))
    step = _by_action(plan, "taint-out-of-service")[0]
    assert not step.allowed and f"Check the machine of {NODE}" in step.gate
    assert "--node-shutdown-confirmed <NODE-YOU-VERIFIED-IS-POWERED-OFF>" in step.gate
    assert plan.exit_code() == Exit.PARTIAL
    waits = {s.target for s in _by_action(plan, "wait")}
    assert any("/web-" in t for t in waits)


def test_attestation_unlocks_only_that_node(after_eviction: Report) -> None:
    plan = make_plan(after_eviction, Options(attested=[NODE], server_minor=36))
    step = _by_action(plan, "taint-out-of-service")[0]
    assert step.allowed and "attested" in step.gate and step.lease_renewed
    assert "db-0 (statefulset)" in step.why
    assert plan.exit_code() == Exit.OK


def test_a_daemonset_pod_the_taint_evicts_is_released_by_it_not_said_to_resume(
    after_eviction: Report,
) -> None:
    """DaemonSet pods tolerate not-ready/unreachable, not the out-of-service taint: the taint
    evicts them (audit 2039 batch 1: gone with the rest while the plan said "never acted on; it
    resumes with the node"). The taint's step names them; no step says they stay."""
    plan = make_plan(after_eviction, Options(attested=[NODE], server_minor=36))
    taint = _by_action(plan, "taint-out-of-service")[0]
    agents = [p for p in after_eviction.pods if p.controller == "daemonset" and p.node == NODE]
    assert agents and all(not p.stays_under_out_of_service for p in agents)
    for pod in agents:
        assert f"{pod.namespace}/{pod.name} (daemonset)" in taint.releases
        assert not any(s.target.endswith(f"/{pod.name}") for s in _by_action(plan, "wait"))
    # without a taint step (force deletion) nothing touches them: they resume with the node
    forced = make_plan(after_eviction, Options(strategy="force-delete", attested=[NODE]))
    said = {s.target: s.why for s in _by_action(forced, "wait")}
    for pod in agents:
        assert "resumes with the node" in said[f"pod/{pod.namespace}/{pod.name}"]


def test_delete_node_releases_every_pod_on_it_and_is_planned_when_none_needs_it(
    after_eviction: Report,
) -> None:
    """PodGC deletes every pod of a deleted Node, DaemonSet ones and replaced ones too: the
    step names them all (but those finalizers hold), and it is planned even when none of them
    needs releasing (the suggestion "delete the Node object" once planned nothing, exit 5)."""
    plan = make_plan(after_eviction, Options(strategy="delete-node", attested=[NODE]))
    step = _by_action(plan, "delete-node")[0]
    here = [p for p in after_eviction.pods if p.node == NODE and p.node_failed]
    held = {e.split(" ", 1)[0] for e in step.leaves_stuck}
    named = {e.split(" ", 1)[0] for e in step.releases}
    assert named | held == {f"{p.namespace}/{p.name}" for p in here} and not named & held
    assert not any("resumes" in s.why for s in plan.steps)
    needless = replace(
        after_eviction,
        pods=[p for p in after_eviction.pods if p.controller == "daemonset" or p.node != NODE],
    )
    alone = make_plan(needless, Options(strategy="delete-node", attested=[NODE]))
    (only,) = _by_action(alone, "delete-node")
    assert only.allowed and only.releases and alone.exit_code() == Exit.OK


def test_force_delete_strategy_spares_daemonsets_and_replaced_pods(after_eviction: Report) -> None:
    plan = make_plan(after_eviction, Options(strategy="force-delete", attested=[NODE]))
    targets = {s.target.rsplit("/", 1)[1] for s in _by_action(plan, "force-delete-pod")}
    assert "db-0" in targets and "lonely" in targets
    assert not any(t.startswith(("agent-", "web-", "batch-m")) for t in targets)
    step = next(s for s in _by_action(plan, "force-delete-pod") if s.target.endswith("/db-0"))
    assert step.uid and step.resource_version  # sent as delete preconditions


def test_old_servers_fall_back_to_force_delete(after_eviction: Report) -> None:
    """Below 1.26 the out-of-service taint is alpha (off by default); from its 1.26 beta on
    (on by default, seen force-deleting on a real 1.26 control plane) it is the default."""
    plan = make_plan(after_eviction, Options(attested=[NODE], server_minor=25))
    assert plan.strategy == "force-delete" and _by_action(plan, "force-delete-pod")
    plan = make_plan(after_eviction, Options(attested=[NODE], server_minor=26))
    assert plan.strategy == "out-of-service"


def test_mass_failure_and_node_bound_refuse() -> None:
    report = report_of("three-nodes-down")
    plan = make_plan(report, Options(attested=["flaky-b", "flaky-c", "flaky-d"], max_nodes=3))
    assert any("3 of 6 nodes not Ready at once" in r for r in plan.refusals)
    assert not any(s.allowed for s in plan.steps if s.action != "wait")
    plan = make_plan(report, Options(attested=["flaky-b"], max_nodes=1, allow_disruption=True))
    assert any("at most 1 per run" in r for r in plan.refusals)
    plan = make_plan(
        report, Options(attested=["flaky-b"], only_nodes=["flaky-b"], allow_disruption=True)
    )
    assert plan.refusals == [] and all(s.node == "flaky-b" for s in plan.steps)
    assert _by_action(plan, "taint-out-of-service")[0].allowed


def test_a_refused_step_names_every_lock_at_once() -> None:
    """Refused by the brake or the bound and not attested, a node's step names both: lifting
    the first does not reveal the second on the next run. Attested, only the first."""
    report = report_of("three-nodes-down")
    for opts in (Options(), Options(allow_disruption=True)):
        for step in _by_action(make_plan(report, opts), "taint-out-of-service"):
            assert not step.allowed
            first = "3 of 6 nodes not Ready" if not opts.allow_disruption else "3 failed nodes in"
            assert step.gate.startswith(first), step.gate
            assert "Also no evidence the machine is down" in step.gate, step.gate
            assert "--node-shutdown-confirmed" in step.gate
    plan = make_plan(report, Options(attested=["flaky-b", "flaky-c", "flaky-d"]))
    for step in _by_action(plan, "taint-out-of-service"):
        assert "3 of 6 nodes not Ready" in step.gate and "no evidence" not in step.gate


def test_a_node_whose_machine_ran_is_not_told_to_be_attested() -> None:
    """The recorded node whose live kubelet reports NotReady (it renewed its lease after its
    Ready condition turned): an attestation for it is refused (check_attestations), so its
    refused step says why, not "re-run with --node-shutdown-confirmed"."""
    plan = make_plan(report_of("kubelet-reports-not-ready"), Options())
    [step] = _by_action(plan, "taint-out-of-service")
    assert not step.allowed and "machine ran after the failure began" in step.gate, step.gate
    assert "re-run with" not in step.gate and "would be refused" in step.gate


def test_naming_one_node_does_not_step_around_a_mass_failure() -> None:
    """`remediate flaky-b` diagnoses with the view narrowed to flaky-b: the brake still counts
    every node of the cluster (it counted the view's, so 1 of 6 was not a mass failure)."""
    report = report_of("three-nodes-down", only_nodes=["flaky-b"])
    assert [n.name for n in report.nodes] == ["flaky-b"]
    plan = make_plan(report, Options(attested=["flaky-b"], only_nodes=["flaky-b"]))
    assert any("3 of 6 nodes not Ready at once" in r for r in plan.refusals), plan.refusals
    assert not any(s.allowed for s in plan.steps if s.action in MUTATING)
    assert plan.exit_code() == Exit.PARTIAL


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


def test_an_out_of_service_taint_on_a_ready_node_whose_kubelet_is_silent_stays() -> None:
    """Ready alone is not "back": a node whose kubelet stopped renewing its lease is not marked
    yet (or never, without a controller leader); its out-of-service taint is still wanted, and
    remediate does not offer to remove it."""
    snap = load("out-of-service-stale")
    lease = next(x for x in snap.leases if x["metadata"]["name"] == "flaky-d")
    lease["spec"]["renewTime"] = format_time(snap.captured_at - timedelta(seconds=90))
    report = diagnose(snap, snap.captured_at)
    node = next(n for n in report.nodes if n.name == "flaky-d")
    assert not node.failed and not node.stale_out_of_service
    assert node.action is not None and node.action.code != "remove-out-of-service"
    plan = make_plan(report, Options(only_nodes=["flaky-d"]))
    assert "remove-out-of-service" not in [s.action for s in plan.steps]


def test_healthy_cluster_has_nothing_to_do() -> None:
    plan = make_plan(report_of("node-down-recovered"), Options())
    assert plan.steps == [] and plan.exit_code() == Exit.NOTHING_TO_DO


def test_saved_plan_round_trips(after_eviction: Report) -> None:
    plan = make_plan(after_eviction, Options(attested=[NODE], strategy="force-delete"))
    data = json.loads(render.as_json(render.plan_document(plan, summary(plan))))
    again = planfile.load(data)
    # everything but the facts of the steps' words, which a replay takes from the live plan
    assert again.steps == [replace(s, because=[]) for s in plan.steps]
    assert again.strategy == plan.strategy


def test_a_replacement_not_there_yet_is_not_cosmetic(before_eviction: Report) -> None:
    """Before eviction nothing replaces a Deployment pod yet (and a pod tolerating the taint for
    ever is never replaced): it is not cosmetic, so an attested node's plan acts on it."""
    web = next(p for p in before_eviction.pods if p.name.startswith("web-"))
    assert web.replacement.state == "not-yet" and not _cosmetic(web)
    plan = make_plan(before_eviction, Options(strategy="force-delete", attested=[NODE]))
    assert any(s.target.endswith(web.name) for s in _by_action(plan, "force-delete-pod"))
    plan = make_plan(before_eviction, Options(server_minor=36))
    step = next(s for s in plan.steps if s.target.endswith(web.name))
    assert step.action == "wait" and "eviction due" in step.why
    assert "cosmetic" not in step.why


def test_a_job_tracking_finalizer_holds_only_under_force_delete(after_eviction: Report) -> None:
    """The Job with a podFailurePolicy keeps its tracking finalizer on the Terminating pod until
    phase Failed: a force delete cannot release it (named, never promised); the out-of-service
    taint can (PodGC marks the pod Failed first)."""
    pfp = next(p for p in after_eviction.pods if p.name.startswith("batch-pfp-"))
    assert pfp.finalizers == [JOB_TRACKING_FINALIZER] and pfp.terminating
    plan = make_plan(after_eviction, Options(strategy="force-delete", attested=[NODE]))
    held = _by_action(plan, "finalizer-held")
    assert [s.target for s in held] == [f"pod/scenario-down/{pfp.name}"]
    assert JOB_TRACKING_FINALIZER in held[0].why and "out-of-service" in held[0].gate
    assert not held[0].allowed and plan.exit_code() == Exit.PARTIAL
    assert not any(s.target == held[0].target for s in _by_action(plan, "force-delete-pod"))
    oos = make_plan(after_eviction, Options(attested=[NODE], server_minor=36))
    assert not _by_action(oos, "finalizer-held")
    assert pfp.name in _by_action(oos, "taint-out-of-service")[0].why


def test_holding_finalizers() -> None:
    custom = ["example.com/backup", JOB_TRACKING_FINALIZER]
    assert holding_finalizers(custom, True, "out-of-service") == ["example.com/backup"]
    assert holding_finalizers(custom, True, "force-delete") == custom
    assert holding_finalizers(custom, False, "force-delete") == ["example.com/backup"]
    assert "example.com" in finalizer_owner("example.com/backup", "ns", "p")


def _saved_and_fresh(report: Report, saved: Options, fresh: Options) -> tuple[Plan, Plan]:
    return make_plan(report, saved), make_plan(report, fresh)


def test_a_saved_plan_only_narrows(after_eviction: Report) -> None:
    attested = Options(strategy="force-delete", attested=[NODE])
    saved, fresh = _saved_and_fresh(after_eviction, attested, attested)
    # Tampered: a refused step switched on, a step retargeted to another pod.
    saved.steps[0] = replace(saved.steps[0], allowed=False, gate="edited off")
    deletes = [i for i, s in enumerate(saved.steps) if s.action == "force-delete-pod"]
    saved.steps[deletes[0]] = replace(
        saved.steps[deletes[0]], target="pod/kube-system/coredns-0", uid="other"
    )
    fresh.steps[deletes[1]].resource_version = "999"  # the live pod moved on since the save
    plan = narrow(saved, fresh)
    assert [s.target for s in plan.steps] == [s.target for s in saved.steps]  # never widened
    assert not plan.steps[0].allowed and "refused in the saved plan" in plan.steps[0].gate
    retargeted = plan.steps[deletes[0]]
    assert not retargeted.allowed and retargeted.gate.startswith("not allowed now")
    assert plan.steps[deletes[1]].allowed
    assert plan.steps[deletes[1]].resource_version == "999"  # live values, not the file's
    # The same saved plan against a cluster where the node is not attested: nothing allowed.
    unattested = make_plan(after_eviction, Options(strategy="force-delete"))
    plan = narrow(make_plan(after_eviction, attested), unattested)
    assert not plan.mutating
    refused = plan.steps[deletes[1]]
    assert "attestation by unknown user" in refused.gate
    assert "was not typed again for this run" in refused.gate


def test_a_saved_plan_switched_on_by_hand_is_refused_now(after_eviction: Report) -> None:
    """A step saved as refused, edited to allowed: true, is refused by the live plan."""
    saved = make_plan(after_eviction, Options(server_minor=36))
    taint = _by_action(saved, "taint-out-of-service")[0]
    assert not taint.allowed
    taint.allowed = True
    plan = narrow(saved, make_plan(after_eviction, Options(server_minor=36)))
    step = _by_action(plan, "taint-out-of-service")[0]
    assert not step.allowed and "not allowed now (no evidence the machine is down" in step.gate
    assert plan.exit_code() == Exit.PARTIAL and not plan.mutating


def test_a_finalizer_held_pod_is_named_never_released() -> None:
    """Recorded: a bare pod with finalizer e2e.nodefail/hold and a StatefulSet pod, both evicted
    from a failed node. The plan names the finalizer and who removes it; the taint step does not
    list the held pod among what it releases."""
    report = report_of("finalizer-on-failed-node")
    plan = make_plan(report, Options(attested=["flaky-t5"], only_nodes=["flaky-t5"]))
    held = _by_action(plan, "finalizer-held")
    assert [s.target for s in held] == ["pod/scenario-safety/held-flaky-t5"]
    assert "held by finalizer e2e.nodefail/hold" in held[0].why
    assert "the controller that added it (e2e.nodefail) must remove it" in held[0].gate
    taint = _by_action(plan, "taint-out-of-service")[0]
    assert taint.allowed and "db-flaky-t5-0" in taint.why and "held-" not in taint.why
    assert plan.exit_code() == Exit.PARTIAL
    force = make_plan(
        report, Options(strategy="force-delete", attested=["flaky-t5"], only_nodes=["flaky-t5"])
    )
    assert [s.target for s in _by_action(force, "finalizer-held")] == [held[0].target]
    assert all("held-" not in s.target for s in _by_action(force, "force-delete-pod"))


def test_an_unconfirmed_step_was_executed_and_is_exit_7(after_eviction: Report) -> None:
    """Sent and accepted, its effect not seen: the head says it ran; the exit code says 7."""
    plan = make_plan(after_eviction, Options(attested=[NODE]))
    step = next(s for s in plan.steps if s.action == "taint-out-of-service")
    step.result, step.detail = "unconfirmed", "out-of-service taint applied, but not its effect"
    text = render.plan_table(plan, confirmed=True)
    assert text.startswith("Executed") and "Nothing was executed" not in text
    assert "Until it runs" not in text
    assert plan.result_code() == Exit.UNCONFIRMED == 7


def test_a_zone_brake_does_not_refuse_removing_a_stale_taint_elsewhere() -> None:
    """A zone in PartialDisruption, and a Ready node of another zone still carrying the
    out-of-service taint: removing it is not what the brake is about, so the plan has no
    plan-wide refusal and, done, exits 0 (issue 36 item 4); a failed node in scope still
    brings the refusal."""
    import copy

    from kubectl_nodefail.analysis.diagnose import diagnose

    snap = copy.deepcopy(load("zone-partial-disruption"))
    node = next(n for n in snap.nodes if n["metadata"]["name"] == "healthy-0")
    node["spec"]["taints"] = [
        {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}
    ]
    report = diagnose(snap, snap.captured_at)
    plan = make_plan(report, Options(only_nodes=["healthy-0"]))
    (step,) = plan.steps
    assert step.action == "remove-out-of-service" and step.allowed
    assert plan.refusals == [] and plan.exit_code() == Exit.OK
    step.result = "done"
    assert plan.result_code() == Exit.OK
    braked = make_plan(report, Options(only_nodes=["flaky-z1"]))
    assert braked.refusals and "zone disruption" in braked.refusals[0]


def test_a_node_alone_in_its_zone_going_down_is_not_a_zone_brake() -> None:
    """A zone of one node fully down (FullDisruption) while the others are up is one node
    failing: its evictions go on, and remediate plans for it (it refused before: any zone not
    Normal). Every zone down (master disruption) still brakes, whatever their size."""
    report = report_of("zone-full-disruption")
    zone = next(z for z in report.zones if z.state == "FullDisruption")
    assert zone.nodes == 1 and report.brake is None
    plan = make_plan(report, Options(attested=["flaky-f1"], only_nodes=["flaky-f1"]))
    assert plan.refusals == [], plan.refusals
    assert report_of("master-disruption").brake is not None


def test_a_pod_a_finalizer_holds_is_never_said_released_by_deleting_the_node() -> None:
    """Audit 2042/158 and 170 (recorded): cosmetic pods (their owner gone, or scaled to 0) with a
    finalizer, tolerating every taint, on a node remediate deleted: the step said it released
    them, and the finalizer kept them until the node returned. They are named as left stuck."""
    report = report_of("cosmetic-held-delete-node")
    node = "au2042-b1-n0"
    opts = Options(strategy="delete-node", attested=[node], only_nodes=[node], server_minor=36)
    plan = make_plan(report, opts)
    (step,) = _by_action(plan, "delete-node")
    held = [p for p in report.pods if p.node == node and p.finalizers]
    assert len(held) == 5 and step.allowed
    for pod in held:
        assert f"{pod.namespace}/{pod.name}" not in {e.split(" ", 1)[0] for e in step.releases}
        assert any(e.startswith(f"{pod.namespace}/{pod.name} (") for e in step.leaves_stuck)


def test_a_node_nothing_marks_is_refused_with_its_stuck_pods_not_nothing_to_do() -> None:
    """Ready only because no controller leader marks it: remediate takes no step on it, and
    says so (exit 4, its stuck pods named), instead of "nothing to do" (exit 5)."""
    report = report_of("no-leader")
    plan = make_plan(report, Options(only_nodes=["lost-l2"]))
    assert plan.steps == [] and plan.exit_code() == Exit.PARTIAL
    assert len(plan.refusals) == 1 and plan.refusals[0].startswith("lost-l2: ")
    assert "has no leader" in plan.refusals[0]
    assert plan.refusals[0].endswith("these stay stuck: scenario-no-leader/held-2")
    text = plan_table(plan, confirmed=False)
    assert "Nothing to do" not in text and "No step planned: see the refusal above." in text
