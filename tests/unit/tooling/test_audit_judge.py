"""The audit's judge (tests/audit/judge.py) on hand-made histories: it must call a prediction
wrong when the control plane did otherwise, or the audit could pass on anything."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.audit.judge import EARLY, LATE, judge
from tests.audit.observe import History, PodView, Poll, parse_time
from tests.audit.predictions import PodPrediction
from tests.audit.scenarios import (
    ALL_KINDS,
    MAP_SEED,
    VOLUME_SEED,
    WILDCARD_SEED,
    generate,
    manifests,
)
from tests.unit.tooling.auditkit import pod_prediction, pod_view

T0 = datetime(2026, 12, 1, 12, 0, 0, tzinfo=timezone.utc)
NS = "au-1-0"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def pod(name: str = "w-0", uid: str = "old", **kw: object) -> PodView:
    return pod_view(**{"namespace": NS, "name": name, "uid": uid, "created": at(-100), **kw})


def evicted(view: PodView, when: float) -> PodView:
    return replace(
        view,
        deletion=at(when + 30),
        grace=30,
        disruption=at(when),
        disruption_reason="DeletionByTaintManager",
    )


def history(polls: list[tuple[float, list[PodView]]]) -> History:
    h = History()
    for when, views in polls:
        h.polls.append(Poll(at(when), {v.uid: v for v in views}))
    h.marks = {"kill": at(0), "d1": at(20), "late": at(80), "d2": at(85), "return": at(110)}
    h.marks["end"] = at(150)
    return h


def prediction(**kw: object) -> PodPrediction:
    fields: dict[str, object] = {
        "at": at(20),
        "namespace": NS,
        "uid": "old",
        "eviction_at": at(40),
        "eviction_text": "eviction due in 20s",
        "replacement_state": "blocked",
        "action_code": "wait",
        "action_until": at(40),
        "if_node_returns": "the pod carries on in place.",
    }
    return pod_prediction(**{**fields, **kw})


SCENARIO = generate(1, 0, "quick", 1)


def d2_prediction(controller: str, **kw: object) -> PodPrediction:
    """The second diagnosis' word about a Terminating pod of `controller`."""
    return prediction(moment="d2", at=at(85), controller=controller, terminating=True, **kw)


def d2_job_prediction(**kw: object) -> PodPrediction:
    """The second diagnosis' word about a Terminating pod of a Job."""
    return d2_prediction("job", **kw)


def verdicts(preds: list[PodPrediction], h: History, kind: str) -> list[bool | None]:
    return [v.ok for v in judge(SCENARIO, preds, h) if v.kind == kind]


@pytest.mark.parametrize(
    ("actual", "ok"),
    [(40, True), (40 + LATE.seconds, True), (40 - EARLY.seconds, True), (50, False), (35, False)],
)
def test_eviction_time_is_judged_within_its_tolerance(actual: float, ok: bool) -> None:
    h = history([(20, [pod()]), (60, [evicted(pod(), actual)]), (150, [])])
    assert verdicts([prediction()], h, "eviction-time") == [ok]


def test_an_eviction_that_never_came_is_wrong() -> None:
    h = history([(20, [pod()]), (79, [pod()]), (150, [pod()])])
    assert verdicts([prediction()], h, "eviction-time") == [False]


def test_an_eviction_hours_away_is_judged_on_the_window_it_covers() -> None:
    """A toleration of an hour: the window ends first, so what is judged is that no eviction
    came before it; an eviction inside the window is wrong."""
    pred = prediction(eviction_at=at(3600), action_until=at(3600))
    quiet = history([(20, [pod()]), (79, [pod()]), (150, [pod()])])
    assert verdicts([pred], quiet, "eviction-not-before") == [True]
    assert verdicts([pred], quiet, "eviction-time") == []
    early = history([(20, [pod()]), (60, [evicted(pod(), 50)]), (150, [])])
    assert verdicts([pred], early, "eviction-time") == [False]
    assert verdicts([pred], early, "eviction-not-before") == []


def test_a_replica_not_evicted_in_the_window_is_not_replaced_meanwhile() -> None:
    """ "nothing replaces it until it is evicted", the eviction an hour away: judged on the
    window (no pod of its owner created while it stands), wrong when one came."""
    pred = prediction(
        controller="deployment",
        replacement_state="not-yet",
        eviction_at=at(3600),
        action_until=at(3600),
    )
    quiet = history([(20, [pod(owner_kind="ReplicaSet")]), (79, [pod(owner_kind="ReplicaSet")])])
    assert verdicts([pred], quiet, "replacement:not-yet") == [True]
    twin = pod(name="w-1", uid="new", node="healthy-0", created=at(50), owner_kind="ReplicaSet")
    busy = history(
        [(20, [pod(owner_kind="ReplicaSet")]), (60, [pod(owner_kind="ReplicaSet"), twin])]
    )
    assert verdicts([pred], busy, "replacement:not-yet") == [False]
    # the new pod stands in for a sibling deleted meanwhile: not for this one
    sibling = pod(name="w-2", uid="sib", owner_kind="ReplicaSet")
    swapped = history(
        [
            (20, [pod(owner_kind="ReplicaSet"), sibling]),
            (60, [pod(owner_kind="ReplicaSet"), twin]),
        ]
    )
    assert verdicts([pred], swapped, "replacement:not-yet") == [True]
    # a pod the late change made (a scale-up 4 ms after its mark) carries the mark's second:
    # not counted against the prediction (2045/101)
    scaled = replace(twin, created=at(80).replace(microsecond=0))
    late = history(
        [(20, [pod(owner_kind="ReplicaSet")]), (81, [pod(owner_kind="ReplicaSet"), scaled])]
    )
    late.marks["late"] = at(80.004)
    assert verdicts([pred], late, "replacement:not-yet") == [True]


def test_a_job_pod_not_evicted_counts_as_active_in_the_jobs_status() -> None:
    pred = prediction(controller="job", replacement_state="not-yet", eviction_at=at(3600))
    h = history([(20, [pod(owner_kind="Job")]), (79, [pod(owner_kind="Job")])])
    h.jobs[NS] = [(at(22), {"active": 1})]
    assert verdicts([pred], h, "replacement:not-yet") == [True]
    h.jobs[NS] = [(at(22), {"active": 0})]
    assert verdicts([pred], h, "replacement:not-yet") == [False]
    h.jobs[NS] = [(at(40), {"active": 0})]  # no status read right after: not judged
    assert verdicts([pred], h, "replacement:not-yet") == [None]


def test_never_evicted_is_wrong_when_the_taint_manager_evicts() -> None:
    pred = prediction(eviction_at=None, action_until=None, eviction_text="never evicted")
    h = history([(20, [pod()]), (60, [evicted(pod(), 50)]), (150, [])])
    assert verdicts([pred], h, "never-evicted") == [False]
    quiet = history([(20, [pod()]), (60, [pod()]), (150, [pod()])])
    assert verdicts([pred], quiet, "never-evicted") == [True]


def test_blocked_statefulset_pod_recreated_while_the_node_is_down_is_wrong() -> None:
    twin = pod(uid="new", node="healthy-0", created=at(50))
    h = history([(20, [pod()]), (60, [evicted(pod(), 40), twin]), (150, [twin])])
    assert verdicts([prediction()], h, "replacement:blocked") == [False]
    alone = history([(20, [pod()]), (60, [evicted(pod(), 40)]), (150, [])])
    assert verdicts([prediction()], alone, "replacement:blocked") == [True]


def test_a_twin_stamped_in_the_second_the_node_returned_is_not_called_wrong() -> None:
    """creationTimestamp has whole seconds: a twin stamped 110 may be made at 110.5, after the
    kubelet's return at 110.3. One stamped 109 was made before it."""
    pred = prediction(moment="d2", at=at(85))
    for stamped, ok in ((110, True), (109, False)):
        twin = pod(uid="new", node="healthy-0", created=at(stamped))
        h = history([(85, [evicted(pod(), 40)]), (111, [twin]), (150, [twin])])
        h.marks["return"] = at(110.3)
        assert verdicts([pred], h, "replacement:blocked") == [ok], stamped


def test_a_jobs_next_pod_is_judged_against_its_backoff_bound() -> None:
    """not-yet with expectedBy: a pod of the Job made by then (+ settle) is right; none made
    although the window was watched is wrong; a window cut short by a change is not judged."""
    pred = d2_job_prediction(
        replacement_state="not-yet",
        expected_by=at(95),
    )
    old = evicted(pod(name="w-abc", owner_kind="Job"), 40)
    made = pod(name="w-def", uid="next", owner_kind="Job", node="healthy-0", created=at(93))
    came = history([(85, [old]), (100, [old, made]), (150, [made])])
    assert verdicts([pred], came, "replacement:not-yet") == [True]
    never = history([(85, [old]), (100, [old]), (150, [])])
    assert verdicts([pred], never, "replacement:not-yet") == [False]
    never.marks["return"] = at(100)  # returned before the bound + settle: not judged
    assert verdicts([pred], never, "replacement:not-yet") == [None]


def test_a_pinned_pending_pod_is_judged_on_running_itself_not_on_its_siblings() -> None:
    """'none needed: this pod runs once its node returns' (a Pending pod pinned to the dead
    node): a sibling recreated elsewhere says nothing about it; the pod itself Running by the end
    is right, still Pending at the end is wrong."""
    pred = prediction(
        name="w-1", uid="w1", node="", replacement_state="not-needed", eviction_at=None
    )
    waiting = pod(name="w-1", uid="w1", node="", phase="Pending")
    sibling = pod(name="w-0", uid="new0", node="healthy-0", created=at(50))
    ran = history(
        [
            (20, [waiting]),
            (60, [waiting, sibling]),
            (150, [replace(waiting, phase="Running", node="dead"), sibling]),
        ]
    )
    assert verdicts([pred], ran, "replacement:not-needed") == [True]
    stuck = history([(20, [waiting]), (60, [waiting, sibling]), (150, [waiting, sibling])])
    assert verdicts([pred], stuck, "replacement:not-needed") == [False]


def test_keeps_running_without_a_replacement_is_wrong() -> None:
    pred = prediction(
        moment="d2",
        at=at(85),
        terminating=True,
        if_node_returns="kubelet removes the object; the replacement keeps running.",
        replacement_pods=[],
    )
    h = history([(85, [evicted(pod(), 40)]), (150, [])])
    assert verdicts([pred], h, "if-node-returns:keeps-running") == [False]
    assert verdicts([pred], h, "if-node-returns:old-removed") == [True]


def test_old_pod_removed_is_wrong_when_a_finalizer_keeps_it() -> None:
    pred = prediction(
        moment="d2", at=at(85), terminating=True, if_node_returns="removes the object"
    )
    held = replace(evicted(pod(), 40), finalizers=("audit.nodefail/hold",))
    h = history([(85, [held]), (150, [held])])
    assert verdicts([pred], h, "if-node-returns:old-removed") == [False]


def test_an_inferred_taint_cause_the_scheduler_did_not_give_is_wrong() -> None:
    message = (
        "0/6 nodes are available: 1 node(s) had untolerated taint "
        "{node.kubernetes.io/unreachable: }, 5 node(s) didn't match Pod's node affinity/selector."
    )
    pending = pod(name="w-x", uid="rep", node="", phase="Pending", scheduled_message=message)
    pred = prediction(
        moment="d2",
        at=at(85),
        controller="deployment",
        terminating=True,
        replacement_state="pending",
        replacement_pods=["w-x"],
        pending_reason=f"healthy nodes carry taints it does not tolerate ({message})",
    )
    h = history([(85, [evicted(pod(), 40), pending]), (150, [pending])])
    assert verdicts([pred], h, "pending-reason") == [False]
    pred.pending_reason = (
        f"pinned by node selector/affinity to nodes that are not available ({message})"
    )
    assert verdicts([pred], h, "pending-reason") == [True]


def test_the_cascades_and_forbid_are_drawn_from_their_seed_on_and_never_before() -> None:
    """Map rows 22 and 19: from CASCADE_SEED the owner is deleted with each propagation policy
    and a live CronJob may be Forbid; the run uses `--cascade`, the CronJob the policy drawn.
    The rest of each scenario is the one the seed made before."""
    from tests.audit.scenarios import CASCADE_SEED, CASCADES, manifests

    def drawn(seed: int) -> set[str]:
        out = set()
        for index in range(400):
            s = generate(seed, index)
            out |= {s.cascade} if s.change == "delete-owner" else set()
            out |= {s.strategy} if s.change == "cron-run" else set()
            assert s.cascade == "background" or s.change == "delete-owner"
        return out

    assert drawn(CASCADE_SEED - 1) == {"background", "Replace"}
    assert drawn(CASCADE_SEED) == {*CASCADES, "Replace", "Forbid"}
    forbid = next(
        s
        for s in (generate(CASCADE_SEED, i) for i in range(400))
        if s.change == "cron-run" and s.strategy == "Forbid"
    )
    (cron,) = [o for o in manifests(forbid, "n0") if o["kind"] == "CronJob"]
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    assert "delete-owner/orphan@" in next(
        s.describe()
        for s in (generate(CASCADE_SEED, i) for i in range(400))
        if s.cascade == "orphan"
    )


def test_a_forbid_run_is_judged_on_no_job_being_made_while_the_node_is_down() -> None:
    """ "Forbid: it starts no run while this Job is active": the run the harness scheduled
    (History.cron_runs) comes while the node is down, and no Job of a run is seen until the
    node is back; one seen is wrong; a run after the return is not judged."""
    text = (
        "CronJob w has concurrencyPolicy Forbid: it starts no run while this Job is active, "
        "so every scheduled run is skipped until then."
    )
    pred = prediction(controller="cronjob", claims=[{"kind": "blocks", "text": text}])
    mine = pod(owner_kind="Job")
    polls = [20, 40, 58, 61, 75, 90]

    def verdict(made: float | None, back: float | None = None) -> bool | None:
        h = history([(t, [mine]) for t in polls])
        h.cron_runs[NS] = at(60)
        if made is not None:
            h.runs[NS] = {"w-29412345": at(made)}
        if back is not None:
            h.marks["return"] = at(back)
        (ok,) = [v.ok for v in judge(SCENARIO, [pred], h) if v.kind == "cron:forbid"]
        return ok

    assert verdict(None) is True
    assert verdict(61) is False
    assert verdict(None, back=55) is None  # back before the run: nothing was skipped
    assert verdict(95, back=80) is True  # made after the return: the claim no longer spoke
    h = history([(t, [mine]) for t in polls])
    assert not [v for v in judge(SCENARIO, [pred], h) if v.kind == "cron:forbid"]


@given(st.integers(min_value=0, max_value=10**6), st.integers(min_value=0, max_value=500))
def test_a_scenario_is_rebuilt_from_its_seed_and_index(seed: int, index: int) -> None:
    first, again = generate(seed, index), generate(seed, index)
    assert first == again
    assert first.kind in ALL_KINDS
    assert manifests(first, "n0") == manifests(again, "n0")
    assert first.namespace == f"au-{seed}-{index}"


def test_the_maps_new_rows_are_drawn_from_their_seed_on_and_never_before() -> None:
    """Seeds before MAP_SEED make the scenarios they made (their runs stay reproducible); from
    it on, each new row of the map is drawn."""

    def new_rows(seed: int) -> set[str]:
        rows = set()
        for index in range(300):
            s = generate(seed, index)
            rows |= {s.kind} & {"job-managed"} | {s.change} & {"deadline"}
            rows |= {s.strategy} & {"paused", "maxUnavailable"}
            rows |= {s.toleration} & {"long", "wildcard"}
            rows |= {"long-grace"} if s.grace > 30 else set()
        return rows

    assert new_rows(MAP_SEED - 1) == set()
    expected = {"job-managed", "deadline", "paused", "maxUnavailable", "long", "long-grace"}
    assert new_rows(MAP_SEED) == expected
    assert new_rows(WILDCARD_SEED) == expected | {"wildcard"}


def test_older_seeds_keep_their_remedy_and_newer_ones_take_each_in_turn() -> None:
    from tests.audit.scenarios import REMEDIES, REMEDY_SEED, remedy

    assert [remedy(s) for s in (2036, 2037, 2038, 2039, 2040)] == [
        "out-of-service",
        "out-of-service",
        "force-delete",
        "out-of-service",
        "force-delete",
    ]
    assert {remedy(REMEDY_SEED + k) for k in range(3)} == set(REMEDIES)


def test_the_shutdown_row_is_drawn_from_its_seed_on_and_never_before() -> None:
    from tests.audit.scenarios import SHUTDOWN_SEED

    def shutdowns(seed: int) -> int:
        return sum(generate(seed, i).change == "shutdown" for i in range(300))

    assert shutdowns(SHUTDOWN_SEED - 1) == 0
    assert 10 <= shutdowns(SHUTDOWN_SEED) <= 60
    assert all(
        s.change_at == "early" and s.kind != "job-managed"
        for s in (generate(SHUTDOWN_SEED, i) for i in range(300))
        if s.change == "shutdown"
    )


def test_parse_time_keeps_microseconds() -> None:
    assert parse_time("2026-12-01T12:00:00.123456789Z") == T0 + timedelta(microseconds=123456)


def test_a_finalizer_held_pod_is_judged_on_staying_not_on_what_follows() -> None:
    text = (
        "the kubelet stops the containers, but the object stays until its finalizers are "
        "removed: x/hold. Only then does what follows happen: kubelet removes the old pod."
    )
    pred = prediction(moment="d2", at=at(85), terminating=True, if_node_returns=text)
    held = replace(evicted(pod(), 40), finalizers=("x/hold",), phase="Failed")
    h = history([(85, [held]), (150, [held])])
    assert verdicts([pred], h, "if-node-returns:finalizer-holds") == [True]
    assert verdicts([pred], h, "if-node-returns:old-removed") == []
    assert verdicts(
        [pred], history([(85, [held]), (150, [])]), "if-node-returns:finalizer-holds"
    ) == [False]


def test_a_saved_pod_view_loads_back_unchanged() -> None:
    from tests.audit.rejudge import view_from_json
    from tests.audit.run import _view_json

    view = replace(evicted(pod(), 40), finalizers=("x/hold",))
    assert view_from_json(json.loads(json.dumps(_view_json(view)))) == view


def test_a_return_text_saying_nothing_is_recreated_is_not_read_as_recreated() -> None:
    from tests.audit.judge import RETURN_PHRASES

    recreated = dict(RETURN_PHRASES)["recreated"]
    assert recreated.search("then the statefulset controller recreates w-0 (it may land")
    assert not recreated.search("kubelet removes the old pod; nothing recreates it (its owner")
    assert not recreated.search("w-0 is not recreated (outside replicas 0).")


def _remediated(polls: list[tuple[float, list[PodView]]]) -> History:
    h = history(polls)
    h.marks["remediate"], h.marks["remediated"] = at(100), at(104)
    h.remediated = "dead"
    return h


def _plan(result: str, releases: list[str], stuck: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "steps": [
            {
                "action": "taint-out-of-service",
                "allowed": True,
                "result": result,
                "releases": releases,
                "leavesStuck": list(stuck),
            }
        ]
    }


def _remediate_verdicts(doc: dict[str, Any], code: int, h: History, kind: str) -> list[bool | None]:
    from tests.audit.judge import judge_remediation

    found = judge_remediation(doc, code, h, {NS: SCENARIO}, "au-1-")
    return [v.ok for v in found if v.kind == kind]


def test_remediate_done_is_judged_on_the_pod_being_gone() -> None:
    old = evicted(pod(), 40)
    gone = _remediated([(99, [old]), (106, []), (108, [])])
    stayed = _remediated([(99, [old]), (106, [old]), (108, [old])])
    doc = _plan("done", [f"{NS}/w-0 (deployment)"])
    assert _remediate_verdicts(doc, 0, gone, "remediate:released") == [True]
    assert _remediate_verdicts(doc, 0, gone, "remediate:exit") == [True]
    assert _remediate_verdicts(doc, 0, stayed, "remediate:released") == [False]
    assert _remediate_verdicts(doc, 0, stayed, "remediate:exit") == [False]
    unconfirmed = _plan("unconfirmed", [f"{NS}/w-0 (deployment)"])
    assert _remediate_verdicts(unconfirmed, 7, stayed, "remediate:exit") == [True]


def test_remediate_leaves_stuck_is_judged_on_the_pod_staying() -> None:
    held = evicted(pod(finalizers=("audit.nodefail/hold",)), 40)
    doc = _plan("done", [], (f"{NS}/w-0 (deployment)",))
    stays = _remediated([(99, [held]), (106, [held]), (108, [held])])
    assert _remediate_verdicts(doc, 0, stays, "remediate:leaves-stuck") == [True]
    went = _remediated([(99, [held]), (106, []), (108, [])])
    assert _remediate_verdicts(doc, 0, went, "remediate:leaves-stuck") == [False]


def test_a_pod_said_to_resume_with_the_node_is_judged_on_staying_until_the_return() -> None:
    """A wait step "never acted on; it resumes with the node" (audit 2039 batch 1: said of
    DaemonSet pods the plan's own taint then evicted): the same object stays until the return."""
    agent = pod(name="w-abc", uid="ds")
    doc = {
        "steps": [
            {
                "action": "wait",
                "target": f"pod/{NS}/w-abc",
                "allowed": True,
                "result": "waited",
                "why": "daemonset pod: never acted on; it resumes with the node",
            }
        ]
    }
    stays = _remediated([(99, [agent]), (106, [agent]), (109, [agent])])
    assert _remediate_verdicts(doc, 0, stays, "remediate:resumes") == [True]
    went = _remediated([(99, [agent]), (106, [agent]), (109, [])])
    assert _remediate_verdicts(doc, 0, went, "remediate:resumes") == [False]
    other = {"steps": [dict(doc["steps"][0], why="replaceable: the stuck object is cosmetic")]}
    assert _remediate_verdicts(other, 0, went, "remediate:resumes") == []


def test_a_remediated_pods_return_prediction_is_not_judged() -> None:
    """The second diagnosis' 'if the node returns' spoke of a node left alone: a pod remediate
    released before the return is superseded, not judged wrong."""
    pred = prediction(
        moment="d2", at=at(85), terminating=True, if_node_returns="the pod carries on in place."
    )
    old = evicted(pod(), 40)
    h = _remediated([(85, [old]), (99, [old]), (106, []), (150, [])])
    kinds = {v.kind: v.ok for v in judge(SCENARIO, [pred], h)}
    assert kinds.get("if-node-returns:superseded") is None and "if-node-returns:superseded" in kinds
    assert "if-node-returns:carries-on" not in kinds


def test_a_pending_reason_must_give_every_reason_the_scheduler_gave() -> None:
    message = (
        "0/7 nodes are available: 2 node(s) had untolerated taint(s), 5 node(s) didn't match "
        "pod anti-affinity rules. no new claims to deallocate, preemption: 0/7 nodes are "
        "available: 2 Preemption is not helpful for scheduling."
    )
    waiting = pod(name="w-x", uid="rep", node="", phase="Pending", scheduled_message=message)
    h = history([(20, [pod(), waiting]), (25, [pod(), waiting]), (150, [waiting])])
    said = "the scheduler found no node: 2 node(s) had untolerated taint(s)"
    for reason, ok in (
        (said, False),
        (said + "; 5 node(s) didn't match pod anti-affinity rules", True),
    ):
        pred = prediction(
            replacement_state="pending", replacement_pods=["w-x"], pending_reason=reason
        )
        assert verdicts([pred], h, "pending-reason") == [ok], reason


def test_an_ordered_statefulsets_higher_ordinal_waits_for_the_lower_ones() -> None:
    """OrderedReady: after remediate released w-0 and w-1, w-1 comes only once w-0 is Running
    and Ready, so its absence is not judged; w-0's is."""
    from tests.audit.judge import judge_remediation

    ordered = replace(SCENARIO, kind="sts-ordered", change="none")
    w0, w1 = evicted(pod(), 40), evicted(pod(name="w-1", uid="old1"), 40)
    h = _remediated([(99, [w0, w1]), (106, []), (150, [])])
    doc = _plan("done", [f"{NS}/w-0 (statefulset)", f"{NS}/w-1 (statefulset)"])
    found = judge_remediation(doc, 0, h, {NS: ordered}, "au-1-")
    assert [(v.pod, v.ok) for v in found if v.kind == "remediate:recreated"] == [
        (f"{NS}/w-0", False),
        (f"{NS}/w-1", None),
    ]


def test_never_evicted_is_not_contradicted_by_remediates_own_taint() -> None:
    pred = prediction(eviction_at=None, action_until=None, eviction_text="never evicted")
    h = _remediated([(20, [pod()]), (99, [pod()]), (106, [evicted(pod(), 101)]), (150, [])])
    assert verdicts([pred], h, "never-evicted") == [True]
    h.marks.pop("remediate")
    h.remediated = ""
    assert verdicts([pred], h, "never-evicted") == [False]


def test_a_recreate_rollout_said_blocked_is_wrong_once_a_new_template_pod_comes() -> None:
    """Deployment 'blocked' (a Recreate rollout waiting on the old pod): no pod of another
    ReplicaSet while the old object stands; its return: a pod of the new template."""
    old = pod(name="w-abc-1", owner_uid="rs-old", owner_kind="ReplicaSet")
    pred = prediction(
        moment="d2",
        at=at(85),
        name="w-abc-1",
        controller="deployment",
        terminating=True,
        if_node_returns="kubelet stops the old containers and removes the object; then "
        "Deployment w (Recreate) scales its new ReplicaSet up (creating it first if need be).",
    )
    stuck = evicted(old, 40)
    new = pod(name="w-def-1", uid="new", owner_uid="rs-new", node="healthy-0", created=at(95))
    early = history([(85, [stuck]), (100, [stuck, new]), (150, [new])])
    assert verdicts([pred], early, "replacement:blocked") == [False]
    after = pod(name="w-def-1", uid="new", owner_uid="rs-new", node="healthy-0", created=at(120))
    held = history([(85, [stuck]), (105, [stuck]), (150, [after])])
    assert verdicts([pred], held, "replacement:blocked") == [True]
    assert verdicts([pred], held, "if-node-returns:rollout-goes-on") == [True]
    none = history([(85, [stuck]), (105, [stuck]), (150, [])])
    assert verdicts([pred], none, "if-node-returns:rollout-goes-on") == [False]
    # stamped in the second the node came back (at 110.4): maybe made after it (2049/171)
    same = replace(after, created=at(110))
    back = history([(85, [stuck]), (110, [stuck, same]), (150, [same])])
    back.marks["return"] = at(110.4)
    assert verdicts([pred], back, "replacement:blocked") == [True]


@pytest.mark.parametrize(
    ("conditions", "ok"),
    [
        (
            [
                {"type": "SuccessCriteriaMet", "status": "True"},
                {"type": "Complete", "status": "True"},
            ],
            True,
        ),
        ([{"type": "SuccessCriteriaMet", "status": "True"}], False),
    ],
)
def test_a_job_said_to_finish_once_the_pod_goes_is_judged_on_its_condition(
    conditions: list[dict[str, str]], ok: bool
) -> None:
    pred = d2_job_prediction(
        if_node_returns="kubelet removes the old pod; then Job w is Complete.",
    )
    h = history([(85, [evicted(pod(), 40)]), (150, [])])
    h.jobs[NS] = [(at(140), {"conditions": conditions})]
    assert verdicts([pred], h, "if-node-returns:job-finishes") == [ok]


def test_not_wanted_is_wrong_once_the_owner_creates_a_pod() -> None:
    """ "no replacement is wanted" (say a ReplicaSet scaled down): any new pod of the same owner
    while the prediction holds contradicts it; a pod of another owner (a rollout's new
    ReplicaSet) does not."""
    pred = prediction(controller="replicaset", replacement_state="not-wanted", name="w-0")
    created = pod(name="w-1", uid="new", node="healthy-0", created=at(50))
    h = history([(20, [pod()]), (60, [evicted(pod(), 40), created]), (150, [created])])
    assert verdicts([pred], h, "replacement:not-wanted") == [False]
    other = replace(created, owner_uid="another-replicaset")
    h = history([(20, [pod()]), (60, [evicted(pod(), 40), other]), (150, [other])])
    assert verdicts([pred], h, "replacement:not-wanted") == [True]
    # the owner's OTHER pod on the node, evicted meanwhile, is what the new pod replaces
    # (audit 2036/140: scaled 2 -> 1, one pod deleted by the scale-down, the other evicted)
    sibling = pod(name="w-9", uid="sibling")
    gone = [evicted(pod(), 40), evicted(sibling, 50)]
    h = history([(20, [pod(), sibling]), (60, [*gone, created]), (150, [created])])
    assert verdicts([pred], h, "replacement:not-wanted") == [True]
    twins = [created, replace(created, uid="new-2", name="w-2")]  # but not two new ones
    h = history([(20, [pod(), sibling]), (60, [*gone, *twins])])
    assert verdicts([pred], h, "replacement:not-wanted") == [False]
    # the sibling stood when the diagnosis read (t=20) and was gone by the next poll (grace 0,
    # 2057/63): the new pod is its replacement
    h = history([(19, [pod(), sibling]), (21, [pod(), created]), (150, [created])])
    assert verdicts([pred], h, "replacement:not-wanted") == [True]
    # after the window the prediction speaks of (the late change at 80), it says nothing
    later = replace(created, created=at(100))
    h = history([(20, [pod()]), (110, [evicted(pod(), 40), later]), (150, [later])])
    assert verdicts([pred], h, "replacement:not-wanted") == [True]


def test_a_return_prediction_is_superseded_for_a_pod_remediate_deleted() -> None:
    """d2 said the pod carries on if the node returns; remediate force-deleted it, and a
    finalizer kept the object until the return (audit 2038/140): the node was not left alone,
    so the prediction is not judged."""
    pred = prediction(moment="d2", at=at(85), if_node_returns="the pod carries on in place.")
    deleted = replace(pod(), deletion=at(101), grace=0, finalizers=("x/hold",))
    h = _remediated([(85, [pod()]), (102, [deleted]), (111, [deleted]), (150, [])])
    assert verdicts([pred], h, "if-node-returns:superseded") == [None]
    assert verdicts([pred], h, "if-node-returns:carries-on") == []
    left_alone = history([(85, [pod()]), (111, [pod()]), (150, [])])
    assert verdicts([pred], left_alone, "if-node-returns:carries-on") == [False]


def test_a_second_diagnosis_return_prediction_is_superseded_by_its_own_eviction() -> None:
    """d2 said "carries on" of a pod a late rollout made, due for eviction after d2; it was
    evicted at 100, the node returned at 110 and the kubelet removed it (audit 2075/147): the
    return spoke of came after the eviction, so it is not judged. Not deleted, it is."""
    pred = prediction(moment="d2", at=at(85), if_node_returns="the pod carries on in place.")
    h = history([(85, [pod()]), (101, [evicted(pod(), 100)]), (111, []), (150, [])])
    assert verdicts([pred], h, "if-node-returns:superseded") == [None]
    assert verdicts([pred], h, "if-node-returns:carries-on") == []
    running = pod(phase="Running")
    kept = history([(85, [running]), (111, [running]), (150, [running])])
    assert verdicts([pred], kept, "if-node-returns:carries-on") == [True]


def test_an_eviction_by_remediates_taint_is_not_the_one_predicted() -> None:
    """remediate's out-of-service taint evicts at 100 s (the condition's time truncated to the
    second, before the mark of 100.5 s): a prediction of an eviction an hour away is judged on
    the window before it, and "never evicted" holds (audit 2039/118, 142)."""
    far = prediction(eviction_at=at(3600), action_until=at(3600))
    never = prediction(eviction_at=None, action_until=None, eviction_text="never evicted")
    h = _remediated([(20, [pod()]), (99, [pod()]), (106, [evicted(pod(), 100)]), (150, [])])
    h.marks["remediate"] = at(100.5)
    assert verdicts([far], h, "eviction-time") == []
    assert verdicts([far], h, "eviction-not-before") == [True]
    assert verdicts([never], h, "never-evicted") == [True]


def test_a_pod_the_shutdown_wrote_failed_is_judged_on_not_being_listed_and_being_replaced() -> None:
    """Map row 24 (graceful node shutdown, played by its API effect): the pod is not listed as
    stuck, and its owner (here a StatefulSet: the same name, another uid) replaces it."""
    shutdown = replace(SCENARIO, kind="sts-ordered", change="shutdown", change_at="early")
    failed = replace(pod(), phase="Failed")
    again = replace(pod(uid="new", node="dead", phase="Pending"), created=at(12))

    def run(polls: list[tuple[float, list[PodView]]], preds: list[PodPrediction]) -> dict:
        h = history(polls)
        h.shut_down = {"old": at(5).strftime("%Y-%m-%dT%H:%M:%SZ")}
        return {v.kind: v.ok for v in judge(shutdown, preds, h) if v.kind.startswith("shutdown:")}

    good = run([(4, [pod()]), (8, [failed]), (14, [again]), (150, [again])], [])
    assert good == {"shutdown:not-stuck": True, "shutdown:replaced": True}
    listed = prediction(uid="old", terminating=False)
    never = run([(4, [pod()]), (8, [failed]), (150, [failed])], [listed])
    assert never == {"shutdown:not-stuck": False, "shutdown:replaced": False}
    other = replace(SCENARIO, change="none")
    h = history([(4, [pod()]), (8, [failed])])
    h.shut_down = {"old": at(5).strftime("%Y-%m-%dT%H:%M:%SZ")}
    assert not [v for v in judge(other, [], h) if v.kind.startswith("shutdown:")]


def test_a_job_held_open_is_judged_on_not_finishing_and_making_no_pod() -> None:
    """ "Job w cannot be Failed while this pod exists" (2046/113: its deadline deleted the other
    pods, which the parallelism rule counted): judged on the Job's conditions and new pods."""
    pred = d2_job_prediction(
        replacement_state="blocked",
        replacement_summary="Job w cannot be Failed while this pod exists",
    )
    old = evicted(pod(owner_kind="Job"), 40)
    made = [
        pod(name=f"w-{i}", uid=f"u{i}", node="", phase="Pending", owner_kind="Job")
        for i in (1, 2, 3)
    ]
    deleted = [replace(v, created=at(50), deletion=at(80)) for v in made]
    held = history([(86, [old, *deleted]), (100, [old]), (150, [])])
    held.jobs[NS] = [(at(90), {"conditions": [{"type": "FailureTarget", "status": "True"}]})]
    assert verdicts([pred], held, "replacement:blocked") == [True]
    failed = history([(86, [old]), (100, [old]), (150, [])])
    failed.jobs[NS] = [(at(95), {"conditions": [{"type": "Failed", "status": "True"}]})]
    assert verdicts([pred], failed, "replacement:blocked") == [False]
    again = replace(made[0], uid="late", created=at(95))
    more = history([(86, [old]), (100, [old, again]), (150, [])])
    assert verdicts([pred], more, "replacement:blocked") == [False]


def test_an_owner_being_deleted_is_judged_on_the_pods_it_makes_after_the_word() -> None:
    """ "none wanted: Job w is being deleted and waits for this pod" (2069/34: a replacement made
    in the second of the foreground delete, before the diagnosis, itself deleted at once and held
    by a finalizer, was counted by the parallelism rule): judged on pods made after it."""
    pred = d2_job_prediction(
        replacement_state="blocked",
        replacement_summary="none wanted: Job w is being deleted and waits for this pod",
    )
    old = evicted(pod(owner_kind="Job"), 40)
    before = replace(
        pod(name="w-1", uid="u1", node="", phase="Pending", owner_kind="Job"),
        created=at(80),
        deletion=at(81),
    )
    earlier = history([(86, [old, before]), (100, [old, before]), (150, [])])
    assert verdicts([pred], earlier, "replacement:blocked") == [True]
    after = replace(before, uid="u2", created=at(95), deletion=None)
    made = history([(86, [old]), (100, [old, after]), (150, [])])
    assert verdicts([pred], made, "replacement:blocked") == [False]


def test_a_shut_down_higher_ordinal_waits_for_the_lower_ones_ready() -> None:
    """OrderedReady makes w-1 again only once w-0 runs Ready (2046/155): not judged while a lower
    ordinal is not Ready; judged once it is."""
    shutdown = replace(SCENARIO, kind="sts-ordered", change="shutdown", change_at="early")
    one = replace(pod(name="w-1", uid="one"), phase="Failed")
    zero_pending = pod(name="w-0", uid="zero", phase="Pending", node="dead")
    zero_ready = replace(zero_pending, phase="Running", ready=True)

    def replaced(zero: PodView) -> list[bool | None]:
        h = history([(8, [zero, one]), (60, [zero, one]), (150, [zero, one])])
        h.shut_down = {"one": at(5).strftime("%Y-%m-%dT%H:%M:%SZ")}
        return [v.ok for v in judge(shutdown, [], h) if v.kind == "shutdown:replaced"]

    assert replaced(zero_pending) == [None]
    assert replaced(zero_ready) == [False]  # w-0 Ready, and still no second w-1: wrong
    # Ready in the poll after the shutdown but evicted already: OrderedReady waits for it to go
    # (2057/17), so no second w-1 is expected
    zero_evicted = replace(evicted(zero_ready, 4), ready=True)
    assert replaced(zero_evicted) == [None]


def test_never_replaced_is_not_contradicted_by_the_owners_own_pods_after_the_return() -> None:
    """ "never replaced": a pod of its owner made once the node is back, beside this one still
    running (a rollout going on), is no replacement (audit 2047/58); made while the node is
    down, or once this one is gone, it is."""
    pred = prediction(
        moment="d2",
        at=at(85),
        controller="deployment",
        replacement_state="none",
        eviction_at=None,
        action_until=None,
        eviction_text="never evicted",
    )
    mine = pod(owner_kind="ReplicaSet")
    after = pod(name="w-1", uid="new", node="healthy-0", created=at(120), owner_kind="ReplicaSet")
    rollout = history([(20, [mine]), (121, [mine, after]), (150, [mine, after])])
    assert verdicts([pred], rollout, "replacement:none") == [True]
    gone = history([(20, [mine]), (121, [after]), (150, [after])])
    assert verdicts([pred], gone, "replacement:none") == [False]
    during = replace(after, created=at(95))
    down = history([(20, [mine]), (96, [mine, during]), (150, [mine, during])])
    assert verdicts([pred], down, "replacement:none") == [False]


def test_a_shut_down_daemonset_pod_is_judged_on_its_new_pod_once_the_node_is_back() -> None:
    """A DaemonSet makes no pod on a node that is not Ready (2047/130, 171): its shut-down pod
    holds nothing up, and the new one on that node comes after the return."""
    shutdown = replace(SCENARIO, kind="daemonset", change="shutdown", change_at="early")
    mine = pod(owner_kind="DaemonSet")
    failed = replace(mine, phase="Failed")
    after = replace(pod(uid="new", node="dead", phase="Running"), created=at(120))
    elsewhere = replace(after, uid="other", node="healthy-0")

    def replaced(polls: list[tuple[float, list[PodView]]]) -> bool | None:
        h = history(polls)
        h.shut_down = {"old": at(5).strftime("%Y-%m-%dT%H:%M:%SZ")}
        (ok,) = [v.ok for v in judge(shutdown, [], h) if v.kind == "shutdown:replaced"]
        return ok

    assert replaced([(4, [mine]), (8, [failed]), (121, [after]), (150, [after])]) is True
    assert replaced([(4, [mine]), (8, [failed]), (121, [elsewhere]), (150, [elsewhere])]) is False
    assert replaced([(4, [mine]), (8, [failed]), (150, [failed])]) is False


def test_serving_is_judged_on_the_polls_around_the_diagnosis() -> None:
    """SERVING (workloads[].ready) against the pods Running and Ready on healthy nodes in the
    polls just before and after the diagnosis; a count that changed between them is not
    judged."""
    from tests.audit import serving

    doc = {
        "capturedAt": at(20).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "workloads": [
            {"namespace": NS, "owner": "Deployment/w", "ready": 2, "serving": {"kind": "serving"}},
            {"namespace": NS, "owner": "DaemonSet/d", "ready": None, "serving": None},
            {"namespace": "other", "owner": "Deployment/x", "ready": 1, "serving": {}},
        ],
    }
    (pred,) = serving.predictions(doc, "d1", NS)
    up = [
        pod(name=f"w-{i}", uid=f"u{i}", node=f"healthy-{i}", ready=True, owner_kind="ReplicaSet")
        for i in range(2)
    ]
    dead = pod(ready=True, owner_kind="ReplicaSet")  # on the failed node: not serving
    gone = replace(up[1], deletion=at(15))
    h = history([(18, [*up, dead]), (22, [*up, dead]), (26, [*up, dead])])
    assert serving.judge(pred, h, {"dead"})[1] is True
    h = history([(18, [up[0], gone, dead]), (22, [up[0], gone, dead]), (26, [up[0], dead])])
    assert serving.judge(pred, h, {"dead"})[1] is False
    h = history([(18, [up[0], dead]), (22, [*up, dead]), (26, [*up, dead])])
    assert serving.judge(pred, h, {"dead"})[1] is None
    # a pod Ready within the seconds the diagnosis read for (2049/32): not judged either
    h = history([(18, [dead]), (21, [dead]), (24, [*up, dead]), (26, [*up, dead])])
    assert serving.judge(pred, h, {"dead"})[1] is None


def test_the_live_cronjob_row_is_drawn_from_its_seed_on_and_never_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Map row 19: from CRON_SEED a share of the CronJobs is resumed with a Replace run ahead
    (change cron-run, early), from a Random of its own: every other scenario is the one the
    seed made without it."""
    from tests.audit import scenarios
    from tests.audit.scenarios import CRON_SEED, Scenario, manifests

    def runs(seed: int) -> list[Scenario]:
        return [s for s in (generate(seed, i) for i in range(400)) if s.change == "cron-run"]

    assert not runs(CRON_SEED - 1)
    drawn = runs(CRON_SEED)
    assert drawn and all(s.kind == "cronjob" and s.strategy == "Replace" for s in drawn)
    assert all(s.change_at == "early" for s in drawn)
    (cron,) = [o for o in manifests(drawn[0], "n0") if o["kind"] == "CronJob"]
    assert cron["spec"]["concurrencyPolicy"] == "Replace" and cron["spec"]["suspend"] is True
    with_runs = [generate(CRON_SEED, i) for i in range(400)]
    monkeypatch.setattr(scenarios, "CRON_SHARE", 0.0)
    without = [generate(CRON_SEED, i) for i in range(400)]
    assert [a for a in with_runs if a.change != "cron-run"] == [
        b for a, b in zip(with_runs, without) if a.change != "cron-run"
    ]


def test_a_replace_run_is_judged_on_the_job_going_in_the_minute_said() -> None:
    """ "its next run, in 40s (12:01 UTC; …) deletes Job w-manual": the Job read up to that
    minute and gone at the poll after it; gone before it, or still there after it, is wrong."""
    text = (
        "CronJob w has concurrencyPolicy Replace: its next run, in 40s (12:01 UTC; schedule "
        "'1 * * * *') deletes Job w-manual (background propagation) and starts a new Job; …"
    )
    pred = prediction(controller="cronjob", claims=[{"kind": "scheduled-run", "text": text}])
    mine = pod(owner_kind="Job")

    def verdict(job_read: list[float], polls: list[float]) -> bool | None:
        h = history([(t, [mine]) for t in polls])
        h.jobs[NS] = [(at(t), {"active": 1}) for t in job_read]
        (ok,) = [v.ok for v in judge(SCENARIO, [pred], h) if v.kind == "cron:replace"]
        return ok

    polls = [20, 40, 58, 60.5, 62, 90]  # the minute said is at(60): 12:01:00
    assert verdict([20, 40, 58, 60.5], polls) is True
    assert verdict([20, 40, 58], polls) is True  # there at :58, gone at :00.5 (2049/40)
    assert verdict([20, 40], polls) is False  # gone before the run
    assert verdict([20, 40, 58, 60.5, 62, 90], polls) is False  # still there after it
    # the Jobs read seconds after the poll's own time (2069/123): the poll stamped :58.9 read
    # them at :00.4, after the run deleted the Job; judged on when they were read
    late = [20, 40, 58.9, 62, 90]
    h = history([(t, [mine]) for t in late])
    h.jobs[NS] = [(at(t), {"active": 1}) for t in (20, 40)]
    (stamped,) = [v.ok for v in judge(SCENARIO, [pred], h) if v.kind == "cron:replace"]
    assert stamped is False  # by the polls' own times: gone "by :58.9"
    h.job_reads = [at(t + 1.5) for t in late]
    h.jobs[NS] = [(at(t + 1.5), {"active": 1}) for t in (20, 40)]
    (read,) = [v.ok for v in judge(SCENARIO, [pred], h) if v.kind == "cron:replace"]
    assert read is True
    h.job_reads = [at(t) for t in (21.5, 41.5, 57.5, 60.4)]  # a read at :57.5 without it
    (early,) = [v.ok for v in judge(SCENARIO, [pred], h) if v.kind == "cron:replace"]
    assert early is False
    # the node back before the run (2049/174): the Job finished, nothing to delete
    h = history([(t, [mine]) for t in polls])
    h.marks["return"] = at(55)
    h.jobs[NS] = [(at(t), {"active": 1}) for t in polls]
    (back,) = [v.ok for v in judge(SCENARIO, [pred], h) if v.kind == "cron:replace"]
    assert back is None
    untimed = text.replace("in 40s (12:01 UTC; schedule '1 * * * *')", "its next run")
    pred = replace(pred, claims=[{"kind": "scheduled-run", "text": untimed}])
    h = history([(t, [mine]) for t in polls])
    assert not [v for v in judge(SCENARIO, [pred], h) if v.kind == "cron:replace"]


def test_a_shut_down_pod_listed_as_blocking_is_judged_as_blocked_not_as_replaced() -> None:
    """2048/93: the StatefulSet deleted its Failed pods and a finalizer keeps them: listed as
    blocking the name, so no new pod of that name is the prediction, not a replacement."""
    shutdown = replace(SCENARIO, kind="sts-parallel", change="shutdown", change_at="early")
    failed = replace(pod(), phase="Failed", deletion=at(6), finalizers=("audit.nodefail/hold",))
    pred = prediction(terminating=True, replacement_state="blocked")
    h = history([(4, [pod()]), (8, [failed]), (150, [failed])])
    h.shut_down = {"old": at(5).strftime("%Y-%m-%dT%H:%M:%SZ")}
    found = {v.kind: v.ok for v in judge(shutdown, [pred], h)}
    assert found["shutdown:replaced"] is None and found["shutdown:not-stuck"] is True
    assert found["replacement:blocked"] is True


def test_the_tolerations_order_and_the_node_path_are_drawn_from_their_seed_on() -> None:
    """Map rows 1 and 28: from ORDER_SEED a pod's limited pair may sit behind or before a pair
    without limit (in its manifest, in that order); from NODE_PATH_SEED the regular batches'
    kubelets report NotReady before going silent every other batch; earlier seeds make the
    scenarios and paths they made."""
    from tests.audit.nodepath import HOLD, NODE_PATH_SEED, node_path
    from tests.audit.scenarios import ORDER_SEED, ORDERED, ORDERS, manifests

    def orders(seed: int) -> set[str]:
        return {generate(seed, i).order for i in range(400)}

    assert orders(ORDER_SEED - 1) == {"-"}
    assert orders(ORDER_SEED) == {"-", *ORDERS}
    for index in range(400):
        before, now = generate(ORDER_SEED - 1, index), generate(ORDER_SEED - 1, index)
        assert before == now
        s = generate(ORDER_SEED, index)
        if s.order == "-" or s.kind == "daemonset":
            continue
        assert s.toleration in ORDERED
        tolerations = next(t for o in manifests(s, "n0") for t in _tolerations_in(o))
        limits = [t.get("tolerationSeconds") for t in tolerations]
        first_limited = limits[0] is not None
        assert first_limited == (s.order == "limited-first"), (s.describe(), limits)
        assert len(limits) == 4 and limits.count(None) == 2
    assert {node_path(NODE_PATH_SEED - 1, b) for b in range(20)} == {("silent", 0)}
    drawn = [node_path(NODE_PATH_SEED, b) for b in range(20)]
    for seed in (NODE_PATH_SEED, NODE_PATH_SEED + 1):  # any two batches in a row: both paths
        assert {node_path(seed, 0)[0], node_path(seed, 1)[0]} == {"silent", "not-ready-first"}
    assert all(HOLD[0] <= h <= HOLD[1] for p, h in drawn if p == "not-ready-first")
    assert drawn == [node_path(NODE_PATH_SEED, b) for b in range(20)]


def _tolerations_in(obj: Any) -> list[list[Any]]:
    """Every tolerations list in a manifest (a pod's, a template's, a CronJob's job's)."""
    if isinstance(obj, list):
        return [t for item in obj for t in _tolerations_in(item)]
    if not isinstance(obj, dict):
        return []
    found = [obj["tolerations"]] if isinstance(obj.get("tolerations"), list) else []
    return found + [t for v in obj.values() for t in _tolerations_in(v)]


def test_no_replacement_ever_is_not_wrong_for_a_pod_the_late_change_made_that_second() -> None:
    """2059/105: "no replacement ever" at d1, a scale-up as the late change: its pod, stamped
    the second of the late mark, is the change's, not this pod's replacement; one created
    before the mark is."""
    late_scenario = replace(SCENARIO, change="scale-up", change_at="late")
    pred = prediction(controller="deployment", replacement_state="none", eviction_at=None)
    mine = pod(owner_kind="ReplicaSet")

    def judged(created: float) -> list[bool | None]:
        new = pod(
            name="w-1", uid="new", node="healthy-0", created=at(created), owner_kind="ReplicaSet"
        )
        h = history(
            [(20, [mine]), (81, [mine, replace(new, created=at(created).replace(microsecond=0))])]
        )
        h.marks["late"] = at(80.3)
        return [v.ok for v in judge(late_scenario, [pred], h) if v.kind == "replacement:none"]

    assert judged(80) == [True]
    assert judged(78) == [False]


def test_recreated_on_the_same_node_again_is_judged_on_where_it_went() -> None:
    """ "recreates w-0 on N again" (its template, selector, affinity or local volume allow only
    N): the new pod of that name on another node is wrong; on N, right."""
    pred = prediction(
        moment="d2",
        at=at(85),
        controller="statefulset",
        terminating=True,
        if_node_returns="kubelet removes the old pod, then the StatefulSet controller recreates "
        "w-0 on n0 again: its template binds every pod there (spec.nodeName).",
    )

    def judged(node: str) -> list[bool | None]:
        again = pod(uid="new", node=node, created=at(120))
        h = history([(85, [evicted(pod(node="n0"), 40)]), (150, [again])])
        return verdicts([pred], h, "if-node-returns:same-node")

    assert judged("n0") == [True]
    assert judged("healthy-0") == [False]


def test_a_template_bound_to_the_node_is_drawn_from_its_seed_on() -> None:
    """Map row 26: from BIND_SEED a Deployment's, StatefulSet's or Job's template may set
    spec.nodeName to the failable node; earlier seeds make the placements they made."""
    from tests.audit.scenarios import BIND_KINDS, BIND_SEED

    assert all(generate(BIND_SEED - 1, i).placement != "pin-nodename" for i in range(400))
    bound = [
        s for s in (generate(BIND_SEED, i) for i in range(400)) if s.placement == "pin-nodename"
    ]
    assert bound and all(s.kind in BIND_KINDS for s in bound)
    for s in bound:
        names = [spec["nodeName"] for o in manifests(s, "n0") for spec in _specs_with_node_name(o)]
        assert names == ["n0"], (s.describe(), names)


def _specs_with_node_name(obj: Any) -> list[dict[str, Any]]:
    if isinstance(obj, list):
        return [t for item in obj for t in _specs_with_node_name(item)]
    if not isinstance(obj, dict):
        return []
    found = [obj] if "nodeName" in obj else []
    return found + [t for v in obj.values() for t in _specs_with_node_name(v)]


def test_a_jobs_pods_orphaned_later_are_still_the_jobs() -> None:
    """2060/51: the Job's replacement came within its backoff; the late change (an orphaning
    delete of the Job) then removed the owner reference of every pod. The pods were the Job's
    when made: judged by that owner, not by their last state."""
    pred = prediction(
        controller="job", replacement_state="not-yet", terminating=True, expected_by=at(40)
    )
    mine = evicted(pod(owner_kind="Job"), 10)
    made = pod(name="w-9", uid="new", node="", created=at(30), owner_kind="Job")

    def orphaned(view: PodView) -> PodView:
        return replace(view, owner_uid="", owner_kind="")

    h = history([(20, [mine]), (32, [mine, made]), (90, [orphaned(mine), orphaned(made)])])
    assert verdicts([pred], h, "replacement:not-yet") == [True]
    none_made = history([(20, [mine]), (90, [orphaned(mine)])])
    assert verdicts([pred], none_made, "replacement:not-yet") == [False]


def test_bare_pods_bound_by_hand_after_the_taint_are_drawn_from_the_volume_seed_on() -> None:
    late = [generate(VOLUME_SEED, i) for i in range(200)]
    late = [s for s in late if s.change == "bind-late"]
    assert late and all(s.kind == "bare" and s.change_at == "early" for s in late)
    earlier = (generate(VOLUME_SEED - 1, i) for i in range(200))
    assert not [s for s in earlier if s.change == "bind-late"]


def test_a_higher_ordinal_is_judged_recreated_only_once_its_lower_ones_were_ready() -> None:
    """Audit 2078/43: an OrderedReady set recreates w-2 only once w-0 and w-1 are Running and
    Ready. With the lower ordinals never both Ready in time after the return, no new w-2 is not
    judged; with them Ready early enough and still no w-2, it is wrong; a new w-2 is right."""
    said = (
        "kubelet removes the old pod, then the StatefulSet controller recreates w-2 once w-0 to "
        "w-1 are Running and Ready (OrderedReady creates one pod at a time, the lowest ordinal "
        "first) (it may land on this or another node)."
    )
    old = evicted(pod(name="w-2", owner_kind="StatefulSet", owner_uid="sts"), 40)
    lower = [
        pod(name=f"w-{i}", uid=f"n{i}", owner_kind="StatefulSet", owner_uid="sts", ready=True)
        for i in range(2)
    ]
    pred = d2_prediction("statefulset", name="w-2", if_node_returns=said)
    only_w0 = history([(20, [old]), (120, [lower[0]]), (148, lower)])  # both Ready 2 s before end
    assert verdicts([pred], only_w0, "if-node-returns:recreated") == [None]
    in_time = history([(20, [old]), (120, lower), (148, lower)])
    assert verdicts([pred], in_time, "if-node-returns:recreated") == [False]
    twin = pod(name="w-2", uid="new", owner_kind="StatefulSet", owner_uid="sts", created=at(130))
    came = history([(20, [old]), (120, lower), (148, [*lower, twin])])
    assert verdicts([pred], came, "if-node-returns:recreated") == [True]


def test_a_recreate_rollout_is_judged_blocked_only_while_the_pod_is_not_failed() -> None:
    """Audit 2079/124: "creates no pod of its new template while this pod is neither Failed nor
    Succeeded": a new template's pod after PodGC marked the pod Failed (its object kept by a
    finalizer) is not against it; one before is."""
    pred = d2_prediction(
        "deployment",
        name="w-0",
        replacement_state="blocked",
        replacement_summary="blocked: Deployment w (strategy Recreate) creates no pod of its new "
        "template while this pod is neither Failed nor Succeeded (it is Pending)",
    )
    old = evicted(pod(owner_kind="ReplicaSet", node=""), 80)
    failed = replace(old, phase="Failed")
    newer = pod(name="w-new", uid="new", owner_uid="rs2", owner_kind="ReplicaSet", created=at(100))
    after = history([(86, [old]), (95, [failed]), (101, [failed, newer])])
    assert verdicts([pred], after, "replacement:blocked") == [True]
    early = replace(newer, created=at(90))
    before = history([(86, [old]), (91, [old, early]), (95, [failed, early])])
    assert verdicts([pred], before, "replacement:blocked") == [False]


def test_a_statefulset_pod_not_wanted_is_judged_on_its_own_name() -> None:
    """Audit 2080/125: w-2 outside replicas after a scale-down; at the node's return the set
    recreated w-0 and w-1 (wanted), stamped in the second it came back. "The owner creates none
    for it" is about w-2: other ordinals are not made for it, and a pod stamped in the return's
    second may be made after the return. A new w-2 before the return is wrong."""
    pred = d2_prediction(
        "statefulset", name="w-2", replacement_state="not-wanted", if_node_returns=""
    )
    old = evicted(pod(name="w-2", owner_kind="StatefulSet", owner_uid="sts"), 40)
    others = [
        pod(name=f"w-{i}", uid=f"n{i}", owner_kind="StatefulSet", owner_uid="sts", created=at(110))
        for i in range(2)
    ]
    back = history([(86, [old]), (112, [old, *others])])
    assert verdicts([pred], back, "replacement:not-wanted") == [True]
    twin = pod(name="w-2", uid="new", owner_kind="StatefulSet", owner_uid="sts", created=at(100))
    made = history([(86, [old]), (101, [old, twin])])
    assert verdicts([pred], made, "replacement:not-wanted") == [False]
