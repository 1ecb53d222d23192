"""`diagnose --watch` on the real control plane: started while the node is healthy, it shows
the node go NotReady, its pod evicted (Terminating) and replaced, and the node come back; then
Ctrl-C ends it cleanly."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.e2e import workloads as w
from tests.e2e.conftest import HEALTHY_NODES, Plugin
from tests.e2e.controlplane import ControlPlane, wait_for
from tests.e2e.helpers import (
    service_account_kubeconfig,
    wait_node_ready,
    wait_running_on,
    watching,
)
from tests.support.fakeapi import ctrl_c_default

pytestmark = pytest.mark.e2e
NS = "scenario-watch"
NODE = "watch-a"


class Follow:
    """The output of a running process, read line by line as it comes."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    def blocks(self) -> list[str]:
        return "".join(self.lines).split("--- ")[1:]


def test_watch_follows_a_node_dying_and_returning(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    cp = control_plane
    cp.add_failable_node(NODE)
    wait_node_ready(cp, NODE)
    cp.apply(
        w.namespace(NS),
        w.deployment(NS, "web", prefer=NODE, toleration_seconds=5, grace=5),
    )
    wait_running_on(cp, NS, "web", NODE)
    proc = subprocess.Popen(
        [str(cp.bindir / "kubectl"), "nodefail", "diagnose", NODE, "--watch", "--interval", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=plugin.env,
        preexec_fn=ctrl_c_default,  # Ctrl-C must reach it even from a background shell
    )
    follow = Follow(proc)
    try:
        wait_for("a first, healthy block", lambda: follow.blocks(), 30)
        # A watch of one node: its all-clear is about that node, never the whole cluster.
        assert f"node {NODE}: nothing stuck." in follow.blocks()[0]
        time.sleep(4)  # four more reads of an unchanged cluster (heartbeats only): no new block
        assert len(follow.blocks()) == 1, follow.blocks()
        cp.stop_kubelet(NODE)
        wait_for(
            "the watch showing the node NotReady",
            lambda: any(f"{NODE}  NotReady" in b for b in follow.blocks()),
            90,
        )
        wait_for(
            "the watch showing the evicted pod Terminating and its replacement",
            lambda: any(
                "Terminating" in b and "Deployment/web" in b and "replaced" in b
                for b in follow.blocks()
            ),
            90,
        )
        shown = len(follow.blocks())
        cp.start_kubelet(NODE)
        wait_for(
            "the watch showing the node back",
            lambda: any(f"node {NODE}: nothing stuck." in b for b in follow.blocks()[shown:]),
            90,
        )
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # Ctrl-C
        code = proc.wait(timeout=20)
        cp.start_kubelet(NODE)
        cp.kubectl("delete", "namespace", NS, "--wait=false")
    follow.thread.join(timeout=5)
    stderr = proc.stderr.read() if proc.stderr else ""
    for stream in (proc.stdout, proc.stderr):
        if stream:
            stream.close()
    assert code == 0, stderr  # the last diagnosis: nothing wrong
    assert "Traceback" not in stderr and "interrupted" not in stderr


class Watching:
    """`diagnose --watch --interval 1 ARGS` running, its stdout followed and its stderr lines
    collected; Ctrl-C at the end, the exit code kept."""

    def __init__(self, cp: ControlPlane, plugin: Plugin, *args: str) -> None:
        self.proc = watching(cp, plugin, *args)
        self.follow = Follow(self.proc)
        self.errors: list[str] = []
        self._reader = threading.Thread(
            target=lambda: self.errors.extend(self.proc.stderr or []), daemon=True
        )
        self._reader.start()
        self.code: int | None = None

    def said(self, words: str) -> bool:
        return any(words in e for e in self.errors)

    def running(self) -> bool:
        return self.proc.poll() is None

    def end(self) -> None:
        if self.running():
            self.proc.send_signal(signal.SIGINT)
        self.code = self.proc.wait(timeout=20)
        self.follow.thread.join(timeout=5)
        self._reader.join(timeout=5)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()
        stderr = "".join(self.errors)
        assert self.code in (0, 3), stderr  # the last diagnosis' code, not 11, 12 or 14
        assert "Traceback" not in stderr, stderr


def test_watch_rides_out_a_control_plane_restart(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    """Every component stopped for 5 s and started again (issue 38 item 4): the watch warns
    that the server failed, keeps reading, and recovers by itself; Ctrl-C then ends it with the
    last diagnosis's code, not an error."""
    cp = control_plane
    watch = Watching(cp, plugin)
    try:
        wait_for("a first block", lambda: watch.follow.blocks(), 30)
        cp.restart(down_seconds=5)
        wait_for("the watch warning", lambda: watch.said("warning: "), 60)
        wait_for(
            "the watch saying the server answers again",
            lambda: watch.running() and watch.said("answers again"),
            120,
        )
        assert watch.running(), "the watch ended on the restart"
    finally:
        watch.end()


def test_watch_rides_out_a_briefly_removed_binding(
    control_plane: ControlPlane, plugin: Plugin, tmp_path: Path
) -> None:
    """The watching user's ClusterRoleBinding deleted for a while, then created again (issue 38
    item 4): the watch warns that its reads are forbidden (403), keeps trying, and recovers by
    itself once the binding is back; Ctrl-C ends it with the last diagnosis's code."""
    cp = control_plane
    roles = plugin.run("rbac")
    assert roles.returncode == 0, roles.stderr
    cp.kubectl("apply", "-f", "-", stdin=roles.stdout)
    role = "kubectl-nodefail-diagnose"
    # its own namespace: the first test deletes NS as it ends
    watcher = service_account_kubeconfig(cp, tmp_path, "watcher", [role], "scenario-watcher")
    watch = Watching(cp, plugin, "--kubeconfig", str(watcher))
    binding = f"watcher-{role}"
    try:
        wait_for("a first block", lambda: watch.follow.blocks(), 30)
        cp.kubectl("delete", "clusterrolebinding", binding)
        # Its watches, authorized when opened, still carry every change: it reads again (and
        # meets the 403) at the next change that matters, a Node cordoned here.
        cp.kubectl("cordon", HEALTHY_NODES[0])
        wait_for(
            "the watch saying its reads are forbidden",
            lambda: any(e.startswith("warning: ") and "forbidden" in e for e in watch.errors),
            60,
        )
        assert watch.running(), "the watch ended on a 403"
        cp.kubectl(
            "create", "clusterrolebinding", binding, f"--clusterrole={role}",
            "--serviceaccount=scenario-watcher:watcher",
        )  # fmt: skip
        wait_for(
            "the watch saying the server answers again",
            lambda: watch.running() and watch.said("answers again"),
            60,
        )
    finally:
        cp.kubectl("uncordon", HEALTHY_NODES[0])
        watch.end()
