"""What every per-controller rule works from and returns: the Context of one pod, the Explained
result, and the helpers several rules share (what a controller counts as a live replica, what is
said about the pod's kubelet).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from kubectl_nodefail.analysis.claims import Claim, Premise, fact
from kubectl_nodefail.analysis.facts import PODGC_PERIOD_SECONDS, PODGC_SLACK_SECONDS
from kubectl_nodefail.analysis.findings import Replacement
from kubectl_nodefail.analysis.leader import leader
from kubectl_nodefail.analysis.podstatus import TERMINAL_PHASES
from kubectl_nodefail.analysis.text import duration
from kubectl_nodefail.snapshot.model import Obj, Snapshot, parse_time

# Finalizers that Kubernetes' own controllers remove by themselves while the node is down.
# (the Job controller's, on each pod it has not yet counted in its status)
JOB_TRACKING = "batch.kubernetes.io/job-tracking"
SELF_REMOVED_FINALIZERS = {JOB_TRACKING}


@dataclass
class Context:
    """What the per-controller rules need to know about one pod."""

    pod: Obj
    kind: str  # controller type from owners.controller_type
    owners: list[Obj]  # owner objects found, nearest first
    snap: Snapshot
    node: str
    node_failed: bool
    failed_nodes: set[str]
    terminating: bool
    now: datetime
    owner_kinds: list[str] = field(default_factory=list)  # the kinds of `owners`, same order
    never_evicted: bool = False  # tolerates the node's NoExecute taints without a time limit
    # its Node object deleted (analysis/orphans.py): nothing evicts it; PodGC marks it Failed
    # and force-deletes it (grace 0: the object goes at once)
    gone: bool = False

    @property
    def ends(self) -> str:
        """What ends a pod not being deleted yet, in the rules' words."""
        return "deleted by PodGC" if self.gone else "evicted"

    @property
    def grace_zero(self) -> bool:
        """Deleted with grace period 0, the object goes at once, without the kubelet."""
        return (self.pod.get("spec") or {}).get("terminationGracePeriodSeconds") == 0

    @property
    def name(self) -> str:
        return str(self.pod["metadata"]["name"])

    @property
    def phase(self) -> str:
        return str((self.pod.get("status") or {}).get("phase") or "")

    @property
    def finished(self) -> bool:
        return self.phase in TERMINAL_PHASES

    @property
    def foreign_finalizers(self) -> list[str]:
        return [
            f
            for f in self.pod["metadata"].get("finalizers") or []
            if f not in SELF_REMOVED_FINALIZERS
        ]

    def podgc_passed_over(self) -> str:
        """Where PodGC, which marks a deleted pod bound to no node Failed on its next pass (every
        20 s), has long since not: the words saying so, else ""."""
        if self.node or self.finished:
            return ""
        deleted = parse_time(self.pod["metadata"].get("deletionTimestamp"))
        chief = leader(self.snap)
        if deleted is None or (chief is not None and chief.expired()):
            return ""  # no leader: said as such for every pod (diagnose._leaderless_pods)
        age = (self.now - deleted).total_seconds()
        since = max(deleted, chief.since) if chief is not None else deleted  # a new leader's
        if (self.now - since).total_seconds() <= PODGC_PERIOD_SECONDS + PODGC_SLACK_SECONDS:
            return ""
        return (
            f"; {duration(age)} after its deletion it has not been: the podgc controller does "
            "not run or passes it over (kube-controller-manager's --controllers, its log)"
        )

    def owner_name(self) -> str:
        """The nearest owner's name: as read, else as the pod's controlling reference names it
        (an owner not read: a kubectl List, a forbidden read)."""
        if self.owners:
            return str(self.owners[0]["metadata"]["name"])
        refs = self.pod["metadata"].get("ownerReferences") or []
        ref = next((r for r in refs if r.get("controller")), refs[0] if refs else {})
        return str(ref.get("name") or "?")

    def owner_ref_fact(self) -> Premise:
        """The pod's controlling owner reference, by its kind (or that it has none)."""
        refs = self.pod["metadata"].get("ownerReferences") or []
        if not refs:
            return self.pod_fact("metadata.ownerReferences")
        ref = next((r for r in refs if r.get("controller")), refs[0])
        return self.pod_fact(f"metadata.ownerReferences[kind={ref.get('kind')}].name")

    def pod_fact(self, path: str) -> Premise:
        return fact("Pod", self.pod, path)

    def owner_fact(self, index: int, path: str) -> Premise:
        return fact(self.owner_kinds[index], self.owners[index], path)


@dataclass
class Explained:
    """A rule's result: its claims (in sections why/replacement/returns) and the replacement."""

    claims: list[Claim]
    replacement: Replacement
    # what follows the node's return needs only the pod ended (Failed or Succeeded), not its
    # object gone: a Recreate rollout, a Job held open (they count phases, not objects)
    on_phase: bool = False


def _live(pod: Obj) -> bool:
    """What the ReplicaSet controller counts as a replica (controller.IsPodActive): not
    deleted, not finished, wherever it is (a pod on a failed node counts until evicted)."""
    return (
        not pod["metadata"].get("deletionTimestamp")
        and (pod.get("status") or {}).get("phase") not in TERMINAL_PHASES
    )


def _active(pod: Obj, failed_nodes: set[str]) -> bool:
    """Counts as a running replica: live, and not on a failed node."""
    return _live(pod) and (pod.get("spec") or {}).get("nodeName") not in failed_nodes


def _node_ready(ctx: Context) -> list[Premise]:
    """The pod's node's Ready condition: the premise of what is said about its kubelet."""
    node = ctx.snap.node(ctx.node) if ctx.node else None
    return [fact("Node", node, "status.conditions[type=Ready].status")] if node else []


def _until_kubelet(ctx: Context, short: bool = False) -> str:
    """How long the pod object stays: while its node's kubelet is down (a failed node), or until
    that kubelet confirms the deletion (a node that did not fail); a pod bound to no node has no
    kubelet: PodGC marks it Failed and deletes it (gcUnscheduledTerminating, every 20 s)."""
    if not ctx.node and ctx.foreign_finalizers:
        return (
            "until its finalizers are removed (it is on no node: PodGC only marks it Failed)"
            if short
            else "which waits for its finalizers to be removed (it is on no node: PodGC only "
            "marks it Failed)"
        )
    if not ctx.node:
        return (
            "until PodGC's next pass (every 20 s) marks it Failed and deletes it: it is on no node"
            if short
            else "which PodGC does on its next pass (every 20 s): it is on no node"
        ) + ctx.podgc_passed_over()
    if ctx.node_failed:
        return (
            "while its kubelet is down"
            if short
            else "which does not happen while its kubelet is down"
        )
    return (
        "until its kubelet confirms the deletion"
        if short
        else "which its kubelet has not confirmed yet"
    )
