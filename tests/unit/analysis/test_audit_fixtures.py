"""The wrong predictions the live audit found (tests/fixtures/audit/, each snapshot's
`notes.wrong`), diagnosed again: the prediction the control plane proved wrong is not made any
more. The judge's own phrase readers decide what a text predicts (tests/audit/judge.py)."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest

from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.findings import PodFinding
from kubectl_nodefail.render import render
from kubectl_nodefail.snapshot.model import format_time, load_dump
from tests.audit.judge import RETURN_PHRASES
from tests.oracles import premises
from tests.unit.conftest import FIXTURES

AUDIT = sorted((FIXTURES / "audit").glob("*.json"))
WRONG = re.compile(r"(?P<kind>[a-z-]+:[a-z-]+) (?P<ns>[a-z0-9-]+)/(?P<pod>[a-z0-9-]+): said")


def _wrong(path: Path) -> list[tuple[str, str]]:
    notes = json.loads(path.read_text())["notes"]["wrong"]
    return [(m["kind"], m["pod"]) for m in WRONG.finditer(notes)]


@pytest.mark.parametrize("path", AUDIT, ids=[p.name for p in AUDIT])
def test_a_prediction_the_control_plane_proved_wrong_is_not_made_again(path: Path) -> None:
    wrong = _wrong(path)
    assert wrong, f"{path.name}: no wrong prediction recorded"
    snap = load_dump(str(path))
    data = render.report_data(diagnose(snap, snap.captured_at))
    pods = {p["name"]: p for p in data["pods"]}
    phrases = dict(RETURN_PHRASES)
    for kind, name in wrong:
        pod = pods[name]
        family, what = kind.split(":", 1)
        if family == "replacement":
            assert pod["replacement"]["state"] != what, (path.name, name, pod["replacement"])
        else:
            assert family == "if-node-returns"
            text = pod["ifNodeReturns"].lower()
            assert not phrases[what].search(text), (path.name, name, text)


@pytest.mark.parametrize("change", ["paused", "same-revision", "none"])
def test_an_old_replicasets_pod_carries_on_only_where_no_rollout_goes_on(
    change: str, tmp_path: Path
) -> None:
    """The neighbours of audit 2031/32 (a rollout's old ReplicaSet): with the Deployment paused,
    or its revision the ReplicaSet's, the pod carries on when the node returns; otherwise the
    rollout deletes it, and the sentence names both revisions (its premises)."""
    doc = json.loads((FIXTURES / "audit" / "seed2031-32-d2.json").read_text())
    deployment = next(i for i in doc["items"] if i["kind"] == "Deployment")
    if change == "paused":
        deployment["spec"]["paused"] = True
    elif change == "same-revision":
        deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "1"
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(doc))
    snap = load_dump(str(path))
    data = render.report_data(diagnose(snap, snap.captured_at))
    text = next(p for p in data["pods"] if p["name"] == "w-f58d87d88-q4jrr")["ifNodeReturns"]
    carries_on = dict(RETURN_PHRASES)["carries-on"].search(text.lower())
    if change == "none":
        assert not carries_on and "revision 1, the Deployment is at revision 2" in text, text
    else:
        assert carries_on, text


@pytest.mark.parametrize("change", ["none", "parallel", "on-delete", "partition", "same-revision"])
def test_a_statefulset_pod_on_an_old_revision_is_replaced_by_the_rolling_update(
    change: str, tmp_path: Path
) -> None:
    """A never-evicted StatefulSet pod on an older revision than the set's update revision
    (recorded: audit 3053/4, 2 replicas OrderedReady): when the node returns, the rolling update
    replaces it — an OrderedReady set once every pod is Running and Ready, a Parallel one from
    the highest ordinal. OnDelete, an ordinal below the partition, or the same revision: it
    carries on."""
    doc = json.loads((FIXTURES / "statefulset-rollout-node-down.json").read_text())
    sts = next(
        i
        for i in doc["items"]
        if i["kind"] == "StatefulSet" and i["metadata"]["namespace"] == "au-3053-4"
    )
    if change == "parallel":
        sts["spec"]["podManagementPolicy"] = "Parallel"
    elif change == "on-delete":
        sts["spec"]["updateStrategy"] = {"type": "OnDelete"}
    elif change == "partition":
        sts["spec"]["updateStrategy"]["rollingUpdate"] = {"partition": 1}
    elif change == "same-revision":
        sts["status"]["updateRevision"] = sts["status"]["currentRevision"]
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(doc))
    snap = load_dump(str(path))
    data = render.report_data(diagnose(snap, snap.captured_at))
    texts = {p["name"]: p["ifNodeReturns"] for p in data["pods"] if p["namespace"] == "au-3053-4"}
    phrases = dict(RETURN_PHRASES)
    if change in ("on-delete", "same-revision"):
        assert all(phrases["carries-on"].search(t) for t in texts.values()), texts
        return
    if change == "partition":  # w-0 is below the partition, w-1 at it
        assert phrases["carries-on"].search(texts["w-0"]), texts
        assert phrases["recreated"].search(texts["w-1"]), texts
        return
    for name, text in texts.items():
        assert not phrases["carries-on"].search(text), text
        assert f"recreates {name} with the new template" in text, text
        assert ("once every pod of StatefulSet w is Running and Ready" in text) == (
            change == "none"
        ), text


@pytest.mark.parametrize("replicas, state", [(2, "blocked"), (1, "blocked"), (0, "not-needed")])
def test_a_finished_statefulset_pod_a_finalizer_holds_blocks_its_name_while_wanted(
    replicas: int, state: str, tmp_path: Path
) -> None:
    """Audit 2048/93: a graceful shutdown failed both pods, the StatefulSet deleted them, and a
    finalizer keeps the objects: the StatefulSet makes w-0 again only once it is gone, so the
    pod blocks its ordinal (not "none needed"), as long as the StatefulSet still wants it."""
    doc = json.loads((FIXTURES / "audit" / "seed2048-93-d1.json").read_text())
    next(i for i in doc["items"] if i["kind"] == "StatefulSet")["spec"]["replicas"] = replicas
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(doc))
    snap = load_dump(str(path))
    report = diagnose(snap, snap.captured_at)
    pod = next(p for p in report.pods if p.name == "w-0")
    assert pod.replacement.state == state, pod.replacement
    blocked = state == "blocked"
    assert ("nothing waits on it" in pod.action.summary) != blocked, pod.action.summary
    assert ("creates w-0 again" in pod.if_node_returns) == blocked, pod.if_node_returns
    assert "the kubelet stops the containers" not in pod.if_node_returns


def test_a_finished_pod_a_finalizer_holds_blocks_its_owners_foreground_deletion(
    tmp_path: Path,
) -> None:
    """The neighbour of 2048/93 where the owner is being deleted in the foreground: the garbage
    collector waits for every dependent object to go, this finished one too."""
    doc = json.loads((FIXTURES / "audit" / "seed2048-93-d1.json").read_text())
    sts = next(i for i in doc["items"] if i["kind"] == "StatefulSet")
    sts["metadata"]["deletionTimestamp"] = doc["capturedAt"]
    sts["metadata"]["finalizers"] = ["foregroundDeletion"]
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(doc))
    snap = load_dump(str(path))
    pod = next(p for p in diagnose(snap, snap.captured_at).pods if p.name == "w-0")
    assert pod.replacement.state == "blocked", pod.replacement
    assert "being deleted in the foreground, waits for it to go" in pod.explanation
    assert "nothing waits on it" not in pod.action.summary
    assert "StatefulSet w's deletion no longer waits on it" in pod.if_node_returns
    # a reference without blockOwnerDeletion (written by hand): the deletion does not wait
    for ref in next(i for i in doc["items"] if i["metadata"].get("name") == "w-0")["metadata"][
        "ownerReferences"
    ]:
        ref.pop("blockOwnerDeletion", None)
    path.write_text(json.dumps(doc))
    snap = load_dump(str(path))
    pod = next(p for p in diagnose(snap, snap.captured_at).pods if p.name == "w-0")
    assert "waits for it to go" not in pod.explanation, pod.explanation


def _owner_deleted(tmp_path: Path, finalizers: list[str] | None) -> PodFinding:
    """Audit 2053/8 (a DaemonSet deleted in the foreground while its pod's node was down, the
    pod deleted by the garbage collector and Terminating), with the DaemonSet's finalizers as
    given (None: not being deleted)."""
    doc = json.loads((FIXTURES / "audit" / "seed2053-8-d2.json").read_text())
    ds = next(i for i in doc["items"] if i["kind"] == "DaemonSet")
    if finalizers is None:
        ds["metadata"].pop("deletionTimestamp", None)
        ds["metadata"].pop("finalizers", None)
    else:
        ds["metadata"]["finalizers"] = finalizers
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(doc))
    snap = load_dump(str(path))
    return next(p for p in diagnose(snap, snap.captured_at).pods if p.namespace == "au-2053-8")


@pytest.mark.parametrize(
    ("finalizers", "says", "returns"),
    [
        (
            ["foregroundDeletion"],
            "being deleted in the foreground",
            "finishes deleting DaemonSet w",
        ),
        (["orphan"], "removes this pod's owner reference", "owned by nothing"),
        ([], "the garbage collector deletes this pod", "nothing recreates it"),
        (None, "runs one pod per node", "creates a new one on the node"),
    ],
)
def test_a_daemonset_being_deleted_makes_no_pod_on_the_returning_node(
    tmp_path: Path, finalizers: list[str] | None, says: str, returns: str
) -> None:
    """Audit 2053/8: "the DaemonSet controller creates a new one on the node" was said of a
    DaemonSet being deleted in the foreground; its controller does nothing for a DaemonSet with
    a deletionTimestamp (syncDaemonSet), and no pod came. Each propagation, and not deleted."""
    pod = _owner_deleted(tmp_path, finalizers)
    assert says in pod.explanation, pod.explanation
    assert returns in pod.if_node_returns, pod.if_node_returns
    assert (pod.replacement.state == "blocked") == (finalizers == ["foregroundDeletion"])


@pytest.mark.parametrize(
    ("fixture", "kind"),
    [("statefulset-rollout-node-down", "StatefulSet"), ("job-pfp-before-eviction", "Job")],
)
@pytest.mark.parametrize(
    ("finalizers", "says"),
    [
        (["foregroundDeletion"], "being deleted in the foreground"),
        (["orphan"], "removes this pod's owner reference"),
    ],
)
def test_a_statefulset_or_job_being_deleted_replaces_nothing(
    tmp_path: Path, fixture: str, kind: str, finalizers: list[str], says: str
) -> None:
    """The siblings of 2053/8: the StatefulSet controller only updates the status of a set
    being deleted, the Job controller calls manageJob only while the Job is not being deleted:
    neither makes a pod for it, whatever the propagation."""
    doc = json.loads((FIXTURES / f"{fixture}.json").read_text())
    owner = next(i for i in doc["items"] if i["kind"] == kind)
    owner["metadata"]["deletionTimestamp"] = doc["capturedAt"]
    owner["metadata"]["finalizers"] = finalizers
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(doc))
    snap = load_dump(str(path))
    name, namespace = owner["metadata"]["name"], owner["metadata"]["namespace"]
    pods = [
        p
        for p in diagnose(snap, snap.captured_at).pods
        if p.namespace == namespace
        and any(link.kind == kind and link.name == name for link in p.owner_chain)
    ]
    assert pods
    for pod in pods:
        assert says in pod.explanation and "creates no replacement" in pod.explanation
        assert pod.replacement.state in ("blocked", "not-wanted"), pod.replacement


@pytest.mark.parametrize("phase", ["Running", "Failed"])
def test_a_daemonset_pod_a_finalizer_holds_is_held_not_back_with_its_node(
    tmp_path: Path, phase: str
) -> None:
    """2053/8 with a finalizer of another controller on the Terminating pod, its containers
    running or already failed: the object stays past the node's return until the finalizer is
    removed, so neither "the kubelet finishes it when the node returns" nor "kubelet removes
    the object" is said; the advice is the finalizer's, and a finished one is told as finished
    (removed without its kubelet, kept only by the finalizer, the DaemonSet's deletion waiting
    on it)."""
    doc = json.loads((FIXTURES / "audit" / "seed2053-8-d2.json").read_text())
    pod = next(i for i in doc["items"] if i["kind"] == "Pod")
    pod["metadata"]["finalizers"] = ["example.com/hold"]
    pod["status"]["phase"] = phase
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(doc))
    snap = load_dump(str(path))
    found = next(p for p in diagnose(snap, snap.captured_at).pods if p.namespace == "au-2053-8")
    assert found.action.code == "finalizer-held", found.action
    assert "when the node returns" not in found.action.summary
    assert "stays until its finalizers are removed" in found.if_node_returns
    assert found.replacement.state == "blocked"
    if phase == "Running":  # what follows is said to come only once the finalizer is gone
        assert "Only then does what follows happen" in found.if_node_returns
    else:  # nothing left for a kubelet to stop or remove
        assert "removes the object" not in found.if_node_returns
        assert "DaemonSet w's deletion no longer waits on it" in found.if_node_returns


@pytest.mark.parametrize("policy", ["OrderedReady", "Parallel", "minReadySeconds"])
def test_an_ordered_sets_higher_ordinals_come_back_after_the_lower_ones_are_ready(
    policy: str, tmp_path: Path
) -> None:
    """Audit 2078/43 (recorded, cut to its namespace): an OrderedReady StatefulSet whose three
    pods were all on the dead node, Terminating. When the node returned, the kubelet removed
    them; the controller recreated w-0, and w-1 only once w-0 was Running and Ready; w-2 had not
    come back 43 s later. So the return says the higher ordinals come back once the lower ones
    are Running and Ready; a Parallel set recreates each at once."""
    doc = json.loads((FIXTURES / "statefulset-ordered-all-on-dead-node.json").read_text())
    sts = next(i for i in doc["items"] if i["kind"] == "StatefulSet")
    assert sts["spec"].get("podManagementPolicy", "OrderedReady") == "OrderedReady"
    if policy == "minReadySeconds":  # available: Ready for that long (isRunningAndAvailable)
        sts["spec"]["minReadySeconds"] = 300
    else:
        sts["spec"]["podManagementPolicy"] = policy
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(doc))
    snap = load_dump(str(path))
    report = diagnose(snap, snap.captured_at)
    said = {p.name: p.if_node_returns for p in report.pods}
    assert sorted(said) == ["w-0", "w-1", "w-2"]
    assert "once" not in said["w-0"], said["w-0"]
    if policy == "Parallel":
        assert not any("OrderedReady" in text for text in said.values()), said
        return
    if policy == "minReadySeconds":
        assert (
            "once w-0 to w-1 are Running and Ready (each for minReadySeconds, 300s)"
            in (said["w-2"])
        ), said["w-2"]
        return
    assert "recreates w-1 once w-0 is Running and Ready (OrderedReady" in said["w-1"], said["w-1"]
    assert "recreates w-2 once w-0 to w-1 are Running and Ready" in said["w-2"], said["w-2"]
    w2 = next(p for p in report.pods if p.name == "w-2")
    returns = next(c for c in w2.claims if c.kind == "if-node-returns")
    assert ("StatefulSet/au-2078-43/w", "spec.podManagementPolicy") in {
        (b.object, b.field) for b in returns.because
    }


def test_an_ordered_sets_higher_ordinal_with_grace_0_is_made_again_after_the_lower_ones(
    tmp_path: Path,
) -> None:
    """The same set, its pods not evicted yet and with grace period 0: the eviction removes the
    object at once, and w-2 is made again only once w-0 and w-1 are Running and Ready."""
    doc = json.loads((FIXTURES / "statefulset-ordered-all-on-dead-node.json").read_text())
    for item in doc["items"]:
        if item["kind"] == "Pod":
            item["metadata"].pop("deletionTimestamp", None)
            item["metadata"].pop("deletionGracePeriodSeconds", None)
            item["spec"]["terminationGracePeriodSeconds"] = 0
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(doc))
    snap = load_dump(str(path))
    rows = {p.name: p for p in diagnose(snap, snap.captured_at).pods}
    assert rows["w-0"].replacement.state == "not-yet", rows["w-0"].replacement
    assert "once" not in rows["w-0"].replacement.summary
    assert rows["w-2"].replacement.summary.endswith(
        "(grace period 0), once w-0 to w-1 are Running and Ready (OrderedReady creates one pod "
        "at a time, the lowest ordinal first)"
    ), rows["w-2"].replacement.summary


def test_a_recreate_rollout_waits_on_a_pods_phase_not_on_its_object() -> None:
    """Audit 2079/124 (recorded, cut to its namespace): a Recreate rollout waits on its old pods
    while they are neither Failed nor Succeeded (recreate.go oldPodsRunning), not while their
    objects exist: the ReplicaSet's Pending replacement, on no node and deleted by the rollout,
    was marked Failed by PodGC 8 s later and kept by its finalizer; the pod on the failed node
    went Failed under the out-of-service taint, still kept; then the new template's pod came."""
    snap = load_dump(str(FIXTURES / "recreate-rollout-unscheduled-terminating.json"))
    rows = {p.name[-5:]: p for p in diagnose(snap, snap.captured_at).pods}
    unbound, dead = rows["hxk8x"], rows["kdptr"]
    assert unbound.node == "" and dead.node_failed
    for row in (unbound, dead):
        assert "while this pod is neither Failed nor Succeeded" in row.replacement.summary, (
            row.replacement.summary
        )
        assert "while this pod exists" not in row.replacement.summary
    assert "until PodGC marks it Failed (it is on no node" in unbound.explanation
    assert "until its kubelet confirms" not in unbound.explanation, unbound.explanation
    assert "until its kubelet ends it, or PodGC marks it Failed" in dead.explanation
    # the rollout needs the pod ended, not its object gone (a finalizer keeps it): the return
    # says so; the pod on no node is ended by PodGC, not by any node's return
    assert "What follows needs only the pod ended (Failed or Succeeded)" in dead.if_node_returns
    assert "Only then" not in dead.if_node_returns, dead.if_node_returns
    # and nothing there says the object goes: its finalizer keeps it (the quick audit, 17/4)
    assert "its finalizers keep the object" in dead.if_node_returns, dead.if_node_returns
    assert "removes the object" not in dead.if_node_returns
    returns = [c.text for c in unbound.claims if c.kind == "if-node-returns"]
    assert all(t.startswith("it is on no node, so no node's return ends it") for t in returns)


@pytest.mark.parametrize("later", [30, 3 * 3600])
def test_podgc_not_marking_the_unbound_pod_failed_long_after_is_said(later: int) -> None:
    """The same recording read `later` seconds on, the unbound pod still Pending (PodGC marked
    it Failed 8 s after the reading on the real control plane): within PodGC's pass and slack
    the rollout waits for that pass; hours on, the pass is said to have not come."""
    snap = load_dump(str(FIXTURES / "recreate-rollout-unscheduled-terminating.json"))
    at = snap.captured_at + timedelta(seconds=later)
    report = diagnose(snap, at)
    unbound = next(p for p in report.pods if p.name.endswith("hxk8x"))
    said = "the podgc controller does not run or passes it over"
    assert "until PodGC marks it Failed (it is on no node" in unbound.explanation
    assert (said in unbound.explanation) == (later > 60), unbound.explanation
    raw = json.loads((FIXTURES / "recreate-rollout-unscheduled-terminating.json").read_text())
    assert premises.check(raw, render.report_data(report)) == []


def test_podgc_is_given_its_pass_from_a_new_leaders_start() -> None:
    """The unbound pod read 3 h on under a leader that took over 10 s before: PodGC runs in it,
    and its first pass is still to come."""
    snap = load_dump(str(FIXTURES / "recreate-rollout-unscheduled-terminating.json"))
    at = snap.captured_at = snap.captured_at + timedelta(hours=3)
    [lease] = [x for x in snap.leases if x["metadata"].get("namespace") == "kube-system"]
    lease["spec"].update(
        acquireTime=format_time(at - timedelta(seconds=10)), renewTime=format_time(at)
    )
    unbound = next(p for p in diagnose(snap, at).pods if p.name.endswith("hxk8x"))
    assert "until PodGC marks it Failed (it is on no node" in unbound.explanation
    assert "the podgc controller does not run" not in unbound.explanation
