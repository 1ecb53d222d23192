"""Module fixture: a real control plane of each end-to-end test module's own, torn down (and
waited for) when the module ends, so that no module sees another's nodes, pods or timers
whatever the order the modules run in, on one worker or several (see tests/conftest.py).

The control plane is the newest supported Kubernetes minor, or the one $NODEFAIL_K8S_VERSION
names (e.g. 1.26; tests/e2e/test_versions.py also runs on each minor of $NODEFAIL_MATRIX).
Component logs are copied to $NODEFAIL_E2E_LOGS (default .e2e-logs/), one folder per control
plane, when a test failed.
With NODEFAIL_RECORD=1 the scenarios write their snapshots into tests/fixtures/ (on another
minor than the default: tests/fixtures/v1.MINOR/, so the default's recordings stay as they are).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.controlplane import (
    HEALTHY_ZONE,
    REPO,
    SHARED_NODE,
    ControlPlane,
    build_binaries,
    requested_version,
)
from tests.oracles import premises
from tests.oracles.invariants import check_data

HEALTHY_NODES = [f"healthy-{i}" for i in range(3)]
FIXTURES = REPO / "tests" / "fixtures"
_failed: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed:
        _failed.append(report.nodeid)


@pytest.fixture(scope="module")
def control_plane(request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    """This module's own control plane (about 10 s to start, less than any scenario's wait)."""
    with running_control_plane(requested_version(), label=request.module.__name__) as cp:
        yield cp


@contextmanager
def running_control_plane(
    version: str | None,
    controller_manager_args: dict[str, str] | None = None,
    label: str = "control-plane",
) -> Iterator[ControlPlane]:
    """A started control plane of one Kubernetes minor (None: the newest) with the healthy
    nodes, stopped on exit (logs kept, in a folder named after `label`, when a test failed)."""
    bindir = build_binaries(version)
    label = label.rsplit(".", 1)[-1]
    workdir = Path(tempfile.mkdtemp(prefix=f"nodefail-e2e-{label}-"))
    cp = ControlPlane(bindir, workdir, controller_manager_args=dict(controller_manager_args or {}))
    try:
        cp.start()
        for name in HEALTHY_NODES:
            cp.node_modules[name] = SHARED_NODE
            cp.add_node(name, HEALTHY_ZONE)
        yield cp
    finally:
        logs = None
        if _failed:
            logs = Path(os.environ.get("NODEFAIL_E2E_LOGS", REPO / ".e2e-logs")) / workdir.name
            print(f"\n[e2e] a test failed: component logs kept in {logs}", file=sys.stderr)
        cp.stop(keep_logs_to=logs)
        shutil.rmtree(workdir, ignore_errors=True)


def without_controller(controller: str, label: str) -> Iterator[ControlPlane]:
    """A control plane of its own, of the version asked for, whose kube-controller-manager runs
    every controller but `controller` (--controllers=*,-NAME): a module fixture's body."""
    from tests.e2e.controlplane import requested_version

    args = {"controllers": f"*,-{controller}"}
    with running_control_plane(requested_version(), args, label=label) as cp:
        yield cp


def nodefail_bin() -> str:
    """The installed plugin, as `kubectl nodefail` would find it on PATH."""
    found = shutil.which("kubectl-nodefail", path=str(Path(sys.executable).parent))
    if not found:
        raise RuntimeError(
            "kubectl-nodefail is not installed next to this Python (pip install -e .)"
        )
    return found


def version_fixtures(cp: ControlPlane) -> Path:
    """tests/fixtures/v1.MINOR/: the per-minor recordings of tests/e2e/test_versions.py."""
    return FIXTURES / f"v1.{cp.server_minor()}"


@dataclass
class Run:
    command: str
    confirmed: bool
    start: datetime
    end: datetime


# The flags that say which cluster and as whom (kubectl's): a premise check dumps the cluster the
# diagnosis read, the way it read it.
CONNECTION_VALUED = {
    "--kubeconfig", "--context", "--cluster", "--user", "-s", "--server", "--token", "--as",
    "--as-group", "--as-uid", "--certificate-authority", "--client-certificate", "--client-key",
    "--tls-server-name", "--request-timeout", "--deadline",
}  # fmt: skip
CONNECTION_SWITCHES = {"--insecure-skip-tls-verify", "--disable-compression"}


def _connection_flags(args: tuple[str, ...]) -> tuple[str, ...]:
    out: list[str] = []
    it = iter(args)
    for arg in it:
        name = arg.split("=", 1)[0]
        if name in CONNECTION_SWITCHES or (name in CONNECTION_VALUED and "=" in arg):
            out.append(arg)
        elif name in CONNECTION_VALUED:
            out += [arg, next(it, "")]
    return tuple(out)


class Plugin:
    """Runs the installed `kubectl nodefail` through kubectl's own plugin lookup, and keeps the
    time window of every run (to attribute the apiserver's audit entries to runs)."""

    def __init__(self, cp: ControlPlane) -> None:
        self.cp = cp
        self.env = {
            **cp.env,
            "PATH": f"{Path(nodefail_bin()).parent}{os.pathsep}{cp.env['PATH']}",
            "KUBECONFIG": str(cp.kubeconfig),
        }
        self.runs: list[Run] = []
        self.premise_checks = 0
        # Recordings of another minor than the default go to their own folder.
        self.fixtures = FIXTURES if requested_version() is None else version_fixtures(cp)

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        start = datetime.now(timezone.utc)
        proc = subprocess.run(
            [str(self.cp.bindir / "kubectl"), "nodefail", *args],
            capture_output=True,
            text=True,
            env=self.env,
            check=False,
        )
        self.runs.append(Run(args[0], "--confirm" in args, start, datetime.now(timezone.utc)))
        return proc

    def diagnose_json(self, *args: str) -> tuple[int, Any]:
        """Diagnose the live cluster; every diagnosis is checked for self-contradictions."""
        proc = self.run("diagnose", "-o", "json", *args)
        if proc.returncode not in (0, 3):
            raise AssertionError(f"diagnose failed ({proc.returncode}): {proc.stderr}")
        data = json.loads(proc.stdout)
        violations = check_data(data)
        if violations:
            raise AssertionError(
                "the diagnosis contradicts itself:\n" + "\n".join(str(v) for v in violations)
            )
        self.check_premises(_connection_flags(args))
        return proc.returncode, data

    def check_premises(self, connection: tuple[str, ...] = ()) -> None:
        """The cluster as it is now, dumped and diagnosed from that file: every claim's premise
        is re-read from the raw dump by the independent checker (analysis/premises.py). A
        moment after the live diagnosis, so the same situation, from one snapshot."""
        self.premise_checks += 1
        path = self.cp.workdir / f"premises-{os.getpid()}-{self.premise_checks}.json"
        dumped = self.run("dump", *connection, "-f", str(path))
        if dumped.returncode != 0:
            raise AssertionError(f"dump failed ({dumped.returncode}): {dumped.stderr}")
        self._premises_hold(path)
        path.unlink()

    def _premises_hold(self, path: Path) -> None:
        proc = self.run("diagnose", "--from-file", str(path), "-o", "json")
        if proc.returncode not in (0, 3):
            raise AssertionError(f"diagnose --from-file failed ({proc.returncode}): {proc.stderr}")
        dump = json.loads(path.read_text())
        false = premises.check(dump, json.loads(proc.stdout))
        # the plan of the same moment: what its steps say of the pods they release or leave
        # stuck rests on facts of that dump (a plan from a dump is a dry run: exit 0, 4 or 5)
        planned = self.run("remediate", "--from-file", str(path), "-o", "json")
        if planned.returncode not in (0, 4, 5):
            raise AssertionError(
                f"remediate --from-file failed ({planned.returncode}): {planned.stderr}"
            )
        false += premises.check_plan(dump, json.loads(planned.stdout))
        if false:
            raise AssertionError(
                f"claims with a false premise ({path.name}):\n" + "\n".join(map(str, false))
            )

    def record(self, name: str, scenario: str, moment: str, nodes: tuple[str, ...] = ()) -> Path:
        """Dump the cluster (or just these nodes' part of it) now; into the fixtures folder
        when NODEFAIL_RECORD=1."""
        recording = os.environ.get("NODEFAIL_RECORD") == "1"
        target = self.fixtures if recording else self.cp.workdir
        target.mkdir(parents=True, exist_ok=True)
        path = target / f"{name}.json"
        # a fixture keeps whole objects (the unit tests cut and redact them themselves); a dump
        # made during a test run is redacted, as the user's is
        whole = ("--no-redact",) if recording else ()
        proc = self.run("dump", *nodes, *whole, "-f", str(path))
        if proc.returncode != 0:
            raise AssertionError(f"dump failed ({proc.returncode}): {proc.stderr}")
        doc = json.loads(path.read_text())
        doc["notes"] = {
            "scenario": scenario,
            "moment": moment,
            "recordedBy": "tests/e2e (make record)",
        }
        path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        self._premises_hold(path)
        return path


@pytest.fixture(scope="module")
def plugin(control_plane: ControlPlane) -> Plugin:
    return Plugin(control_plane)
