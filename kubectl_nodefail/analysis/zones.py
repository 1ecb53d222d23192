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
        t.get("effect") == "NoExecute"
        and t.get("key") in (facts.TAINT_UNREACHABLE, facts.TAINT_NOT_READY)
        for t in (node.get("spec") or {}).get("taints") or []
    )


def _taints(members: list[Obj]) -> list[Premise]:
    """Whether each not-Ready node carries the controller's NoExecute taint, unreachable or
    not-ready (its key, or None: not yet, or never while the zone is braked)."""
    return [
        fact("Node", n, f"spec.taints[key={key},effect=NoExecute].key")
        for n in members
        if not is_ready(n)
        for key in (facts.TAINT_UNREACHABLE, facts.TAINT_NOT_READY)
    ]


def analyse_zones(
    nodes: list[Obj], now: datetime | None = None, leader_since: list[Premise] | None = None
) -> tuple[list[ZoneFinding], bool]:
    """Per-zone state and eviction effect; the flag is True in 'master disruption mode'
    (every zone fully disrupted: the controller removes NoExecute taints and stops evicting).
    `now`: also which not-Ready nodes the zone's tainting is past its time for
    (ZoneFinding.late), counted from the controller leader's start too (`leader_since`: its
    acquireTime, as a premise)."""
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
        changed, found.changed_by = _changed(everyone.get(zone, []))
        for took in leader_since or []:  # a new leader queues every not-Ready node again
            started = parse_time(took.value) if isinstance(took.value, str) else None
            if started is not None and (changed is None or started > changed):
                changed, found.changed_by = started, [took]
        if now is not None and eviction in ("proceeding", "slowed"):
            found.late = _late(everyone.get(zone, []), changed, eviction, now)
        if found.late:  # what the line says runs is not done here
            found.eviction = "stopped"
            found.explanation = text = _not_tainting(found, tainted.get(zone, 0))
            because += [
                fact("Node", n, p)
                for n in everyone.get(zone, [])
                if n["metadata"]["name"] in found.late
                for p in (READY_SINCE, NO_EXECUTE)
            ] + found.changed_by
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


def _changed(nodes: list[Obj]) -> tuple[datetime | None, list[Premise]]:
    """The latest moment one of `nodes` was created or changed its Ready condition, and that
    fact: what the API shows of the zone's last change of state (a Node deleted or relabelled
    leaves nothing)."""
    best: tuple[datetime, Obj, str] | None = None
    for node in nodes:
        created = parse_time(node["metadata"].get("creationTimestamp"))
        for at, path in ((_ready_since(node), READY_SINCE), (created, CREATED)):
            if at is not None and (best is None or at > best[0]):
                best = (at, node, path)
    if best is None:
        return None, []
    return best[0], [fact("Node", best[1], best[2])]


READY_SINCE = "status.conditions[type=Ready].lastTransitionTime"
CREATED = "metadata.creationTimestamp"


def _ready_since(node: Obj) -> datetime | None:
    return parse_time((ready_condition(node) or {}).get("lastTransitionTime"))
