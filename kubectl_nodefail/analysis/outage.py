"""An outage at a glance: failed nodes grouped by zone and cause, the workloads hit grouped by
owner (blocked StatefulSets and volumes first, with how many of their replicas still serve), and
the few kinds of action the report suggests, each counted.

Pure functions over a Report and the Snapshot it came from. They add no sentence of their own
about a pod or node: they count what the analysis already found. The snapshot is read only for
what the report does not carry, an owner's wanted replicas and its pods Ready on Ready nodes:
that pair is a claim (kind `serving`) resting on the owner's replicas and every one of its pods.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from kubectl_nodefail.analysis import summary
from kubectl_nodefail.analysis.claims import Claim, Premise, claim, fact, once
from kubectl_nodefail.analysis.findings import Action, OwnerGroup, PodFinding, Report
from kubectl_nodefail.analysis.podstatus import TERMINAL_PHASES
from kubectl_nodefail.analysis.text import plural
from kubectl_nodefail.snapshot.model import Obj, Snapshot

# More failed nodes or stuck pods than this and the per-row table no longer fits a screen: the
# default view becomes the outage view. One node holds at most 110 pods by default (kubelet
# --max-pods), so a single failed node never crosses the pod threshold.
OUTAGE_NODES = 10
OUTAGE_PODS = 250

# The gap siblings_read records when the owners' other pods could not be read.
SIBLINGS_GAP = "pods of the same owner"
# Owner kinds with a replica count whose pods can be counted as serving or not.
REPLICATED = ("Deployment", "ReplicaSet", "StatefulSet", "ReplicationController")


def is_outage(report: Report) -> bool:
    """Too many failed nodes or stuck pods for one row each on a screen."""
    failed = sum(1 for n in report.nodes if n.failed)
    return failed > OUTAGE_NODES or len(report.pods) > OUTAGE_PODS


@dataclass
class NodeGroup:
    """Listed nodes of one zone with one cause."""

    zone: str
    cause: str  # Cause.code
    summary: str  # the first node's Cause.summary (same code, same words up to details)
    nodes: list[str]
    oldest_seconds: float | None  # the longest a node of the group has been not Ready
    zone_state: str  # Normal | PartialDisruption | FullDisruption, "" when no zone finding
    eviction: str  # proceeding | slowed | stopped, "" when no zone finding
    pods: int  # stuck pods on these nodes


@dataclass
class ActionGroup:
    """One suggestion (code and words) and how many nodes or pods it is made for."""

    code: str
    summary: str
    risk: str
    nodes: list[str] = field(default_factory=list)
    pods: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)  # of the first node or pod it is for


@dataclass
class Outage:
    node_groups: list[NodeGroup]
    owners: list[OwnerGroup]
    actions: list[ActionGroup]


def summarise(report: Report) -> Outage:
    return Outage(node_groups(report), report.workloads, action_groups(report))


def node_groups(report: Report) -> list[NodeGroup]:
    """Listed nodes by zone and cause; the zones in disruption and the biggest groups first."""
    zones = {z.zone: z for z in report.zones}
    stuck = Counter(p.node for p in report.pods if p.node_failed)
    groups: dict[tuple[str, str], NodeGroup] = {}
    for n in report.nodes:
        zone = zones.get(n.zone)
        group = groups.setdefault(
            (n.zone, n.cause.code),
            NodeGroup(
                n.zone,
                n.cause.code,
                n.cause.summary,
                [],
                None,
                zone.state if zone else "",
                zone.eviction if zone else "",
                0,
            ),
        )
        group.nodes.append(n.name)
        group.pods += stuck[n.name]
        if n.not_ready_seconds is not None:
            group.oldest_seconds = max(group.oldest_seconds or 0.0, n.not_ready_seconds)
    return sorted(
        groups.values(), key=lambda g: (g.zone_state in ("", "Normal"), -len(g.nodes), g.zone)
    )


def _blocked(pod: PodFinding) -> bool:
    return pod.replacement.state == "blocked"


def _volume(pod: PodFinding) -> bool:
    return pod.category == summary.WAITING_FOR_VOLUME or bool(pod.storage)


def owner_groups(pods: list[PodFinding], snap: Snapshot, now: datetime) -> list[OwnerGroup]:
    """Stuck pods by namespace and top owner (the report's `workloads`): blocked ones
    (StatefulSets, volumes) first, then the most stuck pods; each replicated owner with its pods
    Ready on Ready nodes vs wanted."""
    groups: dict[tuple[str, str], OwnerGroup] = {}
    top: dict[tuple[str, str], PodFinding] = {}
    for pod in pods:
        key = (pod.namespace, summary.owner_of(pod))
        group = groups.setdefault(key, OwnerGroup(key[0], key[1], 0, 0, 0, {}))
        top.setdefault(key, pod)
        group.stuck += 1
        group.blocked += _blocked(pod)
        group.volumes += _volume(pod)
        group.statefulset = group.statefulset or pod.controller == "statefulset"
        step = summary.next_step(pod, now)
        group.next_steps[step] = group.next_steps.get(step, 0) + 1
    serving = _Serving(snap)
    for key, group in groups.items():
        chain = top[key].owner_chain
        if chain and chain[-1].kind in REPLICATED:
            counted = serving.of(chain[-1].kind, group.namespace, chain[-1].name)
            if counted is not None:
                group.ready, group.wanted, group.serving = counted
    return sorted(
        groups.values(),
        key=lambda g: (not g.first, not g.statefulset, -g.stuck, g.namespace, g.owner),
    )


class _Serving:
    """Pods Ready on Ready nodes vs spec.replicas, per owner, from indexes built once; each count
    a claim (kind `serving`) resting on every pod of the owner in the snapshot."""

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        # the other pods of the owners could not be read: no count would be whole
        self.unread = any(gap.startswith(SIBLINGS_GAP) for gap in snap.gaps)
        self.nodes = {n["metadata"]["name"]: n for n in snap.nodes}
        self.children: dict[str, list[Obj]] = {}
        for o in snap.owners:
            for ref in o["metadata"].get("ownerReferences") or []:
                self.children.setdefault(ref.get("uid", ""), []).append(o)

    def of(self, kind: str, namespace: str, name: str) -> tuple[int, int, Claim] | None:
        """An owner's pods Ready on Ready nodes, its replicas wanted, and the two as the claim
        `serving` (None when the owner or a whole-number spec.replicas is not in the snapshot)."""
        owner = self.snap.owner(kind, namespace, name)
        if owner is None or self.unread:
            return None
        spec_replicas = (owner.get("spec") or {}).get("replicas")
        if spec_replicas is None:
            spec_replicas = 1  # the API's default
        if not isinstance(spec_replicas, int) or isinstance(spec_replicas, bool):
            return None
        uid = owner["metadata"].get("uid", "")
        because = [
            fact(kind, owner, "metadata.uid"),
            fact(kind, owner, "spec.replicas"),
            fact(kind, owner, "status.replicas"),
        ]
        uids = [uid]
        if kind == "Deployment":  # its pods belong to its ReplicaSets
            replicasets = [o for o in self.children.get(uid, []) if o.get("kind") == "ReplicaSet"]
            because.append(Premise(f"ReplicaSet[owner:{uid}]", "count", len(replicasets)))
            because += [fact("ReplicaSet", rs, "metadata.uid") for rs in replicasets]
            uids = [rs["metadata"].get("uid", "") for rs in replicasets]
        ready = counted = 0
        for owned in uids:
            pods = self.snap.pods_owned_by(owned)
            because.append(Premise(f"Pod[owner:{owned}]", "count", len(pods)))
            for pod in pods:
                serving, facts = self._serving(pod)
                ready += serving
                because += facts
                counted += kind == "StatefulSet" or _active(pod)
        # status.replicas counts the owner's pods (a ReplicaSet's, a Deployment's over its
        # ReplicaSets: not deleted nor finished; a StatefulSet's: created): fewer read than
        # that and some went unread (a ReplicaSet of a rollout none of whose pods is stuck)
        status_replicas = (owner.get("status") or {}).get("replicas")
        if isinstance(status_replicas, int) and counted < status_replicas:
            return None
        text = f"{kind}/{name}: {plural(ready, 'pod')} Ready on Ready nodes, {spec_replicas} wanted"
        return ready, spec_replicas, claim("serving", "workload", text, *once(because))

    def _serving(self, pod: Obj) -> tuple[bool, list[Premise]]:
        """Whether the pod serves (not deleted, Running, Ready, on a Ready node), and the facts
        that decide it: all of them for a serving pod, the first that fails for another."""
        facts = [fact("Pod", pod, "metadata.deletionTimestamp")]
        if facts[-1].value is not None:
            return False, facts
        facts.append(fact("Pod", pod, "status.phase"))
        if facts[-1].value != "Running":
            return False, facts
        facts.append(fact("Pod", pod, "spec.nodeName"))
        node_name = facts[-1].value
        node = self.nodes.get(node_name) if isinstance(node_name, str) else None
        if node_name is not None and node is None:  # no such Node in the snapshot
            facts.append(Premise("Node[]", f"count(metadata.name={node_name})", 0))
        if node is None:
            return False, facts
        facts.append(fact("Node", node, "status.conditions[type=Ready].status"))
        if facts[-1].value != "True":
            return False, facts
        facts.append(fact("Pod", pod, "status.conditions[type=Ready].status"))
        return facts[-1].value == "True", facts


def _active(pod: Obj) -> bool:
    """What a ReplicaSet's status.replicas counts: not deleted, not finished."""
    phase = (pod.get("status") or {}).get("phase")
    return not pod["metadata"].get("deletionTimestamp") and phase not in TERMINAL_PHASES


def action_groups(report: Report) -> list[ActionGroup]:
    """The suggestions made, each once with the nodes and pods it is for: nodes' before pods',
    the most frequent first. 'Nothing to do' suggestions (risk none, no command) come last."""
    groups: dict[tuple[str, str, str], ActionGroup] = {}

    def add(action: Action, node: str = "", pod: str = "") -> None:
        key = (action.code, action.summary, action.risk)
        group = groups.setdefault(key, ActionGroup(*key))
        if not group.commands:
            group.commands = [c for c in (action.remediate, action.kubectl) if c]
        (group.nodes if node else group.pods).append(node or pod)

    for n in report.nodes:
        if n.action is not None:
            add(n.action, node=n.name)
    for p in report.pods:
        add(p.action, pod=f"{p.namespace}/{p.name}")
    return sorted(
        groups.values(),
        key=lambda g: (not g.commands, not g.nodes, -(len(g.nodes) + len(g.pods))),
    )
