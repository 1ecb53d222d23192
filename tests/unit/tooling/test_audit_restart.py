"""The audit's kube-controller-manager restart (tests/audit/restart.py): which batch has it,
and the stop and start again of one process as kwokctl left it (tests/e2e/components.py, on a
stand-in process under the component's name: the control plane's own restart is proven by the
audit and by tests/e2e/test_eviction_clock.py, its stop without a start by
tests/e2e/test_no_leader.py)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.audit import restart
from tests.e2e import components


def test_one_regular_batch_per_seed_from_the_first_seed_on() -> None:
    assert all(restart.restart_batch(s, b) is None for s in range(2000, 2068) for b in range(3))
    for seed in range(restart.RESTART_SEED, restart.RESTART_SEED + 40):
        drawn = {b: restart.restart_batch(seed, b) for b in (0, 1)}
        chosen = [b for b, delay in drawn.items() if delay is not None]
        assert len(chosen) == 1
        delay = drawn[chosen[0]]
        assert delay is not None and restart.DELAY[0] <= delay <= restart.DELAY[1]
    both = {restart.restart_batch(s, 0) is None for s in range(2068, 2072)}
    assert both == {True, False}  # batch 0 in some seeds, batch 1 in others


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def _running(tmp_path: Path, component: str) -> Iterator[tuple[Path, subprocess.Popen[bytes]]]:
    """A stand-in process under the component's name, as kwokctl leaves one (its pid file,
    logs folder); it and every process started again from it are gone afterwards."""
    sleep = shutil.which("sleep")
    assert sleep
    for sub in ("bin", "pids", "logs"):
        (tmp_path / sub).mkdir()
    binary = tmp_path / "bin" / component
    binary.symlink_to(sleep)
    first = subprocess.Popen([str(binary), "60"], cwd=tmp_path, env={**os.environ, "KCM_MARK": "x"})
    (tmp_path / "pids" / f"{component}.pid").write_text(str(first.pid))
    try:
        yield binary, first
    finally:
        for started in components.STARTED:
            started.kill()
            started.wait(5)
        components.STARTED.clear()
        first.kill()
        first.wait(5)


def test_the_process_is_started_again_as_it_was(tmp_path: Path) -> None:
    with _running(tmp_path, restart.COMPONENT) as (binary, first):
        again = restart.restart(tmp_path)
        first.wait(5)
        assert again != first.pid
        assert (tmp_path / "pids" / f"{restart.COMPONENT}.pid").read_text() == str(again)
        proc = Path(f"/proc/{again}")
        for _ in range(50):
            if (proc / "cmdline").read_bytes():
                break
            time.sleep(0.1)
        assert (proc / "cmdline").read_bytes().split(b"\0")[:2] == [str(binary).encode(), b"60"]
        assert b"KCM_MARK=x" in (proc / "environ").read_bytes().split(b"\0")
        assert os.readlink(proc / "cwd") == str(tmp_path)
        assert _alive(again)


def test_a_pid_that_is_not_the_component_is_not_touched(tmp_path: Path) -> None:
    (tmp_path / "pids").mkdir()
    other = subprocess.Popen([shutil.which("sleep") or "sleep", "60"])
    (tmp_path / "pids" / f"{restart.COMPONENT}.pid").write_text(str(other.pid))
    try:
        with pytest.raises(RuntimeError, match="is not kube-controller-manager"):
            restart.restart(tmp_path)
        assert _alive(other.pid)
    finally:
        other.kill()
        other.wait(5)


def test_a_stopped_component_stays_stopped_until_started(tmp_path: Path) -> None:
    with _running(tmp_path, "kube-scheduler") as (binary, first):
        stopped = components.stop(tmp_path, "kube-scheduler")
        first.wait(5)
        assert not _alive(first.pid)
        assert stopped.argv == (str(binary), "60")
        assert not components.STARTED  # nothing started by stop
        again = stopped.start()
        assert _alive(again)
        assert (tmp_path / "pids" / "kube-scheduler.pid").read_text() == str(again)
