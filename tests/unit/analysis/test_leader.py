"""kube-controller-manager's leader (analysis/leader.py) and the clocks that live in its memory.

A new leader takes every failed node's NoExecute taints off and puts them back (a new
timeAdded), counts each pod's tolerations again from then, starts the force-detach wait and the
node grace again: the sentences that time those say so, and rest on the leader's Lease. The
snapshots are the recordings of tests/e2e (eviction-clock, force-detach-timer-running,
node-down-recovered) with the Lease a restart leaves; tests/e2e/test_eviction_clock.py proves the
restart itself on the control plane."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta
from typing import Any

from kubectl_nodefail.analysis import eviction, evictionclock, summary
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.findings import Report
from kubectl_nodefail.analysis.leader import leader
from kubectl_nodefail.render import render
from kubectl_nodefail.snapshot.model import Snapshot, format_time, parse_time
from tests.oracles import invariants, premises
from tests.unit.conftest import load, stale_ready_node, with_leader

Obj = dict[str, Any]
UN, NR = "node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready"
NODE = "flaky-k1"


def _micro(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _report(snap: Snapshot, now: datetime | None = None) -> Report:
    report = diagnose(snap, now or snap.captured_at, timelines=True)
    false = premises.check(snap.to_dump(), render.report_data(report))
    assert false == [], false
    assert invariants.check(report) == []
    return report


def _row(report: Report, name: str) -> Any:
    return next(p for p in report.pods if p.namespace == "scenario-clock" and p.name == name)


def _ready(snap: Snapshot) -> Obj:
    node = snap.node(NODE)
    assert node is not None
    return next(c for c in node["status"]["conditions"] if c["type"] == "Ready")


def _unreachable(snap: Snapshot) -> Obj:
    node = snap.node(NODE)
    assert node is not None
    return next(t for t in node["spec"]["taints"] if (t["key"], t["effect"]) == (UN, "NoExecute"))


def _event_time(snap: Snapshot) -> datetime:
    found = evictionclock.kubelet_not_ready(
        snap.events_about("Node", "", NODE), snap.captured_at + timedelta(days=1)
    )
    assert found is not None
    return found[0]


def test_the_lease_is_read_as_the_leader_and_its_expiry() -> None:
    snap = load("eviction-clock")
    assert leader(snap) is None  # not read: nothing is said of it
    at = snap.captured_at - timedelta(minutes=30)
    chief = leader(with_leader(snap, at))
    assert chief is not None and chief.since.replace(microsecond=0) == at.replace(microsecond=0)
    assert chief.alive() and not chief.expired()
    # expired past its duration and a slack for the clocks' difference, judged when read
    late = leader(with_leader(snap, at, renewed=snap.captured_at - timedelta(seconds=20)))
    assert late is not None and late.alive()
    gone = leader(with_leader(snap, at, renewed=snap.captured_at - timedelta(seconds=30)))
    assert gone is not None and gone.expired()
    moved = with_leader(snap, at)
    moved.read_at = moved.captured_at  # `diagnose --watch` shows it again a minute later
    moved.captured_at += timedelta(minutes=1)
    still = leader(moved)
    assert still is not None and still.alive()


def test_a_leader_older_than_the_failure_changes_no_time() -> None:
    snap = load("eviction-clock")
    before = {p.name: p.eviction_at for p in _report(snap).pods}
    old = with_leader(snap, _event_time(snap) - timedelta(hours=2))
    after = {p.name: p.eviction_at for p in _report(old).pods}
    assert before == after and any(before.values())


def test_a_new_leader_after_the_swap_counts_from_the_taint_it_put_back() -> None:
    """The kubelet's NodeNotReady tells of a not-ready spell, but a leader that took over
    after the node went Unknown took the taints off and put unreachable back: the count is
    from that timeAdded, not from the event (without the Lease, the event would be read)."""
    snap = copy.deepcopy(load("eviction-clock"))
    unknown_since = parse_time(_ready(snap)["lastTransitionTime"])
    assert unknown_since is not None
    acquired = unknown_since + timedelta(seconds=20)
    back = acquired.replace(microsecond=0) + timedelta(seconds=2)
    _unreachable(snap)["timeAdded"] = format_time(back)
    without = _row(_report(snap), "swap")
    assert without.eviction_at == _event_time(snap) + timedelta(seconds=60)  # the event's count
    row = _row(_report(with_leader(snap, acquired)), "swap")
    assert row.eviction_at == back + timedelta(seconds=60)
    assert "NodeNotReady" not in row.timeline
    claim = next(c for c in row.claims if c.kind == "eviction")  # the event set aside, and why
    assert any(p.object.startswith("Lease/kube-system/") for p in claim.because)


def test_a_new_leader_while_the_node_was_not_ready_gives_a_window() -> None:
    """Took over between the kubelet's NodeNotReady and the node going Unknown: it put the
    not-ready taint back at a moment the node no longer shows (the swap replaced it)."""
    snap = load("eviction-clock")
    said = _event_time(snap)
    unknown_since = parse_time(_ready(snap)["lastTransitionTime"])
    assert unknown_since is not None and said < unknown_since
    acquired = said + (unknown_since - said) / 2
    report = _report(with_leader(snap, acquired))
    row = _row(report, "swap")
    assert row.eviction_at is None
    assert "eviction time not known" in row.timeline and "took over at" in row.timeline
    earliest = format_time(acquired + timedelta(seconds=60))
    latest = format_time(parse_time(_unreachable(snap)["timeAdded"]) + timedelta(seconds=60))
    assert f"evicted between about {earliest} and {latest}" in row.timeline
    claim = next(c for c in row.claims if c.kind == "eviction")
    assert any(p.object.startswith("Lease/kube-system/") for p in claim.because)


def test_a_taint_older_than_the_leader_is_not_counted_from() -> None:
    """The new leader has not put the taint back yet: the count it starts then is to come."""
    snap = load("eviction-clock")
    acquired = snap.captured_at - timedelta(seconds=1)
    assert acquired > parse_time(_unreachable(snap)["timeAdded"]) + timedelta(seconds=1)
    row = _row(_report(with_leader(snap, acquired)), "not-ready-forever")
    assert row.eviction_at is None
    assert "eviction time not known" in row.timeline and "puts them back" in row.timeline


def test_an_overdue_eviction_names_only_what_the_lease_leaves() -> None:
    snap = load("eviction-clock")
    late = snap.captured_at + timedelta(hours=1)
    old = snap.captured_at - timedelta(hours=2)
    alive = _row(_report(with_leader(snap, old, renewed=late), late), "not-ready-forever")
    assert "taint-eviction controller is not evicting" in alive.timeline
    assert "restarted since" not in alive.timeline
    unsaid = _row(_report(snap, late), "not-ready-forever")
    assert "restarted since" in unsaid.timeline  # without the Lease, still a possibility
    dead = _report(with_leader(snap, old, renewed=snap.captured_at - timedelta(minutes=5)), late)
    assert "kube-controller-manager has no leader" in _row(dead, "not-ready-forever").timeline


def test_the_force_detach_wait_starts_again_with_a_new_leader() -> None:
    snap = load("force-detach-timer-running")
    acquired = snap.captured_at - timedelta(seconds=30)
    report = _report(with_leader(snap, acquired))
    node = next(n for n in report.nodes if n.name == "flaky-fd")
    timer = next(v for v in node.volumes_attached if v.startswith("pv-fd-timer"))
    assert f"not before about {format_time(acquired + timedelta(minutes=6))}" in timer
    held = next(v for v in node.volumes_attached if v.startswith("pv-fd-held"))
    assert "not before" not in held  # its pod object is still there: the wait has not begun
    old = _report(with_leader(snap, snap.captured_at - timedelta(hours=1)))
    assert all("not before" not in v for n in old.nodes for v in n.volumes_attached)


def test_the_node_grace_starts_again_with_a_new_leader() -> None:
    snap, name = stale_ready_node("node-down-recovered", 25)
    renewed = snap.captured_at - timedelta(seconds=25)
    acquired = snap.captured_at - timedelta(seconds=10)
    report = _report(with_leader(snap, acquired))
    found = next(n for n in report.nodes if n.name == name)
    grace = 50 if (snap.server_minor or 36) >= 32 else 40
    assert found.cause.code == "lease-not-renewed"
    assert f"at about {format_time(acquired + timedelta(seconds=grace))}" in found.cause.summary
    assert format_time(renewed + timedelta(seconds=grace)) not in found.cause.summary


def test_without_a_leader_nothing_is_said_to_come_that_only_a_leader_does() -> None:
    """The leader's Lease expired: kube-controller-manager is down, and none of its
    controllers runs. A NotReady node not tainted yet stays so; a Ready node whose kubelet
    stopped is never marked NotReady; the advice is to bring the manager back."""

    snap = load("eviction-rate-limited")
    renewed = snap.captured_at - timedelta(minutes=3)
    gone = with_leader(snap, renewed - timedelta(hours=1), renewed=renewed)
    leaderless = _report(gone)
    row = next(p for p in leaderless.pods if (p.namespace, p.name) == ("scenario-rules", "q-1"))
    assert "no NoExecute taint on its node, and the taint-eviction controller is not" in (
        row.timeline
    )
    # every pod's explanation opens with it: its owner's controller, PodGC and the garbage
    # collector act only once a leader takes over
    assert leaderless.pods and all(
        p.explanation.startswith("kube-controller-manager has no leader")
        and p.claims[0].kind == "no-leader"
        and any(f.object.startswith("Lease/kube-system/") for f in p.claims[0].because)
        for p in leaderless.pods
    )
    assert "kube-controller-manager has no leader" in row.timeline
    assert "rate-limited" not in row.timeline
    alive = with_leader(snap, renewed - timedelta(hours=1))
    led = _report(alive)
    row = next(p for p in led.pods if (p.namespace, p.name) == ("scenario-rules", "q-1"))
    assert "rate-limited per zone" in row.timeline
    assert not any(c.kind == "no-leader" for p in led.pods for c in p.claims)

    down, name = stale_ready_node("node-down-recovered", 45)
    stale = down.captured_at - timedelta(seconds=45)
    report = _report(with_leader(down, stale - timedelta(hours=1), renewed=stale))
    found = next(n for n in report.nodes if n.name == name)
    assert found.cause.code == "no-controller-leader"
    assert "Ready Unknown" not in found.cause.summary and "has no leader" in found.cause.summary
    assert found.action is not None and "bring kube-controller-manager back" in found.action.summary
    headline = render.headline(report)
    assert "kube-controller-manager has no leader" in headline and "NotReady is coming" not in (
        headline
    )


def test_the_recorded_restart_counts_from_the_taints_put_back() -> None:
    """Recorded by tests/e2e/test_eviction_clock.py after a restart (the control plane evicted
    both pods within 3 s of the time said): on flaky-k3, whose kubelet reported NotReady before
    it went silent, the kubelet's event would tell of a count the new leader no longer keeps; it
    is set aside only because the Lease shows the leader took over after it."""
    snap = load("controller-restart")
    chief = leader(snap)
    assert chief is not None
    rows = {p.name: p for p in _report(snap).pods if p.namespace == "scenario-clock"}
    for name, node in (("restarted", "flaky-k2"), ("restarted-nr", "flaky-k3")):
        taint = next(
            t
            for t in (snap.node(node) or {})["spec"]["taints"]
            if (t["key"], t["effect"]) == (UN, "NoExecute")
        )
        put_back = parse_time(taint["timeAdded"])
        assert put_back is not None and put_back >= chief.since.replace(microsecond=0)
        assert rows[name].eviction_at == put_back + timedelta(seconds=40)
        assert "NodeNotReady" not in rows[name].timeline
    blind = copy.deepcopy(snap)
    blind.leases = [x for x in blind.leases if x["metadata"].get("namespace") != "kube-system"]
    unled = next(p for p in _report(blind).pods if p.name == "restarted-nr")
    assert unled.eviction_at is not None and unled.eviction_at < rows["restarted-nr"].eviction_at
    assert "NodeNotReady event" in unled.timeline  # what the Lease corrects


def _tol(key: str, seconds: int | None = None) -> Obj:
    out: Obj = {"key": key, "operator": "Exists", "effect": "NoExecute"}
    if seconds is not None:
        out["tolerationSeconds"] = seconds
    return out


def test_without_a_leader_a_count_not_due_yet_is_not_told_as_coming() -> None:
    snap = load("eviction-clock")
    stale = with_leader(
        snap, snap.captured_at - timedelta(hours=2), renewed=snap.captured_at - timedelta(minutes=2)
    )
    row = _row(_report(stale), "not-ready-forever")
    assert row.eviction_at is None
    assert row.timeline.startswith(
        "the taint-eviction controller is not evicting: kube-controller-manager has no leader"
    )


def test_a_pod_bound_after_the_swap_counts_from_its_arrival_not_a_window() -> None:
    """The leader took over while the node was not ready; this pod came after the node went
    Unknown: its count is from its arrival on the tainted node, nothing before concerns it."""
    snap = copy.deepcopy(load("eviction-clock"))
    said = _event_time(snap)
    unknown_since = parse_time(_ready(snap)["lastTransitionTime"])
    assert unknown_since is not None
    pod = snap.pod("scenario-clock", "swap")
    assert pod is not None
    came = unknown_since + timedelta(seconds=1)
    for cond in pod["status"]["conditions"]:
        if cond["type"] == "PodScheduled":
            cond["lastTransitionTime"] = format_time(came)
    row = _row(_report(with_leader(snap, said + (unknown_since - said) / 2)), "swap")
    assert row.eviction_at == came + timedelta(seconds=60)
    assert "not known" not in row.timeline and "arrival" in row.timeline


def test_under_the_zone_brake_a_new_leader_leaves_the_taints_off() -> None:
    """A new leader in a zone in PartialDisruption takes the taints off (markNodeAsReachable)
    and puts none back while the brake holds: no count runs."""
    snap = copy.deepcopy(load("zone-brake-per-node"))
    pod = snap.pod("scenario-zones", "zp-2")
    assert pod is not None
    del pod["metadata"]["deletionTimestamp"]
    pod["spec"]["tolerations"] = [_tol(UN, 300)]
    fresh = _report(with_leader(snap, snap.captured_at - timedelta(hours=1)))
    assert next(p for p in fresh.pods if p.name == "zp-2").eviction_at is not None
    report = _report(with_leader(snap, snap.captured_at - timedelta(seconds=5)))
    row = next(p for p in report.pods if p.name == "zp-2")
    assert row.eviction_at is None
    assert row.timeline.startswith("no eviction while zone e2e/zone-p is in PartialDisruption")
    assert "puts them back only once tainting resumes" in row.timeline


def test_a_taint_of_someone_elses_is_counted_from_the_new_leaders_start() -> None:
    """markNodeAsReachable takes off only the not-ready and unreachable taints: another
    NoExecute taint stays, and the new leader counts from its own start."""
    snap = copy.deepcopy(load("eviction-clock"))
    node = snap.node(NODE)
    assert node is not None
    extra = next(t for t in node["spec"]["taints"] if t["key"] == "example.com/x")
    extra["timeAdded"] = format_time(snap.captured_at - timedelta(seconds=40))
    pod = snap.pod("scenario-clock", "not-ready-forever")
    assert pod is not None
    pod["spec"]["tolerations"] = [_tol(UN), _tol(NR), _tol("example.com/x", 600)]
    acquired = snap.captured_at - timedelta(seconds=10)
    row = _row(_report(with_leader(snap, acquired)), "not-ready-forever")
    assert row.eviction_at == acquired + timedelta(seconds=600)
    assert "counted again from its start" in row.timeline


def test_an_overdue_force_detach_counts_from_a_later_leader() -> None:
    """The recorded StatefulSet replacement waiting for the dead node's volume, read an hour
    later: overdue under a leader there all along; under one that took over 400 s ago (past the
    six minutes, within their slack) its wait has not run out, and nothing is overdue."""
    snap = load("volume-held-by-dead-node")
    later = snap.captured_at + timedelta(hours=1)

    def line(acquired: datetime) -> str:
        read = with_leader(snap, acquired, renewed=later)
        read.read_at = later  # the Lease as read an hour later, renewed then
        report = _report(read, later)
        return next(v for n in report.nodes if n.name == "flaky-v2" for v in n.volumes_attached)

    assert "overdue: the last pod object using it on flaky-v2 was gone over 1h" in line(
        snap.captured_at - timedelta(hours=2)
    )
    assert "overdue" not in line(later - timedelta(seconds=400))
    assert "overdue: kube-controller-manager's current leader took over 7m" in line(
        later - timedelta(seconds=430)
    )


def test_without_a_leader_remediate_refuses_what_only_a_leader_would_carry_out() -> None:
    """The brake (analysis/brake.py) holds while kube-controller-manager has no leader: the
    taint and the Node's deletion act through its controllers, and a pod forced off is not
    replaced; diagnose's destructive suggestions say so first."""
    snap = load("eviction-rate-limited")
    assert _report(snap).brake is None
    renewed = snap.captured_at - timedelta(minutes=3)
    report = _report(with_leader(snap, renewed - timedelta(hours=1), renewed=renewed))
    assert report.brake is not None
    assert report.brake.text.startswith("kube-controller-manager has no leader")
    assert any(p.object.startswith("Lease/kube-system/") for p in report.brake.because)
    alive = _report(with_leader(snap, renewed - timedelta(hours=1)))
    assert alive.brake is None


def test_without_a_leader_the_zone_line_says_its_controller_does_not_run() -> None:
    snap = load("eviction-rate-limited")
    renewed = snap.captured_at - timedelta(minutes=3)
    report = _report(with_leader(snap, renewed - timedelta(hours=1), renewed=renewed))
    down = [z for z in report.zones if z.not_ready]
    assert down and all(z.explanation.endswith("until a leader takes over.") for z in down)
    # what it would do with a leader is not said as done (audit of a first-time trial:
    # "evictions stopped ... tainting runs at --node-eviction-rate ... none of this runs")
    assert not any("runs at" in z.explanation or "proceed" in z.explanation for z in down)
    assert all("has no leader" in c.text for z in down for c in z.claims)
    assert all(
        any(p.object.startswith("Lease/kube-system/") for p in c.because)
        for z in down
        for c in z.claims
    )


def test_the_recorded_missing_leader() -> None:
    """Recorded by tests/e2e/test_no_leader.py: kube-controller-manager stopped after lost-l1
    failed (tainted unreachable) and before lost-l2's kubelet stopped; the Lease past its
    duration, held-1's tolerationSeconds run out without an eviction. The control plane showed
    what the diagnosis says: lost-l2 Ready and untainted, no eviction, remediate refused."""
    snap = load("no-leader")
    chief = leader(snap)
    assert chief is not None and chief.expired()
    report = _report(snap)
    nodes = {n.name: n for n in report.nodes}
    assert nodes["lost-l2"].cause.code == "no-controller-leader"
    assert nodes["lost-l1"].failed and not nodes["lost-l2"].failed
    assert report.brake is not None and report.brake.text.startswith(
        "kube-controller-manager has no leader"
    )
    pods = {p.name: p for p in report.pods}
    assert pods["held-1"].eviction_at is None and "has no leader" in pods["held-1"].timeline
    assert all(p.claims[0].kind == "no-leader" for p in report.pods)
    # the pod on the node nothing marks is listed, told apart, and sent to the leader first
    assert pods["held-2"].category == "on-unmarked-node" and pods["held-2"].node_failed
    assert [c.kind for c in pods["held-2"].claims[:2]] == ["no-leader", "unmarked-node"]
    assert (
        not pods["held-2"].action.remediate and "lost-l2 NotReady" in pods["held-2"].action.summary
    )
    # the cure is known: the advice before any destructive step says it, not "rule out"
    assert all(
        a is not None and a.summary.startswith("first bring kube-controller-manager back")
        for a in [nodes["lost-l1"].action, *(p.action for p in report.pods)]
    )
    assert "kube-controller-manager has no leader" in render.headline(report)
    assert all(
        z.explanation.endswith("no node is tainted and no pod evicted until a leader takes over.")
        and "tainting runs at" not in z.explanation
        for z in report.zones
        if z.not_ready
    )


def test_a_deleted_nodes_pods_wait_for_a_leader_not_for_podgc_without_one() -> None:
    """PodGC runs in kube-controller-manager, its 40 s quarantine in the leader's memory: with
    no leader, a deleted Node's pods go 40-80 s after a leader takes over, not after the
    deletion, and waiting alone does nothing."""
    snap = load("no-leader")
    snap.nodes = [n for n in snap.nodes if n["metadata"]["name"] != "lost-l1"]
    report = diagnose(snap, snap.captured_at)
    orphans = [p for p in report.pods if p.node == "lost-l1"]
    assert orphans and all(p.category == "on-deleted-node" for p in orphans)
    for p in orphans:
        assert "after a leader takes over" in p.explanation and "node's deletion" not in (
            p.explanation
        ), p.explanation
        assert p.action.code == "investigate" and "bring kube-controller-manager back" in (
            p.action.summary
        )
        assert summary.next_step(p, report.captured_at) == "PodGC, once a leader"
        why = next(c for c in p.claims if c.kind == "released-by")
        assert any(b.object.startswith("Lease/kube-system/") for b in why.because)


def test_without_a_leader_no_run_or_replacement_is_timed_as_if_it_ran() -> None:
    """The CronJob and Job controllers run in kube-controller-manager's leader: without one,
    a CronJob's next run is due only if a leader runs by then, and a Job's next pod comes
    within its backoff of a leader taking over, never by a time of its own."""
    snap = load("job-three-evicted-at-once")
    renewed = snap.captured_at - timedelta(minutes=3)
    report = _report(with_leader(snap, renewed - timedelta(hours=1), renewed=renewed))
    cron = [p for p in report.pods if "next run" in p.explanation]
    assert cron, [p.explanation for p in report.pods]
    for p in cron:
        assert "with none by then, when one takes over" in p.explanation
    assert all(p.replacement.expected_by is None for p in report.pods)
    led = _report(with_leader(snap, renewed - timedelta(hours=1)))
    assert not any("leader by then" in p.explanation for p in led.pods)


def test_without_a_leader_a_jobs_next_pod_has_no_time_of_its_own() -> None:
    snap = load("job-three-evicted-at-once")
    evicted = next(p for p in snap.pods if p["metadata"]["name"].startswith("w-manual-"))
    evicted["metadata"]["deletionTimestamp"] = format_time(snap.captured_at - timedelta(seconds=5))
    evicted["metadata"]["deletionGracePeriodSeconds"] = 0
    name = evicted["metadata"]["name"]
    renewed = snap.captured_at - timedelta(minutes=3)
    led = diagnose(with_leader(snap, renewed - timedelta(hours=1)), snap.captured_at)
    row = next(p for p in led.pods if p.name == name)
    assert row.replacement.state == "not-yet" and row.replacement.expected_by is not None, (
        row.replacement
    )
    gone = diagnose(with_leader(snap, renewed - timedelta(hours=1), renewed), snap.captured_at)
    row = next(p for p in gone.pods if p.name == name)
    assert row.replacement.expected_by is None
    assert "of a leader taking over" in row.replacement.summary, row.replacement.summary


def _lease_of(snap: Snapshot, name: str) -> Obj:
    return next(x for x in snap.leases if x["metadata"]["name"] == name)


def test_a_node_is_unmarked_only_once_its_kubelets_lease_expired() -> None:
    """Renewed 6 s ago, the lease lasting 10 s: a kubelet that may yet renew, so its pod is not
    listed as stuck and its node not told "still Ready, but"; the cause says what happens if
    it does not renew."""
    snap = load("no-leader")
    _lease_of(snap, "lost-l2")["spec"]["renewTime"] = _micro(
        snap.captured_at - timedelta(seconds=6)
    )
    report = _report(snap)
    assert "held-2" not in {p.name for p in report.pods}
    node = next(n for n in report.nodes if n.name == "lost-l2")
    assert node.cause.summary.startswith(
        "the kubelet has not renewed its lease for 6s (the lease lasts 10s): if it does not renew"
    ), node.cause.summary
    assert "untainted" not in node.cause.summary


def test_a_replacement_on_an_unmarked_node_is_not_a_running_one() -> None:
    """held-1 evicted from the failed node, its ReplicaSet's other pod held-2 on the node
    nothing marks: held-2 is stuck too, so held-1 is not told replaced by a running pod."""
    snap = load("no-leader")
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web-abc", "namespace": "scenario-no-leader", "uid": "rs-uid"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}},
        "status": {"replicas": 1, "readyReplicas": 1},
    }
    snap.owners = [*snap.owners, rs]
    ref = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "web-abc",
        "uid": "rs-uid",
        "controller": True,
    }
    for pod in snap.pods:
        if pod["metadata"]["name"] in ("held-1", "held-2"):
            pod["metadata"]["ownerReferences"] = [ref]
            pod["metadata"]["labels"] = {**pod["metadata"].get("labels", {}), "app": "web"}
        if pod["metadata"]["name"] == "held-1":
            pod["metadata"]["deletionTimestamp"] = format_time(
                snap.captured_at - timedelta(seconds=29)
            )
            pod["metadata"]["deletionGracePeriodSeconds"] = 5
    report = diagnose(snap, snap.captured_at)
    old = next(p for p in report.pods if p.name == "held-1")
    assert old.replacement.state != "running", old.replacement
    assert "on failed node lost-l2" in old.replacement.summary, old.replacement.summary


def test_a_lease_lasting_2_to_the_62_seconds_never_expires_and_breaks_nothing() -> None:
    snap = load("no-leader")
    _lease_of(snap, "kube-controller-manager")["spec"]["leaseDurationSeconds"] = 2**62
    chief = leader(snap)
    assert chief is not None and chief.alive()
    assert diagnose(snap, snap.captured_at).pods  # no OverflowError


def test_without_a_leader_the_headline_does_not_say_podgc_removes_now() -> None:
    snap = load("no-leader")
    snap.nodes = [n for n in snap.nodes if n["metadata"]["name"] != "lost-l1"]
    said = render.headline(diagnose(snap, snap.captured_at))
    assert (
        "bound to a deleted node: PodGC removes them once kube-controller-manager has a leader"
        in said
    )


def test_a_node_long_past_its_default_grace_is_not_told_it_will_be_marked_then() -> None:
    """The leader renews, the kubelet stopped 10 minutes ago and the node is still Ready: the
    default grace ran out 9 minutes ago, so "it sets Ready Unknown at T" would tell a past
    moment as coming. The cause says the controller has not marked it, and why that may be."""
    down, name = stale_ready_node("node-down-recovered", 600)
    renewed = down.captured_at - timedelta(seconds=600)
    report = _report(with_leader(down, renewed - timedelta(hours=1)))
    found = next(n for n in report.nodes if n.name == name)
    assert found.cause.code == "lease-overdue", found.cause.summary
    assert "ago; it has not" in found.cause.summary
    assert "Unless the kubelet renews" not in found.cause.summary
    assert found.action is not None and found.action.code == "investigate"
    assert "not marked NotReady in time" in render.headline(report)
    assert "NotReady is coming" not in render.headline(report)
    # just past the default grace, within the controller's next look: said as past, not coming
    down, name = stale_ready_node("node-down-recovered", 55)
    renewed = down.captured_at - timedelta(seconds=55)
    found = next(
        n for n in _report(with_leader(down, renewed - timedelta(hours=1))).nodes if n.name == name
    )
    assert found.cause.code == "lease-not-renewed"
    assert found.cause.summary.endswith(
        "(past: due at its next look, every 5s, unless its grace is longer here or it does not run)"
    )


def test_overdue_follows_the_grace_not_the_leases_duration_nor_an_unread_leader() -> None:
    """The node lifecycle controller marks a node its grace after it last heard from the
    kubelet, whatever the lease's duration: an hour-long lease 50 minutes silent is overdue. A
    leader Lease that could not be read may hide a new leader's later first look: not overdue,
    and the past time says so. remediate NODE on an overdue node: refused, with why."""
    from kubectl_nodefail.remediate.plan import Options, make_plan

    down, name = stale_ready_node("node-down-recovered", 3000)
    lease = _lease_of(down, name)
    lease["spec"]["leaseDurationSeconds"] = 3600
    renewed = down.captured_at - timedelta(seconds=3000)
    report = _report(with_leader(down, renewed - timedelta(hours=1)))
    found = next(n for n in report.nodes if n.name == name)
    assert found.cause.code == "lease-overdue", found.cause.summary
    assert "so it has expired" not in found.cause.summary
    plan = make_plan(report, Options(only_nodes=[name]))
    assert plan.steps == [] and len(plan.refusals) == 1
    assert "find out first why the node lifecycle controller has not marked it" in plan.refusals[0]

    down, name = stale_ready_node("node-down-recovered", 600)
    down.gaps = ["kube-controller-manager's leader Lease: forbidden (get leases)"]
    found = next(n for n in diagnose(down, down.captured_at).nodes if n.name == name)
    assert found.cause.code == "lease-not-renewed", found.cause.summary
    assert found.cause.summary.endswith("or a new leader took over since: its Lease was not read)")


def test_pods_on_a_node_past_its_time_to_be_marked_are_listed_as_nothing_marks_them() -> None:
    """The recorded missing leader, with a leader renewing instead and lost-l2's kubelet silent
    for 10 minutes: the node lifecycle controller, due to mark lost-l2 9 minutes ago, has not
    (it does not run, or its grace is longer), so nothing taints it and held-2 is as stuck as a
    pod on a failed node: listed, its eviction not coming until the node is marked (not "the
    taint is not on the node yet (rate-limited per zone)"), sent to the controller, and no word
    of a missing leader. Every sentence passes the premise checker and the invariants."""
    snap = load("no-leader")
    snap.leases = [x for x in snap.leases if x["metadata"]["name"] != "kube-controller-manager"]
    renewed = snap.captured_at - timedelta(minutes=10)
    _lease_of(snap, "lost-l2")["spec"]["renewTime"] = _micro(renewed)
    node = next(n for n in snap.nodes if n["metadata"]["name"] == "lost-l2")
    for cond in node["status"]["conditions"]:
        if cond["type"] == "Ready":
            cond["lastHeartbeatTime"] = format_time(renewed)
    report = _report(with_leader(snap, renewed - timedelta(hours=1)))
    assert {n.name: n.cause.code for n in report.nodes}["lost-l2"] == "lease-overdue"
    held = next(p for p in report.pods if p.name == "held-2")
    assert held.category == "on-unmarked-node" and held.node_failed
    assert held.claims[0].kind == "unmarked-node"
    assert "has not marked it NotReady, past its default time to" in held.claims[0].text
    assert not any("no leader" in c.text for c in held.claims)
    assert eviction.UNMARKED in held.timeline and eviction.PENDING not in held.timeline
    assert summary.next_step(held, report.captured_at) == "not evicted (controller)"
    assert held.action.code == "investigate" and "--controllers" in held.action.summary
    assert held.action.kubectl == "kubectl -n kube-node-lease get lease lost-l2 -o yaml"
    assert "not marked NotReady in time" in render.headline(report)


def test_with_the_servers_version_unread_the_grace_says_both_defaults() -> None:
    """node-monitor-grace-period's default was 40 s before v1.32 and 50 s since: a server whose
    version was not read may mark the node 10 s before the moment said, and the cause says so."""
    down, name = stale_ready_node("node-down-recovered", 30)
    down.server_version = None
    found = next(n for n in diagnose(down, down.captured_at).nodes if n.name == name)
    assert found.cause.code == "lease-not-renewed", found.cause.summary
    assert "Ready Unknown 50s (40s before v1.32; this server's version was not read) after" in (
        found.cause.summary
    ), found.cause.summary
    known, name = stale_ready_node("node-down-recovered", 30)
    found = next(n for n in diagnose(known, known.captured_at).nodes if n.name == name)
    assert "before v1.32" not in found.cause.summary


def _overdue_snapshot(name: str, node_name: str) -> Snapshot:
    """The recording `name` with `node_name` Ready again, untainted, its kubelet silent for 10
    minutes, while a leader renews (taken over an hour before): overdue to be marked."""
    snap = load(name)
    renewed = snap.captured_at - timedelta(minutes=10)
    node = snap.node(node_name)
    assert node is not None
    for cond in node["status"]["conditions"]:
        if cond["type"] == "Ready":
            cond.update(
                status="True", reason="KubeletReady", lastHeartbeatTime=format_time(renewed)
            )
    node["spec"]["taints"] = [
        t for t in node["spec"].get("taints", []) if t["effect"] != "NoExecute"
    ]
    snap.leases = [
        x
        for x in snap.leases
        if x["metadata"]["name"] not in (node_name, "kube-controller-manager")
    ]
    snap.leases.append(
        {
            "kind": "Lease",
            "metadata": {"name": node_name, "namespace": "kube-node-lease"},
            "spec": {"renewTime": _micro(renewed), "leaseDurationSeconds": 40},
        }
    )
    snap.events = []
    return with_leader(snap, renewed - timedelta(hours=1))


def test_a_volume_on_a_node_past_its_time_to_be_marked_is_not_told_force_detached() -> None:
    """The attach-detach controller runs (a leader renews) and force-detaches only from a node
    that is not Ready; this one is Ready to it, whatever its kubelet: the pod's volume line says
    what the node's does (no force-detach), not "force-detached 6 minutes later"."""
    probe = load("force-detach-timer-running")
    holder = probe.volume_attachments[0]["spec"]["nodeName"]
    report = _report(_overdue_snapshot("force-detach-timer-running", holder))
    assert {n.name: n.cause.code for n in report.nodes}[holder] == "lease-overdue"
    held = [p for p in report.pods if p.node == holder]
    assert held and all(p.category == "on-unmarked-node" for p in held)
    detach = [c.text for p in held for c in p.claims if c.text.startswith("detach:")]
    assert detach and all(f"{holder} is Ready: no force-detach" in t for t in detach), detach
    assert not any("force-detached" in t for t in detach), detach


def test_a_taint_tolerated_without_limit_is_never_only_if_the_unreachable_one_is_too() -> None:
    """A pod tolerating a NoExecute taint of its own without a limit and the unreachable taint
    for 30 s is evicted once the node lifecycle controller taints the node: on a node it has not
    marked (overdue, or no leader) and on a failed node not tainted yet (rate-limited), that
    taint is still to come, so the pod is not "never evicted"."""
    dedicated = {"key": "dedicated", "value": "gpu", "effect": "NoExecute"}
    own = {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}
    snap = load("no-leader")
    snap.leases = [x for x in snap.leases if x["metadata"]["name"] != "kube-controller-manager"]
    renewed = snap.captured_at - timedelta(minutes=10)
    _lease_of(snap, "lost-l2")["spec"]["renewTime"] = _micro(renewed)
    node = snap.node("lost-l2")
    assert node is not None
    node.setdefault("spec", {}).setdefault("taints", []).append(
        {**dedicated, "timeAdded": format_time(snap.captured_at - timedelta(days=5))}
    )
    for cond in node["status"]["conditions"]:
        if cond["type"] == "Ready":
            cond["lastHeartbeatTime"] = format_time(renewed)
    held = next(p for p in snap.pods if p["metadata"]["name"] == "held-2")
    held["spec"]["tolerations"] = [own, *held["spec"]["tolerations"]]
    for chief in (
        with_leader(snap, renewed - timedelta(hours=1)),
        with_leader(snap, renewed - timedelta(hours=1), renewed),
    ):
        row = next(p for p in _report(chief).pods if p.name == "held-2")
        assert row.category == "on-unmarked-node"
        assert eviction.NEVER not in row.timeline, row.timeline
        assert row.timeline.startswith("its node's NoExecute taints tolerated without a time limit")
    # a failed node whose taint is still to come (rate-limited per zone)
    limited = load("eviction-rate-limited")
    flaky = limited.node("flaky-q1")
    assert flaky is not None
    flaky.setdefault("spec", {}).setdefault("taints", []).append(
        {**dedicated, "timeAdded": format_time(limited.captured_at - timedelta(days=5))}
    )
    pod = next(p for p in limited.pods if p["metadata"]["name"] == "q-1")
    pod["spec"]["tolerations"] = [own, *(pod["spec"].get("tolerations") or [])]
    row = next(p for p in _report(limited).pods if p.name == "q-1")
    assert eviction.NEVER not in row.timeline and eviction.PENDING in row.timeline, row.timeline


def test_the_recorded_node_the_node_lifecycle_controller_never_marked() -> None:
    """Recorded by tests/e2e/test_no_leader.py (kube-controller-manager with
    --controllers=*,-node-lifecycle-controller): the node's kubelet stopped, and past the
    default grace and the controller's next look the node was still Ready, with no NoExecute
    taint; the control plane evicted and replaced nothing for 15 s more. Its two pods are listed
    as on a node nothing marks, with the leader running; remediate refuses the node."""
    from kubectl_nodefail.remediate.plan import Options, make_plan

    snap = load("lifecycle-off")
    chief = leader(snap)
    assert chief is not None and chief.alive()
    report = _report(snap)
    [node] = report.nodes
    assert node.cause.code == "lease-overdue" and not node.failed
    assert sorted(p.category for p in report.pods) == ["on-unmarked-node"] * 2
    for row in report.pods:
        assert row.claims[0].kind == "unmarked-node" and row.eviction_at is None
        assert summary.next_step(row, report.captured_at) == "not evicted (controller)"
        assert not any("no leader" in c.text for c in row.claims)
    plan = make_plan(report, Options(only_nodes=[node.name]))
    assert plan.steps == [] and len(plan.refusals) == 1
    # without that controller every Ready node keeps the not-ready NoSchedule taint it
    # registered with (recorded): the cause says it does not run, not "or its grace is longer"
    assert "by all signs it does not run" in node.cause.summary, node.cause.summary
    assert node.cause.confidence == "high"
    fresh = load("lifecycle-off")
    for other in fresh.nodes:
        other["spec"]["taints"] = [
            t for t in other["spec"].get("taints") or [] if t["effect"] != "NoSchedule"
        ]
    hedged = next(n for n in diagnose(fresh, fresh.captured_at).nodes if n.name == node.name)
    assert "its grace period is longer or it does not run" in hedged.cause.summary
    # it never was NotReady: its Ready transition is its registration, not a return
    assert report.timelines is not None
    back = [e for e in report.timelines[node.name].entries if e.kind == "node-back"]
    assert back and all(e.summary.startswith("Ready became True") for e in back), back
