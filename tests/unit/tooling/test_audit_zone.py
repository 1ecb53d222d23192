"""The audit's zone batch (tests/audit/zonebatch.py): which runs have one, and its judges calling
a broken brake, a refused step that acted and an eviction under the brake wrong."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from tests.audit import zonebatch
from tests.audit.judge import judge
from tests.audit.observe import History, PodView, Poll, node_taints
from tests.audit.predictions import PodPrediction
from tests.audit.scenarios import generate
from tests.unit.tooling.auditkit import pod_prediction, pod_view

T0 = datetime(2026, 12, 6, 9, 0, 0, tzinfo=timezone.utc)
SEED, BATCH = zonebatch.ZONE_SEED, 2
NS = f"au-{SEED}-190"
NODES = [f"au{SEED}-b{BATCH}-n{k}" for k in range(zonebatch.FAILABLE)]
UNREACHABLE = (
    "node.kubernetes.io/unreachable:NoExecute",
    "node.kubernetes.io/unreachable:NoSchedule",
)
NO_SCHEDULE = ("node.kubernetes.io/unreachable:NoSchedule",)
ZONE_SEEDS = (zonebatch.ZONE_SEED, zonebatch.ZONE_SEED + 20)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def view(uid: str = "p", **kw: Any) -> PodView:
    fields = {"owner_uid": "o", "owner_kind": "ReplicaSet", "node": NODES[-1], **kw}
    return pod_view(**{"namespace": NS, "uid": uid, "created": at(-100), **fields})


def history(pods: list[tuple[float, list[PodView]]], late_taints: tuple[str, ...]) -> History:
    """Every node but the last tainted before the brake, the last not; its taints from t=60
    are `late_taints`."""
    h = History()
    for when, views in pods:
        h.polls.append(Poll(at(when), {v.uid: v for v in views}))
    tainted = dict.fromkeys(NODES[:-1], UNREACHABLE)
    h.add_nodes(at(0), {**tainted, NODES[-1]: NO_SCHEDULE})
    h.add_nodes(at(60), {**tainted, NODES[-1]: late_taints})
    h.marks = {"kill": at(-20), "d1": at(10), "late": at(40), "d2": at(45), "return": at(100)}
    h.marks.update(end=at(140), remediate=at(50), remediated=at(55))
    return h


def zone_line(untainted: int) -> dict[str, Any]:
    return {
        "zone": f"region/{zonebatch.zone_name(SEED, BATCH)}",
        "state": "PartialDisruption",
        "eviction": "stopped",
        "explanation": f"4/5 nodes not Ready: NoExecute tainting stopped. Pods on the "
        f"{untainted} not-Ready node(s) without the NoExecute taint are not evicted; the "
        f"{4 - untainted} node(s) tainted before the brake still evict theirs",
    }


def test_a_zone_batch_is_drawn_from_its_seed_on_and_never_before() -> None:
    assert zonebatch.zone_count(zonebatch.ZONE_SEED - 1, 200) == 0
    assert zonebatch.zone_count(zonebatch.ZONE_SEED, 200) == 40
    assert zonebatch.zone_count(zonebatch.ZONE_SEED, 1) == 0
    orders = {zonebatch.return_order(s, 2) for s in range(ZONE_SEEDS[0], ZONE_SEEDS[1])}
    assert orders == set(zonebatch.RETURN_ORDERS)


def test_the_zone_scenarios_spread_over_every_failable_node() -> None:
    slots = {generate(SEED, i, "full", zonebatch.FAILABLE).node_slot for i in range(160, 200)}
    assert slots == set(range(zonebatch.FAILABLE)) and zonebatch.FIRST < zonebatch.FAILABLE - 1


@pytest.mark.parametrize(
    ("untainted", "late", "ok"),
    [
        (1, NO_SCHEDULE, True),  # n2 kept untainted to the return, counted right
        (1, UNREACHABLE, False),  # the controller tainted it while the zone was disrupted
        (2, NO_SCHEDULE, False),  # the line counts two untainted nodes; one is
        (1, None, True),  # gone (deleted) is no NoExecute taint
    ],
)
def test_the_brake_line_is_judged_on_the_untainted_nodes_staying_so(
    untainted: int, late: tuple[str, ...] | None, ok: bool
) -> None:
    h = history([], late)  # type: ignore[arg-type]
    found = zonebatch.judge_brake({"zones": [zone_line(untainted)]}, "d1", h, NODES, SEED, BATCH)
    assert [v.ok for v in found] == [ok] and found[0].kind == "zone:brake"


def test_a_line_of_another_zone_or_a_proceeding_one_is_not_judged_here() -> None:
    h = history([], NO_SCHEDULE)
    other = {**zone_line(1), "zone": "region/zone-a"}
    proceeding = {**zone_line(1), "eviction": "proceeding"}
    assert zonebatch.judge_brake({"zones": [other, proceeding]}, "d1", h, NODES, SEED, BATCH) == []


def _refused(target: str, action: str) -> dict[str, Any]:
    return {"steps": [{"action": action, "target": target, "allowed": False, "result": "refused"}]}


@pytest.mark.parametrize(
    ("late", "ok"),
    [
        (NO_SCHEDULE, True),
        ((*NO_SCHEDULE, "node.kubernetes.io/out-of-service:NoExecute"), False),
        (None, False),  # the Node deleted
    ],
)
def test_a_refused_node_step_is_wrong_when_the_node_changed(
    late: tuple[str, ...] | None, ok: bool
) -> None:
    h = history([], late)  # type: ignore[arg-type]
    doc = _refused(f"node/{NODES[-1]}", "taint-out-of-service")
    found = zonebatch.judge_refused(doc, h, SEED, BATCH, f"au-{SEED}-")
    assert [v.ok for v in found] == [ok]


def test_a_refused_force_deletion_is_wrong_when_the_pod_went() -> None:
    doc = _refused(f"pod/{NS}/w-0", "force-delete-pod")
    stayed = history([(48, [view()]), (70, [view()]), (98, [view()])], NO_SCHEDULE)
    went = history([(48, [view()]), (70, [])], NO_SCHEDULE)
    deleted = history([(48, [view()]), (70, [view(deletion=at(69), grace=0)])], NO_SCHEDULE)
    # evicted before remediate ran (seed 2056, w-0 of scenario 167): Terminating it stays
    terminating = view(deletion=at(30), grace=30)
    held = history([(48, [terminating]), (70, [terminating]), (98, [terminating])], NO_SCHEDULE)
    forced = history([(48, [terminating]), (70, [])], NO_SCHEDULE)
    verdicts = [
        [v.ok for v in zonebatch.judge_refused(doc, h, SEED, BATCH, f"au-{SEED}-")]
        for h in (stayed, went, deleted, held, forced)
    ]
    assert verdicts == [[True], [False], [False], [True], [False]]


def test_an_allowed_step_is_not_judged_as_refused() -> None:
    doc = _refused(f"node/{NODES[-1]}", "taint-out-of-service")
    doc["steps"][0]["allowed"] = True
    assert zonebatch.judge_refused(doc, history([], NO_SCHEDULE), SEED, BATCH, "au-") == []


def paused(**kw: Any) -> PodPrediction:
    text = (
        "no NoExecute taint on its node and zone z is in PartialDisruption: tainting is "
        "stopped, so no eviction while the zone stays in PartialDisruption"
    )
    fields = {
        "at": at(10),
        "namespace": NS,
        "uid": "p",
        "node": NODES[-1],
        "controller": "replicaset",
        "eviction_text": text,
        "replacement_state": "not-yet",
        "action_code": "investigate",
    }
    return pod_prediction(**{**fields, **kw})


def _evicted(when: float) -> PodView:
    return view(
        deletion=at(when + 30),
        grace=30,
        disruption=at(when),
        disruption_reason="DeletionByTaintManager",
    )


@pytest.mark.parametrize(
    ("polls", "ok"),
    [
        ([(10, [view()]), (90, [view()])], True),  # not evicted while braked
        ([(10, [view()]), (90, [_evicted(85)])], False),  # evicted under the brake
        ([(10, [view()]), (104, [_evicted(102)])], True),  # after the return: not braked then
        ([(10, [view()]), (90, [view(deletion=at(89), grace=30)])], True),  # not the taint's
    ],
)
def test_no_eviction_while_braked_is_judged_up_to_the_return(
    polls: list[tuple[float, list[PodView]]], ok: bool
) -> None:
    h = history(polls, NO_SCHEDULE)
    scenario = generate(SEED, 190, "full", zonebatch.FAILABLE)
    found = [v.ok for v in judge(scenario, [paused()], h) if v.kind == "eviction-paused"]
    assert found == [ok]


def test_a_pod_with_an_eviction_time_is_not_judged_as_paused() -> None:
    h = history([(10, [view()])], NO_SCHEDULE)
    scenario = generate(SEED, 190, "full", zonebatch.FAILABLE)
    timed = paused(eviction_at=at(30), eviction_text="eviction due in 20s")
    assert not [v for v in judge(scenario, [timed], h) if v.kind == "eviction-paused"]


def test_node_taints_read_from_kubectl_and_a_failed_read_reads_nothing() -> None:
    listing = (
        '{"items": [{"metadata": {"name": "a"}, "spec": {"taints": '
        '[{"key": "k", "effect": "NoExecute"}]}}, {"metadata": {"name": "b"}, "spec": {}}]}'
    )
    assert node_taints(listing, ["a", "b", "c"]) == {"a": ("k:NoExecute",), "b": (), "c": None}
    assert node_taints("", ["a"]) == {} and node_taints("oops", ["a"]) == {}
    h = History()
    h.add_nodes(at(0), {"a": ()})
    h.add_nodes(at(1), {"a": ()})
    h.add_nodes(at(2), {"a": ("k:NoExecute",)})
    assert h.nodes["a"] == [(at(0), ()), (at(2), ("k:NoExecute",))]
    assert h.node_taints("a", at(1.5)) == () and h.node_taints("a", at(3)) == ("k:NoExecute",)
    assert h.node_changes("a", at(0), at(5)) == [(at(2), ("k:NoExecute",))]
