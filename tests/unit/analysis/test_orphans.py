"""A pod bound to a deleted Node (analysis/orphans.py), at any time after the deletion: the
recording of tests/e2e/test_cleanup_paths.py (a Node deleted, its pods not yet removed by PodGC)
with the node lifecycle controller's RemovingNode Event set at any age up to hours, with and
without a leader that took over after it. Within PodGC's 40-80 s and its slack the pod is
waited for with its time; past them it is passed over, said so, and not waited for."""

from __future__ import annotations

import copy
import json
from datetime import datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kubectl_nodefail.analysis import orphans, summary
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.facts import PODGC_SLACK_SECONDS
from kubectl_nodefail.render import render, words
from kubectl_nodefail.snapshot.model import format_time, from_items, parse_time
from tests.oracles import premises
from tests.unit.conftest import FIXTURES, as_read

GONE = "flaky-c"  # the Node test_cleanup_paths deletes


def _doc(removed_ago: int | None, leader_ago: int | None, other_node: bool) -> dict[str, Any]:
    doc = json.loads((FIXTURES / "node-deleted.json").read_text())
    captured = parse_time(doc["capturedAt"])
    assert captured is not None
    if removed_ago is not None:
        stamp = format_time(captured - timedelta(seconds=removed_ago))
        doc["items"].append(
            {
                "kind": "Event",
                "metadata": {"name": f"{GONE}.removing", "namespace": "default"},
                "involvedObject": {"kind": "Node", "name": "flaky-b" if other_node else GONE},
                "reason": "RemovingNode",
                "message": f"Node {GONE} event: Removing Node {GONE} from Controller",
                "source": {"component": "node-controller"},
                "firstTimestamp": stamp,
                "lastTimestamp": stamp,
                "count": 1,
                "type": "Normal",
            }
        )
    if leader_ago is not None:
        doc["items"].append(
            {
                "kind": "Lease",
                "metadata": {"name": "kube-controller-manager", "namespace": "kube-system"},
                "spec": {
                    "holderIdentity": "cp-1_5b0c",
                    "acquireTime": format_time(captured - timedelta(seconds=leader_ago)),
                    "renewTime": format_time(captured),
                    "leaseDurationSeconds": 15,
                },
            }
        )
    return doc


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    removed_ago=st.none() | st.integers(0, 4 * 3600),
    leader_ago=st.none() | st.integers(0, 5 * 3600),
    other_node=st.booleans(),
)
@example(removed_ago=120, leader_ago=None, other_node=False)  # to the second: not yet over
@example(removed_ago=122, leader_ago=None, other_node=False)
@example(removed_ago=3 * 3600, leader_ago=60, other_node=False)  # a new leader counts anew
@example(removed_ago=3 * 3600, leader_ago=4 * 3600, other_node=False)
@example(removed_ago=3 * 3600, leader_ago=None, other_node=True)  # another node's deletion
def test_a_pod_on_a_deleted_node_is_timed_from_the_deletion_and_past_it_said_passed_over(
    removed_ago: int | None, leader_ago: int | None, other_node: bool
) -> None:
    doc = _doc(removed_ago, leader_ago, other_node)
    captured = parse_time(doc["capturedAt"])
    assert captured is not None
    snap = as_read(doc, captured)
    report = diagnose(snap, captured)
    rows = [p for p in report.pods if p.node == GONE]
    assert rows and all(p.category == "on-deleted-node" for p in rows)
    assert not premises.check(doc, render.report_data(report))
    dated = removed_ago is not None and not other_node
    said = words.headline(report)
    for row in rows:
        assert row.action is not None
        if not dated:  # no date: the mechanism, its time counted from a deletion not known
            assert "passes it over" not in row.explanation
            assert row.action.code == "wait" and row.action.until is None
            assert "after the node's deletion;" in row.action.summary
            assert summary.next_step(row, captured) == "PodGC removes"
            assert "bound to a deleted node: PodGC removes them" in said
            continue
        assert removed_ago is not None
        removed_at = parse_time(format_time(captured - timedelta(seconds=removed_ago)))
        assert removed_at is not None
        # PodGC counts from the latest of the deletion, the pod's creation (a pod bound to the
        # name later) and a later leader's start
        [item] = [i for i in doc["items"] if i["metadata"].get("uid") == row.uid]
        created = parse_time(item["metadata"]["creationTimestamp"])
        assert created is not None
        start = max(removed_at, created)
        acquired = None
        if leader_ago is not None:
            acquired = parse_time(format_time(captured - timedelta(seconds=leader_ago)))
            assert acquired is not None
            start = max(start, acquired)
        due = start + timedelta(seconds=orphans.PODGC_WITHIN_SECONDS)
        over = (captured - due).total_seconds() > PODGC_SLACK_SECONDS
        assert f"which was at {format_time(removed_at)}" in row.explanation
        by_leader = acquired is not None and acquired == start and start > max(removed_at, created)
        assert ("a leader took over after it" in row.explanation) is by_leader
        by_pod = created > removed_at and not by_leader
        assert ("the pod was made after it" in row.explanation) is by_pod
        if over:
            assert "passes it over" in row.explanation, row.explanation
            assert row.action.code == "investigate" and row.action.until is None
            assert "has not removed it" in row.action.summary
            assert summary.next_step(row, captured) == "not removed (PodGC)"
            assert "PodGC has not removed them long after it" in said  # two pods there
        else:
            assert "passes it over" not in row.explanation
            assert row.action.code == "wait" and row.action.until == due
            assert f"by {format_time(due)}" in row.action.summary
            assert summary.next_step(row, captured) == "PodGC removes"
            assert "bound to a deleted node: PodGC removes them" in said


def test_the_newest_removal_dates_it() -> None:
    """A Node deleted, registered again and deleted again: the newest RemovingNode counts."""
    doc = _doc(3 * 3600, None, False)
    captured = parse_time(doc["capturedAt"])
    assert captured is not None
    newer = copy.deepcopy(doc["items"][-1])
    newer["metadata"]["name"] += "-2"
    newer["lastTimestamp"] = format_time(captured - timedelta(seconds=30))
    doc["items"].append(newer)
    snap = from_items(doc["items"], captured, source="g")
    found = orphans.removed(snap, GONE)
    assert found is not None and found[0] == parse_time(newer["lastTimestamp"])
    assert orphans.removed(snap, "flaky-b") is None
    assert isinstance(found[0], datetime)


def test_recorded_a_running_pod_on_a_deleted_node_past_podgc_time() -> None:
    """Recorded (tests/e2e/test_podgc_off.py): kube-controller-manager without its podgc
    controller, a Deployment's Running pod whose Node was deleted two minutes before: found
    (no deletion, found by the node its row names), passed over, and its replacement comes when
    PodGC deletes it, not at an eviction that never comes to a pod on no node."""
    from kubectl_nodefail.snapshot.model import load_dump

    snap = load_dump(str(FIXTURES / "podgc-off-orphan.json"))
    report = diagnose(snap, snap.captured_at)
    [row] = [p for p in report.pods if p.category == "on-deleted-node"]
    assert not row.terminating and row.node == "orphaned-o1"
    assert "passes it over" in row.explanation and row.action.code == "investigate"
    assert row.replacement.summary == "none yet: created when the pod is deleted by PodGC"
    doc = json.loads((FIXTURES / "podgc-off-orphan.json").read_text())
    assert not premises.check(doc, render.report_data(report))


def test_a_pod_not_yet_deleted_on_a_deleted_node_is_replaced_when_podgc_deletes_it() -> None:
    """The recording of a Node deleted under Terminating pods, those pods' deletion taken off:
    a StatefulSet's pod is created again as soon as PodGC force-deletes the object (grace 0:
    it goes at once), a Deployment's replaced then; nothing speaks of an eviction."""
    doc = _doc(30, None, False)
    for item in doc["items"]:
        if item["kind"] == "Pod" and item["spec"].get("nodeName") == GONE:
            item["metadata"].pop("deletionTimestamp", None)
            item["metadata"].pop("deletionGracePeriodSeconds", None)
    captured = parse_time(doc["capturedAt"])
    assert captured is not None
    snap = as_read(doc, captured)
    report = diagnose(snap, captured)
    rows = {p.name.split("-")[0]: p for p in report.pods if p.node == GONE}
    assert set(rows) == {"db", "web"} and not any(p.terminating for p in rows.values())
    assert rows["web"].replacement.summary == "none yet: created when the pod is deleted by PodGC"
    assert rows["db"].replacement.state == "not-yet"
    assert "as soon as PodGC force-deletes the object" in rows["db"].replacement.summary
    for row in rows.values():
        assert "evict" not in row.replacement.summary + row.explanation
    assert not premises.check(doc, render.report_data(report))


def _orphaned(name: str, affinity: bool = False) -> tuple[dict[str, Any], Any]:
    """A recording with every not-Ready Node object taken out (their pods bound to deleted
    nodes), its PersistentVolumes given a node affinity naming one node if `affinity`."""
    doc = json.loads((FIXTURES / f"{name}.json").read_text())
    captured = parse_time(doc["capturedAt"])
    assert captured is not None

    def down(item: dict[str, Any]) -> bool:
        conditions = (item.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Ready" and c["status"] != "True" for c in conditions)

    doc["items"] = [i for i in doc["items"] if not (i["kind"] == "Node" and down(i))]
    for item in doc["items"]:
        if affinity and item["kind"] == "PersistentVolume":
            term = {"key": "kubernetes.io/hostname", "operator": "In", "values": ["flaky-a"]}
            item["spec"]["nodeAffinity"] = {
                "required": {"nodeSelectorTerms": [{"matchExpressions": [term]}]}
            }
    return doc, diagnose(as_read(doc, captured), captured)


def test_a_pod_on_a_deleted_node_is_replaced_as_podgc_frees_it_never_blocked_by_a_kubelet() -> None:
    """PodGC marks every pod bound to a deleted node Failed and force-deletes it, Terminating
    or not: a StatefulSet's name is free then (unless a finalizer keeps the object), a Job's
    podReplacementPolicy Failed and its completion are satisfied then. Nothing waits for a
    kubelet or an eviction; a volume whose node affinity restricts where it may be used is
    not said "elsewhere"."""
    for name in ("node-down-after-eviction", "three-nodes-down", "rwo-volume-on-dead-node"):
        doc, report = _orphaned(name)
        orphans_ = [p for p in report.pods if p.category == "on-deleted-node"]
        assert orphans_, name
        for row in orphans_:
            said = row.replacement.summary
            assert "evict" not in said and "kubelet" not in said, (name, row.name, said)
            assert row.replacement.state != "blocked", (name, row.name, said)
        assert not premises.check(doc, render.report_data(report))
    doc, report = _orphaned("node-down-after-eviction")
    rows = {p.name: p for p in report.pods if p.category == "on-deleted-node"}
    assert "elsewhere as soon as PodGC force-deletes the object" in rows["db-0"].replacement.summary
    assert "PodGC marks it Failed" in rows["batch-pfp-h74wl"].replacement.summary
    assert "Job batch is Complete once PodGC marks" in rows["batch-sm65f"].replacement.summary
    doc, report = _orphaned("rwo-volume-on-dead-node", affinity=True)
    [db] = [p for p in report.pods if p.name == "db-v1-0"]
    assert "elsewhere" not in db.replacement.summary
    assert "node affinity allows" in db.replacement.summary, db.replacement.summary
    assert not premises.check(doc, render.report_data(report))


def test_a_finalizer_keeps_a_statefulset_name_after_podgc() -> None:
    """PodGC's force delete leaves an object a finalizer holds: the name stays taken."""
    doc = json.loads((FIXTURES / "node-deleted.json").read_text())
    for item in doc["items"]:
        if item["kind"] == "Pod" and item["metadata"]["name"] == "db-flaky-c-0":
            item["metadata"]["finalizers"] = ["example.com/backup"]
    captured = parse_time(doc["capturedAt"])
    assert captured is not None
    report = diagnose(as_read(doc, captured), captured)
    [db] = [p for p in report.pods if p.name == "db-flaky-c-0"]
    assert db.replacement.state == "blocked", db.replacement.summary
    assert not premises.check(doc, render.report_data(report))
