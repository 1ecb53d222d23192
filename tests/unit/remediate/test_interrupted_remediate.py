"""Ctrl-C (SIGINT) in each phase of `remediate --confirm` exits 6, never 0: while it reads and
plans (a real subprocess against a server that never answers: nothing was done), while a step's
request is in flight (the steps after it are not started) and while it waits for the released
pods to go (the last step: before, this printed "stopped watching (interrupted)" and exited 0).

The executing and waiting phases use an in-process fake cluster that sends the signal from
inside the request: the real control plane cannot be made to pause there on cue. (A signal
between steps on the real control plane: e2e test_remediate_safety::test_sigint_mid_run_....)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubectl_nodefail.cli import remediate_run as cli
from kubectl_nodefail.cli.main import main
from kubectl_nodefail.common.errors import NotFound
from kubectl_nodefail.remediate.plan import Plan, Step
from tests.support.fakeapi import kubeconfig, serve


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_reading_exits_6_at_once_with_nothing_done(
    tmp_path: Path, sig: signal.Signals
) -> None:
    with serve(lambda n, method, path: None) as api:  # accepts, never answers
        config = kubeconfig(tmp_path, api.url)
        proc = subprocess.Popen(
            # the read in flight would end after 300 s: exiting well before shows it is not
            # waited for, however loaded the machine
            [
                sys.executable,
                "-m",
                "kubectl_nodefail",
                "remediate",
                "n1",
                "--confirm",
                "--request-timeout",
                "300s",
                "--deadline",
                "600s",
            ],
            env={**os.environ, "KUBECONFIG": config},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 30
        while not api.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert api.requests, "the command sent no request"
        sent = time.monotonic()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=150)
        took = time.monotonic() - sent
    assert proc.returncode == 6, (out, err)
    assert err.strip().splitlines() == ["error: interrupted before any change: nothing was done"]
    assert out == ""
    assert took < 100  # not after the read still in flight (--request-timeout 300 s)
    assert all(method == "GET" for method, _ in api.requests)


NODE = {
    "metadata": {"name": "", "uid": "", "resourceVersion": "1", "annotations": {}},
    "spec": {},
    "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]},
}


class FakeCluster:
    """Answers what the executor asks for one or two failed nodes, and sends SIGINT to this
    process from inside the request named by `signal_on` (so the signal lands mid-phase)."""

    context = "fake"
    host = "https://fake:6443"
    deadline = None

    def __init__(self, signal_on: str) -> None:
        self.signal_on = signal_on
        self.patches: list[str] = []
        self.lists = 0

    def _maybe_signal(self, what: str) -> None:
        if what == self.signal_on:
            self.signal_on = ""
            os.kill(os.getpid(), signal.SIGINT)

    def get_object(self, path: str) -> dict[str, Any]:
        name = path.rsplit("/", 1)[-1]
        node = json.loads(json.dumps(NODE))
        node["metadata"].update(name=name, uid=f"uid-{name}")
        return node

    def get(self, path: str, **query: Any) -> dict[str, Any]:
        raise NotFound("no lease")  # the plan's lease renewal is "" too

    def create(self, path: str, obj: dict[str, Any]) -> dict[str, Any]:
        if path.endswith("selfsubjectaccessreviews"):
            return {"status": {"allowed": True}}
        if path.endswith("selfsubjectreviews"):
            return {"status": {"userInfo": {"username": "tester"}}}
        return obj  # an Event

    def json_patch(self, path: str, ops: list[dict[str, Any]]) -> dict[str, Any]:
        taint = any(op.get("path", "").startswith("/spec/taints") for op in ops)
        self.patches.append(f"{'taint' if taint else 'lock'} {path.rsplit('/', 1)[-1]}")
        if taint:
            self._maybe_signal("taint")
        return {}

    def list_all(self, path: str, kind: str, **query: Any) -> list[dict[str, Any]]:
        if kind == "Pod":
            self.lists += 1
            self._maybe_signal("wait")
            meta = {
                "name": "db-0",
                "namespace": "shop",
                "deletionTimestamp": "2026-01-01T00:00:00Z",
            }
            return [{"metadata": meta}]  # still Terminating: the wait goes on
        return []

    def close(self) -> None:
        return None


def _taint(node: str) -> Step:
    return Step(
        "taint-out-of-service",
        node,
        f"node/{node}",
        "releases shop/db-0",
        True,
        "attested",
        uid=f"uid-{node}",
    )


def _run(
    monkeypatch: pytest.MonkeyPatch, fake: FakeCluster, nodes: list[str], output: str = "json"
) -> Any:
    plan = Plan("out-of-service", [_taint(n) for n in nodes], [], list(nodes))
    monkeypatch.setattr(cli, "_make_plan", lambda *args, **kwargs: plan)
    monkeypatch.setattr(cli.Connection, "cluster", lambda self: fake)
    return CliRunner().invoke(
        main, ["remediate", *nodes, "--confirm", "--wait-timeout", "60", "-o", output]
    )


def test_a_signal_while_a_step_runs_exits_6_and_starts_nothing_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeCluster(signal_on="taint")
    result = _run(monkeypatch, fake, ["n1", "n2"])
    assert result.exit_code == 6, result.output
    data = json.loads(result.stdout)
    assert data["interrupted"] is True
    # The taint was sent; the signal stopped the watch for its effect: not "done".
    assert [s["result"] for s in data["steps"]] == ["interrupted", "not started"]
    assert "out-of-service taint applied" in data["steps"][0]["detail"]
    assert fake.patches == ["lock n1", "taint n1"]  # n2 was never locked nor tainted
    assert (
        "interrupted: 0 steps done, 1 sent but their effect not seen, 1 not started"
        in result.stderr
    )


def test_a_signal_while_waiting_for_the_pods_exits_6(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeCluster(signal_on="wait")
    started = time.monotonic()
    result = _run(monkeypatch, fake, ["n1"])
    assert result.exit_code == 6, result.output  # it was 0: the last step was "done"
    assert time.monotonic() - started < 30  # the wait stopped, not ran out (60 s)
    data = json.loads(result.stdout)
    [step] = data["steps"]
    assert step["result"] == "interrupted" and "stopped watching (interrupted)" in step["detail"]
    assert data["interrupted"] is True and fake.lists == 1
    table = _run(monkeypatch, FakeCluster(signal_on="wait"), ["n1"], output="table")
    assert table.exit_code == 6
    assert table.stdout.startswith("Executed until interrupted. Strategy: out-of-service.")


def test_the_status_line_is_shown_while_waiting_and_erased_before_the_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a terminal the wait shows a status line (not a blank screen), and it is erased
    before the result is printed (it used to be left, and the result glued to it)."""
    import io

    from kubectl_nodefail.term import progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stderr = Terminal()

    def status_line(verbose: int) -> progress.StatusLine:
        line = progress.StatusLine(stderr, delay=0)
        progress._active = line
        return line

    monkeypatch.setattr(cli, "reporter", status_line)
    result = _run(monkeypatch, FakeCluster(signal_on="wait"), ["n1"], output="table")
    assert result.exit_code == 6 and result.stdout.startswith("Executed until interrupted.")
    shown = stderr.getvalue()
    assert "\r\x1b[2K... waiting for 1 Terminating pods and 0 volume attachments on node n1" in (
        shown
    )
    assert shown.endswith("\r\x1b[2K")  # erased: the next output starts on a clean line
