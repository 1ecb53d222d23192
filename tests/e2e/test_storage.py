"""A StatefulSet pod holding a ReadWriteOnce volume on a dead node, through the real
attach-detach controller: the VolumeAttachment stays on the dead node, the replacement gets a
Multi-Attach error, and the out-of-service taint detaches the volume so it attaches elsewhere.

kwok runs no CSI driver: the test plays the CSI external-attacher (it marks VolumeAttachments
attached, as the attacher sidecar does) and the kubelet's volume report (node.status.volumesInUse,
which kwok does not write); everything else is the real attach-detach controller's doing.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e import csi
from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane, wait_for
from tests.e2e.helpers import (
    drop_finalizers,
    pods,
    wait_node_ready,
    wait_node_unknown,
    wait_running_on,
    wait_terminating_on,
)

pytestmark = pytest.mark.e2e
NS = "scenario-storage"
NODE = "flaky-v1"
PV = "pv-db-v1"
OOS = "node.kubernetes.io/out-of-service"


ATTACHABLE = [NODE, "healthy-0", "healthy-1", "healthy-2"]


def _attached_to(cp: ControlPlane, node: str) -> Any:
    return csi.attached_to(cp, PV, node)


def test_rwo_volume_blocks_then_moves_with_out_of_service(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    cp = control_plane
    cp.add_failable_node(NODE)
    wait_node_ready(cp, NODE)
    csi.manage_attach(cp, *ATTACHABLE)
    cp.apply(
        w.namespace(NS),
        csi.csi_pv(PV, "vol-db-v1", NS, "data-db-v1-0"),
        w.only_on(
            w.statefulset(NS, "db-v1", volume=True, prefer=NODE, toleration_seconds=5, grace=5),
            ATTACHABLE,
        ),
    )
    old = wait_running_on(cp, NS, "db-v1", NODE)
    wait_for("the volume attached to the node", lambda: _attached_to(cp, NODE), 60)
    # The kubelet's part after mounting: report the volume in use (kwok does not).
    csi.report_in_use(cp, NODE, ["vol-db-v1"])
    cp.stop_kubelet(NODE)
    wait_node_unknown(cp, NODE)
    wait_terminating_on(cp, NS, "db-v1", NODE, timeout=60)
    assert _attached_to(cp, NODE), "the attachment should stay on the dead node"
    plugin.record("rwo-volume-on-dead-node", "StatefulSet with a RWO volume", "after eviction")
    code, d = plugin.diagnose_json("-n", NS)
    assert code == 3
    stuck = next(p for p in d["pods"] if p["name"] == "db-v1-0")
    assert any("still attached to flaky-v1" in note for note in stuck["storage"]), stuck
    # Force-delete alone: the replacement cannot attach (Multi-Attach) while the VA remains.
    cp.kubectl("delete", "pod", "-n", NS, "db-v1-0", "--grace-period=0", "--force")

    def multi_attach() -> Any:
        events = cp.get("events", namespace=NS)["items"]
        return [
            e
            for e in events
            if e["reason"] == "FailedAttachVolume" and "Multi-Attach" in e.get("message", "")
        ]

    wait_for("a Multi-Attach error on the replacement", multi_attach, 60)
    new = [p for p in pods(cp, NS, "db-v1") if p["metadata"]["uid"] != old["metadata"]["uid"]]
    assert new and new[0]["spec"]["nodeName"] != NODE
    plugin.record(
        "multi-attach",
        "StatefulSet with a RWO volume",
        "old pod force-deleted, replacement waits on Multi-Attach",
    )
    # The out-of-service taint: the controller detaches at once; the volume attaches elsewhere.
    cp.kubectl("taint", "node", NODE, f"{OOS}=nodeshutdown:NoExecute")
    wait_for(
        "the attachment on the dead node removed",
        lambda: not [v for v in csi.attachments(cp, PV) if v["spec"]["nodeName"] == NODE],
        90,
    )
    target = new[0]["spec"]["nodeName"]
    wait_for(f"the volume attached to {target}", lambda: _attached_to(cp, target), 90)
    cp.start_kubelet(NODE)
    wait_node_ready(cp, NODE)
    cp.kubectl("taint", "node", NODE, f"{OOS}-")


HELD_NODE = "flaky-hv"


def _claimed(pod: Any, claim: str) -> Any:
    pod["metadata"]["finalizers"] = ["example.com/hold"]
    pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    pod["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return pod


def test_the_taint_detaches_what_no_running_pod_uses_and_says_which_stay(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    """Audit 2064: pods a finalizer holds on the dead node, each with a volume. One tolerates
    every taint: it runs on under the out-of-service taint, and the attach-detach controller
    keeps its volume attached. The other is Terminating: PodGC marks it Failed (the finalizer
    keeps the object), and its volume detaches. remediate's taint step names the volume that
    stays, and its watch waits for the other only: done (exit 4 for the held pods' blocked
    steps), not unconfirmed after --wait-timeout (exit 7)."""
    cp = control_plane
    cp.add_failable_node(HELD_NODE)
    wait_node_ready(cp, HELD_NODE)
    csi.manage_attach(cp, HELD_NODE)
    running = _claimed(w.bare_pod(NS, "running-hv", pin=HELD_NODE, grace=5), "running-hv")
    running["spec"]["tolerations"] = [{"operator": "Exists"}]
    gone = _claimed(
        w.bare_pod(NS, "gone-hv", pin=HELD_NODE, toleration_seconds=5, grace=5), "gone-hv"
    )
    freed = w.bare_pod(NS, "freed-hv", pin=HELD_NODE, toleration_seconds=5, grace=5)
    cp.apply(
        w.namespace(NS),
        *[csi.csi_pv(f"pv-{c}", f"vol-{c}", NS, c) for c in ("running-hv", "gone-hv")],
        *[csi.pvc(NS, c, f"pv-{c}") for c in ("running-hv", "gone-hv")],
        running,
        gone,
        freed,
    )
    for name in ("running-hv", "gone-hv", "freed-hv"):
        wait_running_on(cp, NS, name, HELD_NODE)
    for claim in ("running-hv", "gone-hv"):
        wait_for(
            f"pv-{claim} attached", lambda c=claim: csi.attached_to(cp, f"pv-{c}", HELD_NODE), 60
        )
    csi.report_in_use(cp, HELD_NODE, ["vol-running-hv", "vol-gone-hv"])
    cp.stop_kubelet(HELD_NODE)
    wait_node_unknown(cp, HELD_NODE)
    wait_terminating_on(cp, NS, "gone-hv", HELD_NODE, timeout=60)
    wait_terminating_on(cp, NS, "freed-hv", HELD_NODE, timeout=60)
    try:
        proc = plugin.run(
            "remediate",
            HELD_NODE,
            "--node-shutdown-confirmed",
            HELD_NODE,
            "--strategy",
            "out-of-service",
            "--confirm",
            "--wait-timeout",
            "90",
            "-o",
            "json",
        )
        # 4: steps blocked (the held pods', which nothing remediate does releases)
        assert proc.returncode == 4, proc.stderr + proc.stdout
        steps = {s["action"]: s for s in json.loads(proc.stdout)["steps"]}
        taint = steps["taint-out-of-service"]
        assert taint["result"] == "done", taint
        assert taint["releases"] == [f"{NS}/freed-hv (bare)"]
        assert taint["why"].endswith(
            f"the volumes of {NS}/running-hv stay attached: tolerating the taint, they keep running"
        ), taint["why"]
        assert "attached for the pods left there, not waited for: pv-running-hv" in taint["detail"]
        # what the words rest on: the controller kept that attachment and removed the other
        assert [v["spec"]["nodeName"] for v in csi.attachments(cp, "pv-running-hv")] == [HELD_NODE]
        assert csi.attachments(cp, "pv-gone-hv") == []
        held = [p for p in pods(cp, NS, "gone-hv") if p["spec"]["nodeName"] == HELD_NODE]
        assert [p["status"]["phase"] for p in held] == ["Failed"]  # PodGC's mark; kept
    finally:
        for name in ("running-hv", "gone-hv"):
            drop_finalizers(cp, NS, name)
        cp.start_kubelet(HELD_NODE)
        wait_node_ready(cp, HELD_NODE)
        cp.kubectl("taint", "node", HELD_NODE, f"{OOS}-", check=False)
