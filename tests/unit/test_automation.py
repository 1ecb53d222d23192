"""Remediation automation (analysis/automation.py): the readers of its settings, property-tested
against their definitions, and the diagnosis and plan of snapshots recorded from the real control
plane (tests/e2e/test_automation.py, `make record`): covered, scheduled, stopped, acting; the
plan stands back unless --despite-automation, which unlocks nothing else."""

from __future__ import annotations

import copy
import json
import math
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_nodefail import render
from kubectl_nodefail.analysis import automation, premises
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.plan import Options, make_plan
from kubectl_nodefail.snapshot import from_items, load_dump, parse_time
from tests.unit.conftest import FIXTURES

UNITS = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}


@given(st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(sorted(UNITS))), min_size=1))
def test_go_durations_sum_their_parts(parts: list[tuple[int, str]]) -> None:
    text = "".join(f"{n}{unit}" for n, unit in parts)
    assert automation.go_duration(text) == pytest.approx(sum(n * UNITS[u] for n, u in parts))


@given(st.text(max_size=12))
def test_anything_else_is_not_a_duration(text: str) -> None:
    seconds = automation.go_duration(text)
    if seconds is not None:  # then it really is one: digits and units only
        assert text == "0" or text.lstrip("+-")[-1] in "smhn"


@given(st.integers(0, 100), st.integers(0, 5_000), st.booleans())
def test_percentages_scale_as_apimachinery_does(percent: int, total: int, up: bool) -> None:
    exact = percent * total / 100
    want = math.ceil(exact) if up else math.floor(exact)
    assert automation.scaled(f"{percent}%", total, up) == want
    assert automation.scaled(percent, total, up) == percent  # an int is taken as is


@given(
    st.dictionaries(st.sampled_from("abcd"), st.sampled_from("xyz"), max_size=4),
    st.dictionaries(st.sampled_from("abcd"), st.sampled_from("xyz"), max_size=3),
)
def test_match_labels_select_exactly_the_superset(labels: dict, wanted: dict) -> None:
    selector = {"matchLabels": wanted}
    assert automation.selects(selector, labels) == (wanted.items() <= labels.items())
    exists = {"matchExpressions": [{"key": k, "operator": "Exists"} for k in wanted]}
    assert automation.selects(exists, labels) == (set(wanted) <= set(labels))
    absent = {"matchExpressions": [{"key": k, "operator": "DoesNotExist"} for k in wanted]}
    assert automation.selects(absent, labels) == (not set(wanted) & set(labels))


RECORDED = {
    "automation-mhc-scheduled.json": ("auto-mhc", {"scheduled", "due"}),
    "automation-mhc-stopped.json": ("auto-mhc", {"stopped"}),
    "automation-nhc-scheduled.json": ("auto-nhc", {"scheduled", "due"}),
    "automation-nhc-stopped.json": ("auto-nhc", {"stopped"}),
    "automation-karpenter-watching.json": ("auto-karp", {"watching"}),
    "automation-karpenter-acting.json": ("auto-karp", {"acting"}),
    "automation-ca-scheduled.json": ("auto-ca", {"scheduled", "due"}),
    "automation-cloud-shutdown.json": ("auto-cloud", {"watching"}),
}


def _recorded(name: str):  # type: ignore[no-untyped-def]
    path = FIXTURES / name
    assert path.exists(), "record it: NODEFAIL_RECORD=1 pytest tests/e2e/test_automation.py"
    return load_dump(str(path))


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_recorded_coverage_state_and_plan(name: str) -> None:
    node, states = RECORDED[name]
    snap = _recorded(name)
    report = diagnose(snap, snap.captured_at)
    finding = next(n for n in report.nodes if n.name == node)
    (cov,) = finding.automation
    assert cov.state in states
    assert cov.summary == "; ".join(c.text for c in cov.claims)
    assert all(c.because for c in cov.claims)  # no sentence without its premises
    opts = Options(attested=(node,), only_nodes=(node,), server_minor=snap.server_minor)
    step = next(s for s in make_plan(report, opts).steps if s.target == f"node/{node}")
    if cov.state in ("stopped", "watching"):
        # stopped: it replaces nothing; watching: no time to race is known
        assert step.allowed
        assert finding.action is not None and "covers it" not in finding.action.summary
        return
    assert cov.at is not None
    # scheduled: within the horizon it stands back; beyond it, it does not
    reach = (cov.at - snap.captured_at).total_seconds()
    assert not step.allowed and "stands back" in step.gate
    if cov.state == "scheduled":
        short = Options(**{**opts.__dict__, "automation_horizon": max(0.0, reach - 1)})
        later = next(s for s in make_plan(report, short).steps if s.target == step.target)
        assert later.allowed
    despite = Options(**{**opts.__dict__, "despite_automation": True})
    forced = next(s for s in make_plan(report, despite).steps if s.target == step.target)
    assert forced.allowed and "despite" in forced.gate
    # the override unlocks nothing else: without an attestation the step stays refused
    bare = Options(**{**despite.__dict__, "attested": ()})
    refused = next(s for s in make_plan(report, bare).steps if s.target == step.target)
    assert not refused.allowed
    assert finding.action is not None and finding.action.code == "wait"
    assert "--despite-automation" not in finding.action.remediate


def test_a_time_is_stated_in_the_scheduled_claim() -> None:
    snap = _recorded("automation-mhc-scheduled.json")
    report = diagnose(snap, snap.captured_at)
    (cov,) = next(n for n in report.nodes if n.name == "auto-mhc").automation
    if cov.state == "scheduled":
        assert cov.at is not None and cov.at - snap.captured_at < timedelta(minutes=2)
        assert automation.stands_back(cov, snap.captured_at, 120)
        assert not automation.stands_back(cov, cov.at - timedelta(seconds=200), 120)
    assert "MachineHealthCheck capi-system-e2e/workers-unhealthy" in cov.summary


# --- generated neighbours of the recorded NodeHealthCheck: the short-circuit, the phases, the
# timeouts; every premise re-read from the raw document, and the stand-back as the state says.


def _nhc_neighbour(
    doc: dict[str, Any],
    limit: tuple[str, str],
    observed: int,
    healthy: int,
    phase: str,
    seconds: int,
    started: bool,
) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    nhc = next(i for i in out["items"] if i.get("kind") == "NodeHealthCheck")
    spec, status = nhc["spec"], nhc["status"]
    spec.pop("minHealthy", None)
    spec[limit[0]] = limit[1]
    for rule in spec["unhealthyConditions"]:
        rule["duration"] = f"{seconds}s"
    status.update(observedNodes=observed, healthyNodes=healthy, phase=phase)
    if started:
        status["unhealthyNodes"] = [
            {
                "name": "auto-nhc",
                "remediations": [
                    {
                        "resource": {"kind": "SelfNodeRemediation", "name": "auto-nhc"},
                        "started": doc["capturedAt"],
                    }
                ],
            }
        ]
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    limit=st.tuples(
        st.sampled_from(["minHealthy", "maxUnhealthy"]),
        st.one_of(st.integers(0, 100).map(lambda p: f"{p}%"), st.integers(0, 6).map(str)),
    ),
    observed=st.integers(1, 6),
    healthy=st.integers(0, 6),
    phase=st.sampled_from(["Enabled", "Paused", "Disabled", "Remediating"]),
    seconds=st.integers(1, 3600),
    started=st.booleans(),
)
def test_generated_node_health_checks_state_only_what_holds(
    limit: tuple[str, str],
    observed: int,
    healthy: int,
    phase: str,
    seconds: int,
    started: bool,
) -> None:
    raw = json.loads((FIXTURES / "automation-nhc-scheduled.json").read_text())
    doc = _nhc_neighbour(raw, limit, observed, min(healthy, observed), phase, seconds, started)
    captured = parse_time(doc["capturedAt"])
    assert captured is not None
    snap = from_items(copy.deepcopy(doc["items"]), captured, source="generated")
    report = diagnose(snap, captured)
    finding = next(n for n in report.nodes if n.name == "auto-nhc")
    (cov,) = finding.automation
    assert not premises.check(doc, render.report_data(report))
    healthy = min(healthy, observed)
    field, value = limit
    scaled = automation.scaled(value if value.endswith("%") else int(value), observed, True)
    least = None if scaled is None else scaled if field == "minHealthy" else observed - scaled
    if started:
        assert cov.state == "acting"  # in flight wins over any short-circuit
    elif phase in ("Paused", "Disabled") or (least is not None and healthy < least):
        assert cov.state == "stopped"
    elif field == "maxUnhealthy" and scaled is not None and scaled > observed:
        # getMinHealthy's error ("greater than the number of selected nodes"): no remediation
        assert cov.state == "stopped"
    else:
        assert cov.state in ("scheduled", "due")
    step = next(
        s
        for s in make_plan(report, Options(attested=("auto-nhc",), only_nodes=("auto-nhc",))).steps
        if s.target == "node/auto-nhc"
    )
    assert step.allowed is not automation.stands_back(cov, captured, 120.0)


def test_every_output_names_the_automation() -> None:
    from kubectl_nodefail import incident

    snap = _recorded("automation-karpenter-acting.json")
    report = diagnose(snap, snap.captured_at)
    data = incident.report_with_timelines(report, snap)
    karp = next(n for n in data["nodes"] if n["name"] == "auto-karp")
    (cov,) = karp["automation"]
    assert "being deleted since" in cov["summary"]
    assert f"- `auto-karp` (acting): {cov['summary']}" in incident.markdown(data, snap)
    table = render.table(report)
    assert "AUTOMATION (who else acts on these nodes)" in table
    assert "Karpenter is replacing it" in table
    assert "[acting] covered by Karpenter" in render.explain_node(
        next(n for n in report.nodes if n.name == "auto-karp"), report
    ).replace("\n", " ").replace("  ", " ")
