"""The requests that change the cluster, one per mutating action: the out-of-service taint and
its removal (node patches with the resourceVersion test, and an annotation naming who), a pod's
force delete and a Node's delete (both with the UID and resourceVersion preconditions).
"""

from __future__ import annotations

from datetime import timedelta

from kubectl_nodefail import __version__
from kubectl_nodefail.analysis import facts
from kubectl_nodefail.analysis.advice import JOB_TRACKING_FINALIZER
from kubectl_nodefail.cluster import kube
from kubectl_nodefail.common.errors import NotFound
from kubectl_nodefail.remediate.execbase import _now, _pod_ref
from kubectl_nodefail.remediate.nodepatch import NodePatch, _annotation_set
from kubectl_nodefail.remediate.release import NotConfirmed, Release, in_use
from kubectl_nodefail.remediate.steps import Step
from kubectl_nodefail.snapshot.model import Obj, format_time

ANNOTATION_TAINTED_BY = facts.ANNOTATION_TAINTED_BY
ANNOTATION_UNTAINTED_BY = "kubectl-nodefail.io/out-of-service-removed-by"
JOB_TRACKING_WAIT = 10.0  # seconds a force-deleted pod's Job may take to count it


class Mutations(NodePatch, Release):
    """The Executor's requests, each sent only after its step's lock and re-checks."""

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
        # The Job controller removes its tracking finalizer once it has counted the pod: a
        # moment after the delete (audit 2038/116: gone within a second of a single look).
        # Only that wait, and within --wait-timeout; any other finalizer is not waited for.
        until = _now() + timedelta(seconds=min(self.wait_timeout, JOB_TRACKING_WAIT))
        while True:
            try:
                left = self.cluster.get_object(kube.pod_path(ns, name))
            except NotFound:
                return done + "; the pod is gone"
            if left["metadata"].get("uid") != step.uid:
                return done + "; the pod is gone (a new pod of that name exists)"
            holders = list(left["metadata"].get("finalizers") or [])
            if holders != [JOB_TRACKING_FINALIZER] or _now() >= until or self.stop.is_set():
                break
            self.stop.wait(0.5)
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
            step.node,
            "PodGC (the Node is gone)",
            "Node object deleted",
            every_pod=True,
            in_use=in_use(node),
        )

    def _annotation_ops(self, node: Obj, key: str) -> list[Obj]:
        value = f"{self.user} at {format_time(_now())} (kubectl-nodefail {__version__})"
        return _annotation_set(node, key, value)
