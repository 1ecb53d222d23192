"""Every claim's premises hold in the raw snapshot: on every recorded fixture, and on snapshots
generated from them by changing what a sentence's premise depends on (owners' desired counts,
ordinal ranges, finalizers, phases, finished Jobs, scheduler messages)."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_nodefail.analysis.claims import KINDS, SECTIONS, text_of
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.findings import Report
from kubectl_nodefail.render import render
from kubectl_nodefail.snapshot.model import from_items, parse_time
from tests.oracles import premises
from tests.unit.conftest import FIXTURES

ALL = sorted(FIXTURES.rglob("*.json"))
Obj = dict[str, Any]


def _raw(path: Path) -> Obj:
    return json.loads(path.read_text())


def _report(doc: Obj) -> Report:
    captured = parse_time(doc["capturedAt"])
    assert captured is not None
    snap = from_items(
        copy.deepcopy(doc["items"]),
        captured,
        server_version=doc.get("serverVersion"),
        gaps=list(doc.get("gaps") or []),
        source="generated",
    )
    return diagnose(snap, captured, timelines=True)


def _false(doc: Obj, report: Report) -> list[str]:
    return [str(f) for f in premises.check(doc, render.report_data(report))]


@pytest.mark.parametrize("path", ALL, ids=[str(p.relative_to(FIXTURES)) for p in ALL])
def test_every_premise_holds_on_the_recorded_fixtures(path: Path) -> None:
    doc = _raw(path)
    report = _report(doc)
    assert _false(doc, report) == []
    for pod in report.pods:
        for c in pod.claims:
            assert c.kind in KINDS and c.section in SECTIONS
            assert c.because, f"{pod.namespace}/{pod.name}: claim {c.kind} has no premise"
        if pod.claims:  # the sentences are the claims' texts, nothing else
            assert pod.explanation == text_of(pod.claims, "why")
            assert pod.timeline == text_of(pod.claims, "eviction")
            assert pod.storage == [c.text for c in pod.claims if c.section == "storage"]
        # a pod's suggestion names the claims it was decided from (and its node's cause)
        kinds = {c.kind for c in pod.claims if c.section != "returns"}
        assert pod.action.rests_on, f"{pod.namespace}/{pod.name}: {pod.action.summary}"
        assert set(pod.action.rests_on) <= kinds | {"cause"}, pod.action.rests_on
        assert "cause" in pod.action.rests_on or not pod.node_failed, pod.action.rests_on
    for zone in report.zones:  # the zone line is its claim, with the counts it rests on
        assert zone.explanation == text_of(zone.claims, "zone") and zone.claims[0].because
    assert report.cluster == [c.text for c in report.cluster_claims]
    assert all(c.because for c in report.cluster_claims)
    assert report.brake is None or report.brake.because
    assert report.headline is not None and report.headline.because
    ready = next(p.value for p in report.headline.because if p.field != "count")
    assert report.headline.text.startswith(f"{report.nodes_total - ready} of ")
    for node in report.nodes:  # a node's suggestion rests on facts the checker re-reads
        assert node.action is not None and node.action.because, node.name
    for name, found in (report.timelines or {}).items():  # so does every timeline entry
        for entry in found.entries:
            assert entry.because, f"{name}: {entry.kind} {entry.summary}"
    _serving_counted_right(doc, report)


def _serving_counted_right(doc: Obj, report: Report) -> None:
    """The outage view's SERVING (`workloads[].serving`): a claim whose numbers are the cell's,
    and an independent count over the raw dump gives the same."""
    for w in report.workloads:
        if w.serving is None:
            assert w.ready is None and w.wanted is None, w
            continue
        assert w.serving.kind == "serving" and w.serving.because, w
        kind, _, name = w.owner.partition("/")
        counted = _serving(doc, kind, w.namespace, name)
        assert counted == (w.ready, w.wanted), (w.serving.text, counted)
        pods = "pod" if w.ready == 1 else "pods"
        said = f"{w.owner}: {w.ready} {pods} Ready on Ready nodes, {w.wanted} wanted"
        assert w.serving.text == said


def _serving(doc: Obj, kind: str, namespace: str, name: str) -> tuple[int, int] | None:
    """An owner's pods not deleted, Running and Ready on a Node whose Ready is True, and its
    spec.replicas (1 when unset), read from the raw dump without the analysis."""
    items = [i for i in doc["items"] if isinstance(i, dict)]

    def uid(i: Obj) -> str:
        return str(i["metadata"].get("uid"))

    def owned_by(i: Obj, uids: set[str]) -> bool:
        return any(r.get("uid") in uids for r in i["metadata"].get("ownerReferences") or [])

    def ready(i: Obj) -> bool:
        conditions = (i.get("status") or {}).get("conditions") or []
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)

    owner = next(
        (
            i
            for i in items
            if i.get("kind") == kind
            and i["metadata"].get("namespace") == namespace
            and i["metadata"].get("name") == name
        ),
        None,
    )
    if owner is None:
        return None
    uids = {uid(owner)}
    if kind == "Deployment":
        uids = {uid(i) for i in items if i.get("kind") == "ReplicaSet" and owned_by(i, uids)}
    nodes = {i["metadata"]["name"] for i in items if i.get("kind") == "Node" and ready(i)}
    serving = [
        p
        for p in items
        if p.get("kind") == "Pod"
        and owned_by(p, uids)
        and not p["metadata"].get("deletionTimestamp")
        and (p.get("status") or {}).get("phase") == "Running"
        and (p.get("spec") or {}).get("nodeName") in nodes
        and ready(p)
    ]
    return len(serving), (owner.get("spec") or {}).get("replicas", 1)


def test_the_checker_catches_a_false_serving_count() -> None:
    """SERVING's premises name every pod of the owner: a pod added to it, or one whose Ready
    condition or node changed, makes the claim false."""
    doc = _raw(FIXTURES / "node-down-after-eviction.json")
    data = render.report_data(_report(doc))
    (web,) = [w for w in data["workloads"] if w["owner"] == "Deployment/web"]
    assert web["ready"] == 1 and web["serving"]["kind"] == "serving"
    assert premises.check(doc, data) == []
    changed = copy.deepcopy(doc)
    serving = next(
        i
        for i in changed["items"]
        if i.get("kind") == "Pod"
        and i["metadata"].get("namespace") == web["namespace"]
        and i["metadata"]["name"].startswith("web-")
        and not i["metadata"].get("deletionTimestamp")
    )
    ready = next(c for c in serving["status"]["conditions"] if c["type"] == "Ready")
    ready["status"] = "False"
    found = premises.check(changed, data)  # the timeline's replacement-ready too
    assert ("serving", "status.conditions[type=Ready].status") in [(f.kind, f.field) for f in found]
    assert {f.field for f in found} == {"status.conditions[type=Ready].status"}
    extra = copy.deepcopy(serving)
    extra["metadata"]["name"] += "-another"
    changed["items"].append(extra)
    assert {f.field for f in premises.check(changed, data)} == {
        "status.conditions[type=Ready].status",
        "count",
    }


def test_the_checker_catches_a_false_timeline_entry() -> None:
    doc = _raw(FIXTURES / "node-down-after-eviction.json")
    data = render.report_data(_report(doc))
    entry = next(e for n in data["nodes"] for e in n["timeline"] if e["kind"] == "taint-added")
    entry["because"][0]["value"] = "2020-01-01T00:00:00Z"
    (found,) = premises.check(doc, data)
    assert found.kind == "timeline:taint-added" and "timeAdded" in found.field


def test_the_checker_catches_a_false_premise() -> None:
    doc = _raw(FIXTURES / "node-down-after-eviction.json")
    data = render.report_data(_report(doc))
    claim = next(c for p in data["pods"] for c in p["claims"] if c["because"])
    claim["because"][0]["value"] = "something the snapshot does not hold"
    found = premises.check(doc, data)
    assert len(found) == 1 and found[0].kind == claim["kind"]
    claim["because"][0]["object"] = "Pod/nowhere/nothing"
    assert not premises.check(doc, data)[0].found


def test_the_server_behaviour_applied_rests_on_the_servers_version() -> None:
    """The version sentences (serverBehaviour) are claims on the dump's serverVersion: another
    version in the dump makes them false; a dump without one (a kubectl List) says so."""
    from kubectl_nodefail.analysis.claims import DUMP_OBJECT

    assert premises.DUMP == DUMP_OBJECT
    doc = _raw(FIXTURES / "node-down-after-eviction.json")
    data = render.report_data(_report(doc))
    said = data["serverBehaviourClaims"]
    assert [c["text"] for c in said] == data["serverBehaviour"] and said
    assert premises.check(doc, data) == []
    other = {**doc, "serverVersion": "v1.26.13"}
    wrong = premises.check(other, data)
    assert {w.field for w in wrong} == {"serverVersion"} and len(wrong) == len(said)
    bare = {k: v for k, v in doc.items() if k != "serverVersion"}
    again = render.report_data(_report(bare))
    assert premises.check(bare, again) == []
    assert again["serverBehaviourClaims"][0]["because"][0]["value"] is None


def test_the_checker_reads_selectors_and_bracketed_keys() -> None:
    obj = {
        "metadata": {"annotations": {"kubernetes.io/config.mirror": "abc"}},
        "status": {"conditions": [{"type": "A", "status": "x"}, {"type": "B", "status": "y"}]},
    }
    assert premises.value_at(obj, "metadata.annotations[kubernetes.io/config.mirror]") == "abc"
    assert premises.value_at(obj, "status.conditions[type=B].status") == "y"
    assert premises.value_at(obj, "status.conditions[type=C].status") is None
    assert premises.value_at(obj, "spec.replicas") is None


# --- generated neighbours of the recorded situations -------------------------------------------

BASES = [
    FIXTURES / "node-down-after-eviction.json",
    FIXTURES / "node-down-before-eviction.json",
    FIXTURES / "dead-node-claims.json",
    FIXTURES / "rwo-volume-on-dead-node.json",
    FIXTURES / "audit" / "seed2026-184-d1.json",  # a Job's two pods evicted, none replaced yet
]
BASE_DOCS = {p.name: _raw(p) for p in BASES}


@st.composite
def neighbours(draw: st.DrawFn) -> Obj:
    """A recorded snapshot with the premises of its sentences changed: owners' replicas and
    ordinal start, Jobs finished, pods finished or held by finalizers, grace periods, and
    replacements' scheduler messages."""
    doc = copy.deepcopy(BASE_DOCS[draw(st.sampled_from(sorted(BASE_DOCS)))])
    items = doc["items"]
    owners = [i for i in items if i.get("kind") in ("ReplicaSet", "StatefulSet", "Job")]
    pods = [i for i in items if i.get("kind") == "Pod"]
    for owner in draw(st.lists(st.sampled_from(owners), max_size=3)) if owners else []:
        if owner["kind"] == "Job":
            spec, status = owner.setdefault("spec", {}), owner.setdefault("status", {})
            spec["parallelism"] = draw(st.integers(0, 3))
            spec["completions"] = draw(st.one_of(st.none(), st.integers(1, 4)))
            for count in ("active", "succeeded", "failed"):
                status[count] = draw(st.integers(0, 3))
            if draw(st.booleans()):
                spec.pop("podFailurePolicy", None)
                spec["podReplacementPolicy"] = "TerminatingOrFailed"
            managed = draw(st.sampled_from([None, "kubernetes.io/job-controller", "example.com/q"]))
            if managed is not None:
                spec["managedBy"] = managed
            owner["status"]["conditions"] = draw(
                st.sampled_from(
                    [
                        [],
                        [{"type": "Complete", "status": "True"}],
                        [{"type": "Failed", "status": "True"}],
                        [{"type": "Complete", "status": "False"}],
                    ]
                )
            )
        else:
            owner.setdefault("spec", {})["replicas"] = draw(st.integers(0, 4))
            if owner["kind"] == "StatefulSet" and draw(st.booleans()):
                owner["spec"]["ordinals"] = {"start": draw(st.integers(0, 2))}
    for pod in draw(st.lists(st.sampled_from(pods), max_size=4)):
        meta, status = pod["metadata"], pod.setdefault("status", {})
        change = draw(st.sampled_from(["finalizer", "finished", "grace", "unscheduled", "gone"]))
        if change == "gone":  # e.g. no replacement (yet)
            if pod in items:
                items.remove(pod)
        elif change == "finalizer":
            meta["finalizers"] = draw(
                st.sampled_from(
                    [
                        ["example.com/backup"],
                        ["batch.kubernetes.io/job-tracking"],
                        ["example.com/a", "batch.kubernetes.io/job-tracking"],
                        [],
                    ]
                )
            )
        elif change == "finished":
            status["phase"] = draw(st.sampled_from(["Succeeded", "Failed"]))
        elif change == "grace":
            meta["deletionGracePeriodSeconds"] = draw(st.sampled_from([0, 1, 30]))
        else:
            pod["spec"].pop("nodeName", None)
            status["phase"] = "Pending"
            status["conditions"] = [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": draw(
                        st.sampled_from(
                            [
                                "0/5 nodes are available: 1 node(s) had untolerated taint "
                                "{node.kubernetes.io/unreachable: }, 4 node(s) didn't match "
                                "pod anti-affinity rules. preemption: 0/5 nodes are available: "
                                "5 Preemption is not helpful for scheduling.",
                                "0/4 nodes are available: 4 Insufficient cpu.",
                                "0/7 nodes are available: 2 node(s) had untolerated taint(s), "
                                "5 node(s) didn't match pod anti-affinity rules. no new claims "
                                "to deallocate, preemption: 0/7 nodes are available: 2 "
                                "Preemption is not helpful for scheduling, 5 No preemption "
                                "victims found for incoming pod.",
                                "something the scheduler never says",
                            ]
                        )
                    ),
                }
            ]
    return doc


SENTENCES_AND_PREMISES = [
    # (text that must not appear, in which field, unless this holds for the pod)
    (
        "the replacement keeps running",
        "if_node_returns",
        lambda p: p.replacement.state == "running",
    ),
    ("counts it as failed", "if_node_returns", lambda p: p.phase not in ("Succeeded", "Failed")),
    (
        "creates a replacement at once",
        "explanation",
        lambda p: p.replacement.state not in ("not-wanted",),
    ),
    ("Released only by", "explanation", lambda p: not _foreign(p.finalizers)),
    (
        "recreates",
        "if_node_returns",
        lambda p: p.replacement.state not in ("not-wanted", "not-needed"),
    ),
    (
        "carries on",  # the owner wants fewer: the pod is deleted, not carried on
        "if_node_returns",
        lambda p: p.replacement.state != "not-wanted",
    ),
    (
        "Once evicted",  # never evicted: no "once evicted" story
        "explanation",
        lambda p: "never evicted" not in p.replacement.summary,
    ),
    (
        "healthy nodes carry taints",
        "explanation",
        lambda p: False,  # a cause is the scheduler's words, never this inference
    ),
]


def _job_counts(doc: Obj, namespace: str, name: str) -> tuple[int, int] | None:
    """(wanted active pods, active) of the pod's Job, read from the raw snapshot: wanted is
    min(parallelism, completions - succeeded), or parallelism until a first success."""
    pods = [
        i
        for i in doc["items"]
        if i.get("kind") == "Pod"
        and i["metadata"].get("namespace") == namespace
        and i["metadata"]["name"] == name
    ]
    refs = [
        r for p in pods for r in p["metadata"].get("ownerReferences") or [] if r["kind"] == "Job"
    ]
    jobs = [
        i
        for i in doc["items"]
        if i.get("kind") == "Job" and refs and i["metadata"].get("uid") == refs[0]["uid"]
    ]
    if not jobs:
        return None
    spec, status = jobs[0].get("spec") or {}, jobs[0].get("status") or {}
    par = 1 if spec.get("parallelism") is None else spec["parallelism"]
    done = status.get("succeeded") or 0
    if spec.get("completions") is None:
        wanted = par if done == 0 else 0
    else:
        wanted = max(0, min(par, spec["completions"] - done))
    # the Job controller counts no pod with a deletionTimestamp (or finished) as active: a
    # status written before a deletion still counts it (2046/165)
    live = [
        i
        for i in doc["items"]
        if i.get("kind") == "Pod"
        and any(
            r.get("uid") == jobs[0]["metadata"].get("uid")
            for r in i["metadata"].get("ownerReferences") or []
        )
        and not i["metadata"].get("deletionTimestamp")
        and (i.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    ]
    return wanted, min(status.get("active") or 0, len(live))


def _foreign(finalizers: list[str]) -> bool:
    return any(f != "batch.kubernetes.io/job-tracking" for f in finalizers)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(neighbours())
def test_generated_neighbours_make_no_claim_with_a_false_premise(doc: Obj) -> None:
    report = _report(doc)
    assert _false(doc, report) == []
    _serving_counted_right(doc, report)
    for pod in report.pods:
        for text, where, premise in SENTENCES_AND_PREMISES:
            said = getattr(pod, where)
            if text in said:
                assert premise(pod), f"{pod.namespace}/{pod.name} {where}: {said}"
        replacement_text = pod.replacement.summary + " " + pod.replacement.pending_reason
        assert "healthy nodes carry taints" not in replacement_text
        if pod.controller in ("job", "cronjob") and pod.replacement.state in (
            "not-yet",
            "not-wanted",
        ):
            counts = _job_counts(doc, pod.namespace, pod.name)
            if "after its pod-failure backoff" in replacement_text:
                assert counts is not None and counts[1] < counts[0], (replacement_text, counts)
            if "none needed" in replacement_text:
                assert counts is not None and counts[1] >= counts[0], (replacement_text, counts)
        if pod.terminating and pod.phase in ("Succeeded", "Failed") and pod.node_failed:
            # A finished pod: nothing waits on it; no taint, no force delete is advised.
            assert pod.action.code in ("wait", "finalizer-held"), pod.action
            assert "past its grace period" not in pod.meaning


def test_a_finished_pod_held_by_a_finalizer_is_not_failed_work() -> None:
    doc = copy.deepcopy(BASE_DOCS["node-down-after-eviction.json"])
    report = _report(doc)
    target = next(p for p in report.pods if p.controller == "job" and p.terminating)
    raw = next(
        i for i in doc["items"] if i.get("kind") == "Pod" and i["metadata"]["name"] == target.name
    )
    raw["status"]["phase"] = "Succeeded"
    raw["metadata"]["finalizers"] = ["example.com/archive"]
    raw["metadata"]["deletionGracePeriodSeconds"] = 0
    pod = next(p for p in _report(doc).pods if p.name == target.name)
    assert "counts it as failed" not in pod.if_node_returns
    assert "as soon as the pod is Terminating" not in pod.explanation
    assert "past its grace period" not in pod.meaning
    assert "only finalizers example.com/archive keep the object" in pod.meaning
    assert pod.replacement.state == "not-needed"
    assert pod.action.code == "finalizer-held" and "nothing waits on it" in pod.action.summary


def test_a_statefulset_pod_outside_the_replica_range_is_not_recreated() -> None:
    doc = copy.deepcopy(BASE_DOCS["node-down-after-eviction.json"])
    report = _report(doc)
    target = next(p for p in report.pods if p.controller == "statefulset" and p.terminating)
    sts = next(
        i
        for i in doc["items"]
        if i.get("kind") == "StatefulSet" and i["metadata"]["name"] == target.owner_chain[0].name
    )
    sts["spec"]["replicas"] = 0
    pod = next(p for p in _report(doc).pods if p.name == target.name)
    assert pod.replacement.state == "not-wanted"
    assert "recreates" not in pod.if_node_returns and "is not recreated" in pod.if_node_returns
    assert "outside that range" in pod.explanation
    assert pod.action.code == "wait"


def test_the_scheduler_message_is_quoted_not_inferred() -> None:
    from kubectl_nodefail.analysis.controllers import pending_reason

    pending = {
        "spec": {},
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "message": "0/5 nodes are available: 1 node(s) had untolerated taint "
                    "{node.kubernetes.io/unreachable: }, 4 node(s) didn't match pod "
                    "anti-affinity rules. preemption: 0/5 nodes are available: 5 Preemption "
                    "is not helpful for scheduling.",
                }
            ]
        },
    }
    reason = pending_reason(pending, "flaky-a")
    assert reason == (
        "the scheduler found no node: 1 node(s) had untolerated taint "
        "{node.kubernetes.io/unreachable: }; 4 node(s) didn't match pod anti-affinity rules"
    )


def test_a_live_jobs_missing_pod_is_coming_or_not_wanted() -> None:
    """A Job's evicted pod with no replacement yet (recorded: the audit's 2026/184): the Job
    wants 2 active pods and has 0, so its next pods come after its pod-failure backoff (failed
    2: within 10 s x 2^2); had it 2 active already, none would be needed."""
    doc = _raw(FIXTURES / "audit" / "seed2026-184-d1.json")
    report = _report(doc)
    stuck = [p for p in report.pods if p.namespace == "au-2026-184"]
    assert stuck and all(p.replacement.state == "not-yet" for p in stuck)
    assert {p.replacement.expected_by for p in stuck} == {
        report.captured_at + timedelta(seconds=40)
    }
    assert all(p.action.code == "wait" for p in stuck)
    job = next(i for i in doc["items"] if i.get("kind") == "Job")
    job["status"]["active"] = 2
    # a status counting 2 active pods the Job does not have (its pods are the 2 Terminating
    # ones: a status written before their deletion, 2046/165) is not believed ...
    stale = [p for p in _report(doc).pods if p.namespace == "au-2026-184"]
    assert [p.replacement.state for p in stale] == ["not-yet", "not-yet"]
    # ... two live pods of the Job are
    mine = [
        i
        for i in doc["items"]
        if i.get("kind") == "Pod" and i["metadata"].get("namespace") == "au-2026-184"
    ]
    for k, pod in enumerate(mine[:2]):
        live = copy.deepcopy(pod)
        live["metadata"].update(name=f"live-{k}", uid=f"live-{k}")
        live["metadata"].pop("deletionTimestamp", None)
        live["status"]["phase"] = "Running"
        doc["items"].append(live)
    again = [p for p in _report(doc).pods if p.namespace == "au-2026-184" and p.terminating]
    assert [p.replacement.state for p in again] == ["not-wanted", "not-wanted"]
    assert all("wants 2 active pod(s) and has 2" in p.replacement.summary for p in again)


@pytest.mark.parametrize("managed_by", ["example.com/queue", "kubernetes.io/job-controller"])
def test_a_job_another_controller_manages_gets_no_job_controller_story(managed_by: str) -> None:
    """spec.managedBy naming another controller: the built-in Job controller leaves the Job
    alone (job_controller.go isJobManagedByJobController), so neither its backoff, its failure
    count nor a replacement of its making is said; the field naming the built-in one changes
    nothing."""
    doc = _raw(FIXTURES / "audit" / "seed2026-184-d1.json")
    job = next(i for i in doc["items"] if i.get("kind") == "Job")
    job["spec"]["managedBy"] = managed_by
    report = _report(doc)
    stuck = [p for p in report.pods if p.namespace == "au-2026-184"]
    assert len(stuck) == 2
    if managed_by == "kubernetes.io/job-controller":
        assert all(p.replacement.state == "not-yet" for p in stuck)
        return
    for p in stuck:
        assert p.replacement.state == "unknown"
        assert p.replacement.expected_by is None
        assert "up to example.com/queue" in p.replacement.summary
        assert "managed by example.com/queue (spec.managedBy)" in p.explanation
        words = " ".join([p.explanation, p.replacement.summary, p.if_node_returns])
        for said in ("backoff", "counts it as failed", "creates the replacement", "Complete"):
            assert said not in words
        assert p.if_node_returns.startswith("kubelet removes the old pod")
        assert p.action.code != "wait"  # nothing of the built-in controller is coming
    assert _false(doc, report) == []


@pytest.mark.parametrize(
    ("message", "reasons"),
    [
        (  # v1.36 (audit 2027/64): a sentence between the reasons and "preemption:"
            "0/7 nodes are available: 2 node(s) had untolerated taint(s), 5 node(s) didn't match "
            "pod anti-affinity rules. no new claims to deallocate, preemption: 0/7 nodes are "
            "available: 2 Preemption is not helpful for scheduling, 5 No preemption victims "
            "found for incoming pod.",
            [
                "2 node(s) had untolerated taint(s)",
                "5 node(s) didn't match pod anti-affinity rules",
            ],
        ),
        (
            "0/5 nodes are available: 1 node(s) had untolerated taint "
            "{node.kubernetes.io/unreachable: }, 4 node(s) didn't match pod anti-affinity rules. "
            "preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling.",
            [
                "1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }",
                "4 node(s) didn't match pod anti-affinity rules",
            ],
        ),
        ("0/4 nodes are available: 4 Insufficient cpu.", []),  # quoted whole instead
    ],
)
def test_every_reason_the_scheduler_gives_is_kept(message: str, reasons: list[str]) -> None:
    from kubectl_nodefail.analysis.controllers import scheduler_reasons

    assert scheduler_reasons(message) == reasons


@pytest.mark.parametrize("name", ["zone-partial-disruption", "three-nodes-down"])
def test_the_checker_reads_zone_brake_and_advice_premises(name: str) -> None:
    """The zone line, the brake and the advice under it are claims the checker re-reads: a
    count changed in the diagnosis is found, in each place."""
    doc = _raw(FIXTURES / f"{name}.json")
    data = render.report_data(_report(doc))
    assert data["brake"] and premises.check(doc, data) == []
    actions = [p["action"] for p in data["pods"]] + [n["action"] for n in data["nodes"]]
    braked = [a for a in actions if a["summary"].startswith("first rule out")]
    # three-nodes-down: its StatefulSet pods need forcing; zone-partial-disruption: none does,
    # but its nodes' advice offers to delete the Node object, which the brake refuses too
    assert braked
    zone = next(z for z in data["zones"] if z["notReady"])
    places = [
        data["brake"],
        data["headline"],
        zone["claims"][0],
        *braked[:1],
        *data["clusterClaims"],
    ]
    for place in places:
        premise = next(p for p in place["because"] if p["field"].startswith("count"))
        premise["value"] += 1
        assert [f.object for f in premises.check(doc, data)] == [premise["object"]], place
        premise["value"] -= 1


def test_a_zone_selector_names_its_labels_and_absent_ones() -> None:
    nodes = [
        {"kind": "Node", "metadata": {"name": "a", "labels": {"z": "1", "r": "x"}}},
        {"kind": "Node", "metadata": {"name": "b", "labels": {"z": "1"}}},
        {"kind": "Node", "metadata": {"name": "c", "labels": {}}},
    ]
    doc = {"items": nodes}
    for selector, count in (("Node[z=1]", 2), ("Node[z=1,!r]", 1), ("Node[!z]", 1), ("Node[]", 3)):
        claim = {"kind": "k", "because": [{"object": selector, "field": "count", "value": count}]}
        assert premises.check(doc, {"clusterClaims": [claim]}) == [], selector


def _zone_doc(change: Any) -> tuple[Obj, Obj]:
    doc = _raw(FIXTURES / "zone-partial-disruption.json")
    for item in doc["items"]:
        if item.get("kind") == "Node":
            change(item)
    return doc, render.report_data(_report(doc))


def test_zone_premises_hold_with_mixed_zone_labels_and_foreign_noexecute_taints() -> None:
    """A node of the zone labelled with the beta label only (zone_of reads either), and a
    NoExecute taint of someone else's listed first: the zone's premises still hold (per node,
    and by the controller's own taint keys)."""

    def beta_and_dedicated(node: Obj) -> None:
        labels = node["metadata"]["labels"]
        if node["metadata"]["name"] == "flaky-z4":
            labels["failure-domain.beta.kubernetes.io/zone"] = labels.pop(
                "topology.kubernetes.io/zone"
            )
        spec = node.setdefault("spec", {})
        spec["taints"] = [{"key": "dedicated", "effect": "NoExecute"}, *(spec.get("taints") or [])]

    doc, data = _zone_doc(beta_and_dedicated)
    zone = next(z for z in data["zones"] if z["state"] == "PartialDisruption")
    assert premises.check(doc, data) == []
    fields = [p["field"] for p in zone["claims"][0]["because"]]
    assert "count" not in fields  # the labels select another set: each node's Ready instead
    assert any("key=node.kubernetes.io/unreachable,effect=NoExecute" in f for f in fields)


def test_serving_is_not_said_of_an_owner_whose_pods_were_not_all_read() -> None:
    """Recorded mid-rollout: Deployment rolling counts 1 pod (status.replicas), of a new
    ReplicaSet none of whose pods is stuck, so neither was read: its SERVING would count 0 of
    a pod that may well serve. Not said; with a failed read of the owners' pods, nothing is."""
    doc = _raw(FIXTURES / "recreate-rollout-node-down.json")
    report = _report(doc)
    (rolling,) = [w for w in report.workloads if w.owner == "Deployment/rolling"]
    assert rolling.serving is None and rolling.ready is None
    assert any(w.serving is not None for w in report.workloads)
    gap = "pods of the same owner: the API server answered 500, so the diagnosis goes without them"
    blind = _report({**doc, "gaps": [gap]})
    assert all(w.serving is None for w in blind.workloads)
