"""The brake: a failure too wide to trust the machines' deaths.

When a zone is in disruption (the node lifecycle controller's own brake) or most of the
cluster's nodes are not Ready at once, a partition or the control plane is the likelier cause,
and forcing pods off "dead" nodes could run them twice. remediate then refuses every
destructive step (plan.py), and diagnose says so wherever it would advise one (advice.py): one
claim, computed once over the whole cluster whatever the view's scope, with the node counts it
rests on as premises.

The counts are premises about sets of Nodes (claims.py): `Node[]` (every node) or
`Node[LABEL=VALUE,...]` (the nodes of one zone), with `count` or
`count(status.conditions[type=Ready].status=True)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from kubectl_nodefail.analysis import facts
from kubectl_nodefail.analysis.claims import Claim, Premise, claim, fact, read
from kubectl_nodefail.analysis.findings import ZoneFinding
from kubectl_nodefail.analysis.leader import Leader
from kubectl_nodefail.snapshot.model import Obj

MASS_FAILURE_NODES = 3
MASS_FAILURE_SHARE = 0.5
READY_TRUE = "count(status.conditions[type=Ready].status=True)"
OVERRIDE = "--allow-disruption"


def _ready_count(nodes: list[Obj]) -> int:
    """Nodes whose first Ready condition is True: the premise checker's own reading of
    `conditions[type=Ready]` (a node lists one Ready condition)."""
    return sum(1 for n in nodes if read(n, "status.conditions[type=Ready].status") == "True")


def cluster_counts(nodes: list[Obj]) -> list[Premise]:
    """How many nodes the cluster has, and how many are Ready."""
    return [
        Premise("Node[]", "count", len(nodes)),
        Premise("Node[]", READY_TRUE, _ready_count(nodes)),
    ]


def zone_counts(selector: str, members: list[Obj]) -> list[Premise]:
    """How many nodes a zone's selector names, and how many of them are Ready."""
    return [
        Premise(selector, "count", len(members)),
        Premise(selector, READY_TRUE, _ready_count(members)),
    ]


# Why a wide failure is not trusted: the sentence every brake claim ends with.
WHY = (
    "more likely the network or the control plane than the machines, and forcing pods off "
    "'dead' nodes that still run would run them twice"
)


def counted(zone: ZoneFinding) -> list[Premise]:
    """The premises of a zone's node counts (not those of its nodes' taints)."""
    return [p for c in zone.claims for p in c.because if not p.field.startswith("spec.taints")]


def is_mass_failure(failed: int, total: int) -> bool:
    """At least MASS_FAILURE_NODES nodes and MASS_FAILURE_SHARE of them not Ready at once."""
    return failed >= MASS_FAILURE_NODES and bool(total) and failed / total >= MASS_FAILURE_SHARE


# Why nothing is forced while kube-controller-manager has no leader (analysis/leader.py).
WHY_NO_LEADER = (
    "without them neither the out-of-service taint nor deleting the Node releases anything "
    "(PodGC, attach-detach), nothing replaces a pod forced off, and the control plane itself "
    "is in trouble"
)


def find(
    nodes: list[Obj],
    zones: list[ZoneFinding],
    failed: int,
    master_disruption: bool,
    chief: Leader | None = None,
    now: datetime | None = None,
) -> Claim | None:
    """The brake in force, as one claim; None when the failure is narrow enough to act on.
    `failed`: the cluster's not-Ready nodes (all of them, not a view's). `chief`:
    kube-controller-manager's leader: with its Lease expired, nothing is forced either."""
    # A zone fully down is a brake only with at least MASS_FAILURE_NODES nodes (or in master
    # disruption): a node alone in its zone (some clusters give each node a zone of its own)
    # going down is one node failing, as the node lifecycle controller's evictions there go on
    disrupted = [
        z
        for z in zones
        if z.state == facts.ZONE_PARTIAL
        or (z.state == facts.ZONE_FULL and (master_disruption or z.nodes >= MASS_FAILURE_NODES))
    ]
    if disrupted:
        names = ", ".join(
            f"{z.zone} {z.state} ({z.not_ready}/{z.nodes} not Ready)" for z in disrupted
        )
        because = [p for z in disrupted for p in counted(z)]
        lead = "every zone fully disrupted" if master_disruption else "zone disruption"
        return claim("brake", "cluster", f"{lead}: {names}: {WHY}", *because)
    total = len(nodes)
    if is_mass_failure(failed, total):
        return claim(
            "brake",
            "cluster",
            f"{failed} of {total} nodes not Ready at once: {WHY}",
            *cluster_counts(nodes),
        )
    if chief is not None and chief.expired() and now is not None and failed:
        return claim(
            "brake", "cluster", f"{chief.no_leader(now)}: {WHY_NO_LEADER}", *chief.premises()
        )
    return None


def reason(brake: Claim) -> str:
    """The brake's facts without its why: `3 of 6 nodes not Ready at once`."""
    for why in (WHY, WHY_NO_LEADER):
        if brake.text.endswith(why):
            return brake.text[: -len(f": {why}")]
    return brake.text


def refusal(brake: Claim) -> str:
    """What remediate says when the brake refuses its destructive steps."""
    return f"{brake.text}. Destructive steps refused (override: {OVERRIDE}, after ruling that out)"


# How diagnose's advice opens while the brake holds: a wide failure's cause is to be ruled out;
# a missing controller leader's cure is known.
ADVICE_OPENINGS = ("first rule out", "first bring kube-controller-manager back")


def advice(brake: Claim) -> str:
    """What diagnose says before a destructive suggestion while the brake holds."""
    if brake.text.endswith(WHY_NO_LEADER):
        return (
            f"{ADVICE_OPENINGS[1]} ({reason(brake)}): remediate refuses destructive steps until "
            f"then ({OVERRIDE} if it runs without leader election)"
        )
    return (
        f"{ADVICE_OPENINGS[0]} the network and the control plane ({reason(brake)}): remediate "
        f"refuses destructive steps until then ({OVERRIDE} once ruled out)"
    )


def _terms(members: list[Obj]) -> list[tuple[str, str | None]]:
    """The labels naming a zone's nodes, read from its first member (GA labels before the beta
    ones; None: the label is absent), and the absence of the exclusion label."""
    labels = (members[0]["metadata"].get("labels") or {}) if members else {}
    terms: list[tuple[str, str | None]] = []
    for ga, beta in (
        (facts.LABEL_REGION, facts.LABEL_REGION_BETA),
        (facts.LABEL_ZONE, facts.LABEL_ZONE_BETA),
    ):
        key = ga if labels.get(ga) else beta if labels.get(beta) else None
        terms += [(key, labels[key])] if key else [(ga, None), (beta, None)]
    terms.append((facts.LABEL_EXCLUDE_DISRUPTION, None))
    return terms


def _selects(terms: list[tuple[str, str | None]], node: Obj) -> bool:
    labels = node["metadata"].get("labels") or {}
    return all(
        (label not in labels) if value is None else labels.get(label) == value
        for label, value in terms
    )


def selector(members: list[Obj]) -> str:
    """`Node[...]` naming the nodes of one zone by the labels its first member carries (the
    zone key is region/zone, GA labels before the beta ones), excluding nodes the controller
    leaves out of zone states."""
    return (
        "Node["
        + ",".join(
            f"!{label}" if value is None else f"{label}={value}" for label, value in _terms(members)
        )
        + "]"
    )


# The labels a zone's selector may name (zone_of reads them)
ZONE_LABELS = (
    facts.LABEL_REGION,
    facts.LABEL_REGION_BETA,
    facts.LABEL_ZONE,
    facts.LABEL_ZONE_BETA,
)


@dataclass
class LabelIndex:
    """The nodes by each zone label's value, built once for all the zones of a snapshot: a
    zone's selector is matched against the nodes carrying its labels only (a cluster with a
    zone per node would otherwise match every node for every zone)."""

    by_name: dict[str, Obj]
    by_label: dict[tuple[str, str], set[str]]


def label_index(nodes: list[Obj]) -> LabelIndex:
    by_label: dict[tuple[str, str], set[str]] = {}
    for node in nodes:
        labels = node["metadata"].get("labels") or {}
        for label in ZONE_LABELS:
            if label in labels:
                by_label.setdefault((label, labels[label]), set()).add(node["metadata"]["name"])
    return LabelIndex({n["metadata"]["name"]: n for n in nodes}, by_label)


def zone_facts(members: list[Obj], index: LabelIndex) -> list[Premise]:
    """A zone's node counts as premises: over the set its labels select when that set is its
    members exactly, else (labels mixed: GA on some nodes, beta or empty on others) each
    member's Ready condition, one premise a node."""
    terms = _terms(members)
    valued = [(label, value) for label, value in terms if value is not None]
    candidates = (
        set.intersection(*(index.by_label.get(t, set()) for t in valued))
        if valued
        else set(index.by_name)
    )
    chosen = {n for n in candidates if _selects(terms, index.by_name[n])}
    if chosen == {n["metadata"]["name"] for n in members}:
        return zone_counts(selector(members), members)
    return [fact("Node", n, "status.conditions[type=Ready].status") for n in members]
