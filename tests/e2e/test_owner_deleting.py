"""An owner deleted in the foreground, judged by the real control plane (issue 33 item 5: the
garbage collector's path, docs/audit.md's map row 22). In its own module: its failed node would
make a third of test_owner_held's, and three failed nodes of six are a mass failure there."""

from __future__ import annotations

import time

import pytest

from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane, wait_for
from tests.e2e.helpers import (
    claims_of,
    pod_row,
    pods,
    remediate_confirmed,
    terminating,
    wait_node_ready,
    wait_node_unknown,
)

pytestmark = pytest.mark.e2e


def test_an_owner_deleted_in_the_foreground_waits_on_the_dead_nodes_pod(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    """`kubectl delete --cascade=foreground`: the garbage collector keeps the Deployment and its
    ReplicaSet (foregroundDeletion) until the pod objects are gone, and the one on the dead
    node never goes by itself: the deletion waits on it, and nothing replaces it."""
    cp, ns, node = control_plane, "scenario-foreground", "flaky-u3"
    cp.add_failable_node(node)
    wait_node_ready(cp, node)
    cp.apply(w.namespace(ns), w.deployment(ns, "gone", pin=node, toleration_seconds=None, grace=5))
    wait_for(
        "gone Running on the node",
        lambda: any(p["status"].get("phase") == "Running" for p in pods(cp, ns, "gone")),
        60,
    )
    cp.stop_kubelet(node)
    wait_node_unknown(cp, node)
    cp.kubectl("delete", "deployment", "-n", ns, "gone", "--cascade=foreground", "--wait=false")
    wait_for(
        "the pod Terminating",
        lambda: any(terminating(p) for p in pods(cp, ns, "gone")),
        60,
    )
    time.sleep(10)
    deployment = cp.get("deployment", "gone", ns)
    assert deployment and "foregroundDeletion" in deployment["metadata"]["finalizers"]
    sets = cp.get("replicasets", namespace=ns)["items"]
    assert sets and all(s["metadata"].get("deletionTimestamp") for s in sets), sets
    assert all(terminating(p) for p in pods(cp, ns, "gone"))  # nothing replaced it

    plugin.record("owner-deleted-in-foreground", "Deployment deleted in the foreground", "held")
    _, data = plugin.diagnose_json()
    row = pod_row(data, ns, "gone-")
    said = " ".join(claims_of(row, "blocks"))
    assert "foreground" in said and "Deployment gone" in said, row["claims"]
    assert row["replacement"]["state"] == "blocked", row["replacement"]
    assert row["action"]["code"] == "out-of-service", row["action"]

    result = remediate_confirmed(plugin, node)
    taint = next(s for s in result["steps"] if s["action"] == "taint-out-of-service")
    assert any(row["name"] in r for r in taint["releases"]), taint
    wait_for(
        "the Deployment gone",
        lambda: not cp.kubectl("get", "deployment", "-n", ns, "--ignore-not-found", "-o", "name"),
        90,
    )
