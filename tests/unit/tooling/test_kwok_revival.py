"""tests/e2e/controlplane.py: a kwok that exits by itself (kwok v0.8.0's race at start, "fatal
error: concurrent map writes") is started again and it is said; one the test stopped is not;
one that keeps dying is left dead after KWOK_REVIVALS. With a stand-in kwok script: what is
under test is the harness's bookkeeping, not kwok."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.controlplane import ControlPlane, wait_for

DIES_ONCE = """#!/bin/sh
if [ ! -e "{marker}" ]; then
  touch "{marker}"
  echo "fatal error: concurrent map writes"
  exit 2
fi
exec sleep 600
"""
ALWAYS_DIES = """#!/bin/sh
echo "panic: no such stage"
exit 2
"""


@pytest.fixture
def plane(tmp_path: Path) -> Iterator[ControlPlane]:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    cp = ControlPlane(bindir, tmp_path / "work")
    (tmp_path / "work").mkdir()
    yield cp
    for name in list(cp.kwoks):
        cp.stop_kubelet(name)


def _kwok(cp: ControlPlane, script: str) -> Path:
    path = cp.bindir / "kwok"
    path.write_text(script)
    path.chmod(0o755)
    return cp.workdir / "stages.yaml"


def test_a_kwok_that_died_at_start_is_started_again_and_said(
    plane: ControlPlane, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _kwok(plane, DIES_ONCE.format(marker=tmp_path / "died"))
    plane.start_kubelet("flaky-a", config)
    first = plane.kwoks["flaky-a"]
    wait_for("a second kwok runs", lambda: plane.kwoks["flaky-a"] is not first, 20, 0.05)
    second = plane.kwoks["flaky-a"]
    time.sleep(0.5)
    assert second.poll() is None  # the second one lives
    said = capsys.readouterr().out
    assert "[e2e] kwok for flaky-a exited by itself (code 2" in said
    assert "fatal error: concurrent map writes" in said and "started again" in said


def test_a_kwok_the_test_stopped_stays_stopped(plane: ControlPlane, tmp_path: Path) -> None:
    (tmp_path / "died").touch()  # this one lives until it is killed
    config = _kwok(plane, DIES_ONCE.format(marker=tmp_path / "died"))
    plane.start_kubelet("flaky-b", config)
    proc = plane.kwoks["flaky-b"]
    time.sleep(0.3)
    plane.stop_kubelet("flaky-b")
    time.sleep(1)  # had the watcher mistaken the kill for a death, it would have restarted it
    assert "flaky-b" not in plane.kwoks and proc.poll() is not None


def test_a_kwok_that_keeps_dying_is_left_dead(
    plane: ControlPlane, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _kwok(plane, ALWAYS_DIES)
    plane.start_kubelet("flaky-c", config)
    wait_for("the revivals end", lambda: "once too often" in capsys.readouterr().out, 20, 0.05)
    assert "flaky-c" not in plane.kwoks  # forgotten: its pid may be another process's
    assert plane._revivals["flaky-c"] == ControlPlane.KWOK_REVIVALS + 1
