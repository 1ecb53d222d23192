"""Owners a stuck pod holds, judged by the real control plane (issue 33 item 5: update strategies
and termination paths drawn from pkg/controller/*, docs/audit.md's map).

- A Deployment rolling out with strategy Recreate creates no pod of its new template while a pod
  of an older ReplicaSet is not Failed or Succeeded (recreate.go oldPodsRunning): the pod its
  old ReplicaSet deleted on the dead node holds the whole rollout. Its RollingUpdate neighbour
  is not held. The diagnosis says which, the advice frees the held one, and the plan's
  out-of-service taint releases it: the new template runs.
- A Job whose replacement succeeded is SuccessCriteriaMet but not Complete while its old pod is
  Terminating (job_controller.go delayTerminalCondition), so its CronJob with concurrencyPolicy
  Forbid skips every run. The diagnosis says so, and the taint releases it: Complete.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane, wait_for
from tests.e2e.helpers import (
    claims_of,
    first_run_pod,
    pod_row,
    pods,
    remediate_confirmed,
    terminating,
    wait_node_ready,
    wait_node_unknown,
)

pytestmark = pytest.mark.e2e
Obj = dict[str, Any]


def _roll_out_unpinned(cp: ControlPlane, ns: str, name: str) -> None:
    """A new pod template that may run anywhere (the old one was pinned to the failed node)."""
    patch = {
        "spec": {
            "template": {
                "metadata": {"annotations": {"e2e/rollout": "2"}},
                "spec": {"nodeSelector": None},
            }
        }
    }
    cp.kubectl("patch", "deployment", "-n", ns, name, "--type=strategic", "-p", json.dumps(patch))


def test_a_recreate_rollout_waits_on_the_dead_nodes_pod(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    cp, ns, node = control_plane, "scenario-recreate", "flaky-u1"
    cp.add_failable_node(node)
    wait_node_ready(cp, node)
    recreate = w.deployment(ns, "recreate", pin=node, toleration_seconds=None, grace=5)
    recreate["spec"]["strategy"] = {"type": "Recreate"}
    rolling = w.deployment(ns, "rolling", pin=node, toleration_seconds=None, grace=5)
    cp.apply(w.namespace(ns), recreate, rolling)
    for app in ("recreate", "rolling"):
        wait_for(
            f"{app} Running on {node}",
            lambda a=app: any(p["status"].get("phase") == "Running" for p in pods(cp, ns, a)),
            60,
        )
    cp.stop_kubelet(node)
    wait_node_unknown(cp, node)
    for app in ("recreate", "rolling"):
        _roll_out_unpinned(cp, ns, app)
    # the old ReplicaSets are scaled down: their pods on the dead node stay Terminating
    for app in ("recreate", "rolling"):
        wait_for(
            f"{app}'s old pod Terminating",
            lambda a=app: any(terminating(p) for p in pods(cp, ns, a)),
            60,
        )
    wait_for(
        "rolling's new template Running elsewhere",
        lambda: any(
            p["status"].get("phase") == "Running" and p["spec"].get("nodeName") != node
            for p in pods(cp, ns, "rolling")
        ),
        60,
    )
    time.sleep(15)  # the Recreate rollout had its chance to create a pod: it made none
    assert [p for p in pods(cp, ns, "recreate") if not terminating(p)] == []

    plugin.record("recreate-rollout-node-down", "Recreate and RollingUpdate rollouts", "held")
    _, data = plugin.diagnose_json()
    held = pod_row(data, ns, "recreate-")
    assert held["replacement"]["state"] == "blocked", held["replacement"]
    assert any("strategy Recreate" in t for t in claims_of(held, "blocks")), held["claims"]
    assert held["action"]["code"] == "out-of-service", held["action"]
    free = pod_row(data, ns, "rolling-")
    assert free["replacement"]["state"] != "blocked", free["replacement"]
    assert not claims_of(free, "blocks") and free["action"]["code"] == "wait", free["action"]

    # the remedy the plan offers releases it: the Recreate rollout goes on
    result = remediate_confirmed(plugin, node)
    taint = next(s for s in result["steps"] if s["action"] == "taint-out-of-service")
    assert any(held["name"] in r for r in taint["releases"]), taint
    assert taint["result"] == "done", taint
    wait_for(
        "recreate's new template Running elsewhere",
        lambda: any(
            p["status"].get("phase") == "Running"
            and not terminating(p)
            and p["spec"].get("nodeName") != node
            for p in pods(cp, ns, "recreate")
        ),
        90,
    )


def test_a_job_held_open_by_its_terminating_pod_holds_its_forbid_cronjob(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    cp, ns, node = control_plane, "scenario-held-job", "flaky-u2"
    cp.add_failable_node(node)
    wait_node_ready(cp, node)
    cron = w.cronjob(ns, "report", prefer=node, toleration_seconds=10, grace=5)
    cron["spec"].update({"schedule": "* * * * *", "concurrencyPolicy": "Forbid", "suspend": False})
    cp.apply(w.namespace(ns), cron)
    first = first_run_pod(cp, ns, node, 90)
    job_name = first["metadata"]["ownerReferences"][0]["name"]
    cp.stop_kubelet(node)
    wait_node_unknown(cp, node)

    def job() -> Obj:
        return dict(cp.get("job", job_name, ns))

    def conditions() -> dict[str, str]:
        return {c["type"]: c["status"] for c in job()["status"].get("conditions") or []}

    # evicted after 10 s; replaced on a healthy node, where kwok completes it at once
    wait_for("SuccessCriteriaMet", lambda: conditions().get("SuccessCriteriaMet") == "True", 120)
    time.sleep(5)
    assert "Complete" not in conditions(), job()["status"]
    assert job()["status"].get("terminating") == 1, job()["status"]
    # the next minute's run is skipped: the Job is still active for the CronJob
    started = time.monotonic()
    wait_for(
        "a run skipped (JobAlreadyActive)",
        lambda: "JobAlreadyActive" in cp.kubectl("get", "events", "-n", ns, "-o", "json"),
        75,
    )
    assert len(cp.get("jobs", namespace=ns)["items"]) == 1
    print(f"[e2e] JobAlreadyActive after {time.monotonic() - started:.0f}s")

    plugin.record("job-held-open-cronjob-forbid", "Job held open, CronJob Forbid", "held")
    _, data = plugin.diagnose_json()
    row = pod_row(data, ns, first["metadata"]["name"])
    said = " ".join(claims_of(row, "blocks"))
    assert "SuccessCriteriaMet=True but is not Complete" in said, row["claims"]
    assert "concurrencyPolicy Forbid" in said, said
    assert row["replacement"]["state"] == "blocked", row["replacement"]
    assert row["action"]["code"] == "out-of-service", row["action"]

    result = remediate_confirmed(plugin, node)
    taint = next(s for s in result["steps"] if s["action"] == "taint-out-of-service")
    assert any(first["metadata"]["name"] in r for r in taint["releases"]), taint
    wait_for("the Job Complete", lambda: conditions().get("Complete") == "True", 90)
