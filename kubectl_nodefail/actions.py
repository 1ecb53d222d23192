"""The only code path that mutates the cluster: executes a Plan's allowed steps.

Before each step it re-reads what the step depends on (node still not Ready, lease not renewed
since the plan, pod UID and resourceVersion unchanged, sent as delete preconditions) and skips
the step, saying why, when anything moved. Every action leaves an Event on the object it
touched, a line in the optional log file, and on nodes an annotation saying who and when.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from urllib.parse import quote

from kubectl_nodefail import __version__, kube
from kubectl_nodefail.analysis import facts
from kubectl_nodefail.analysis.nodes import is_ready
from kubectl_nodefail.errors import ApiError, AuthError, Conflict, Forbidden, NotFound
from kubectl_nodefail.plan import Plan, Step
from kubectl_nodefail.snapshot import Obj, format_time

ANNOTATION_TAINTED_BY = "kubectl-nodefail.io/out-of-service-by"
ANNOTATION_UNTAINTED_BY = "kubectl-nodefail.io/out-of-service-removed-by"
COMPONENT = "kubectl-nodefail"

# What each action needs, as (verb, group, resource, namespaced-by-step).
NEEDS: dict[str, list[tuple[str, str, str]]] = {
    "taint-out-of-service": [
        ("get", "", "nodes"),
        ("patch", "", "nodes"),
        ("get", "coordination.k8s.io", "leases"),
        ("list", "", "pods"),
    ],
    "remove-out-of-service": [("get", "", "nodes"), ("patch", "", "nodes")],
    "force-delete-pod": [
        ("get", "", "nodes"),
        ("get", "coordination.k8s.io", "leases"),
        ("delete", "", "pods"),
    ],
    "delete-node": [
        ("get", "", "nodes"),
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
        wanted.add(("create", "", "events", ns or "default"))
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
        if not (review.get("status") or {}).get("allowed"):
            where = f" in namespace {ns}" if ns else " (cluster-wide)"
            missing.append(f"{verb} {resource}{'.' + group if group else ''}{where}")
    return missing


def whoami(cluster: kube.Cluster) -> str:
    try:
        review = cluster.create(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
        )
        return str(((review.get("status") or {}).get("userInfo") or {}).get("username") or "?")
    except ApiError:
        return "unknown user"


@dataclass
class Executor:
    cluster: kube.Cluster
    user: str
    log_file: str | None = None
    wait_timeout: float = 120.0
    progress: Callable[[str], None] = lambda _: None

    def run(self, plan: Plan) -> Plan:
        for step in plan.steps:
            if not step.allowed:
                step.result, step.detail = "refused", step.gate
            elif step.action == "wait":
                step.result, step.detail = "waited", step.why
            else:
                self._one(step)
        return plan

    def _one(self, step: Step) -> None:
        self.progress(f"{step.action} {step.target}")
        try:
            node = self.cluster.get(kube.node_path(step.node))
            reason = self._recheck(step, node)
            if reason:
                step.result, step.detail = "skipped", reason
            else:
                step.detail = getattr(self, "_" + step.action.replace("-", "_"))(step, node)
                step.result = "done"
        except NotFound:
            step.result, step.detail = "skipped", "the object is gone already (vanished mid-run)"
        except Conflict as exc:
            step.result = "skipped"
            step.detail = f"changed since the plan (precondition failed): {exc.message}"
        except (ApiError, AuthError) as exc:
            step.result, step.detail = "failed", exc.message
        self._trail(step)

    # --- re-checks ---

    def _recheck(self, step: Step, node: Obj) -> str | None:
        """Why the step must not run now (the node, its lease or the pod moved), or None."""
        if step.action == "remove-out-of-service":
            return None if is_ready(node) else "the node is not Ready any more: taint kept"
        if is_ready(node):
            return "the node came back (Ready): nothing is deleted"
        try:
            lease = self.cluster.get(
                f"/apis/coordination.k8s.io/v1/namespaces/"
                f"{facts.NODE_LEASE_NAMESPACE}/leases/{quote(step.node)}"
            )
            renewed = (lease.get("spec") or {}).get("renewTime") or ""
        except NotFound:
            renewed = ""
        if step.lease_renewed and renewed and renewed[:19] != step.lease_renewed[:19]:
            return (
                f"the node's lease was renewed since the plan ({renewed}): its kubelet is "
                "alive, nothing is deleted"
            )
        return None

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
            {
                "op": "test",
                "path": "/metadata/resourceVersion",
                "value": node["metadata"]["resourceVersion"],
            }
        ]
        ops.append(
            {"op": "add", "path": "/spec/taints/-", "value": taint}
            if taints is not None
            else {"op": "add", "path": "/spec/taints", "value": [taint]}
        )
        ops += self._annotation_ops(node, ANNOTATION_TAINTED_BY)
        self._patch_node(step.node, ops)
        return "out-of-service taint applied; " + self._wait_released(step.node)

    def _remove_out_of_service(self, step: Step, node: Obj) -> str:
        taints = (node.get("spec") or {}).get("taints") or []
        index = [i for i, t in enumerate(taints) if t.get("key") == facts.TAINT_OUT_OF_SERVICE]
        if not index:
            return "no out-of-service taint left (removed by someone else)"
        ops: list[Obj] = [
            {
                "op": "test",
                "path": "/metadata/resourceVersion",
                "value": node["metadata"]["resourceVersion"],
            }
        ]
        ops += [{"op": "remove", "path": f"/spec/taints/{i}"} for i in reversed(index)]
        ops += self._annotation_ops(node, ANNOTATION_UNTAINTED_BY)
        self._patch_node(step.node, ops)
        return "out-of-service taint removed"

    def _force_delete_pod(self, step: Step, node: Obj) -> str:
        ns, name = _pod_ref(step)
        self.cluster.delete(
            kube.pod_path(ns, name),
            grace_seconds=0,
            uid=step.uid,
            resource_version=step.resource_version or None,
        )
        return "force-deleted (grace 0, UID and resourceVersion preconditions)"

    def _delete_node(self, step: Step, node: Obj) -> str:
        self.cluster.delete(
            kube.node_path(step.node),
            uid=node["metadata"]["uid"],
            resource_version=node["metadata"]["resourceVersion"],
        )
        return "Node object deleted; PodGC removes its pods within about a minute"

    def _annotation_ops(self, node: Obj, key: str) -> list[Obj]:
        value = f"{self.user} at {format_time(_now())} (kubectl-nodefail {__version__})"
        if node["metadata"].get("annotations") is None:
            return [{"op": "add", "path": "/metadata/annotations", "value": {key: value}}]
        return [{"op": "add", "path": f"/metadata/annotations/{_escape(key)}", "value": value}]

    def _patch_node(self, name: str, ops: list[Obj]) -> None:
        try:
            self.cluster.json_patch(kube.node_path(name), ops)
        except ApiError as exc:
            if exc.status == 422 and "test" in exc.message:
                raise Conflict(f"node {name} changed while patching", status=409) from exc
            raise

    def _wait_released(self, node: str) -> str:
        """Watch the node's pods and VolumeAttachments go, up to the timeout."""
        deadline = time.monotonic() + self.wait_timeout
        while True:
            pods = self.cluster.list_all(
                "/api/v1/pods", "Pod", fieldSelector=f"spec.nodeName={node}"
            )
            stuck = [p for p in pods if p["metadata"].get("deletionTimestamp")]
            try:
                vas = [
                    v
                    for v in self.cluster.list_all(
                        "/apis/storage.k8s.io/v1/volumeattachments", "VolumeAttachment"
                    )
                    if (v.get("spec") or {}).get("nodeName") == node
                ]
            except Forbidden:
                vas = []
            if not stuck and not vas:
                return f"{len(pods)} pods left on the node, no Terminating pod, no volume attached"
            if time.monotonic() > deadline:
                return (
                    f"after {self.wait_timeout:.0f}s still {len(stuck)} Terminating pods and "
                    f"{len(vas)} volume attachments on the node"
                )
            time.sleep(2)

    # --- trail ---

    def _trail(self, step: Step) -> None:
        if step.result not in ("done", "skipped", "failed"):
            return
        record = {
            "time": format_time(_now()),
            "user": self.user,
            "context": self.cluster.context,
            "action": step.action,
            "target": step.target,
            "node": step.node,
            "result": step.result,
            "detail": step.detail,
            "why": step.why,
            "evidence": step.evidence,
            "version": __version__,
        }
        if self.log_file:
            with open(self.log_file, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(record, sort_keys=True) + "\n")
        if step.result == "done":
            try:
                self._event(step)
            except ApiError as exc:
                step.detail += f" (no Event recorded: {exc.message})"

    def _event(self, step: Step) -> None:
        ns, name = _pod_ref(step)
        if ns:
            involved = {
                "kind": "Pod",
                "apiVersion": "v1",
                "namespace": ns,
                "name": name,
                "uid": step.uid,
            }
        else:
            ns, name = "default", step.node
            involved = {"kind": "Node", "apiVersion": "v1", "name": name}
        now = format_time(_now())
        reason = "Nodefail" + "".join(w.title() for w in step.action.split("-"))
        self.cluster.create(
            f"/api/v1/namespaces/{ns}/events",
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"generateName": f"{name}.nodefail.", "namespace": ns},
                "involvedObject": involved,
                "reason": reason,
                "type": "Warning",
                "message": (
                    f"kubectl-nodefail {__version__} ({self.user}): {step.action}: "
                    f"{step.detail}. Why: {step.why}. Evidence: "
                    f"{'; '.join(step.evidence) or 'none needed'}"
                )[:1000],
                "source": {"component": COMPONENT, "host": socket.gethostname()},
                "reportingComponent": COMPONENT,
                "reportingInstance": socket.gethostname(),
                "firstTimestamp": now,
                "lastTimestamp": now,
                "count": 1,
            },
        )


def summary(plan: Plan) -> dict[str, int]:
    """How many steps ended (or, in a plan, stand) in each state."""
    counts: dict[str, int] = {}
    for step in plan.steps:
        state = step.result or ("planned" if step.allowed else "refused")
        counts[state] = counts.get(state, 0) + 1
    return counts
