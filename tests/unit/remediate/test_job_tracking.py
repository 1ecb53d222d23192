"""The Job's tracking finalizer under a force delete, as the real control plane showed it (audit
2038, recorded): a Job with podReplacementPolicy Failed keeps it on a force-deleted pod until
the pod is Failed (2038/140 stayed until its node returned), so force-delete is not offered as
releasing that pod; the default Job removes it a moment after the delete (2038/116), which the
executor waits for instead of reporting the step unconfirmed."""

from __future__ import annotations

import json
from typing import Any

from kubectl_nodefail.analysis.advice import JOB_TRACKING_FINALIZER, holding_finalizers
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.common.errors import NotFound
from kubectl_nodefail.remediate.mutations import Mutations
from kubectl_nodefail.remediate.plan import Options, make_plan
from kubectl_nodefail.remediate.release import NotConfirmed
from kubectl_nodefail.remediate.steps import Step
from kubectl_nodefail.remediate.stop import Stop
from kubectl_nodefail.render import render
from kubectl_nodefail.snapshot.model import load_dump
from tests.oracles import premises
from tests.unit.conftest import FIXTURES

PATH = FIXTURES / "job-tracking-force-delete.json"
NODE = "au2038-b1-n0"


def test_the_tracking_finalizer_holds_where_the_job_waits_for_phase_failed() -> None:
    tracked = [JOB_TRACKING_FINALIZER]
    assert holding_finalizers(tracked, False, "force-delete") == []
    assert holding_finalizers(tracked, False, "force-delete", waits_for_failed=True) == tracked
    assert holding_finalizers(tracked, True, "force-delete") == tracked
    for strategy in ("out-of-service", "delete-node"):  # PodGC sets phase Failed first
        assert holding_finalizers(tracked, True, strategy, waits_for_failed=True) == []


def test_force_delete_is_offered_only_for_the_pods_it_releases() -> None:
    snap = load_dump(str(PATH))
    report = diagnose(snap, snap.captured_at)
    opts = Options(
        strategy="force-delete", attested=[NODE], only_nodes=[NODE], server_minor=snap.server_minor
    )
    plan = make_plan(report, opts)
    by_pod = {s.target.rsplit("/", 1)[1]: s for s in plan.steps if s.target.startswith("pod/")}
    assert by_pod["w-t7j45"].action == "finalizer-held"  # 2038/140: podReplacementPolicy Failed
    assert "podReplacementPolicy Failed" in by_pod["w-t7j45"].gate
    for name in ("w-8qbgn", "w-9ccpr"):  # 2038/116: the default Job removes it at the delete
        assert by_pod[name].action == "force-delete-pod" and by_pod[name].allowed
    raw = json.loads(PATH.read_text())
    assert premises.check_plan(raw, render.plan_data(plan, False, {})) == []


class _Cluster:
    """The pod after the force delete: carrying the tracking finalizer for `reads` reads."""

    def __init__(self, reads: int, finalizers: list[str]) -> None:
        self.reads, self.finalizers, self.deletes = reads, finalizers, 0

    def delete(self, path: str, **kw: Any) -> None:
        self.deletes += 1

    def get_object(self, path: str) -> Any:
        if self.reads <= 0:
            raise NotFound("gone")
        self.reads -= 1
        return {"metadata": {"uid": "u1", "finalizers": self.finalizers}}


def _force_delete(cluster: _Cluster, wait_timeout: float = 30) -> str:
    executor = Mutations.__new__(Mutations)
    executor.cluster = cluster  # type: ignore[assignment]
    executor.wait_timeout = wait_timeout
    executor.stop = Stop()
    step = Step("force-delete-pod", NODE, "pod/ns/w", "why", True, "gate", uid="u1")
    step.resource_version = "7"
    return executor._force_delete_pod(step)


def test_the_executor_waits_for_the_job_to_remove_its_tracking_finalizer() -> None:
    cluster = _Cluster(reads=2, finalizers=[JOB_TRACKING_FINALIZER])
    assert _force_delete(cluster).endswith("; the pod is gone")
    assert cluster.deletes == 1


def test_another_finalizer_is_not_waited_for() -> None:
    cluster = _Cluster(reads=5, finalizers=["example.com/hold"])
    try:
        _force_delete(cluster)
    except NotConfirmed as exc:
        assert "held by finalizers example.com/hold" in exc.detail
        assert cluster.reads == 4  # one look
    else:
        raise AssertionError("a pod another finalizer holds was said gone")


def test_the_wait_for_the_tracking_finalizer_is_bounded() -> None:
    cluster = _Cluster(reads=10**6, finalizers=[JOB_TRACKING_FINALIZER])
    try:
        _force_delete(cluster, wait_timeout=1)
    except NotConfirmed as exc:
        assert JOB_TRACKING_FINALIZER in exc.detail
    else:
        raise AssertionError("a pod still held was said gone")
