"""Many clusters on two real control planes: both diagnosed concurrently and grouped; then one
is stopped and is reported in its own group (exit 11) without hiding the other."""

from __future__ import annotations

import base64
import json
import shlex
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_nodefail.common import attestation
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import HEALTHY_ZONE, ControlPlane, wait_for

pytestmark = pytest.mark.e2e


def _renamed(kubeconfig: Path, name: str) -> dict[str, Any]:
    """kwokctl names everything after the cluster; both clusters share that name."""
    config = yaml.safe_load(kubeconfig.read_text())
    for section in ("clusters", "users", "contexts"):
        for item in config[section]:
            item["name"] = name
    for item in config["contexts"]:
        item["context"]["cluster"] = item["context"]["user"] = name
    # inline the certificates: a stopped cluster's files go with it, its kubeconfig must not
    for section, key in (("clusters", "cluster"), ("users", "user")):
        for item in config[section]:
            for field in ("certificate-authority", "client-certificate", "client-key"):
                if field in item[key]:
                    data = Path(item[key].pop(field)).read_bytes()
                    item[key][f"{field}-data"] = base64.b64encode(data).decode()
    return dict(config)


@pytest.fixture(scope="module")
def second(control_plane: ControlPlane) -> Iterator[ControlPlane]:
    workdir = Path(tempfile.mkdtemp(prefix="nodefail-e2e-second-"))
    cp = ControlPlane(control_plane.bindir, workdir)
    try:
        cp.start()
        cp.add_node("second-0", HEALTHY_ZONE)
        yield cp
    finally:
        cp.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="module")
def merged(
    control_plane: ControlPlane, second: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    first, other = (
        _renamed(control_plane.kubeconfig, "first"),
        _renamed(second.kubeconfig, "second"),
    )
    for section in ("clusters", "users", "contexts"):
        first[section] += other[section]
    first["current-context"] = "first"
    path = tmp_path_factory.mktemp("contexts") / "kubeconfig"
    path.write_text(yaml.safe_dump(first))
    return path


def test_suggested_commands_name_the_cluster_diagnosed(
    control_plane: ControlPlane, plugin: Plugin, second: ControlPlane, merged: Path, tmp_path: Path
) -> None:
    """Diagnosed with --context first while the kubeconfig's current context is second: every
    suggested command carries --kubeconfig and --context first (issue 36 item 1), and pasted,
    with the attestation typed, plans for the cluster that was diagnosed, not the current one."""
    config = yaml.safe_load(merged.read_text())
    config["current-context"] = "second"
    elsewhere = tmp_path / "current-is-second"
    elsewhere.write_text(yaml.safe_dump(config))
    cp, node = control_plane, "flaky-ctx"
    cp.add_failable_node(node)
    cp.apply(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "scenario-ctx"}},
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "pinned", "namespace": "scenario-ctx"},
            "spec": {
                "nodeName": node,
                "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9"}],
                "tolerations": [{"operator": "Exists", "effect": "NoExecute"}],
            },
        },
    )
    cp.stop_kubelet(node)
    wait_for(f"{node} Unknown", lambda: _ready_status(cp, node) == "Unknown", 90)
    proc = plugin.run(
        "diagnose", "--kubeconfig", str(elsewhere), "--context", "first", "-o", "json"
    )
    data = json.loads(proc.stdout)
    commands = [
        a[k]
        for a in [n.get("action") or {} for n in data["nodes"]]
        + [p["action"] for p in data["pods"]]
        for k in ("remediate", "kubectl")
        if a.get(k)
    ]
    assert commands, data
    carried = f"--kubeconfig {elsewhere} --context first "
    assert all(carried in c for c in commands), commands
    pod = next(p for p in data["pods"] if p["name"] == "pinned")
    pasted = shlex.split(pod["action"]["remediate"].replace(attestation.PLACEHOLDER, node))
    assert pasted[:3] == ["kubectl", "nodefail", "remediate"], pasted
    plan = plugin.run(*pasted[2:], "-o", "json")
    assert plan.returncode in (0, 4), plan.stdout + plan.stderr
    assert json.loads(plan.stdout)["boundTo"]["context"] == "first"
    table = plugin.run("diagnose", "--kubeconfig", str(elsewhere), "--all-contexts")
    first = table.stdout[table.stdout.index("=== context first") :]
    assert "remediate --kubeconfig" in first and "--context first" in first, table.stdout


def test_all_contexts_then_one_cluster_stopped(
    plugin: Plugin, second: ControlPlane, merged: Path
) -> None:
    proc = plugin.run("diagnose", "--all-contexts", "--kubeconfig", str(merged), "-o", "json")
    data = json.loads(proc.stdout)
    assert [c["context"] for c in data["clusters"]] == ["first", "second"], proc.stderr
    by_name = {c["context"]: c for c in data["clusters"]}
    assert by_name["second"]["exitCode"] == 0
    assert by_name["second"]["diagnosis"]["summary"]["problems"] is False
    assert by_name["second"]["diagnosis"]["nodesTotal"] == 1
    assert by_name["first"]["exitCode"] in (0, 3) and "diagnosis" in by_name["first"]
    assert proc.returncode == data["exitCode"] == max(c["exitCode"] for c in data["clusters"])

    second.stop()
    proc = plugin.run(
        "diagnose", "--context", "second", "--context", "first", "--kubeconfig", str(merged)
    )
    assert proc.returncode == 11, proc.stdout + proc.stderr
    out = proc.stdout
    assert "=== context second: error (exit 11)\nThe connection to the server " in out
    first_group = out[out.index("=== context first: ") :]
    assert first_group.split("\n", 1)[0] in (
        "=== context first: nothing wrong (exit 0)",
        "=== context first: problems found (exit 3)",
    )
    assert "nodes" in first_group.split("\n", 2)[1]


def _ready_status(cp: ControlPlane, node: str) -> str:
    conditions = cp.get("node", node)["status"].get("conditions") or []
    return next((c["status"] for c in conditions if c["type"] == "Ready"), "")
