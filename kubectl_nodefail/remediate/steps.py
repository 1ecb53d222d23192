"""What a plan is made of: the actions a step may take, the Step (what it would do, why, on what
evidence, behind which gate), the Binding of a plan to the cluster it was computed from, a
recorded Attestation, and the Plan with its exit codes. Pure data: nothing here touches the
cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubectl_nodefail.analysis.claims import Premise
from kubectl_nodefail.common.errors import Exit

ACTIONS = (
    "wait",
    "finalizer-held",
    "taint-out-of-service",
    "remove-out-of-service",
    "force-delete-pod",
    "delete-node",
)
MUTATING = frozenset(ACTIONS[2:])
NODE_ACTIONS = frozenset({"taint-out-of-service", "remove-out-of-service", "delete-node"})
POD_ACTIONS = frozenset({"finalizer-held", "force-delete-pod"})


@dataclass
class Step:
    action: str  # one of ACTIONS
    node: str
    target: str  # "node/NAME" or "pod/NAMESPACE/NAME"
    why: str
    allowed: bool
    gate: str  # the gate passed, or why it was refused and what would unlock it
    evidence: list[str] = field(default_factory=list)
    uid: str = ""
    resource_version: str = ""
    lease_renewed: str = ""  # the node's lease renewTime when planned: must not move before acting
    releases: list[str] = field(default_factory=list)  # stuck pods it frees: NS/NAME (controller)
    leaves_stuck: list[str] = field(default_factory=list)  # pods on its node it does not free
    # what `releases` and `leaves_stuck` rest on: each pod named is that object (UID), bound to
    # the step's node, as read (resourceVersion; its finalizers where they hold it); from the
    # live state of the plan, or of the re-read before the result speaks (restate.py)
    because: list[Premise] = field(default_factory=list)
    # filled in by actions.py: done (its effect observed) | unconfirmed (sent and accepted, the
    # effect not observed) | skipped | failed | refused | waited | blocked | not started
    # | interrupted
    result: str = ""
    detail: str = ""


@dataclass
class Binding:
    """The cluster a plan was computed from. A saved plan is replayed only against the same
    context, server and cluster (the kube-system namespace's UID: a rebuilt cluster behind the
    same name and address has another) and the same node objects (a node recreated under the
    same name has another UID)."""

    context: str = ""
    server: str = ""
    cluster_uid: str = ""  # metadata.uid of namespace kube-system
    captured_at: str = ""  # when the state the plan was computed from was read (RFC 3339)
    source: str = ""  # the dump file a plan was computed from; "" for a live cluster
    node_uids: dict[str, str] = field(default_factory=dict)  # every node the plan has steps on


@dataclass
class Attestation:
    """The operator's statement that a node's machine is shut down, as recorded in a plan."""

    node: str
    node_uid: str
    by: str  # the user the API server says made the plan
    at: str  # when (RFC 3339)


@dataclass
class Plan:
    strategy: str
    steps: list[Step]
    refusals: list[str]  # plan-wide refusals (zone disruption, node bound)
    attested: list[str]  # the nodes whose attestation counts in this plan
    bound_to: Binding = field(default_factory=Binding)
    attestations: list[Attestation] = field(default_factory=list)  # who attested, when

    @property
    def mutating(self) -> list[Step]:
        return [s for s in self.steps if s.allowed and s.action in MUTATING]

    def result_code(self, interrupted: bool = False) -> Exit:
        """After --confirm: interrupted (6: a signal stopped the run, even in its last step's
        wait), a step's effect not observed (7), all done (0), some refused/skipped/failed/
        blocked (4), nothing done (5)."""
        if interrupted or any(s.result in ("not started", "interrupted") for s in self.steps):
            return Exit.INTERRUPTED
        if any(s.result == "unconfirmed" for s in self.steps):
            return Exit.UNCONFIRMED
        if self.refusals or any(
            s.result in ("skipped", "failed", "refused", "blocked") for s in self.steps
        ):
            return Exit.PARTIAL
        return Exit.OK if any(s.result == "done" for s in self.steps) else Exit.NOTHING_TO_DO

    def exit_code(self) -> Exit:
        """For a plan: runnable (0), some refused (4), nothing to do (5)."""
        if any(not s.allowed for s in self.steps) or self.refusals:
            return Exit.PARTIAL
        return Exit.OK if self.mutating else Exit.NOTHING_TO_DO
