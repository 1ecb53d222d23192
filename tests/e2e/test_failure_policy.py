"""A Job's podFailurePolicy on the node's return, judged by the real control plane: a FailJob rule
on DisruptionTarget fails the whole Job once its evicted pod is Failed, and nothing replaces the
pod; the diagnosis said so before the return (analysis/controllers/jobs.py _failure_rule). In its
own module: its failed node of its own, whose kubelet stages are the audit's."""

from __future__ import annotations

import pytest

from tests.audit.run import kubelet_stages
from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import HEALTHY_ZONE, ControlPlane, wait_for
from tests.e2e.helpers import pod_row, pods, terminating, wait_node_ready, wait_node_unknown

pytestmark = pytest.mark.e2e


def _job_condition(cp: ControlPlane, ns: str, name: str, ctype: str) -> dict | None:  # type: ignore[type-arg]
    job = cp.get("job", name, ns) or {}
    return next(
        (
            c
            for c in (job.get("status") or {}).get("conditions") or []
            if c["type"] == ctype and c["status"] == "True"
        ),
        None,
    )


def test_a_failjob_rule_fails_the_job_when_the_node_returns(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    cp, ns, node = control_plane, "scenario-failjob", "flaky-u4"
    # its kubelet sets a deleted pod Failed before it goes, as a kubelet does since 1.27 (kwok's
    # own stage removes it at once, and a podFailurePolicy sees no Failed pod to judge)
    stages = kubelet_stages(cp)
    cp.add_node(node, HEALTHY_ZONE, managed_by=node)
    cp.start_kubelet(node, stages)
    wait_node_ready(cp, node)
    job = w.job(ns, "strict", failure_policy=True, pin=node, toleration_seconds=5, grace=5)
    job["spec"]["podFailurePolicy"]["rules"][0]["action"] = "FailJob"
    cp.apply(w.namespace(ns), job)
    wait_for(
        "strict Running on the node",
        lambda: any(p["status"].get("phase") == "Running" for p in pods(cp, ns, "strict")),
        60,
    )
    before = {p["metadata"]["uid"] for p in pods(cp, ns, "strict")}
    cp.stop_kubelet(node)
    wait_node_unknown(cp, node)
    wait_for(
        "the pod evicted (Terminating)",
        lambda: any(terminating(p) for p in pods(cp, ns, "strict")),
        90,
    )
    _, data = plugin.diagnose_json()
    row = pod_row(data, ns, "strict-")
    said = row["ifNodeReturns"]
    assert "a FailJob rule of its podFailurePolicy matches, so Job strict fails" in said, said
    assert "creates the replacement" not in said and "counts it as failed" not in said, said
    assert row["replacement"]["state"] == "blocked", row["replacement"]

    cp.start_kubelet(node, stages)
    wait_node_ready(cp, node)
    failed = wait_for("the Job Failed", lambda: _job_condition(cp, ns, "strict", "Failed"), 120)
    assert failed["reason"] == "PodFailurePolicy", failed
    assert {p["metadata"]["uid"] for p in pods(cp, ns, "strict")} <= before  # none replaced it
