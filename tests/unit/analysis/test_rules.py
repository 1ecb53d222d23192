"""Table tests of the pure rules that mirror Kubernetes code (printers, zone states, tolerations).

Inputs here are minimal function arguments, not cluster states: the behaviour on real states is
covered by the recorded snapshots.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from kubectl_nodefail.analysis.eviction import eviction_time
from kubectl_nodefail.analysis.evictionclock import tolerates
from kubectl_nodefail.analysis.findings import TaintView
from kubectl_nodefail.analysis.podstatus import kubectl_status, ready_column
from kubectl_nodefail.analysis.text import duration
from kubectl_nodefail.analysis.zones import FULL, NORMAL, PARTIAL, zone_state

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("ready", "not_ready", "state"),
    [
        (5, 0, NORMAL),
        (0, 1, FULL),
        (0, 60, FULL),
        (1, 2, NORMAL),  # more than 2 not Ready is required
        (2, 3, PARTIAL),  # 3/5 = 0.6 >= 0.55
        (3, 3, NORMAL),  # 0.5 < 0.55
        (45, 55, PARTIAL),
        (46, 54, NORMAL),  # 0.55 exactly counts
    ],
)
def test_zone_state_matches_compute_zone_state(ready: int, not_ready: int, state: str) -> None:
    assert zone_state(ready, not_ready) == state


def _pod(
    phase: str = "Running",
    deleted: bool = False,
    reason: str = "",
    containers: list[dict] | None = None,
) -> dict:
    meta: dict = {"name": "p"}
    if deleted:
        meta["deletionTimestamp"] = "2026-11-30T11:00:00Z"
    status: dict = {"phase": phase, "containerStatuses": containers or []}
    if reason:
        status["reason"] = reason
    return {"metadata": meta, "spec": {"containers": [{"name": "c"}]}, "status": status}


RUNNING = {"name": "c", "ready": True, "state": {"running": {}}}


@pytest.mark.parametrize(
    ("pod", "shown"),
    [
        (_pod(containers=[RUNNING]), "Running"),
        (_pod(deleted=True, containers=[RUNNING]), "Terminating"),
        (_pod(deleted=True, reason="NodeLost", containers=[RUNNING]), "Unknown"),
        (_pod(phase="Succeeded", deleted=True), "Succeeded"),  # terminal phase: not Terminating
        (
            _pod(
                phase="Pending",
                containers=[{"name": "c", "state": {"waiting": {"reason": "ContainerCreating"}}}],
            ),
            "ContainerCreating",
        ),
        (_pod(phase="Failed", reason="Evicted"), "Evicted"),
        (
            _pod(
                phase="Failed",
                containers=[{"name": "c", "state": {"terminated": {"exitCode": 137, "signal": 9}}}],
            ),
            "Signal:9",
        ),
    ],
)
def test_pod_status_as_kubectl_prints_it(pod: dict, shown: str) -> None:
    assert kubectl_status(pod) == shown


def test_ready_column_counts_running_ready_containers() -> None:
    assert ready_column(_pod(containers=[RUNNING])) == "1/1"
    assert ready_column(_pod(containers=[{**RUNNING, "ready": False}])) == "0/1"


UNREACHABLE = TaintView(
    "node.kubernetes.io/unreachable", "NoExecute", time_added=NOW - timedelta(seconds=100)
)


@pytest.mark.parametrize(
    ("toleration", "matches"),
    [
        (
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
            True,
        ),
        ({"operator": "Exists"}, True),  # empty key + Exists tolerates everything
        (
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoSchedule"},
            False,
        ),
        ({"key": "node.kubernetes.io/not-ready", "operator": "Exists"}, False),
        ({"key": "node.kubernetes.io/unreachable", "value": "x"}, False),  # Equal, value differs
    ],
)
def test_toleration_matching(toleration: dict, matches: bool) -> None:
    assert tolerates(toleration, UNREACHABLE) is matches


def _tolerating(seconds: int | None) -> dict:
    tol: dict = {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
    }
    if seconds is not None:
        tol["tolerationSeconds"] = seconds
    return {"metadata": {"name": "p"}, "spec": {"tolerations": [tol]}}


def test_eviction_time_is_taint_time_plus_smallest_toleration() -> None:
    ev = eviction_time(_tolerating(300), [UNREACHABLE], None, False, NOW)
    assert ev.state == "scheduled" and ev.at == UNREACHABLE.time_added + timedelta(seconds=300)
    assert eviction_time(_tolerating(None), [UNREACHABLE], None, False, NOW).state == "never"
    untolerated = {"metadata": {"name": "p"}, "spec": {}}
    fresh = TaintView(UNREACHABLE.key, "NoExecute", time_added=NOW - timedelta(seconds=2))
    ev = eviction_time(untolerated, [fresh], None, False, NOW)
    assert ev.state == "immediate" and "evicted as soon as" in ev.text
    # 100 s later and still not deleted: that controller does not run; no eviction is promised
    ev = eviction_time(untolerated, [UNREACHABLE], None, False, NOW)
    assert ev.state == "not-evicting" and ev.at is None
    assert "added 100s ago" in ev.text and "evicted as soon as" not in ev.text
    assert eviction_time(_tolerating(300), [], None, True, NOW).state == "paused"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (5, "5s"),
        (119, "119s"),
        (125, "2m5s"),
        (600, "10m"),
        (3 * 3600 + 60, "3h1m"),
        (2 * 86400 + 3600, "2d1h"),
    ],
)
def test_durations_read_like_kubectl_age(seconds: float, text: str) -> None:
    assert duration(seconds) == text
