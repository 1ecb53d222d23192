"""Two Job paths recorded on the real control plane (audit seed 2037, before the eviction): what
the eviction brings is said from the Job's own rule, not assumed from its kind."""

from __future__ import annotations

import json

from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.findings import PodFinding
from kubectl_nodefail.render import render
from kubectl_nodefail.snapshot.model import load_dump
from tests.oracles import premises
from tests.unit.conftest import FIXTURES


def _stuck(name: str) -> list[PodFinding]:
    path = FIXTURES / name
    snap = load_dump(str(path))
    report = diagnose(snap, snap.captured_at)
    raw = json.loads(path.read_text())
    assert premises.check(raw, render.report_data(report)) == []
    return [p for p in report.pods if p.namespace.startswith("au-")]


def test_a_job_waiting_for_phase_failed_gets_no_replacement_from_the_eviction() -> None:
    """podFailurePolicy set, so podReplacementPolicy Failed: once evicted the pod stays
    Terminating and the Job waits for phase Failed (audit 2037/11: the suggestion said "the
    controller then creates a replacement")."""
    (pod,) = _stuck("job-pfp-before-eviction.json")
    assert not pod.terminating and pod.eviction_at is not None
    assert pod.replacement.state == "blocked"
    assert "waits for it to fail" in pod.replacement.summary
    assert pod.action.code == "wait" and pod.action.until == pod.eviction_at
    assert "creates a replacement" not in pod.action.summary
    assert "waits for it to fail" in pod.action.summary


def test_a_job_another_controller_manages_is_not_said_to_be_replaced() -> None:
    """spec.managedBy names the harness (audit 2037/22): neither the replacement nor the wait
    speaks for the built-in Job controller."""
    stuck = _stuck("job-managed-before-eviction.json")
    assert len(stuck) == 3
    for pod in stuck:
        assert pod.replacement.state == "unknown"
        assert "managed by audit.nodefail/external (spec.managedBy)" in pod.explanation
        assert pod.action.code == "wait"
        assert "creates a replacement" not in pod.action.summary
        assert "depends on its owner" in pod.action.summary
