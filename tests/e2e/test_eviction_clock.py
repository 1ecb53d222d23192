"""The taint-eviction controller's clock, judged by the real control plane (issue 33: time,
what a pod tolerates, the Node's own path to failure; analysis/evictionclock.py):

- a kubelet that reports NotReady before it goes silent: the not-ready taint, later swapped for
  unreachable, started the count, and the controller keeps it (the diagnosis reads the
  kubelet's NodeNotReady event);
- of two tolerations matching a taint, the first in the pod's list is the one read (a first
  without limit: never evicted, whatever a later one says);
- a NoExecute taint added later, or tolerations patched later, do not move an eviction already
  set (a patched pod's time is told as not known, not as the new tolerations would give it);
- a pod that tolerates not-ready without limit is counted from the unreachable taint.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import pytest

from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane, KubeletReportingProblem, wait_for
from tests.e2e.helpers import taint_keys, wait_node_ready, wait_running_on

pytestmark = pytest.mark.e2e
NS = "scenario-clock"
NODE = "flaky-k1"
UN, NR, EXTRA = "node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready", "example.com/x"
NOT_READY_SECONDS = 8  # the kubelet reports NotReady this long, then goes silent

Obj = dict[str, Any]


def _tol(key: str, seconds: int | None = None) -> Obj:
    t: Obj = {"key": key, "operator": "Exists", "effect": "NoExecute"}
    if seconds is not None:
        t["tolerationSeconds"] = seconds
    return t


def _both(seconds: int | None) -> list[Obj]:
    return [_tol(UN, seconds), _tol(NR, seconds), _tol(EXTRA)]


# name: (tolerations at creation, tolerations patched after the swap or None)
PODS: dict[str, tuple[list[Obj], list[Obj] | None]] = {
    "swap": (_both(60), None),
    "first-forever": ([_tol(UN), _tol(UN, 20), _tol(NR), _tol(NR, 20), _tol(EXTRA)], None),
    "patched-longer": (_both(60), _both(400)),
    "patched-shorter": (_both(90), _both(20)),
    "added-taint": ([_tol(UN, 60), _tol(NR, 60), _tol(EXTRA, 10)], None),
    "not-ready-forever": ([_tol(UN, 50), _tol(NR), _tol(EXTRA)], None),
}


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _evicted_at(cp: ControlPlane, name: str) -> datetime | None:
    """When the taint-eviction controller decided (its DisruptionTarget condition)."""
    pod = cp.get("pod", name, NS)
    for cond in (pod or {}).get("status", {}).get("conditions") or []:
        if cond["type"] == "DisruptionTarget" and cond["status"] == "True":
            return _time(cond["lastTransitionTime"])
    return None


def _noexec_added(cp: ControlPlane, key: str) -> datetime:
    node = cp.get("node", NODE)
    return next(
        _time(t["timeAdded"])
        for t in node["spec"]["taints"]
        if t["key"] == key and t["effect"] == "NoExecute"
    )


def test_the_eviction_is_set_once_from_the_first_taint_and_toleration(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    cp = control_plane
    cp.add_failable_node(NODE)
    wait_node_ready(cp, NODE)
    objs = []
    for name, (tolerations, _) in PODS.items():
        pod = w.bare_pod(NS, name, pin=NODE, grace=5)
        pod["spec"]["tolerations"] = tolerations
        objs.append(pod)
    cp.apply(w.namespace(NS), *objs)
    for name in PODS:
        wait_running_on(cp, NS, name, NODE)

    # The kubelet reports NotReady (and says so in its event), then goes silent.
    cp.stop_kubelet(NODE)
    not_ready = [{"type": "Ready", "status": "False", "reason": "KubeletNotReady", "message": "x"}]
    with KubeletReportingProblem(cp, NODE, not_ready, announce=True):
        wait_for("the not-ready NoExecute taint", lambda: (NR, "NoExecute") in taint_keys(cp, NODE))
        first = _noexec_added(cp, NR)
        time.sleep(NOT_READY_SECONDS)
    wait_for("the swap to unreachable", lambda: (UN, "NoExecute") in taint_keys(cp, NODE), 120)
    swapped = _noexec_added(cp, UN)
    assert (NR, "NoExecute") not in taint_keys(cp, NODE)
    assert (swapped - first).total_seconds() >= NOT_READY_SECONDS

    # Tolerations patched and a taint added after the count began.
    for name, (_, patched) in PODS.items():
        if patched is not None:
            body = json.dumps({"spec": {"tolerations": patched}})
            cp.kubectl("patch", "pod", name, "-n", NS, "--type=merge", "-p", body)
    cp.kubectl("taint", "node", NODE, f"{EXTRA}=x:NoExecute")
    _, data = plugin.diagnose_json()
    rows = {p["name"]: p for p in data["pods"] if p["namespace"] == NS}
    plugin.record("eviction-clock", "kubelet NotReady, then silent; tolerations", "after the swap")

    # What the control plane does, watched until every finite count has run out.
    evicted: dict[str, datetime] = {}
    end = time.monotonic() + 150
    while time.monotonic() < end and len(evicted) < len(PODS) - 1:
        for name in PODS:
            if name not in evicted and (at := _evicted_at(cp, name)) is not None:
                evicted[name] = at
        time.sleep(1)

    def predicted(name: str) -> datetime:
        return _time(rows[name]["evictionAt"])

    # The count began under the not-ready taint, now gone: read from the kubelet's event.
    assert "NodeNotReady event" in rows["swap"]["timeline"], rows["swap"]["timeline"]
    assert abs((evicted["swap"] - first - timedelta(seconds=60)).total_seconds()) <= 2
    assert abs((evicted["swap"] - predicted("swap")).total_seconds()) <= 5
    # A taint added later does not shorten it; a pod tolerating not-ready forever starts at
    # the swap.
    assert abs((evicted["added-taint"] - predicted("added-taint")).total_seconds()) <= 5
    assert abs((evicted["added-taint"] - first - timedelta(seconds=60)).total_seconds()) <= 2
    assert (
        abs((evicted["not-ready-forever"] - swapped - timedelta(seconds=50)).total_seconds()) <= 2
    )
    assert abs((evicted["not-ready-forever"] - predicted("not-ready-forever")).total_seconds()) <= 3
    # The first matching toleration is read: never evicted.
    assert "never evicted" in rows["first-forever"]["timeline"]
    assert "first-forever" not in evicted
    # Patched tolerations: the old time stands, and the diagnosis does not claim the new one.
    for name, old in (("patched-longer", 60), ("patched-shorter", 90)):
        assert rows[name]["evictionAt"] is None, rows[name]
        assert "eviction time not known" in rows[name]["timeline"], rows[name]["timeline"]
        assert abs((evicted[name] - first - timedelta(seconds=old)).total_seconds()) <= 2
    cp.start_kubelet(NODE)
    wait_node_ready(cp, NODE)


def _controller_lease(cp: ControlPlane) -> Obj:
    out = cp.kubectl(
        "get", "lease", "-n", "kube-system", "kube-controller-manager", "-o", "json", check=False
    )
    return json.loads(out)["spec"] if out.strip().startswith("{") else {}


def _added_on(cp: ControlPlane, node: str, key: str) -> datetime | None:
    got = cp.get("node", node)
    return next(
        (
            _time(t["timeAdded"])
            for t in (got or {}).get("spec", {}).get("taints") or []
            if t["key"] == key and t["effect"] == "NoExecute" and t.get("timeAdded")
        ),
        None,
    )


def test_a_controller_manager_restart_counts_again_and_the_taint_says_when(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    """The eviction queue is in kube-controller-manager's memory: a restart (or a new leader)
    counts every pod again. The new leader's node lifecycle controller takes each failed node's
    NoExecute taint off and puts it back (a new timeAdded), and the taint-eviction controller
    counts from then; the diagnosis counts from timeAdded (map row 2). On a node whose kubelet
    reported NotReady before it went silent, the kubelet's NodeNotReady event tells of a count
    the restart ended: the leader's Lease (acquireTime, read by the diagnosis) says so, and the
    count is told from the taint put back, not from the event."""
    cp, node, reported = control_plane, "flaky-k2", "flaky-k3"
    for name in (node, reported):
        cp.add_failable_node(name)
        wait_node_ready(cp, name)
    cp.apply(
        w.namespace(NS),
        w.bare_pod(NS, "restarted", pin=node, toleration_seconds=40, grace=5),
        w.bare_pod(NS, "restarted-nr", pin=reported, toleration_seconds=40, grace=5),
    )
    wait_running_on(cp, NS, "restarted", node)
    wait_running_on(cp, NS, "restarted-nr", reported)
    cp.stop_kubelet(node)
    cp.stop_kubelet(reported)
    not_ready = [{"type": "Ready", "status": "False", "reason": "KubeletNotReady", "message": "x"}]
    with KubeletReportingProblem(cp, reported, not_ready, announce=True):
        wait_for("the not-ready NoExecute taint", lambda: _added_on(cp, reported, NR))
        time.sleep(NOT_READY_SECONDS)
    for name in (node, reported):
        wait_for("the unreachable NoExecute taint", partial(_added_on, cp, name, UN), 120)
    before = {name: _added_on(cp, name, UN) for name in (node, reported)}
    leader = _controller_lease(cp).get("holderIdentity")
    time.sleep(10)
    cp.restart(down_seconds=3)
    lease = wait_for(
        "a new kube-controller-manager leader",
        lambda: (
            (spec := _controller_lease(cp)).get("holderIdentity") not in (None, leader) and spec
        ),
        90,
    )
    acquired = _time(lease["acquireTime"])

    def retainted() -> dict[str, datetime] | None:
        now = {name: _added_on(cp, name, UN) for name in (node, reported)}
        if all(now[n] is not None and now[n] > before[n] for n in now):  # type: ignore[operator]
            return now  # type: ignore[return-value]
        return None

    again = wait_for("the NoExecute taints put back", retainted, 60)
    assert all(abs((t - acquired).total_seconds()) <= 5 for t in again.values()), (again, acquired)
    _, data = plugin.diagnose_json()
    rows = {p["name"]: p for p in data["pods"] if p["namespace"] == NS}
    plugin.record(
        "controller-restart",
        "kube-controller-manager restarted after two nodes failed, one reporting NotReady first",
        "after the new leader put the taints back",
        nodes=(node, reported),
    )
    for pod, on in (("restarted", node), ("restarted-nr", reported)):
        predicted = _time(rows[pod]["evictionAt"])
        assert predicted == again[on] + timedelta(seconds=40), (rows[pod], again)
        assert "NodeNotReady" not in rows[pod]["timeline"], rows[pod]["timeline"]
        evicted = wait_for("the eviction", partial(_evicted_at, cp, pod), 120)
        assert abs((evicted - predicted).total_seconds()) <= 3, (pod, evicted, predicted)
        # not the first count
        assert (evicted - before[on] - timedelta(seconds=40)).total_seconds() >= 10
    for name in (node, reported):
        cp.start_kubelet(name)
        wait_node_ready(cp, name)
