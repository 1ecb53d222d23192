"""The brake on the real control plane: with 3 of 6 nodes not Ready at once, remediate refuses
every destructive step whatever it is handed: one node named (the brake counts every node of
the cluster, not the named ones: it counted the named ones, and planned the taint), the
attestation typed, --confirm given, or a saved plan made while only one node was down. The
API server's audit log shows no write; diagnose names the brake before every destructive
suggestion, with the node counts as premises."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane
from tests.e2e.helpers import (
    pods,
    refused_without_a_write,
    terminating,
    wait_node_ready,
    wait_node_unknown,
    wait_running_on,
)

pytestmark = pytest.mark.e2e
NS = "scenario-brake"
NODES = ("flaky-m1", "flaky-m2", "flaky-m3")  # with the 3 healthy nodes: 3 of 6 down


def test_a_mass_failure_refuses_whatever_remediate_is_handed(
    control_plane: ControlPlane, plugin: Plugin, tmp_path: Path
) -> None:
    cp, first = control_plane, NODES[0]
    for node in NODES:
        cp.add_failable_node(node)
    for node in NODES:
        wait_node_ready(cp, node)
    # bare pods never evicted: nothing but a destructive step frees them, so each node's plan
    # holds one
    lone = [w.bare_pod(NS, f"lone-{n[-1]}", pin=n, toleration_seconds=None) for n in NODES]
    for pod in lone:
        pod["spec"]["tolerations"] = w.forever_tolerations()
    cp.apply(w.namespace(NS), *lone)
    for node in NODES:
        wait_running_on(cp, NS, f"lone-{node[-1]}", node)

    # one node down: no brake; a plan saved now allows the taint
    cp.stop_kubelet(first)
    wait_node_unknown(cp, first)
    saved = tmp_path / "plan.json"
    made = plugin.run(
        "remediate", first, "--node-shutdown-confirmed", first, "--plan-out", str(saved)
    )
    assert made.returncode == 0, made.stdout + made.stderr

    for node in NODES[1:]:
        cp.stop_kubelet(node)
    for node in NODES[1:]:
        wait_node_unknown(cp, node)
    _, data = plugin.diagnose_json()
    assert data["brake"] and data["brake"]["text"].startswith("3 of 6 nodes not Ready at once")
    fields = {(p["object"], p["field"]) for p in data["brake"]["because"]}
    assert ("Node[]", "count") in fields
    for row in data["pods"]:
        if row["namespace"] == NS:
            assert row["action"]["code"] not in ("out-of-service", "force-delete"), row["action"]
            assert row["action"]["summary"].startswith("first rule out"), row["action"]

    refused_without_a_write(cp, plugin, first, saved, "3 of 6 nodes not Ready at once")
    assert not any(terminating(p) for p in pods(cp, NS, f"lone-{first[-1]}"))
