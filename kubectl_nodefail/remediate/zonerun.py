"""Executes a zone plan (`remediate --zone/--selector --confirm`): its nodes a few at a time.

Every step goes through actions.Executor exactly as on the single-node path: the node lock,
the re-check of the node, its lease and the pod right before the request, the starting trail
line and Event, the request with its preconditions, the result's trail line and Event. What
differs is only the scheduling:

- a fixed pool of POOL worker threads takes the nodes in the plan's order (StatefulSets and
  volumes first); one node's steps run in one worker, in order;
- the watch for a taint's effect (PodGC force-deleting the node's pods, the volumes detaching)
  is made once for all the tainted nodes, after the last request, instead of node by node: the
  node's step stays pending until its effect is seen (done), --wait-timeout passes
  (unconfirmed) or a signal stops the watch (interrupted);
- SIGINT/SIGTERM (actions.Stop, handled in the main thread): no node and no step starts after
  it; the requests in flight finish and are recorded; a second signal abandons them (each
  reported `interrupted`) and the run ends at once. The locks this run holds are released,
  except on a node whose request was abandoned (that lock expires by itself).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from contextlib import suppress

from kubectl_nodefail.cluster import kube
from kubectl_nodefail.common.errors import NodefailError
from kubectl_nodefail.remediate.actions import Executor, Pending
from kubectl_nodefail.remediate.plan import Plan, Step
from kubectl_nodefail.remediate.release import in_use
from kubectl_nodefail.remediate.zoneplan import POOL

POLL_SECONDS = 5.0  # between two looks at every pending node (one pod list per node)


class _Board:
    """What the workers share: the steps in flight, counts for the status line."""

    def __init__(self, nodes: int, say: Callable[[str], None]) -> None:
        self.lock = threading.Lock()
        self.in_flight: dict[int, Step] = {}
        self.nodes, self.handled = nodes, 0
        self.results: dict[str, int] = {}
        self._say = say

    def say(self, text: str) -> None:
        with self.lock:
            self._say(text)

    def node_done(self, steps: list[Step]) -> None:
        with self.lock:
            self.handled += 1
            for step in steps:
                if step.action != "wait":
                    key = step.result or "sent"
                    self.results[key] = self.results.get(key, 0) + 1
            counts = ", ".join(f"{n} {r}" for r, n in sorted(self.results.items()))
            self._say(
                f"{self.handled}/{self.nodes} nodes handled ({counts or 'nothing to change'}); "
                "Ctrl-C stops after the requests in flight"
            )


def run(executor: Executor, plan: Plan, say: Callable[[str], None], pool: int = POOL) -> None:
    """Run the plan's steps, POOL nodes at a time, then watch for the effect of every taint
    or node delete sent. Fills in each step's result; returns when done or stopped."""
    executor.defer_release = True
    if executor.refuses_malformed(plan):
        return
    groups: dict[str, list[Step]] = {}
    for step in plan.steps:
        groups.setdefault(step.node, []).append(step)
    work: queue.Queue[str] = queue.Queue()
    for name in groups:
        work.put(name)
    board = _Board(len(groups), say)
    errors: list[BaseException] = []

    def worker() -> None:
        while True:
            try:
                name = work.get_nowait()
            except queue.Empty:
                return
            try:
                _node(executor, groups[name], board)
            except BaseException as exc:  # a bug: re-raised in the main thread (exit 1)
                executor.stop.set()
                errors.append(exc)
                return

    threads = [
        threading.Thread(target=worker, name=f"zone-{i}", daemon=True)
        for i in range(max(1, min(pool, len(groups))))
    ]
    abandoned: set[str] = set()
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)
        if errors:
            raise errors[0]
        _watch(executor, board)
    except KeyboardInterrupt:  # the second signal: abandon what is in flight
        executor.stop.set()
        abandoned = _abandon(executor, plan, board)
    finally:
        _release(executor, abandoned)


def _node(executor: Executor, steps: list[Step], board: _Board) -> None:
    ident = threading.get_ident()
    for step in steps:
        if executor.stop.is_set():
            if not step.result:
                step.result, step.detail = "not started", "the run was interrupted first"
            continue
        with board.lock:
            board.in_flight[ident] = step
        try:
            executor.run_node_step(step)
        finally:
            with board.lock:
                board.in_flight.pop(ident, None)
    board.node_done(steps)


def _watch(executor: Executor, board: _Board) -> None:
    """Look at every pending node until its pods and volumes are gone, --wait-timeout passes
    or a signal stops the watch; then record each one's result."""
    pending = list(executor.pending)
    executor.pending.clear()
    total = len(pending)
    deadline = time.monotonic() + executor.wait_timeout
    while pending:
        looks = _look(executor, pending)
        released = [(p, look[1]) for p, look in looks if look[0]]
        left = [(p, look[1]) for p, look in looks if not look[0]]
        _finish(executor, [(p, True, detail) for p, detail in released])
        pending = [p for p, _ in left]
        if not pending:
            return
        remaining = deadline - time.monotonic()
        if remaining <= 0 or executor.stop.is_set():
            why = (
                "stopped watching (interrupted)"
                if executor.stop.is_set()
                else f"after {executor.wait_timeout:.0f}s"
            )
            _finish(executor, [(p, False, f"{why}: {detail}") for p, detail in left])
            return
        board.say(
            f"waiting for the pods and volumes of {len(pending)} of {total} tainted nodes to go "
            f"({remaining:.0f}s left; Ctrl-C stops waiting)"
        )
        executor.stop.wait(min(POLL_SECONDS, remaining))


def _look(executor: Executor, pending: list[Pending]) -> list[tuple[Pending, tuple[bool, str]]]:
    """One look at each pending node (the VolumeAttachments read once for all). A look that
    fails is 'not released yet', with why, never an end of the run before every result is
    recorded."""
    try:
        attachments = executor.attachments()
    except NodefailError as exc:
        return [
            (p, (False, f"could not read the volume attachments: {exc.message}")) for p in pending
        ]

    def one(p: Pending) -> tuple[Pending, tuple[bool, str]]:
        try:
            released, detail, _, _ = executor.release_check(
                p.step.node,
                p.every_pod,
                attachments,
                since=p.since,
                in_use=in_use(p.node) if p.every_pod else [],
            )
        except NodefailError as exc:
            return p, (False, f"could not read the node's pods: {exc.message}")
        return p, (released, detail)

    return list(kube.parallel(one, pending))


def _finish(executor: Executor, results: list[tuple[Pending, bool, str]]) -> None:
    for _ in kube.parallel(lambda r: executor.finish(*r), results):
        pass


def _abandon(executor: Executor, plan: Plan, board: _Board) -> set[str]:
    """After a second signal: the requests in flight are reported abandoned, the pending
    steps unwatched, the steps never begun not started. The nodes abandoned in flight."""
    with board.lock:
        flying = list(board.in_flight.values())
    for step in flying:
        step.result = "interrupted"
        step.detail = (
            "abandoned in flight: the request may or may not have reached the API server; "
            "re-run to find out and finish"
        )
        with suppress(OSError, ValueError):
            executor._trail(step)
    for pending in list(executor.pending):
        executor.finish(pending, False, "stopped watching (run abandoned)", event=False)
    executor.pending.clear()
    for step in plan.steps:
        if not step.result:
            step.result, step.detail = "not started", "the run was interrupted first"
    return {s.node for s in flying}


def _release(executor: Executor, abandoned: set[str]) -> None:
    """Release this run's locks, a few at a time (a lock on a node whose request was abandoned
    in flight stays: it expires by itself)."""
    names = [n for n in executor.held_locks() if n not in abandoned]
    for _ in kube.parallel(executor.release_lock, names):
        pass
