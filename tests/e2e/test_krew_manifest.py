"""The krew release, installed the way kubectl users install plugins: the real krew (v0.4.3)
installs krew-manifest.yaml with the archive `make release` built, offline, into an isolated
KREW_ROOT; kubectl then runs the krew-installed plugin against the real control plane with a
python3 that has none of the plugin's dependencies. A corrupted archive is refused (sha256);
uninstall removes the plugin."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_nodefail import __version__
from tests.e2e import workloads as w
from tests.e2e.controlplane import ControlPlane
from tests.e2e.helpers import wait_node_ready, wait_node_unknown, wait_running_on
from tests.e2e.release import bare_venv, built_release, pythons

pytestmark = (
    pytest.mark.e2e
)  # one parallel worker with test_release/test_krew_manifest: tests/conftest.py
NS = "scenario-krew"
NODE = "krew-a"


@dataclass
class Krew:
    cp: ControlPlane
    root: Path
    env: dict[str, str]

    def kubectl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.cp.bindir / "kubectl"), *args],
            capture_output=True,
            text=True,
            env=self.env,
            stdin=subprocess.DEVNULL,
            check=False,
        )


@pytest.fixture(scope="module")
def krew(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Krew]:
    """An isolated KREW_ROOT and HOME; PATH: the bare python3 first, then krew's bin (the
    installed plugins), kubectl-krew, and the system's folders. The project's venv is not on it."""
    tmp = tmp_path_factory.mktemp("krew")
    bare = bare_venv(pythons()[0], tmp / "bare")
    tools = tmp / "tools"
    tools.mkdir()
    (tools / "kubectl-krew").symlink_to(control_plane.bindir / "krew")
    root = tmp / "krew-root"
    # krew's list/uninstall refuse to run before an index exists (`krew update` clones one
    # from the network); offline, an empty git repository stands in as the default index
    index = root / "index" / "default"
    index.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(index)], check=True)
    env = {
        "PATH": os.pathsep.join([str(bare), str(root / "bin"), str(tools), "/usr/bin", "/bin"]),
        "HOME": str(tmp / "home"),
        "KREW_ROOT": str(root),
        "KUBECONFIG": str(control_plane.kubeconfig),
    }
    yield Krew(control_plane, root, env)


def test_the_bare_python_has_no_dependencies(krew: Krew) -> None:
    proc = subprocess.run(
        ["python3", "-c", "import click"], capture_output=True, env=krew.env, check=False
    )
    assert proc.returncode != 0 and b"No module named 'click'" in proc.stderr


def test_a_corrupted_archive_is_refused(krew: Krew, tmp_path: Path) -> None:
    rel = built_release()
    _, archive = rel.for_this_machine()
    bad = tmp_path / archive.name
    data = bytearray(archive.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad.write_bytes(bytes(data))
    alone = Krew(krew.cp, tmp_path / "root", {**krew.env, "KREW_ROOT": str(tmp_path / "root")})
    proc = alone.kubectl("krew", "install", f"--manifest={rel.manifest}", f"--archive={bad}")
    assert proc.returncode != 0
    sha = next(
        p["sha256"]
        for p in rel.manifest_data()["spec"]["platforms"]
        if p["uri"].endswith(f"/{archive.name}")
    )
    assert f"checksum does not match, want: {sha}, got " in proc.stderr, proc.stderr
    assert not (alone.root / "bin" / "kubectl-nodefail").exists()


@pytest.fixture(scope="module")
def installed(krew: Krew) -> subprocess.CompletedProcess[str]:
    """`kubectl krew install --manifest --archive`, offline, once for the module."""
    rel = built_release()
    _, archive = rel.for_this_machine()  # krew picks its platform by this machine's os/arch
    return krew.kubectl("krew", "install", f"--manifest={rel.manifest}", f"--archive={archive}")


def test_krew_installs_and_the_plugin_runs_on_a_bare_python(
    krew: Krew, installed: subprocess.CompletedProcess[str]
) -> None:
    proc = installed
    assert proc.returncode == 0, proc.stderr
    assert "Installed plugin: nodefail" in proc.stderr + proc.stdout
    assert (krew.root / "bin" / "kubectl-nodefail").exists()
    receipt = yaml.safe_load((krew.root / "receipts" / "nodefail.yaml").read_text())
    assert receipt["spec"]["version"] == f"v{__version__}"
    proc = krew.kubectl("krew", "list")
    # installed from a manifest file, not an index: krew calls it "detached"
    assert proc.returncode == 0 and proc.stdout.split() == ["detached/nodefail"], proc.stderr
    proc = krew.kubectl("nodefail", "version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"kubectl-nodefail {__version__} (Python 3.")
    assert "Server: v1.36.1" in proc.stdout
    # this machine's archive (linux amd64 or arm64, darwin) carries orjson for its CPython
    assert "\nJSON decoder: orjson " in proc.stdout, proc.stdout


def test_krew_installed_plugin_diagnoses_and_plans_a_dead_node(
    krew: Krew, installed: subprocess.CompletedProcess[str]
) -> None:
    assert installed.returncode == 0, installed.stderr
    cp = krew.cp
    cp.add_failable_node(NODE)
    wait_node_ready(cp, NODE)
    cp.apply(w.namespace(NS), w.statefulset(NS, "db", pin=NODE, toleration_seconds=300))
    wait_running_on(cp, NS, "db", NODE)
    code, healthy = _diagnose(krew, NODE)
    assert code == 0 and healthy["nodes"] == []
    cp.stop_kubelet(NODE)
    try:
        wait_node_unknown(cp, NODE)
        code, sick = _diagnose(krew, NODE)
        assert code == 3
        node = next(n for n in sick["nodes"] if n["name"] == NODE)
        assert node["status"] == "NotReady" and node["cause"]["code"] == "kubelet-stopped"
        db = next(p for p in sick["pods"] if p["namespace"] == NS and p["name"] == "db-0")
        assert db["controller"] == "statefulset" and db["node"] == NODE
        table = krew.kubectl("nodefail", "diagnose", NODE)
        assert table.returncode == 3, table.stderr
        assert NODE in table.stdout and "db-0" in table.stdout
        # the plan, without an attestation: refuses the destructive step, changes nothing
        plan = krew.kubectl("nodefail", "remediate", NODE, "-o", "json")
        assert plan.returncode == 4, plan.stderr
        data = json.loads(plan.stdout)
        assert data["kind"] == "RemediationPlan" and data["confirmed"] is False
        steps = {s["target"]: s for s in data["steps"]}
        assert steps.get(f"pod/{NS}/db-0", {}).get("action") == "wait", data
        # the out-of-service taint waits for an attestation that the machine is off
        assert steps[f"node/{NODE}"]["allowed"] is False, data["steps"]
        table = krew.kubectl("nodefail", "remediate", NODE)
        assert table.returncode == 4, table.stderr
        assert "DRY RUN" in table.stdout and "REFUSED" in table.stdout
    finally:
        cp.start_kubelet(NODE)
        wait_node_ready(cp, NODE, timeout=90)
        cp.kubectl("delete", "namespace", NS, "--wait=false")


def test_krew_uninstall_removes_the_plugin(
    krew: Krew, installed: subprocess.CompletedProcess[str]
) -> None:
    assert installed.returncode == 0 and (krew.root / "bin" / "kubectl-nodefail").exists()
    proc = krew.kubectl("krew", "uninstall", "nodefail")
    assert proc.returncode == 0, proc.stderr
    assert "Uninstalled plugin: nodefail" in proc.stderr + proc.stdout
    assert not (krew.root / "bin" / "kubectl-nodefail").exists()
    proc = krew.kubectl("nodefail", "version")
    assert proc.returncode != 0


def _diagnose(krew: Krew, node: str) -> tuple[int, Any]:
    proc = krew.kubectl("nodefail", "diagnose", node, "-o", "json")
    assert proc.returncode in (0, 3), proc.stderr
    return proc.returncode, json.loads(proc.stdout)
