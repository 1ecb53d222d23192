"""Other node signals, diagnosed on the real control plane: a kubelet alive but reporting
NotReady (CNI down, with node-problem-detector and custom conditions), and a machine the cloud
provider reports shut down."""

from __future__ import annotations

import pytest

from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane, KubeletReportingProblem, wait_for
from tests.e2e.helpers import (
    ready,
    taint_keys,
    wait_node_ready,
    wait_node_unknown,
    wait_running_on,
    wait_terminating_on,
)

pytestmark = pytest.mark.e2e
NS = "scenario-signals"
CNI_DOWN = (
    "container runtime network not ready: NetworkReady=false "
    "reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not "
    "initialized"
)
CLOUD_SHUTDOWN = "node.cloudprovider.kubernetes.io/shutdown"


def test_kubelet_alive_but_reporting_not_ready(control_plane: ControlPlane, plugin: Plugin) -> None:
    cp, node = control_plane, "flaky-s1"
    cp.add_failable_node(node)
    wait_node_ready(cp, node)
    cp.apply(w.namespace(NS), w.statefulset(NS, "db-s1", prefer=node, toleration_seconds=5))
    wait_running_on(cp, NS, "db-s1", node)
    cp.stop_kubelet(node)
    conditions = [
        {"type": "Ready", "status": "False", "reason": "KubeletNotReady", "message": CNI_DOWN},
        {
            "type": "KernelDeadlock",
            "status": "True",
            "reason": "DockerHung",
            "message": "task docker:7 blocked for more than 300 seconds",
        },  # node-problem-detector
        {
            "type": "KernelReady",
            "status": "False",
            "reason": "Custom",
            "message": "a site-specific condition nobody documented",
        },
    ]
    with KubeletReportingProblem(cp, node, conditions):
        wait_for("Ready=False from the kubelet", lambda: ready(cp, node)["status"] == "False", 30)
        wait_for(
            "not-ready NoExecute taint",
            lambda: ("node.kubernetes.io/not-ready", "NoExecute") in taint_keys(cp, node),
            30,
        )
        wait_terminating_on(cp, NS, "db-s1", node, timeout=60)
        assert ready(cp, node)["reason"] == "KubeletNotReady"  # the controller kept our report
        plugin.record("kubelet-reports-not-ready", "kubelet alive, CNI down", "after eviction")
        code, d = plugin.diagnose_json()
    assert code == 3
    found = next(n for n in d["nodes"] if n["name"] == node)
    assert found["cause"]["code"] == "network-plugin"
    assert "NetworkPluginNotReady" in found["cause"]["evidence"][0]
    conds = {c["type"]: c for c in found["conditions"]}
    assert conds["KernelDeadlock"]["problem"] is True
    assert conds["KernelReady"]["problem"] is False  # unknown custom condition: shown, not judged
    assert found["action"]["code"] == "investigate"
    cp.start_kubelet(node)
    wait_node_ready(cp, node)


def test_cloud_provider_shutdown_taint_is_evidence(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    cp, node = control_plane, "flaky-s2"
    cp.add_failable_node(node)
    wait_node_ready(cp, node)
    cp.apply(w.namespace(NS), w.statefulset(NS, "db-s2", prefer=node, toleration_seconds=5))
    wait_running_on(cp, NS, "db-s2", node)
    cp.stop_kubelet(node)
    wait_node_unknown(cp, node)
    # No cloud provider runs here: add the taint its node lifecycle controller sets for an
    # instance that is shut down.
    cp.kubectl("taint", "node", node, f"{CLOUD_SHUTDOWN}:NoSchedule")
    wait_terminating_on(cp, NS, "db-s2", node, timeout=60)
    plugin.record(
        "cloud-shutdown",
        "cloud provider reports the instance shut down",
        "after eviction (taint added by the test in place of a cloud controller)",
    )
    code, d = plugin.diagnose_json()
    assert code == 3
    found = next(n for n in d["nodes"] if n["name"] == node)
    assert found["cause"]["code"] == "machine-shutdown"
    assert any("cloud provider" in e for e in found["shutdownEvidence"])
    proc = plugin.run("remediate", node, "-o", "json")  # no attestation needed: evidence exists
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cp.kubectl("taint", "node", node, f"{CLOUD_SHUTDOWN}-")
    cp.start_kubelet(node)
    wait_node_ready(cp, node)


def test_pressure_on_a_ready_node_is_listed_not_failed(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    cp, node = control_plane, "flaky-s3"
    cp.add_failable_node(node)
    wait_node_ready(cp, node)
    cp.stop_kubelet(node)
    conditions = [
        {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
        },
        {
            "type": "DiskPressure",
            "status": "True",
            "reason": "KubeletHasDiskPressure",
            "message": "kubelet has disk pressure",
        },
    ]
    with KubeletReportingProblem(cp, node, conditions):
        wait_for(
            "disk-pressure taint",
            lambda: ("node.kubernetes.io/disk-pressure", "NoSchedule") in taint_keys(cp, node),
            30,
        )
        plugin.record("disk-pressure-on-ready-node", "kubelet reports DiskPressure", "Ready node")
        code, d = plugin.diagnose_json()
    assert code == 3
    found = next(n for n in d["nodes"] if n["name"] == node)
    assert found["failed"] is False and found["cause"]["code"] == "conditions"
    assert "DiskPressure=True" in found["cause"]["summary"]
    # kwok re-initialises a node only when it is not Ready: clear the pressure as a kubelet would.
    cp.kubectl(
        "patch",
        "node",
        node,
        "--subresource=status",
        "--type=strategic",
        "-p",
        '{"status":{"conditions":[{"type":"DiskPressure","status":"False",'
        '"reason":"KubeletHasNoDiskPressure"}]}}',
    )
    cp.start_kubelet(node)
    wait_for(
        "disk-pressure taint lifted",
        lambda: ("node.kubernetes.io/disk-pressure", "NoSchedule") not in taint_keys(cp, node),
        30,
    )
