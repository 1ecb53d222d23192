"""The consistency invariants: zero violations on every recorded fixture and on reports generated
by mutating them, and each invariant shown to fail on a deliberately broken report."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.findings import Action, PodFinding, Report
from kubectl_nodefail.render import render
from kubectl_nodefail.snapshot.model import Snapshot, format_time, from_items, parse_time
from tests.oracles.invariants import (
    CHECKS,
    TIMELINE_CHECKS,
    check,
    check_data,
)
from tests.unit.conftest import FIXTURES, load, pod, report_of

FIXTURE_NAMES = sorted(p.stem for p in FIXTURES.glob("*.json"))


def _as_json(report: Report) -> dict[str, Any]:
    return dict(json.loads(render.as_json(render.report_data(report))))


def _with_timelines(snap: Snapshot, now: datetime | None = None) -> dict[str, Any]:
    """The JSON `diagnose -o json` prints: the report with each node's incident timeline."""
    report = diagnose(snap, now or snap.captured_at, timelines=True)
    return dict(json.loads(render.as_json(render.report_data(report))))


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_every_recorded_fixture_is_consistent(name: str) -> None:
    report = report_of(name)
    assert [str(v) for v in check(report)] == []
    assert [str(v) for v in check_data(_as_json(report))] == []
    data = _with_timelines(load(name))
    assert any(n.get("timeline") for n in data["nodes"]) or not report.nodes
    assert [str(v) for v in check_data(data)] == []


def test_json_round_trip_keeps_what_the_checks_read() -> None:
    report = report_of("node-down-after-eviction")
    data = _as_json(report)
    from tests.oracles.invariants import report_from_data

    again = report_from_data(data)
    assert [(p.name, p.category, p.action.code, p.finalizers) for p in again.pods] == [
        (p.name, p.category, p.action.code, p.finalizers) for p in report.pods
    ]
    assert again.nodes[0].taints[0].time_added == report.nodes[0].taints[0].time_added


# --- each invariant fails on a deliberately broken report ---


def _broken(name: str, edit: Callable[[Report], None], **kwargs: Any) -> Report:
    report = copy.deepcopy(report_of(name, **kwargs))
    edit(report)
    return report


def _codes(report: Report) -> set[str]:
    return {v.code for v in check(report)}


def _cosmetic_on_unreplaced(r: Report) -> None:
    web = pod(r, "scenario-down", "web")
    assert web.replacement.state == "not-yet"
    web.action = Action("wait", "cosmetic: the replacement already serves", "low")


def _stale_lease_on_live_kubelet(r: Report) -> None:
    db = pod(r, "scenario-signals", "db-s1-0")
    db.meaning = "evicted; its real state is unknown since its node's lease went stale (1s ago)"


def _unknown_on_live_kubelet(r: Report) -> None:
    pod(r, "scenario-signals", "db-s1-0").meaning = "Its real state is unknown."


def _pending_in_stopped_zone(r: Report) -> None:
    late = next(p for p in r.pods if p.node == "flaky-z4")
    late.timeline = "the NoExecute taint is not on the node yet (rate-limited per zone)"


def _zone_says_nothing_evicted(r: Report) -> None:
    zone = next(z for z in r.zones if z.state == "PartialDisruption")
    zone.explanation = "4/5 nodes not Ready: NoExecute tainting stopped, pods are not evicted."


def _force_without_finalizers(r: Report) -> None:
    db = pod(r, "scenario-down", "db-0")
    assert db.action.code == "out-of-service"
    db.finalizers = ["example.com/hold"]


def _returns_says_kubelet_removes_held_pod(r: Report) -> None:
    lonely = pod(r, "scenario-down", "lonely")
    lonely.finalizers = ["example.com/hold"]
    lonely.if_node_returns = "kubelet kills it and removes the object: it is gone for good."


def _power_off_on_live_kubelet(r: Report) -> None:
    pod(r, "scenario-signals", "db-s1-0").action = Action(
        "out-of-service", "apply the taint ONLY after confirming the machine is powered off", "high"
    )


def _returns_on_healthy_node(r: Report) -> None:
    pod(r, "scenario-other", "held").if_node_returns = "kubelet kills it."


def _category_contradicts_node(r: Report) -> None:
    pod(r, "scenario-down", "web").category = "terminating-elsewhere"


def _volume_wait_on_healthy_holder(r: Report) -> None:
    held: PodFinding = pod(r, "scenario-other", "held")
    held.category = "waiting-for-volume"
    held.if_node_returns = ""
    held.storage = ["PVC data -> PV pv is still attached to healthy-0 (VolumeAttachment va)"]


def _wait_while_a_pod_object_holds_the_volume(r: Report) -> None:
    waiting: PodFinding = pod(r, "scenario-volume-wait", "db-v2-0")
    waiting.timeline = (
        "pv-db-v2: not detached while pod object scenario-volume-wait/db-v2-old (Terminating) "
        "still uses it on flaky-v2; once it is gone, force-detached 6 minutes later"
    )


def _podgc_promised_for_a_running_pod(r: Report) -> None:
    db: PodFinding = pod(r, "scenario-cleanup", "db-flaky-d-0")
    db.terminating = False


BROKEN: dict[str, tuple[str, Callable[[Report], None], dict[str, Any]]] = {
    "advice-claims-replacement-serves": (
        "node-down-before-eviction",
        _cosmetic_on_unreplaced,
        {},
    ),
    "stale-lease-claim-on-fresh-lease": (
        "kubelet-reports-not-ready",
        _stale_lease_on_live_kubelet,
        {},
    ),
    "unknown-state-on-live-kubelet": ("kubelet-reports-not-ready", _unknown_on_live_kubelet, {}),
    "eviction-pending-while-stopped": ("zone-partial-disruption", _pending_in_stopped_zone, {}),
    "zone-text-contradicts-taints": ("zone-partial-disruption", _zone_says_nothing_evicted, {}),
    "force-ignores-finalizers": ("node-down-after-eviction", _force_without_finalizers, {}),
    "power-off-advice-on-live-kubelet": (
        "kubelet-reports-not-ready",
        _power_off_on_live_kubelet,
        {},
    ),
    "node-returns-on-healthy-node": (
        "finalizer-on-healthy-node",
        _returns_on_healthy_node,
        {"namespaces": ["scenario-other"]},
    ),
    "rows-disagree": ("node-down-after-eviction", _category_contradicts_node, {}),
    "volume-wait-without-holder": (
        "finalizer-on-healthy-node",
        _volume_wait_on_healthy_holder,
        {"namespaces": ["scenario-other"]},
    ),
    "podgc-promised-for-a-pod-not-terminating": (
        "out-of-service-applied",
        _podgc_promised_for_a_running_pod,
        {},
    ),
    "wait-for-detach-that-cannot-come": (
        "volume-held-by-dead-node",
        _wait_while_a_pod_object_holds_the_volume,
        {},
    ),
}


def test_every_invariant_has_a_broken_report() -> None:
    assert set(BROKEN) == set(CHECKS)


@pytest.mark.parametrize("code", sorted(BROKEN))
def test_invariant_fails_on_a_broken_report(code: str) -> None:
    name, edit, kwargs = BROKEN[code]
    assert code not in _codes(report_of(name, **kwargs))  # the real report is consistent
    assert code in _codes(_broken(name, edit, **kwargs))


def test_returns_text_naming_the_finalizer_is_accepted() -> None:
    def edit(r: Report) -> None:
        lonely = pod(r, "scenario-down", "lonely")
        lonely.finalizers = ["example.com/hold"]
        lonely.if_node_returns = (
            "the kubelet stops the containers, but the object stays until example.com/hold "
            "is removed; then kubelet kills it and removes the object"
        )
        lonely.action = Action("investigate", "finalizer example.com/hold: ask its owner", "none")

    assert "force-ignores-finalizers" not in _codes(_broken("node-down-after-eviction", edit))


def test_json_summary_that_disagrees_with_rows_is_caught() -> None:
    data = _as_json(report_of("node-down-after-eviction"))
    data["summary"]["stuckPods"] += 1
    assert {v.code for v in check_data(data)} == {"rows-disagree"}


def test_eviction_pending_contradicting_its_own_timeline_is_caught() -> None:
    def edit(r: Report) -> None:
        agent = pod(r, "scenario-down", "agent")
        agent.timeline = "no eviction while the zone stays disrupted"
        agent.eviction_at = None

    broken = _broken("node-down-before-eviction", edit)
    assert "eviction-pending-while-stopped" not in _codes(broken)  # NEXT follows the timeline
    agent = pod(broken, "scenario-down", "agent")
    agent.eviction_at = broken.captured_at  # NEXT says evicted, timeline says never
    agent.timeline = "tolerates the NoExecute taints without a time limit: never evicted"
    assert "eviction-pending-while-stopped" not in _codes(broken)
    agent.timeline = "never evicted"
    agent.eviction_at = None
    agent.action = Action("wait", "x", "none")
    assert _codes(broken) == set()


# --- each timeline invariant fails on a deliberately broken timeline ---


def _entries(data: dict[str, Any], node: str) -> list[dict[str, Any]]:
    return list(next(n for n in data["nodes"] if n["name"] == node)["timeline"])


def _set_entries(data: dict[str, Any], node: str, entries: list[dict[str, Any]]) -> None:
    next(n for n in data["nodes"] if n["name"] == node)["timeline"] = entries


def _swap_two(data: dict[str, Any]) -> None:
    entries = _entries(data, "flaky-a")
    first = next(i for i, e in enumerate(entries) if e["kind"] == "node-not-ready")
    last = max(i for i, e in enumerate(entries) if e["kind"] == "pod-deletion-requested")
    entries[first], entries[last] = entries[last], entries[first]
    _set_entries(data, "flaky-a", entries)


def _taint_gone(data: dict[str, Any]) -> None:
    node = next(n for n in data["nodes"] if n["name"] == "flaky-a")
    node["taints"] = [t for t in node["taints"] if t["effect"] != "NoExecute"]


def _taint_redated(data: dict[str, Any]) -> None:
    for e in _entries(data, "flaky-a"):
        if e["kind"] == "taint-added" and "NoExecute" in e["summary"]:
            e["time"] = data["capturedAt"]


def _back_while_failed(data: dict[str, Any]) -> None:
    entries = _entries(data, "flaky-a")
    entries.append(
        {
            "time": data["capturedAt"],
            "secondsAgo": 0,
            "kind": "node-back",
            "summary": "node Ready again",
            "object": "node/flaky-a",
            "source": "Node Ready condition lastTransitionTime",
        }
    )
    _set_entries(data, "flaky-a", entries)


def _ready_status_differs(data: dict[str, Any]) -> None:
    for e in _entries(data, "flaky-a"):
        if e["kind"] == "node-not-ready":
            e["summary"] = "Ready became False (KubeletNotReady)"


def _lease_redated(data: dict[str, Any]) -> None:
    for e in _entries(data, "flaky-a"):
        if e["kind"] == "lease-renewed":
            e["time"] = data["capturedAt"]


def _deleted_but_row_running(data: dict[str, Any]) -> None:
    """The before-eviction report: the timeline gains a deletion of the agent pod whose row
    is not Terminating (its NEXT: eviction in a few minutes)."""
    agent = next(p for p in data["pods"] if p["name"].startswith("agent-"))
    assert not agent["terminating"]
    entries = _entries(data, agent["node"])
    for kind, summary in (
        ("pod-evicted", "evicted: DeletionByTaintManager"),
        ("pod-deletion-requested", "deletion requested (grace period 30s)"),
    ):
        entries.append(
            {
                "time": data["capturedAt"],
                "secondsAgo": 0,
                "kind": kind,
                "summary": summary,
                "object": f"pod/{agent['namespace']}/{agent['name']}",
                "source": "test",
            }
        )
    _set_entries(data, agent["node"], entries)


def _future_told_as_past(data: dict[str, Any]) -> None:
    """A grace period of 15 minutes: its end, 14 minutes after the read, listed as a moment
    past (the entry the tool once printed with secondsAgo -865)."""
    entries = _entries(data, "flaky-a")
    entries.append(
        {
            "time": data["capturedAt"],
            "secondsAgo": -865,
            "kind": "pod-grace-ended",
            "summary": "grace period over: the object stays until its kubelet confirms",
            "object": "pod/x/y",
            "source": "Pod deletionTimestamp",
        }
    )
    _set_entries(data, "flaky-a", entries)


def _past_told_as_due(data: dict[str, Any]) -> None:
    entries = _entries(data, "flaky-a")
    entries[0] = {**entries[0], "due": True}
    _set_entries(data, "flaky-a", entries)


BROKEN_TIMELINES: dict[str, list[tuple[str, Callable[[dict[str, Any]], None]]]] = {
    "timeline-time-as-time": [
        ("node-down-after-eviction", _future_told_as_past),
        ("node-down-after-eviction", _past_told_as_due),
    ],
    "timeline-out-of-order": [("node-down-after-eviction", _swap_two)],
    "timeline-taint-not-on-node": [
        ("node-down-after-eviction", _taint_gone),
        ("node-down-after-eviction", _taint_redated),
    ],
    "timeline-ready-contradicts-node": [
        ("node-down-after-eviction", _back_while_failed),
        ("node-down-after-eviction", _ready_status_differs),
        ("node-down-after-eviction", _lease_redated),
    ],
    "timeline-eviction-contradicts-pod": [("node-down-before-eviction", _deleted_but_row_running)],
}


def test_every_timeline_invariant_has_a_broken_timeline() -> None:
    assert set(BROKEN_TIMELINES) == set(TIMELINE_CHECKS)


@pytest.mark.parametrize(
    ("code", "index"),
    [(code, i) for code, cases in sorted(BROKEN_TIMELINES.items()) for i in range(len(cases))],
)
def test_timeline_invariant_fails_on_a_broken_timeline(code: str, index: int) -> None:
    name, edit = BROKEN_TIMELINES[code][index]
    data = _with_timelines(load(name))
    assert [str(v) for v in check_data(data)] == []  # the real timeline agrees
    edit(data)
    assert code in {v.code for v in check_data(data)}


# --- generated reports: real fixtures, mutated the way clusters differ ---

DOCS = {name: json.loads((FIXTURES / f"{name}.json").read_text()) for name in FIXTURE_NAMES}
UNREACHABLE = "node.kubernetes.io/unreachable"


def _items(doc: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [i for i in doc["items"] if i.get("kind") == kind]


def _mutate(doc: dict[str, Any], op: str, pick: int, seconds: int) -> None:
    now = parse_time(doc["capturedAt"])
    assert now is not None
    nodes, pods, leases = _items(doc, "Node"), _items(doc, "Pod"), _items(doc, "Lease")
    target = pods[pick % len(pods)] if pods else None
    # Mostly the node of the picked pod: mutations that touch no listed pod prove little.
    on = (target or {}).get("spec", {}).get("nodeName") if seconds % 4 else None
    node = next((n for n in nodes if n["metadata"]["name"] == on), None)
    if node is None and nodes:
        node = nodes[pick % len(nodes)]
    if op == "ready" and node is not None:
        for cond in node["status"].get("conditions") or []:
            if cond["type"] == "Ready":
                cond["status"] = ["True", "False", "Unknown"][seconds % 3]
    elif op == "lease" and leases:
        name = node["metadata"]["name"] if node else ""
        lease = next((x for x in leases if x["metadata"]["name"] == name), leases[0])
        stamp = now - timedelta(seconds=seconds)
        lease["spec"]["renewTime"] = stamp.strftime("%Y-%m-%dT%H:%M:%S.000000Z")
    elif op == "noexecute" and node is not None:
        taints = node["spec"].setdefault("taints", [])
        mine = [t for t in taints if t.get("effect") == "NoExecute"]
        if mine:
            for t in mine:
                taints.remove(t)
        else:
            taints.append(
                {
                    "key": UNREACHABLE,
                    "effect": "NoExecute",
                    "timeAdded": format_time(now - timedelta(seconds=seconds)),
                }
            )
    elif op == "finalizer" and target is not None:
        target["metadata"].setdefault("finalizers", []).append("example.com/hold")
    elif op == "delete" and target is not None:
        target["metadata"]["deletionTimestamp"] = format_time(now - timedelta(seconds=seconds))
        target["metadata"]["deletionGracePeriodSeconds"] = 0
    elif op == "forever" and target is not None:
        target["spec"]["tolerations"] = [
            {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}
        ]
    elif op == "zone" and node is not None:
        node["metadata"]["labels"]["topology.kubernetes.io/zone"] = f"zone-{seconds % 3}"
    elif op == "exclude" and node is not None:
        node["metadata"]["labels"]["node.kubernetes.io/exclude-disruption"] = ""
    elif op == "drop" and target is not None:
        doc["items"].remove(target)


OPS = ["ready", "lease", "noexecute", "finalizer", "delete", "forever", "zone", "exclude", "drop"]


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(
    name=st.sampled_from([n for n in FIXTURE_NAMES if n != "node-down-recovered"]),
    edits=st.lists(
        st.tuples(
            st.sampled_from(OPS),
            st.integers(min_value=0, max_value=1000),
            st.integers(min_value=0, max_value=900),
        ),
        min_size=1,
        max_size=6,
    ),
    later=st.integers(min_value=0, max_value=900),
)
def test_generated_reports_are_consistent(
    name: str, edits: list[tuple[str, int, int]], later: int
) -> None:
    doc = copy.deepcopy(DOCS[name])
    for op, pick, seconds in edits:
        _mutate(doc, op, pick, seconds)
    captured = parse_time(doc["capturedAt"])
    assert captured is not None
    snap = from_items(doc["items"], captured, server_version=doc.get("serverVersion"))
    report = diagnose(snap, captured + timedelta(seconds=later))
    assert [str(v) for v in check(report)] == []
    assert [str(v) for v in check_data(_as_json(report))] == []
    later_now = captured + timedelta(seconds=later)
    assert [str(v) for v in check_data(_with_timelines(snap, later_now))] == []
