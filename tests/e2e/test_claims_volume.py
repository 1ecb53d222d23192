"""A pod waiting for a volume held by a failed node is listed (issue 8, point 7).

A StatefulSet pod holding a ReadWriteOnce CSI volume on a node that dies is force-deleted; its
replacement is scheduled on another node and the real attach-detach controller refuses to attach
the volume there (Multi-Attach error) while the VolumeAttachment stays on the dead node.

kwok ignores volumes (it would report the replacement Running at once), so the replacement goes
to a node whose kubelet the test plays: it renews the lease and reports Ready, and reports the
pod as a kubelet waiting for the attach does (Pending, container ContainerCreating). As in
test_storage, the test also plays the CSI external-attacher and the kubelet's volumesInUse.

The second test has a Deployment's replacement wait while the old pod object, Terminating on
the dead node, still holds the volume: there no timer runs, and the advice is to free it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from kubectl_nodefail.analysis import summary
from tests.e2e import csi
from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane, KubeletReportingProblem, wait_for
from tests.e2e.helpers import (
    pods,
    remediate_confirmed,
    wait_node_ready,
    wait_node_unknown,
    wait_running_on,
    wait_terminating_on,
)
from tests.oracles.invariants import report_from_data

pytestmark = pytest.mark.e2e
NS = "scenario-volume-wait"
HELD_NS = "scenario-volume-held"
DEAD, TARGET = "flaky-v2", "flaky-v3"
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


@contextmanager
def _two_nodes(cp: ControlPlane, dead: str, target: str, ns: str) -> Iterator[None]:
    """Two failable nodes whose volumes the attach-detach controller manages; on the way out
    both kubelets are back, the out-of-service taint is off and the namespace goes."""
    for node in (dead, target):
        cp.add_failable_node(node)
    for node in (dead, target):
        wait_node_ready(cp, node)
    csi.manage_attach(cp, dead, target)
    try:
        yield
    finally:
        cp.start_kubelet(target)
        cp.start_kubelet(dead)
        wait_node_ready(cp, dead, timeout=90)
        wait_node_ready(cp, target, timeout=90)
        cp.kubectl("taint", "node", dead, f"{OOS}-", check=False)
        cp.kubectl("delete", "namespace", ns, "--wait=false")


@contextmanager
def _dead_with_played_target(cp: ControlPlane, dead: str, target: str) -> Iterator[None]:
    """`dead`'s kubelet dies; the test is `target`'s kubelet (Ready, runs nothing by itself)."""
    cp.stop_kubelet(target)
    with KubeletReportingProblem(cp, target, READY):
        cp.stop_kubelet(dead)
        wait_node_unknown(cp, dead)
        yield


def _replacement_waiting(cp: ControlPlane, ns: str, app: str, old: Any, target: str) -> Any:
    """The replacement of `old` bound to `target`, reported as a kubelet waiting for the
    attach reports it, once the controller refused the attach there (Multi-Attach)."""
    new = wait_for(
        "the replacement bound to the target node",
        lambda: [
            p
            for p in pods(cp, ns, app)
            if p["metadata"]["uid"] != old["metadata"]["uid"]
            and p["spec"].get("nodeName") == target
        ],
        60,
    )[0]
    name = new["metadata"]["name"]
    cp.kubectl(
        "patch",
        "pod",
        "-n",
        ns,
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        _waiting_status(new),
    )
    wait_for(
        "a Multi-Attach error on the replacement",
        lambda: [
            e
            for e in cp.get("events", namespace=ns)["items"]
            if e["reason"] == "FailedAttachVolume"
            and "Multi-Attach" in e.get("message", "")
            and e["involvedObject"]["name"] == name
        ],
        60,
    )
    return new


def _out_of_service_moves(cp: ControlPlane, pv: str, dead: str, target: str) -> None:
    """The out-of-service taint: the controller detaches from the dead node at once (PodGC
    first force-deletes a Terminating pod there), and the volume attaches on `target`."""
    cp.kubectl("taint", "node", dead, f"{OOS}=nodeshutdown:NoExecute")
    _moves(cp, pv, dead, target)


def _moves(cp: ControlPlane, pv: str, dead: str, target: str) -> None:
    """With the out-of-service taint on `dead`: the volume detached there, attached on
    `target`."""
    wait_for(
        "the attachment on the dead node removed",
        lambda: not [v for v in csi.attachments(cp, pv) if v["spec"]["nodeName"] == dead],
        90,
    )
    wait_for(f"the volume attached to {target}", lambda: csi.attached_to(cp, pv, target), 90)


def test_replacement_waiting_for_a_dead_nodes_volume_is_listed(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    cp = control_plane
    with _two_nodes(cp, DEAD, TARGET, NS):
        sts = w.only_on(
            w.statefulset(NS, "db-v2", volume=True, prefer=DEAD, toleration_seconds=5, grace=5),
            [DEAD, TARGET],
        )
        cp.apply(w.namespace(NS), csi.csi_pv(PV, "vol-db-v2", NS, "data-db-v2-0"), sts)
        old = wait_running_on(cp, NS, "db-v2", DEAD)
        wait_for("the volume attached to the node", lambda: csi.attached_to(cp, PV, DEAD), 60)
        csi.report_in_use(cp, DEAD, ["vol-db-v2"])
        with _dead_with_played_target(cp, DEAD, TARGET):
            wait_terminating_on(cp, NS, "db-v2", DEAD, timeout=60)
            cp.kubectl("delete", "pod", "-n", NS, "db-v2-0", "--grace-period=0", "--force")
            new = _replacement_waiting(cp, NS, "db-v2", old, TARGET)
            assert csi.attached_to(cp, PV, DEAD) and not csi.attached_to(cp, PV, TARGET)
            plugin.record(
                "volume-held-by-dead-node",
                "StatefulSet with a RWO volume, old pod force-deleted",
                "replacement ContainerCreating, Multi-Attach error",
            )
            code, d = plugin.diagnose_json("-n", NS)
            table = plugin.run("diagnose", "-n", NS).stdout
            # no pod left on the dead node: its advice offers the taint for the pod waiting
            # elsewhere, and remediate plans and applies it (the remedy judged live)
            result = remediate_confirmed(plugin, DEAD)
            _moves(cp, PV, DEAD, TARGET)
    assert code == 3
    dead = next(n for n in d["nodes"] if n["name"] == DEAD)
    assert "out-of-service taint" in dead["action"]["summary"], dead["action"]
    taint = next(s for s in result["steps"] if s["action"] == "taint-out-of-service")
    assert taint["result"] == "done" and f"{NS}/db-v2-0 (on {TARGET})" in taint["why"], taint
    waiting = next(p for p in d["pods"] if p["name"] == "db-v2-0")
    assert waiting["uid"] == new["metadata"]["uid"] and waiting["node"] == TARGET
    assert waiting["category"] == "waiting-for-volume" and waiting["kubectlStatus"] == (
        "ContainerCreating"
    )
    assert any(f"still attached to {DEAD}" in note for note in waiting["storage"])
    assert any("Multi-Attach error" in note for note in waiting["storage"])
    assert waiting["action"]["code"] == "out-of-service" and DEAD in waiting["action"]["remediate"]
    assert d["summary"]["waitingForVolume"] == 1
    report = report_from_data(d)
    mine = next(p for p in report.pods if p.name == "db-v2-0")
    assert summary.next_step(mine, report.captured_at) == "waits for volume"
    first = table.splitlines()[0]
    assert "1 stuck pod (1 waiting for a volume held by a failed node)" in first, first
    assert any(line.startswith(f"{NS}/db-v2-0") for line in table.splitlines())


def test_replacement_waiting_while_a_terminating_pod_still_holds_the_volume(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    """A Deployment's pod with a ReadWriteOnce claim is evicted from a dead node: the
    ReplicaSet replaces it at once, but the old pod object stays Terminating there, so the
    controller never detaches the volume (no timer runs). Waiting does not help: the advice is
    to free the old pod; the out-of-service taint does, and the volume moves."""
    cp, dead, target, pv = control_plane, "flaky-v4", "flaky-v5", "pv-web-v4"
    with _two_nodes(cp, dead, target, HELD_NS):
        web = w.only_on(
            w.deployment(HELD_NS, "web-v4", prefer=dead, toleration_seconds=5, grace=5),
            [dead, target],
        )
        spec = web["spec"]["template"]["spec"]
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data-web-v4"}}]
        spec["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
        cp.apply(
            w.namespace(HELD_NS),
            csi.csi_pv(pv, "vol-web-v4", HELD_NS, "data-web-v4"),
            csi.pvc(HELD_NS, "data-web-v4", pv),
            web,
        )
        old = wait_running_on(cp, HELD_NS, "web-v4", dead)
        wait_for("the volume attached to the node", lambda: csi.attached_to(cp, pv, dead), 60)
        csi.report_in_use(cp, dead, ["vol-web-v4"])
        with _dead_with_played_target(cp, dead, target):
            # Evicted: Terminating, and the ReplicaSet replaces it at once.
            wait_terminating_on(cp, HELD_NS, "web-v4", dead, timeout=60)
            new = _replacement_waiting(cp, HELD_NS, "web-v4", old, target)
            code, d = plugin.diagnose_json("-n", HELD_NS)
            _out_of_service_moves(cp, pv, dead, target)
    assert code == 3
    old_name = f"{HELD_NS}/{old['metadata']['name']}"
    waiting = next(p for p in d["pods"] if p["uid"] == new["metadata"]["uid"])
    assert waiting["category"] == "waiting-for-volume", waiting
    assert waiting["action"]["code"] == "out-of-service"
    assert waiting["action"]["summary"].startswith(
        f"{old_name} still uses the volume on {dead}, and nothing removes it while the node is "
        "down, so waiting does not detach it"
    ), waiting["action"]["summary"]
    assert f"not detached while pod object {old_name} (Terminating)" in waiting["timeline"]
    stuck = next(p for p in d["pods"] if p["uid"] == old["metadata"]["uid"])
    assert any(f"not detached while pod object {old_name}" in n for n in stuck["storage"])
