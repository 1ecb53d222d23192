"""Pods that reach a failed node another way (issue 33 item 2), on neighbours of a recorded
fixture: bound after the NoExecute taint (spec.nodeName set by hand, no scheduler), and pods that
tolerate every taint. What the taint-eviction controller and PodGC do with them is proven on the
real control plane in tests/e2e/test_reaching_the_node.py; here, each path of the analysis."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.eviction import EVICTION_LAG_SECONDS, stays_under_out_of_service
from kubectl_nodefail.remediate.plan import Options, make_plan
from kubectl_nodefail.snapshot.model import Snapshot, format_time, parse_time
from tests.unit.conftest import load

NODE, POD = "flaky-a", "lonely"  # a bare pod tolerating unreachable for 20 s
TAINTED = parse_time("2026-11-30T09:46:46Z")  # the NoExecute taint's timeAdded
assert TAINTED is not None


def _edited(arrived_after_taint: int, toleration: int, captured_after: int) -> Snapshot:
    """The bare pod created with spec.nodeName `arrived_after_taint` s after the taint (no
    PodScheduled condition: no scheduler bound it, and its kubelet never posted status), read
    `captured_after` s after its arrival."""
    snap = copy.deepcopy(load("node-down-before-eviction"))
    pod = snap.pod("scenario-down", POD)
    assert pod is not None
    arrived = TAINTED + timedelta(seconds=arrived_after_taint)
    pod["metadata"]["creationTimestamp"] = format_time(arrived)
    pod["status"] = {"phase": "Pending"}
    for tol in pod["spec"]["tolerations"]:
        tol["tolerationSeconds"] = toleration
    snap.captured_at = arrived + timedelta(seconds=captured_after)
    return snap


def _row(snap: Snapshot) -> Any:
    report = diagnose(snap, snap.captured_at)
    return report, next(p for p in report.pods if p.name == POD)


@settings(max_examples=40, deadline=None)
@given(
    after=st.integers(1, 6 * 3600),
    toleration=st.integers(0, 6 * 3600),
    read=st.integers(0, 6 * 3600),
)
def test_a_pod_bound_after_the_taint_counts_from_its_arrival(
    after: int, toleration: int, read: int
) -> None:
    snap = _edited(after, toleration, read)
    _, row = _row(snap)
    due = TAINTED + timedelta(seconds=after + toleration)
    late = read - toleration
    if late > EVICTION_LAG_SECONDS:  # due long ago and still not deleted: not evicting
        assert row.eviction_at is None and "has not happened" in row.timeline, row.timeline
        assert "restarted" in row.timeline
    else:
        assert row.eviction_at == due, (row.eviction_at, due)
        assert "arrival on the tainted node" in row.timeline, row.timeline
        assert "ago" not in row.timeline or late >= 0


def test_a_pod_scheduled_before_the_taint_counts_from_the_taint() -> None:
    snap = load("node-down-before-eviction")
    report = diagnose(snap, snap.captured_at)
    row = next(p for p in report.pods if p.name == POD)
    assert row.eviction_at == TAINTED + timedelta(seconds=20)
    assert "taint timeAdded + smallest tolerationSeconds" in row.timeline


def test_a_pod_that_does_not_tolerate_counts_from_its_arrival_too() -> None:
    snap = _edited(600, 20, 5)
    pod = snap.pod("scenario-down", POD)
    assert pod is not None
    pod["spec"]["tolerations"] = []
    _, row = _row(snap)
    assert "evicted as soon as the taint-eviction controller sees it" in row.timeline
    assert row.eviction_at == TAINTED + timedelta(seconds=600)


TOLERATE_ALL: list[dict[str, Any]] = [{"operator": "Exists"}]


def _tolerating_everything(snap: Snapshot, tolerations: list[dict[str, Any]]) -> Snapshot:
    pod = snap.pod("scenario-down", POD)
    assert pod is not None
    pod["spec"]["tolerations"] = tolerations
    return snap


def test_a_pod_tolerating_every_taint_is_force_deleted_not_tainted_off() -> None:
    snap = _tolerating_everything(copy.deepcopy(load("node-down-before-eviction")), TOLERATE_ALL)
    report = diagnose(snap, snap.captured_at)
    row = next(p for p in report.pods if p.name == POD)
    assert row.stays_under_out_of_service and row.action.code == "force-delete", row.action
    assert "tolerates the out-of-service taint" in row.action.summary
    plan = make_plan(report, Options(attested=[NODE], only_nodes=[NODE], allow_disruption=True))
    taint = next(s for s in plan.steps if s.action == "taint-out-of-service")
    assert not any(POD in r for r in taint.releases), taint.releases
    force = [s for s in plan.steps if s.action == "force-delete-pod"]
    assert [s.target for s in force] == [f"pod/scenario-down/{POD}"], plan.steps
    assert plan.steps.index(taint) < plan.steps.index(force[0])  # the taint first: volumes


def test_under_an_out_of_service_taint_already_set_it_is_force_deleted_too() -> None:
    """Someone applied the taint by hand: the pods that do not tolerate it go by themselves
    (a wait), the one that does is force-deleted; nothing says PodGC removes it."""
    snap = _tolerating_everything(copy.deepcopy(load("node-down-before-eviction")), TOLERATE_ALL)
    node = next(n for n in snap.nodes if n["metadata"]["name"] == NODE)
    node["spec"]["taints"].append(
        {
            "key": "node.kubernetes.io/out-of-service",
            "value": "nodeshutdown",
            "effect": "NoExecute",
            "timeAdded": format_time(snap.captured_at),
        }
    )
    report = diagnose(snap, snap.captured_at)
    row = next(p for p in report.pods if p.name == POD)
    assert "PodGC force-deletes only Terminating pods" in row.action.summary, row.action
    plan = make_plan(report, Options(attested=[NODE], only_nodes=[NODE], allow_disruption=True))
    (force,) = [s for s in plan.steps if s.action == "force-delete-pod"]
    assert force.target == f"pod/scenario-down/{POD}" and force.allowed, force
    wait = next(s for s in plan.steps if s.target == f"node/{NODE}")
    assert wait.action == "wait" and "the others that do not tolerate it" in wait.why


@given(
    key=st.sampled_from(["", "node.kubernetes.io/out-of-service", "other"]),
    operator=st.sampled_from(["Exists", "Equal", None]),
    effect=st.sampled_from(["", "NoExecute", "NoSchedule"]),
    value=st.sampled_from([None, "nodeshutdown", "x"]),
    seconds=st.one_of(st.none(), st.integers(0, 600)),
)
def test_who_stays_under_the_out_of_service_taint(
    key: str, operator: str | None, effect: str, value: str | None, seconds: int | None
) -> None:
    """As the API matches a toleration (core/v1 ToleratesTaint) against the taint remediate
    applies (node.kubernetes.io/out-of-service=nodeshutdown:NoExecute), with no time limit."""
    tol: dict[str, Any] = {"key": key, "effect": effect}
    if operator:
        tol["operator"] = operator
    if value is not None:
        tol["value"] = value
    if seconds is not None:
        tol["tolerationSeconds"] = seconds
    matches = (
        effect in ("", "NoExecute")
        and key in ("", "node.kubernetes.io/out-of-service")
        and (operator == "Exists" or (key != "" and (value or "") == "nodeshutdown"))
    )
    assert stays_under_out_of_service({"spec": {"tolerations": [tol]}}) == (
        matches and seconds is None
    )


def test_pods_still_there_long_after_the_out_of_service_taint_are_force_deleted() -> None:
    """The recorded out-of-service-applied fixture, its taint dated as remediate dates it, read
    again 2 minutes later: db-flaky-d-0 is still Terminating there, past PodGC's time (a webhook
    or policy refused its delete). The advice and the plan force-delete it; a moment after the
    taint, both wait for PodGC. (An undated taint, as `kubectl taint` leaves it, has no age:
    PodGC is waited for.)"""
    fresh = copy.deepcopy(load("out-of-service-applied"))
    node = next(n for n in fresh.nodes if n["metadata"]["name"] == "flaky-d")
    for taint in node["spec"]["taints"]:  # applied by kubectl here; remediate dates its own
        if taint["key"] == "node.kubernetes.io/out-of-service":
            taint["timeAdded"] = format_time(fresh.captured_at - timedelta(seconds=5))
    report = diagnose(fresh, fresh.captured_at)
    row = next(p for p in report.pods if p.name == "db-flaky-d-0")
    assert row.action.code == "wait" and row.action.summary == (
        "the out-of-service taint is set: PodGC force-deletes it on its next pass (every 20 s)"
    )
    dated = next(n for n in report.nodes if n.name == "flaky-d").action
    assert dated.code == "wait" and "timeAdded" not in dated.summary, dated
    later = copy.deepcopy(fresh)
    later.captured_at = fresh.captured_at + timedelta(minutes=2)
    report = diagnose(later, later.captured_at)
    row = next(p for p in report.pods if p.name == "db-flaky-d-0")
    assert row.action.code == "force-delete" and "PodGC has not removed it" in row.action.summary
    plan = make_plan(report, Options(attested=["flaky-d"], only_nodes=["flaky-d"]))
    wait = next(s for s in plan.steps if s.target == "node/flaky-d")
    assert "still here" in wait.why, wait.why
    (force,) = [s for s in plan.steps if s.action == "force-delete-pod"]
    assert force.target == "pod/scenario-cleanup/db-flaky-d-0" and force.allowed
    assert plan.exit_code() == 0  # something to run: not "nothing to do"
    # the node's suggestion no longer says its pods are being force-deleted
    late = next(n for n in report.nodes if n.name == "flaky-d").action
    assert late.code == "investigate" and "past PodGC's time" in late.summary, late
    assert "being force-deleted" not in late.summary and "2m" in late.summary, late
    # a pod a finalizer keeps is not PodGC's failure: the node's suggestion does not say so
    held = copy.deepcopy(later)
    for pod in held.pods:
        if pod["spec"].get("nodeName") == "flaky-d":
            pod["metadata"]["finalizers"] = ["example.com/backup-guard"]
    kept = next(n for n in diagnose(held, held.captured_at).nodes if n.name == "flaky-d").action
    assert kept.code == "wait" and "webhook" not in kept.summary, kept


def test_an_undated_out_of_service_taint_is_not_said_to_be_fresh() -> None:
    """The recorded taint, applied with `kubectl taint` (no timeAdded), read as recorded and
    three hours later: when it was added is not recorded, so "shortly" is said of neither; both
    readings say what a pod still there a minute after it means, and the plan waits (it forces
    only what it knows is past PodGC's time)."""
    for hours in (0, 3):
        snap = copy.deepcopy(load("out-of-service-applied"))
        snap.captured_at += timedelta(hours=hours)
        report = diagnose(snap, snap.captured_at)
        row = next(p for p in report.pods if p.name == "db-flaky-d-0")
        assert row.action.code == "wait" and "shortly" not in row.action.summary
        assert "no timeAdded" in row.action.summary and "a minute after" in row.action.summary
        node = next(n for n in report.nodes if n.name == "flaky-d").action
        assert "no timeAdded" in node.summary and "a minute after it" in node.summary, node
        plan = make_plan(report, Options(attested=["flaky-d"], only_nodes=["flaky-d"]))
        assert not [s for s in plan.steps if s.action == "force-delete-pod"]


# --- pods a template binds to the node (tests/e2e/test_reaching_the_node.py, the recording) --

BOUND_NODE, BOUND_NS = "flaky-r2", "scenario-bound"


def _bound_report(snap: Snapshot) -> Any:
    report = diagnose(snap, snap.captured_at)
    return report, {p.name: p for p in report.pods if p.namespace == BOUND_NS}


def test_a_template_that_binds_its_pods_to_the_dead_node_is_said_and_no_release_planned() -> None:
    snap = load("template-node-name")
    report, rows = _bound_report(snap)
    rows.pop("lone")
    assert rows and all(f"sets spec.nodeName: {BOUND_NODE}" in r.explanation for r in rows.values())
    assert rows["db-0"].bound_here == "StatefulSet/db"
    assert f"recreates db-0 on {BOUND_NODE} again" in rows["db-0"].if_node_returns
    standing = [r for r in rows.values() if not r.terminating]
    assert standing and all(r.action.code == "investigate" for r in [*standing, rows["db-0"]])
    plan = make_plan(report, Options(attested=[BOUND_NODE], only_nodes=[BOUND_NODE]))
    bound = [
        s for s in plan.steps if s.target.startswith(f"pod/{BOUND_NS}/") and "lone" not in s.target
    ]
    assert bound and {s.action for s in bound} == {"wait"}
    # the taint is for the pod beside them that it does release
    taint = next(s for s in plan.steps if s.action == "taint-out-of-service")
    assert [r.split(" ")[0] for r in taint.releases] == [f"{BOUND_NS}/lone"]


def test_without_the_templates_node_name_the_pods_are_released_as_any() -> None:
    """The neighbour: the same pods, their owners' templates not naming the node (the
    scheduler bound them): no binding said, and the plan releases them again."""
    snap = copy.deepcopy(load("template-node-name"))
    for owner in snap.owners:
        owner.get("spec", {}).get("template", {}).get("spec", {}).pop("nodeName", None)
    report, rows = _bound_report(snap)
    rows.pop("lone")
    assert not any("sets spec.nodeName" in r.explanation for r in rows.values())
    assert rows["db-0"].bound_here == "" and "may land on this or another node" in (
        rows["db-0"].if_node_returns
    )
    plan = make_plan(report, Options(attested=[BOUND_NODE], only_nodes=[BOUND_NODE]))
    assert {s.action for s in plan.steps} - {"wait"}, plan.steps


def test_a_bound_pod_its_owner_no_longer_wants_is_not_said_to_come_back() -> None:
    """The neighbour where the owner wants fewer pods (scaled to 0): the binding is still said,
    but not "freeing it only makes another here", and nothing is held back as bound."""
    snap = copy.deepcopy(load("template-node-name"))
    for owner in snap.owners:
        if owner.get("kind") in ("ReplicaSet", "Deployment", "StatefulSet"):
            owner["spec"]["replicas"] = 0
    _, rows = _bound_report(snap)
    rows.pop("lone")
    for row in rows.values():
        assert f"sets spec.nodeName: {BOUND_NODE}" in row.explanation
        assert row.replacement.state != "not-wanted" or not row.bound_here, row.name
        if row.replacement.state == "not-wanted":
            assert "only makes another here" not in row.explanation, row.name
    assert any(r.replacement.state == "not-wanted" for r in rows.values())
