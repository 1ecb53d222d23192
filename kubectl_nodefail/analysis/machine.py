"""What a node's finding says of its machine and its kubelet: alive and reporting, run after
the failure began (an attestation of shutdown refused on it), or out of service past PodGC's
time."""

from __future__ import annotations

from kubectl_nodefail.analysis.findings import NodeFinding
from kubectl_nodefail.snapshot.model import format_time


def kubelet_alive(node: NodeFinding) -> bool:
    """The kubelet itself is posting status: Ready=False (a silent kubelet turns Unknown) and
    its lease is not stale. Pod states on such a node are reported, not unknown."""
    return bool(node.ready and node.ready.status == "False" and node.lease_stale is not True)


def machine_ran(node: NodeFinding) -> str | None:
    """What says the machine of `node` runs, or ran after its failure began (one clause), or
    None: its kubelet reports the node Ready, renewed its lease after the Ready condition last
    changed, or renews it still (within its duration). An attestation that the machine is shut
    down is refused on it (plan.check_attestations), so no advice suggests typing one."""
    ready = node.ready
    if not node.failed:
        return f"node {node.name} is {node.status}: its kubelet posts status, so its machine runs"
    began = ready.last_transition if ready else None
    renewed = node.lease_renewed
    # Condition times are whole seconds, the lease's are micro: compared to the second.
    if renewed is not None and began is not None and renewed.replace(microsecond=0) > began:
        return (
            f"the kubelet of {node.name} renewed its lease at {format_time(renewed)}, after its "
            f"Ready condition became {ready.status if ready else 'Unknown'} at "
            f"{format_time(began)}: the machine ran after the failure began"
        )
    if node.lease_stale is False:
        age = (
            f"{node.lease_age_seconds:.0f}s before the read"
            if node.lease_age_seconds is not None
            else "recently"
        )
        return f"the kubelet of {node.name} renewed its lease {age}, within its duration: it runs"
    return None


# PodGC force-deletes the Terminating pods of an out-of-service node on its next pass (every
# 20 s); a pod still there this long after the taint was added is not being removed by it (an
# admission webhook or policy refused the delete, or the podgc controller does not run).
PODGC_OUT_OF_SERVICE_SECONDS = 60


def out_of_service_overdue(node: NodeFinding) -> float | None:
    """Seconds the out-of-service taint has been on the node, when that is past PodGC's time
    (its Terminating pods should be gone by then), else None."""
    age = node.out_of_service_seconds
    return age if age is not None and age > PODGC_OUT_OF_SERVICE_SECONDS else None
