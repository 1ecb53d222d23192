"""The taint-eviction controller's clock (analysis/evictionclock.py), path by path; the real
control plane proves the same paths in tests/e2e/test_eviction_clock.py, and the fixture it
recorded is diagnosed here as it was there."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_nodefail.analysis import evictionclock as clock
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.findings import TaintView
from kubectl_nodefail.render import render
from kubectl_nodefail.snapshot.model import format_time, parse_time
from tests.oracles import invariants, premises
from tests.unit.conftest import load

Obj = dict[str, Any]
UN, NR, EXTRA = "node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready", "example.com/x"
T0 = datetime(2026, 12, 6, 3, 0, tzinfo=timezone.utc)


def _tol(key: str, seconds: int | None = None) -> Obj:
    t: Obj = {"key": key, "operator": "Exists", "effect": "NoExecute"}
    if seconds is not None:
        t["tolerationSeconds"] = seconds
    return t


def _spell(key: str, since: int, until: int | None = None) -> clock.Spell:
    end = T0 + timedelta(seconds=until) if until is not None else None
    return clock.Spell(TaintView(key, "NoExecute"), T0 + timedelta(seconds=since), end)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_the_first_matching_toleration_is_the_one_read() -> None:
    # a first without limit wins over a later 20 s; the other way round, 20 s
    forever_first = [_tol(UN), _tol(UN, 20)]
    assert clock.run([_spell(UN, 0)], forever_first, None).outcome == "never"
    limited_first = [_tol(UN, 20), _tol(UN)]
    assert clock.run([_spell(UN, 0)], limited_first, None).at == at(20)
    # a blanket toleration before the key's own
    assert clock.run([_spell(UN, 0)], [{"operator": "Exists"}, _tol(UN, 5)], None).outcome == (
        "never"
    )


def test_a_swapped_taint_keeps_the_count_the_first_one_started() -> None:
    swap = [_spell(NR, 0, 30), _spell(UN, 30)]
    assert clock.run(swap, [_tol(UN, 60), _tol(NR, 60)], None).at == at(60)
    # different seconds per key: the one read when the count began
    assert clock.run(swap, [_tol(UN, 300), _tol(NR, 60)], None).at == at(60)
    # not-ready tolerated without limit: nothing set then; the unreachable taint starts it
    assert clock.run(swap, [_tol(UN, 50), _tol(NR)], None).at == at(80)
    # not-ready not tolerated: evicted when it came
    immediate = clock.run(swap, [_tol(UN, 50)], None)
    assert (immediate.outcome, immediate.at) == ("immediate", at(0))


def test_a_taint_added_later_does_not_move_the_eviction() -> None:
    later = [_spell(UN, 0), _spell(EXTRA, 40)]
    assert clock.run(later, [_tol(UN, 60), _tol(EXTRA, 1)], None).at == at(60)
    assert clock.run(later, [_tol(UN, 60), _tol(EXTRA, 600)], None).at == at(60)
    # ... unless the pod does not tolerate it
    assert clock.run(later, [_tol(UN, 60)], None).at == at(40)
    # a first taint tolerated forever sets nothing: the later one starts the count
    assert clock.run(later, [_tol(UN), _tol(EXTRA, 10)], None).at == at(50)


def test_every_noexecute_taint_gone_cancels_the_count() -> None:
    gap = [_spell(UN, 0, 10), _spell(EXTRA, 20)]
    assert clock.run(gap, [_tol(UN, 60), _tol(EXTRA, 60)], None).at == at(80)


def test_a_pod_arriving_later_counts_from_its_arrival() -> None:
    found = clock.run([_spell(UN, 0)], [_tol(UN, 30)], at(100))
    assert (found.at, found.by_arrival) == (at(130), True)
    # arriving after a spell ended: that spell is not met
    assert clock.run([_spell(NR, 0, 10), _spell(UN, 10)], [_tol(UN, 30)], at(100)).at == at(130)


@settings(max_examples=200, deadline=None)
@given(
    first=st.integers(0, 3600),
    later=st.lists(st.tuples(st.integers(1, 86400), st.integers(0, 86400)), max_size=4),
)
def test_no_tolerated_taint_added_later_moves_a_set_eviction(
    first: int, later: list[tuple[int, int]]
) -> None:
    """Property: once set, the time stands whatever tolerated taints come after (each tolerated
    with any seconds), as processPodOnNode keeps a scheduled eviction."""
    tolerations = [_tol(UN, first)]
    spells = [_spell(UN, 0)]
    for i, (after, seconds) in enumerate(later):
        key = f"example.com/t{i}"
        tolerations.append(_tol(key, seconds))
        spells.append(_spell(key, after))
    assert clock.run(spells, tolerations, None).at == at(first)


def _event(reason: str, seconds: int, component: str = "kubelet") -> Obj:
    return {
        "metadata": {"name": f"e-{reason}-{seconds}", "namespace": "default"},
        "reason": reason,
        "involvedObject": {"kind": "Node", "name": "n"},
        "source": {"component": component},
        "lastTimestamp": format_time(at(seconds)),
    }


def test_the_not_ready_spell_is_read_from_the_kubelets_event_only() -> None:
    spells = [_spell(UN, 30)]
    found = clock.earlier_not_ready(spells, "Unknown", [_event("NodeNotReady", 0)])
    assert found is not None and (found.since, found.until) == (at(0), at(30))
    # the controller's own NodeNotReady (written as it marks the node Unknown) is not a spell
    controller = _event("NodeNotReady", 0, "node-controller")
    assert clock.earlier_not_ready(spells, "Unknown", [controller]) is None
    # events.k8s.io's reportingComponent says the same as source.component
    reported = {**_event("NodeNotReady", 0, ""), "reportingComponent": "kubelet"}
    assert clock.earlier_not_ready(spells, "Unknown", [reported]) is not None
    # the kubelet said Ready since: that NotReady was another outage's
    ready_since = [_event("NodeNotReady", 0), _event("NodeReady", 10)]
    assert clock.earlier_not_ready(spells, "Unknown", ready_since) is None
    # within the controller's look of the taint: the same moment, not a spell before it
    assert clock.earlier_not_ready(spells, "Unknown", [_event("NodeNotReady", 28)]) is None
    # still Ready=False (the not-ready taint is on the node, read from there), or no event
    assert clock.earlier_not_ready([_spell(NR, 0)], "False", [_event("NodeNotReady", 0)]) is None
    assert clock.earlier_not_ready(spells, "Unknown", []) is None


def _pod(generation: int | None, *writes: tuple[str, int, str]) -> Obj:
    meta: Obj = {"name": "p"}
    if generation is not None:
        meta["generation"] = generation
    meta["managedFields"] = [
        {"manager": m, "operation": "Update", "time": format_time(at(t)), "subresource": sub}
        for m, t, sub in writes
    ]
    return {"metadata": meta}


def test_a_spec_written_later_is_told_by_generation_and_managed_fields() -> None:
    assert clock.spec_written(_pod(1, ("kubectl", 0, ""))) is None
    assert clock.spec_written(_pod(None, ("kubectl", 0, ""))) is None  # before 1.33
    # the status subresource's writes are not the spec's
    written = clock.spec_written(_pod(2, ("kubectl", 0, ""), ("kubelet", 90, "status")))
    assert written == (2, at(0))
    assert clock.spec_written(_pod(3, ("a", 0, ""), ("kubectl-patch", 70, ""))) == (3, at(70))
    assert clock.spec_written({"metadata": {"generation": 2}}) == (2, None)


# --- the recording of tests/e2e/test_eviction_clock.py -----------------------------------------


def _rows() -> dict[str, Any]:
    snap = load("eviction-clock")
    report = diagnose(snap, snap.captured_at)
    return {p.name: p for p in report.pods if p.namespace == "scenario-clock"}


def test_the_recorded_swap_is_told_from_the_kubelets_event() -> None:
    snap = load("eviction-clock")
    events = [
        e
        for e in snap.events_about("Node", "", "flaky-k1")
        if e.get("reason") == "NodeNotReady"
        and (e.get("source") or {}).get("component") == "kubelet"
    ]
    said = parse_time(events[-1]["lastTimestamp"])
    assert said is not None
    rows = _rows()
    assert rows["swap"].eviction_at == said + timedelta(seconds=60)
    assert "NodeNotReady event" in rows["swap"].timeline
    assert rows["added-taint"].eviction_at == said + timedelta(seconds=60)
    assert "never evicted" in rows["first-forever"].timeline
    for name in ("patched-longer", "patched-shorter"):
        assert rows[name].eviction_at is None
        assert "eviction time not known" in rows[name].timeline
        assert rows[name].action.code != "wait"


def test_a_node_notready_before_it_went_silent_is_down_since_the_kubelets_word() -> None:
    """The Ready condition keeps only its last change (False to Unknown); the node has been
    not Ready since the kubelet's NodeNotReady, and FOR says so."""
    snap = load("eviction-clock")
    report = diagnose(snap, snap.captured_at)
    node = next(n for n in report.nodes if n.name == "flaky-k1")
    found = clock.kubelet_not_ready(snap.events_about("Node", "", "flaky-k1"), at(10**9))
    assert found is not None and node.ready is not None
    assert node.not_ready_seconds == (snap.captured_at - found[0]).total_seconds()
    assert node.ready.last_transition is not None and found[0] < node.ready.last_transition


def test_a_count_started_by_a_taint_without_time_added_is_not_given_a_time() -> None:
    """A NoExecute taint added by hand carries no timeAdded: a pod whose count it starts (it
    tolerates the node lifecycle controller's taints without limit, this one with 600 s) has no
    known eviction time; "due in 600 s" at every run would be a moving target."""
    snap = copy.deepcopy(load("eviction-clock"))
    pod = snap.pod("scenario-clock", "not-ready-forever")
    assert pod is not None
    pod["spec"]["tolerations"] = [_tol(UN), _tol(NR), _tol(EXTRA, 600)]
    row = next(p for p in diagnose(snap, snap.captured_at).pods if p.name == "not-ready-forever")
    assert row.eviction_at is None
    assert "eviction time not known" in row.timeline and "no timeAdded" in row.timeline
    assert row.action.code != "wait"


def _long_toleration_rows(
    not_ready: int | None,
    unreachable: int,
    later: timedelta,
    keep_event: bool = False,
    oldest: datetime | None = None,
    node_age: timedelta = timedelta(days=10),
    pod_age: timedelta = timedelta(days=5),
    leader_since: datetime | None = None,
) -> Any:
    """The recorded swap node (eviction-clock), its kubelet's NodeNotReady event gone (past
    the Events' TTL) unless `keep_event`, the Node and the pod `swap` made `node_age` and
    `pod_age` before the recording, the pod tolerating not-ready and unreachable for the given
    seconds, diagnosed `later` after the recording; `oldest`: an Event of that time kept;
    `leader_since`: kube-controller-manager's leader took over then."""
    snap = copy.deepcopy(load("eviction-clock"))
    if not keep_event:
        snap.events = [
            e
            for e in snap.events
            if not (e.get("reason") == "NodeNotReady" and "kubelet" in str(e.get("source")))
        ]
    if oldest is not None:
        old = copy.deepcopy(snap.events[0])
        old["lastTimestamp"] = format_time(oldest)
        old["reason"] = "RegisteredNode"
        old["metadata"]["name"] = "flaky-k1.registered"
        snap.events.append(old)
    node = snap.node("flaky-k1")
    pod = snap.pod("scenario-clock", "swap")
    assert node is not None and pod is not None
    node["metadata"]["creationTimestamp"] = format_time(snap.captured_at - node_age)
    born = format_time(snap.captured_at - pod_age)
    pod["metadata"]["creationTimestamp"] = born
    for cond in pod["status"]["conditions"]:
        if cond["type"] == "PodScheduled":
            cond["lastTransitionTime"] = born
    pod["spec"]["tolerations"] = [_tol(UN, unreachable), _tol(NR, not_ready), _tol(EXTRA)]
    if leader_since is not None:
        lease = {
            "kind": "Lease",
            "metadata": {"name": "kube-controller-manager", "namespace": "kube-system"},
            "spec": {
                "acquireTime": format_time(leader_since),
                "renewTime": format_time(snap.captured_at + later),
                "leaseDurationSeconds": 15,
            },
        }
        snap.leases = [*snap.leases, lease]
    report = diagnose(snap, snap.captured_at + later, timelines=True)
    assert premises.check(snap.to_dump(), render.report_data(report)) == []
    assert invariants.check(report) == []
    return snap, next(p for p in report.pods if p.name == "swap")


CAVEAT = "unless its kubelet reported NotReady before it went silent, from before"


def test_a_not_ready_spell_whose_event_is_gone_is_named_where_it_could_still_matter() -> None:
    """A kubelet that reported NotReady before it went silent, from before the oldest Event
    kept, left no word of the spell, and its count (the not-ready tolerationSeconds from then)
    is the one the controller keeps. The time from the unreachable taint stands, with that said,
    only where such a spell could still leave the pod here: the Node existed before, and a count
    begun then would not have run out."""
    day, hour = 86400, 3600
    snap, row = _long_toleration_rows(day, day, timedelta(minutes=5))
    node = snap.node("flaky-k1")
    assert node is not None
    swapped = parse_time(next(t for t in node["spec"]["taints"] if t["key"] == UN)["timeAdded"])
    assert swapped is not None and row.eviction_at == swapped + timedelta(days=1)
    # the oldest Event kept is the node's registration, a second before the kubelet's NotReady
    assert f"{CAVEAT} 2026-12-06T11:36:20Z, whose Events are no longer kept" in row.timeline
    assert "runs its not-ready tolerationSeconds (1d)" in row.timeline
    # a count begun before the oldest Event would have run out by now
    _, short = _long_toleration_rows(hour, day, timedelta(hours=2))
    assert CAVEAT not in short.timeline and short.eviction_at is not None
    # not-ready tolerated without limit: such a spell started no count
    _, forever = _long_toleration_rows(None, day, timedelta(minutes=5))
    assert CAVEAT not in forever.timeline
    # a Node made after the oldest Event kept had no spell before it
    _, young = _long_toleration_rows(day, day, timedelta(minutes=5), node_age=timedelta(0))
    assert CAVEAT not in young.timeline


def test_the_pods_arrival_or_a_new_leader_keeps_a_hidden_count_alive() -> None:
    """The count began at the latest of the spell's start, the pod's arrival and a new
    leader's start: read when an hour's count from before the oldest Event kept (11:36:20) has
    run out, a pod that arrived at 11:36:40, or a leader that took over then, still has one."""
    hour, day = 3600, 86400
    later = timedelta(minutes=59, seconds=41)  # 12:36:30: the spell's hour has run out
    snap = load("eviction-clock")
    _, old = _long_toleration_rows(hour, day, later, pod_age=timedelta(days=5))
    assert CAVEAT not in old.timeline and old.eviction_at is not None
    _, came = _long_toleration_rows(hour, day, later, pod_age=timedelta(seconds=8))
    assert CAVEAT in came.timeline
    led = snap.captured_at - timedelta(seconds=8)
    _, again = _long_toleration_rows(hour, day, later, leader_since=led)
    assert CAVEAT in again.timeline


def test_the_kubelets_word_kept_leaves_no_caveat() -> None:
    """The kubelet's NodeNotReady still kept (the recording): the count is read from it; an
    Event older than the node shows nothing hidden either."""
    _, row = _long_toleration_rows(86400, 86400, timedelta(minutes=5), keep_event=True)
    assert "NodeNotReady event" in row.timeline and CAVEAT not in row.timeline
    snap = load("eviction-clock")
    _, kept = _long_toleration_rows(
        7200, 7200, timedelta(minutes=5), oldest=snap.captured_at - timedelta(days=20)
    )
    assert CAVEAT not in kept.timeline and kept.eviction_at is not None
