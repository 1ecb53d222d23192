"""tests/e2e/reaper.py on real processes: a control plane whose owner dies is stopped, its
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
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e import reaper

REPO = Path(__file__).resolve().parents[2]
SLEEPER = "import time; time.sleep(600)"


def _until(what: str, check: Callable[[], bool], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds} s: {what}")
        time.sleep(0.1)


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
) -> subprocess.Popen[bytes]:
    """A process that starts a reaper and then either stands it down or waits to be killed."""
    script = textwrap.dedent(
        f"""
        import json, sys, time
        from tests.e2e import reaper
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
    return proc


def _order(tmp_path: Path) -> tuple[dict[str, object], Path]:
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
    return order, marker


def test_an_owner_that_dies_leaves_nothing_running(
    tmp_path: Path, started: list[subprocess.Popen[bytes]]
) -> None:
    order, marker = _order(tmp_path)
    workdir = Path(str(order["workdir"]))
    component = _component(started, workdir / "clusters" / "etcd-data")
    neighbour = _component(started, tmp_path / "nodefail-e2e-x-abcd" / "etcd-data")
    owner = _owner(started, order, stand_down=False)
    assert owner.stdout is not None
    reaper_pid = int(owner.stdout.readline())
    os.kill(owner.pid, signal.SIGKILL)
    _until("the component is killed", lambda: not _alive(component))
    _until("the folder is removed", lambda: not workdir.exists())
    assert marker.read_text() == "kwokctl delete"
    kept = tmp_path / "kept"
    assert (kept / "etcd.log").read_text() == "etcd said this\n"
    assert (kept / "kwok-n1.log").read_text() == "kwok said that\n"
    assert _alive(neighbour)  # a folder whose name only starts the same is not this one
    _until(
        "the reaper ends", lambda: not Path(f"/proc/{reaper_pid}").exists() or _zombie(reaper_pid)
    )


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_an_owner_that_stopped_its_control_plane_sends_the_reaper_away(
    tmp_path: Path, started: list[subprocess.Popen[bytes]]
) -> None:
    order, marker = _order(tmp_path)
    workdir = Path(str(order["workdir"]))
    component = _component(started, workdir / "clusters" / "etcd-data")
    owner = _owner(started, order, stand_down=True)
    assert owner.stdout is not None
    reaper_pid = int(owner.stdout.readline())
    assert owner.stdout.readline() == b"stood down\n"
    assert not Path(f"/proc/{reaper_pid}").exists() or _zombie(reaper_pid)
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
    _until("the processes start", lambda: len(reaper.processes_naming(str(folder))) == 2)
    assert sorted(reaper.processes_naming(str(folder))) == sorted([inside.pid, exact.pid])
    assert longer.pid not in reaper.processes_naming(str(folder))
