"""One control-plane component stopped, and started again, on its own (kwokctl has commands for
the whole cluster only): as a crash, an upgrade or a lost leader election does to one process.

The process kwokctl started is read from its pid file and /proc (command line, environment,
working directory) before it is stopped with SIGTERM (SIGKILL after STOP_SECONDS); `start`
runs the same again, appending to the same log, and writes its pid where kwokctl reads it, so
`kwokctl delete` and the reaper stop it as they stop their own. A component left stopped must
be started again before the cluster is deleted: kwokctl would signal the old pid.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

STOP_SECONDS = 10
# The processes started here: kept, so none is reaped as garbage while it runs.
STARTED: list[subprocess.Popen[bytes]] = []


@dataclass(frozen=True)
class Stopped:
    """A component stopped by `stop`, and how to start it again as it was."""

    component: str
    pidfile: Path
    log: Path
    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: str

    def start(self) -> int:
        """Start it again as it was; its new pid (written to its pid file)."""
        with open(self.log, "ab") as log:
            started = subprocess.Popen(
                list(self.argv),
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        STARTED.append(started)
        self.pidfile.write_text(str(started.pid))
        return started.pid


def stop(cluster_dir: Path, component: str) -> Stopped:
    """Stop the cluster's `component` (a RuntimeError, and nothing signalled, when its pid file
    names another program)."""
    pidfile = cluster_dir / "pids" / f"{component}.pid"
    pid = int(pidfile.read_text().strip())
    proc = Path(f"/proc/{pid}")
    argv: list[str] = []
    for _ in range(10):  # empty while the process is still being exec'd
        argv = [a.decode() for a in (proc / "cmdline").read_bytes().split(b"\0") if a]
        if argv:
            break
        time.sleep(0.1)
    if not argv or component not in Path(argv[0]).name:
        raise RuntimeError(f"pid {pid} in {pidfile} is not {component}: {argv[:1]}")
    env = dict(
        entry.decode().split("=", 1)
        for entry in (proc / "environ").read_bytes().split(b"\0")
        if b"=" in entry
    )
    cwd = os.readlink(proc / "cwd")
    os.kill(pid, signal.SIGTERM)
    end = time.monotonic() + STOP_SECONDS
    while running(proc) and time.monotonic() < end:
        time.sleep(0.2)
    if running(proc):
        os.kill(pid, signal.SIGKILL)
    log = cluster_dir / "logs" / f"{component}.log"
    return Stopped(component, pidfile, log, tuple(argv), env, cwd)


def running(proc: Path) -> bool:
    """Not exited (a zombie its parent has not reaped yet has exited)."""
    try:
        return (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
