"""remediate's words after the fact come from the state at that moment (issue 33 item 7, issue
36 item 3): a refused step of a replayed plan names only the pods the live plan still finds
stuck, and after a --confirm run every pod a refused, skipped or not-started step would have
freed is read again before the result says it stays stuck."""

from __future__ import annotations

from typing import Any

from kubectl_nodefail import render
from kubectl_nodefail.actions import restate
from kubectl_nodefail.errors import NotFound, ServerError
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
    """What restate reads: one GET per pod, answered from a table (a missing name: 404)."""

    def __init__(self, pods: dict[str, Any]) -> None:
        self.pods, self.reads = pods, []

    def get_object(self, path: str) -> Any:
        self.reads.append(path)
        name = path.rsplit("/", 1)[-1]
        found = self.pods.get(name)
        if isinstance(found, Exception):
            raise found
        if found is None:
            raise NotFound(f"pods {name} not found")
        return found


def test_after_the_run_only_pods_still_on_the_node_stay_named() -> None:
    step = _taint([DB, WEB, "data/lonely (bare)"])
    step.result, step.detail = "not started", "the run was interrupted first"
    plan = _plan(step)
    cluster = _Cluster(
        {
            "db-0": {"spec": {"nodeName": "healthy-1"}},  # recreated elsewhere, same name
            "web-1": {"spec": {"nodeName": "flaky-a"}},
            "lonely": ServerError("503"),
        }
    )
    restate(cluster, plan)  # type: ignore[arg-type]
    assert step.releases == [WEB, "data/lonely (bare) [not re-read]"]
    assert "no longer stuck on flaky-a when re-read: data/db-0 (now on healthy-1)" in step.detail
    text = render.plan_table(plan, True, wide=True)
    assert "db-0 (statefulset)" not in text and "now on healthy-1" in text


def test_a_step_that_ran_is_not_read_again() -> None:
    step = _taint([DB])
    step.result = "done"
    cluster = _Cluster({})
    restate(cluster, _plan(step))  # type: ignore[arg-type]
    assert cluster.reads == [] and step.releases == [DB]
