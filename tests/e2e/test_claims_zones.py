"""Claims about live kubelets and zones, proven on the real node lifecycle controller (issue 8:
3, 4, and the zone states only unit-tested before).

- a kubelet alive but reporting Ready=False: pod states are reported, not unknown;
- a zone in PartialDisruption: a node tainted before the brake has its pods evicted, a node
  failing after it keeps them (whether a pod is evicted is decided per node);
- one zone in FullDisruption while another is healthy: evictions proceed;
- every zone down: master disruption mode, no NoExecute taint, nothing evicted;
- a zone of more than 50 nodes in PartialDisruption: tainting slowed, not stopped (one kwok
  process plays the kubelets of the whole failing group).

Every node these tests add is Ready again (or deleted) when they end: the control plane is
shared by the whole session.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from kubectl_nodefail.analysis import summary
from kubectl_nodefail.snapshot.model import parse_time
from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane, KubeletReportingProblem, wait_for
from tests.e2e.helpers import (
    controller_log,
    pod_on,
    ready,
    taint_keys,
    terminating,
    wait_node_ready,
    wait_node_unknown,
    wait_running_on,
    wait_terminating_on,
    zone_state_logged,
)
from tests.oracles.invariants import report_from_data

pytestmark = pytest.mark.e2e
NS = "scenario-zones"
UNREACHABLE = ("node.kubernetes.io/unreachable", "NoExecute")
EXCLUDE = "node.kubernetes.io/exclude-disruption"


def _pod(d: Any, name: str) -> Any:
    found = [p for p in d["pods"] if p["namespace"] == NS and p["name"] == name]
    assert found, f"{name} missing: {[p['name'] for p in d['pods']]}"
    return found[0]


def _next(d: Any, name: str) -> str:
    report = report_from_data(d)
    pod = next(p for p in report.pods if p.namespace == NS and p.name == name)
    return summary.next_step(pod, report.captured_at)


def _zone(d: Any, zone: str) -> Any:
    return next(z for z in d["zones"] if z["zone"] == f"e2e/{zone}")


def _noexecute_tainted(cp: ControlPlane, names: list[str]) -> list[str]:
    return [n for n in names if UNREACHABLE in taint_keys(cp, n)]


def _failable(cp: ControlPlane, names: list[str], zone: str) -> None:
    for node in names:
        cp.add_failable_node(node, zone)
    for node in names:
        wait_node_ready(cp, node)


def _engage_brake(cp: ControlPlane, zone: str, middle: list[str], late: str) -> None:
    """The `middle` nodes fail and put the zone in PartialDisruption; then `late` fails under
    the brake, and the controller has seen it (its NoSchedule taint)."""
    for n in middle:
        cp.stop_kubelet(n)
    for n in middle:
        wait_node_unknown(cp, n)
    wait_for(
        f"{zone} in PartialDisruption",
        lambda: zone_state_logged(cp, zone, "PartialDisruption"),
        30,
    )
    cp.stop_kubelet(late)
    wait_node_unknown(cp, late)
    wait_for(
        "unreachable NoSchedule on the late node",
        lambda: ("node.kubernetes.io/unreachable", "NoSchedule") in taint_keys(cp, late),
        30,
    )


def _restore(cp: ControlPlane, names: list[str]) -> None:
    for node in names:
        cp.start_kubelet(node)
    for node in names:
        wait_node_ready(cp, node, timeout=90)


@pytest.fixture(scope="module")
def ns(control_plane: ControlPlane) -> Iterator[str]:
    control_plane.apply(w.namespace(NS))
    yield NS
    control_plane.kubectl("delete", "namespace", NS, "--wait=false")


def test_kubelet_alive_reporting_not_ready_pods_are_reported_not_unknown(
    control_plane: ControlPlane, plugin: Plugin, ns: str
) -> None:
    cp, node = control_plane, "flaky-l"
    _failable(cp, [node], "zone-a")
    cp.apply(w.deployment(NS, "steady", prefer=node, toleration_seconds=None))
    wait_running_on(cp, NS, "steady", node)
    cp.stop_kubelet(node)
    conditions = [
        {
            "type": "Ready",
            "status": "False",
            "reason": "KubeletNotReady",
            "message": "container runtime is down: rpc error: connection refused",
        }
    ]
    try:
        with KubeletReportingProblem(cp, node, conditions):
            wait_for("Ready=False", lambda: ready(cp, node)["status"] == "False", 30)
            wait_for(
                "not-ready NoExecute taint",
                lambda: ("node.kubernetes.io/not-ready", "NoExecute") in taint_keys(cp, node),
                30,
            )
            steady = pod_on(cp, NS, "steady", node)
            assert steady is not None and not terminating(steady)  # tolerates 300 s
            plugin.record(
                "kubelet-alive-runtime-down", "kubelet alive, runtime down", "pods not evicted"
            )
            code, d = plugin.diagnose_json("-n", NS)
            lease = cp.get("lease", node, namespace="kube-node-lease")
    finally:
        _restore(cp, [node])
    assert code == 3 and lease["spec"]["renewTime"]
    found = next(n for n in d["nodes"] if n["name"] == node)
    assert found["cause"]["code"] == "runtime-down" and found["leaseStale"] is False
    p = _pod(d, steady["metadata"]["name"])
    assert "state is unknown" not in p["meaning"] and "lease went stale" not in p["meaning"]
    assert "kubelet is alive" in p["meaning"] and "reported by that kubelet" in p["meaning"]
    assert p["action"]["code"] == "investigate" and "powered off" not in p["action"]["summary"]


def test_zone_brake_is_per_node_tainted_nodes_evict_late_ones_do_not(
    control_plane: ControlPlane, plugin: Plugin, ns: str
) -> None:
    cp, zone = control_plane, "zone-p"
    first, middle, late = "flaky-p1", ["flaky-p2", "flaky-p3"], "flaky-p4"
    nodes = [first, *middle, late]
    cp.add_node("healthy-p", zone)
    wait_node_ready(cp, "healthy-p")
    _failable(cp, nodes, zone)
    cp.apply(*[w.bare_pod(NS, f"zp-{n[-1]}", pin=n, toleration_seconds=5, grace=5) for n in nodes])
    for n in nodes:
        wait_running_on(cp, NS, f"zp-{n[-1]}", n)
    try:
        cp.stop_kubelet(first)  # 1 of 5: Normal, tainted and evicted at the normal rate
        wait_node_unknown(cp, first)
        wait_terminating_on(cp, NS, "zp-1", first, timeout=60)
        _engage_brake(cp, zone, middle, late)
        time.sleep(8)  # at 10 nodes/s the late node would be tainted, its pod evicted after 5 s
        assert UNREACHABLE not in taint_keys(cp, late)
        late_pod = pod_on(cp, NS, "zp-4", late)
        assert late_pod is not None and not terminating(late_pod)
        tainted = _noexecute_tainted(cp, nodes)
        assert first in tainted and late not in tainted
        plugin.record("zone-brake-per-node", "zone brake", "node tainted before the brake")
        code, d = plugin.diagnose_json("-n", NS)
        explained = plugin.run("diagnose", "-n", NS, "--explain", f"{NS}/zp-1")
        assert _noexecute_tainted(cp, nodes) == tainted  # nothing moved while diagnosing
    finally:
        _restore(cp, nodes)
    assert code == 3
    # the brake is one claim, and no suggestion asks for what remediate refuses under it
    # (issue 33 item 6: the per-node advice said "attest it and let remediate apply the
    # out-of-service taint"; --explain of a stuck pod never named the zone)
    assert d["brake"] and "PartialDisruption" in d["brake"]["text"] and d["brake"]["because"]
    for row in [*d["nodes"], *d["pods"]]:
        action = row["action"] or {}
        summary = action.get("summary", "")
        # the taint, and deleting the Node (PodGC then force-deletes its pods), are refused
        if "out-of-service taint" in summary or "delete the Node" in summary:
            assert summary.startswith("first rule out"), action
    assert explained.returncode == 3, explained.stderr
    assert f"Zone: e2e/{zone}: PartialDisruption" in explained.stdout, explained.stdout
    assert "Wide failure: zone disruption" in explained.stdout, explained.stdout
    z = _zone(d, zone)
    assert z["state"] == "PartialDisruption" and z["eviction"] == "stopped"
    assert f"the {len(tainted)} node(s) tainted before the brake still evict" in z["explanation"]
    assert "pods are not evicted" not in z["explanation"]
    late_row = _pod(d, "zp-4")
    assert "tainting is stopped" in late_row["timeline"]
    assert _next(d, "zp-4") == "not evicted (zone)"
    assert late_row["action"]["code"] == "investigate"
    evicted = _pod(d, "zp-1")
    assert evicted["terminating"] and evicted["category"] == "terminating-on-failed-node"


def test_a_node_left_untainted_by_the_brake_is_tainted_once_the_zone_recovers(
    control_plane: ControlPlane, plugin: Plugin, ns: str
) -> None:
    """The brake holds only while the zone stays in PartialDisruption: the late node stays in
    the controller's tainting queue, and once the other nodes are back (1/5 not Ready: Normal)
    it is tainted and its pod evicted by its toleration. The diagnosis under the brake says so
    (issue 33: 'are not evicted' was said without the condition)."""
    cp, zone = control_plane, "zone-r"
    early, late = ["flaky-r1", "flaky-r2", "flaky-r3"], "flaky-r4"
    nodes = [*early, late]
    cp.add_node("healthy-r", zone)
    wait_node_ready(cp, "healthy-r")
    _failable(cp, nodes, zone)
    cp.apply(w.bare_pod(NS, "zr-late", pin=late, toleration_seconds=5, grace=5))
    wait_running_on(cp, NS, "zr-late", late)
    try:
        cp.stop_kubelet(early[0])  # 1 of 5 down: Normal, tainted
        wait_node_unknown(cp, early[0])
        wait_for("the first node tainted", lambda: _noexecute_tainted(cp, early[:1]), 30)
        _engage_brake(cp, zone, early[1:], late)
        time.sleep(3)
        assert UNREACHABLE not in taint_keys(cp, late)
        code, d = plugin.diagnose_json("-n", NS)
        _restore(cp, early)  # 1/5 not Ready: the zone is Normal again
        wait_for("the late node tainted", lambda: UNREACHABLE in taint_keys(cp, late), 30)
        wait_terminating_on(cp, NS, "zr-late", late, timeout=30)
    finally:
        _restore(cp, nodes)
    assert code == 3
    z = _zone(d, zone)
    assert z["eviction"] == "stopped"
    assert "are not evicted while the zone stays in PartialDisruption" in z["explanation"]
    assert "tainting resumes for the nodes still down" in z["explanation"]
    assert "no eviction while the zone stays in PartialDisruption" in _pod(d, "zr-late")["timeline"]


def test_full_disruption_of_one_zone_while_another_is_healthy_evicts(
    control_plane: ControlPlane, plugin: Plugin, ns: str
) -> None:
    cp, zone, node = control_plane, "zone-f", "flaky-f1"
    _failable(cp, [node], zone)
    cp.apply(w.bare_pod(NS, "zf", pin=node, toleration_seconds=5, grace=5))
    wait_running_on(cp, NS, "zf", node)
    try:
        cp.stop_kubelet(node)
        wait_node_unknown(cp, node)
        wait_for(
            "zone-f in FullDisruption",
            lambda: zone_state_logged(cp, zone, "FullDisruption"),
            30,
        )
        wait_terminating_on(cp, NS, "zf", node, timeout=60)  # evictions proceed
        assert UNREACHABLE in taint_keys(cp, node)
        plugin.record("zone-full-disruption", "one zone fully down", "others healthy")
        code, d = plugin.diagnose_json("-n", NS)
    finally:
        _restore(cp, [node])
    assert code == 3
    z = _zone(d, zone)
    assert z["state"] == "FullDisruption" and z["eviction"] == "proceeding"
    assert "evictions proceed" in z["explanation"]
    assert not any("master disruption" in note for note in d["cluster"])
    assert _pod(d, "zf")["terminating"]


def test_every_zone_down_is_master_disruption_mode(
    control_plane: ControlPlane, plugin: Plugin, ns: str
) -> None:
    """Every other node is excluded from the zone states (the exclude-disruption label), so the
    one zone of two failing nodes is every zone there is. The first node fails alone (zone
    Normal: it is tainted); when the second fails, the controller enters master disruption mode,
    removes the first node's taint (its pod is not evicted) and taints nothing more. A node
    tainted in the very pass the mode begins may keep its taint (the controller removes taints
    it finds in its cache), and the taint-eviction controller then still evicts its pods: the
    diagnosis follows the taints, node by node."""
    cp, zone, first, second = control_plane, "zone-m", "flaky-m1", "flaky-m2"
    nodes = [first, second]
    others = [
        n["metadata"]["name"]
        for n in cp.get("nodes")["items"]
        if n["metadata"]["labels"].get("topology.kubernetes.io/zone") != zone
    ]
    _failable(cp, nodes, zone)
    cp.apply(w.bare_pod(NS, "zm", pin=first, toleration_seconds=60, grace=5))
    wait_running_on(cp, NS, "zm", first)
    cp.kubectl("label", "node", *others, f"{EXCLUDE}=true", "--overwrite")
    try:
        cp.stop_kubelet(first)
        wait_node_unknown(cp, first)
        wait_for("the first node tainted", lambda: _noexecute_tainted(cp, [first]), 30)
        cp.stop_kubelet(second)
        wait_node_unknown(cp, second)
        wait_for(
            "master disruption mode",
            lambda: any("master disruption mode" in line for line in controller_log(cp)),
            30,
        )
        wait_for("the first node's taint removed", lambda: not _noexecute_tainted(cp, [first]), 30)
        kept = _noexecute_tainted(cp, nodes)
        time.sleep(8)
        assert _noexecute_tainted(cp, nodes) == kept  # no new tainting
        zm = pod_on(cp, NS, "zm", first)
        assert zm is not None and not terminating(zm)
        plugin.record("master-disruption", "every zone down", "master disruption mode")
        code, d = plugin.diagnose_json("-n", NS)
    finally:
        cp.kubectl("label", "node", *others, f"{EXCLUDE}-")
        _restore(cp, nodes)
    assert code == 3
    assert any("master disruption mode" in note for note in d["cluster"])
    z = _zone(d, zone)
    assert z["state"] == "FullDisruption" and z["eviction"] == "stopped"
    if kept:
        assert f"{len(kept)} node(s) here still carry one" in z["explanation"]
    else:
        assert "Pods on nodes without the NoExecute taint are not evicted" in z["explanation"]
    assert "every zone is down" in _pod(d, "zm")["timeline"]
    assert _next(d, "zm") == "not evicted (zone)"


def test_large_zone_partial_disruption_slows_tainting_without_stopping_it(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    """60 nodes in zone-l. 34 (one kwok process) fail: 57 % >= 55 % of a zone of more than 50
    nodes, so the zone enters PartialDisruption. Then 10 more fail (another kwok): the node
    lifecycle controller taints them at --secondary-node-eviction-rate (one node per 5 s),
    not at the primary rate (10 per second here) and not never.

    Judged on the taints' own timeAdded (set by the controller as it taints), not on when the
    test sees them: with two suites on two cores, watching 35 nodes one kubectl at a time saw
    every node tainted before it saw the zone's new state (run y1 of 2026-12-02)."""
    cp, zone = control_plane, "zone-l"
    keep = {"key": "e2e.nodefail/large-zone", "value": "true", "effect": "NoSchedule"}
    up = [f"large-up-{i}" for i in range(16)]
    first = [f"large-down-{i}" for i in range(34)]
    late = [f"large-late-{i}" for i in range(10)]
    cp.apply(*[cp.node_manifest(n, zone, "fake", [keep]) for n in up])
    cp.add_node_group(first, zone, "group-l", [keep])
    cp.add_node_group(late, zone, "group-l2", [keep])
    try:
        _wait_ready_states(cp, up + first + late, "True", 120)
        cp.stop_kubelet("group-l")
        _wait_ready_states(cp, first, "Unknown", 90)
        wait_for(
            "zone-l in PartialDisruption",
            lambda: zone_state_logged(cp, zone, "PartialDisruption"),
            60,
        )
        cp.stop_kubelet("group-l2")
        _wait_ready_states(cp, late, "Unknown", 90)
        times = wait_for(
            "three of the ten late nodes tainted",
            lambda: _at_least(3, _taint_times(cp, late)),
            120,
        )
        gaps = [round(b - a, 1) for a, b in zip(times, times[1:])]
        assert all(gap >= 4 for gap in gaps), gaps  # one node per 5 s, not 10 per second
        plugin.record("large-zone-partial", "60-node zone, 44 down", "tainting slowed")
        code, d = plugin.diagnose_json()
    finally:
        cp.start_kubelet("group-l")
        cp.start_kubelet("group-l2")
        _wait_ready_states(cp, first + late, "True", 120)
        cp.kubectl("delete", "node", *up, *first, *late, "--wait=false")
        cp.stop_kubelet("group-l")
        cp.stop_kubelet("group-l2")
    assert code == 3
    z = _zone(d, zone)
    assert z["nodes"] == 60 and z["notReady"] == 44
    assert z["state"] == "PartialDisruption" and z["eviction"] == "slowed"
    assert "evictions continue, one node at a time" in z["explanation"]


def _ready_states(cp: ControlPlane, names: list[str]) -> dict[str, str]:
    """Each named node's Ready status, from one list of the nodes."""
    wanted = set(names)
    found = {}
    for node in (cp.get("nodes") or {"items": []})["items"]:
        if node["metadata"]["name"] in wanted:
            conditions = node.get("status", {}).get("conditions") or []
            ready = next((c["status"] for c in conditions if c["type"] == "Ready"), "(none)")
            found[node["metadata"]["name"]] = ready
    return found


def _wait_ready_states(cp: ControlPlane, names: list[str], status: str, timeout: float) -> None:
    """Until every named node's Ready is `status` (one list per look, not one get per node)."""
    wait_for(
        f"{len(names)} nodes Ready={status}",
        lambda: _all_in_state(_ready_states(cp, names), names, status),
        timeout,
    )


def _all_in_state(states: dict[str, str], names: list[str], status: str) -> dict[str, str] | None:
    """The states when every named node is in `status` (a missing node is not), else None."""
    return states if all(states.get(n) == status for n in names) else None


def _at_least(n: int, items: list[float]) -> list[float] | None:
    return items if len(items) >= n else None


def _taint_times(cp: ControlPlane, names: list[str]) -> list[float]:
    """When the controller put the unreachable NoExecute taint on each named node that has it
    (its timeAdded, epoch seconds), in order."""
    wanted, times = set(names), []
    for node in (cp.get("nodes") or {"items": []})["items"]:
        if node["metadata"]["name"] not in wanted:
            continue
        for taint in node["spec"].get("taints") or []:
            if (taint["key"], taint["effect"]) == UNREACHABLE and taint.get("timeAdded"):
                times.append(parse_time(taint["timeAdded"]).timestamp())
    return sorted(times)
