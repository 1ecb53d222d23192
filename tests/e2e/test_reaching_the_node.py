"""Pods that reach a failed node another way, judged by the real control plane (issue 33 item
2): a pod created with spec.nodeName after the node was tainted (no scheduler) is evicted
tolerationSeconds after the taint-eviction controller first saw it, not after the taint; a pod
tolerating every taint (`operator: Exists`) stays under the out-of-service taint (PodGC
force-deletes only Terminating pods), so the plan force-deletes it, and that releases it."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta
from typing import Any

import pytest

from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane, wait_for
from tests.e2e.helpers import taint_keys, wait_node_ready, wait_node_unknown

pytestmark = pytest.mark.e2e
NS = "scenario-reach"
NODE = "flaky-r1"
TOLERATION = 40
OOS = ("node.kubernetes.io/out-of-service", "NoExecute")

Obj = dict[str, Any]


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _bound_by_hand(name: str, tolerations: list[Obj]) -> Obj:
    pod = w.bare_pod(NS, name, grace=5)
    pod["spec"].pop("nodeSelector", None)
    pod["spec"]["nodeName"] = NODE  # no scheduler: bound at creation
    pod["spec"]["tolerations"] = tolerations
    return pod


def _row(data: Obj, name: str) -> Obj:
    return next(p for p in data["pods"] if p["name"] == name)


def _evicted_at(cp: ControlPlane, name: str) -> datetime | None:
    """When the taint-eviction controller decided (DisruptionTarget), or None if it has not."""
    found = cp.kubectl("get", "pod", "-n", NS, name, "-o", "json", check=False)
    if not found.strip().startswith("{"):
        return None
    pod = json.loads(found)
    for cond in pod["status"].get("conditions") or []:
        if cond["type"] == "DisruptionTarget" and cond["status"] == "True":
            return _time(cond["lastTransitionTime"])
    return None


def test_pods_bound_after_the_taint(control_plane: ControlPlane, plugin: Plugin) -> None:
    cp = control_plane
    cp.add_failable_node(NODE)
    wait_node_ready(cp, NODE)
    cp.apply(w.namespace(NS))
    cp.stop_kubelet(NODE)
    wait_node_unknown(cp, NODE)
    wait_for(
        "the unreachable NoExecute taint",
        lambda: ("node.kubernetes.io/unreachable", "NoExecute") in taint_keys(cp, NODE),
        60,
    )
    time.sleep(15)  # the pod arrives well after the taint: the two clocks must differ
    limited = [
        {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": TOLERATION}
        for key in ("node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready")
    ]
    cp.apply(
        _bound_by_hand("late", limited), _bound_by_hand("everything", [{"operator": "Exists"}])
    )
    late = cp.get("pod", "late", NS)
    arrived = _time(late["metadata"]["creationTimestamp"])
    node = cp.get("node", NODE)
    tainted = next(
        _time(t["timeAdded"])
        for t in node["spec"]["taints"]
        if t["key"] == "node.kubernetes.io/unreachable" and t["effect"] == "NoExecute"
    )
    assert (arrived - tainted).total_seconds() >= 10

    # 1. The prediction counts from the pod's arrival ...
    _, data = plugin.diagnose_json()
    row = _row(data, "late")
    predicted = _time(row["evictionAt"])
    assert predicted == arrived + timedelta(seconds=TOLERATION), (row["evictionAt"], arrived)
    assert "arrival on the tainted node" in row["timeline"], row["timeline"]
    # ... and the control plane agrees (within its workqueue's moment)
    actual = wait_for("late evicted", lambda: _evicted_at(cp, "late"), TOLERATION + 60)
    assert abs((actual - predicted).total_seconds()) <= 3, (actual, predicted)

    # 2. The pod that tolerates every taint: the advice and the plan force-delete it ...
    _, data = plugin.diagnose_json()
    row = _row(data, "everything")
    assert row["action"]["code"] == "force-delete", row["action"]
    proc = plugin.run("remediate", NODE, "--node-shutdown-confirmed", NODE, "-o", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    steps = json.loads(proc.stdout)["steps"]
    taint = next(s for s in steps if s["action"] == "taint-out-of-service")
    assert not any("everything" in r for r in taint.get("releases") or []), taint
    assert any(
        s["action"] == "force-delete-pod" and s["target"] == f"pod/{NS}/everything" for s in steps
    ), steps

    # ... because the out-of-service taint alone does not release it (applied by hand here) ...
    cp.kubectl("taint", "node", NODE, "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute")
    time.sleep(20)  # PodGC runs every 20 s; the taint-eviction controller at once
    still = cp.get("pod", "everything", NS)
    assert not still["metadata"].get("deletionTimestamp"), "the taint released it after all"
    assert OOS in taint_keys(cp, NODE)

    # ... and the plan's force delete does (the taint already set: a wait, then the delete)
    proc = plugin.run(
        "remediate", NODE, "--node-shutdown-confirmed", NODE, "--confirm", "-o", "json"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    done = {s["target"]: s for s in json.loads(proc.stdout)["steps"]}
    assert done[f"pod/{NS}/everything"]["result"] == "done", done
    gone = cp.kubectl("get", "pod", "-n", NS, "everything", "--ignore-not-found", "-o", "name")
    assert gone.strip() == ""


BOUND_NODE, BOUND_NS = "flaky-r2", "scenario-bound"


def _bound_pods(cp: ControlPlane, app: str) -> list[Obj]:
    data = cp.get("pods", namespace=BOUND_NS, selector=f"app={app}")
    return list((data or {}).get("items") or [])


def test_pods_a_template_binds_to_the_node(control_plane: ControlPlane, plugin: Plugin) -> None:
    """A Deployment and a StatefulSet whose pod template sets spec.nodeName: every pod they make
    is bound to the dead node, evicted by its tolerations and made again there; freeing one
    only makes another there. The diagnosis says so and advises no release; remediate plans
    only waits for them (the taint it applies for another pod does not wait on them either);
    once the node is back, the set's pod runs there again, as said."""
    cp, node = control_plane, BOUND_NODE
    cp.add_failable_node(node)
    wait_node_ready(cp, node)
    dep = w.deployment(BOUND_NS, "pinned", toleration_seconds=10, grace=30)
    sts = w.statefulset(BOUND_NS, "db", toleration_seconds=10)
    for obj in (dep, sts):
        obj["spec"]["template"]["spec"]["nodeName"] = node
    # beside them, a pod the out-of-service taint releases: the plan's taint step is for it
    lone = w.bare_pod(BOUND_NS, "lone", pin=node, grace=5)
    lone["spec"]["tolerations"] = w.forever_tolerations()
    cp.apply(w.namespace(BOUND_NS), dep, sts, lone)
    wait_for(
        "both Running", lambda: len(_bound_pods(cp, "pinned")) + len(_bound_pods(cp, "db")) == 2
    )
    wait_for(
        "both Running",
        lambda: all(
            p["status"].get("phase") == "Running"
            for app in ("pinned", "db", "lone")
            for p in _bound_pods(cp, app)
        ),
    )
    cp.stop_kubelet(node)
    wait_node_unknown(cp, node)
    # two rounds of eviction and replacement: each new pod bound to the dead node again
    wait_for("a third pod of pinned", lambda: len(_bound_pods(cp, "pinned")) >= 3, 120)
    made = _bound_pods(cp, "pinned")
    assert all(p["spec"]["nodeName"] == node for p in made), made
    assert not any(
        p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
        for p in made
    )

    plugin.record("template-node-name", "owners' templates bind spec.nodeName", "after evictions")
    _, data = plugin.diagnose_json()
    rows = {
        p["name"]: p for p in data["pods"] if p["namespace"] == BOUND_NS and p["name"] != "lone"
    }
    standing = [r for r in rows.values() if r["name"].startswith("pinned") and not r["terminating"]]
    for row in [*standing, rows["db-0"]]:
        assert row["action"]["code"] == "investigate", row["action"]
        assert "spec.nodeName" in row["action"]["summary"], row["action"]
    for row in rows.values():
        assert f"sets spec.nodeName: {node}" in row["explanation"], row["explanation"]
    assert f"recreates db-0 on {node} again" in rows["db-0"]["ifNodeReturns"]
    proc = plugin.run("remediate", node, "--node-shutdown-confirmed", node, "-o", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    steps = json.loads(proc.stdout)["steps"]
    for step in steps:  # the bound pods: waits; the taint releases the lone pod, not them
        if step["target"].startswith(f"pod/{BOUND_NS}/"):
            assert step["action"] == "wait", step
    taint = next(s for s in steps if s["action"] == "taint-out-of-service")
    assert [r.split(" ")[0] for r in taint["releases"]] == [f"{BOUND_NS}/lone"], taint

    # Freeing db-0 by hand only makes another db-0, bound to the dead node, Pending.
    old = cp.get("pod", "db-0", BOUND_NS)
    cp.kubectl("delete", "pod", "db-0", "-n", BOUND_NS, "--force", "--grace-period=0")
    again = wait_for(
        "db-0 made again",
        lambda: (
            (p := cp.get("pod", "db-0", BOUND_NS))
            and p["metadata"]["uid"] != old["metadata"]["uid"]
            and p
        ),
        60,
    )
    assert again["spec"]["nodeName"] == node and again["status"].get("phase") == "Pending"

    # Applied: the taint releases the lone pod, and the watch does not wait for the pods made
    # again on the node after it (audit 2061: it ran to --wait-timeout, exit 7)
    proc = plugin.run(
        "remediate", node, "--node-shutdown-confirmed", node, "--confirm", "-o", "json"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    done = next(
        s for s in json.loads(proc.stdout)["steps"] if s["action"] == "taint-out-of-service"
    )
    assert done["result"] == "done", done  # not "unconfirmed" after --wait-timeout
    assert cp.get("pod", "lone", BOUND_NS) is None
    cp.kubectl("taint", "node", node, "node.kubernetes.io/out-of-service-")
    cp.start_kubelet(node)
    wait_node_ready(cp, node)
    back = wait_for(
        "db-0 Running on its node",
        lambda: (
            (p := cp.get("pod", "db-0", BOUND_NS)) and p["status"].get("phase") == "Running" and p
        ),
        90,
    )
    assert back["spec"]["nodeName"] == node
