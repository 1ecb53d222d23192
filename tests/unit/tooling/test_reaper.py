"""bench/reaper.py on real processes: a control plane whose owner dies is stopped, its
logs kept, its folder removed; one whose owner stopped it is left to the owner; nothing that
does not name the folder is touched."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench import reaper
from tests.e2e.controlplane import wait_for

REPO = Path(__file__).resolve().parents[3]
SLEEPER = "import time; time.sleep(600)"


def _alive(proc: subprocess.Popen[bytes]) -> bool:
    return proc.poll() is None


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _component(started: list[subprocess.Popen[bytes]], argv_path: Path) -> subprocess.Popen[bytes]:
    """A detached process naming a path in its command line, as etcd names its data dir."""
    proc = subprocess.Popen([sys.executable, "-c", SLEEPER, str(argv_path)], start_new_session=True)
    started.append(proc)
    return proc


def _owner(
    started: list[subprocess.Popen[bytes]], order: dict[str, object], stand_down: bool
) -> tuple[subprocess.Popen[bytes], int]:
    """A process that starts a reaper and then either stands it down or waits to be killed;
    with its reaper's pid."""
    script = textwrap.dedent(
        f"""
        import json, sys, time
        from bench import reaper
        guard = reaper.start(json.loads(sys.argv[1]))
        print(guard.pid, flush=True)
        if {stand_down!r}:
            reaper.stand_down(guard)
            print("stood down", flush=True)
        time.sleep(600)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script, json.dumps(order)], cwd=REPO, stdout=subprocess.PIPE
    )
    started.append(proc)
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def _order(tmp_path: Path) -> tuple[dict[str, object], Path, Path]:
    workdir = tmp_path / "nodefail-e2e-x-abc"
    (workdir / "clusters" / "logs").mkdir(parents=True)
    (workdir / "clusters" / "logs" / "etcd.log").write_text("etcd said this\n")
    (workdir / "logs").mkdir()
    (workdir / "logs" / "kwok-n1.log").write_text("kwok said that\n")
    marker = tmp_path / "deleted"
    order = {
        "delete": [  # as kwokctl's delete, it removes the cluster's folder and its logs
            sys.executable,
            "-c",
            f"import shutil; shutil.rmtree({str(workdir / 'clusters')!r}); "
            f"open({str(marker)!r}, 'w').write('kwokctl delete')",
        ],
        "env": dict(os.environ),
        "workdir": str(workdir),
        "keep_logs_from": [str(workdir / "clusters" / "logs"), str(workdir / "logs")],
        "keep_logs_to": str(tmp_path / "kept"),
    }
    return order, marker, workdir


def test_an_owner_that_dies_leaves_nothing_running(
    tmp_path: Path, started: list[subprocess.Popen[bytes]]
) -> None:
    order, marker, workdir = _order(tmp_path)
    component = _component(started, workdir / "clusters" / "etcd-data")
    neighbour = _component(started, tmp_path / "nodefail-e2e-x-abcd" / "etcd-data")
    owner, reaper_pid = _owner(started, order, stand_down=False)
    os.kill(owner.pid, signal.SIGKILL)
    wait_for("the component is killed", lambda: not _alive(component), 30, 0.05)
    wait_for("the folder is removed", lambda: not workdir.exists(), 30, 0.05)
    assert marker.read_text() == "kwokctl delete"
    kept = tmp_path / "kept"
    assert (kept / "etcd.log").read_text() == "etcd said this\n"
    assert (kept / "kwok-n1.log").read_text() == "kwok said that\n"
    assert _alive(neighbour)  # a folder whose name only starts the same is not this one
    wait_for("the reaper ends", lambda: _ended(reaper_pid), 30, 0.05)


def _ended(pid: int) -> bool:
    """Gone, or a zombie nobody reaped yet."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_an_owner_that_stopped_its_control_plane_sends_the_reaper_away(
    tmp_path: Path, started: list[subprocess.Popen[bytes]]
) -> None:
    order, marker, workdir = _order(tmp_path)
    component = _component(started, workdir / "clusters" / "etcd-data")
    owner, reaper_pid = _owner(started, order, stand_down=True)
    assert owner.stdout is not None and owner.stdout.readline() == b"stood down\n"
    assert _ended(reaper_pid)
    os.kill(owner.pid, signal.SIGKILL)
    owner.wait()
    time.sleep(1)  # had the reaper stayed, this is when it would act
    assert _alive(component) and workdir.exists() and not marker.exists()


def test_only_processes_naming_the_folder_are_found(
    tmp_path: Path, started: list[subprocess.Popen[bytes]]
) -> None:
    folder = tmp_path / "nodefail-e2e-y-abc"
    inside = _component(started, folder / "kubeconfig.yaml")
    exact = _component(started, folder)
    longer = _component(started, tmp_path / "nodefail-e2e-y-abcd")
    elsewhere = _component(started, Path("/var" + str(folder)) / "kubeconfig.yaml")
    flag = subprocess.Popen(
        [sys.executable, "-c", SLEEPER, f"--data-dir={folder}/etcd"], start_new_session=True
    )
    started.append(flag)
    wait_for(
        "the processes start", lambda: len(reaper.processes_naming(str(folder))) == 3, 30, 0.05
    )
    assert sorted(reaper.processes_naming(str(folder))) == sorted([inside.pid, exact.pid, flag.pid])
    assert longer.pid not in reaper.processes_naming(str(folder))
    assert elsewhere.pid not in reaper.processes_naming(str(folder))
