"""Time at other scales, judged by the real control plane (issue 33 item 1): a Deployment whose
pods have terminationGracePeriodSeconds 900, evicted from a dead node. Its grace period ends 15
minutes after the eviction: the node's timeline tells that moment as still to come (it once
listed "grace period over" with secondsAgo -865), the pod's own timeline says when, nothing
after the read is told as past (diagnose_json runs the invariants, the time invariant among
them), and every premise holds in a dump of the same moment."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane
from tests.e2e.helpers import (
    wait_node_ready,
    wait_node_unknown,
    wait_running_on,
    wait_terminating_on,
)

pytestmark = pytest.mark.e2e
NS = "scenario-time"
NODE = "flaky-t1"
GRACE = 900


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def test_a_grace_period_of_minutes_is_told_as_to_come(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    cp = control_plane
    cp.add_failable_node(NODE)
    wait_node_ready(cp, NODE)
    cp.apply(w.namespace(NS), w.deployment(NS, "slow", pin=NODE, grace=GRACE, toleration_seconds=5))
    wait_running_on(cp, NS, "slow", NODE)
    cp.stop_kubelet(NODE)
    wait_node_unknown(cp, NODE)
    old = wait_terminating_on(cp, NS, "slow", NODE)
    deleted = _time(old["metadata"]["deletionTimestamp"])  # the eviction + 900 s: grace ends
    assert old["metadata"]["deletionGracePeriodSeconds"] == GRACE

    _, data = plugin.diagnose_json()  # the invariants and the premises, on the live cluster
    read = _time(data["capturedAt"])
    assert deleted - read > timedelta(minutes=10)
    name = old["metadata"]["name"]
    row = next(p for p in data["pods"] if p["name"] == name)
    assert row["terminating"] and "grace period ends in" in row["timeline"], row["timeline"]
    node = next(n for n in data["nodes"] if n["name"] == NODE)
    mine = [e for e in node["timeline"] if e["object"] == f"pod/{NS}/{name}"]
    kinds = {e["kind"] for e in mine}
    assert "pod-grace-ended" not in kinds, mine
    (ends,) = [e for e in mine if e["kind"] == "pod-grace-ends"]
    assert ends.get("due") and ends["secondsAgo"] < 0
    assert abs((_time(ends["time"]) - deleted).total_seconds()) <= 1
