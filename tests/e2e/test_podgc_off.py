"""A pod bound to a deleted Node, judged by the real control plane with kube-controller-manager's
podgc controller off (--controllers=*,-pod-garbage-collector-controller): the node lifecycle
controller records the deletion (its RemovingNode Event), PodGC never removes the pod. Right
after the deletion the diagnosis times PodGC from that Event; past PodGC's 40-80 s and its slack
it says the pod is passed over and no longer waits (analysis/orphans.py). Before, it said "PodGC
removes it 40-80s after the node's deletion" at any time after."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest

from kubectl_nodefail.analysis.facts import PODGC_SLACK_SECONDS
from kubectl_nodefail.analysis.orphans import PODGC_WITHIN_SECONDS, REMOVING_NODE
from kubectl_nodefail.snapshot.model import Obj, format_time, parse_time
from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane, wait_for
from tests.e2e.helpers import pod_row, pods, wait_node_ready, wait_running_on

pytestmark = pytest.mark.e2e
NS, NODE = "scenario-podgc-off", "orphaned-o1"


@pytest.fixture(scope="module")
def podgc_off() -> Iterator[ControlPlane]:
    from tests.e2e.conftest import without_controller

    yield from without_controller("pod-garbage-collector-controller", "podgc-off")


def _node_event(cp: ControlPlane, reason: str) -> Obj | None:
    events = cp.get("events", namespace="default") or {"items": []}
    return next(
        (
            e
            for e in events["items"]
            if e.get("reason") == reason and (e.get("involvedObject") or {}).get("name") == NODE
        ),
        None,
    )


def test_a_pod_on_a_deleted_node_past_podgc_time_is_said_passed_over(
    podgc_off: ControlPlane,
) -> None:
    cp = podgc_off
    plugin = Plugin(cp)
    cp.add_failable_node(NODE)
    wait_node_ready(cp, NODE)
    cp.apply(w.namespace(NS), w.deployment(NS, "web", pin=NODE))
    wait_running_on(cp, NS, "web", NODE)
    # the node lifecycle controller knows the node (its next look, every 5 s): only a node it
    # knew is one it sees deleted (kwok makes a node Ready and its pod Running in milliseconds)
    wait_for("RegisteredNode", lambda: _node_event(cp, "RegisteredNode"), 30)
    cp.stop_kubelet(NODE)  # its simulated kubelet gone too: nothing registers the node again
    cp.kubectl("delete", "node", NODE)
    event = wait_for(f"{REMOVING_NODE} about {NODE}", lambda: _node_event(cp, REMOVING_NODE), 30)
    removed = parse_time(event.get("lastTimestamp") or event.get("eventTime"))
    assert removed is not None
    due = removed + timedelta(seconds=PODGC_WITHIN_SECONDS)

    _, early = plugin.diagnose_json("-n", NS)
    row = pod_row(early, NS, "web-")
    assert row["category"] == "on-deleted-node", row
    assert f"which was at {format_time(removed)}" in row["explanation"], row["explanation"]
    if datetime.now(timezone.utc) < due:  # the reading within PodGC's time: waited for, dated
        assert row["action"]["code"] == "wait", row["action"]
        assert f"by {format_time(due)}" in row["action"]["summary"], row["action"]

    past = due + timedelta(seconds=PODGC_SLACK_SECONDS + 2)
    wait_for("PodGC's time and its slack past", lambda: datetime.now(timezone.utc) > past, 200)
    # the control plane: the pod is still bound to the deleted node (nothing removes it)
    [still] = pods(cp, NS, "web")
    assert still["spec"]["nodeName"] == NODE and "deletionTimestamp" not in still["metadata"]
    plugin.record(
        "podgc-off-orphan",
        "kube-controller-manager without its podgc controller; a Node deleted under a running pod",
        "past PodGC's time after the RemovingNode event",
    )
    _, late = plugin.diagnose_json("-n", NS)
    row = pod_row(late, NS, "web-")
    assert row["category"] == "on-deleted-node", row
    assert "passes it over" in row["explanation"], row["explanation"]
    assert row["action"]["code"] == "investigate", row["action"]
    assert "has not removed it" in row["action"]["summary"], row["action"]
    table = plugin.run("diagnose", "-n", NS).stdout  # the first line the on-call reads
    assert "PodGC has not removed it long after it" in table.splitlines()[0], table
    assert "not removed (PodGC)" in table, table
