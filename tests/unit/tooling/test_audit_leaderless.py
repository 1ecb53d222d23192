"""The audit's judge of the diagnosis made with no kube-controller-manager leader (d0,
tests/audit/leaderless.py) on hand-made histories: it must call the diagnosis wrong when the
control plane evicted or replaced during the gap, or when the report does not open with it."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

from tests.audit import leaderless
from tests.audit.judge import judge
from tests.audit.observe import History, PodView, Poll
from tests.audit.predictions import PodPrediction
from tests.audit.scenarios import generate
from tests.unit.tooling.auditkit import pod_prediction, pod_view

T0 = datetime(2026, 12, 1, 12, 0, 0, tzinfo=timezone.utc)
NS = "au-1-0"
OWNER = "rs-1"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _pod(name: str, uid: str, created: float = -100, **kw: object) -> PodView:
    return pod_view(
        **{
            "namespace": NS,
            "name": name,
            "uid": uid,
            "created": at(created),
            "owner_uid": OWNER,
            **kw,
        }
    )


def _history(polls: list[tuple[float, list[PodView]]]) -> History:
    """Killed at 0, the manager stopped at 20, d0 at 50, a new leader at 70."""
    h = History()
    for when, views in polls:
        h.polls.append(Poll(at(when), {v.uid: v for v in views}))
    h.marks = {"kill": at(0), "restart": at(20), "d0": at(50), "leader": at(70), "d1": at(90)}
    h.marks.update({"late": at(150), "d2": at(160), "return": at(200), "end": at(240)})
    return h


def _d0(**kw: object) -> PodPrediction:
    fields: dict[str, object] = {
        "moment": "d0",
        "at": at(50),
        "namespace": NS,
        "uid": "old",
        "eviction_at": None,
        "eviction_text": "no NoExecute taint … kube-controller-manager has no leader …",
        "claims": [{"kind": "no-leader"}, {"kind": "status-meaning"}],
    }
    return pod_prediction(**{**fields, **kw})


def _rows(pred: PodPrediction, h: History) -> dict[str, bool | None]:
    return {kind: ok for kind, _, _, ok in leaderless.judge(pred, h)}


def test_nothing_evicted_or_made_in_the_gap_is_right() -> None:
    old = _pod("w-0", "old")
    h = _history([(t, [old]) for t in (10, 50, 69)])
    assert _rows(_d0(), h) == {
        "no-leader:said": True,
        "no-leader:eviction": True,
        "no-leader:replacement": True,
    }


def test_an_eviction_or_a_new_pod_before_the_new_leader_is_wrong() -> None:
    old = _pod("w-0", "old")
    gone = replace(
        old, deletion=at(60), grace=0, disruption=at(60), disruption_reason="DeletionByTaintManager"
    )
    new = _pod("w-1", "new", created=61)
    h = _history([(50, [old]), (62, [gone, new])])
    assert _rows(_d0(), h) == {
        "no-leader:said": True,
        "no-leader:eviction": False,
        "no-leader:replacement": False,
    }
    # after the new leader took over, both are its doing: right
    gone = replace(
        old, deletion=at(71), grace=0, disruption=at(71), disruption_reason="DeletionByTaintManager"
    )
    h = _history([(50, [old]), (75, [gone, _pod("w-1", "new", created=72)])])
    assert set(_rows(_d0(), h).values()) == {True}


def test_a_time_the_controller_cannot_keep_or_a_report_without_the_leader_is_wrong() -> None:
    old = _pod("w-0", "old")
    h = _history([(t, [old]) for t in (50, 69)])
    rows = _rows(_d0(eviction_at=at(60), claims=[{"kind": "status-meaning"}]), h)
    assert rows["no-leader:said"] is False and rows["no-leader:eviction"] is False


def test_the_judge_takes_d0_apart_and_only_with_a_leader_to_judge_by() -> None:
    old = _pod("w-0", "old")
    h = _history([(50, [old])])
    verdicts = judge(generate(1, 0, "quick", 1), [_d0()], h)
    assert {v.kind for v in verdicts} == {
        "no-leader:said",
        "no-leader:eviction",
        "no-leader:replacement",
    } and all(v.moment == "d0" for v in verdicts)
    del h.marks["leader"]
    assert leaderless.judge(_d0(), h) == []


def test_any_eviction_time_said_with_no_leader_is_wrong_even_one_after_it() -> None:
    old = _pod("w-0", "old")
    h = _history([(t, [old]) for t in (50, 69, 90)])
    assert _rows(_d0(eviction_at=at(120)), h)["no-leader:eviction"] is False
