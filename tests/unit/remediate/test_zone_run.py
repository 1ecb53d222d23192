"""zonerun: a zone plan's nodes run a few at a time, each through the single-node executor.

An in-process fake cluster (thread-safe) stands in for what the real control plane cannot be
made to do on cue: count the requests in flight at once, and send SIGINT from inside the n-th
taint request. (The real thing, interrupted and re-run: tests/e2e/test_zone_remediate.py.)
"""

from __future__ import annotations

import io
import json
import os
import signal
import threading
import time
from typing import Any

from kubectl_nodefail.common.errors import NotFound
from kubectl_nodefail.remediate import zonerun
from kubectl_nodefail.remediate.actions import ANNOTATION_LOCK as LOCK
from kubectl_nodefail.remediate.actions import Executor, Stop
from kubectl_nodefail.remediate.plan import Plan, Step
from kubectl_nodefail.remediate.zoneplan import POOL


class ZoneCluster:
    context = "fake"
    host = "https://fake:6443"
    deadline = None

    def __init__(
        self, signal_on_taint: int = 0, pods_left_until: float = 0.0, gone_after: int = 0
    ) -> None:
        self.lock = threading.Lock()
        self.signal_on_taint = signal_on_taint
        self.pods_left_until = pods_left_until  # monotonic time the pods are gone at
        # or, given `gone_after` taints: the pods go 0.5 s after that many taints were sent
        # (not at a fixed time, which a loaded machine's slow requests could outrun)
        self.gone_after = gone_after
        self.calls: list[tuple[str, str]] = []  # (what, node), in order
        self.events: list[str] = []
        self.flying = 0
        self.most = 0
        self.locks: dict[str, str] = {}  # node -> the lock annotation's value

    def _node(self, name: str) -> dict[str, Any]:
        with self.lock:
            held = self.locks.get(name)
        annotations = {LOCK: held} if held else {}
        return {
            "metadata": {
                "name": name,
                "uid": f"uid-{name}",
                "resourceVersion": "1",
                "annotations": annotations,
            },
            "spec": {},
            "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]},
        }

    def get_object(self, path: str) -> dict[str, Any]:
        return self._node(path.rsplit("/", 1)[-1])

    def get(self, path: str, **query: Any) -> dict[str, Any]:
        raise NotFound("no lease")

    def create(self, path: str, obj: dict[str, Any]) -> dict[str, Any]:
        if path.endswith("selfsubjectreviews"):
            return {"status": {"userInfo": {"username": "tester"}}}
        with self.lock:
            self.events.append(f"{obj['reason']} {obj['involvedObject']['name']}")
        return obj

    def json_patch(self, path: str, ops: list[dict[str, Any]]) -> dict[str, Any]:
        name = path.rsplit("/", 1)[-1]
        taint = any(op.get("path", "").startswith("/spec/taints") for op in ops)
        with self.lock:
            for op in ops:
                if op["path"].endswith("lock"):
                    if op["op"] == "remove":
                        self.locks.pop(name, None)
                    else:
                        self.locks[name] = op["value"]
            self.calls.append(("taint" if taint else "lock", name))
            self.flying += 1
            self.most = max(self.most, self.flying)
            count = sum(1 for what, _ in self.calls if what == "taint")
            if taint and count == self.gone_after:
                self.pods_left_until = time.monotonic() + 0.5
        try:
            time.sleep(0.03)  # a request takes a while: others run meanwhile
            if taint and count == self.signal_on_taint:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)  # the handler runs in the main thread
        finally:
            with self.lock:
                self.flying -= 1
        return {}

    def list_all(self, path: str, kind: str, **query: Any) -> list[dict[str, Any]]:
        waiting = self.gone_after and self.pods_left_until == 0.0  # not all taints sent yet
        if kind == "Pod" and (waiting or time.monotonic() < self.pods_left_until):
            meta = {
                "name": "db-0",
                "namespace": "shop",
                "deletionTimestamp": "2026-01-01T00:00:00Z",
            }
            return [{"metadata": meta}]
        return []


def _plan(n: int) -> Plan:
    steps = [
        Step(
            "taint-out-of-service",
            f"n{i:02d}",
            f"node/n{i:02d}",
            "releases shop/db-0",
            True,
            "attested",
            uid=f"uid-n{i:02d}",
        )
        for i in range(n)
    ]
    return Plan("out-of-service", steps, [], [s.node for s in steps])


def _run(fake: ZoneCluster, plan: Plan, wait: float = 30) -> tuple[Executor, list[dict[str, Any]]]:
    trail = io.StringIO()
    shown: list[str] = []
    with Stop().on_signals(lambda _: None) as stop:
        executor = Executor(fake, "tester", trail, wait)  # type: ignore[arg-type]
        executor.stop = stop
        zonerun.run(executor, plan, shown.append)
    return executor, [json.loads(line) for line in trail.getvalue().splitlines()]


def test_nodes_run_a_few_at_a_time_each_recorded_before_and_after() -> None:
    fake = ZoneCluster(pods_left_until=time.monotonic() + 1.0)  # the pods go after 1 s
    plan = _plan(30)
    _, lines = _run(fake, plan)
    assert 1 < fake.most <= POOL  # concurrent, and bounded by the pool
    assert [s.result for s in plan.steps] == ["done"] * 30
    assert plan.result_code() == 0
    for step in plan.steps:
        mine = [c for c in fake.calls if c[1] == step.node]
        assert mine[:2] == [("lock", step.node), ("taint", step.node)]  # locked first
        assert mine[-1] == ("lock", step.node) and len(mine) == 3  # the lock released at the end
        results = [r["result"] for r in lines if r["node"] == step.node]
        assert results == ["starting", "accepted", "done"]
        assert f"NodefailTaintOutOfServiceStarting {step.node}" in fake.events
        assert f"NodefailTaintOutOfService {step.node}" in fake.events
    assert not fake.locks
    # One watch for every node, not one after each: the last taint was sent before the first
    # result was recorded.
    first_done = min(i for i, r in enumerate(lines) if r["result"] == "done")
    assert sum(1 for r in lines[:first_done] if r["result"] == "starting") == 30


def test_the_watch_times_out_unconfirmed_exit_7() -> None:
    fake = ZoneCluster(pods_left_until=time.monotonic() + 3600)
    plan = _plan(3)
    _run(fake, plan, wait=0.5)
    assert [s.result for s in plan.steps] == ["unconfirmed"] * 3
    assert all("after 0s" in s.detail or "after 1s" in s.detail for s in plan.steps)
    assert plan.result_code() == 7


def test_sigint_mid_run_starts_no_node_more_and_records_what_was_sent() -> None:
    fake = ZoneCluster(signal_on_taint=5, pods_left_until=time.monotonic() + 3600)
    plan = _plan(30)
    _, lines = _run(fake, plan)
    tainted = {n for what, n in fake.calls if what == "taint"}
    results = {s.node: s.result for s in plan.steps}
    assert 5 <= len(tainted) < 5 + POOL  # only the requests already begun finished
    assert {n for n, r in results.items() if r == "interrupted"} == tainted
    assert sum(r == "not started" for r in results.values()) == 30 - len(tainted)
    never = [n for n, r in results.items() if r == "not started"]
    assert not [c for c in fake.calls if c[1] in never and c[0] == "taint"]
    for node in tainted:  # sent: recorded before and after
        assert [r["result"] for r in lines if r["node"] == node] == [
            "starting",
            "accepted",
            "interrupted",
        ]
        assert f"NodefailTaintOutOfService {node}" in fake.events
    assert plan.result_code(interrupted=True) == 6


def test_one_status_line_on_a_terminal_erased_before_the_result(monkeypatch: Any) -> None:
    """zonecmd's execution: the progress is one line rewritten in place, erased at the end."""
    from kubectl_nodefail.cli import zone as cli
    from kubectl_nodefail.cli import zone as zonecmd
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
    fake = ZoneCluster(gone_after=12)
    plan = _plan(12)
    stopped = zonecmd._execute(fake, plan, None, 30, 0)
    assert stopped is False and [s.result for s in plan.steps] == ["done"] * 12
    shown = stderr.getvalue()
    assert "\n" not in shown  # one line, rewritten in place
    assert "12/12 nodes handled (12 sent)" in shown
    assert "waiting for the pods and volumes of 12 of 12 tainted nodes" in shown
    assert shown.endswith("\r\x1b[2K")  # erased before the result is printed
