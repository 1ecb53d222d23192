"""Placement facts outside the pod, judged by the real control plane (issue 33 item 3): a
StatefulSet pod whose claim is bound to a `local` PersistentVolume with node affinity to the node
that died. The diagnosis says it is recreated on that node again, never "this or another node";
freed (force-deleted after an attestation), the recreated pod is not placed anywhere else (the
scheduler: every other node "didn't match PersistentVolume's node affinity") and, once the node
is back, runs there."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane, wait_for
from tests.e2e.helpers import wait_node_ready, wait_node_unknown, wait_terminating_on

pytestmark = pytest.mark.e2e
NS = "scenario-local"
NODE = "flaky-l1"
POD = "db-0"
PV = "pv-local-db"

Obj = dict[str, Any]


def _local_pv(claim: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": PV},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "manual",
            "persistentVolumeReclaimPolicy": "Retain",
            "local": {"path": "/mnt/disks/db"},
            "claimRef": {"namespace": NS, "name": claim},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "kubernetes.io/hostname",
                                    "operator": "In",
                                    "values": [NODE],
                                }
                            ]
                        }
                    ]
                }
            },
        },
    }


def _pod(cp: ControlPlane) -> Obj | None:
    found = cp.kubectl("get", "pod", "-n", NS, POD, "-o", "json", check=False)
    return json.loads(found) if found.strip().startswith("{") else None


def test_a_pod_on_a_local_volume_comes_back_only_on_its_node(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    cp = control_plane
    cp.add_failable_node(NODE)
    wait_node_ready(cp, NODE)
    sts = w.statefulset(NS, "db", volume=True, toleration_seconds=10)
    cp.apply(w.namespace(NS), _local_pv("data-db-0"), sts)
    first = wait_for(
        "db-0 Running on the local volume's node",
        lambda: (
            (p := _pod(cp))
            and p["spec"].get("nodeName") == NODE
            and p["status"].get("phase") == "Running"
            and p
        ),
        120,
    )
    cp.stop_kubelet(NODE)
    wait_node_unknown(cp, NODE)
    wait_terminating_on(cp, NS, "db", NODE, timeout=90)

    _, data = plugin.diagnose_json()
    row = next(p for p in data["pods"] if p["name"] == POD)
    assert "may land on this or another node" not in row["ifNodeReturns"], row
    assert f"recreates {POD} on {NODE} again" in row["ifNodeReturns"], row["ifNodeReturns"]
    assert f"then only on {NODE}" in row["replacement"]["summary"], row["replacement"]

    # Freed, the new db-0 goes nowhere else: the scheduler keeps it off every other node.
    proc = plugin.run(
        "remediate", NODE, "--strategy", "force-delete", "--node-shutdown-confirmed", NODE,
        "--confirm", "-o", "json",
    )  # fmt: skip
    assert proc.returncode in (0, 7), proc.stdout + proc.stderr

    def recreated() -> Obj | None:
        pod = _pod(cp)
        uid = (pod or {}).get("metadata", {}).get("uid")
        return pod if pod and uid != first["metadata"]["uid"] else None

    again = wait_for("db-0 recreated", recreated, 60)

    def unschedulable() -> str:
        pod = _pod(cp) or {}
        cond = next(
            (
                c
                for c in pod.get("status", {}).get("conditions") or []
                if c["type"] == "PodScheduled"
            ),
            {},
        )
        return str(cond.get("message") or "") if cond.get("status") == "False" else ""

    message = wait_for("the scheduler's verdict on db-0", unschedulable, 60)
    assert "didn't match PersistentVolume's node affinity" in message, message
    assert not (_pod(cp) or {}).get("spec", {}).get("nodeName"), again
    # ... and once the node is back it runs there.
    cp.start_kubelet(NODE)
    wait_node_ready(cp, NODE)
    wait_for(
        "db-0 Running on its node again",
        lambda: (
            (p := _pod(cp))
            and p["spec"].get("nodeName") == NODE
            and p["status"].get("phase") == "Running"
        ),
        120,
    )
