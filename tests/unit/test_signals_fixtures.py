"""Node signals, zone states and volumes, over snapshots recorded from the real control plane."""

from __future__ import annotations

import copy

import pytest

from kubectl_nodefail.analysis.nodes import classify
from tests.unit.conftest import load, pod, report_of


def test_kubelet_alive_reporting_cni_down() -> None:
    report = report_of("kubelet-reports-not-ready")
    node = next(n for n in report.nodes if n.name == "flaky-s1")
    assert node.failed and node.ready is not None and node.ready.status == "False"
    assert node.cause.code == "network-plugin" and node.cause.confidence == "high"
    assert any("(fresh)" in e for e in node.cause.evidence)  # the kubelet still renews its lease
    assert ("node.kubernetes.io/not-ready", "NoExecute") in {(t.key, t.effect) for t in node.taints}
    by_type = {c.type: c for c in node.conditions}
    assert by_type["KernelDeadlock"].problem  # a known node-problem-detector condition
    assert not by_type["KernelReady"].problem  # unknown custom condition: shown, not judged
    assert node.action is not None and node.action.code == "investigate"
    assert "do not force" in node.action.summary


def test_cloud_shutdown_taint_is_shutdown_evidence() -> None:
    report = report_of("cloud-shutdown")
    node = next(n for n in report.nodes if n.name == "flaky-s2")
    assert node.cloud_shutdown and node.cause.code == "machine-shutdown"
    assert any("cloud provider" in e for e in node.shutdown_evidence)
    db = pod(report, "scenario-signals", "db-s2-0")
    assert db.action.code == "out-of-service" and db.action.risk == "low"
    assert "--node-shutdown-confirmed" not in db.action.remediate


def test_zone_partial_disruption_stops_evictions() -> None:
    report = report_of("zone-partial-disruption")
    zone = next(z for z in report.zones if z.zone.endswith("zone-z"))
    assert (zone.state, zone.eviction, zone.nodes, zone.not_ready) == (
        "PartialDisruption",
        "stopped",
        5,
        4,
    )
    assert "network or the control plane" in zone.explanation
    others = [z for z in report.zones if not z.zone.endswith("zone-z")]
    assert others and all(z.state == "Normal" for z in others)


def test_rwo_volume_still_attached_to_the_dead_node() -> None:
    report = report_of("rwo-volume-on-dead-node", namespaces=["scenario-storage"])
    db = pod(report, "scenario-storage", "db-v1-0")
    assert any(
        "still attached to flaky-v1" in note and "ReadWriteOnce" in note for note in db.storage
    )
    assert any("force-detach" in note for note in db.storage)
    assert db.action.risk == "high"
    node = next(n for n in report.nodes if n.name == "flaky-v1")
    assert node.volumes_attached and node.volumes_attached[0].startswith("pv-db-v1")


def test_multi_attach_error_names_the_waiting_replacement() -> None:
    report = report_of("multi-attach")
    node = next(n for n in report.nodes if n.name == "flaky-v1")
    assert any("Multi-Attach errors on db-v1-0" in v for v in node.volumes_attached)


def test_disk_pressure_on_a_ready_node_is_listed_but_not_failed() -> None:
    report = report_of("disk-pressure-on-ready-node")
    node = next(n for n in report.nodes if n.name == "flaky-s3")
    assert not node.failed and node.cause.code == "conditions"
    assert node.action is not None and node.action.code == "investigate"
    assert report.problems


@pytest.mark.parametrize(
    ("message", "code"),
    [
        # The kubelet's own wording for other Ready=False causes. EDITED STATE: the recorded
        # CNI-down node with only its Ready message replaced.
        ("container runtime is down", "runtime-down"),
        ("container runtime status check may not have completed yet", "runtime-down"),
        (
            "PLEG is not healthy: pleg was last seen active 3m0s ago; threshold is 3m0s",
            "pleg-unhealthy",
        ),
        ("node is shutting down", "machine-shutdown"),
        ("something else entirely", "resource-pressure"),  # KernelDeadlock=True is also reported
    ],
)
def test_ready_false_causes_from_the_kubelet_message(message: str, code: str) -> None:
    snap = load("kubelet-reports-not-ready")
    node = copy.deepcopy(next(n for n in snap.nodes if n["metadata"]["name"] == "flaky-s1"))
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    ready["message"] = message
    assert classify(node, snap, snap.captured_at).code == code
