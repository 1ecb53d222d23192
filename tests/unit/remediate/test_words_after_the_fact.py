"""remediate's words after the fact come from the state at that moment (issue 33 item 7, issue
36 item 3): a refused step of a replayed plan names only the pods the live plan still finds
stuck, and after a --confirm run every pod a refused, skipped or not-started step would have
freed is read again before the result says it stays stuck."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubectl_nodefail.analysis.claims import Premise
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.common.errors import ServerError
from kubectl_nodefail.remediate.actions import restate
from kubectl_nodefail.remediate.plan import Binding, Options, Plan, Step, make_plan, narrow
from kubectl_nodefail.render import render
from kubectl_nodefail.snapshot.model import load_dump
from tests.oracles import premises
from tests.unit.conftest import FIXTURES

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
    """What restate reads: the node, and one list of its pods per node (`pods`: node ->
    names, or an error to raise; `ready`: the nodes Ready again)."""

    def __init__(self, pods: dict[str, Any], ready: tuple[str, ...] = ()) -> None:
        self.pods, self.reads, self.ready = pods, [], ready

    def get_object(self, path: str) -> Any:
        return _node(path.rsplit("/", 1)[1], path.rsplit("/", 1)[1] in self.ready)

    def list_all(self, path: str, kind: str, **params: str) -> Any:
        node = params["fieldSelector"].removeprefix("spec.nodeName=")
        self.reads.append(node)
        found = self.pods.get(node, [])
        if isinstance(found, Exception):
            raise found
        return [_pod(n, node) for n in found]


def _node(name: str, ready: bool) -> dict[str, Any]:
    status = "True" if ready else "Unknown"
    return {
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1"},
        "status": {"conditions": [{"type": "Ready", "status": status}]},
    }


def _pod(name: str, node: str) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"namespace": "data", "name": name, "uid": f"uid-{name}", "finalizers": ["x"]},
        "spec": {"nodeName": node},
    }


def test_after_the_run_only_pods_still_on_the_node_stay_named() -> None:
    step = _taint([DB, WEB])
    step.result, step.detail = "not started", "the run was interrupted first"
    other = _taint(["data/lonely (bare)"])
    other.result = "refused"
    plan = _plan(step, other)
    cluster = _Cluster({"flaky-a": ["web-1", "lonely"]})  # db-0 recreated elsewhere
    restate(cluster, plan)  # type: ignore[arg-type]
    assert step.releases == [WEB] and other.releases == ["data/lonely (bare)"]
    assert (
        "no longer on flaky-a when re-read (gone, or recreated elsewhere or under its name): "
        "data/db-0" in step.detail
    )
    assert cluster.reads == ["flaky-a"]  # one list for the node, not a read per pod
    # what the result says of them rests on the re-read: those objects, on that node, now
    dump = {"items": [_pod("web-1", "flaky-a"), _pod("lonely", "flaky-a"), _node("flaky-a", False)]}
    assert premises.check_plan(dump, render.plan_data(plan, True, {})) == []
    assert {p.object for p in step.because} == {"Pod/data/web-1", "Node/flaky-a"}
    dump["items"][0]["spec"]["nodeName"] = "healthy-b"  # the checker does check them
    assert premises.check_plan(dump, render.plan_data(plan, True, {}))
    text = render.plan_table(plan, True, wide=True)
    assert "db-0 (statefulset)" not in text


def test_a_pod_recreated_under_its_name_or_on_a_node_back_is_not_said_stuck() -> None:
    """The plan named db-0 by its UID: a db-0 of another UID on the node is another object; and
    on a node Ready again, the kubelet finishes every pod the step named."""
    step = _taint([DB, WEB])
    step.because = [Premise("Pod/data/db-0", "metadata.uid", "the-old-one")]
    step.result = "refused"
    restate(_Cluster({"flaky-a": ["db-0", "web-1"]}), _plan(step))  # type: ignore[arg-type]
    assert step.releases == [WEB] and "data/db-0" in step.detail
    back = _taint([DB, WEB])
    back.leaves_stuck = ["data/held (x)"]  # finalizers hold it whatever the node
    back.result = "skipped"
    restate(_Cluster({"flaky-a": ["db-0", "web-1", "held"]}, ready=("flaky-a",)), _plan(back))  # type: ignore[arg-type]
    assert back.releases == [] and back.leaves_stuck == ["data/held (x)"]
    assert {p.object for p in back.because} == {"Pod/data/held", "Node/flaky-a"}
    assert "flaky-a is Ready again when re-read: its kubelet handles data/db-0, data/web-1" in (
        back.detail
    )
    assert "stay stuck" not in render.plan_table(_plan(back), True, wide=True)


def test_a_failed_re_read_marks_the_names() -> None:
    step = _taint([DB])
    step.result = "refused"
    restate(_Cluster({"flaky-a": ServerError("503")}), _plan(step))  # type: ignore[arg-type]
    assert step.releases == [f"{DB} [not re-read]"] and step.because == []


def test_pods_left_stuck_by_finalizers_are_read_again_too() -> None:
    step = _taint([WEB])
    step.leaves_stuck = ["data/db-0 (x)", "data/gone (x)"]
    step.result = "refused"
    restate(_Cluster({"flaky-a": ["db-0"]}), _plan(step))  # type: ignore[arg-type]
    assert step.releases == [] and step.leaves_stuck == ["data/db-0 (x)"]
    assert "data/gone" in step.detail and "data/web-1" in step.detail
    assert ("Pod/data/db-0", "metadata.finalizers") in {(p.object, p.field) for p in step.because}


ALL = sorted(FIXTURES.glob("*.json"))


@pytest.mark.parametrize("path", ALL, ids=[p.name for p in ALL])
def test_every_pod_a_plan_names_rests_on_facts_that_hold(path: Path) -> None:
    """On every fixture, with every failed node attested: each pod a step says it releases or
    leaves stuck has its facts (that object, on that node, as read), and they hold in the raw
    snapshot."""
    snap = load_dump(str(path))
    report = diagnose(snap, snap.captured_at)
    failed = [n.name for n in report.nodes if n.failed]
    opts = Options(
        attested=failed,
        max_nodes=len(report.nodes) + 1,
        server_minor=snap.server_minor,
        allow_disruption=True,
    )
    plan = make_plan(report, opts)
    raw = json.loads(path.read_text())
    assert premises.check_plan(raw, render.plan_data(plan, False, {})) == []
    for step in plan.steps:
        stated = {(p.object, p.field) for p in step.because}
        for entry in step.releases + step.leaves_stuck:
            pod = "Pod/" + entry.split(" ", 1)[0]
            assert {(pod, "metadata.uid"), (pod, "spec.nodeName")} <= stated, (step, entry)
        # its why and gate are worded from facts it states too: the pod it is about, what the
        # diagnosis said of that pod, and, for a gated step, the node's state
        assert step.because, step
        if step.target.startswith("pod/"):
            assert (f"Pod/{step.target[4:]}", "metadata.uid") in stated, step
        if step.action in ("taint-out-of-service", "force-delete-pod", "delete-node"):
            ready = "status.conditions[type=Ready].status"
            assert (f"Node/{step.node}", ready) in stated, step
        pod = next((p for p in report.pods if f"pod/{p.namespace}/{p.name}" == step.target), None)
        if pod is not None and pod.replacement.summary in step.why:
            said = {(f.object, f.field) for c in pod.claims if c.section == "replacement"
                    for f in c.because}  # fmt: skip
            assert said <= stated, step


def test_a_step_that_ran_is_not_read_again() -> None:
    step = _taint([DB])
    step.result = "done"
    cluster = _Cluster({})
    restate(cluster, _plan(step))  # type: ignore[arg-type]
    assert cluster.reads == [] and step.releases == [DB]
