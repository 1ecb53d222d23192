"""The record of each mutation: before the request, a trail line (with --log-file) and an Event
("starting"; if either cannot be written, StartNotRecorded and no request), and after it the
result, as a trail line and an Event.
"""

from __future__ import annotations

import json
import socket

from kubectl_nodefail import __version__
from kubectl_nodefail.common.errors import ApiError, Forbidden, NodefailError, NotFound
from kubectl_nodefail.remediate.execbase import ExecutorBase, _now, _pod_ref
from kubectl_nodefail.remediate.steps import Step
from kubectl_nodefail.snapshot.model import Obj, format_time

COMPONENT = "kubectl-nodefail"
NAMESPACE_TERMINATING = "NamespaceTerminating"  # the cause type of the lifecycle admission's 403


class StartNotRecorded(Exception):
    """The "starting" trail line or Event could not be written: the request must not be sent."""


class Trail(ExecutorBase):
    """The Executor's trail lines and Events."""

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
