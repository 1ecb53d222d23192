"""Two Job paths recorded on the real control plane (audit seed 2037, before the eviction): what
the eviction brings is said from the Job's own rule, not assumed from its kind."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.findings import PodFinding
from kubectl_nodefail.render import render
from kubectl_nodefail.snapshot.model import from_items, load_dump, parse_time
from tests.oracles import premises
from tests.unit.conftest import FIXTURES, with_leader


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


@pytest.mark.parametrize(
    ("rules", "says", "never"),
    [
        (  # recorded as it is: the Ignore rule
            None,
            "does not count it as failed (its podFailurePolicy ignores DisruptionTarget) and then "
            "creates the replacement",
            "fails",
        ),
        (
            [{"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget"}]}],
            "a FailJob rule of its podFailurePolicy matches, so Job batch-pfp fails",
            "creates the replacement",
        ),
        (
            [{"action": "Count", "onPodConditions": [{"type": "DisruptionTarget"}]}],
            "the Job counts it as failed and then creates the replacement",
            "fails",
        ),
        (
            [{"action": "FailIndex", "onPodConditions": [{"type": "DisruptionTarget"}]}],
            "its index fails and is not run again",
            "creates the replacement",
        ),
        (
            [
                {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
            ],
            "depends on the containers' exit codes",
            "creates the replacement",
        ),
        (  # a rule on another condition, or on DisruptionTarget False, does not match
            [
                {"action": "FailJob", "onPodConditions": [{"type": "ConfigIssue"}]},
                {
                    "action": "FailJob",
                    "onPodConditions": [{"type": "DisruptionTarget", "status": "False"}],
                },
            ],
            "the Job counts it as failed and then creates the replacement",
            "fails",
        ),
    ],
)
def test_what_a_jobs_pod_failure_policy_does_when_the_node_returns(
    rules: Any, says: str, never: str
) -> None:
    """The evicted pod of a Job with a podFailurePolicy, once its kubelet sets it Failed: the
    first rule that matches decides (Ignore, Count, FailJob, FailIndex; an onExitCodes rule
    first leaves it to the exit codes; no match counts it)."""
    doc = json.loads((FIXTURES / "node-down-after-eviction.json").read_text())
    if rules is not None:
        job = next(i for i in doc["items"] if i["metadata"]["name"] == "batch-pfp")
        job["spec"]["podFailurePolicy"]["rules"] = rules
    snap = from_items(doc["items"], parse_time(doc["capturedAt"]), server_version="v1.36.1")
    report = diagnose(snap, snap.captured_at)
    (pod,) = [p for p in report.pods if p.name.startswith("batch-pfp-")]
    assert says in pod.if_node_returns and never not in pod.if_node_returns
    assert pod.replacement.state == "blocked"  # podReplacementPolicy Failed, whatever the rule
    raw = {**doc, "serverVersion": "v1.36.1"}
    assert premises.check(raw, render.report_data(report)) == []


@pytest.mark.parametrize("evicted", [1, 2, 3])
def test_the_jobs_backoff_counts_every_pod_evicted_at_once(evicted: int) -> None:
    """Audit 2051/95: three pods of a Job evicted in the same second count three failures, so
    the next pods come after 10 s x 2^2 = 40 s (they did, at 04:20:18), not within 10 s."""
    doc = json.loads((FIXTURES / "job-three-evicted-at-once.json").read_text())
    pods = sorted(
        (i for i in doc["items"] if i.get("kind") == "Pod" and "w-manual" in i["metadata"]["name"]),
        key=lambda i: i["metadata"]["name"],
    )
    for pod in pods[:evicted]:
        pod["metadata"]["deletionTimestamp"] = doc["capturedAt"]
        pod["metadata"]["deletionGracePeriodSeconds"] = 30
    captured = parse_time(doc["capturedAt"])
    assert captured is not None
    snap = from_items(doc["items"], captured, server_version=doc.get("serverVersion"))
    data = render.report_data(diagnose(snap, captured))
    said = {p["name"]: p["replacement"]["summary"] for p in data["pods"]}
    bound = 10 * 2 ** (evicted - 1)
    for pod in pods[:evicted]:
        assert f"within {bound} s" in said[pod["metadata"]["name"]], said
    assert premises.check(doc, data) == []


@pytest.mark.parametrize("late", [0, 45, 3 * 3600])
def test_a_job_that_made_no_pod_long_after_its_backoff_is_not_said_to_make_one(late: int) -> None:
    """Audit 2051/95, the three pods evicted at once (a backoff of 40 s), read `late` seconds
    after their deletion: within the backoff and the controller's sync the next pod is due;
    past them (hours later, say, where a quota or a webhook refused every pod), none is promised
    ("within 40 s" of the reading was false): the replacement is missing, and why may be."""
    doc = json.loads((FIXTURES / "job-three-evicted-at-once.json").read_text())
    pods = [
        i for i in doc["items"] if i.get("kind") == "Pod" and "w-manual" in i["metadata"]["name"]
    ]
    for pod in pods:
        pod["metadata"]["deletionTimestamp"] = doc["capturedAt"]
        pod["metadata"]["deletionGracePeriodSeconds"] = 30
    captured = parse_time(doc["capturedAt"])
    assert captured is not None
    snap = from_items(doc["items"], captured, server_version=doc.get("serverVersion"))
    at = captured + timedelta(seconds=late)
    data = render.report_data(diagnose(snap, at))
    rows = [p for p in data["pods"] if "w-manual" in p["name"]]
    assert len(rows) == len(pods) == 3
    for row in rows:
        said = row["replacement"]["summary"]
        if late <= 40 + 30:  # its backoff, then the controller's sync
            assert row["replacement"]["state"] == "not-yet" and "within 40 s" in said, said
        else:
            assert row["replacement"]["state"] == "missing" and "within" not in said, said
            assert "making one fails (quota, admission" in said, said
    assert premises.check(doc, data) == []


@pytest.mark.parametrize("hours", [0, 3])
def test_a_replace_run_hours_overdue_under_a_running_leader_is_not_promised(hours: int) -> None:
    """Audit 2050/83 (CronJob w, concurrencyPolicy Replace, hourly, Job w-manual active), read
    `hours` after, its leader running since long before and renewing at the reading: the run
    due since is one the CronJob controller starts within seconds of its time; hours overdue,
    it is said not to be acting, the deletion conditional ("if it ever starts")."""
    snap = load_dump(str(FIXTURES / "audit" / "seed2050-83-d1.json"))
    at = snap.captured_at + timedelta(hours=hours, minutes=2 if hours else 0)
    snap = with_leader(snap, snap.captured_at - timedelta(days=1), at)
    data = render.report_data(diagnose(snap, at))
    said = [
        c["text"]
        for p in data["pods"]
        for c in p["claims"]
        if "concurrencyPolicy Replace" in c["text"]
    ]
    assert said
    for text in said:
        stalled = "it is not acting on this CronJob" in text and "if it ever starts" in text
        assert stalled == bool(hours), text


def test_a_leader_that_just_took_over_is_given_its_time_to_make_the_jobs_pod() -> None:
    """The three pods evicted at once, read 3 h on under a leader that took over 10 s before:
    its Job controller syncs from its start, so the pod is still to come, not missing."""
    doc = json.loads((FIXTURES / "job-three-evicted-at-once.json").read_text())
    for item in doc["items"]:
        if item.get("kind") == "Pod" and "w-manual" in item["metadata"]["name"]:
            item["metadata"]["deletionTimestamp"] = doc["capturedAt"]
            item["metadata"]["deletionGracePeriodSeconds"] = 30
    captured = parse_time(doc["capturedAt"])
    assert captured is not None
    snap = from_items(doc["items"], captured, server_version=doc.get("serverVersion"))
    at = captured + timedelta(hours=3)
    snap = with_leader(snap, at - timedelta(seconds=10), at)
    data = render.report_data(diagnose(snap, at))
    rows = [p for p in data["pods"] if "w-manual" in p["name"]]
    assert rows and all(r["replacement"]["state"] == "not-yet" for r in rows), rows
