"""The analysis results: plain dataclasses that render/ shows and remediate/ decides on.

Field names are the JSON output's keys (camelCased by render.to_data); they are a stable interface.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from kubectl_nodefail.analysis.automation import Coverage
from kubectl_nodefail.analysis.claims import Claim, Premise
from kubectl_nodefail.analysis.timeline import Entry
from kubectl_nodefail.snapshot.data import DATA


@dataclass
class Cause:
    """Why something is wrong: a stable code, one line, how sure we are and what shows it."""

    code: str
    summary: str
    confidence: str  # high | medium | low
    evidence: list[str] = field(default_factory=list)
    because: list[Premise] = field(default_factory=list)  # the facts the summary rests on


@dataclass
class TaintView:
    key: str
    effect: str
    value: str = ""
    time_added: datetime | None = None


@dataclass
class ConditionView:
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_heartbeat: datetime | None = None
    last_transition: datetime | None = None
    problem: bool = False  # True only for conditions known to mean trouble when in this status


@dataclass
class NodeFinding:
    name: str
    status: str  # as `kubectl get nodes` prints it
    zone: str
    ready: ConditionView | None
    not_ready_seconds: float | None
    lease_renewed: datetime | None
    lease_age_seconds: float | None
    taints: list[TaintView]
    conditions: list[ConditionView]
    cause: Cause
    shutdown_evidence: list[str]
    out_of_service: bool
    stale_out_of_service: (
        bool  # out-of-service taint on a Ready node whose kubelet renews: forgotten
    )
    kubelet_version: str
    failed: bool  # not Ready
    cloud_shutdown: bool  # carries the cloud provider's shutdown taint
    pod_count: int = 0
    action: Action | None = None
    volumes_attached: list[str] = field(default_factory=list)  # VolumeAttachments still on it
    lease_stale: bool | None = None  # lease not renewed within its duration; None: no lease read
    # how long the out-of-service taint has been on the node (its timeAdded), when it is
    out_of_service_seconds: float | None = None
    # remediation automation covering the node, and what it does next (analysis/automation/)
    automation: list[Coverage] = field(default_factory=list)


@dataclass
class ZoneFinding:
    zone: str
    nodes: int
    not_ready: int
    state: str  # Normal | PartialDisruption | FullDisruption (node lifecycle controller's words)
    eviction: str  # proceeding | slowed | stopped
    explanation: str
    # the explanation as claims, with the node counts (and taints) it rests on
    claims: list[Claim] = field(default_factory=list)
    # the fact of the latest moment a node of the zone joined or changed its Ready state (its
    # state is as counted since then, as far as the API shows), and the not-Ready nodes without
    # the controller's NoExecute taint past the time its rate takes: name -> (not Ready since,
    # tainted by then at the latest)
    changed_by: list[Premise] = field(default_factory=list)
    late: dict[str, tuple[datetime, datetime]] = field(default_factory=dict)


@dataclass
class OwnerLink:
    kind: str
    name: str
    found: bool = True


@dataclass
class Replacement:
    """What stands in for the stuck pod. state: running | finished | pending | blocked | not-yet
    | none (nothing ever will: no controller) | not-wanted (the owner's desired state wants no
    replacement) | not-needed | missing | unknown."""

    state: str
    summary: str
    pods: list[str] = field(default_factory=list)
    pending_reason: str = ""
    expected_by: datetime | None = None  # not-yet with a known bound: created by then


@dataclass
class Action:
    """A suggested fix with its risk, the kubectl command and the safe remediate command."""

    code: str  # wait | delete-node | out-of-service | force-delete | none-possible | investigate
    summary: str
    risk: str  # none | low | medium | high
    kubectl: str = ""  # read-only: mutations go through remediate's gates
    remediate: str = ""  # a plan (never --confirm); an attestation only as its placeholder
    until: datetime | None = None
    if_still_running: str = ""  # what the step risks if the attestation is wrong
    # facts the suggestion rests on beyond the claims `rests_on` names (the brake's counts; a
    # node's: its cause's and its automation's)
    because: list[Premise] = field(default_factory=list)
    # a pod's suggestion is decided from its claims and its node's cause: their kinds, in
    # order, each once (`cause` = its node's cause, nodes[].cause), whose facts they carry
    rests_on: list[str] = field(default_factory=list)


@dataclass
class PodFinding:
    namespace: str
    name: str
    uid: str
    resource_version: str
    node: str
    node_failed: bool
    kubectl_status: str  # what `kubectl get pods` prints
    ready: str  # READY column, e.g. 1/1
    meaning: str  # what the status really means
    # on-failed-node | terminating-on-failed-node | terminating-elsewhere
    # | waiting-for-volume (elsewhere, for a volume still attached to a failed node)
    # | waiting-for-node (Pending: its node selector or required affinity allows only failed
    # nodes)
    category: str
    terminating: bool
    stuck_seconds: float | None  # past deletionTimestamp (deletion time + grace)
    deletion_timestamp: datetime | None
    owner_chain: list[OwnerLink]
    controller: (
        str  # deployment | replicaset | statefulset | daemonset | job | mirror | bare | other
    )
    explanation: str
    replacement: Replacement
    storage: list[str]
    timeline: str
    eviction_at: datetime | None
    if_node_returns: str
    action: Action
    evidence: list[str] = field(default_factory=list)
    era: str = "current"  # current | nodelost (pre-1.27 NodeLost/Unknown display)
    # metadata.finalizers: what must be removed before the object can go
    finalizers: list[str] = field(default_factory=list)
    # every statement made about the pod, with the snapshot facts it rests on (claims.py)
    claims: list[Claim] = field(default_factory=list)
    phase: str = ""  # status.phase
    # tolerates the out-of-service taint with no time limit: the taint does not release it
    # unless it is Terminating (eviction.stays_under_out_of_service)
    stays_under_out_of_service: bool = False
    # its Job replaces it only once it is Failed (podReplacementPolicy Failed): the Job's
    # tracking finalizer outlasts a force delete (advice.holding_finalizers)
    waits_for_failed: bool = False
    # its owner's template binds every pod to its failed node (spec.nodeName): "Kind/name", or
    # "" (pods._bound_by_template); freeing it only makes another there
    bound_here: str = ""
    # waiting-for-volume: the failed nodes a volume it needs is still attached to (the
    # out-of-service taint on one detaches it at once)
    held_by: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class NodeTimeline:
    """A node's incident timeline (analysis/timeline.py) and its NoExecute taints that carry no
    time (they cannot be placed in it)."""

    entries: list[Entry]
    untimed_taints: list[str]


@dataclass
class OwnerGroup:
    """The stuck pods of one top owner (Kind/name, or (none) for pods without one): a line of the
    outage view's WORKLOADS, JSON `workloads[]` (analysis/outage.py owner_groups)."""

    namespace: str
    owner: str
    stuck: int
    blocked: int  # of `stuck`: replacement blocked, or a volume in the way
    volumes: int  # of `stuck`: waiting for a volume, or with a storage blocker
    next_steps: dict[str, int]  # NEXT words -> pods
    ready: int | None = None  # its pods Ready on Ready nodes; None: not a replicated kind
    wanted: int | None = None  # its spec.replicas; None: not a replicated kind, or not read
    statefulset: bool = False
    serving: Claim | None = None  # ready and wanted as a claim (kind `serving`), with both

    @property
    def first(self) -> bool:
        """Shown first: a StatefulSet or a volume keeps it from recovering on its own."""
        return self.blocked > 0 or self.volumes > 0


@dataclass
class Report:
    captured_at: datetime
    source: str
    server_version: str | None
    nodes_total: int
    nodes: list[NodeFinding]
    zones: list[ZoneFinding]
    pods: list[PodFinding]
    cluster: list[str]  # cluster-wide conclusions (mass failure, master disruption mode, gaps)
    gaps: list[str]
    # Which version-dependent behaviour was applied for this server (analysis/versions.py).
    server_behaviour: list[str] = field(default_factory=list)
    server_behaviour_claims: list[Claim] = field(default_factory=list)  # the same, with premises
    # A filtered view (node names, namespaces): what it shows is not the whole cluster.
    scope_nodes: list[str] = field(default_factory=list)
    scope_namespaces: list[str] = field(default_factory=list)
    # Not Ready nodes in the whole cluster, whatever the view shows.
    nodes_not_ready_total: int = 0
    # The failure is too wide to trust (analysis/brake.py): remediate refuses destructive steps
    brake: Claim | None = None
    # `cluster` as claims, with the facts each rests on
    cluster_claims: list[Claim] = field(default_factory=list)
    # the headline's node counts ("N of M nodes not Ready"), counted over every node
    headline: Claim | None = None
    # the "HELD BY FINALIZERS" lines: pods finalizers hold on nodes that did not fail, by group
    held_claims: list[Claim] = field(default_factory=list)
    # the stuck pods by namespace and top owner, each replicated owner with the claim `serving`
    workloads: list[OwnerGroup] = field(default_factory=list)
    # Each listed node's incident timeline, when the diagnosis was asked for them (the outputs
    # that show them: JSON, YAML, Markdown, --explain); computed once, with the node's
    # automation as the diagnosis found it. Placed in the JSON by render (nodes[].timeline).
    timelines: dict[str, NodeTimeline] | None = field(default=None, metadata={DATA: False})

    @property
    def problems(self) -> bool:
        """Every listed node and pod is a problem (healthy nodes are never listed)."""
        return bool(self.nodes or self.pods)
