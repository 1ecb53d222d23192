"""The re-checks right before a step acts: the pod it deletes (same UID, still bound to the
step's node, no finalizer that holds it), the node (the same object, still not Ready, or Ready
for the taint's removal) and its lease (not renewed since the plan).
"""

from __future__ import annotations

from urllib.parse import quote

from kubectl_nodefail.analysis import facts
from kubectl_nodefail.analysis.advice import holding_finalizers
from kubectl_nodefail.analysis.nodes import is_ready
from kubectl_nodefail.cluster import kube
from kubectl_nodefail.common.errors import NotFound
from kubectl_nodefail.remediate.execbase import ExecutorBase, _pod_ref
from kubectl_nodefail.remediate.nodesteps import finalizer_owner
from kubectl_nodefail.remediate.steps import Step
from kubectl_nodefail.snapshot.model import Obj, format_time, parse_time


def _lease_second(value: str) -> str:
    """A renewTime to the second (the plan keeps seconds; the lease has microseconds)."""
    when = parse_time(value)
    return format_time(when) if when is not None else value


class Rechecks(ExecutorBase):
    """The Executor's re-reads of what a step depends on."""

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
