"""A Job whose next pod admission refuses, judged by the real control plane: its pod evicted from
a dead node, the Job controller tries to make another after its pod-failure backoff and the API
server refuses it (the namespace enforces Pod Security "restricted" since the first pod ran). The
diagnosis said "within N s" of every reading however late; past the backoff and the controller's
sync it says the replacement is missing and why that may be (analysis/controllers/jobs.py
_job_next_pod). In its own module: its failed node of its own."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from kubectl_nodefail.analysis.controllers.jobs import JOB_BACKOFF_BASE, JOB_CREATE_SLACK
from kubectl_nodefail.snapshot.model import parse_time
from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane, wait_for
from tests.e2e.helpers import (
    pod_row,
    pods,
    terminating,
    wait_node_ready,
    wait_node_unknown,
)

pytestmark = pytest.mark.e2e
NS, NODE, JOB = "scenario-job-refused", "refused-j1", "batch"


def test_a_job_whose_next_pod_is_refused_is_not_said_to_make_one(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    cp = control_plane
    cp.add_failable_node(NODE)
    wait_node_ready(cp, NODE)
    cp.apply(w.namespace(NS), w.job(NS, JOB, pin=NODE, toleration_seconds=5, grace=5))
    wait_for(
        f"{JOB} Running on {NODE}",
        lambda: any(p["status"].get("phase") == "Running" for p in pods(cp, NS, JOB)),
        60,
    )
    # what runs stays; what is made from now on must pass "restricted", which the template's
    # pod (no securityContext) does not
    cp.kubectl("label", "namespace", NS, "pod-security.kubernetes.io/enforce=restricted")
    cp.stop_kubelet(NODE)
    try:
        wait_node_unknown(cp, NODE)
        evicted = wait_for(
            "the Job's pod evicted (Terminating)",
            lambda: next((p for p in pods(cp, NS, JOB) if terminating(p)), None),
            90,
        )
        deleted = parse_time(evicted["metadata"]["deletionTimestamp"])
        assert deleted is not None
        _, early = plugin.diagnose_json("-n", NS)
        row = pod_row(early, NS, f"{JOB}-")
        if datetime.now(timezone.utc) < deleted + timedelta(seconds=JOB_BACKOFF_BASE):
            assert row["replacement"]["state"] == "not-yet", row["replacement"]
        # past the backoff and the controller's sync, from the deletion: the diagnosis bounds
        # the backoff by status.failed (1 once counted) plus the pod itself, so 2 x 10 s
        due = deleted + timedelta(seconds=2 * JOB_BACKOFF_BASE + JOB_CREATE_SLACK + 2)
        wait_for("the Job's backoff and sync past", lambda: datetime.now(timezone.utc) > due, 90)
        _, late = plugin.diagnose_json("-n", NS)
        # the control plane: nothing made, because admission refused it
        assert [p["metadata"]["uid"] for p in pods(cp, NS, JOB)] == [evicted["metadata"]["uid"]]
        events = cp.get("events", namespace=NS)["items"]
        refused = [e for e in events if e.get("reason") == "FailedCreate"]
        assert refused and "violates PodSecurity" in refused[-1]["message"], refused
        row = pod_row(late, NS, f"{JOB}-")
        said = row["replacement"]["summary"]
        assert row["replacement"]["state"] == "missing", row["replacement"]
        assert "within" not in said and "making one fails (quota, admission" in said, said
    finally:
        cp.start_kubelet(NODE)
        wait_node_ready(cp, NODE, timeout=90)
        cp.kubectl("delete", "namespace", NS, "--wait=false")
