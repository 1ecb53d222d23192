"""The taint-eviction controller's clock for one pod, replayed from what the API still shows
(pkg/controller/tainteviction/taint_eviction.go processPodOnNode; the toleration matching of
k8s.io/component-helpers GetMatchingTolerations):

- for each NoExecute taint, the *first* toleration in the pod's list that tolerates it is the one
  used; a later one, shorter or without limit, is not read;
- the eviction is set once: at the first moment the pod is on the node under NoExecute taints it
  all tolerates with a smallest tolerationSeconds, for that moment plus those seconds. A taint
  added or swapped later (not-ready for unreachable) and tolerations patched later do not move
  it. Three things do: a taint the pod does not tolerate (evicted at once), its used tolerations
  all without limit (cancelled), no NoExecute taint left (cancelled).

The node shows only the taints it carries now. A kubelet that reported NotReady before it went
silent had the node tainted not-ready first; the swap to unreachable leaves on the node no trace of
it, only the kubelet's NodeNotReady event (`earlier_not_ready`). Proven on the real control plane:
tests/e2e/test_eviction_clock.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from kubectl_nodefail.analysis import facts
from kubectl_nodefail.analysis.findings import TaintView
from kubectl_nodefail.snapshot.model import Obj, parse_time, shifted

# The kubelet's own NodeNotReady event is written as it posts Ready=False; the controller taints
# the node at its next look, within --node-monitor-period (5 s by default). An event this much
# older than the unreachable taint tells of a NotReady spell before the silence.
SPELL_MARGIN_SECONDS = 3
KUBELET = "kubelet"


def tolerates(toleration: Obj, taint: TaintView) -> bool:
    """Toleration matching as in k8s.io/api core/v1 Toleration.ToleratesTaint."""
    if toleration.get("effect") and toleration["effect"] != taint.effect:
        return False
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if key and key != taint.key:
        return False
    if operator == "Exists":
        return True
    if not key:  # an empty key needs operator Exists
        return False
    return (toleration.get("value") or "") == taint.value


def first_match(
    taints: list[TaintView], tolerations: list[Obj]
) -> tuple[TaintView | None, list[Obj]]:
    """(the first taint no toleration tolerates, else None; the toleration the controller uses for
    each taint: the first in the pod's list that tolerates it)."""
    used = []
    for taint in taints:
        found = next((t for t in tolerations if tolerates(t, taint)), None)
        if found is None:
            return taint, []
        used.append(found)
    return None, used


def smallest(used: list[Obj]) -> float | None:
    """getMinTolerationTime: the smallest tolerationSeconds of the tolerations used (0 for any at
    or below 0); None when none of them has a limit."""
    seconds = [t["tolerationSeconds"] for t in used if t.get("tolerationSeconds") is not None]
    return float(max(min(seconds), 0)) if seconds else None


@dataclass(frozen=True)
class Spell:
    """A NoExecute taint on the node from `since` until `until` (None: there now). `event`: the
    kubelet's NodeNotReady event a spell no longer on the node is read from."""

    taint: TaintView
    since: datetime
    until: datetime | None = None
    event: Obj | None = None
    timed: bool = True  # False: a taint without timeAdded (added by hand): `since` is a guess


@dataclass(frozen=True)
class Clock:
    outcome: str  # scheduled | immediate | never | none (no NoExecute taint)
    start: datetime | None = None  # the moment the controller counted from (immediate: evicted)
    at: datetime | None = None  # scheduled: start + limit
    spell: Spell | None = None  # the spell whose moment started it
    by_arrival: bool = False  # the start is the pod's arrival, after the spell began


def run(spells: list[Spell], tolerations: list[Obj], arrived: datetime | None) -> Clock:
    """Replay the controller over the spells: at each moment a spell begins or ends (one before
    the pod arrived counts from its arrival), what it does with the pod's tolerations."""
    moments = sorted(
        {max(t, arrived) if arrived else t for s in spells for t in (s.since, s.until) if t}
    )
    start: tuple[datetime, Spell, bool] | None = None
    limit = 0.0
    for moment in moments:
        present = [s for s in spells if s.since <= moment and (s.until is None or moment < s.until)]
        if not present:
            start = None  # every NoExecute taint gone: cancelled
            continue
        untolerated, used = first_match([s.taint for s in present], tolerations)
        if untolerated is not None:
            spell = next(s for s in present if s.taint == untolerated)
            return Clock("immediate", moment, moment, spell, _after(spell, moment))
        seconds = smallest(used)
        if seconds is None:
            start = None  # tolerated without limit: cancelled (or never set)
        elif start is None:
            spell = next((s for s in present if s.since == moment), present[0])
            start, limit = (moment, spell, _after(spell, moment)), seconds
    if start is not None:
        moment, spell, by_arrival = start
        return Clock("scheduled", moment, shifted(moment, limit), spell, by_arrival)
    if any(s.until is None for s in spells):
        return Clock("never")
    return Clock("none")


def _after(spell: Spell, moment: datetime) -> bool:
    return moment > spell.since


def node_spells(taints: list[TaintView], now: datetime) -> list[Spell]:
    """The NoExecute taints on the node now. One without timeAdded (the node lifecycle
    controller sets it on its own taints; `kubectl taint` does not) is placed at `now`, and
    marked untimed: a count it starts has no known start."""
    return [
        Spell(t, t.time_added or now, timed=t.time_added is not None)
        for t in taints
        if t.effect == "NoExecute"
    ]


def kept_since(node_events: list[Obj], oldest: datetime | None, now: datetime) -> datetime | None:
    """The earliest moment whose Events the snapshot shows kept: `oldest` (oldest_update of
    every Event read; `now` if none), or None when the kubelet's own word on its node's
    readiness is among `node_events` (a NotReady spell since would show, and one before ended
    with it). The API server keeps an Event --event-ttl (an hour by default) after its last
    update; older ones are gone, and nothing here assumes the TTL."""
    kubelet = [ev for ev in node_events if _by_kubelet(ev)]
    if any(ev.get("reason") in ("NodeNotReady", "NodeReady") for ev in kubelet):
        return None
    return now if oldest is None else min(oldest, now)


def oldest_update(events: list[Obj]) -> datetime | None:
    """The oldest last update among `events`."""
    return min((t for ev in events for t in [_last_time(ev)] if t is not None), default=None)


def _last_time(ev: Obj) -> datetime | None:
    """An Event's last update (a series' last observation, else its last or first time)."""
    times = [
        parse_time(v)
        for v in (
            ev.get("lastTimestamp"),
            ev.get("eventTime"),
            (ev.get("series") or {}).get("lastObservedTime"),
        )
    ]
    return max((t for t in times if t is not None), default=None)


def _event_time(ev: Obj) -> datetime | None:
    for value in (
        ev.get("lastTimestamp"),
        ev.get("eventTime"),
        (ev.get("series") or {}).get("lastObservedTime"),
    ):
        when = parse_time(value)
        if when is not None:
            return when
    return None


def _by_kubelet(ev: Obj) -> bool:
    return KUBELET in ((ev.get("source") or {}).get("component"), ev.get("reportingComponent"))


def earlier_not_ready(spells: list[Spell], ready_status: str, events: list[Obj]) -> Spell | None:
    """The not-ready spell an unreachable node had before its kubelet went silent, read from the
    kubelet's last NodeNotReady event (none from it since: NodeReady), when that is older than the
    unreachable taint by more than the controller's look. None when the node shows no such spell:
    not Unknown, still tainted not-ready, or no such event (expired after an hour, unread)."""
    if ready_status != "Unknown" or any(s.taint.key == facts.TAINT_NOT_READY for s in spells):
        return None
    unreachable = [s for s in spells if s.taint.key == facts.TAINT_UNREACHABLE]
    if not unreachable:
        return None
    swapped = unreachable[0].since
    found = kubelet_not_ready(events, swapped)
    if found is None:
        return None
    return Spell(TaintView(facts.TAINT_NOT_READY, "NoExecute"), found[0], swapped, found[1])


def kubelet_not_ready(events: list[Obj], before: datetime) -> tuple[datetime, Obj] | None:
    """(when, the event) of the kubelet's last word on its node's readiness, if that was
    NodeNotReady more than the controller's look before `before` (a NotReady spell before the
    node went silent); None otherwise (no such event, or NodeReady since)."""
    said = [
        (when, ev)
        for ev in events
        if _by_kubelet(ev) and ev.get("reason") in ("NodeNotReady", "NodeReady")
        for when in [_event_time(ev)]
        if when is not None
    ]
    if not said:
        return None
    when, last = max(said, key=lambda pair: pair[0])
    if (
        last.get("reason") != "NodeNotReady"
        or (before - when).total_seconds() < SPELL_MARGIN_SECONDS
    ):
        return None
    return when, last


def spec_written(pod: Obj) -> tuple[int, datetime | None] | None:
    """(generation, when a manager last wrote the pod itself — not a subresource — per
    managedFields, None if not shown) for a pod whose spec changed after it was created
    (metadata.generation above 1); None for one whose spec never changed, or a server that does
    not count pod generations (before 1.33)."""
    meta = pod.get("metadata") or {}
    generation = meta.get("generation")
    if not isinstance(generation, int) or generation <= 1:
        return None
    times = [
        when
        for entry in meta.get("managedFields") or []
        if not entry.get("subresource")
        for when in [parse_time(entry.get("time"))]
        if when is not None
    ]
    return generation, max(times, default=None)
