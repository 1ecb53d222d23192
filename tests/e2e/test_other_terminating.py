"""Scenarios 12-13: Terminating for reasons unrelated to node failure, and a mirror pod."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane, wait_for
from tests.e2e.helpers import (
    drop_finalizers,
    pod_on,
    terminating,
    wait_node_ready,
    wait_node_unknown,
    wait_running_on,
)

pytestmark = pytest.mark.e2e
NS = "scenario-other"


def test_12_finalizer_keeps_pod_terminating_on_a_healthy_node(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    cp = control_plane
    cp.apply(w.namespace(NS), w.finalizer_pod(NS, "held", "healthy-0"))
    wait_running_on(cp, NS, "held", "healthy-0")
    cp.kubectl("delete", "pod", "-n", NS, "held", "--wait=false")
    pod = wait_for(
        "held Terminating",
        lambda: (p := pod_on(cp, NS, "held", "healthy-0")) and terminating(p) and p,
        30,
    )
    assert pod["metadata"]["finalizers"] == ["e2e.nodefail/hold"]
    # kwok (the kubelet) deletes it with grace 0 at once; the finalizer keeps the object.
    wait_for(
        "grace period over",
        lambda: (
            json.loads(cp.kubectl("get", "pod", "-n", NS, "held", "-o", "json"))["metadata"].get(
                "deletionGracePeriodSeconds"
            )
            == 0
        ),
        30,
    )
    plugin.record("finalizer-on-healthy-node", "scenario 12", "pod held by a finalizer")
    code, d = plugin.diagnose_json("-n", NS)
    assert code == 3
    held = next(p for p in d["pods"] if p["name"] == "held")
    assert held["category"] == "terminating-elsewhere" and held["nodeFailed"] is False
    assert "finalizers e2e.nodefail/hold" in held["meaning"]
    assert held["action"]["code"] == "investigate"
    drop_finalizers(cp, NS, "held", check=True)
    wait_for("held gone", lambda: pod_on(cp, NS, "held", "healthy-0") is None, 30)


def test_13_mirror_pod_approximation(control_plane: ControlPlane, plugin: Plugin) -> None:
    """kwok runs no static pods; an API-created pod with the kubelet's mirror annotation and a
    Node owner is the closest approximation. The apiserver admits it (recorded here)."""
    cp = control_plane
    node = "flaky-m"
    cp.add_failable_node(node)
    wait_node_ready(cp, node)
    uid = cp.get("node", node)["metadata"]["uid"]
    cp.apply(w.namespace(NS))
    try:
        cp.apply(w.mirror_pod(NS, "static-web", node, uid))
    except subprocess.CalledProcessError as exc:  # report what the apiserver said, then fail
        pytest.fail(f"the apiserver refused the mirror pod approximation: {exc.stderr}")
    pod = wait_running_on(cp, NS, "static-web", node)
    assert pod["metadata"]["annotations"]["kubernetes.io/config.mirror"] == "e2e-hash"
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "Node"
    cp.stop_kubelet(node)
    wait_node_unknown(cp, node)
    plugin.record("mirror-pod-node-down", "scenario 13", "node with a mirror pod is down")
    code, d = plugin.diagnose_json("-n", NS)
    assert code == 3
    mirror = next(p for p in d["pods"] if p["name"] == pod["metadata"]["name"])
    assert mirror["controller"] == "mirror" and mirror["action"]["code"] == "none-possible"
    assert not terminating(pod_on(cp, NS, "static-web", node))  # tolerates NoExecute: stays
    cp.start_kubelet(node)
    wait_node_ready(cp, node)
