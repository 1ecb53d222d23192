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
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from types import FrameType
from typing import TextIO
from urllib.parse import quote

from kubectl_nodefail import __version__
from kubectl_nodefail.analysis import eviction, facts
from kubectl_nodefail.analysis.advice import holding_finalizers
from kubectl_nodefail.analysis.claims import fact
from kubectl_nodefail.analysis.nodes import is_ready
from kubectl_nodefail.cluster import kube
from kubectl_nodefail.common.errors import (
    ApiError,
    AuthError,
    Conflict,
    Forbidden,
    NodefailError,
    NotFound,
)
from kubectl_nodefail.remediate.plan import (
    MUTATING,
    Plan,
    Step,
    finalizer_owner,
)
from kubectl_nodefail.remediate.planfile import step_problem
from kubectl_nodefail.snapshot import dumpschema
from kubectl_nodefail.snapshot.model import Obj, format_time, parse_time

ANNOTATION_TAINTED_BY = facts.ANNOTATION_TAINTED_BY
ANNOTATION_UNTAINTED_BY = "kubectl-nodefail.io/out-of-service-removed-by"
ANNOTATION_LOCK = "kubectl-nodefail.io/lock"
COMPONENT = "kubectl-nodefail"
NAMESPACE_TERMINATING = "NamespaceTerminating"  # the cause type of the lifecycle admission's 403
LOCK_MARGIN_SECONDS = 300  # a lock lasts the out-of-service wait plus this
# A node object changes under a run for reasons of its own (status, conditions, the node
# controller's taints), most often right after its kubelet returns. The step whose only gate is
# the node object (remove-out-of-service: the node is Ready) reads it again, re-checks and tries
# again; the others were planned from more than the node (pods, lease, attestation, the cluster's
# zones), so a change skips them and a re-run plans afresh.
RETRIED_ON_NODE_CHANGE = frozenset({"remove-out-of-service"})
NODE_CHANGE_ATTEMPTS = 3  # also the tries at taking and releasing the lock

# What each action needs, as (verb, group, resource); every mutating action also takes the
# node lock (get + patch nodes).
_LOCK = [("get", "", "nodes"), ("patch", "", "nodes")]
NEEDS: dict[str, list[tuple[str, str, str]]] = {
    "taint-out-of-service": [
        *_LOCK,
        ("get", "coordination.k8s.io", "leases"),
        ("list", "", "pods"),
    ],
    "remove-out-of-service": [*_LOCK],
    "force-delete-pod": [
        *_LOCK,
        ("get", "coordination.k8s.io", "leases"),
        ("get", "", "pods"),
        ("delete", "", "pods"),
    ],
    "delete-node": [
        *_LOCK,
        ("get", "coordination.k8s.io", "leases"),
        ("delete", "", "nodes"),
    ],
}


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _escape(key: str) -> str:
    """JSON-pointer escaping of a map key (annotations contain '/')."""
    return key.replace("~", "~0").replace("/", "~1")


def _pod_ref(step: Step) -> tuple[str, str]:
    """(namespace, name) of a pod step's target "pod/NAMESPACE/NAME"; ("", "") for node steps."""
    if not step.target.startswith("pod/"):
        return "", ""
    _, ns, name = step.target.split("/", 2)
    return ns, name


def preflight(cluster: kube.Cluster, plan: Plan) -> list[str]:
    """Missing permissions for the plan's mutating steps, by SelfSubjectAccessReview."""
    wanted: set[tuple[str, str, str, str]] = set()
    for step in plan.mutating:
        ns, _ = _pod_ref(step)
        for verb, group, resource in NEEDS.get(step.action, []):
            scope = (
                facts.NODE_LEASE_NAMESPACE
                if resource == "leases"
                else (ns if resource == "pods" else "")
            )
            wanted.add((verb, group, resource, scope))
        wanted.add(("create", "", "events", "default"))  # a node's Events; a pod's, at times
        if ns:
            wanted.add(("create", "", "events", ns))
    missing = []
    for verb, group, resource, ns in sorted(wanted):
        review = cluster.create(
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {
                    "resourceAttributes": {
                        "verb": verb,
                        "group": group,
                        "resource": resource,
                        **({"namespace": ns} if ns else {}),
                    }
                },
            },
        )
        if kube.answer_field(review, "status", "allowed") is not True:  # "true" is not true
            where = f" in namespace {ns}" if ns else " (cluster-wide)"
            missing.append(f"{verb} {resource}{'.' + group if group else ''}{where}")
    return missing


# SelfSubjectReview: v1 from 1.28, v1beta1 in 1.27, v1alpha1 in 1.26 behind a feature gate that
# is off by default (kube_features.go APISelfSubjectReview).
SELF_SUBJECT_REVIEW_VERSIONS = ("v1", "v1beta1", "v1alpha1")


def whoami(cluster: kube.Cluster) -> str:
    """Who the server says we are, for the trail, the Events and the annotations."""
    for version in SELF_SUBJECT_REVIEW_VERSIONS:
        try:
            review = cluster.create(
                f"/apis/authentication.k8s.io/{version}/selfsubjectreviews",
                {"apiVersion": f"authentication.k8s.io/{version}", "kind": "SelfSubjectReview"},
            )
        except NotFound:
            continue  # not served in this version: try the older one
        except (ApiError, Forbidden):  # 1.26 forbids the review to all but admins (no rule)
            break
        user = kube.answer_field(review, "status", "userInfo", "username")
        if isinstance(user, str) and user:
            return user
        break
    return f"unknown user (context {cluster.context})"


class StartNotRecorded(Exception):
    """The "starting" trail line or Event could not be written: the request must not be sent."""


class Stop:
    """SIGINT/SIGTERM during a run. The first asks to stop once the request in flight has
    answered (its result is recorded); the second abandons that request (KeyboardInterrupt)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.signals = 0

    def is_set(self) -> bool:
        return self._event.is_set()

    def set(self) -> None:
        self._event.set()

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True at once when a stop was asked."""
        return self._event.wait(seconds)

    @contextmanager
    def on_signals(self, say: Callable[[str], None]) -> Iterator[Stop]:
        def handler(signum: int, frame: FrameType | None) -> None:
            self.signals += 1
            self._event.set()
            if self.signals == 1:
                say(
                    f"{signal.Signals(signum).name}: stopping after the request in flight "
                    "(send it again to abandon that request)"
                )
            elif self.signals == 2:
                say("abandoning the request in flight")
                raise KeyboardInterrupt

        old = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield self
        finally:
            for sig, previous in old.items():
                signal.signal(sig, previous)


class NotConfirmed(Exception):
    """A request the server accepted whose effect was not observed: the pods it was to release
    still there at --wait-timeout (or when a signal stopped the watch). `interrupted`: the
    watch was stopped, not timed out."""

    def __init__(self, detail: str, interrupted: bool = False) -> None:
        super().__init__(detail)
        self.detail = detail
        self.interrupted = interrupted


class NodeChanged(Conflict):
    """A node patch refused because the node changed since it was read."""


class Deferred(Exception):
    """A taint or node delete accepted by the server while the executor defers the watch for
    its effect (a zone run watches all its nodes at once: zonerun.py)."""

    def __init__(self, sent: str, by: str, every_pod: bool) -> None:
        super().__init__(sent)
        self.sent, self.by, self.every_pod = sent, by, every_pod


@dataclass
class Pending:
    """A step whose request was accepted and whose effect is still to be observed: its result,
    trail line and Event are written by Executor.finish."""

    step: Step
    node: Obj
    note: str  # where the starting Event went, if not on the object
    sent: str
    by: str
    every_pod: bool


def _lease_second(value: str) -> str:
    """A renewTime to the second (the plan keeps seconds; the lease has microseconds)."""
    when = parse_time(value)
    return format_time(when) if when is not None else value


@dataclass
class Executor:
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
                    Pending(step, node, note, deferred.sent, deferred.by, deferred.every_pod)
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

    def _act(self, step: Step, node: Obj) -> str:
        if step.action == "taint-out-of-service":
            return self._taint_out_of_service(step, node)
        if step.action == "remove-out-of-service":
            return self._remove_out_of_service(step, node)
        if step.action == "force-delete-pod":
            return self._force_delete_pod(step)
        if step.action == "delete-node":
            return self._delete_node(step, node)
        raise AssertionError(f"no executor for {step.action}")  # _step refused it already

    # --- re-checks ---

    def _recheck(self, step: Step, node: Obj) -> str | None:
        """Why the step must not run now (the pod, the node or its lease moved), or None."""
        uid = (node.get("metadata") or {}).get("uid")
        if step.target.startswith("node/") and step.uid and uid != step.uid:
            return (
                f"node {step.node} is another object now (UID {uid}, planned {step.uid}): it "
                "was recreated since the plan; nothing is done"
            )
        if step.action == "remove-out-of-service":
            return None if is_ready(node) else "the node is not Ready any more: taint kept"
        if step.action == "force-delete-pod":
            reason = self._recheck_pod(step)
            if reason:
                return reason
        if is_ready(node):
            return "the node came back (Ready): nothing is deleted"
        try:
            lease = self.cluster.get_object(  # held to the Lease schema: renewTime a time
                f"/apis/coordination.k8s.io/v1/namespaces/"
                f"{facts.NODE_LEASE_NAMESPACE}/leases/{quote(step.node)}"
            )
            renewed = _lease_second((lease.get("spec") or {}).get("renewTime") or "")
        except NotFound:
            renewed = ""
        if renewed != step.lease_renewed and (renewed or step.lease_renewed):
            return (
                f"the node's lease changed since the plan (renewed {renewed or 'never'}, "
                f"planned {step.lease_renewed or 'none'}): its kubelet may be alive, "
                "nothing is deleted"
            )
        return None

    def _recheck_pod(self, step: Step) -> str | None:
        """The pod the step deletes, read now: the same object, still on the step's node."""
        ns, name = _pod_ref(step)
        pod = self.cluster.get_object(kube.pod_path(ns, name))
        meta = pod.get("metadata") or {}
        if meta.get("uid") != step.uid:
            return (
                f"a different pod of that name exists now (UID {meta.get('uid')}, planned "
                f"{step.uid}): not deleted"
            )
        bound = (pod.get("spec") or {}).get("nodeName") or ""
        if bound != step.node:
            return f"the pod is bound to node {bound or '(none)'!r}, not {step.node!r}: not deleted"
        finalizers = holding_finalizers(
            list(meta.get("finalizers") or []), bool(meta.get("deletionTimestamp")), "force-delete"
        )
        if finalizers:
            owners = "; ".join(finalizer_owner(f, ns, name) for f in finalizers)
            return (
                f"held by finalizer {', '.join(finalizers)} now (a delete would not free "
                f"it): {owners}"
            )
        return None

    # --- the node lock ---

    def _lock(self, node: str) -> str | None:
        """Take this run's lock on the node (once); None when held, else why we stood back."""
        if node in self._locks:
            return self._locks[node] or None
        try:
            why = self._take_lock(node)
        except NodefailError as exc:
            why = f"could not take the lock on node {node}: {exc.message}; nothing done here"
        self._locks[node] = why or ""
        return why

    def _take_lock(self, name: str) -> str | None:
        until = _now() + timedelta(seconds=self.wait_timeout + LOCK_MARGIN_SECONDS)
        mine = json.dumps(
            {
                "holder": f"{self.user} on {socket.gethostname()} (pid {os.getpid()})",
                "token": self.token,
                "until": format_time(until),
            },
            sort_keys=True,
        )
        for _ in range(NODE_CHANGE_ATTEMPTS):
            try:
                node = self.cluster.get_object(kube.node_path(name))
            except NotFound:
                return None  # its steps find the node gone and skip
            held = _lock_of(node)
            if held is not None and held.get("token") != self.token:
                expiry = parse_time(str(held.get("until") or ""))
                if expiry is None or expiry > _now():
                    return (
                        f"another remediate run holds the lock on node {name}: "
                        f"{held.get('holder') or 'unknown holder'}, until "
                        f"{held.get('until') or '(unreadable)'}; stood back, nothing done here "
                        f"(if that run died, the lock expires then, or remove the annotation "
                        f"{ANNOTATION_LOCK})"
                    )
                self.progress(f"taking over the expired lock of {held.get('holder')} on {name}")
            try:
                self._patch_node(node, _annotation_set(node, ANNOTATION_LOCK, mine))
            except NotFound:
                return None  # its steps find the node gone and skip
            except NodeChanged:
                continue  # the node changed (maybe another run locked it): look again
            self.progress(f"locked node {name} until {format_time(until)}")
            return None
        return f"could not take the lock on node {name}: it kept changing; nothing done here"

    def _release_locks(self) -> None:
        for name in self.held_locks():
            self.release_lock(name)
        self._locks.clear()

    def held_locks(self) -> list[str]:
        """The nodes whose lock this run holds."""
        return [name for name, why in list(self._locks.items()) if not why]

    def release_lock(self, name: str) -> None:
        """Remove this run's lock from the node (if it still holds it)."""
        for _ in range(NODE_CHANGE_ATTEMPTS):
            try:
                node = self.cluster.get_object(kube.node_path(name))
                held = _lock_of(node)
                if held is None or held.get("token") != self.token:
                    break
                path = f"/metadata/annotations/{_escape(ANNOTATION_LOCK)}"
                self._patch_node(node, [{"op": "remove", "path": path}])
                self.progress(f"released the lock on node {name}")
                break
            except NotFound:
                break
            except Conflict:
                continue
            except NodefailError as exc:
                self.progress(f"could not release the lock on node {name}: {exc.message}")
                break
        else:
            self.progress(
                f"could not release the lock on node {name}: the node changed under each "
                f"of {NODE_CHANGE_ATTEMPTS} attempts; it expires by itself "
                f"(annotation {ANNOTATION_LOCK})"
            )

    # --- the actions ---

    def _taint_out_of_service(self, step: Step, node: Obj) -> str:
        taints = (node.get("spec") or {}).get("taints")
        taint = {
            "key": facts.TAINT_OUT_OF_SERVICE,
            "value": "nodeshutdown",
            "effect": "NoExecute",
            "timeAdded": format_time(_now()),
        }
        ops: list[Obj] = [
            {"op": "add", "path": "/spec/taints/-", "value": taint}
            if taints is not None
            else {"op": "add", "path": "/spec/taints", "value": [taint]}
        ]
        ops += self._annotation_ops(node, ANNOTATION_TAINTED_BY)
        self._patch_node(node, ops)
        return self._released(step.node, "the taint", "out-of-service taint applied")

    def _remove_out_of_service(self, step: Step, node: Obj) -> str:
        taints = (node.get("spec") or {}).get("taints") or []
        index = [i for i, t in enumerate(taints) if t.get("key") == facts.TAINT_OUT_OF_SERVICE]
        if not index:
            return "no out-of-service taint left (removed by someone else)"
        ops: list[Obj] = [{"op": "remove", "path": f"/spec/taints/{i}"} for i in reversed(index)]
        ops += self._annotation_ops(node, ANNOTATION_UNTAINTED_BY)
        self._patch_node(node, ops)
        return "out-of-service taint removed"

    def _force_delete_pod(self, step: Step) -> str:
        ns, name = _pod_ref(step)
        if not step.uid or not step.resource_version:  # never sent without both preconditions
            raise AssertionError("a force delete without preconditions reached the executor")
        self.cluster.delete(
            kube.pod_path(ns, name),
            grace_seconds=0,
            uid=step.uid,
            resource_version=step.resource_version,
        )
        done = "force-deleted (grace 0, UID and resourceVersion preconditions)"
        try:
            left = self.cluster.get_object(kube.pod_path(ns, name))
        except NotFound:
            return done + "; the pod is gone"
        if left["metadata"].get("uid") != step.uid:
            return done + "; the pod is gone (a new pod of that name exists)"
        holders = list(left["metadata"].get("finalizers") or [])
        raise NotConfirmed(
            f"{done}, but the pod is still there"
            + (f": held by finalizers {', '.join(holders)}" if holders else "")
        )

    def _delete_node(self, step: Step, node: Obj) -> str:
        self.cluster.delete(
            kube.node_path(step.node),
            uid=node["metadata"]["uid"],
            resource_version=node["metadata"]["resourceVersion"],
        )
        return self._released(
            step.node, "PodGC (the Node is gone)", "Node object deleted", every_pod=True
        )

    def _annotation_ops(self, node: Obj, key: str) -> list[Obj]:
        value = f"{self.user} at {format_time(_now())} (kubectl-nodefail {__version__})"
        return _annotation_set(node, key, value)

    def _patch_node(self, node: Obj, ops: list[Obj]) -> None:
        """A JSON patch of the node as read, refused by the server if it changed since.

        Every node patch starts with a test of the resourceVersion read. When that test fails,
        the API server answers 422 with a generic message and no cause (it drops the patch
        library's error text: apiserver endpoints/handlers/patch.go), the same answer as for any
        patch that does not apply. So a 422 is told apart by reading the node again: a new
        resourceVersion means it changed under us (NodeChanged); otherwise the error stands."""
        meta = node["metadata"]
        name, read = meta["name"], meta["resourceVersion"]
        test = {"op": "test", "path": "/metadata/resourceVersion", "value": read}
        try:
            self.cluster.json_patch(kube.node_path(name), [test, *ops])
        except ApiError as exc:
            if exc.status != 422 or not exc.bare:  # a validation error names its object
                raise
            try:
                now = self.cluster.get_object(kube.node_path(name))["metadata"]["resourceVersion"]
            except NotFound:
                raise
            except NodefailError as again:
                raise ApiError(
                    f"{exc.message}; reading node {name} again to see whether it changed "
                    f"failed too: {again.message}",
                    status=exc.status,
                ) from exc
            if now == read:
                raise
            raise NodeChanged(
                f"node {name} changed between our read and our write (resourceVersion "
                f"{read} -> {now})",
                status=422,
            ) from exc

    def _released(self, node: str, by: str, sent: str, every_pod: bool = False) -> str:
        """What the step was for, observed: the node's Terminating pods (`every_pod`: all its
        pods, for a deleted Node) and volume attachments gone. Otherwise NotConfirmed, naming
        what is still there. `sent`: what the accepted request did. In a zone run (deferred),
        Deferred: the watch comes later, for every node of the run at once."""
        if self.defer_release:
            raise Deferred(sent, by, every_pod)
        released, detail = self._wait_released(node, every_pod)
        return self._released_text(released, detail, sent, by)

    def _released_text(self, released: bool, detail: str, sent: str, by: str) -> str:
        if released:
            return f"{sent}; {detail}"
        if self.stop.is_set():
            raise NotConfirmed(f"{sent}; {detail}", interrupted=True)
        raise NotConfirmed(
            f"{sent}, but not its effect: {detail}. What {by} should have caused (PodGC's "
            "force delete, the detach) did not happen; look for a refusal in "
            "kube-controller-manager's log (an admission policy or webhook), then re-run"
        )

    def _wait_released(self, node: str, every_pod: bool = False) -> tuple[bool, str]:
        """Watch the node's pods and VolumeAttachments go, up to the timeout or a stop.

        Pods held by a finalizer the taint does not release are named, never waited for."""
        deadline = _now() + timedelta(seconds=self.wait_timeout)
        while True:
            done, detail, stuck, vas = self.release_check(node, every_pod)
            if done:
                return True, detail
            left = (deadline - _now()).total_seconds()
            self.progress(
                f"waiting for {stuck} Terminating pods and {vas} volume attachments "
                f"on node {node} to go ({max(left, 0):.0f}s left; Ctrl-C stops waiting)"
            )
            if _now() > deadline or self.stop.is_set():
                why = "stopped watching (interrupted)" if self.stop.is_set() else "after"
                waited = f"{why} {self.wait_timeout:.0f}s" if why == "after" else why
                return False, f"{waited}: {detail}"
            self.stop.wait(2)

    def release_check(
        self, node: str, every_pod: bool = False, attachments: list[Obj] | None = None
    ) -> tuple[bool, str, int, int]:
        """One look at what a taint or node delete was to release on `node`: (released, what
        is left or what was seen, pods still to go, volume attachments still on the node).
        `attachments`: the cluster's VolumeAttachments read once for many nodes (zone run)."""
        pods = self.cluster.list_all("/api/v1/pods", "Pod", fieldSelector=f"spec.nodeName={node}")
        held = [p for p in pods if _holders(p)]
        stuck = [
            p
            for p in pods
            if not _holders(p)
            and (
                every_pod
                or p["metadata"].get("deletionTimestamp")
                or not eviction.stays_under_out_of_service(p)
            )
        ]
        if attachments is None:
            attachments = self.attachments()
        vas = [v for v in attachments if (v.get("spec") or {}).get("nodeName") == node]
        not_waited = (
            "; held by finalizers, not waited for: "
            + ", ".join(
                f"{p['metadata'].get('namespace')}/{p['metadata']['name']} "
                f"({', '.join(_holders(p))})"
                for p in held
            )
            if held
            else ""
        )
        if not stuck and not vas:
            return (
                True,
                f"{len(pods)} pods left on the node (tolerating the taint or held), no "
                f"Terminating pod released by the taint left, no volume attached{not_waited}",
                0,
                0,
            )
        names = ", ".join(
            f"{p['metadata'].get('namespace')}/{p['metadata']['name']}" for p in stuck[:5]
        ) + (", ..." if len(stuck) > 5 else "")
        return (
            False,
            f"still {len(stuck)} pods to be released"
            + (f" ({names})" if stuck else "")
            + f" and {len(vas)} volume attachments on the node{not_waited}",
            len(stuck),
            len(vas),
        )

    def attachments(self) -> list[Obj]:
        """Every VolumeAttachment ([] when they may not be read), held to the dump schema as
        the diagnosis's are (a malformed one: MalformedResponse, exit 14)."""
        try:
            return dumpschema.take_live(
                self.cluster.list_all(
                    "/apis/storage.k8s.io/v1/volumeattachments", "VolumeAttachment"
                )
            )
        except Forbidden:
            return []

    # --- trail: a line and an Event before each mutation, and after it ---

    def _record_start(self, step: Step, node: Obj) -> str:
        """Before the request: the trail line (with --log-file) and an Event, or no request.
        Returns a note for the result (where the Event went)."""
        try:
            self._trail(step, result="starting")
        except OSError as exc:
            raise StartNotRecorded(f"trail not written: {exc}") from exc
        try:
            return self._create_event(step, node, starting=True)
        except NodefailError as exc:
            raise StartNotRecorded(f"starting Event not recorded: {exc.message}") from exc

    def _trail(self, step: Step, result: str | None = None, detail: str = "") -> None:
        record = {
            "time": format_time(_now()),
            "user": self.user,
            "context": self.cluster.context,
            "action": step.action,
            "target": step.target,
            "node": step.node,
            "uid": step.uid,
            "result": result or step.result,
            "detail": detail if result else step.detail,
            "why": step.why,
            "evidence": step.evidence,
            "version": __version__,
        }
        if self.log is not None:
            with self._write:  # a zone run writes from several threads: whole lines
                self.log.write(json.dumps(record, sort_keys=True) + "\n")
                self.log.flush()

    def _result_event(self, step: Step, node: Obj) -> None:
        """Record the step's result as an Event; a note on the result when that fails (the
        request was sent, so the result stands)."""
        try:
            self._create_event(step, node, starting=False)
        except NodefailError as exc:
            step.detail += f" (no Event of the result recorded: {exc.message})"

    def _create_event(self, step: Step, node: Obj, starting: bool) -> str:
        """Record the step as an Event on the object it acts on. A pod's namespace refuses it
        when it is being deleted (it accepts no new object; that is a usual reason for its pods
        to be stuck) or gone: then the Event goes on the pod's node, naming the pod, and the
        returned note says so ("" when the Event is on the object itself). Any other refusal
        stands: a policy that keeps our Events out of a namespace is not worked around."""
        what = "starting" if starting else f"{step.result}: {step.detail}"
        message = (
            f"kubectl-nodefail {__version__} ({self.user}): {step.action}: {what}. "
            f"Why: {step.why}. Evidence: {'; '.join(step.evidence) or 'none needed'}"
        )
        reason = "Nodefail" + "".join(w.title() for w in step.action.split("-"))
        reason += "Starting" if starting else ""
        # kubectl describe node lists the Events whose involvedObject has the node's uid
        on_node = {"kind": "Node", "name": step.node, "uid": node["metadata"]["uid"]}
        ns, name = _pod_ref(step)
        if not ns:
            self._post_event("default", on_node, reason, message)
            return ""
        pod = {"kind": "Pod", "namespace": ns, "name": name, "uid": step.uid}
        try:
            self._post_event(ns, pod, reason, message)
            return ""
        except NotFound:
            refused = f"namespace {ns} is gone"
        except Forbidden as exc:
            if NAMESPACE_TERMINATING not in exc.causes:
                raise
            refused = f"namespace {ns} is being deleted"
        try:
            self._post_event("default", on_node, reason, f"pod {ns}/{name}: {message}")
        except NodefailError as exc:
            raise ApiError(f"{refused}, and on node {step.node}: {exc.message}") from exc
        return f" (its Event is on node {step.node}: {refused})"

    def _post_event(self, ns: str, involved: Obj, reason: str, message: str) -> None:
        now = format_time(_now())
        self.cluster.create(
            f"/api/v1/namespaces/{ns}/events",
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"generateName": f"{involved['name']}.nodefail.", "namespace": ns},
                "involvedObject": {"apiVersion": "v1", **involved},
                "reason": reason,
                "type": "Warning",
                "message": message[:1000],
                "source": {"component": COMPONENT, "host": socket.gethostname()},
                "reportingComponent": COMPONENT,
                "reportingInstance": socket.gethostname(),
                "firstTimestamp": now,
                "lastTimestamp": now,
                "count": 1,
            },
        )


def _annotation_set(node: Obj, key: str, value: str) -> list[Obj]:
    if node["metadata"].get("annotations") is None:
        return [{"op": "add", "path": "/metadata/annotations", "value": {key: value}}]
    return [{"op": "add", "path": f"/metadata/annotations/{_escape(key)}", "value": value}]


def _lock_of(node: Obj) -> dict[str, object] | None:
    """The lock annotation's value, or None; an unreadable value counts as held."""
    raw = ((node.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_LOCK)
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"holder": f"unreadable lock {raw[:60]!r}"}


def _holders(pod: Obj) -> list[str]:
    """Finalizers that keep this pod after the out-of-service taint (see holding_finalizers)."""
    meta = pod.get("metadata") or {}
    return holding_finalizers(list(meta.get("finalizers") or []), True, "out-of-service")


def summary(plan: Plan) -> dict[str, int]:
    """How many steps ended (or, in a plan, stand) in each state."""
    counts: dict[str, int] = {}
    for step in plan.steps:
        state = step.result or ("planned" if step.allowed else "refused")
        counts[state] = counts.get(state, 0) + 1
    return counts


def _named(entry: str) -> str:
    """NS/NAME of a step's pod entry `NS/NAME (controller)`."""
    return entry.split(" ", 1)[0]


def restate(cluster: kube.Cluster, plan: Plan) -> None:
    """Before the result speaks of pods that stay stuck (a step refused, skipped or not
    started), read the node's pods again (one list per node): only a pod still bound to that
    step's node stays named, and the step's facts become those of the re-read (its UID, its
    node); one that is not (gone, or recreated elsewhere under its name) is said so instead (in
    place). A read that fails leaves the names, marked as not re-read, with no facts."""
    on_node: dict[str, dict[str, Obj] | None] = {}
    for step in plan.steps:
        runs = step.allowed and step.result in ("", "done", "unconfirmed", "interrupted")
        if runs or not (step.releases or step.leaves_stuck):
            continue
        if step.node not in on_node:
            try:
                pods = cluster.list_all(
                    "/api/v1/pods", "Pod", fieldSelector=f"spec.nodeName={step.node}"
                )
                on_node[step.node] = {
                    f"{p['metadata'].get('namespace')}/{p['metadata']['name']}": p for p in pods
                }
            except (ApiError, AuthError):
                on_node[step.node] = None
        here = on_node[step.node]
        if here is None:
            step.releases = [f"{entry} [not re-read]" for entry in step.releases]
            step.leaves_stuck = [f"{entry} [not re-read]" for entry in step.leaves_stuck]
            step.because = []
            continue
        moved = [_named(e) for e in step.releases + step.leaves_stuck if _named(e) not in here]
        step.releases = [e for e in step.releases if _named(e) in here]
        step.leaves_stuck = [e for e in step.leaves_stuck if _named(e) in here]
        step.because = [
            fact("Pod", here[_named(e)], path)
            for e in step.releases + step.leaves_stuck
            for path in ("metadata.uid", "spec.nodeName")
        ] + [fact("Pod", here[_named(e)], "metadata.finalizers") for e in step.leaves_stuck]
        if moved:
            step.detail = (step.detail + "; " if step.detail else "") + (
                f"no longer on {step.node} when re-read (gone, or recreated elsewhere): "
                + ", ".join(moved)
            )
