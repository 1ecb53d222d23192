"""The suggested fix for a pod or node, with its risk and the exact commands."""

from __future__ import annotations

from datetime import datetime

from kubectl_nodefail.analysis import facts, versions
from kubectl_nodefail.analysis.findings import Action, NodeFinding, Replacement

OUT_OF_SERVICE_TAINT = f"{facts.TAINT_OUT_OF_SERVICE}=nodeshutdown:NoExecute"


def remediate_cmd(node: str, *extra: str) -> str:
    return " ".join(["kubectl nodefail remediate", node, *extra])


def for_pod(
    kind: str,
    namespace: str,
    name: str,
    node: NodeFinding | None,
    terminating: bool,
    replacement: Replacement,
    eviction_at: datetime | None,
    holds_rwo: bool,
    finalizers: list[str],
) -> Action:
    force = f"kubectl delete pod -n {namespace} {name} --grace-period=0 --force"
    if node is None or not node.failed:
        if finalizers:
            names = ", ".join(finalizers)
            return Action(
                "investigate",
                f"finalizers {names} hold it: find the controller that owns them "
                "and why it has not finished; remove a finalizer only if that controller is gone",
                "medium",
                kubectl=f"kubectl patch pod -n {namespace} {name} --type=json "
                '-p \'[{"op":"remove","path":"/metadata/finalizers"}]\'',
            )
        return Action(
            "investigate",
            "the node is Ready but its kubelet has not finished the "
            "deletion: check the kubelet and container runtime on that node "
            "(journalctl -u kubelet)",
            "low",
            kubectl=f"kubectl describe pod -n {namespace} {name}",
        )
    if kind == "mirror":
        return Action(
            "none-possible",
            "nothing via the API: fix or power off the node; the kubelet owns this static pod",
            "none",
        )
    if kind == "daemonset":
        return Action(
            "wait",
            "nothing to do: it resumes when the node returns (delete the Node if "
            "the machine is gone for good)",
            "none",
            remediate=remediate_cmd(node.name),
        )
    confirmed = bool(node.shutdown_evidence)
    unlock = f"--node-shutdown-confirmed {node.name}"
    if not terminating and eviction_at is not None:
        return Action(
            "wait",
            "wait for eviction; the controller then handles it",
            "none",
            until=eviction_at,
            remediate=remediate_cmd(node.name),
        )
    replaced = replacement.state in ("running", "finished", "pending")
    if (
        kind in ("deployment", "replicaset", "replicationcontroller")
        or (kind in ("job", "cronjob") and replaced)
    ) and not holds_rwo:
        if replacement.state == "pending" and replacement.pending_reason.startswith("pinned"):
            return Action(
                "investigate",
                "the replacement is pinned to the failed node: bring the "
                "node back or relax the selector/affinity; deleting pods will not help",
                "low",
            )
        return Action(
            "wait",
            "cosmetic: the replacement already serves. Clean up when the node "
            "returns, or delete the Node object if the machine is gone for good",
            "low",
            kubectl=f"kubectl delete node {node.name}",
            remediate=remediate_cmd(node.name, "--strategy delete-node"),
        )
    if kind == "bare":
        return Action(
            "investigate",
            "nothing recreates a bare pod: re-create it from its manifest "
            "elsewhere if needed; removing the stuck object loses it",
            "medium",
            kubectl=force,
            remediate=remediate_cmd(node.name, unlock),
        )
    # Forcing while the old process may still run: a StatefulSet gets two copies of one identity
    # (split brain, data loss); a Job or unknown owner may run its work twice.
    risk = "low" if confirmed else ("high" if kind == "statefulset" or holds_rwo else "medium")
    why_unsafe = (
        ""
        if confirmed
        else (
            " ONLY after confirming the machine is powered off: if it still runs, a second copy "
            "starts (split brain, data loss)"
        )
    )
    if node.out_of_service:
        return Action(
            "wait", "the out-of-service taint is set: PodGC force-deletes it shortly", "none"
        )
    return Action(
        "out-of-service",
        "apply the out-of-service taint (pods force-deleted, volumes detached at once)"
        + why_unsafe,
        risk,
        kubectl=f"kubectl taint node {node.name} {OUT_OF_SERVICE_TAINT}",
        remediate=remediate_cmd(node.name, *(() if confirmed else (unlock,)), "--confirm"),
    )


def for_node(node: NodeFinding, server_minor: int | None) -> Action:
    if node.stale_out_of_service:
        return Action(
            "remove-out-of-service",
            "the node is Ready again: remove the out-of-service "
            "taint (Kubernetes never removes it by itself)",
            "low",
            kubectl=f"kubectl taint node {node.name} {facts.TAINT_OUT_OF_SERVICE}-",
            remediate=remediate_cmd(node.name, "--confirm"),
        )
    if node.cause.code in ("kubelet-returning", "healthy"):
        return Action("wait", "the kubelet is reporting again", "none")
    if node.cause.code == "conditions":
        return Action(
            "investigate",
            "the node is Ready but reports trouble: relieve the pressure "
            "or fix what node-problem-detector reports; the kubelet may evict pods",
            "none",
            kubectl=f"kubectl describe node {node.name}",
        )
    oos_ok = versions.out_of_service_usable(server_minor)
    if node.out_of_service:
        return Action(
            "wait",
            "out-of-service taint set: its pods are being force-deleted and "
            "volumes detached; remove the taint once the node is back",
            "none",
        )
    if node.shutdown_evidence and oos_ok:
        return Action(
            "out-of-service",
            "machine is shut down: apply the out-of-service taint",
            "low",
            kubectl=f"kubectl taint node {node.name} {OUT_OF_SERVICE_TAINT}",
            remediate=remediate_cmd(node.name, "--confirm"),
        )
    if node.cause.code in ("kubelet-stopped", "never-registered"):
        return Action(
            "investigate",
            "check the machine (console, power state): if it is powered off, "
            "attest it and let remediate apply the out-of-service taint; if it is gone for good, "
            "delete the Node object",
            "none",
            remediate=remediate_cmd(node.name, f"--node-shutdown-confirmed {node.name}"),
        )
    return Action(
        "investigate",
        "the kubelet is alive and reports a problem: fix it on the node "
        "(runtime, CNI, disk); do not force anything",
        "none",
    )
