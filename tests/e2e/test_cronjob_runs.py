"""A CronJob on a live schedule, judged by the real control plane (map row 19, docs/audit.md):
with concurrencyPolicy Replace, the run the diagnosis times from the schedule deletes the Job in
the minute it names, not before, and the garbage collector then deletes the pod. Its own module:
it waits on the CronJob controller's minutes (about two and a half), beside the others."""

from __future__ import annotations

import time

import pytest

from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane, wait_for
from tests.e2e.helpers import claims_of, first_run_pod, pod_row, wait_node_ready, wait_node_unknown

pytestmark = pytest.mark.e2e


def test_a_replace_cronjobs_next_run_deletes_the_job_when_said(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    """A CronJob with concurrencyPolicy Replace whose Job's pod is on a dead node: the diagnosis
    times its next run from the schedule (two minutes named, the second two minutes after the
    first: not the minute between) and says that run deletes the Job; the CronJob controller
    deletes it in that minute, not before, and the garbage collector deletes the pod."""
    cp, ns, node = control_plane, "scenario-replace-job", "flaky-u3"
    cp.add_failable_node(node)
    wait_node_ready(cp, node)
    now = time.gmtime()
    # the first run must not come before the CronJob exists
    first_minute = (now.tm_min + (2 if now.tm_sec > 45 else 1)) % 60
    second_minute = (first_minute + 2) % 60
    cron = w.cronjob(ns, "sweep", pin=node, toleration_seconds=None, grace=5)
    cron["spec"].update(
        {
            "schedule": f"{first_minute},{second_minute} * * * *",
            "timeZone": "Etc/UTC",  # named: a run a half-hour zone would move is not timed
            "concurrencyPolicy": "Replace",
            "suspend": False,
        }
    )
    cp.apply(w.namespace(ns), cron)
    first = first_run_pod(cp, ns, node, 150)
    job_name = first["metadata"]["ownerReferences"][0]["name"]
    cp.stop_kubelet(node)
    wait_node_unknown(cp, node)

    _, data = plugin.diagnose_json()
    row = pod_row(data, ns, first["metadata"]["name"])
    (said,) = claims_of(row, "scheduled-run")
    assert f"deletes Job {job_name}" in said, said
    schedule = f"schedule '{first_minute},{second_minute} * * * *', timeZone Etc/UTC)"
    assert f":{second_minute:02d} UTC; {schedule}" in said, said

    def deleted() -> bool:
        jobs = {j["metadata"]["name"]: j for j in cp.get("jobs", namespace=ns)["items"]}
        return job_name not in jobs or bool(jobs[job_name]["metadata"].get("deletionTimestamp"))

    assert not deleted(), "the Job went before the run that deletes it"
    wait_for("the Replace run deletes the Job", deleted, 200)
    assert time.gmtime().tm_min == second_minute, time.gmtime()
    pod = wait_for(
        "the garbage collector deletes its pod",
        lambda: (
            (p := cp.get("pod", first["metadata"]["name"], ns))["metadata"].get("deletionTimestamp")
            and p
        ),
        60,
    )
    assert pod["spec"]["nodeName"] == node
    cp.start_kubelet(node)
    wait_node_ready(cp, node)
