"""A stuck pod that holds its owner, on snapshots recorded from the real control plane
(tests/e2e/test_owner_held.py) and their neighbours: a Recreate rollout waiting on the old pod,
a Job held short of Complete (and its CronJob with concurrencyPolicy Forbid). Each sentence is
said only when its premises hold, and the advice frees the pod only when it holds something."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.findings import PodFinding
from kubectl_nodefail.snapshot.model import Snapshot, from_items, parse_time
from tests.unit.conftest import FIXTURES, load

Obj = dict[str, Any]


def _changed(name: str, change: Callable[[list[Obj]], None]) -> Snapshot:
    """The recorded snapshot with `change` made to its raw items."""
    doc = json.loads((FIXTURES / f"{name}.json").read_text())
    items = copy.deepcopy(doc["items"])
    change(items)
    captured = parse_time(doc["capturedAt"])
    assert captured is not None
    return from_items(items, captured, server_version=doc.get("serverVersion"), source=name)


def _pod(snap: Snapshot, prefix: str) -> PodFinding:
    report = diagnose(snap, snap.captured_at)
    return next(p for p in report.pods if p.name.startswith(prefix))


def _kind(items: list[Obj], kind: str, prefix: str = "") -> Obj:
    return next(
        i for i in items if i.get("kind") == kind and i["metadata"]["name"].startswith(prefix)
    )


def _blocks(pod: PodFinding) -> str:
    return " ".join(c.text for c in pod.claims if c.kind == "blocks")


def test_the_recreate_rollout_waits_on_the_old_pod_and_the_rolling_one_does_not() -> None:
    snap = load("recreate-rollout-node-down")
    held, free = _pod(snap, "recreate-"), _pod(snap, "rolling-")
    assert held.replacement.state == "blocked" and "strategy Recreate" in _blocks(held)
    premises = {(p.object.split("/")[0], p.field) for c in held.claims for p in c.because}
    assert ("Deployment", "spec.strategy.type") in premises
    assert ("ReplicaSet", "spec.replicas") in premises
    assert held.action.code == "out-of-service"
    assert free.replacement.state == "not-wanted" and not _blocks(free)
    assert free.action.code == "wait" and "cosmetic" in free.action.summary


def _deployment(change: Callable[[Obj], None]) -> Callable[[list[Obj]], None]:
    return lambda items: change(_kind(items, "Deployment", "recreate"))


@pytest.mark.parametrize(
    "why, change",
    [
        (
            "RollingUpdate",
            _deployment(lambda d: d["spec"].update(strategy={"type": "RollingUpdate"})),
        ),
        ("paused", _deployment(lambda d: d["spec"].update(paused=True))),
        # pods of the newest template run already (a strategy switched after an old pod stuck)
        ("new template running", _deployment(lambda d: d["status"].update(updatedReplicas=1))),
        # a scale or edit its controller has not synced yet: its status speaks of the old spec
        (
            "not synced",
            _deployment(lambda d: d["metadata"].update(generation=d["metadata"]["generation"] + 1)),
        ),
        ("scaled to 0", _deployment(lambda d: d["spec"].update(replicas=0))),
        (
            "its ReplicaSet still wanted",
            lambda items: _kind(items, "ReplicaSet", "recreate")["spec"].update(replicas=1),
        ),
        (
            "the pod finished",
            lambda items: _kind(items, "Pod", "recreate")["status"].update(phase="Failed"),
        ),
    ],
)
def test_a_recreate_neighbour_that_holds_nothing_is_not_called_held(
    why: str, change: Callable[[list[Obj]], None]
) -> None:
    pod = _pod(_changed("recreate-rollout-node-down", change), "recreate-")
    assert "strategy Recreate" not in _blocks(pod), why
    assert pod.replacement.state != "blocked" or why == "its ReplicaSet still wanted", why


def test_a_job_held_short_of_complete_holds_its_forbid_cronjob() -> None:
    snap = load("job-held-open-cronjob-forbid")
    pod = _pod(snap, "report-")
    said = _blocks(pod)
    assert "SuccessCriteriaMet=True but is not Complete" in said
    assert "concurrencyPolicy Forbid" in said
    assert pod.replacement.state == "blocked" and pod.replacement.pods  # the one that succeeded
    assert pod.action.code == "out-of-service"
    assert "then Job" in pod.if_node_returns and "is Complete" in pod.if_node_returns


def _cron(policy: str | None) -> Callable[[list[Obj]], None]:
    def change(items: list[Obj]) -> None:
        cron = _kind(items, "CronJob")
        spec = cron["spec"]
        spec.pop("concurrencyPolicy", None)
        if policy:
            spec["concurrencyPolicy"] = policy
        if policy != "Forbid":  # the 15:27 run, which Forbid skipped (recorded), would have run
            cron["status"]["lastScheduleTime"] = "2026-12-05T15:27:00Z"

    return change


def _job_conditions(conditions: list[Obj]) -> Callable[[list[Obj]], None]:
    return lambda items: _kind(items, "Job")["status"].update(conditions=conditions)


@pytest.mark.parametrize(
    "policy, says",
    [("Allow", None), (None, None), ("Replace", "concurrencyPolicy Replace")],
)
def test_what_the_cronjob_does_follows_its_concurrency_policy(
    policy: str | None, says: str | None
) -> None:
    pod = _pod(_changed("job-held-open-cronjob-forbid", _cron(policy)), "report-")
    said = _blocks(pod)
    assert "SuccessCriteriaMet=True" in said and "Forbid" not in said
    assert (says in said) if says else ("concurrencyPolicy" not in said)


def _cron_state(suspend: bool, listed: bool) -> Callable[[list[Obj]], None]:
    def change(items: list[Obj]) -> None:
        cron = _kind(items, "CronJob")
        cron["spec"]["suspend"] = suspend
        if not listed:  # a Job made outside the schedule (kubectl create job --from)
            cron["status"]["active"] = []

    return change


@pytest.mark.parametrize("policy", ["Forbid", "Replace", "Allow"])
@pytest.mark.parametrize(
    "suspend, listed",
    [(False, True), (True, True), (False, False), (True, False)],
)
def test_the_cronjob_waits_for_or_deletes_only_a_job_it_lists_and_only_while_not_suspended(
    policy: str, suspend: bool, listed: bool
) -> None:
    """The CronJob controller does nothing while suspended, and Forbid and Replace act on the
    Jobs its status.active lists (cronjob_controllerv2.go): a Job made by hand is neither waited
    for nor deleted, and only a Forbid that skipped runs is said to run again."""

    def change(items: list[Obj]) -> None:
        _cron(policy)(items)
        _cron_state(suspend, listed)(items)

    pod = _pod(_changed("job-held-open-cronjob-forbid", change), "report-")
    said = _blocks(pod)
    assert "SuccessCriteriaMet=True" in said
    if suspend:
        assert "is suspended: it starts no run" in said and "concurrencyPolicy" not in said
    elif not listed:
        assert ("not in CronJob report's status.active" in said) == (policy != "Allow")
        assert "Forbid: it starts no run" not in said and "next run deletes" not in said
    else:
        assert ("Forbid: it starts no run" in said) == (policy == "Forbid")
        assert ("Replace: its next run, in " in said and "deletes this Job" in said) == (
            policy == "Replace"
        )
    runs_again = policy == "Forbid" and listed and not suspend
    assert ("starts runs again" in pod.if_node_returns) == runs_again, pod.if_node_returns
    facts = {(p.object.split("/")[0], p.field) for c in pod.claims for p in c.because}
    assert ("CronJob", "spec.suspend") in facts


@pytest.mark.parametrize(
    "conditions, held",
    [
        ([], False),  # not finishing yet: the Job replaces it, nothing is held
        ([{"type": "SuccessCriteriaMet", "status": "False"}], False),
        (
            [
                {"type": "SuccessCriteriaMet", "status": "True"},
                {"type": "Complete", "status": "True"},
            ],
            False,  # finished already (a server that does not wait)
        ),
        ([{"type": "FailureTarget", "status": "True"}], True),
    ],
)
def test_a_job_is_held_only_while_it_has_met_its_criteria_and_is_not_finished(
    conditions: list[Obj], held: bool
) -> None:
    pod = _pod(_changed("job-held-open-cronjob-forbid", _job_conditions(conditions)), "report-")
    assert bool(_blocks(pod)) == held, pod.claims
    if held:
        assert "is not Failed" in _blocks(pod) and pod.replacement.state == "blocked"
    else:
        assert pod.replacement.state != "blocked"


def _owners(finalizers: list[str] | None) -> Callable[[list[Obj]], None]:
    """The Deployment and its ReplicaSet with these finalizers (None: not being deleted)."""

    def change(items: list[Obj]) -> None:
        for kind in ("Deployment", "ReplicaSet"):
            meta = _kind(items, kind, "gone")["metadata"]
            if finalizers is None:
                meta.pop("deletionTimestamp", None)
                meta.pop("finalizers", None)
            else:
                meta["finalizers"] = finalizers

    return change


def test_an_owner_deleted_in_the_foreground_waits_on_the_pod() -> None:
    pod = _pod(load("owner-deleted-in-foreground"), "gone-")
    said = _blocks(pod)
    assert "being deleted in the foreground" in said and "Deployment gone and ReplicaSet" in said
    assert pod.replacement.state == "blocked" and pod.action.code == "out-of-service"
    assert "finishes deleting Deployment gone" in pod.if_node_returns


@pytest.mark.parametrize(
    ("finalizers", "says"),
    [
        ([], "the garbage collector deletes this pod"),
        (["orphan"], "removes this pod's owner reference"),
        (None, "counts a Terminating pod as gone"),  # not being deleted: the ReplicaSet's rule
    ],
)
def test_an_owner_deleted_otherwise_does_not_wait_on_it(
    finalizers: list[str] | None, says: str
) -> None:
    pod = _pod(_changed("owner-deleted-in-foreground", _owners(finalizers)), "gone-")
    assert not _blocks(pod) and says in pod.explanation, pod.explanation
    assert pod.replacement.state != "blocked"


def test_a_deployment_deleted_alone_decides_nothing_its_replicaset_still_manages() -> None:
    """Only the ReplicaSet's own deletion stops it replacing pods: a Deployment being deleted
    whose ReplicaSet is not (yet) is not said to hold or orphan anything."""

    def only_the_deployment(items: list[Obj]) -> None:
        meta = _kind(items, "ReplicaSet", "gone")["metadata"]
        meta.pop("deletionTimestamp", None)
        meta.pop("finalizers", None)

    pod = _pod(_changed("owner-deleted-in-foreground", only_the_deployment), "gone-")
    assert "being deleted" not in pod.explanation and not _blocks(pod), pod.explanation


def test_what_is_said_of_the_kubelet_follows_the_nodes_state() -> None:
    """'while its kubelet is down' only for a pod on a failed node."""

    def node_ready(items: list[Obj]) -> None:
        for node in (i for i in items if i.get("kind") == "Node"):
            for cond in node["status"].get("conditions") or []:
                if cond["type"] == "Ready":
                    cond["status"] = "True"

    on_failed = _blocks(_pod(load("job-held-open-cronjob-forbid"), "report-"))
    assert "while its kubelet is down" in on_failed
    pod = _pod(_changed("job-held-open-cronjob-forbid", node_ready), "report-")
    assert "kubelet is down" not in " ".join(c.text for c in pod.claims), pod.claims


def _replace_policy(
    conditions: list[Obj] | None, suspend: bool = False, listed: bool = True
) -> Callable[[list[Obj]], None]:
    def change(items: list[Obj]) -> None:
        _cron("Replace")(items)
        _cron_state(suspend, listed)(items)
        if conditions is not None:
            _job_conditions(conditions)(items)

    return change


def _scheduled(pod: PodFinding) -> str:
    return " ".join(c.text for c in pod.claims if c.kind == "scheduled-run")


def test_a_replace_cronjob_deletes_the_job_at_its_next_run_timed_from_its_schedule() -> None:
    """The recorded CronJob runs every minute: with concurrencyPolicy Replace its next run,
    the first minute after the snapshot, deletes the Job (and so the pod's owner): said with
    the time, on the schedule's facts; held open or not."""
    snap = _changed("job-held-open-cronjob-forbid", _replace_policy(None))
    minute = (snap.captured_at.replace(second=0, microsecond=0) + timedelta(minutes=1)).strftime(
        "%H:%M"
    )
    held = _pod(snap, "report-")
    assert f"({minute} UTC; schedule '* * * * *')" in _blocks(held)
    assert "deletes this Job" in _blocks(held)
    running = _pod(_changed("job-held-open-cronjob-forbid", _replace_policy([])), "report-")
    said = _scheduled(running)
    assert f"({minute} UTC; schedule '* * * * *')" in said and "deletes Job report-" in said
    facts = {(p.object.split("/")[0], p.field) for c in running.claims for p in c.because}
    assert {("CronJob", "spec.schedule"), ("CronJob", "spec.timeZone")} <= facts

    def deleting(items: list[Obj]) -> None:
        _replace_policy([])(items)
        _kind(items, "CronJob")["metadata"]["deletionTimestamp"] = "2026-12-05T15:26:30Z"

    def never(items: list[Obj]) -> None:  # February 30th: valid, and never a run
        _replace_policy([])(items)
        _kind(items, "CronJob")["spec"]["schedule"] = "0 0 30 2 *"

    for quiet in (
        _replace_policy([], suspend=True),
        _replace_policy([], listed=False),
        deleting,
        never,
    ):
        assert not _scheduled(_pod(_changed("job-held-open-cronjob-forbid", quiet), "report-"))


def test_a_replacement_the_job_may_make_before_the_replace_run_is_a_race() -> None:
    """The Job's next pod comes at some moment up to its backoff's bound, and the Replace run
    that deletes the Job is due before that bound: either may come first (2050/83: the pods
    came at once), so the replacement is told as that race, with no bound."""

    def change(items: list[Obj]) -> None:
        _replace_policy([])(items)
        job = _kind(items, "Job")
        job["status"].update(succeeded=0, failed=9)  # a backoff of minutes
        for i in items:  # the pod that succeeded is gone: none found
            if i.get("kind") == "Pod" and i["status"].get("phase") == "Succeeded":
                i["metadata"]["ownerReferences"] = []

    pod = _pod(_changed("job-held-open-cronjob-forbid", change), "report-")
    assert _scheduled(pod)
    assert pod.replacement.state == "not-yet", pod.replacement
    assert pod.replacement.expected_by is None
    assert "unless CronJob report's next run deletes Job" in pod.replacement.summary


def test_a_run_missed_since_the_last_one_is_overdue_not_timed() -> None:
    """The recorded Forbid CronJob skipped its 15:27 run (lastScheduleTime 15:26); made Replace
    in that state, the controller has a missed run to start as soon as it syncs: said as
    overdue, not timed to the next minute; past its startingDeadlineSeconds, skipped."""

    def overdue(items: list[Obj]) -> None:
        _replace_policy([])(items)
        _kind(items, "CronJob")["status"]["lastScheduleTime"] = "2026-12-05T15:26:00Z"

    said = _scheduled(_pod(_changed("job-held-open-cronjob-forbid", overdue), "report-"))
    assert "its overdue run (due 0s ago" in said and "UTC;" not in said, said

    def skipped(items: list[Obj]) -> None:
        overdue(items)
        _kind(items, "CronJob")["spec"]["startingDeadlineSeconds"] = 0

    assert not _scheduled(_pod(_changed("job-held-open-cronjob-forbid", skipped), "report-"))
