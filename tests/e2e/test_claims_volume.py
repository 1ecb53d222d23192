"""A pod waiting for a volume held by a failed node is listed (issue 8, point 7).

A StatefulSet pod holding a ReadWriteOnce CSI volume on a node that dies is force-deleted; its
replacement is scheduled on another node and the real attach-detach controller refuses to attach
the volume there (Multi-Attach error) while the VolumeAttachment stays on the dead node.

kwok ignores volumes (it would report the replacement Running at once), so the replacement goes
to a node whose kubelet the test plays: it renews the lease and reports Ready, and reports the
pod as a kubelet waiting for the attach does (Pending, container ContainerCreating). As in
test_storage, the test also plays the CSI external-attacher and the kubelet's volumesInUse.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubectl_nodefail.analysis import summary
from kubectl_nodefail.analysis.invariants import report_from_data
from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane, KubeletReportingProblem, wait_for
from tests.e2e.helpers import (
    pods,
    wait_node_ready,
    wait_node_unknown,
    wait_running_on,
    wait_terminating_on,
)

pytestmark = pytest.mark.e2e
NS = "scenario-volume-wait"
DEAD, TARGET = "flaky-v2", "flaky-v3"
DRIVER = "csi.e2e.nodefail"
PV = "pv-db-v2"
OOS = "node.kubernetes.io/out-of-service"
READY = [
    {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "kubelet is posting ready status",
    }
]


def _attachments(cp: ControlPlane) -> list[Any]:
    data = cp.get("volumeattachments")
    return [
        v
        for v in (data or {}).get("items", [])
        if v["spec"]["source"].get("persistentVolumeName") == PV
    ]


def _attached_to(cp: ControlPlane, node: str) -> list[Any]:
    """Play the external-attacher (mark pending attachments attached), then list them."""
    for va in _attachments(cp):
        if not (va.get("status") or {}).get("attached") and not va["metadata"].get(
            "deletionTimestamp"
        ):
            cp.kubectl(
                "patch",
                "volumeattachment",
                va["metadata"]["name"],
                "--subresource=status",
                "--type=merge",
                "-p",
                json.dumps({"status": {"attached": True}}),
                check=False,
            )
    return [
        v
        for v in _attachments(cp)
        if v["spec"]["nodeName"] == node and (v.get("status") or {}).get("attached")
    ]


def _waiting_status(pod: Any) -> str:
    """The pod status a kubelet reports while it waits for the volume to attach."""
    return json.dumps(
        {
            "status": {
                "phase": "Pending",
                "conditions": [
                    {"type": "PodScheduled", "status": "True"},
                    {"type": "Initialized", "status": "True"},
                    {"type": "Ready", "status": "False", "reason": "ContainersNotReady"},
                ],
                "containerStatuses": [
                    {
                        "name": "main",
                        "image": pod["spec"]["containers"][0]["image"],
                        "imageID": "",
                        "ready": False,
                        "restartCount": 0,
                        "started": False,
                        "state": {"waiting": {"reason": "ContainerCreating"}},
                    }
                ],
            }
        }
    )


def test_replacement_waiting_for_a_dead_nodes_volume_is_listed(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    cp = control_plane
    cp.add_failable_node(DEAD)
    cp.add_failable_node(TARGET)
    for node in (DEAD, TARGET):
        wait_node_ready(cp, node)
        cp.kubectl(
            "annotate",
            "node",
            node,
            "--overwrite",
            "volumes.kubernetes.io/controller-managed-attach-detach=true",
        )
    sts = w.only_on(
        w.statefulset(NS, "db-v2", volume=True, prefer=DEAD, toleration_seconds=5, grace=5),
        [DEAD, TARGET],
    )
    cp.apply(
        w.namespace(NS),
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": PV},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "manual",
                "persistentVolumeReclaimPolicy": "Retain",
                "csi": {"driver": DRIVER, "volumeHandle": "vol-db-v2"},
                "claimRef": {"namespace": NS, "name": "data-db-v2-0"},
            },
        },
        sts,
    )
    old = wait_running_on(cp, NS, "db-v2", DEAD)
    wait_for("the volume attached to the node", lambda: _attached_to(cp, DEAD), 60)
    cp.kubectl(
        "patch",
        "node",
        DEAD,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": {"volumesInUse": [f"kubernetes.io/csi/{DRIVER}^vol-db-v2"]}}),
    )
    # From now on the test is TARGET's kubelet: it stays Ready but runs nothing by itself.
    cp.stop_kubelet(TARGET)
    try:
        with KubeletReportingProblem(cp, TARGET, READY):
            cp.stop_kubelet(DEAD)
            wait_node_unknown(cp, DEAD)
            wait_terminating_on(cp, NS, "db-v2", DEAD, timeout=60)
            cp.kubectl("delete", "pod", "-n", NS, "db-v2-0", "--grace-period=0", "--force")
            new = wait_for(
                "the replacement bound to the target node",
                lambda: [
                    p
                    for p in pods(cp, NS, "db-v2")
                    if p["metadata"]["uid"] != old["metadata"]["uid"]
                    and p["spec"].get("nodeName") == TARGET
                ],
                60,
            )[0]
            cp.kubectl(
                "patch",
                "pod",
                "-n",
                NS,
                "db-v2-0",
                "--subresource=status",
                "--type=merge",
                "-p",
                _waiting_status(new),
            )

            def multi_attach() -> Any:
                return [
                    e
                    for e in cp.get("events", namespace=NS)["items"]
                    if e["reason"] == "FailedAttachVolume"
                    and "Multi-Attach" in e.get("message", "")
                    and e["involvedObject"]["name"] == "db-v2-0"
                ]

            wait_for("a Multi-Attach error on the replacement", multi_attach, 60)
            assert _attached_to(cp, DEAD) and not _attached_to(cp, TARGET)
            plugin.record(
                "volume-held-by-dead-node",
                "StatefulSet with a RWO volume, old pod force-deleted",
                "replacement ContainerCreating, Multi-Attach error",
            )
            code, d = plugin.diagnose_json("-n", NS)
            table = plugin.run("diagnose", "-n", NS).stdout
            # Out of service: the controller detaches from the dead node at once.
            cp.kubectl("taint", "node", DEAD, f"{OOS}=nodeshutdown:NoExecute")
            wait_for(
                "the attachment on the dead node removed",
                lambda: not [v for v in _attachments(cp) if v["spec"]["nodeName"] == DEAD],
                90,
            )
            wait_for(f"the volume attached to {TARGET}", lambda: _attached_to(cp, TARGET), 90)
    finally:
        cp.start_kubelet(TARGET)
        cp.start_kubelet(DEAD)
        wait_node_ready(cp, DEAD, timeout=90)
        wait_node_ready(cp, TARGET, timeout=90)
        cp.kubectl("taint", "node", DEAD, f"{OOS}-", check=False)
        cp.kubectl("delete", "namespace", NS, "--wait=false")
    assert code == 3
    waiting = next(p for p in d["pods"] if p["name"] == "db-v2-0")
    assert waiting["uid"] == new["metadata"]["uid"] and waiting["node"] == TARGET
    assert waiting["category"] == "waiting-for-volume" and waiting["kubectlStatus"] == (
        "ContainerCreating"
    )
    assert any(f"still attached to {DEAD}" in note for note in waiting["storage"])
    assert any("Multi-Attach error" in note for note in waiting["storage"])
    assert waiting["action"]["code"] == "out-of-service" and DEAD in waiting["action"]["kubectl"]
    assert d["summary"]["waitingForVolume"] == 1
    report = report_from_data(d)
    mine = next(p for p in report.pods if p.name == "db-v2-0")
    assert summary.next_step(mine, report.captured_at) == "waits for volume"
    first = table.splitlines()[0]
    assert "1 stuck pod (1 waiting for a volume held by a failed node)" in first, first
    assert any(line.startswith(f"{NS}/db-v2-0") for line in table.splitlines())
