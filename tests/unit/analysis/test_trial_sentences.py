"""Sentences a first-time on-call trial found false (seventeenth session), on snapshots recorded
from the real control plane and their neighbours: an owner a kubectl List does not hold is not
called deleted; a node's trouble that the kubelet evicts nothing for is not said to evict; a
node no kubelet has reported for is not said to have a live kubelet; a pod not being deleted is
not said to be held by finalizers now, nor stopped when its node returns; a pod deleted on a
node with the out-of-service taint is not said to wait for the kubelet."""

from __future__ import annotations

import copy
import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from kubectl_nodefail import examples
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.findings import NodeFinding, PodFinding, Report
from kubectl_nodefail.common import attestation
from kubectl_nodefail.snapshot.model import (
    OWNERS_UNLISTED,
    Snapshot,
    format_time,
    from_items,
    load_dump,
)
from tests.unit.conftest import FIXTURES, load

Obj = dict[str, Any]


def _report(snap: Snapshot) -> Report:
    return diagnose(snap, snap.captured_at)


def _pod(report: Report, namespace: str, name: str) -> PodFinding:
    return next(p for p in report.pods if (p.namespace, p.name) == (namespace, name))


def _node(report: Report, name: str) -> NodeFinding:
    return next(n for n in report.nodes if n.name == name)


def _premises(pod: PodFinding, kind: str) -> set[tuple[str, str]]:
    return {
        (p.object.split("/")[0], p.field) for c in pod.claims if c.kind == kind for p in c.because
    }


# the bundled example (`--demo`), recorded from the real control plane
DEMO = Path(examples.__file__).parent / "statefulset-node-down.json"


def _as_kubectl_list(tmp_path: Path, kinds: tuple[str, ...]) -> Path:
    """The example's objects of `kinds` as `kubectl get ... -o json` writes them."""
    doc = json.loads(DEMO.read_text())
    items = [i for i in doc["items"] if i.get("kind") in kinds]
    path = tmp_path / "demo-list.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    captured = load_dump(str(DEMO)).captured_at.timestamp()
    os.utime(path, (captured, captured))  # its capture time is the file's (a List has none)
    return path


def test_an_owner_a_kubectl_list_does_not_hold_is_not_called_deleted(tmp_path: Path) -> None:
    """`kubectl get nodes,pods -A -o json` (the dump the tool's own hint offers) holds no
    owners: the StatefulSet's pod is its StatefulSet's, blocked, not an orphan nothing needs."""
    snap = load_dump(str(_as_kubectl_list(tmp_path, ("Node", "Pod"))))
    assert OWNERS_UNLISTED in snap.gaps
    report = _report(snap)
    db = _pod(report, "scenario-down", "db-0")
    why = " ".join(c.text for c in db.claims if c.section == "why")
    assert "deleted" not in why and "is gone" not in db.replacement.summary
    assert db.replacement.state == "blocked" and db.action.code != "wait"
    assert "StatefulSet db gives each ordinal" in why  # named from its owner reference
    assert "podManagementPolicy is unknown (StatefulSet db not read)" in why
    assert ("Pod", "metadata.ownerReferences[kind=StatefulSet].name") in _premises(db, "blocks")
    # with its owners listed too, the same pod as from the dump
    whole = load_dump(str(_as_kubectl_list(tmp_path, ("Node", "Pod", "StatefulSet", "Lease"))))
    assert _pod(_report(whole), "scenario-down", "db-0").replacement.state == "blocked"


def test_a_list_without_the_gap_would_call_the_owner_deleted(tmp_path: Path) -> None:
    """What the gap guards against: the same objects as a snapshot that says nothing is
    missing read the absent owner as deleted (analysis/controllers/overrides.owner_gone)."""
    snap = load_dump(str(_as_kubectl_list(tmp_path, ("Node", "Pod"))))
    bare = from_items(
        [*snap.nodes, *snap.pods], snap.captured_at, source="a dump that read every owner"
    )
    assert "deleted" in " ".join(
        c.text for c in _pod(_report(bare), "scenario-down", "db-0").claims
    )


def test_a_node_problem_the_kubelet_evicts_nothing_for_is_not_said_to_evict() -> None:
    report = _report(load("finalizer-on-healthy-node"))
    node = next(n for n in report.nodes if n.cause.code == "conditions")
    assert "KernelDeadlock" in node.cause.summary
    assert "may evict" not in node.action.summary
    assert "the kubelet evicts no pod for them" in node.action.summary


@pytest.mark.parametrize("pressure", ["MemoryPressure", "DiskPressure", "PIDPressure"])
def test_a_pressure_the_kubelet_evicts_for_is_named(pressure: str) -> None:
    doc = json.loads((FIXTURES / "finalizer-on-healthy-node.json").read_text())
    items = copy.deepcopy(doc["items"])
    snap0 = load("finalizer-on-healthy-node")
    name = next(n.name for n in _report(snap0).nodes if n.cause.code == "conditions")
    node = next(i for i in items if i.get("kind") == "Node" and i["metadata"]["name"] == name)
    for cond in node["status"]["conditions"]:
        if cond["type"] in ("KernelDeadlock", pressure):
            cond["status"] = "True" if cond["type"] == pressure else "False"
    snap = from_items(items, snap0.captured_at, server_version=doc.get("serverVersion"))
    found = _node(_report(snap), name)
    assert f"relieve the pressure ({pressure}: the kubelet evicts pods" in found.action.summary


def test_a_node_no_kubelet_reported_for_is_not_said_to_have_a_live_kubelet() -> None:
    node = _node(_report(load("node-without-status")), "rules-ghost")
    assert node.cause.code == "no-ready-condition"
    assert "kubelet is alive" not in node.action.summary
    assert "no kubelet has posted status for this node yet" in node.action.summary
    assert "--node-startup-grace-period" in node.action.summary


def test_a_pod_not_being_deleted_is_not_held_by_its_finalizers_yet() -> None:
    """Never evicted (it tolerates the node's taints for ever), with a finalizer: back with
    its node it carries on; its finalizer matters only once it is deleted."""
    pod = _pod(_report(load("held-volumes-out-of-service")), "au-2064-106", "w-0")
    assert not pod.terminating and pod.finalizers
    assert pod.if_node_returns == "the pod carries on in place."
    assert "kubelet stops the containers" not in pod.if_node_returns
    assert "Once it is deleted, finalizers audit.nodefail/hold keep the object" in pod.meaning
    assert pod.action.code == "finalizer-held"
    assert "it is not being deleted yet" in pod.action.summary
    assert "has not removed them" not in pod.action.summary


def test_a_pod_deleted_on_an_out_of_service_node_is_force_deleted_by_podgc() -> None:
    pod = _pod(_report(load("out-of-service-applied")), "scenario-cleanup", "db-flaky-d-0")
    assert pod.terminating
    assert "PodGC force-deletes it on its next pass (every 20 s)" in pod.timeline
    assert "until the kubelet confirms" not in pod.timeline
    assert ("Node", "spec.taints[key=node.kubernetes.io/out-of-service].effect") in _premises(
        pod, "deletion"
    )
    assert "PodGC" in pod.action.summary  # what it advises says the same


@pytest.mark.parametrize("name", ["zone-partial-disruption", "master-disruption"])
def test_every_offer_to_delete_a_node_under_the_brake_says_to_rule_out_the_network(
    name: str,
) -> None:
    """Deleting a Node lets PodGC force-delete every pod bound to it: while the brake holds
    (a zone disrupted), each suggestion offering it opens with the brake's caveat, as those
    offering the taint or a force delete do."""
    report = _report(load(name))
    assert report.brake is not None
    actions = [n.action for n in report.nodes if n.failed] + [p.action for p in report.pods]
    offering = [a for a in actions if a is not None and "delete the Node" in a.summary]
    assert offering
    assert all(a.summary.startswith("first rule out the network") for a in offering), [
        a.summary for a in offering if not a.summary.startswith("first rule out")
    ]


def test_a_volume_no_pod_object_uses_is_dated_not_waited_on() -> None:
    """No pod object on the dead node uses the volume any more (the old pod force-deleted): the
    controller's 6-minute wait has begun, so the timeline dates it (by the replacement's
    creation, which the StatefulSet makes only once the old object is gone) instead of "once no
    pod object uses it"."""
    pod = _pod(_report(load("volume-held-by-dead-node")), "scenario-volume-wait", "db-v2-0")
    assert "once no pod object" not in pod.timeline
    assert "no pod object on flaky-v2 uses it; force-detached by about " in pod.timeline
    assert "(6 minutes after 2026-11-30T20:58:31Z, by when the last pod object" in pod.timeline
    assert any(
        p.object.startswith("Pod/scenario-volume-wait/db-v2-0")
        and p.field == "metadata.creationTimestamp"
        for c in pod.claims
        if c.section == "eviction"
        for p in c.because
    )


def test_master_disruption_says_which_ready_nodes_it_does_not_count() -> None:
    """ "every zone has no Ready node" while Ready nodes are listed: those carry the label that
    keeps them out of zone states, and the sentence says so, resting on each one's label."""
    report = _report(load("master-disruption"))
    [note] = [c for c in report.cluster_claims if "every zone has no Ready node" in c.text]
    assert "4 nodes labelled node.kubernetes.io/exclude-disruption are left out" in note.text
    labelled = [
        p
        for p in note.because
        if p.field == "metadata.labels[node.kubernetes.io/exclude-disruption]"
    ]
    assert len(labelled) == 4


def test_freeing_a_pod_whose_replacement_exists_is_not_said_to_start_a_second_copy() -> None:
    """The demo's Job pod holds its Job open while its replacement already Succeeded: freeing
    it starts no copy (the old one may keep running, unseen); the StatefulSet pod's name is
    what blocks its replacement, so freeing it does start one."""
    report = _report(load_dump(str(DEMO)))
    job = _pod(report, "scenario-down", "batch-sm65f")
    assert job.replacement.pods and "a second copy starts" not in job.action.summary
    assert "beside its replacement" in job.action.summary
    assert job.action.if_still_running == attestation.IF_STILL_RUNNING_REPLACED
    db = _pod(report, "scenario-down", "db-0")
    assert not db.replacement.pods and "a second copy starts" in db.action.summary
    assert db.action.if_still_running == attestation.IF_STILL_RUNNING


@pytest.mark.parametrize("added_ago", [None, 30, 300, 3 * 3600])
def test_the_timeline_and_the_advice_agree_under_the_out_of_service_taint(
    added_ago: int | None,
) -> None:
    """The taint by hand (no timeAdded), within PodGC's time, and past it by minutes or hours:
    the timeline says what the advice does (PodGC's next pass; or, past its time, that PodGC is
    not removing it and the advice force-deletes)."""
    doc = json.loads((FIXTURES / "out-of-service-applied.json").read_text())
    items = copy.deepcopy(doc["items"])
    snap0 = load("out-of-service-applied")
    node = next(i for i in items if i.get("kind") == "Node" and i["metadata"]["name"] == "flaky-d")
    taint = next(t for t in node["spec"]["taints"] if t["key"].endswith("/out-of-service"))
    taint.pop("timeAdded", None)
    if added_ago is not None:
        taint["timeAdded"] = format_time(snap0.captured_at - timedelta(seconds=added_ago))
    snap = from_items(items, snap0.captured_at, server_version=doc.get("serverVersion"))
    pod = _pod(_report(snap), "scenario-cleanup", "db-flaky-d-0")
    if added_ago is not None and added_ago > 60:
        assert "past PodGC's time, and the object is still here" in pod.timeline
        assert "PodGC has not removed it" in pod.action.summary
        assert pod.action.code == "force-delete"
    else:
        assert "PodGC force-deletes it on its next pass (every 20 s)" in pod.timeline
        assert pod.action.code == "wait" and "PodGC force-deletes it" in pod.action.summary
        assert ("no timeAdded" in pod.timeline) is (added_ago is None)
