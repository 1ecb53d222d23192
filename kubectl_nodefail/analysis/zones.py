"""Zone disruption states, computed as the node lifecycle controller does (ComputeZoneState)."""

from __future__ import annotations

from kubectl_nodefail.analysis import brake, facts
from kubectl_nodefail.analysis.claims import Premise, claim, fact
from kubectl_nodefail.analysis.findings import ZoneFinding
from kubectl_nodefail.analysis.nodes import is_ready, zone_of
from kubectl_nodefail.snapshot.model import Obj

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


def analyse_zones(nodes: list[Obj]) -> tuple[list[ZoneFinding], bool]:
    """Per-zone state and eviction effect; the flag is True in 'master disruption mode'
    (every zone fully disrupted: the controller removes NoExecute taints and stops evicting)."""
    counts: dict[str, list[int]] = {}
    tainted: dict[str, int] = {}  # not-Ready nodes already carrying a NoExecute taint
    members: dict[str, list[Obj]] = {}
    index = brake.label_index(nodes)
    for node in nodes:
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
        said = claim("zone-state", "zone", text, *because)
        findings.append(ZoneFinding(zone, size, not_ready, state, eviction, text, [said]))
    return findings, all_down
