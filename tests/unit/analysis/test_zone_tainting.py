"""When a zone's not-Ready nodes without the controller's NoExecute taint are said not to be
getting one (analysis/zones.py _late): only past the time the zone's default rate takes, counted
from the latest moment the API shows its queue may have started again. EDITED STATES of the
recorded zone-full-disruption fixture (zone e2e/zone-f down, the others up), read three hours
after zone-f went down, with a leader running since before it: as a review found, a zone just
out of master disruption (a node elsewhere Ready again seconds ago) or one whose nodes the
controller is tainting right now was said not to be tainted."""

from __future__ import annotations

import copy
from datetime import timedelta

from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.findings import ZoneFinding
from kubectl_nodefail.analysis.nodes import is_ready, zone_of
from kubectl_nodefail.render import render
from kubectl_nodefail.snapshot.model import Snapshot, format_time
from tests.oracles import premises
from tests.unit.conftest import load, with_leader

DOWN = "e2e/zone-f"


def _three_hours_on(others_ready: timedelta, tainted: timedelta | None) -> Snapshot:
    """zone-f not Ready for 3 h, its nodes without the NoExecute taint but one tainted
    `tainted` before the reading (None: none); every other node Ready since `others_ready`
    before it; the leader running since the day before."""
    snap = copy.deepcopy(load("zone-full-disruption"))
    at = snap.captured_at = snap.captured_at + timedelta(hours=3)
    down = [n for n in snap.nodes if zone_of(n) == DOWN]
    assert down and not any(is_ready(n) for n in down)
    twin = copy.deepcopy(down[0])  # a second node down there: one tainted, one not
    twin["metadata"].update(name=f"{down[0]['metadata']['name']}-twin", uid="twin")
    snap.nodes.append(twin)
    down.append(twin)
    for node in snap.nodes:
        ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
        ready["lastHeartbeatTime"] = format_time(at)
        if node in down:
            ready["lastTransitionTime"] = format_time(at - timedelta(hours=3))
            node["spec"]["taints"] = [
                t for t in node["spec"].get("taints") or [] if t["effect"] != "NoExecute"
            ]
        else:
            ready["lastTransitionTime"] = format_time(at - others_ready)
    if tainted is not None:
        down[0]["spec"]["taints"].append(
            {
                "key": "node.kubernetes.io/unreachable",
                "effect": "NoExecute",
                "timeAdded": format_time(at - tainted),
            }
        )
    for lease in snap.leases:
        lease["spec"]["renewTime"] = format_time(at)
    return with_leader(snap, at - timedelta(days=1), at)


def _zone(snap: Snapshot) -> ZoneFinding:
    report = diagnose(snap, snap.captured_at)
    assert premises.check(snap.to_dump(), render.report_data(report)) == []
    return next(z for z in report.zones if z.zone == DOWN)


def test_nothing_since_then_says_tainting_is_not_happening() -> None:
    zone = _zone(_three_hours_on(timedelta(hours=5), None))
    assert zone.eviction == "stopped" and "it is not tainting here" in zone.explanation
    assert len(zone.late) == zone.not_ready == 2


def test_a_node_elsewhere_ready_seconds_ago_may_have_ended_master_disruption() -> None:
    """Every zone down until 30 s ago: the controller tainted nothing then, and its zone-f
    queue started when a node elsewhere came back."""
    zone = _zone(_three_hours_on(timedelta(seconds=30), None))
    assert zone.eviction == "proceeding" and not zone.late, zone.explanation


def test_a_taint_put_on_seconds_ago_shows_the_queue_moving() -> None:
    zone = _zone(_three_hours_on(timedelta(hours=5), timedelta(seconds=10)))
    assert zone.eviction == "proceeding" and not zone.late, zone.explanation
    later = _zone(_three_hours_on(timedelta(hours=5), timedelta(hours=2)))
    [late] = later.late  # the twin, untainted; the other tainted 2 h ago
    assert late.endswith("-twin") and "it is not tainting here" in later.explanation
