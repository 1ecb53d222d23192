"""A StatefulSet pod holding a ReadWriteOnce volume on a dead node, through the real
attach-detach controller: the VolumeAttachment stays on the dead node, the replacement gets a
Multi-Attach error, and the out-of-service taint detaches the volume so it attaches elsewhere.

kwok runs no CSI driver: the test plays the CSI external-attacher (it marks VolumeAttachments
attached, as the attacher sidecar does) and the kubelet's volume report (node.status.volumesInUse,
which kwok does not write); everything else is the real attach-detach controller's doing.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e import csi
from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane, wait_for
from tests.e2e.helpers import (
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
