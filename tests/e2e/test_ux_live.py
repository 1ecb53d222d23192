"""The UX against the real control plane: completion of node, namespace and pod names from the
cluster (through kubectl's own plugin completion and click's bash protocol), and `version`
showing the server's version."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.e2e import workloads as w
from tests.e2e.conftest import HEALTHY_NODES, Plugin, nodefail_bin
from tests.e2e.controlplane import ControlPlane
from tests.e2e.helpers import service_account_kubeconfig, wait_running_on

pytestmark = pytest.mark.e2e
NS = "scenario-complete"


@pytest.fixture(scope="module")
def completing(
    control_plane: ControlPlane, plugin: Plugin, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    """The plugin's env, plus kubectl_complete-nodefail on PATH as the docs say to install it."""
    tools = tmp_path_factory.mktemp("complete")
    script = subprocess.run(
        [nodefail_bin(), "completion", "kubectl"], capture_output=True, text=True, check=True
    ).stdout
    exe = tools / "kubectl_complete-nodefail"
    exe.write_text(script)
    exe.chmod(0o755)
    control_plane.apply(w.namespace(NS), w.bare_pod(NS, "solo", pin=HEALTHY_NODES[0]))
    wait_running_on(control_plane, NS, "solo", HEALTHY_NODES[0])
    return {**plugin.env, "PATH": f"{tools}{os.pathsep}{plugin.env['PATH']}"}


def _kubectl_complete(cp: ControlPlane, env: dict[str, str], *words: str) -> list[str]:
    proc = subprocess.run(
        [str(cp.bindir / "kubectl"), "__complete", "nodefail", *words],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines and lines[-1].startswith(":"), proc.stdout
    return [line.split("\t")[0] for line in lines[:-1]]


def test_kubectl_completes_the_plugins_commands_and_node_names(
    control_plane: ControlPlane, completing: dict[str, str]
) -> None:
    assert "diagnose" in _kubectl_complete(control_plane, completing, "")
    nodes = _kubectl_complete(control_plane, completing, "diagnose", "healthy-")
    assert set(HEALTHY_NODES) <= set(nodes)
    assert all(n.startswith("healthy-") for n in nodes)
    # a node already typed is not offered again
    again = _kubectl_complete(control_plane, completing, "diagnose", HEALTHY_NODES[0], "healthy-")
    assert HEALTHY_NODES[0] not in again and HEALTHY_NODES[1] in again


def test_namespaces_and_pods_for_explain(
    control_plane: ControlPlane, completing: dict[str, str]
) -> None:
    namespaces = _kubectl_complete(control_plane, completing, "diagnose", "-n", "scenario-c")
    assert NS in namespaces
    pods = _kubectl_complete(control_plane, completing, "diagnose", "--explain", f"{NS}/")
    assert pods == [f"{NS}/solo"]


def test_bash_protocol_completes_node_names(completing: dict[str, str]) -> None:
    proc = subprocess.run(
        [nodefail_bin()],
        capture_output=True,
        text=True,
        env={
            **completing,
            "_KUBECTL_NODEFAIL_COMPLETE": "bash_complete",
            "COMP_WORDS": "kubectl-nodefail remediate heal",
            "COMP_CWORD": "2",
        },
        check=False,
    )
    assert proc.returncode == 0 and proc.stderr == ""
    assert {f"plain,{n}" for n in HEALTHY_NODES} <= set(proc.stdout.split())


def test_version_shows_the_server(plugin: Plugin, tmp_path: Path) -> None:
    proc = plugin.run("version")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("kubectl-nodefail ")
    assert lines[1].startswith("JSON decoder: ")
    assert lines[2].startswith("Server: v1.36.1 (context ")
    # a cluster that is gone: said in the output, exit 0
    config = yaml.safe_load(plugin.cp.kubeconfig.read_text())
    for cluster in config["clusters"]:
        cluster["cluster"]["server"] = "https://127.0.0.1:9"
    kubeconfig = tmp_path / "gone"
    kubeconfig.write_text(yaml.safe_dump(config))
    proc = plugin.run("version", "--kubeconfig", str(kubeconfig))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[2].startswith(
        "Server: unknown: The connection to the server 127.0.0.1:9 was refused"
    )


def test_a_typod_namespace_is_one_warning_with_the_closest_name(
    control_plane: ControlPlane, plugin: Plugin, completing: dict[str, str], tmp_path: Path
) -> None:
    """`-n` with a namespace the cluster does not have reads no pods, which looks like an
    all-clear: one stderr line names the closest namespace; the exit code is the one the
    right namespace gets. Where RBAC forbids reading namespaces, nothing is said."""
    right = plugin.run("diagnose", "-n", NS)
    typo = plugin.run("diagnose", "-n", NS.replace("complete", "compelte"))
    assert typo.returncode == right.returncode, typo.stderr
    assert typo.stderr.splitlines() == [
        f"warning: namespace '{NS.replace('complete', 'compelte')}' not found "
        f"(did you mean {NS}?): none of its pods were read"
    ]
    assert "warning: namespace" not in right.stderr
    dumped = plugin.run("dump", "-n", "no-such-namespace-at-all")
    assert dumped.returncode == 0 and dumped.stderr.splitlines() == [
        "warning: namespace 'no-such-namespace-at-all' not found: none of its pods were read"
    ]
    # the least-privilege role reads no namespaces but kube-system: a 403, said nothing of
    roles = plugin.run("rbac", "diagnose")
    control_plane.kubectl("apply", "-f", "-", stdin=roles.stdout)
    reader = service_account_kubeconfig(
        control_plane, tmp_path, "ns-reader", ["kubectl-nodefail-diagnose"], NS
    )
    limited = plugin.run("diagnose", "--kubeconfig", str(reader), "-n", "shopp")
    assert limited.returncode in (0, 3) and "Traceback" not in limited.stderr
    assert "namespace" not in limited.stderr, limited.stderr
