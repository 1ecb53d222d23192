"""A zone's (or a rack's) failed set as one plan: which nodes are in scope, which of them a
typed zone attestation covers, the order they are acted on, and the zone brake explained.

Pure functions over the nodes read and their diagnosis; plan.make_plan still decides every
step and gate, node by node, exactly as for nodes named one by one. This module only chooses
the scope, turns a typed zone-wide statement into per-node attestations for the nodes it can
honestly cover, and orders the nodes. A zone attestation never covers a node that is Ready or
whose lease is being renewed: its kubelet may be alive, so it gets no destructive step unless
the operator checks that machine and names it with --node-shutdown-confirmed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kubectl_nodefail.analysis import facts
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.findings import NodeFinding, Report, ZoneFinding
from kubectl_nodefail.analysis.machine import machine_ran
from kubectl_nodefail.analysis.nodes import zone_of
from kubectl_nodefail.common import attestation
from kubectl_nodefail.common.selector import Selector
from kubectl_nodefail.remediate.plan import (
    MUTATING,
    Options,
    Plan,
    Step,
    check_attestations,
    make_plan,
)
from kubectl_nodefail.snapshot.model import Obj, Snapshot

POOL = 8  # nodes acted on at once by `remediate --zone/--selector --confirm` (zonerun.py)
ZONE_FLAG = "--zone-shutdown-confirmed"
SELECTOR_FLAG = "--selector-shutdown-confirmed"
ZONE_PLACEHOLDER = "<ZONE-WHOSE-MACHINES-YOU-VERIFIED-ARE-OFF>"
SELECTOR_PLACEHOLDER = "<SELECTOR-WHOSE-MACHINES-YOU-VERIFIED-ARE-OFF>"


@dataclass
class Scope:
    """The nodes one zone or selector names."""

    kind: str  # zone | selector
    value: str  # the zone, or the selector's text, as typed
    nodes: list[str]  # every node in scope, Ready or not
    zones: list[str]  # the zone keys (region/zone) of those nodes

    @property
    def flag(self) -> str:
        return ZONE_FLAG if self.kind == "zone" else SELECTOR_FLAG

    @property
    def placeholder(self) -> str:
        return ZONE_PLACEHOLDER if self.kind == "zone" else SELECTOR_PLACEHOLDER

    @property
    def words(self) -> str:
        return f"zone {self.value}" if self.kind == "zone" else f"selector {self.value!r}"


def scope_problem(
    zone: str | None,
    selector: str | None,
    zone_confirmed: str | None,
    selector_confirmed: str | None,
) -> str | None:
    """Why these flags do not make a scope and its attestation (one line), or None. The
    zone-wide attestation is a typed statement about exactly the scope typed: it must repeat
    it, character for character, and is never the placeholder of a suggestion."""
    if zone is not None and selector is not None:
        return "--zone and --selector: give one of them (one zone, or one rack's selector)"
    for flag, typed, scope, scope_flag, placeholder in (
        (ZONE_FLAG, zone_confirmed, zone, "--zone", ZONE_PLACEHOLDER),
        (SELECTOR_FLAG, selector_confirmed, selector, "--selector", SELECTOR_PLACEHOLDER),
    ):
        if typed is None:
            continue
        if "VERIFIED-ARE-OFF" in typed.upper():
            return (
                f"{flag} {placeholder} is the placeholder from a suggestion: check that the "
                f"machines are powered off, then type the {scope_flag[2:]} in its place"
            )
        if scope is None:
            return f"{flag} attests the machines of a {scope_flag[2:]}: give {scope_flag} too"
        if typed != scope:
            return (
                f"{flag} {typed!r} does not name the {scope_flag[2:]} of this run "
                f"({scope_flag} {scope!r}): type exactly the {scope_flag[2:]} whose machines "
                "you checked"
            )
    if zone is not None and (not zone.strip() or not zone.isprintable() or len(zone) > 253):
        return f"--zone {zone!r}: not a zone name"
    return None


def zone_matches(node: Obj, zone: str) -> bool:
    """A node is in zone Z when its zone label is Z, or its region/zone key (the key the node
    lifecycle controller groups by, as diagnose shows it) is Z."""
    labels = node["metadata"].get("labels") or {}
    label = labels.get(facts.LABEL_ZONE) or labels.get(facts.LABEL_ZONE_BETA) or ""
    return zone in (label, zone_of(node))


def in_scope(nodes: Iterable[Obj], zone: str | None, selector: Selector | None) -> Scope:
    chosen = [
        n
        for n in nodes
        if (zone is not None and zone_matches(n, zone))
        or (selector is not None and selector.matches(n["metadata"].get("labels")))
    ]
    return Scope(
        "zone" if zone is not None else "selector",
        zone if zone is not None else (selector.text if selector else ""),
        sorted(n["metadata"]["name"] for n in chosen),
        sorted({zone_of(n) for n in chosen}),
    )


@dataclass
class Coverage:
    """What a typed zone attestation covers: the failed nodes of the scope whose lease is not
    being renewed (a stale lease was read). `excluded`: failed nodes it does not cover, and why."""

    typed: bool
    attested: list[str] = field(default_factory=list)
    excluded: dict[str, str] = field(default_factory=dict)


def coverage(report: Report, scope: Scope, typed: bool) -> Coverage:
    cover = Coverage(typed)
    names = set(scope.nodes)
    for node in report.nodes:
        if node.name not in names or not node.failed:
            continue
        if node.lease_stale is False:
            age = (
                f"{node.lease_age_seconds:.0f}s before the read"
                if node.lease_age_seconds is not None
                else "recently"
            )
            cover.excluded[node.name] = (
                f"its lease was renewed {age}, within its duration: its kubelet may be alive"
            )
        elif node.lease_stale is None:
            cover.excluded[node.name] = (
                "no lease of it was read, so whether its kubelet still renews one is not known"
            )
        elif machine_ran(node) is not None:  # renewed after its failure began: it ran then
            cover.excluded[node.name] = str(machine_ran(node))
        else:
            cover.attested.append(node.name)
    if not typed:
        cover.attested = []
    return cover


@dataclass
class NodeRow:
    """One node of the zone plan, in the order it is acted on."""

    node: str
    first: bool  # StatefulSet pods or volumes: acted on before the others
    statefulset_pods: int
    volume_pods: int  # stuck pods with a storage blocker or waiting for a volume
    volumes_attached: int
    not_ready_seconds: float | None
    evidence: str  # where its attestation comes from, or what it lacks
    steps: list[Step]


def _evidence(
    node: NodeFinding | None, name: str, typed_nodes: Sequence[str], cover: Coverage
) -> str:
    if node is not None and node.cloud_shutdown:
        return "the cloud provider's shutdown taint"
    if name in typed_nodes:
        return f"{attestation.FLAG} {name} (typed)"
    if name in cover.attested:
        return "the zone attestation (typed)"
    if name in cover.excluded:
        return f"NOT covered by a zone attestation: {cover.excluded[name]}"
    return "none yet: needs an attestation"


def order(plan: Plan, report: Report, typed_nodes: Sequence[str], cover: Coverage) -> list[NodeRow]:
    """The nodes of the plan, those holding StatefulSet pods or volumes first (their pods come
    back only once this node is dealt with: nothing else replaces them), then the longest
    down; and plan.steps regrouped in that order (one node's steps together, as planned)."""
    by_node: dict[str, list[Step]] = {}
    for step in plan.steps:
        by_node.setdefault(step.node, []).append(step)
    findings = {n.name: n for n in report.nodes}
    rows = []
    for name, steps in by_node.items():
        node = findings.get(name)
        pods = [p for p in report.pods if p.node == name and p.node_failed]
        sts = sum(1 for p in pods if p.controller == "statefulset")
        vols = sum(1 for p in pods if p.storage or p.category == "waiting-for-volume")
        attached = len(node.volumes_attached) if node else 0
        rows.append(
            NodeRow(
                name,
                bool(sts or vols or attached),
                sts,
                vols,
                attached,
                node.not_ready_seconds if node else None,
                _evidence(node, name, typed_nodes, cover),
                steps,
            )
        )
    rows.sort(key=lambda r: (not r.first, -(r.not_ready_seconds or 0.0), r.node))
    plan.steps = [s for r in rows for s in r.steps]
    return rows


def explain_exclusions(plan: Plan, cover: Coverage, typed_nodes: Sequence[str]) -> None:
    """A failed node whose lease is renewed (or unread) gets no destructive step in a zone run
    unless its own name was typed: not on a zone attestation, and not on other evidence either
    (a cloud shutdown taint and a renewed lease contradict each other). Its steps say why, in
    place of the generic 'no evidence' gate."""
    for step in plan.steps:
        why = cover.excluded.get(step.node)
        if (
            not why
            or step.node in typed_nodes
            or step.action not in MUTATING
            or step.action == "remove-out-of-service"
        ):
            continue
        step.allowed = False
        step.gate = (
            f"a zone run does not act on {step.node}"
            + (" (the zone attestation does not cover it)" if cover.typed else "")
            + f": {why}. A node that is Ready or whose lease is being renewed is never "
            "tainted or deleted in a zone run. Check its machine yourself; only if it is off, "
            f"add {attestation.flag()}, typing the node's name yourself"
        )


# The node lifecycle controller's default rates (kube-controller-manager flags).
def _estimate(zone: ZoneFinding) -> str:
    if zone.eviction == "slowed":
        seconds = zone.not_ready / facts.SECONDARY_NODE_EVICTION_RATE
        return (
            f" At that rate the controller needs about {_duration(seconds)} to taint all "
            f"{zone.not_ready} (fewer if some are tainted already)."
        )
    if zone.eviction == "proceeding" and zone.not_ready:
        seconds = zone.not_ready / facts.NODE_EVICTION_RATE
        return (
            f" At that rate the controller needs about {_duration(seconds)} for its "
            f"{zone.not_ready} not-Ready nodes."
        )
    return ""


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


def brake(report: Report, scope: Scope) -> list[str]:
    """The zone brake of each zone in scope, as the node lifecycle controller applies it, and
    what it means for this run."""
    lines = []
    for zone in report.zones:
        if zone.zone not in scope.zones:
            continue
        lines.append(
            f"Zone {zone.zone}: {zone.state}, controller evictions {zone.eviction}. "
            f"{zone.explanation}{_estimate(zone)}"
        )
    if lines:
        lines.append(
            "The brake rate-limits only the node lifecycle controller's own NoExecute taints. "
            "The out-of-service taint of this run is not slowed by it: it is the operator's "
            "decision, node by node, on evidence that each machine is off, so it is gated on "
            f"that evidence instead, and sent to at most {POOL} nodes at a time."
        )
    return lines


@dataclass
class ZoneView:
    """Everything the zone plan shows besides the steps."""

    scope: Scope
    coverage: Coverage
    rows: list[NodeRow]
    brake: list[str]
    ready: list[str]  # nodes of the scope that are Ready: never tainted or deleted
    failed: int = 0  # nodes of the scope that are not Ready
    pool: int = POOL


def plan_view(
    plan: Plan, report: Report, scope: Scope, typed_nodes: Sequence[str], cover: Coverage
) -> ZoneView:
    explain_exclusions(plan, cover, typed_nodes)
    rows = order(plan, report, typed_nodes, cover)
    failed = {n.name for n in report.nodes if n.failed}
    ready = [n for n in scope.nodes if n not in failed]
    return ZoneView(scope, cover, rows, brake(report, scope), ready, len(scope.nodes) - len(ready))


@dataclass
class Ask:
    """What the operator typed, besides the scope."""

    strategy: str = "auto"
    typed_nodes: Sequence[str] = ()  # --node-shutdown-confirmed, each checked to be in scope
    typed_scope: bool = False  # --zone-shutdown-confirmed / --selector-shutdown-confirmed
    max_nodes: int | None = None  # None: the scope is the bound
    allow_disruption: bool = False
    attested_by: str = ""


def plan_zone(snap: Snapshot, scope: Scope, ask: Ask) -> tuple[Plan, ZoneView]:
    """The plan for the scope's nodes from a snapshot, as make_plan plans named nodes (every
    gate the same), with the zone attestation expanded to the nodes it covers, and its view."""
    check_attestations(snap, ask.typed_nodes)  # typed names first: a contradiction stops all
    report = diagnose(snap, snap.captured_at, only_nodes=scope.nodes)
    cover = coverage(report, scope, ask.typed_scope)
    uids = {n["metadata"]["name"]: str(n["metadata"].get("uid") or "") for n in snap.nodes}
    opts = Options(
        strategy=ask.strategy,
        attested=sorted(set(ask.typed_nodes) | set(cover.attested)),
        only_nodes=scope.nodes,
        max_nodes=ask.max_nodes or max(1, len(scope.nodes)),
        allow_disruption=ask.allow_disruption,
        server_minor=snap.server_minor,
        node_uids=uids,
        attested_by=ask.attested_by,
    )
    plan = make_plan(report, opts)
    return plan, plan_view(plan, report, scope, ask.typed_nodes, cover)


def suggestion(scope: Scope) -> str:
    """What to type to attest the whole scope: the flag with its placeholder, never filled."""
    return f"{scope.flag} {scope.placeholder}"
