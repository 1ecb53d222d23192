"""A remediation begun long ago and still not finished (analysis/automation/coverage.in_flight):
every automation's "acting" mark, set at any age up to hours on the snapshots recorded from the
real control plane (tests/e2e/test_automation.py). Within STALLED_SECONDS it is acting (the
advice waits, remediate stands back); past it, stalled: the sentence says it has not finished
and what may hold it, nothing waits for it, and the timeline says so."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kubectl_nodefail.analysis import automation
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.timeline import node_timeline
from kubectl_nodefail.remediate.plan import Options, make_plan
from kubectl_nodefail.render import render
from kubectl_nodefail.snapshot.model import format_time, parse_time
from tests.oracles import premises
from tests.unit.conftest import FIXTURES, as_read

# the mark, the recorded snapshot it is set on, its node
MARKS = {
    "machine-deleting": ("automation-mhc-scheduled.json", "auto-mhc"),
    "owner-remediated": ("automation-mhc-scheduled.json", "auto-mhc"),
    "nodeclaim-deleting": ("automation-karpenter-acting.json", "auto-karp"),
    "nhc-remediation": ("automation-nhc-scheduled.json", "auto-nhc"),
    "ca-removing": ("automation-ca-scheduled.json", "auto-ca"),
}


def _item(doc: dict[str, Any], kind: str, name: str | None = None) -> dict[str, Any]:
    return next(
        i
        for i in doc["items"]
        if i["kind"] == kind and (name is None or i["metadata"]["name"] == name)
    )


def _marked(mark: str, at: datetime) -> tuple[dict[str, Any], str]:
    """The recorded snapshot with `mark` set at `at` (to the second, as the API writes it)."""
    name, node_name = MARKS[mark]
    doc = json.loads((FIXTURES / name).read_text())
    stamp = format_time(at)
    if mark == "machine-deleting":
        machine = _item(doc, "Machine")
        machine["metadata"]["deletionTimestamp"] = stamp
        machine["metadata"]["finalizers"] = ["machine.cluster.x-k8s.io"]
    elif mark == "owner-remediated":
        conditions = _item(doc, "Machine").setdefault("status", {}).setdefault("conditions", [])
        conditions.append(
            {
                "type": "OwnerRemediated",
                "status": "False",
                "reason": "WaitingForRemediation",
                "lastTransitionTime": stamp,
            }
        )
    elif mark == "nodeclaim-deleting":
        _item(doc, "NodeClaim")["metadata"]["deletionTimestamp"] = stamp
    elif mark == "nhc-remediation":
        nhc = _item(doc, "NodeHealthCheck")
        resource = {"kind": "SelfNodeRemediation", "namespace": "medik8s", "name": node_name}
        nhc.setdefault("status", {})["unhealthyNodes"] = [
            {"name": node_name, "remediations": [{"resource": resource, "started": stamp}]}
        ]
    else:
        node = _item(doc, "Node", node_name)
        node["spec"].setdefault("taints", []).append(
            {
                "key": automation.CA_TO_BE_DELETED,
                "value": str(int(at.timestamp())),
                "effect": "NoSchedule",
            }
        )
    return doc, node_name


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mark=st.sampled_from(sorted(MARKS)), ago=st.integers(0, 6 * 3600))
@example(mark="machine-deleting", ago=automation.STALLED_SECONDS)
@example(mark="machine-deleting", ago=automation.STALLED_SECONDS + 1)
@example(mark="nodeclaim-deleting", ago=3 * 3600)
def test_a_remediation_long_in_flight_is_stalled_and_not_waited_for(mark: str, ago: int) -> None:
    recorded = json.loads((FIXTURES / MARKS[mark][0]).read_text())
    captured = parse_time(recorded["capturedAt"])
    assert captured is not None
    began = parse_time(format_time(captured - timedelta(seconds=ago)))
    assert began is not None
    doc, node_name = _marked(mark, began)
    took = (captured - began).total_seconds()
    snap = as_read(doc, captured)
    report = diagnose(snap, captured)
    finding = next(n for n in report.nodes if n.name == node_name)
    (cov,) = finding.automation
    assert not premises.check(doc, render.report_data(report))
    want = automation.ACTING if took <= automation.STALLED_SECONDS else automation.STALLED
    assert cov.state == want, cov.summary
    assert cov.at == began
    last = cov.claims[-1]
    if want == automation.STALLED:
        assert last.kind == "automation-stalled"
        assert (
            "does not wait for it" in last.text and str(timedelta(seconds=round(took))) in last.text
        )
        assert "remediate stands back" not in (finding.action.summary if finding.action else "")
        (entry,) = [e for e in node_timeline(snap, node_name) if e.kind == "automation"]
        assert entry.time == began and "not finished since" in entry.summary
    else:
        assert last.kind == "automation-acting" and "does not wait" not in last.text
        assert finding.action is not None and finding.action.code == "wait"
    opts = Options(attested=(node_name,), only_nodes=(node_name,), allow_disruption=True)
    step = next(s for s in make_plan(report, opts).steps if s.target == f"node/{node_name}")
    assert automation.stands_back(cov, captured, 120.0) is (want == automation.ACTING)
    assert step.allowed is (want == automation.STALLED), step.gate


def _nhc_doc(
    remediations: list[tuple[int, int | None, str]], timeouts: dict[str, str]
) -> tuple[dict[str, Any], datetime]:
    """The recorded NodeHealthCheck with these remediations for its node: (started seconds
    ago, timed out seconds ago or None, the remediation's kind), and escalating remediations
    with these timeouts by template kind."""
    doc = json.loads((FIXTURES / "automation-nhc-scheduled.json").read_text())
    captured = parse_time(doc["capturedAt"])
    assert captured is not None
    nhc = _item(doc, "NodeHealthCheck")

    def ago(seconds: int) -> str:
        return format_time(captured - timedelta(seconds=seconds))

    entries = []
    for started, timed_out, kind in remediations:
        entry: dict[str, Any] = {
            "resource": {"kind": kind, "namespace": "medik8s", "name": "auto-nhc"},
            "started": ago(started),
        }
        if timed_out is not None:
            entry["timedOut"] = ago(timed_out)
        entries.append(entry)
    nhc.setdefault("status", {})["unhealthyNodes"] = [{"name": "auto-nhc", "remediations": entries}]
    if timeouts:
        nhc["spec"].pop("remediationTemplate", None)
        nhc["spec"]["escalatingRemediations"] = [
            {
                "remediationTemplate": {"kind": kind, "name": kind.lower(), "namespace": "m"},
                "order": i,
                "timeout": timeout,
            }
            for i, (kind, timeout) in enumerate(timeouts.items())
        ]
    return doc, captured


def _nhc_coverage(doc: dict[str, Any], captured: datetime) -> Any:
    snap = as_read(doc, captured)
    report = diagnose(snap, captured)
    assert not premises.check(doc, render.report_data(report))
    (cov,) = next(n for n in report.nodes if n.name == "auto-nhc").automation
    return cov


def test_an_escalating_nodehealthcheck_is_timed_from_its_remediation_in_flight() -> None:
    """Escalation: the first remediation timed out and the next began two minutes ago: acting
    since the newest (remediate stands back from it), not stalled from the first. A step whose
    own timeout is longer than STALLED_SECONDS is waited for that long and the slack NHC acts
    within. Every step timed out: the remediation failed, not waited for."""
    snr, metal = "SelfNodeRemediation", "Metal3Remediation"
    steps = {f"{snr}Template": "40m", f"{metal}Template": "60m"}
    doc, captured = _nhc_doc([(42 * 60, 2 * 60, snr), (2 * 60, None, metal)], steps)
    cov = _nhc_coverage(doc, captured)
    newest = parse_time(format_time(captured - timedelta(seconds=120)))
    assert cov.state == automation.ACTING and cov.at == newest, cov.summary
    assert f"{metal} medik8s/auto-nhc created" in cov.summary
    assert automation.stands_back(cov, captured, 120.0)
    doc, captured = _nhc_doc([(50 * 60, None, metal)], steps)  # within its 60 min + slack
    assert _nhc_coverage(doc, captured).state == automation.ACTING
    doc, captured = _nhc_doc([(67 * 60, None, metal)], steps)  # past them
    cov = _nhc_coverage(doc, captured)
    assert cov.state == automation.STALLED and "does not wait for it" in cov.summary
    doc, captured = _nhc_doc([(90 * 60, 50 * 60, snr), (50 * 60, 1, metal)], steps)
    cov = _nhc_coverage(doc, captured)
    assert cov.state == automation.STALLED and "timed out at" in cov.summary, cov.summary
    assert not automation.stands_back(cov, captured, 120.0)
