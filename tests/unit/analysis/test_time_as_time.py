"""Time is checked as time (issue 33 item 1): no moment after the read is told as past, none
before it as still to come, at every time scale a workload uses, seconds to hours.

Neighbours of recorded fixtures: the Terminating pods' grace periods (0 s to 6 h) and how long
ago their deletion was requested, the not-yet-evicted pods' tolerationSeconds (0 s to 6 h), drawn
together; every timeline entry, JSON and text, and every NEXT cell is then held to the read.
"""

from __future__ import annotations

import copy
import re
from datetime import datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_nodefail.analysis import summary
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.timeline import node_timeline
from kubectl_nodefail.render import render
from kubectl_nodefail.render.timeline_view import grouped, text
from kubectl_nodefail.snapshot.model import Snapshot, format_time, load_dump
from tests.oracles.invariants import check_data
from tests.unit.conftest import FIXTURES

NAMES = ("node-down-after-eviction", "node-down-before-eviction", "finalizer-on-failed-node")
SIX_HOURS = 6 * 3600
SCALES = st.one_of(
    st.integers(0, 120), st.integers(120, 3600), st.integers(3600, SIX_HOURS)
)  # seconds, minutes, hours: each scale drawn as often
AGO = re.compile(r"\b\d+(s|m|h\d\dm)\s+ago\b")


def _neighbour(snap: Snapshot, draw: Any) -> Snapshot:
    out = copy.deepcopy(snap)
    now = out.captured_at
    assert now is not None
    for pod in out.pods:
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            grace = draw(SCALES)
            requested = now - timedelta(seconds=draw(st.integers(0, grace + SIX_HOURS)))
            meta["deletionGracePeriodSeconds"] = grace
            meta["deletionTimestamp"] = format_time(requested + timedelta(seconds=grace))
        for tol in (pod.get("spec") or {}).get("tolerations") or []:
            if tol.get("tolerationSeconds") is not None:
                tol["tolerationSeconds"] = draw(SCALES)
    return out


def _seconds(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


@settings(max_examples=60, deadline=None)
@given(data=st.data(), name=st.sampled_from(NAMES))
def test_no_moment_is_told_in_the_wrong_tense(data: st.DataObject, name: str) -> None:
    snap = _neighbour(load_dump(str(FIXTURES / f"{name}.json")), data.draw)
    now = snap.captured_at
    assert now is not None
    report = diagnose(snap, now, timelines=True)
    doc = render.report_data(report)
    found = [v for v in check_data(doc) if "time" in v.code]
    assert not found, found
    for node in doc["nodes"]:
        for entry in node.get("timeline") or []:
            after = _seconds(entry["time"]) > now
            assert bool(entry.get("due")) == after, entry
        entries = node_timeline(snap, node["name"])
        lines = text(entries, now).splitlines()[1:]
        for (entry, _), line in zip(grouped(entries), lines):
            if entry.time > now:
                assert not AGO.search(line) and "clock skew" not in line, line
    pods = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in snap.pods}
    for pod in report.pods:
        cell = summary.next_step(pod, now)
        if pod.eviction_at is not None and cell.startswith("evicted"):
            assert (pod.eviction_at <= now) == cell.endswith(" ago"), (cell, pod.eviction_at)
        deadline = pods[(pod.namespace, pod.name)]["metadata"].get("deletionTimestamp")
        if deadline and "grace period ends" in pod.timeline:
            still_to_come = _seconds(deadline) > now
            assert ("grace period ends in " in pod.timeline) == still_to_come, pod.timeline
