"""Servers a test or a benchmark started stop when their owner dies, however it dies.

kwokctl starts a control plane's components detached, and kwok kubelets run in sessions of
their own, so a pytest-xdist worker that dies (a crash, `os._exit`, SIGKILL) leaves its
module's control plane running: etcd, kube-apiserver, the controllers and the kubelets keep
eating the CPU of every later test on the machine, a second checkout's included (run z6 of
2026-12-02 left one until it was removed by hand). The benchmark's etcd and kube-apiserver
(bench/cluster.py) are its children, and outlived it the same way: a suite stopped with
Ctrl-C while `bench.pair` ran left its etcd running (2026-12-02, run v1).

Each such set of servers has a reaper: this module, run as its own process in its own
session, holding the read end of a pipe whose only write end is its owner's. The owner writes
its order (one JSON line: the command that deletes the cluster, if any, its environment, the
folder, where to keep the logs), and at a normal stop the word STOPPED before it closes the
pipe. The pipe closing without that word means the owner died: the reaper keeps the logs,
runs the delete, kills every process whose command line names the folder (what the delete
missed, or all of them where there is no delete: kubelets, etcd, kube-apiserver) and removes
the folder.

    python -m bench.reaper   (the order on stdin; nothing on argv, so that the reaper's
                              own command line does not name the folder it clears)
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

STOPPED = "STOPPED"
DELETE_SECONDS = 120


def start(order: dict[str, Any]) -> subprocess.Popen[bytes]:
    """Starts the reaper of one set of servers; `stand_down` it when the owner stopped them.
    order: delete (argv, or [] for none), env, workdir, keep_logs_from (folders),
    keep_logs_to (or None)."""
    reaper = subprocess.Popen(
        [sys.executable, "-m", "bench.reaper"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=Path(__file__).resolve().parents[1],
        start_new_session=True,  # neither a Ctrl-C of the run nor its process group's end
    )
    assert reaper.stdin is not None
    reaper.stdin.write(json.dumps(order).encode() + b"\n")
    reaper.stdin.flush()
    return reaper


def stand_down(reaper: subprocess.Popen[bytes]) -> None:
    """The owner stopped its control plane itself: the reaper leaves."""
    assert reaper.stdin is not None
    try:
        reaper.stdin.write(STOPPED.encode())
        reaper.stdin.close()
    except BrokenPipeError:  # it is gone already
        pass
    reaper.wait(timeout=30)


def processes_naming(folder: str) -> list[int]:
    """The processes whose command line names the folder (not this one)."""
    found, name = [], folder.rstrip("/").encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # ended meanwhile, or not ours to read
            continue
        if any(_names(arg, name) for arg in argv):
            found.append(int(entry.name))
    return found


def _names(arg: bytes, folder: bytes) -> bool:
    """The argument is the folder or a path in it, alone or as a flag's value (`--x=PATH`):
    `/var/tmp/F/x` does not name `/tmp/F`."""
    _, _, value = arg.rpartition(b"=") if arg.startswith(b"-") else (b"", b"", arg)
    return value == folder or value.startswith(folder + b"/")


def reap(order: dict[str, Any]) -> None:
    keep = order.get("keep_logs_to")  # before the delete, which removes the cluster's logs
    for logs in map(Path, order["keep_logs_from"] if keep else ()):
        if logs.exists():
            with contextlib.suppress(OSError, shutil.Error):  # kept what could be: go on
                shutil.copytree(logs, keep, dirs_exist_ok=True)
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):  # the kill below is sure
        if order["delete"]:
            subprocess.run(
                order["delete"],
                env=order["env"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=DELETE_SECONDS,
                check=False,
            )
    for pid in processes_naming(order["workdir"]):
        with contextlib.suppress(OSError):  # ended meanwhile
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(order["workdir"], ignore_errors=True)


def main(stdin: IO[bytes]) -> None:
    order = json.loads(stdin.readline())
    if stdin.read().decode(errors="replace").strip() == STOPPED:
        return
    reap(order)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C of the run is for its owner
    main(sys.stdin.buffer)
