"""Ctrl-C while `remediate --confirm` waits for what the out-of-service taint released, on the
real control plane: exit 6, never 0 (it used to report "stopped watching (interrupted)" and
exit 0). A VolumeAttachment nobody detaches (no CSI driver serves it) holds the wait open, so
the signal lands in the wait whatever the controllers' timing."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane, wait_for
from tests.e2e.helpers import attested, taint_keys, wait_node_ready
from tests.e2e.test_remediate_safety import Background, _fail_with_statefulset

pytestmark = pytest.mark.e2e
NODE = "flaky-int"
OOS = "node.kubernetes.io/out-of-service"
LOCK = "kubectl-nodefail.io/lock"


def test_sigint_while_waiting_for_the_released_pods_exits_6(
    control_plane: ControlPlane, plugin: Plugin, tmp_path: Path
) -> None:
    cp = control_plane
    _fail_with_statefulset(cp, NODE)
    attachment = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": f"held-{NODE}"},
        "spec": {
            "attacher": "e2e.nodefail.invalid",
            "nodeName": NODE,
            "source": {"persistentVolumeName": f"pv-{NODE}"},
        },
    }
    cp.apply(attachment)
    run = Background(plugin, *attested(NODE), "--wait-timeout", "300", "-o", "json")
    wait_for("the out-of-service taint", lambda: (OOS, "NoExecute") in taint_keys(cp, NODE), 90)
    run.signal(signal.SIGINT)
    proc = run.finish(timeout=60)
    assert proc.returncode == 6, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert data["interrupted"] is True
    step = next(s for s in data["steps"] if s["action"] == "taint-out-of-service")
    # The taint was applied; the signal stopped the watch for its effect: not "done".
    assert step["result"] == "interrupted"
    assert "out-of-service taint applied" in step["detail"]
    assert "stopped watching (interrupted)" in step["detail"]
    assert "1 volume attachments on the node" in step["detail"]
    node = cp.get("node", NODE)
    assert LOCK not in (node["metadata"].get("annotations") or {})  # released on the way out
    cp.kubectl("delete", "volumeattachment", f"held-{NODE}")
    cp.kubectl("taint", "node", NODE, f"{OOS}-")
    cp.start_kubelet(NODE)
    wait_node_ready(cp, NODE)
