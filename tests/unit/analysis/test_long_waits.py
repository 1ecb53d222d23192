"""An eviction hours away is not a plan (recorded: audit 2037/55, a paused Deployment whose pods
tolerate their node's failure for a day): the suggestion is to free the pods once the machine is
confirmed off, with the eviction's time said; an eviction within LONG_WAIT_SECONDS is waited for."""

from __future__ import annotations

import json
from datetime import timedelta

from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.pod_advice import LONG_WAIT_SECONDS
from kubectl_nodefail.snapshot.model import load_dump
from tests.unit.conftest import FIXTURES

PATH = FIXTURES / "long-toleration-paused-rollout.json"


def _pods(now_shift: timedelta = timedelta(0)) -> list:  # type: ignore[type-arg]
    snap = load_dump(str(PATH))
    report = diagnose(snap, snap.captured_at + now_shift)
    return [p for p in report.pods if p.namespace == "au-2037-55"]


def test_a_day_long_toleration_is_not_waited_for() -> None:
    pods = _pods()
    assert len(pods) == 3
    for pod in pods:
        assert pod.eviction_at is not None and not pod.terminating
        assert pod.action.code == "out-of-service"
        assert pod.action.summary.startswith("not evicted before 2026-12-06T21:24:40Z (in 23h59m")
        assert "to have it replaced sooner, free it" in pod.action.summary
        assert "eviction" in pod.action.rests_on  # the time is the eviction claim's


def test_an_eviction_within_the_bound_is_waited_for() -> None:
    doc = json.loads(PATH.read_text())
    at = load_dump(str(PATH)).captured_at
    shift = timedelta(days=1) - timedelta(seconds=LONG_WAIT_SECONDS - 60)  # 14 min left
    pods = _pods(shift)
    assert doc["items"] and pods
    for pod in pods:
        assert pod.action.code == "wait" and pod.action.until == pod.eviction_at
        assert pod.eviction_at is not None
        assert (pod.eviction_at - (at + shift)).total_seconds() < LONG_WAIT_SECONDS
