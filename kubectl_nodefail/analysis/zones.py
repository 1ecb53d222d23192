"""Zone disruption states, computed as the node lifecycle controller does (ComputeZoneState)."""

from __future__ import annotations

from datetime import datetime

from kubectl_nodefail.analysis import brake, facts
from kubectl_nodefail.analysis.claims import Premise, claim, fact
from kubectl_nodefail.analysis.findings import ZoneFinding
from kubectl_nodefail.analysis.nodes import is_ready, ready_condition, zone_of
from kubectl_nodefail.analysis.text import plural
from kubectl_nodefail.snapshot.model import Obj, parse_time, shifted

NORMAL, PARTIAL, FULL = facts.ZONE_NORMAL, facts.ZONE_PARTIAL, facts.ZONE_FULL


def zone_state(ready: int, not_ready: int) -> str:
    if ready == 0 and not_ready > 0:
        return FULL
    if not_ready > 2 and not_ready / (ready + not_ready) >= facts.UNHEALTHY_ZONE_THRESHOLD:
        return PARTIAL
    return NORMAL


def _noexecute_tainted(node: Obj) -> bool:
    return any(
        t.get("effect") == "NoExecute" and t.get("key") in facts.LIFECYCLE_TAINTS
        for t in (node.get("spec") or {}).get("taints") or []
    )


def _taints(members: list[Obj]) -> list[Premise]:
    """Whether each not-Ready node carries the controller's NoExecute taint, unreachable or
    not-ready (its key, or None: not yet, or never while the zone is braked)."""
    return [
        fact("Node", n, f"spec.taints[key={key},effect=NoExecute].key")
        for n in members
        if not is_ready(n)
        for key in facts.LIFECYCLE_TAINTS
    ]


def analyse_zones(
    nodes: list[Obj], now: datetime | None = None, leader: list[Premise] | None = None
) -> tuple[list[ZoneFinding], bool]:
    """Per-zone state and eviction effect; the flag is True in 'master disruption mode'
    (every zone fully disrupted: the controller removes NoExecute taints and stops evicting).
    `now`: also which not-Ready nodes the zone's tainting is past its time for
    (ZoneFinding.late), counted from the controller leader's start too (`leader`: its Lease's
    facts, acquireTime among them; given only while it renews)."""
    counts: dict[str, list[int]] = {}
    tainted: dict[str, int] = {}  # not-Ready nodes already carrying a NoExecute taint
    members: dict[str, list[Obj]] = {}
    index = brake.label_index(nodes)
    everyone: dict[str, list[Obj]] = {}  # excluded ones too: the controller taints them
    for node in nodes:
        everyone.setdefault(zone_of(node), []).append(node)
        if facts.LABEL_EXCLUDE_DISRUPTION in (node["metadata"].get("labels") or {}):
            continue
        zone = zone_of(node)
        members.setdefault(zone, []).append(node)
        ready_not = counts.setdefault(zone, [0, 0])
        ready_not[0 if is_ready(node) else 1] += 1
        if not is_ready(node) and _noexecute_tainted(node):
            tainted[zone] = tainted.get(zone, 0) + 1
    states = {zone: zone_state(r, n) for zone, (r, n) in counts.items()}
    all_down = bool(states) and all(s == FULL for s in states.values())
    steady = _steady(members)
    findings = []
    for zone, (ready, not_ready) in sorted(counts.items()):
        state = states[zone]
        size = ready + not_ready
        if all_down:
            eviction = "stopped"
            done = tainted.get(zone, 0)
            text = (
                "every zone is fully disrupted: the controller assumes its own connectivity is "
                "broken ('master disruption mode'), taints no more nodes and removes the "
                "NoExecute taints it set. "
                + (
                    f"{done} node(s) here still carry one (tainted as the mode began) and keep "
                    "evicting their pods by their tolerations. "
                    if done
                    else "Pods on nodes without the NoExecute taint are not evicted. "
                )
                + "Suspect the control plane or the network, not the nodes."
            )
        elif state == PARTIAL and size > facts.LARGE_CLUSTER_SIZE_THRESHOLD:
            eviction = "slowed"
            text = (
                f"{not_ready}/{size} nodes not Ready (>= {facts.UNHEALTHY_ZONE_THRESHOLD:.0%}): "
                f"NoExecute tainting slowed to --secondary-node-eviction-rate "
                f"({facts.SECONDARY_NODE_EVICTION_RATE}/s by default): evictions continue, "
                "one node at a time. A failure this wide is more likely "
                "the network or the control plane than the machines."
            )
        elif state == PARTIAL:
            eviction = "stopped"
            done = tainted.get(zone, 0)
            text = (
                f"{not_ready}/{size} nodes not Ready (>= {facts.UNHEALTHY_ZONE_THRESHOLD:.0%}) "
                f"in a zone of <= {facts.LARGE_CLUSTER_SIZE_THRESHOLD} nodes: NoExecute tainting "
                f"stopped. Pods on the {not_ready - done} not-Ready node(s) without the "
                f"NoExecute taint are not evicted while the zone stays in {PARTIAL} (once it "
                f"leaves it, under {facts.UNHEALTHY_ZONE_THRESHOLD:.0%} not Ready or no Ready "
                "node left while other zones are up, tainting resumes for the nodes still "
                f"down); the {done} node(s) tainted before the brake still evict theirs by "
                "their tolerations. Suspect the network or the control plane."
            )
        elif state == FULL:
            eviction = "proceeding"
            text = (
                f"no Ready node in this zone ({not_ready}/{size} down); other zones are up, "
                "so evictions proceed at --node-eviction-rate. Check the zone's network or "
                "power."
            )
        else:
            eviction = "proceeding"
            text = (
                (
                    f"{not_ready}/{size} nodes not Ready; NoExecute tainting runs at "
                    "--node-eviction-rate "
                    f"({facts.NODE_EVICTION_RATE} nodes/s by default)."
                )
                if not_ready
                else "healthy"
            )
        because = brake.zone_facts(members[zone], index)
        if eviction == "stopped":  # which not-Ready nodes carry the NoExecute taint
            because += _taints(members[zone])
        found = ZoneFinding(zone, size, not_ready, state, eviction, text)
        if now is not None and eviction in ("proceeding", "slowed"):
            marks = [*_marks(everyone.get(zone, [])), steady, *_leader_marks(leader)]
            changed, found.changed_by = max(
                (m for m in marks if m is not None), key=lambda m: m[0], default=(None, [])
            )
            found.late = _late(everyone.get(zone, []), changed, eviction, now)
        if found.late:  # what the line says runs is not done here
            found.eviction = "stopped"
            found.explanation = text = _not_tainting(found, tainted.get(zone, 0))
            because += [
                fact("Node", n, p)
                for n in everyone.get(zone, [])
                if n["metadata"]["name"] in found.late
                for p in (READY_SINCE, NO_EXECUTE)
            ]
            because += [*found.changed_by, *(leader or [])]  # when, and that it runs
        found.claims = [claim("zone-state", "zone", text, *because)]
        findings.append(found)
    return findings, all_down


# The node lifecycle controller looks at every node each 5 s (node-monitor-period) and taints a
# zone's not-Ready nodes one at a time at its zone's rate; past that, this much more (its sync,
# the clocks) before a not-Ready node without its taint is said not to be getting one.
MONITOR_PERIOD_SECONDS = 5
TAINT_SLACK_SECONDS = 60
NO_EXECUTE = "spec.taints[effect=NoExecute]"


def _late(
    nodes: list[Obj], changed: datetime | None, eviction: str, now: datetime
) -> dict[str, tuple[datetime, datetime]]:
    """The zone's not-Ready nodes without the controller's NoExecute taint when, at the zone's
    default rate, every not-Ready node of the zone would have been tainted since the node went
    not Ready and since the zone last changed as far as the API shows (a node joining or
    changing its Ready state: a brake lifted shows so): name -> (since, due)."""
    rate = facts.SECONDARY_NODE_EVICTION_RATE if eviction == "slowed" else facts.NODE_EVICTION_RATE
    down = [n for n in nodes if not is_ready(n)]
    late = {}
    for node in down:
        since = _ready_since(node)
        if since is None or _noexecute_tainted(node):
            continue
        start = max(since, changed) if changed is not None else since
        due = shifted(start, MONITOR_PERIOD_SECONDS + len(down) / rate + TAINT_SLACK_SECONDS)
        if now > due:
            late[str(node["metadata"]["name"])] = (since, due)
    return late


def _not_tainting(zone: ZoneFinding, tainted: int) -> str:
    names = sorted(zone.late)
    rate = facts.SECONDARY_NODE_EVICTION_RATE if zone.state == PARTIAL else facts.NODE_EVICTION_RATE
    return (
        f"{zone.not_ready}/{zone.nodes} nodes not Ready ({zone.state}); the node lifecycle "
        f"controller taints them one at a time, at {rate} nodes/s by default, but "
        f"{', '.join(names[:3])}{f' and {len(names) - 3} more' if len(names) > 3 else ''} "
        f"{'carries' if len(names) == 1 else 'carry'} no NoExecute taint well past the time "
        "that takes since going not Ready and since the zone last changed as far as the API "
        "shows (a Node deleted or relabelled leaves no trace): it is not tainting here "
        "(disabled, overloaded, or a lower rate set: kube-controller-manager's --controllers, "
        "--node-eviction-rate and log)"
        + (
            f"; pods on the {plural(tainted, 'node')} tainted are still evicted by their "
            "tolerations."
            if tainted
            else "."
        )
    )


Mark = tuple[datetime, list[Premise]]  # a moment and the fact that shows it


def _marks(nodes: list[Obj]) -> list[Mark | None]:
    """Moments after which the controller's tainting queue of a zone (`nodes`) may have
    started again, as far as the API shows: the latest a node joined or changed its Ready
    state (a brake lifted shows so; a Node deleted or relabelled leaves nothing), and the latest
    taint of its own the controller put on one (its queue moving: the others follow at its
    rate)."""
    joined: Mark | None = None
    tainted: Mark | None = None
    for node in nodes:
        created = parse_time(node["metadata"].get("creationTimestamp"))
        for at, path in ((_ready_since(node), READY_SINCE), (created, CREATED)):
            if at is not None and (joined is None or at > joined[0]):
                joined = (at, [fact("Node", node, path)])
        for taint in (node.get("spec") or {}).get("taints") or []:
            key = taint.get("key")
            if taint.get("effect") != "NoExecute" or key not in facts.LIFECYCLE_TAINTS:
                continue
            at = parse_time(taint.get("timeAdded"))
            if at is not None and (tainted is None or at > tainted[0]):
                path = f"spec.taints[key={key},effect=NoExecute].timeAdded"
                tainted = (at, [fact("Node", node, path)])
    return [joined, tainted]


def _steady(members: dict[str, list[Obj]]) -> Mark | None:
    """The earliest Ready transition of the nodes counted that are Ready now: since then every
    zone it is in had a Ready node, so there was no master disruption (which stops all
    tainting until a node anywhere is Ready again) after it. None: no node Ready."""
    ready = [
        (at, node)
        for nodes in members.values()
        for node in nodes
        if is_ready(node) and (at := _ready_since(node)) is not None
    ]
    if not ready:
        return None
    at, node = min(ready, key=lambda r: r[0])
    return at, [fact("Node", node, READY_SINCE)]


def _leader_marks(leader: list[Premise] | None) -> list[Mark | None]:
    """A new leader queues every not-Ready node again from its start (its acquireTime)."""
    return [
        (started, [took])
        for took in leader or []
        if took.field == "spec.acquireTime"
        and isinstance(took.value, str)
        and (started := parse_time(took.value)) is not None
    ]


READY_SINCE = "status.conditions[type=Ready].lastTransitionTime"
CREATED = "metadata.creationTimestamp"


def _ready_since(node: Obj) -> datetime | None:
    return parse_time((ready_condition(node) or {}).get("lastTransitionTime"))
