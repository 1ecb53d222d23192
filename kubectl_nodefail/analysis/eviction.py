"""When the taint-eviction controller deletes a pod from a tainted node, if ever."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from kubectl_nodefail.analysis import evictionclock, facts
from kubectl_nodefail.analysis.claims import Claim, Premise, claim, fact, read
from kubectl_nodefail.analysis.evictionclock import Spell
from kubectl_nodefail.analysis.findings import TaintView, ZoneFinding
from kubectl_nodefail.analysis.leader import Leader
from kubectl_nodefail.analysis.text import ago, duration
from kubectl_nodefail.snapshot.model import Obj, format_time, parse_time, shifted

# The out-of-service taint as remediate applies it (remediate/mutations.py): a pod that
# tolerates it with no time limit stays under it, and PodGC force-deletes only Terminating pods
# there.
OUT_OF_SERVICE = TaintView(facts.TAINT_OUT_OF_SERVICE, "NoExecute", "nodeshutdown")


def stays_under_out_of_service(pod: Obj) -> bool:
    """The first of the pod's tolerations that tolerates the out-of-service taint (the one the
    controller uses) has no time limit (a blanket `operator: Exists`, or that key): the taint
    evicts it never, so it does not release it."""
    _, used = evictionclock.first_match(
        [OUT_OF_SERVICE], (pod.get("spec") or {}).get("tolerations") or []
    )
    return bool(used) and used[0].get("tolerationSeconds") is None


# Words the timeline carries for each outcome; the NEXT column and the invariants read them.
NEVER = "never evicted"
PAUSED = "no eviction while"
PENDING = "the NoExecute taint is not on the node yet"
NOT_EVICTING = "the taint-eviction controller is not evicting"
UNKNOWN = "eviction time not known"
UNMARKED = "none comes until the node lifecycle controller"
UNTAINTED = "the node lifecycle controller is not tainting"

# The taint-eviction controller deletes a pod that does not tolerate a NoExecute taint as soon
# as it handles the node update: on the real control plane the deletion carries the taint's own
# second (tests/e2e/test_claims_rules.py). Such a pod without a deletionTimestamp is either that
# instant or a controller that does not run; past this many seconds, it is the latter.
EVICTION_LAG_SECONDS = 30
UNKNOWN_SINCE = "status.conditions[type=Ready].lastTransitionTime"
CREATED = "metadata.creationTimestamp"


def arrived(pod: Obj) -> datetime | None:
    """When the pod was bound to its node, as the API records it: its PodScheduled condition's
    lastTransitionTime (the scheduler's binding, or the kubelet's first status for a pod created
    with spec.nodeName), else its creationTimestamp (spec.nodeName set at creation, no status
    posted since). The taint-eviction controller counts tolerationSeconds from when it first
    sees the pod on a tainted node: the later of this and the taint's timeAdded."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "True":
            when = parse_time(cond.get("lastTransitionTime"))
            if when is not None:
                return when
    return parse_time(pod["metadata"].get("creationTimestamp"))


@dataclass
class EvictionTime:
    state: str  # evicted | scheduled | never | immediate | not-evicting | pending-taint | paused
    # | untainted | unknown | not-applicable
    at: datetime | None
    text: str
    # the premises beyond the pod's tolerations and the node's taints: the event a replaced
    # not-ready taint is read from, the pod's generation and managedFields
    extra: list[Premise] = field(default_factory=list)


def as_claim(ev: EvictionTime, pod: Obj, node: Obj | None, zone: ZoneFinding | None) -> Claim:
    """The timeline's sentence as a claim, with the facts `eviction_time` computed it from: the
    deletion already asked, else the pod's tolerations, the node's taints, when the pod reached
    the node (for a count from its arrival), and, where no NoExecute taint is on the node yet,
    the zone counts that decide whether one comes."""
    because = [fact("Pod", pod, "metadata.deletionTimestamp")]
    if ev.state != "evicted":
        because.append(fact("Pod", pod, "spec.tolerations"))
        if node is not None:
            keys = [
                t.get("key")
                for t in (node.get("spec") or {}).get("taints") or []
                if isinstance(t, dict) and t.get("effect") == "NoExecute" and t.get("key")
            ]
            # each NoExecute taint by its time, or (none on the node yet) that there is none
            paths = [f"spec.taints[key={k},effect=NoExecute].timeAdded" for k in keys]
            because += [fact("Node", node, p) for p in paths or ["spec.taints[effect=NoExecute]"]]
    if ev.state in ("scheduled", "immediate", "not-evicting"):
        because += [
            fact("Pod", pod, "status.conditions[type=PodScheduled].lastTransitionTime"),
            fact("Pod", pod, "metadata.creationTimestamp"),
        ]
    if ev.state in ("paused", "pending-taint", "untainted") and zone is not None and zone.claims:
        because += zone.claims[0].because
    because += ev.extra
    return claim("eviction", "eviction", ev.text, *because)


def eviction_time(
    pod: Obj,
    node_taints: list[TaintView],
    zone: ZoneFinding | None,
    master_disruption: bool,
    now: datetime,
    earlier: Spell | None = None,
    chief: Leader | None = None,
    node: Obj | None = None,
    kept_since: datetime | None = None,
    unmarked: list[Premise] | None = None,
    off: tuple[str, list[Premise]] = ("", []),
) -> EvictionTime:
    """`earlier`: a not-ready spell the node had before the taints it carries now
    (evictionclock.earlier_not_ready). `chief`: kube-controller-manager's leader, when its
    Lease was read (analysis/leader.py); `node`: the Node, whose Ready condition tells when it
    went Unknown. `kept_since`: the earliest moment whose Events are still kept
    (evictionclock.kept_since): a NodeNotReady event before it is gone. `unmarked`: the
    premises of a Ready node the node lifecycle controller is past its time to mark
    (nodes.classify's `lease-overdue`), whose NoExecute taint does not come until it does.
    `off`: what says the node lifecycle controller does not run (nodes.lifecycle_off): then
    no taint of its comes to a node that has none."""
    if pod["metadata"].get("deletionTimestamp"):
        return EvictionTime(
            "evicted", None, "already being deleted (evicted or deleted by someone)"
        )
    noexec = [t for t in node_taints if t.effect == "NoExecute"]
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    pod_arrived = arrived(pod)
    spells = evictionclock.node_spells(node_taints, now)
    in_spell: evictionclock.Clock | None = None
    forgotten: list[Premise] = []  # what tells that a new leader forgot the event's count
    if earlier is not None and chief is not None and chief.after(earlier.since):
        # A new leader took over after the kubelet's NotReady: it took the taints off and put
        # them on again, so the count the not-ready taint started is gone. Before the node went
        # Unknown, the not-ready taint it put back started one, at a moment no longer shown.
        unknown_since = _unknown_since(node)
        if unknown_since is not None and not chief.after(unknown_since) and earlier.until:
            # counted from when it put the not-ready taint back: at its start at the earliest
            found = evictionclock.run(
                [*spells, Spell(earlier.taint, chief.since, earlier.until, earlier.event)],
                tolerations,
                pod_arrived,
            )
            if found.outcome == "scheduled" and found.spell is not None and found.spell.event:
                in_spell = found
        earlier = None
        forgotten = [chief.premise(), *([fact("Node", node, UNKNOWN_SINCE)] if node else [])]
    clock = evictionclock.run(spells + ([earlier] if earlier else []), tolerations, pod_arrived)
    if earlier and clock.at and (now - clock.at).total_seconds() > EVICTION_LAG_SECONDS:
        # an eviction the not-ready spell would have made long ago has not happened: the spell
        # the event tells of was not tainted (a zone's brake, a controller that was down)
        clock, earlier = evictionclock.run(spells, tolerations, pod_arrived), None
    extra = _spell_premises(clock) + forgotten
    if chief is not None and chief.expired() and clock.outcome in ("immediate", "scheduled"):
        others = sorted({t.key for t in noexec if t.key not in facts.LIFECYCLE_TAINTS})
        then = (
            "it takes the node's NoExecute taints off and puts them back, and counts the pod's "
            "tolerations again from then"
            if not others
            else "its taint-eviction controller counts the pod's tolerations again from then (its "
            f"node lifecycle controller takes off only its own taints, not {', '.join(others)})"
        )
        return EvictionTime(
            "not-evicting",
            None,
            f"{NOT_EVICTING}: {chief.no_leader(now)}; once a leader takes over, {then}",
            [*extra, *chief.premises()],
        )
    if clock.outcome == "immediate" and clock.spell is not None:
        taint, seen = clock.spell.taint, clock.start
        age = (now - seen).total_seconds() if seen else 0.0
        if age > EVICTION_LAG_SECONDS:
            return EvictionTime(
                "not-evicting",
                None,
                f"does not tolerate {taint.key}:NoExecute, "
                + (
                    f"bound to the tainted node {ago(age)}"
                    if clock.by_arrival
                    else f"added {ago(age)}"
                )
                + ": the "
                "taint-eviction controller deletes such a pod within moments, so "
                f"{NOT_EVICTING} "
                + (
                    "(disabled in kube-controller-manager --controllers, or overloaded: its "
                    "leader renews its Lease)"
                    if chief is not None and chief.alive()
                    else "(disabled in kube-controller-manager --controllers, or the manager is "
                    "down or overloaded)"
                ),
                [*extra, *(chief.premises() if chief is not None else [])],
            )
        return EvictionTime(
            "immediate",
            seen,
            f"does not tolerate {taint.key}:NoExecute: evicted as soon as the "
            "taint-eviction controller sees it",
            extra,
        )
    written = evictionclock.spec_written(pod)
    if clock.outcome == "scheduled" and clock.at is not None and clock.start is not None:
        if written is not None and (written[1] is None or written[1] > clock.start):
            return _rewritten(written, clock.start, pod, extra)
        if in_spell is not None and chief is not None:
            return _counted_again(in_spell, chief, node, extra, zone, master_disruption)
        spell = clock.spell
        if chief is not None and spell is not None and chief.after(shifted(spell.since, 1)):
            if spell.taint.key in facts.LIFECYCLE_TAINTS:
                return _counted_again(clock, chief, None, extra, zone, master_disruption)
            # a taint of someone else's stays: the new leader counts from its own start
            seconds = (clock.at - clock.start).total_seconds()
            return EvictionTime(
                "scheduled",
                shifted(max(chief.since, clock.start), seconds),
                f"eviction due about {format_time(shifted(max(chief.since, clock.start), seconds))}"
                f" ({chief.words()}, after the count began; the taint-eviction controller keeps "
                "its counts in memory, and the new leader counted again from its start + "
                "smallest tolerationSeconds)",
                [*extra, chief.premise()],
            )
        if clock.spell is not None and not clock.spell.timed and not clock.by_arrival:
            seconds = (clock.at - clock.start).total_seconds()
            return EvictionTime(
                "unknown",
                None,
                f"{UNKNOWN}: {duration(seconds)} after the taint {clock.spell.taint.key} was "
                "added (its smallest tolerationSeconds), and the node does not record when: the "
                "taint has no timeAdded (added by hand or by a tool, not by the node lifecycle "
                "controller)",
                extra,
            )
        late = (now - clock.at).total_seconds()
        start, shown = _start_words(clock, spells)
        if late > EVICTION_LAG_SECONDS:
            return EvictionTime(
                "not-evicting",
                None,
                f"eviction was due {ago(late)} ({start} + smallest tolerationSeconds{shown}) "
                f"and it has not happened: {NOT_EVICTING} "
                + (
                    "(disabled, down or overloaded), or kube-controller-manager restarted since "
                    "and counts its tolerations again from its start"
                    if chief is None
                    else "(disabled in kube-controller-manager --controllers, or overloaded: its "
                    "leader, there since before the count began, renews its Lease)"
                    if chief.alive()
                    else "(disabled, down or overloaded)"
                ),
                [*extra, *(chief.premises() if chief is not None else [])],
            )
        hidden = _hidden_spell(
            clock, earlier, tolerations, now, kept_since, pod_arrived, node, chief
        )
        return EvictionTime(
            "scheduled",
            clock.at,
            f"eviction due {ago(late)} ({start} + smallest tolerationSeconds{shown})"
            + (
                ", unless its kubelet reported NotReady before it went silent, from before "
                f"{format_time(hidden[1])}, whose Events are no longer kept (an hour by default: "
                "kube-apiserver --event-ttl): the count then began earlier, under the not-ready "
                "taint, at a moment no kept Event shows, and runs its not-ready "
                f"tolerationSeconds ({duration(hidden[0])})"
                if hidden is not None
                else ""
            ),
            [
                *extra,
                *([fact("Node", node, "metadata.creationTimestamp")] if hidden and node else []),
            ],
        )
    _, used = evictionclock.first_match(
        [TaintView(facts.TAINT_UNREACHABLE, "NoExecute")], tolerations
    )
    forever = bool(used) and used[0].get("tolerationSeconds") is None
    # the node lifecycle controller's own taint, on a failed node, may be still to come (rate
    # limits, a zone's brake, no leader, a node not marked yet): what the pod tolerates without
    # a limit now evicts it never only if that one is there, or tolerated so too
    lifecycle = any(t.key in facts.LIFECYCLE_TAINTS for t in noexec)
    if noexec and (lifecycle or forever):
        return EvictionTime(
            "never",
            None,
            "tolerates the NoExecute taints without a time limit (the first of its tolerations "
            f"that matches each, the one the controller reads): {NEVER}",
        )
    if forever:
        return EvictionTime(
            "never", None, f"tolerates unreachable/not-ready without a time limit: {NEVER}"
        )
    held = (
        "its node's NoExecute taints tolerated without a time limit (the first of its "
        "tolerations that matches each), and no unreachable/not-ready taint on it"
        if noexec
        else "no NoExecute taint on its node"
    )
    if chief is not None and chief.expired():
        return EvictionTime(
            "not-evicting",
            None,
            f"{held}, and {NOT_EVICTING}: {chief.no_leader(now)}; once "
            "a leader takes over, it taints the node and eviction follows the pod's "
            "tolerationSeconds",
            chief.premises(),
        )
    if unmarked is not None:
        return EvictionTime(
            "not-evicting",
            None,
            f"{held}, and {UNMARKED} marks the node NotReady, past its default time to (the "
            "node's cause); once it does, it taints the node as any failed node (rate-limited "
            "per zone, not while the zone is disrupted), and eviction follows the pod's "
            "tolerationSeconds",
            unmarked,
        )
    if off[0]:
        return EvictionTime(
            "untainted",
            None,
            f"{held}, and {UNMARKED} runs: by all signs it does not ({off[0]}), so nothing "
            "taints the node; once it runs, it taints the node as any failed node (rate-limited "
            "per zone, not while the zone is disrupted), and eviction follows the pod's "
            "tolerationSeconds",
            off[1],
        )
    untainted = zone.late.get(str(node["metadata"].get("name"))) if zone and node else None
    if untainted is not None and zone is not None and node is not None:
        since, due = untainted
        return EvictionTime(
            "untainted",
            None,
            f"{held}, {duration((now - since).total_seconds())} after it went not Ready: past "
            "the time the node lifecycle controller takes to taint its zone's not-Ready nodes "
            f"one at a time (by {format_time(due)} at the latest; zone {zone.zone}'s line says "
            f"at what rate), so {UNTAINTED} (the zone's line says what may be why), and "
            "nothing evicts the pod",
            [
                fact("Node", node, UNKNOWN_SINCE),
                *zone.changed_by,
                *(chief.premises() if chief else []),
            ],
        )
    if master_disruption:
        return EvictionTime(
            "paused",
            None,
            f"{held}: every zone is down, the controller is in master "
            f"disruption mode and taints no node: {PAUSED} every zone is down",
        )
    if zone and zone.eviction == "stopped":
        return EvictionTime(
            "paused",
            None,
            f"{held} and zone {zone.zone} is in "
            f"{zone.state}: tainting is stopped, so {PAUSED} the zone stays in {zone.state} "
            "(pods on nodes tainted before the brake are evicted by their tolerations)",
        )
    return EvictionTime(
        "pending-taint",
        None,
        f"{PENDING} (rate-limited per zone"
        + (", slowed in this disrupted zone" if zone and zone.eviction == "slowed" else "")
        + "); eviction follows its tolerationSeconds after that",
    )


def _hidden_spell(
    clock: evictionclock.Clock,
    earlier: Spell | None,
    tolerations: list[Obj],
    now: datetime,
    kept_since: datetime | None,
    pod_arrived: datetime | None,
    node: Obj | None,
    chief: Leader | None,
) -> tuple[float, datetime] | None:
    """A count from the unreachable taint that a not-ready spell before it, told only by an
    Event no longer kept, would have started instead: (the pod's not-ready tolerationSeconds,
    the moment before which such a spell began), or None when none can matter.

    `kept_since` (evictionclock.kept_since) is None when the kubelet's own word on the node's
    readiness is still kept (any spell since is shown, or ruled out by its NodeReady). The spell
    began before both the oldest Event kept and the unreachable taint, after the Node was
    created; its count began at the latest of its start, the pod's arrival and a new leader's
    start, and it matters only if a count begun then would not have run out by now."""
    spell = clock.spell
    if (
        kept_since is None
        or earlier is not None
        or spell is None
        or spell.taint.key != facts.TAINT_UNREACHABLE
        or not spell.timed
        or clock.by_arrival
        or clock.at is None
    ):
        return None
    untolerated, used = evictionclock.first_match(
        [TaintView(facts.TAINT_NOT_READY, "NoExecute")], tolerations
    )
    seconds = None if untolerated is not None else evictionclock.smallest(used)
    if seconds is None:  # evicted at once under it, or never counted: no spell kept the pod
        return None
    before = min(kept_since, spell.since)
    created = parse_time(((node or {}).get("metadata") or {}).get("creationTimestamp"))
    if created is None or created >= before:
        return None  # the node did not exist then
    starts = [before, *(t for t in (pod_arrived, chief.since if chief else None) if t)]
    if shifted(max(starts), seconds) <= now:
        return None  # a count begun then would have evicted it by now
    return seconds, before


def _start_words(clock: evictionclock.Clock, spells: list[Spell]) -> tuple[str, str]:
    """Where the count began, in words: (the moment, what shows it after the tolerationSeconds
    it adds to, or "")."""
    spell = clock.spell
    if clock.by_arrival:
        return (
            "the pod's arrival on the tainted node",
            "; PodScheduled, else creationTimestamp: the controller counts from when it first "
            "sees the pod there",
        )
    if spell is not None and spell.event is not None:
        return (
            f"about {format_time(spell.since)}",
            ": its kubelet reported NotReady then (its NodeNotReady event), so the node was "
            "tainted not-ready; that taint, replaced by unreachable when the kubelet went "
            "silent, started the count, and the controller keeps it",
        )
    if spell is not None and spells and spell != min(spells, key=lambda s: s.since):
        return (
            f"{spell.taint.key} timeAdded",
            ": the first taint it does not tolerate without a time limit",
        )
    return "taint timeAdded", ""


def _unknown_since(node: Obj | None) -> datetime | None:
    """When the node's Ready condition turned Unknown (its kubelet went silent)."""
    for cond in ((node or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready" and cond.get("status") == "Unknown":
            return parse_time(cond.get("lastTransitionTime"))
    return None


def _counted_again(
    clock: evictionclock.Clock,
    chief: Leader,
    node: Obj | None,
    extra: list[Premise],
    zone: ZoneFinding | None,
    master_disruption: bool,
) -> EvictionTime:
    """A count a new leader started again, at a moment the node does not show. `node` None: its
    taints' timeAdded is from before it took over (it has not put them back yet). Else it took
    over while the node was not ready and put the not-ready taint back, at a moment between its
    start and the swap for unreachable (`clock`: the count from its start)."""
    assert clock.at is not None and clock.start is not None
    premises = [*extra, chief.premise()]
    if master_disruption or (zone is not None and zone.eviction == "stopped"):
        return EvictionTime(
            "paused",
            None,
            f"{PAUSED} "
            + (
                "every zone is down"
                if master_disruption
                else f"zone {zone.zone} is in {zone.state}"  # type: ignore[union-attr]
            )
            + f": {chief.words()}, after this count began; a new leader takes the node's "
            "NoExecute taints off, and puts them back only once tainting resumes",
            [*premises, *(zone.claims[0].because if zone is not None and zone.claims else [])],
        )
    again = (
        "a new leader takes the node's NoExecute taints off and puts them back (rate-limited per "
        "zone, with a new timeAdded), and the taint-eviction controller counts again from then"
    )
    spell = clock.spell
    if node is None or spell is None or spell.event is None or spell.until is None:
        return EvictionTime(
            "unknown",
            None,
            f"{UNKNOWN}: {chief.words()}, after this count began "
            f"({format_time(clock.start)}); {again}",
            premises,
        )
    premises += [*_spell_premises(clock), fact("Node", node, UNKNOWN_SINCE)]
    latest = shifted(clock.at, (spell.until - clock.start).total_seconds())
    return EvictionTime(
        "unknown",
        None,
        f"{UNKNOWN}: {chief.words()} while the node was not ready (its kubelet's NodeNotReady "
        f"event); {again}, here the not-ready taint, replaced by unreachable when the node went "
        f"Unknown at {format_time(spell.until)}: evicted between about "
        f"{format_time(clock.at)} and {format_time(latest)}",
        premises,
    )


def _spell_premises(clock: evictionclock.Clock) -> list[Premise]:
    event = clock.spell.event if clock.spell is not None else None
    if event is None:
        return []
    path = next(
        p for p in ("lastTimestamp", "eventTime", "series.lastObservedTime") if read(event, p)
    )
    return [fact("Event", event, path), fact("Event", event, "reason")]


def _rewritten(
    written: tuple[int, datetime | None], start: datetime, pod: Obj, extra: list[Premise]
) -> EvictionTime:
    """A pod whose spec was written after the controller set its eviction: the time it set came
    from the tolerations it had then, which the pod no longer shows."""
    generation, when = written
    at = (
        f"at {format_time(when)} (managedFields), after the controller began counting for it "
        f"({format_time(start)})"
        if when is not None
        else "at a time the pod does not show (no managedFields)"
    )
    return EvictionTime(
        "unknown",
        None,
        f"{UNKNOWN}: its spec was written {at} (generation {generation}); if that changed its "
        "tolerations, the controller kept the time it set from the earlier ones, which the pod "
        "no longer shows",
        [
            *extra,
            fact("Pod", pod, "metadata.generation"),
            fact("Pod", pod, "metadata.managedFields"),
        ],
    )
