"""The real API server's pods Table judges podrows.py: a row stands for its pod (Running, Ready,
on its node, with its own metadata) exactly when the full object says so.

Generated pods on one node whose kwok plays only the node (no pod stages: nothing rewrites a
pod's status but this test), each given a status as a kubelet would write it, drawn from what
varies: phase, each container running (ready or not), waiting or terminated, an init container
done or not, a readiness gate True, False or unset, status.reason, a deletion held by a
finalizer. Then the API server prints its Table (kubectl's own printer, run server-side) and
serves the full objects; every row is compared with its object.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from kubectl_nodefail.cluster import kube, podrows
from tests.e2e import workloads as w
from tests.e2e.controlplane import ControlPlane, wait_for
from tests.e2e.helpers import wait_node_ready

pytestmark = pytest.mark.e2e
NS = "scenario-rows"
NODE = "rows-node"
GATE = "e2e.nodefail/gate"
FINALIZER = "e2e.nodefail/hold"
PODS = 64
T0 = "2026-12-01T10:00:00Z"


def _node_only_kubelet(cp: ControlPlane) -> Any:
    """kwok stages for the node alone: heartbeats and lease, no pod stages."""
    path = cp.workdir / "kwok-node-only.yaml"
    docs = list(yaml.safe_load_all(cp.kubelet_config().read_text()))
    stages = [d for d in docs if d and d["spec"]["resourceRef"]["kind"] == "Node"]
    assert stages, "no node stages in kwok's configuration"
    path.write_text(yaml.safe_dump_all(stages))
    return path


def _container_state(rng: random.Random) -> tuple[dict[str, Any], bool]:
    """(state, ready): ready only when running, as a kubelet reports."""
    kind = rng.choice(["running"] * 8 + ["waiting", "terminated"])
    if kind == "running":
        return {"running": {"startedAt": T0}}, rng.random() < 0.9
    if kind == "waiting":
        return {"waiting": {"reason": rng.choice(["ContainerCreating", "CrashLoopBackOff"])}}, False
    reason = rng.choice(["Completed", "Error"])
    return {
        "terminated": {
            "reason": reason,
            "exitCode": 0 if reason == "Completed" else 1,
            "startedAt": T0,
            "finishedAt": T0,
        }
    }, False


def _pod(rng: random.Random, i: int) -> tuple[dict[str, Any], dict[str, Any], bool]:
    """(pod, the status to write, whether it is deleted after)."""
    containers = rng.choice([1, 1, 2])
    init = rng.random() < 0.25
    gate = rng.random() < 0.3
    spec = w.pod_spec(f"r{i}", pin=NODE, grace=5)
    spec["containers"] = [
        {"name": f"c{k}", "image": "registry.k8s.io/pause:3.9"} for k in range(containers)
    ]
    if init:
        spec["initContainers"] = [{"name": "init", "image": "registry.k8s.io/pause:3.9"}]
    if gate:
        spec["readinessGates"] = [{"conditionType": GATE}]
    deleting = rng.random() < 0.15
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"r{i:02d}",
            "namespace": NS,
            "labels": {"app": "rows"},
            **({"finalizers": [FINALIZER]} if deleting else {}),
        },
        "spec": spec,
    }
    states = [_container_state(rng) for _ in range(containers)]
    statuses = [
        {
            "name": f"c{k}",
            "image": "registry.k8s.io/pause:3.9",
            "imageID": "",
            "restartCount": 0,
            "ready": ready,
            "state": state,
        }
        for k, (state, ready) in enumerate(states)
    ]
    init_done = not init or rng.random() < 0.7
    all_ready = all(ready for _, ready in states)
    gate_status = rng.choice(["True", "False", None]) if gate else None
    ready = all_ready and init_done and (not gate or gate_status == "True")
    running = any("running" in s for s, _ in states)
    phase = rng.choice(
        ["Running"] * 4 + ["Pending", "Succeeded", "Failed"]
        if running
        else ["Pending", "Succeeded", "Failed"]
    )
    conditions = [
        {"type": "PodScheduled", "status": "True"},
        {"type": "Initialized", "status": str(init_done)},
        {"type": "ContainersReady", "status": str(all_ready and init_done)},
        {"type": "Ready", "status": str(ready)},
    ]
    if gate_status:
        conditions.append({"type": GATE, "status": gate_status})
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": conditions,
        "containerStatuses": statuses,
    }
    if init:
        status["initContainerStatuses"] = [
            {
                "name": "init",
                "image": "registry.k8s.io/pause:3.9",
                "imageID": "",
                "restartCount": 0,
                "ready": init_done,
                "state": (
                    {
                        "terminated": {
                            "reason": "Completed",
                            "exitCode": 0,
                            "startedAt": T0,
                            "finishedAt": T0,
                        }
                    }
                    if init_done
                    else {"running": {"startedAt": T0}}
                ),
            }
        ]
    if phase == "Failed" and rng.random() < 0.5:
        status["reason"] = "Evicted"
    return pod, status, deleting


def _stands_for(full: dict[str, Any]) -> bool:
    """What a row standing for the pod asserts, read from the full object."""
    status = full.get("status") or {}
    return (
        status.get("phase") == "Running"
        and not status.get("reason")
        and not full["metadata"].get("deletionTimestamp")
        and all(
            c.get("ready") and "running" in (c.get("state") or {})
            for c in status.get("containerStatuses") or [{}]
        )
        and all(
            "terminated" in (c.get("state") or {})
            for c in status.get("initContainerStatuses") or []
        )
        and any(
            c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or []
        )
    )


@pytest.fixture(scope="module")
def rows(control_plane: ControlPlane) -> Iterator[tuple[kube.Cluster, list[dict[str, Any]]]]:
    cp = control_plane
    cp.add_node(NODE, "zone-rows", managed_by=NODE)
    cp.start_kubelet(NODE, config=_node_only_kubelet(cp))
    wait_node_ready(cp, NODE)
    rng = random.Random(20261202)
    made = [_pod(rng, i) for i in range(PODS)]
    cp.apply(w.namespace(NS), *(pod for pod, _, _ in made))
    wait_for(
        "every pod bound to the node",
        lambda: (
            all(
                (p.get("spec") or {}).get("nodeName") == NODE
                for p in (cp.get("pods", namespace=NS) or {}).get("items", [])
            )
            and len((cp.get("pods", namespace=NS) or {}).get("items", [])) == PODS
        ),
        60,
    )
    for pod, status, deleting in made:
        name = pod["metadata"]["name"]
        code = cp.api_patch(
            f"/api/v1/namespaces/{NS}/pods/{name}/status",
            {"status": status},
            "application/merge-patch+json",
        )
        assert code == 200, (name, code, status)
        if deleting:
            cp.kubectl("delete", "pod", "-n", NS, name, "--wait=false")
    cluster = kube.Cluster(str(cp.kubeconfig), None, timeout=30)
    yield cluster, [pod for pod, _, _ in made]
    for pod, _, deleting in made:
        if deleting:
            cp.kubectl(
                "patch",
                "pod",
                "-n",
                NS,
                pod["metadata"]["name"],
                "--type=merge",
                "-p",
                '{"metadata":{"finalizers":null}}',
                check=False,
            )
    cluster.close()


def test_a_row_stands_for_its_pod_exactly_when_the_object_is_running_and_ready(
    rows: tuple[kube.Cluster, list[dict[str, Any]]],
) -> None:
    cluster, _ = rows
    columns, table, items = cluster.list_rows(kube.pod_path(NS), "Pod")
    full = {p["metadata"]["uid"]: p for p in cluster.list_all(kube.pod_path(NS), "Pod")}
    assert not items and len(table) == PODS == len(full), (columns, len(table), len(full))
    assert podrows.columns_usable(columns), columns
    taken = 0
    for cells, meta in table:
        assert meta is not None, cells
        obj = full[meta["uid"]]
        pod = podrows.from_row(columns, cells, meta)
        assert (pod is not None) == _stands_for(obj), (cells, obj["status"])
        if pod is None:
            continue
        taken += 1
        assert pod["metadata"] == obj["metadata"], meta["name"]  # same object, not changed since
        assert pod["spec"]["nodeName"] == obj["spec"]["nodeName"] == NODE
        for path in ("phase",):
            assert pod["status"][path] == obj["status"][path]
        ready = next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")
        assert pod["status"]["conditions"] == [{"type": "Ready", "status": ready["status"]}]
    # both ways, many times: the generator reached the cases it is for
    assert 8 <= taken <= PODS - 8, taken
