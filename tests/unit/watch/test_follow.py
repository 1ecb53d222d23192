"""What `diagnose --watch` reads again for (watch/follow.py) and how its watches are read
(cluster/watchstream.py).

The relevance rules are replayed on watch streams recorded from the real control plane
(tests/fixtures/watch/node-down.jsonl: Nodes as Table rows, Pods as Table rows with metadata,
ReplicaSets as metadata, while a node's kubelet was killed, its pods evicted and replaced, and
the kubelet started again) against the dumps taken at the moments it names. What a real server
cannot be made to do on cue (a 410 mid-stream, a garbled line, a refused watch) is played by a
local fake server (tests/support/fakeapi.py)."""

from __future__ import annotations

import json
import queue
import threading
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubectl_nodefail.analysis.leader import CLOCK_SLACK_SECONDS, leader
from kubectl_nodefail.cluster.kube import Cluster
from kubectl_nodefail.cluster.pods_read import Found, Kept, deleting_of
from kubectl_nodefail.cluster.watchstream import Change, Resource, Row, Watcher, row_of
from kubectl_nodefail.snapshot.model import Snapshot, load_dump, parse_time
from kubectl_nodefail.watch import follow
from kubectl_nodefail.watch import interest as interest_module
from kubectl_nodefail.watch.changes import between
from kubectl_nodefail.watch.follow import Follower, resources
from kubectl_nodefail.watch.interest import DUE_SLACK, Interest
from kubectl_nodefail.watch.watch import fingerprint
from tests.support.fakeapi import json_answer, kubeconfig, serve
from tests.unit.conftest import FIXTURES

STREAMS = FIXTURES / "watch" / "node-down.jsonl"


def _dump(moment: str) -> Snapshot:
    return load_dump(str(FIXTURES / f"watch-node-down-{moment}.json"))


def _recorded() -> tuple[dict[str, float], list[tuple[float, Change]]]:
    """The recorded streams as the watchers would have put them on their queue, in time
    order (each stream parsed by a Watcher of its own, as in the watch)."""
    head, *rows = STREAMS.read_text().splitlines()
    times = json.loads(head)["times"]
    out: queue.Queue[Change] = queue.Queue()
    parsers: dict[str, Watcher] = {}
    changes = []
    for raw in rows:
        row = json.loads(raw)
        watcher = parsers.setdefault(
            row["resource"],
            Watcher(None, Resource(row["resource"], "/"), out),  # type: ignore[arg-type]
        )
        watcher._event(json.loads(row["line"]))
        while not out.empty():
            changes.append((row["at"], out.get()))
    return times, changes


def _between(start: float, end: float) -> list[Change]:
    _, changes = _recorded()
    return [c for at, c in changes if start <= at < end]


def test_the_recorded_streams_parse_into_rows_and_bookmarks_carry_none() -> None:
    _, changes = _recorded()
    kinds = {(c.resource, c.kind) for _, c in changes}
    assert ("nodes", "MODIFIED") in kinds and ("pods", "ADDED") in kinds
    assert ("pods", "DELETED") in kinds and ("replicasets", "MODIFIED") in kinds
    assert all(c.kind in ("ADDED", "MODIFIED", "DELETED") for _, c in changes)  # no BOOKMARK
    for _, change in changes:
        row = change.row
        assert row.name and row.version
        if change.resource == "pods":  # Table rows with metadata: the cells and the uid
            assert row.uid and row.owners and row.status
        if change.resource == "nodes":  # Table rows without objects: the cells only
            assert not row.uid and row.status in ("Ready", "NotReady")


def _heartbeats() -> list[Change]:
    """Healthy nodes' own status updates, as a Node watch carries them (recorded on the same
    cluster: tests/fixtures/watch/heartbeats.jsonl)."""
    _, *rows = (FIXTURES / "watch" / "heartbeats.jsonl").read_text().splitlines()
    out: queue.Queue[Change] = queue.Queue()
    watcher = Watcher(None, Resource("nodes", "/"), out)  # type: ignore[arg-type]
    for raw in rows:
        watcher._event(json.loads(json.loads(raw)["line"]))
    changes = [out.get() for _ in range(out.qsize())]
    return [c for c in changes if c.row.name.startswith("healthy")]


def _failing() -> set[str]:
    """The nodes not Ready in the dump taken while the node was down."""
    return Interest.of(_dump("during")).focus


def _names() -> set[str]:
    """What the recording's changes may rightly be about: the failing nodes and the pods of
    the dumps (evicted and replaced included)."""
    pods = {p["metadata"]["name"] for m in ("during", "evicted") for p in _dump(m).pods}
    return _failing() | pods


def test_a_node_going_not_ready_is_the_change_and_heartbeats_are_not() -> None:
    times, _ = _recorded()
    interest = Interest.of(_dump("before"))
    assert interest.focus == set() and _failing()
    seen = _between(0, times["during"])
    reasons = [r for r in map(interest.relevant, seen) if r]
    first = reasons[0].split() if reasons else []
    assert first[:1] == ["node"] and first[1] in _failing() and first[2:] == ["NotReady"]
    assert all(any(n in r for n in _names()) for r in reasons), reasons
    beats = _heartbeats()
    assert beats and {c.row.status for c in beats} == {"Ready"}
    for interest in (Interest.of(_dump(m)) for m in ("before", "during", "evicted")):
        assert [interest.relevant(c) for c in beats] == [None] * len(beats)


def test_once_the_node_is_examined_its_pods_replacements_and_return_are_changes() -> None:
    times, _ = _recorded()
    during = Interest.of(_dump("during"))
    assert during.focus == _failing()
    after = _between(times["during"], times["evicted"])
    said = [r for r in map(during.relevant, after) if r]
    assert any(r.endswith("of an owner read") for r in said), said  # the replacements
    assert any(r.startswith("pod ") and r.endswith("changed") for r in said)  # evicted
    evicted = Interest.of(_dump("evicted"))
    back = [r for r in map(evicted.relevant, _between(times["evicted"], 1e12)) if r]
    assert {f"node {n} Ready" for n in _failing()} <= set(back)
    assert any(r.endswith("gone") for r in back)


def test_a_change_already_read_is_not_read_again() -> None:
    """The last event of each object before a dump, judged against that dump: the same
    resourceVersion, so nothing new (the watch does not read twice for what it has)."""
    times, changes = _recorded()
    snap = _dump("evicted")
    interest = Interest.of(snap)
    read = {p["metadata"]["uid"]: p["metadata"]["resourceVersion"] for p in snap.pods}
    last: dict[str, Change] = {}
    for at, change in changes:
        uid = change.row.uid
        if at < times["evicted"] and change.resource == "pods" and uid in read:
            last[uid] = change
    same = [c for u, c in last.items() if c.row.version == read[u]]
    assert same and not [c for c in same if interest.relevant(c)]


def _elsewhere(change: Change, uid: str, node: str) -> Change:
    return Change("pods", change.kind, replace(change.row, uid=uid, owners=(), node=node))


def test_a_pod_deleted_elsewhere_is_read_only_if_it_outstays_its_deletion() -> None:
    """A pod on a healthy node, owned by nothing read, deleted: nothing now (a normal deletion
    ends in its grace period); still there past deletionTimestamp: read; gone first: never."""
    _, changes = _recorded()
    terminating = next(c for _, c in changes if c.resource == "pods" and c.row.deletion)
    deleted_at = terminating.row.deletion
    interest = Interest.of(_dump("before"))
    stays = _elsewhere(terminating, "u-stays", "healthy-0")
    goes = _elsewhere(terminating, "u-goes", "healthy-1")
    assert interest.relevant(stays) is None and interest.relevant(goes) is None
    assert interest.relevant(Change("pods", "DELETED", goes.row)) is None
    from kubectl_nodefail.snapshot.model import parse_time

    when = parse_time(deleted_at)
    assert when is not None
    assert interest.overdue(when) is None  # not before the slack
    late = interest.overdue(when + timedelta(seconds=3))
    assert late is not None and "still there past its deletion time" in late
    assert interest.overdue(when + timedelta(seconds=30)) is None  # said once; the other went
    # a read that has it: no longer awaited
    again = Interest.of(_dump("before"))
    again.relevant(stays)
    fresh = Interest.of(_dump("before"))
    fresh.pods["u-stays"] = "1"
    fresh.carry(again)
    assert fresh.due == {}


def test_what_is_watched_follows_the_namespaces_given() -> None:
    every = resources(())
    assert [r.path for r in every if r.name == "pods"] == ["/api/v1/pods"]
    assert {r.name for r in every} >= {"nodes", "pods", "replicasets", "jobs", "events"}
    two = resources(("a", "b"))
    assert [r.path for r in two if r.name == "pods"] == [
        "/api/v1/namespaces/a/pods",
        "/api/v1/namespaces/b/pods",
    ]
    assert "/apis/apps/v1/namespaces/b/replicasets" in [r.path for r in two]
    assert [r.path for r in two if r.name == "nodes"] == ["/api/v1/nodes"]


# --- the streams, against a fake server: what a real one cannot be made to do on cue ---


def _lines(*events: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


def _row(name: str, version: str) -> dict[str, Any]:
    return {
        "kind": "PartialObjectMetadata",
        "metadata": {
            "name": name,
            "namespace": "a",
            "uid": f"u-{name}",
            "resourceVersion": version,
        },
    }


def _watching(
    api_url: str, tmp_path: Path, resource: Resource
) -> tuple[Watcher, queue.Queue[Change]]:
    cluster = Cluster(kubeconfig(tmp_path, api_url), None, 5.0, None)
    out: queue.Queue[Change] = queue.Queue()
    return Watcher(cluster, resource, out), out


def _take(out: queue.Queue[Change], n: int) -> list[Change]:
    return [out.get(timeout=10) for _ in range(n)]


def test_a_410_lists_again_and_the_watch_goes_on_from_the_new_version(tmp_path: Path) -> None:
    lists = iter(["10", "20"])

    def script(n: int, method: str, path: str) -> Any:
        if "watch=1" not in path:
            return json_answer({"kind": "List", "metadata": {"resourceVersion": next(lists)}})
        if "resourceVersion=10" in path:
            gone = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
            return (
                200,
                {},
                _lines(
                    {"type": "MODIFIED", "object": _row("x", "11")},
                    {"type": "ERROR", "object": gone},
                ),
            )
        if "resourceVersion=20" in path:
            return 200, {}, _lines({"type": "ADDED", "object": _row("y", "21")})
        return None

    with serve(script) as api:
        watcher, out = _watching(
            api.url, tmp_path, Resource("deployments", "/apis/apps/v1/deployments")
        )
        watcher.prime()
        watcher.start()
        got = _take(out, 3)
        watcher.stop()
    assert [(c.kind, c.row.name) for c in got] == [
        ("MODIFIED", "x"),
        ("expired", ""),
        ("ADDED", "y"),
    ]
    watches = [p for _, p in api.requests if "watch=1" in p]
    assert "resourceVersion=10" in watches[0] and "resourceVersion=20" in watches[1]
    assert all("allowWatchBookmarks=true" in p and "timeoutSeconds=" in p for p in watches)


def test_a_garbled_stream_is_broken_then_listed_again(tmp_path: Path) -> None:
    def script(n: int, method: str, path: str) -> Any:
        if "watch=1" not in path:
            return json_answer({"kind": "List", "metadata": {"resourceVersion": str(10 + n)}})
        if n == 1:
            return 200, {}, b'{"type": "MODIFIED", "object": {garbage\n'
        return None

    with serve(script) as api:
        watcher, out = _watching(api.url, tmp_path, Resource("jobs", "/apis/batch/v1/jobs"))
        watcher.prime()
        watcher.start()
        got = _take(out, 2)
        watcher.stop()
    assert [c.kind for c in got] == ["broken", "expired"]
    assert got[0].error is not None and "jobs" in got[0].error.message


def test_a_refused_watch_of_pods_turns_the_watch_back_to_reading_every_interval(
    tmp_path: Path,
) -> None:
    """RBAC with list but not watch: the follower gives its watches up and says why; a refused
    optional watch (events) is only left out."""

    def script(n: int, method: str, path: str) -> Any:
        if "watch=1" not in path:
            return json_answer({"kind": "List", "metadata": {"resourceVersion": "5"}})
        if "/pods?" in path or "/events?" in path:
            status = {"kind": "Status", "code": 403, "reason": "Forbidden", "message": "no watch"}
            return json_answer(status, 403)
        return None

    with serve(script) as api:
        follower = Follower(Cluster(kubeconfig(tmp_path, api.url), None, 5.0, None), (), ())
        follower.prime()
        assert follower.primed and not follower.off
        follower.rebase(_dump("before"))
        reasons: list[str] = []
        for _ in range(10):
            reasons += follower.wait(1.0)
            if follower.off:
                break
        follower.close()
    assert follower.off.startswith("no watch of pods")
    assert any(r.startswith("no watch of pods") for r in reasons)


def test_the_bytes_a_watch_carried_are_in_the_request_budget(tmp_path: Path) -> None:
    body = _lines({"type": "ADDED", "object": _row("x", "11")})

    def script(n: int, method: str, path: str) -> Any:
        if "watch=1" not in path:
            return json_answer({"kind": "List", "metadata": {"resourceVersion": "10"}})
        return (200, {}, body) if n == 1 else None

    Cluster.budget.spent.clear()
    with serve(script) as api:
        watcher, out = _watching(
            api.url, tmp_path, Resource("statefulsets", "/apis/apps/v1/statefulsets")
        )
        watcher.prime()
        watcher.start()
        _take(out, 1)
        for _ in range(100):
            if "watch statefulsets.apps" in Cluster.budget.spent:
                break
            import time

            time.sleep(0.05)
        watcher.stop()
    spent = Cluster.budget.spent["watch statefulsets.apps"]
    assert spent.requests >= 1 and spent.bytes >= len(body)


@pytest.mark.parametrize("kind", ["Table", "PartialObjectMetadata"])
def test_a_row_without_an_object_is_not_a_change(kind: str) -> None:
    empty = {"kind": "Table", "metadata": {"resourceVersion": "3"}, "rows": []}
    assert row_of(empty if kind == "Table" else {"kind": kind}, ["Name"]) is None


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
KEYS = st.sampled_from(
    ["type", "object", "kind", "rows", "cells", "metadata", "name", "uid", "resourceVersion",
     "deletionTimestamp", "ownerReferences", "spec", "nodeName", "involvedObject", "code"]
)  # fmt: skip
EVENTS = st.recursive(
    JSON,
    lambda inner: st.dictionaries(KEYS, inner, max_size=5) | st.lists(inner, max_size=2),
    max_leaves=20,
)


@given(EVENTS, st.sampled_from(["nodes", "pods", "jobs", "events", "volumeattachments"]))
def test_any_line_a_server_sends_is_a_change_or_a_stated_failure(event: Any, name: str) -> None:
    """Whatever JSON a stream carries: a change whose relevance is decided without an error,
    or one of the tool's own errors (the watcher then lists and watches again): never an
    exception that would end the watch with a traceback."""
    from kubectl_nodefail.common.errors import NodefailError

    out: queue.Queue[Change] = queue.Queue()
    watcher = Watcher(None, Resource(name, "/"), out)  # type: ignore[arg-type]
    watcher.columns = ["Name", "Status", "Node"]
    for head in ({"type": "ADDED", "object": event}, event):
        try:
            watcher._event(head)
        except NodefailError:
            continue
    interest = Interest.of(_dump("during"))
    while not out.empty():
        change = out.get()
        assert isinstance(change.row, Row)
        why = interest.relevant(change)
        assert why is None or isinstance(why, str)
    interest.overdue(datetime.max.replace(tzinfo=timezone.utc))


def test_a_silent_server_is_asked_whether_it_still_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Watches open but nothing heard for PROBE_SECONDS: one GET /version; unanswered (here a
    503 each time), every stream is cut (they list and watch again) and the cluster is read
    again, which says what fails."""
    from kubectl_nodefail.watch import follow as follow_module

    monkeypatch.setattr(follow_module, "PROBE_SECONDS", 0.3)

    def script(n: int, method: str, path: str) -> Any:
        if path.startswith("/version"):
            return json_answer({"kind": "Status", "code": 503, "message": "down"}, 503)
        if "watch=1" not in path:
            return json_answer({"kind": "List", "metadata": {"resourceVersion": "5"}})
        return None  # a watch that never says anything

    with serve(script) as api:
        cluster = Cluster(kubeconfig(tmp_path, api.url), None, 2.0, None)
        cluster.sleep = lambda _: None  # no backoff between the probe's tries
        follower = Follower(cluster, (), ())
        follower.prime()
        follower.rebase(_dump("before"))
        reasons: list[str] = []
        for _ in range(3):
            reasons += follower.wait(0.5)
            if reasons:
                break
        follower.close()
    assert any(r.startswith("the API server did not answer") for r in reasons), reasons
    assert ("GET", "/version") in api.requests


def test_a_namespace_the_server_has_no_collection_for_reads_every_interval(
    tmp_path: Path,
) -> None:
    """-n with a value that is no namespace name: its pods' collection is a 404, as a plain
    diagnose meets it (a warning, not a failure); the watch then reads every --interval
    rather than failing every read. The name is sent quoted, as every other path."""

    def script(n: int, method: str, path: str) -> Any:
        if path.startswith("/api/v1/namespaces/a%2Fb/pods"):
            status = {"kind": "Status", "code": 404, "reason": "NotFound", "message": "no"}
            return json_answer(status, 404)
        return json_answer({"kind": "List", "metadata": {"resourceVersion": "5"}})

    assert "/api/v1/namespaces/a%2Fb/pods" in [r.path for r in resources(("a/b",))]
    with serve(script) as api:
        follower = Follower(Cluster(kubeconfig(tmp_path, api.url), None, 5.0, None), ("a/b",), ())
        follower.prime()
        follower.close()
    assert follower.primed and follower.off.startswith("no watch of pods")


def test_a_watch_that_gets_no_answer_is_the_tools_error_and_counted(tmp_path: Path) -> None:
    """A server that answers the watch with no HTTP at all: the connection's failure in the
    tool's words (as any request's, kube._lost), never a library exception, and the request
    counted in the budget (-v) as sent and failed."""
    from kubectl_nodefail.cluster.budget import Budget
    from kubectl_nodefail.common.errors import UnreachableError
    from tests.support.fakeapi import silent_socket

    with silent_socket(b"NOT HTTP\r\n\r\n") as where:
        cluster = Cluster(kubeconfig(tmp_path, f"http://{where}"), None, 2.0, None)
        budget = Budget()
        saved, Cluster.budget = Cluster.budget, budget
        try:
            with pytest.raises(UnreachableError) as caught:
                cluster.open_watch("/api/v1/nodes", {}, "application/json", 2.0)
        finally:
            Cluster.budget = saved
    assert caught.value.message.startswith("Unable to connect to the server")  # as kubectl says
    spent = budget.spent["watch nodes"]
    assert spent.requests == 1 and spent.failed == 1


# --- kube-controller-manager's leader Lease (analysis/leader.py), watched ---


def _lease_change(snap: Snapshot, kind: str = "MODIFIED", **spec: Any) -> Change:
    lease = next(x for x in snap.leases if x["metadata"]["name"] == "kube-controller-manager")
    obj = {**lease, "spec": {**lease["spec"], **spec}}
    row = row_of(obj, [])
    assert row is not None
    return Change("leases", kind, row)


def _micro(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_the_leaders_lease_is_watched_by_name_in_its_namespace() -> None:
    (lease,) = [r for r in resources(("a",)) if r.name == "leases"]
    assert lease.path == "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
    assert lease.query == {"fieldSelector": "metadata.name=kube-controller-manager"}


def test_a_leader_that_stops_renewing_is_read_again_at_the_moment_the_read_finds_it_expired() -> (
    None
):
    """Recorded after a restart (tests/e2e/test_eviction_clock.py): the leader renews. Its
    renewals move the deadline and are no change; past the deadline with none, the watch reads
    again (no object changes when a leader goes), once; the read then finds it expired, as the
    diagnosis judges (leaseDurationSeconds plus the clock slack)."""
    snap = load_dump(str(FIXTURES / "controller-restart.json"))
    interest = Interest.of(snap)
    spec = next(x for x in snap.leases if x["metadata"]["name"] == "kube-controller-manager")[
        "spec"
    ]
    renewed = parse_time(spec["renewTime"])
    assert renewed is not None and interest.leader_due is not None
    lasts = spec["leaseDurationSeconds"]
    assert interest.leader_due > renewed + timedelta(seconds=lasts + CLOCK_SLACK_SECONDS)
    assert interest.next_due() == interest.leader_due

    later = renewed + timedelta(seconds=2)
    assert interest.relevant(_lease_change(snap, renewTime=_micro(later))) is None
    due = interest.leader_due
    assert due == later + timedelta(seconds=lasts + CLOCK_SLACK_SECONDS + DUE_SLACK / 2)
    assert interest.overdue(due - timedelta(seconds=1)) is None
    said = interest.overdue(due)
    assert said == "kube-controller-manager's leader Lease not renewed within its duration"
    assert interest.overdue(due + timedelta(minutes=5)) is None  # once
    assert interest.next_due() is None
    # the read made then finds what the watch expected
    read = replace(snap, read_at=due)
    chief = leader(read)
    assert chief is not None and chief.expired()
    assert Interest.of(read).leader_due is None  # nothing left to expire


def test_a_new_leader_or_a_leader_back_is_a_change(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new leader, or the one read as expired renewing again in time by this machine's clock
    (once: its next renewals are no change); a renewal this clock finds stale is not read for
    (a clock far ahead of the control plane's would read again at every renewal)."""
    snap = load_dump(str(FIXTURES / "controller-restart.json"))
    chief = leader(snap)
    assert chief is not None
    new = chief.since + timedelta(minutes=3)
    why = Interest.of(snap).relevant(
        _lease_change(snap, acquireTime=_micro(new), renewTime=_micro(new))
    )
    assert why is not None and why.startswith("kube-controller-manager has a new leader")
    renewed = chief.renewed()
    assert renewed is not None
    gone = Interest.of(replace(snap, read_at=renewed + timedelta(minutes=2)))
    assert gone.leader_state == "expired"
    again = renewed + timedelta(minutes=2)
    monkeypatch.setattr(interest_module, "_now", lambda: again + timedelta(seconds=40))  # skewed
    assert gone.relevant(_lease_change(snap, renewTime=_micro(again))) is None
    monkeypatch.setattr(interest_module, "_now", lambda: again + timedelta(seconds=1))
    stale = gone.relevant(_lease_change(snap, renewTime=_micro(renewed)))
    assert stale is None  # the renewal read already: no news
    back = gone.relevant(_lease_change(snap, renewTime=_micro(again)))
    assert back == "kube-controller-manager's leader Lease renewed again"
    assert gone.relevant(_lease_change(snap, renewTime=_micro(again))) is None  # said once
    assert Interest.of(snap).relevant(_lease_change(snap, "DELETED")) is not None


def test_without_the_leaders_lease_read_only_its_creation_is_a_change() -> None:
    """No leader election (no Lease: the read found nothing) or a Lease not read: a Lease made
    later is a change; a deletion of one never read, or a Lease without acquireTime, is not."""
    snap = load_dump(str(FIXTURES / "controller-restart.json"))
    bare = replace(
        snap,
        leases=[x for x in snap.leases if x["metadata"]["name"] != "kube-controller-manager"],
    )
    interest = Interest.of(bare)
    assert interest.leader_since is None and interest.leader_due is None
    assert interest.relevant(_lease_change(snap, "ADDED")) is not None
    assert interest.relevant(_lease_change(snap, "DELETED")) is None
    assert interest.relevant(_lease_change(snap, acquireTime=None)) is None


@pytest.mark.parametrize("lasts", ["15", True, -3, None, 1.5])
def test_a_lease_duration_of_another_type_sets_no_deadline(lasts: Any) -> None:
    snap = load_dump(str(FIXTURES / "controller-restart.json"))
    interest = Interest.of(snap)
    before = interest.leader_due
    assert interest.relevant(_lease_change(snap, leaseDurationSeconds=lasts)) is None
    assert interest.leader_due == before  # kept, not moved by a value it cannot read


def test_a_refused_or_missing_lease_watch_keeps_no_deadline() -> None:
    """Without the Lease's watch no renewal moves the deadline: it would read again every
    half minute for nothing."""
    snap = load_dump(str(FIXTURES / "controller-restart.json"))
    follower = Follower(None, (), ())  # type: ignore[arg-type]
    follower.rebase(snap)  # no watches (none primed)
    assert follower.interest.leader_due is None
    follower.interest = Interest.of(snap)
    assert follower.interest.leader_due is not None
    assert follower._refused(Change("leases", "refused")) == []
    assert follower.interest.leader_due is None and follower.skipped == ["leases"]


def _lease_spec(snap: Snapshot, **spec: Any) -> Snapshot:
    out = replace(snap, leases=[dict(x) for x in snap.leases])
    for lease in out.leases:
        if lease["metadata"]["name"] == "kube-controller-manager":
            lease["spec"] = {**lease["spec"], **spec}
    return out


def test_the_leaders_going_return_or_change_is_a_new_block_and_a_change_line() -> None:
    """A leader going, coming back or changing is a change of the screen (its fingerprint) and
    a line of the change log; its renewals are neither."""
    snap = load_dump(str(FIXTURES / "controller-restart.json"))
    chief = leader(snap)
    assert chief is not None and chief.alive()
    renewed = chief.renewed()
    assert renewed is not None
    again = _lease_spec(snap, renewTime=_micro(renewed + timedelta(seconds=2)))
    gone = replace(snap, read_at=renewed + timedelta(minutes=1))
    new = _lease_spec(
        snap, acquireTime=_micro(chief.since + timedelta(minutes=3)), renewTime=_micro(renewed)
    )
    assert fingerprint(again) == fingerprint(snap) and between(snap, again) == []
    assert fingerprint(gone) != fingerprint(snap)
    assert between(snap, gone) == [
        "kube-controller-manager has no leader (its Lease not renewed in time)"
    ]
    assert between(gone, snap) == ["kube-controller-manager's leader renews its Lease again"]
    assert fingerprint(new) != fingerprint(snap)
    assert between(snap, new)[0].startswith("kube-controller-manager has a new leader (since ")


def test_a_renewal_queued_during_a_read_moves_the_deadline_before_it_is_checked() -> None:
    """A read longer than the Lease's duration: the renewals that came meanwhile are taken
    first, so the deadline the read left behind does not call for a read of its own."""
    snap = load_dump(str(FIXTURES / "controller-restart.json"))
    follower = Follower(None, (), ())  # type: ignore[arg-type]
    follower.interest = Interest.of(snap)
    due = follower.interest.leader_due
    assert due is not None and due < datetime.now(timezone.utc)  # recorded hours ago
    follower.changes.put(_lease_change(snap, renewTime=_micro(datetime.now(timezone.utc))))
    assert follower.wait(0.2) == []
    later = follower.interest.leader_due
    assert later is not None and later > datetime.now(timezone.utc)
    follower.interest.leader_due = due  # none queued: the deadline is the reason
    assert follower.wait(0.2) == [
        "kube-controller-manager's leader Lease not renewed within its duration"
    ]


def test_without_a_leader_a_pod_bound_to_a_node_nothing_marks_is_a_change() -> None:
    """The read took the pods of the Ready node whose kubelet went silent (nothing marks it
    without a leader): a new pod bound there (the scheduler runs without kube-controller-
    manager) is a change, as on a failed node."""
    from tests.unit.conftest import load

    snap = load("no-leader")
    interest = Interest.of(snap)
    assert "lost-l2" in interest.focus and "lost-l1" in interest.focus
    pod = {
        "kind": "Pod",
        "metadata": {"name": "new-1", "namespace": "x", "uid": "u-new", "resourceVersion": "9"},
        "spec": {"nodeName": "lost-l2"},
        "status": {"phase": "Pending"},
    }
    row = row_of(pod, [])
    assert row is not None
    assert interest.relevant(Change("pods", "ADDED", row)) == "pod x/new-1 on lost-l2"


def test_without_a_leader_the_cluster_is_read_every_interval() -> None:
    """No controller leader: a kubelet going silent or coming back changes only its node's
    Lease (not watched; nothing turns it into the Node's Ready), so an interval with no other
    change is a reason to read; with a leader renewing it is not."""
    from tests.unit.conftest import load

    follower = object.__new__(Follower)
    follower.interest = Interest.of(load("no-leader"))
    assert follower._leaderless() == [
        "kube-controller-manager has no leader: node leases read again every interval"
    ]
    follower.interest = Interest.of(load_dump(str(FIXTURES / "controller-restart.json")))
    assert follower._leaderless() == []


def test_a_ready_node_whose_kubelet_went_silent_is_read_again_once_past_its_time() -> None:
    """The leader renews; a Ready node's kubelet stopped renewing 30 s before the read. Its Lease
    is not watched, and if the node lifecycle controller does not mark it (it does not run, or
    its grace is longer) nothing on the Node changes either: the watch reads again once the
    node is past its default time to be marked and the controller's next look, once; the read
    then takes its pods as a node nothing marks (analysis/unmarked.py)."""
    from kubectl_nodefail.analysis import unmarked
    from kubectl_nodefail.analysis.nodes import MARK_SLACK_SECONDS
    from tests.unit.conftest import stale_ready_node

    snap, name = stale_ready_node("controller-restart", 30)
    chief = leader(snap)
    assert chief is not None and chief.alive()
    interest = Interest.of(snap)
    renewed = snap.captured_at - timedelta(seconds=30)
    when = interest.unmarked_after[name]
    assert when >= renewed + timedelta(seconds=50 + MARK_SLACK_SECONDS + DUE_SLACK)
    interest.leader_due = None  # the leader's own deadline, earlier (tested above)
    assert interest.next_due() == when
    assert interest.overdue(when - timedelta(seconds=1)) is None
    assert interest.overdue(when) == f"node {name} past its time to be marked NotReady"
    assert interest.overdue(when + timedelta(minutes=5)) is None  # once
    # the read made then takes its pods, and waits for nothing more on it
    read = replace(snap, captured_at=when, read_at=when)
    assert name in unmarked.read_for(read)
    assert name not in Interest.of(read).unmarked_after
    # a kubelet renewing sets no deadline
    fresh, name = stale_ready_node("controller-restart", 5)
    assert name not in Interest.of(fresh).unmarked_after


def test_a_node_not_marked_in_its_time_makes_the_watch_read_every_interval() -> None:
    """A Ready node whose kubelet is silent and that the node lifecycle controller did not mark
    in its time (the leader renews): that controller marks no other node either, so a kubelet
    going silent later shows only in its Lease, which is not watched; and a node that became
    such during the read (its pods unread, a stated gap) would have no later read at all. In
    both, the cluster is read every interval; with neither, it is not."""
    from kubectl_nodefail.analysis import unmarked
    from kubectl_nodefail.cluster.gather import MARKED_LATE_GAP
    from tests.unit.conftest import stale_ready_node

    stale, name = stale_ready_node("controller-restart", 600)
    # a leader since long before the kubelet's last word (not a first look after it)
    snap = _lease_spec(stale, acquireTime=_micro(stale.captured_at - timedelta(hours=1)))
    chief = leader(snap)
    assert chief is not None and chief.alive()
    assert name in unmarked.read_for(snap)
    follower = Follower(None, (), ())  # type: ignore[arg-type]
    follower.interest = Interest.of(snap)
    assert follower._leaderless() == [
        "a node not marked NotReady in its time: node leases read again every interval"
    ]
    fresh, _ = stale_ready_node("controller-restart", 30)
    follower.interest = Interest.of(fresh)
    assert follower._leaderless() == []
    gap = f"{MARKED_LATE_GAP}: the pods of {name} (Ready, kubelet silent, nothing marks them)"
    follower.interest = Interest.of(replace(fresh, gaps=[*fresh.gaps, gap]))
    assert follower._leaderless() != []


@pytest.mark.parametrize("silent_for", [30.0, 2.0])
def test_a_kubelet_going_silent_after_the_read_is_found_by_the_lease_sweep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, silent_for: float
) -> None:
    """Node leases are not watched, and where nothing marks a node (no node lifecycle
    controller, or a longer grace) nothing on the Node changes when its kubelet stops: every
    SWEEP_SECONDS one list of the node leases looks for a Ready node's kubelet that stopped
    renewing since the read (missed two renewals): a reason to read again. One renewing: none."""
    from kubectl_nodefail.watch import follow as follow_module

    monkeypatch.setattr(follow_module, "SWEEP_SECONDS", 0.2)
    snap = _dump("before")
    name = next(n["metadata"]["name"] for n in snap.nodes if kubectl_ready(n))
    renewed = datetime.now(timezone.utc) - timedelta(seconds=silent_for)
    lease = {
        "kind": "Lease",
        "metadata": {"name": name, "namespace": "kube-node-lease", "resourceVersion": "9"},
        "spec": {"renewTime": _micro(renewed), "leaseDurationSeconds": 40},
    }

    def script(n: int, method: str, path: str) -> Any:
        if "watch=1" in path:
            return None  # watches that never say anything
        items = (
            [lease]
            if path.startswith("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/")
            else []
        )
        return json_answer({"kind": "List", "metadata": {"resourceVersion": "5"}, "items": items})

    with serve(script) as api:
        cluster = Cluster(kubeconfig(tmp_path, api.url), None, 2.0, None)
        follower = Follower(cluster, (), ())
        follower.prime()
        follower.rebase(snap)
        reasons: list[str] = []
        for _ in range(3):
            reasons += follower.wait(0.3)
        follower.close()
    swept = [
        p
        for _, p in api.requests
        if p.startswith("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases")
    ]
    assert swept, api.requests
    if silent_for > 20:
        assert f"node {name}'s kubelet missed two renewals of its lease" in reasons, reasons
    else:
        assert not any("missed two renewals" in r for r in reasons), reasons


def kubectl_ready(node: dict[str, Any]) -> bool:
    from kubectl_nodefail.analysis.nodes import kubectl_status

    return kubectl_status(node).startswith("Ready")


def test_the_sweep_reads_again_only_for_a_renewal_the_read_did_not_have() -> None:
    """A lease late at the read and still late with the same renewal: the read already said
    so (and set its moment): nothing new. Renewed since, then late again: a reason."""
    snap = _dump("before")
    name = next(n["metadata"]["name"] for n in snap.nodes if kubectl_ready(n))
    follower = Follower(None, (), ())  # type: ignore[arg-type]
    follower.interest = Interest.of(snap)
    old = _micro(datetime.now(timezone.utc) - timedelta(seconds=60))
    follower.interest.late = {name: old}

    class Leases:
        renewed = old

        def list_all(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
            return [
                {
                    "kind": "Lease",
                    "metadata": {"name": name, "namespace": "kube-node-lease"},
                    "spec": {"renewTime": self.renewed, "leaseDurationSeconds": 40},
                }
            ]

    follower.cluster = Leases()  # type: ignore[assignment]
    assert follower._sweep() == []
    Leases.renewed = _micro(datetime.now(timezone.utc) - timedelta(seconds=30))
    assert follower._sweep() == [f"node {name}'s kubelet missed two renewals of its lease"]


class _PodsWatch:
    """A watch of pods as kept_reads reads it: started from a version, started over `primes`
    times."""

    def __init__(self) -> None:
        self.resource = Resource("pods", "/api/v1/pods")
        self.version, self.primes = "100", 1
        self.alive = True
        self.ident: int | None = 1  # started (None: primed, not started)
        self.stopping = threading.Event()

    def is_alive(self) -> bool:
        return self.alive


def _keeping(snap: Snapshot) -> tuple[Follower, _PodsWatch, Kept]:
    """A follower after a read of `snap` that listed each examined node's pods (as gather
    leaves them)."""
    follower = Follower(None, (), ())  # type: ignore[arg-type]
    watch, nodes = _PodsWatch(), _PodsWatch()
    nodes.resource = Resource("nodes", "/api/v1/nodes")
    follower.watchers = [watch, nodes]  # type: ignore[list-item]
    follower.primed = True
    kept = follower.kept_reads()
    assert kept is not None and kept.pods_on == {} and kept.deleting is None
    focus = Interest.of(snap).focus
    kept.pods_on = {
        n: [p for p in snap.pods if p["spec"].get("nodeName") == n] for n in sorted(focus)
    }
    kept.deleting = deleting_of(snap.pods)
    follower.interest = Interest.of(snap)
    return follower, watch, kept


def test_a_nodes_pods_are_kept_until_a_change_to_one_of_them_is_seen() -> None:
    """The recorded streams after the read made while the node was down: the first change to
    a pod on the examined node drops that node's list (the next read lists it again), even one
    taken off the queue just before the read, and it is still judged after the read."""
    times, _ = _recorded()
    snap = _dump("during")
    follower, _, kept = _keeping(snap)
    node = next(iter(kept.pods_on))
    assert follower.kept_reads() is kept and kept.pods_on[node]  # nothing seen: kept whole
    other = Change(
        "pods", "MODIFIED", Row(name="x", namespace="n", uid="u-x", version="9", node="elsewhere")
    )
    follower.changes.put(other)
    assert node in _kept(follower).pods_on  # a pod of another node: kept
    after = [c for c in _between(times["during"], times["evicted"]) if c.resource == "pods"]
    mine = next(c for c in after if c.row.node == node)
    follower.changes.put(mine)
    assert node not in _kept(follower).pods_on  # taken off before the read: dropped
    assert follower.wait(0.05)  # and judged after it: a reason to read again
    assert not follower.backlog and follower.changes.empty()
    follower, _, kept = _keeping(snap)
    follower.changes.put(replace(mine, row=replace(mine.row, node="")))  # no NODE cell
    assert _kept(follower) == Kept()  # which node it was on is unknown: nothing kept
    follower, _, kept = _keeping(snap)
    follower.changes.put(Change("pods", "MODIFIED", Row()))  # an object it could not read
    assert _kept(follower) == Kept()


def test_a_pod_change_drops_the_other_pods_kept_of_its_owners() -> None:
    """An owner's other pods are kept (Kept.siblings) until a change to a pod it owns, or
    owned when they were listed, is seen; a pod of another owner leaves them."""
    follower, _, kept = _keeping(_dump("during"))
    held = Found(({"metadata": {"uid": "u-a", "name": "a"}},), True)
    kept.keep_siblings({"rs-1": held, "rs-2": Found((), True)})
    row = Row(name="x", namespace="n", uid="u-x", version="9", node="n9", owners=("rs-9",))
    follower.changes.put(Change("pods", "MODIFIED", row))
    assert _kept(follower).siblings.keys() == {"rs-1", "rs-2"}
    follower.changes.put(Change("pods", "ADDED", replace(row, owners=("rs-2",))))
    assert _kept(follower).siblings.keys() == {"rs-1"}
    follower.changes.put(Change("pods", "MODIFIED", replace(row, uid="u-a", owners=())))
    assert _kept(follower).siblings == {}  # a left its owner: which one, the lists said


def test_a_change_judged_between_reads_drops_its_nodes_list_too() -> None:
    """Most changes are taken by `wait`, not before a read: each drops its node's list."""
    times, _ = _recorded()
    follower, _, kept = _keeping(_dump("during"))
    node = next(iter(kept.pods_on))
    after = [c for c in _between(times["during"], times["evicted"]) if c.resource == "pods"]
    follower.changes.put(next(c for c in after if c.row.node == node))
    assert follower.wait(0.05)
    assert node not in follower.kept.pods_on and not follower.backlog


def _kept(follower: Follower) -> Kept:
    kept = follower.kept_reads()
    assert kept is not None
    return kept


def test_the_pods_being_deleted_are_kept_as_each_pod_change_says() -> None:
    """In place of the two scans of every pod: the recorded evictions (a deletionTimestamp
    set) add their pods, a pod gone takes its out; the set the changes leave is what the
    dump taken after them has."""
    times, _ = _recorded()
    follower, _, kept = _keeping(_dump("during"))
    assert kept.deleting == {}  # nothing evicted yet
    for change in _between(times["during"], times["evicted"]):
        follower.changes.put(change)
    after = _kept(follower).deleting
    want = deleting_of(_dump("evicted").pods)
    assert want and after == want
    gone = [c for c in _between(times["evicted"], 1e12) if c.kind == "DELETED"]
    for change in gone:
        follower.changes.put(change)
    left = _kept(follower).deleting or {}
    assert gone and not {c.row.uid for c in gone} & set(left)


def test_a_change_older_than_the_read_never_takes_out_a_pod_it_saw_deleted() -> None:
    """The watch starts before the read and may lag: a pod's change from before its deletion,
    carried after the read that saw it deleted, leaves it among the pods being deleted (read
    whole, a pod not being deleted is left out); only its going takes it out."""
    follower, _, kept = _keeping(_dump("evicted"))
    assert kept.deleting
    uid, (ns, name, node) = next(iter(kept.deleting.items()))
    older = Change(
        "pods", "MODIFIED", Row(name=name, namespace=ns, uid=uid, version="1", node=node)
    )
    follower.changes.put(older)
    assert uid in (_kept(follower).deleting or {})
    follower.changes.put(Change("pods", "DELETED", replace(older.row, version="9")))
    assert uid not in (_kept(follower).deleting or {})


def test_no_list_is_kept_across_a_gap_in_the_watch_of_pods() -> None:
    """A watch of pods that started over (a 410, a broken stream: events between unseen), or
    that is down now (no version to go on from), keeps nothing; no watch of pods, nothing."""
    snap = _dump("during")
    follower, watch, kept = _keeping(snap)
    assert kept.pods_on
    watch.primes += 1  # started over since the lists were asked for
    assert _kept(follower) == Kept()
    follower, watch, kept = _keeping(snap)
    watch.version = ""  # down: listing again before it watches
    assert follower.kept_reads() is None and follower.kept == Kept()
    follower, _, _ = _keeping(snap)
    follower.off = "no watch of pods (refused)"
    assert follower.kept_reads() is None
    # not running: before the first read that succeeded starts it (a failed read's lists
    # are not watched over), or stopped
    follower, watch, _ = _keeping(snap)
    watch.alive = False
    assert follower.kept_reads() is None and follower.kept == Kept()
    follower, watch, _ = _keeping(snap)
    watch.stopping.set()
    assert follower.kept_reads() is None


def test_a_node_deleted_drops_what_is_kept_so_the_next_read_scans_for_its_pods() -> None:
    """Its pods are bound to no Node from then on: found only by the scan of every pod (the
    kept set of pods being deleted would skip it), so that set is dropped; a Node changed, not
    deleted, keeps what was kept."""
    follower, _, kept = _keeping(_dump("during"))
    node = next(iter(kept.pods_on))
    follower.changes.put(Change("nodes", "MODIFIED", Row(name=node, version="99")))
    assert _kept(follower).deleting is not None and node in _kept(follower).pods_on
    follower.changes.put(Change("nodes", "DELETED", Row(name=node, version="100")))
    after = _kept(follower)
    assert after.deleting is None  # the next read scans for the deleted node's pods
    assert node in after.pods_on  # each examined node's list is kept


def _event(name: str, version: str, node: str = "n1") -> dict[str, Any]:
    return {
        "kind": "Event",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"u-{name}",
            "resourceVersion": version,
        },
        "involvedObject": {"kind": "Node", "name": node},
        "reason": "NodeNotReady",
    }


@pytest.mark.parametrize("uids", [True, False])
def test_a_whole_resource_listed_again_says_what_differs(tmp_path: Path, uids: bool) -> None:
    """A watch of Events (listed whole) whose version is gone (410) lists again and says what
    changed between the two lists and the stream (one changed, one new, one gone, one the
    stream already said), not `expired`; an object it cannot tell apart (no uid) leaves it
    knowing nothing: then `expired`, as any other watch."""
    first = [_event("a", "5"), _event("b", "6"), _event("c", "7")]
    if not uids:
        del first[2]["metadata"]["uid"]
    second = [_event("a", "5"), _event("b", "16"), _event("d", "17"), _event("e", "12")]
    lists = iter([("10", first), ("20", second)])

    def script(n: int, method: str, path: str) -> Any:
        if "watch=1" not in path:
            version, items = next(lists)
            return json_answer(
                {"kind": "EventList", "metadata": {"resourceVersion": version}, "items": items}
            )
        if "resourceVersion=10" in path:
            gone = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
            return (
                200,
                {},
                _lines(
                    {"type": "ADDED", "object": _event("e", "12")},
                    {"type": "ERROR", "object": gone},
                ),
            )
        return None

    resource = next(r for r in follow.resources(()) if r.name == "events")
    assert resource.whole
    with serve(script) as api:
        watcher, out = _watching(api.url, tmp_path, resource)
        watcher.prime()
        watcher.start()
        got = _take(out, 5 if uids else 2)
        watcher.stop()
    said = [(c.kind, c.row.name) for c in got]
    if uids:
        assert said[:2] == [("ADDED", "e"), ("relisted", "")]
        assert 0 < got[1].since <= watcher.held  # whole until the stream's end
        assert sorted(said[2:]) == [("ADDED", "d"), ("DELETED", "c"), ("MODIFIED", "b")]
        assert watcher.items is not None and sorted(r.name for r in watcher.items.values()) == [
            "a",
            "b",
            "d",
            "e",
        ]
    else:
        assert said == [("ADDED", "e"), ("expired", "")]
    assert out.empty()


def test_the_first_reads_lists_are_kept_once_the_watch_it_starts_runs() -> None:
    """The watch of pods starts after the first read that succeeds, from the version primed
    before it: that read's lists are kept for the next (the changes since the prime are then
    drained first), so the first change after a quiet start does not list every examined
    node's pods again; a read that failed before the watch started keeps nothing for the
    next try (no watch held its lists meanwhile)."""
    snap = _dump("during")
    follower = Follower(None, (), ())  # type: ignore[arg-type]
    watch = _PodsWatch()
    watch.alive, watch.ident = False, None  # primed, not started
    follower.watchers = [watch]  # type: ignore[list-item]
    follower.primed = True
    failed = follower.kept_reads()
    assert failed is not None
    failed.pods_on = {"n1": []}  # what a read that then failed kept
    first = follower.kept_reads()
    assert first is not None and first is not failed and first == Kept()
    node = sorted(Interest.of(snap).focus)[0]
    first.pods_on = {node: [p for p in snap.pods if p["spec"].get("nodeName") == node]}
    watch.alive, watch.ident = True, 1  # the read succeeded: started
    assert follower.kept_reads() is first and first.pods_on[node]
    follower.changes.put(
        Change("pods", "MODIFIED", Row(name="x", namespace="n", uid="u-x", version="9", node=node))
    )
    assert node not in _kept(follower).pods_on  # a change since the prime: listed again


def test_a_list_again_reads_again_only_if_a_read_ended_in_the_gap_it_closes() -> None:
    """Listed again, a whole watch says its differences and until when it held every change:
    a read that ended before that saw nothing the differences leave out (judged one by one);
    one that ended after may have seen an Event created and deleted in the gap, which no
    difference says: then the cluster is read again."""
    interest = Interest(focus={"n1"}, made=100.0)
    assert interest.relevant(Change("events", "relisted", since=150.0)) is None
    assert interest.relevant(Change("events", "relisted", since=50.0)) == (
        "the watch of events listed again"
    )


def test_an_optional_watch_whose_list_fails_starts_unprimed_and_fails_no_read(
    tmp_path: Path,
) -> None:
    """The first list of every Event may be long: failing (a 500 here), it fails no read; the
    watch starts without a version, lists once running and says `expired` (a read again)."""
    failing = {"on": True}

    def script(n: int, method: str, path: str) -> Any:
        if path.startswith("/api/v1/events") and "watch=1" not in path and failing["on"]:
            status = {"kind": "Status", "code": 500, "reason": "InternalError", "message": "x"}
            return json_answer(status, 500)
        if "watch=1" in path:
            return None
        return json_answer({"kind": "List", "metadata": {"resourceVersion": "5"}, "items": []})

    with serve(script) as api:
        follower = Follower(Cluster(kubeconfig(tmp_path, api.url), None, 5.0, None), (), ())
        follower.prime()
        events = [w for w in follower.watchers if w.resource.name == "events"]
        assert follower.primed and not follower.off and len(events) == 2
        assert all(not w.version and w.items is None for w in events)
        failing["on"] = False
        follower.rebase(_dump("before"))
        reasons: list[str] = []
        for _ in range(20):
            reasons += follower.wait(0.5)
            if "the watch of events listed again" in reasons:
                break
        follower.close()
    assert "the watch of events listed again" in reasons


def test_the_watches_are_primed_at_once(tmp_path: Path) -> None:
    """Before the first screen, each watch's starting list: sent together (a server 0.2 s
    away has them all in flight at once), not one after the other."""
    lock = threading.Lock()
    flight = {"now": 0, "most": 0}

    def script(n: int, method: str, path: str) -> Any:
        if "watch=1" in path:
            return None
        with lock:
            flight["now"] += 1
            flight["most"] = max(flight["most"], flight["now"])
        import time

        time.sleep(0.2)
        with lock:
            flight["now"] -= 1
        return json_answer({"kind": "List", "metadata": {"resourceVersion": "5"}, "items": []})

    with serve(script) as api:
        follower = Follower(Cluster(kubeconfig(tmp_path, api.url), None, 5.0, None), (), ())
        follower.prime()
        follower.close()
    assert follower.primed and len(follower.watchers) == len(resources(()))
    assert flight["most"] >= 4, flight


def test_an_owner_is_kept_while_its_kinds_watch_shows_no_change_to_it_and_no_gap() -> None:
    """Kept.owners (gather takes them instead of reading them again): an owner's own change
    drops it, a change its watch could not name or a gap in that watch (started over, down, a
    watch `expired` or `broken`) drops every owner of the kind, an owner kind not watched
    (refused at the start) keeps none, and a gap in the watch of pods keeps nothing."""
    rs, jobs = ("ReplicaSet", "a", "web-1"), ("Job", "b", "j2")
    deployment = ("Deployment", "a", "web")  # no watch of Deployments here

    def keeping() -> tuple[Follower, dict[str, _PodsWatch]]:
        follower = Follower(None, (), ())  # type: ignore[arg-type]
        watches = {"pods": _PodsWatch(), "replicasets": _PodsWatch(), "jobs": _PodsWatch()}
        for name, watch in watches.items():
            watch.resource = Resource(name, f"/{name}")
        follower.watchers = list(watches.values())  # type: ignore[arg-type]
        follower.primed = True
        _kept(follower).owners = {k: {"kind": k[0]} for k in (rs, jobs, deployment)}
        return follower, watches

    follower, _ = keeping()
    assert set(_kept(follower).owners) == {rs, jobs}  # Deployments: no watch, none kept
    follower.changes.put(
        Change("replicasets", "MODIFIED", Row(name="web-2", namespace="a", version="9"))
    )
    follower.changes.put(
        Change("pods", "MODIFIED", Row(name="x", namespace="a", uid="u", node="n"))
    )
    assert set(_kept(follower).owners) == {rs, jobs}  # another owner's change, a pod's
    follower.changes.put(
        Change("replicasets", "MODIFIED", Row(name="web-1", namespace="a", version="9"))
    )
    assert set(_kept(follower).owners) == {jobs}
    for gap in ("expired", "broken"):
        follower, _ = keeping()
        follower.changes.put(Change("jobs", gap))
        assert set(_kept(follower).owners) == {rs}
    follower, _ = keeping()
    follower.changes.put(Change("jobs", "DELETED", Row()))  # an object it could not read
    assert set(_kept(follower).owners) == {rs}
    follower, watches = keeping()
    watches["jobs"].primes += 1  # started over: changes between unseen
    assert set(_kept(follower).owners) == {rs}
    follower, watches = keeping()
    watches["replicasets"].version = ""  # down: listing again
    assert set(_kept(follower).owners) == {jobs}
    follower, watches = keeping()
    watches["replicasets"].stopping.set()  # refused once running
    assert set(_kept(follower).owners) == {jobs}
    follower, watches = keeping()
    watches["pods"].primes += 1
    assert _kept(follower) == Kept()


def test_a_pod_being_deleted_read_whole_is_kept_until_a_change_to_it_is_seen() -> None:
    """Kept.whole (a Terminating pod on a node not examined, read whole): a change to another
    pod keeps it; a change to it, whatever its node, drops it (the next read asks for it)."""
    follower, _, kept = _keeping(_dump("during"))
    kept.whole = {("a", "held"): {"kind": "Pod"}, ("b", "stuck"): {"kind": "Pod"}}
    row = Row(name="held", namespace="a", uid="u-held", version="9", node="healthy")
    follower.changes.put(Change("pods", "MODIFIED", replace(row, name="other", uid="u-o")))
    assert set(_kept(follower).whole) == {("a", "held"), ("b", "stuck")}
    follower.changes.put(Change("pods", "MODIFIED", row))
    assert set(_kept(follower).whole) == {("b", "stuck")}


def test_an_owner_kind_with_a_watch_left_out_keeps_none() -> None:
    """With -n, a kind's watch may be refused in one namespace and run in another: what the
    refused one covers no change could drop, so no owner of that kind is kept."""
    follower = Follower(None, ("a", "b"), ())  # type: ignore[arg-type]
    watches = [_PodsWatch(), _PodsWatch()]
    watches[1].resource = Resource("jobs", "/apis/batch/v1/namespaces/a/jobs")
    follower.watchers = watches  # type: ignore[assignment]
    follower.primed = True
    follower.skipped.append("jobs")  # namespace b's: refused at the start
    _kept(follower).owners = {("Job", "b", "j"): {}, ("Job", "a", "j"): {}}
    assert _kept(follower).owners == {}


def test_the_nodes_read_are_kept_and_each_node_a_change_names_is_read_again() -> None:
    """Kept.nodes (nodes_read.read_nodes takes them instead of the Node list): a Node added,
    changed or deleted is read again by name; a change the watch of Nodes cannot name (a row
    without one, `expired`, `broken`), that watch started over, down, or none at all, and a gap
    in the watch of pods, keep no Node."""

    def keeping(watched: bool = True) -> tuple[Follower, dict[str, _PodsWatch]]:
        follower = Follower(None, (), ())  # type: ignore[arg-type]
        watches = {"pods": _PodsWatch(), "nodes": _PodsWatch()}
        watches["nodes"].resource = Resource("nodes", "/api/v1/nodes")
        follower.watchers = [  # type: ignore[misc]
            w for n, w in watches.items() if watched or n != "nodes"
        ]
        follower.primed = True
        kept = _kept(follower)
        kept.nodes, kept.deleting = {"a": {}, "b": {}, "c": {}}, {}
        return follower, watches

    follower, _ = keeping()
    assert _kept(follower).nodes == {"a": {}, "b": {}, "c": {}} and not follower.kept.changed
    for kind, name in (("MODIFIED", "a"), ("DELETED", "b"), ("ADDED", "d")):
        follower.changes.put(Change("nodes", kind, Row(name=name, version="9", status="Ready")))
    follower.changes.put(
        Change("pods", "MODIFIED", Row(name="x", namespace="n", uid="u", node="c"))
    )
    kept = _kept(follower)
    assert kept.changed == {"a", "b", "d"} and kept.nodes is not None and "c" in kept.nodes
    assert kept.deleting is None  # a Node deleted: its pods are found by the scan again
    # a gap: every Node read again, and a Node deleted unseen may have left pods bound to none
    # (the pods being deleted scanned for again)
    for gap in (Change("nodes", "expired"), Change("nodes", "broken")):
        follower, _ = keeping()
        follower.changes.put(gap)
        kept = _kept(follower)
        assert kept.nodes is None and kept.deleting is None, gap
    follower, _ = keeping()
    follower.changes.put(Change("nodes", "MODIFIED"))  # a row it could not name
    assert _kept(follower).nodes is None
    follower, watches = keeping()
    watches["nodes"].primes += 1  # started over: changes between unseen
    assert _kept(follower).nodes is None and follower.kept.deleting is None
    follower, watches = keeping()
    watches["nodes"].alive = False  # down
    assert _kept(follower).nodes is None and follower.kept.deleting is None
    follower, _ = keeping(watched=False)
    assert _kept(follower).nodes is None
    follower, watches = keeping()
    watches["pods"].primes += 1  # the watch of pods started over: nothing kept
    assert _kept(follower) == Kept()
