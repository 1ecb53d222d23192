"""A new kube-controller-manager leader during the failure (map row 2, from seed RESTART_SEED
on): in one regular batch per seed, after the failed nodes are tainted and the early changes
made, kube-controller-manager is stopped and started again, as a crash, an upgrade or a lost
Lease does. The new leader keeps nothing of the old one's memory: it takes every failed node's
NoExecute taints off and puts them back (a new timeAdded), counts each pod again, and starts its
force-detach waits again. The first diagnosis is made once the taints are back, so every
prediction it makes is judged against that leader (analysis/leader.py reads its Lease).

kwokctl has no command for one component: the process is stopped with SIGTERM (SIGKILL after
STOP_SECONDS) and started again with the same command line, environment, working directory and
log, its pid written where kwokctl reads it (so `kwokctl delete` and the reaper stop it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from random import Random

RESTART_SEED = 2068
DELAY = (5, 40)  # seconds between the taints and the restart
STOP_SECONDS = 10
COMPONENT = "kube-controller-manager"
# The processes started here: kept, so none is reaped as garbage while it runs (kwokctl's
# delete, or the reaper, stops them by the pid file).
STARTED: list[subprocess.Popen[bytes]] = []


def restart_batch(seed: int, batch: int) -> int | None:
    """The seconds to wait after the taints before the restart, in the one regular batch of
    the seed that has it (batch 0 or 1 by seed pairs, so the node paths vary); else None."""
    if seed < RESTART_SEED or batch != (seed // 2) % 2:
        return None
    return Random(f"{seed}-restart").randint(*DELAY)


def restart(cluster_dir: Path) -> int:
    """Stop the cluster's kube-controller-manager and start it again as it was; the new pid."""
    pidfile = cluster_dir / "pids" / f"{COMPONENT}.pid"
    pid = int(pidfile.read_text().strip())
    proc = Path(f"/proc/{pid}")
    argv: list[str] = []
    for _ in range(10):  # empty while the process is still being exec'd
        argv = [a.decode() for a in (proc / "cmdline").read_bytes().split(b"\0") if a]
        if argv:
            break
        time.sleep(0.1)
    env = dict(
        entry.decode().split("=", 1)
        for entry in (proc / "environ").read_bytes().split(b"\0")
        if b"=" in entry
    )
    cwd = os.readlink(proc / "cwd")
    if not argv or COMPONENT not in Path(argv[0]).name:
        raise RuntimeError(f"pid {pid} in {pidfile} is not {COMPONENT}: {argv[:1]}")
    os.kill(pid, signal.SIGTERM)
    end = time.monotonic() + STOP_SECONDS
    while _running(proc) and time.monotonic() < end:
        time.sleep(0.2)
    if _running(proc):
        os.kill(pid, signal.SIGKILL)
    with open(cluster_dir / "logs" / f"{COMPONENT}.log", "ab") as log:
        started = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    STARTED.append(started)
    pidfile.write_text(str(started.pid))
    return started.pid


def _running(proc: Path) -> bool:
    """Not exited (a zombie its parent has not reaped yet has exited)."""
    try:
        return (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
