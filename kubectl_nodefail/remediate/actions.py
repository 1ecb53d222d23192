"""The only code path that mutates the cluster: executes a Plan's allowed steps.

Per node, a run first takes a lock (an annotation with owner and expiry, written with a
resourceVersion precondition), so two runs never act on one node at once; the lock is released
at the end, also after an interruption. Right before each step it re-reads what the step
depends on: the pod itself (same UID, still bound to the step's node, no finalizer), the node
(still not Ready) and its lease (not renewed since the plan); deletes always carry the
preconditions {uid, resourceVersion}; a malformed destructive step is refused, never sent.
Each mutation is recorded before the request ("starting": a trail line and an Event) and after
it (the result: a trail line and an Event). SIGINT/SIGTERM stop the run after the request in
flight (a second signal abandons it); the steps not started are reported as such.

This module is the executor's loop (Executor: per step, the lock, the re-checks, the start
recorded, the request, the result recorded); its parts are in their own modules: the node lock
(lock.py), the re-checks (recheck.py), the requests (mutations.py, node patches in
nodepatch.py), the watch for their effect (release.py), the trail lines and Events (trail.py),
the signals (stop.py), the RBAC preflight and whoami (access.py) and the restate of pods after a
run (restate.py). Their names stay importable from here.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from contextlib import nullcontext, suppress
from dataclasses import dataclass, field
from typing import TextIO

from kubectl_nodefail.analysis.advice import holding_finalizers
from kubectl_nodefail.cluster import kube
from kubectl_nodefail.common.errors import Conflict, NodefailError, NotFound
from kubectl_nodefail.remediate.access import (
    NEEDS,
    SELF_SUBJECT_REVIEW_VERSIONS,
    preflight,
    whoami,
)
from kubectl_nodefail.remediate.lock import (
    ANNOTATION_LOCK,
    LOCK_MARGIN_SECONDS,
    NodeLock,
    _lock_of,
)
from kubectl_nodefail.remediate.mutations import (
    ANNOTATION_TAINTED_BY,
    ANNOTATION_UNTAINTED_BY,
    Mutations,
)
from kubectl_nodefail.remediate.nodepatch import (
    NODE_CHANGE_ATTEMPTS,
    RETRIED_ON_NODE_CHANGE,
    NodeChanged,
)
from kubectl_nodefail.remediate.planfile import step_problem
from kubectl_nodefail.remediate.recheck import Rechecks, _lease_second
from kubectl_nodefail.remediate.release import Deferred, NotConfirmed, Pending
from kubectl_nodefail.remediate.restate import restate, summary
from kubectl_nodefail.remediate.steps import MUTATING, Plan, Step
from kubectl_nodefail.remediate.stop import Stop
from kubectl_nodefail.remediate.trail import (
    COMPONENT,
    NAMESPACE_TERMINATING,
    StartNotRecorded,
    Trail,
)
from kubectl_nodefail.snapshot.model import Obj

# What the package, the tests and the tools import from here (most now live in the modules
# above).
__all__ = [
    "ANNOTATION_LOCK",
    "ANNOTATION_TAINTED_BY",
    "ANNOTATION_UNTAINTED_BY",
    "COMPONENT",
    "LOCK_MARGIN_SECONDS",
    "NAMESPACE_TERMINATING",
    "NEEDS",
    "NODE_CHANGE_ATTEMPTS",
    "RETRIED_ON_NODE_CHANGE",
    "SELF_SUBJECT_REVIEW_VERSIONS",
    "Deferred",
    "Executor",
    "NodeChanged",
    "NotConfirmed",
    "Pending",
    "StartNotRecorded",
    "Stop",
    "_lease_second",
    "_lock_of",
    "holding_finalizers",
    "preflight",
    "restate",
    "summary",
    "whoami",
]


@dataclass
class Executor(Trail, NodeLock, Rechecks, Mutations):
    cluster: kube.Cluster
    user: str
    log: TextIO | None = None  # opened (and so proven writable) before the first mutation
    wait_timeout: float = 120.0
    progress: Callable[[str], None] = lambda _: None
    stop: Stop = field(default_factory=Stop)
    token: str = field(default_factory=lambda: secrets.token_hex(8))
    # True in a zone run: a taint's or node delete's effect is watched for later, for all its
    # nodes at once (zonerun.py), and the step waits in `pending` for Executor.finish.
    defer_release: bool = False
    pending: list[Pending] = field(default_factory=list)
    _locks: dict[str, str] = field(default_factory=dict)  # node -> "" held, or why not
    _write: threading.Lock = field(default_factory=threading.Lock)  # trail lines, `pending`
    _claims: dict[tuple[str, str], str] = field(default_factory=dict)  # PVC -> its PV (release)
    _pvs: dict[str, str] = field(default_factory=dict)  # PV -> its CSI unique name (release)

    def run(self, plan: Plan) -> Plan:
        if self._refuse_malformed(plan):
            return plan
        try:
            for step in plan.steps:
                if self.stop.is_set():
                    step.result, step.detail = "not started", "the run was interrupted first"
                    continue
                try:
                    self._step(step)
                except KeyboardInterrupt:  # the second signal: the request was abandoned
                    self.stop.set()
                    step.result = "interrupted"
                    step.detail = (
                        "abandoned in flight: the request may or may not have reached the API "
                        "server; re-run to find out and finish"
                    )
                    self._trail(step)
        finally:
            self._release_locks()
        return plan

    def run_node_step(self, step: Step) -> None:
        """One step, as run() runs it (a zone run calls it from its workers, node by node)."""
        self._step(step)

    def refuses_malformed(self, plan: Plan) -> bool:
        """True (and every step marked refused) when a step that would change something is
        malformed: then nothing of the plan runs."""
        return self._refuse_malformed(plan)

    def _refuse_malformed(self, plan: Plan) -> bool:
        """Check every step's shape before the first change; if one step that would change
        something is malformed, nothing runs (True)."""
        bad = {
            id(s): step_problem(s) or f"unknown action {s.action!r}"
            for s in plan.steps
            if s.allowed and s.action != "wait" and (s.action not in MUTATING or step_problem(s))
        }
        if not bad:
            return False
        first = next(iter(bad.values()))
        for step in plan.steps:
            if id(step) in bad:
                step.result, step.detail = "refused", f"malformed step, never sent: {bad[id(step)]}"
            else:
                step.result = "refused"
                step.detail = f"nothing run: another step of this plan is malformed ({first})"
        return True

    def _step(self, step: Step) -> None:
        if step.action == "finalizer-held":
            step.result, step.detail = "blocked", step.gate
        elif not step.allowed:
            step.result, step.detail = "refused", step.gate
        elif step.action == "wait":
            step.result, step.detail = "waited", step.why
        elif step.action not in MUTATING or (problem := step_problem(step)):
            problem = step_problem(step) or f"unknown action {step.action!r}"
            step.result, step.detail = "refused", f"malformed step, never sent: {problem}"
        elif why := self._lock(step.node):
            step.result, step.detail = "skipped", why
            self._trail(step)
        else:
            self._one(step)

    def _one(self, step: Step) -> None:
        self.progress(f"{step.action} {step.target}")
        started, note = False, ""  # note: where the starting Event went, if not on the object
        unrecorded = False
        deferred: Deferred | None = None
        node: Obj = {}
        attempts = NODE_CHANGE_ATTEMPTS if step.action in RETRIED_ON_NODE_CHANGE else 1
        try:
            for attempt in range(1, attempts + 1):
                node = self.cluster.get_object(kube.node_path(step.node))
                reason = self._recheck(step, node)
                if reason:
                    step.result, step.detail = "skipped", reason
                    break
                if self.stop.is_set():  # a signal came while locking or re-checking
                    step.result = "not started"
                    step.detail = (
                        "the run was interrupted before another attempt; the earlier ones were "
                        "refused (the node changed), so nothing changed"
                        if started
                        else "the run was interrupted first"
                    )
                    break
                if not started:
                    note = self._record_start(step, node)
                    started = True
                    if self.stop.is_set():  # a signal came while the start was recorded
                        step.result = "not started"
                        step.detail = "the run was interrupted once the start was recorded"
                        break
                try:
                    step.detail = self._act(step, node)
                except Deferred as exc:
                    deferred = exc
                    break
                except NotConfirmed as exc:
                    # Sent and accepted, but what it was for did not happen (yet): never "done".
                    step.result = "interrupted" if exc.interrupted else "unconfirmed"
                    step.detail = exc.detail
                    break
                except NodeChanged as exc:
                    if attempt == attempts:
                        raise
                    self.progress(f"{exc.message}; reading it again")
                    try:
                        self._trail(step, "retrying", f"attempt {attempt} refused: {exc.message}")
                    except OSError as unwritten:
                        raise StartNotRecorded(
                            f"{exc.message}; trail not written before attempt {attempt + 1}: "
                            f"{unwritten}"
                        ) from unwritten
                    continue
                step.result = "done"
                if attempt > 1:
                    step.detail += f" (attempt {attempt}: the node changed under the earlier ones)"
                break
        except NodeChanged as exc:
            step.result = "skipped"
            step.detail = f"changed since the plan (precondition failed): {exc.message}; " + (
                "re-run to plan from the new state"
                if attempts == 1
                else f"{attempts} times in a row, given up; re-run"
            )
        except NotFound:
            step.result, step.detail = "skipped", "the object is gone already (vanished mid-run)"
        except Conflict as exc:
            step.result = "skipped"
            step.detail = f"changed since the plan (precondition failed): {exc.message}"
        except StartNotRecorded as exc:
            step.result, step.detail = "failed", f"{exc}; nothing sent"
            unrecorded = True
        except NodefailError as exc:  # any other API answer, or the server gone away
            step.result, step.detail = "failed", exc.message
        if deferred is not None:
            # Accepted; its result comes once its effect was looked for (a zone run watches
            # every node at once, which can take minutes): the trail says at once that the
            # request was accepted, so it is never lost if the run dies while watching.
            with suppress(OSError):
                self._trail(step, "accepted", deferred.sent)
            with self._write:
                self.pending.append(
                    Pending(
                        step,
                        node,
                        note,
                        deferred.sent,
                        deferred.by,
                        deferred.every_pod,
                        deferred.since,
                    )
                )
            return
        self._record_result(step, node, note, started, unrecorded)

    def _record_result(
        self, step: Step, node: Obj, note: str, started: bool, unrecorded: bool = False
    ) -> None:
        step.detail += note
        with suppress(OSError) if unrecorded else nullcontext():  # the trail may be what failed
            self._trail(step)
        if started:
            self._result_event(step, node)

    def finish(self, pending: Pending, released: bool, detail: str, event: bool = True) -> None:
        """The result of a deferred step, once its effect was looked for: done (observed),
        unconfirmed (not by --wait-timeout) or interrupted (a signal stopped the watch); then
        its trail line and Event, as for any step. `event`: False when the run is being
        abandoned (a second signal): the trail line only."""
        step = pending.step
        try:
            step.detail = self._released_text(released, detail, pending.sent, pending.by)
            step.result = "done"
        except NotConfirmed as exc:
            step.result = "interrupted" if exc.interrupted else "unconfirmed"
            step.detail = exc.detail
        if event:
            self._record_result(step, pending.node, pending.note, started=True)
        else:
            step.detail += pending.note + " (run abandoned: no Event of the result)"
            with suppress(OSError):
                self._trail(step)
