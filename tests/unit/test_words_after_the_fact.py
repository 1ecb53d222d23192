"""remediate's words after the fact come from the state at that moment (issue 33 item 7, issue
36 item 3): a refused step of a replayed plan names only the pods the live plan still finds
stuck, and after a --confirm run every pod a refused, skipped or not-started step would have
freed is read again before the result says it stays stuck."""

from __future__ import annotations

from typing import Any

from kubectl_nodefail import render
from kubectl_nodefail.actions import restate
from kubectl_nodefail.errors import ServerError
from kubectl_nodefail.plan import Binding, Plan, Step, narrow

DB = "data/db-0 (statefulset)"
WEB = "data/web-1 (deployment)"


def _taint(releases: list[str], allowed: bool = True) -> Step:
    return Step(
        "taint-out-of-service", "flaky-a", "node/flaky-a", "releases them", allowed, "gate",
        uid="n1", releases=releases,
    )  # fmt: skip


def _plan(*steps: Step) -> Plan:
    return Plan("out-of-service", list(steps), [], ["flaky-a"], Binding())


def test_a_replayed_step_refused_names_only_what_the_live_plan_finds_stuck() -> None:
    saved = _plan(_taint([DB, WEB]))
    fresh = _plan()  # the node is back, or its pods were freed since: no step for it
    (step,) = narrow(saved, fresh).steps
    assert not step.allowed and step.releases == []
    text = render.plan_table(narrow(saved, fresh), False, wide=True)
    assert "stay stuck" not in text and "Releases data/db-0" not in text


def test_a_replayed_step_refused_live_carries_the_live_releases() -> None:
    saved = _plan(_taint([DB, WEB]))
    fresh = _plan(_taint([WEB], allowed=False))
    (step,) = narrow(saved, fresh).steps
    assert step.releases == [WEB]


class _Cluster:
    """What restate reads: one list of a node's pods per node (`pods`: node -> names, or an
    error to raise)."""

    def __init__(self, pods: dict[str, Any]) -> None:
        self.pods, self.reads = pods, []

    def list_all(self, path: str, kind: str, **params: str) -> Any:
        node = params["fieldSelector"].removeprefix("spec.nodeName=")
        self.reads.append(node)
        found = self.pods.get(node, [])
        if isinstance(found, Exception):
            raise found
        return [{"metadata": {"namespace": "data", "name": n}} for n in found]


def test_after_the_run_only_pods_still_on_the_node_stay_named() -> None:
    step = _taint([DB, WEB])
    step.result, step.detail = "not started", "the run was interrupted first"
    other = _taint(["data/lonely (bare)"])
    other.result = "refused"
    plan = _plan(step, other)
    cluster = _Cluster({"flaky-a": ["web-1", "lonely"]})  # db-0 recreated elsewhere
    restate(cluster, plan)  # type: ignore[arg-type]
    assert step.releases == [WEB] and other.releases == ["data/lonely (bare)"]
    assert "no longer on flaky-a when re-read (gone, or recreated elsewhere): data/db-0" in (
        step.detail
    )
    assert cluster.reads == ["flaky-a"]  # one list for the node, not a read per pod
    text = render.plan_table(plan, True, wide=True)
    assert "db-0 (statefulset)" not in text


def test_a_failed_re_read_marks_the_names() -> None:
    step = _taint([DB])
    step.result = "refused"
    restate(_Cluster({"flaky-a": ServerError("503")}), _plan(step))  # type: ignore[arg-type]
    assert step.releases == [f"{DB} [not re-read]"]


def test_a_step_that_ran_is_not_read_again() -> None:
    step = _taint([DB])
    step.result = "done"
    cluster = _Cluster({})
    restate(cluster, _plan(step))  # type: ignore[arg-type]
    assert cluster.reads == [] and step.releases == [DB]
