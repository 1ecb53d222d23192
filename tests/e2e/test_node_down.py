"""Scenarios 1-8: one node's kubelet stops, with every kind of workload on it, then returns.

Each test asserts what the real control plane did (the ground truth), and at three moments
(before eviction, after eviction, after recovery) the installed `kubectl nodefail diagnose`
is run and its JSON checked against that truth.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane, wait_for
from tests.e2e.helpers import (
    check_job_pod,
    pod_on,
    pods,
    ready,
    running,
    taint_keys,
    terminating,
    wait_node_ready,
    wait_node_unknown,
    wait_running_elsewhere,
    wait_running_on,
    wait_terminating_on,
)

pytestmark = pytest.mark.e2e
NS = "scenario-down"
NODE = "flaky-a"
# Long enough to capture the moment before eviction (taint seen, a dump and a diagnosis) with two
# suites side by side on 2 cores: 20 s was outrun at load ~25 (2026-12-02, run m).
TOLERATION = 60
GRACE = 10  # terminationGracePeriodSeconds: short, so "stuck past its grace period" shows soon
APPS = ("web", "pinned", "db", "agent", "lonely", "batch", "batch-pfp", "nightly", "operated")
UNREACHABLE = "node.kubernetes.io/unreachable"


@dataclass
class State:
    cp: ControlPlane
    plugin: Plugin
    before: dict[str, Any] = field(default_factory=dict)  # pod uids on NODE before the failure
    diagnoses: dict[str, Any] = field(default_factory=dict)
    codes: dict[str, int] = field(default_factory=dict)


def _pod_in(diagnosis: Any, name: str) -> Any:
    found = [p for p in diagnosis["pods"] if p["name"] == name and p["namespace"] == NS]
    assert found, f"pod {name} missing from diagnosis: {[p['name'] for p in diagnosis['pods']]}"
    return found[0]


def _capture(state: State, moment: str) -> None:
    state.plugin.record(f"node-down-{moment}", "node-down (scenarios 1-8)", moment)
    state.codes[moment], state.diagnoses[moment] = state.plugin.diagnose_json()


@pytest.fixture(scope="module")
def down(control_plane: ControlPlane, plugin: Plugin) -> State:
    cp = control_plane
    cp.add_failable_node(NODE)
    wait_node_ready(cp, NODE)
    cp.apply(
        w.namespace(NS),
        w.deployment(NS, "web", prefer=NODE, toleration_seconds=TOLERATION, grace=GRACE),
        w.deployment(NS, "pinned", pin=NODE, toleration_seconds=TOLERATION, grace=GRACE),
        w.statefulset(NS, "db", prefer=NODE, toleration_seconds=TOLERATION, grace=GRACE),
        w.daemonset(NS, "agent"),
        w.bare_pod(NS, "lonely", pin=NODE, toleration_seconds=TOLERATION, grace=GRACE),
        w.job(NS, "batch", prefer=NODE, toleration_seconds=TOLERATION, grace=GRACE),
        w.job(
            NS,
            "batch-pfp",
            failure_policy=True,
            prefer=NODE,
            toleration_seconds=TOLERATION,
            grace=GRACE,
        ),
        w.cronjob(NS, "nightly", prefer=NODE, toleration_seconds=TOLERATION, grace=GRACE),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "operator-state", "namespace": NS},
        },
    )
    cp.kubectl("create", "job", "-n", NS, "nightly-manual", "--from=cronjob/nightly")
    owner = cp.get("configmap", "operator-state", namespace=NS)
    cp.apply(
        w.operated_pod(NS, "operated", owner, pin=NODE, toleration_seconds=TOLERATION, grace=GRACE)
    )
    state = State(cp, plugin)
    for app in APPS:
        state.before[app] = wait_running_on(cp, NS, app, NODE)["metadata"]["uid"]
    code, healthy = plugin.diagnose_json()
    state.codes["healthy"], state.diagnoses["healthy"] = code, healthy
    cp.stop_kubelet(NODE)
    return state


def test_healthy_cluster_gets_a_short_answer(down: State) -> None:
    assert down.codes["healthy"] == 0
    assert down.diagnoses["healthy"]["summary"]["problems"] is False
    assert down.diagnoses["healthy"]["nodes"] == []


def test_1_kubelet_stops_node_goes_unknown_and_tainted(down: State) -> None:
    cond = wait_node_unknown(down.cp, NODE)
    assert cond["reason"] == "NodeStatusUnknown"
    assert cond["message"] == "Kubelet stopped posting node status."
    wait_for(
        "unreachable NoSchedule and NoExecute taints",
        lambda: (
            {(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")} <= taint_keys(down.cp, NODE)
        ),
        30,
    )
    web = pod_on(down.cp, NS, "web", NODE)
    assert web is not None and web["status"]["phase"] == "Running" and not terminating(web)
    pod_ready = next(c for c in web["status"]["conditions"] if c["type"] == "Ready")
    assert pod_ready["status"] == "False"  # the controller marks pods on the node not ready
    _capture(down, "before-eviction")


def test_diagnosis_before_eviction(down: State) -> None:
    d = down.diagnoses["before-eviction"]
    assert down.codes["before-eviction"] == 3
    node = next(n for n in d["nodes"] if n["name"] == NODE)
    assert node["status"] == "NotReady"
    assert node["cause"]["code"] == "kubelet-stopped"
    assert {"key": UNREACHABLE, "effect": "NoExecute"}.items() <= next(
        t for t in node["taints"] if t["effect"] == "NoExecute"
    ).items()
    web = _pod_in(d, d_name(d, "web"))
    assert web["kubectlStatus"] == "Running" and web["category"] == "on-failed-node"
    assert "only the last report" in web["meaning"]
    assert web["replacement"]["state"] == "not-yet"
    assert web["evictionAt"] is not None and web["action"]["code"] == "wait"
    agent = _pod_in(d, d_name(d, "agent"))
    assert agent["controller"] == "daemonset" and "never evicted" in agent["timeline"]
    db = _pod_in(d, "db-0")
    assert db["controller"] == "statefulset" and db["replacement"]["state"] == "blocked"


def d_name(diagnosis: Any, app: str) -> str:
    """The pod name of `app` on the failed node in a diagnosis (names carry random suffixes)."""
    names = [
        p["name"]
        for p in diagnosis["pods"]
        if p["namespace"] == NS
        and p["node"] == NODE
        and (p["name"] == app or p["name"].startswith(app + "-"))
        and not p["name"].startswith(app + "-pfp")
    ]
    assert names, f"no pod of {app} on {NODE} in the diagnosis"
    return names[0]


def test_2_deployment_pod_evicted_and_replaced_elsewhere(down: State) -> None:
    old = wait_terminating_on(down.cp, NS, "web", NODE, timeout=TOLERATION + 60)
    assert old["metadata"]["uid"] == down.before["web"]
    reasons = [
        c.get("reason")
        for c in old["status"].get("conditions", [])
        if c["type"] == "DisruptionTarget"
    ]
    assert reasons == ["DeletionByTaintManager"]
    new = wait_running_elsewhere(down.cp, NS, "web", NODE)
    assert new["metadata"]["uid"] != down.before["web"]


def test_3_pinned_deployment_replacement_stays_pending(down: State) -> None:
    wait_terminating_on(down.cp, NS, "pinned", NODE, timeout=TOLERATION + 60)

    def pending() -> Any:
        return [
            p
            for p in pods(down.cp, NS, "pinned")
            if p["status"].get("phase") == "Pending" and not p["spec"].get("nodeName")
        ]

    found = wait_for("a Pending replacement of pinned", pending, 30)
    scheduled = next(c for c in found[0]["status"]["conditions"] if c["type"] == "PodScheduled")
    assert scheduled["status"] == "False" and scheduled["reason"] == "Unschedulable"


def test_4_statefulset_pod_blocks_its_own_replacement(down: State) -> None:
    old = wait_terminating_on(down.cp, NS, "db", NODE, timeout=TOLERATION + 60)
    time.sleep(5)  # give the StatefulSet controller time to (not) act
    all_db = pods(down.cp, NS, "db")
    assert [p["metadata"]["uid"] for p in all_db] == [old["metadata"]["uid"]]
    assert all_db[0]["metadata"]["name"] == "db-0"


def test_5_daemonset_pod_is_never_evicted(down: State) -> None:
    wait_terminating_on(down.cp, NS, "web", NODE, timeout=TOLERATION + 60)
    time.sleep(3)
    agent = pod_on(down.cp, NS, "agent", NODE)
    assert agent is not None and not terminating(agent)
    assert agent["metadata"]["uid"] == down.before["agent"]


def test_6_bare_pod_terminating_never_replaced(down: State) -> None:
    old = wait_terminating_on(down.cp, NS, "lonely", NODE, timeout=TOLERATION + 60)
    time.sleep(3)
    assert [p["metadata"]["uid"] for p in pods(down.cp, NS, "lonely")] == [old["metadata"]["uid"]]


def test_7_jobs_replacement_depends_on_pod_replacement_policy(down: State) -> None:
    wait_terminating_on(down.cp, NS, "batch", NODE, timeout=TOLERATION + 60)
    wait_terminating_on(down.cp, NS, "batch-pfp", NODE, timeout=TOLERATION + 60)
    # TerminatingOrFailed (default): a replacement pod is created at once.
    wait_for(
        "a replacement pod of Job batch",
        lambda: [
            p for p in pods(down.cp, NS, "batch") if p["metadata"]["uid"] != down.before["batch"]
        ],
        30,
    )
    # podFailurePolicy set -> podReplacementPolicy Failed: no replacement while it terminates.
    time.sleep(5)
    job = down.cp.get("job", "batch-pfp", namespace=NS)
    assert job["spec"]["podReplacementPolicy"] == "Failed"
    assert [p["metadata"]["uid"] for p in pods(down.cp, NS, "batch-pfp")] == [
        down.before["batch-pfp"]
    ]
    # Capture once every evicted pod is past its grace period: stuck, not merely terminating.


def _seconds_until(rfc3339: str) -> float:
    from datetime import datetime, timezone

    when = datetime.fromisoformat(rfc3339.replace("Z", "+00:00"))
    return (when - datetime.now(timezone.utc)).total_seconds()


def test_7b_cronjob_pod_replaced_and_operated_pod_left_alone(down: State) -> None:
    wait_terminating_on(down.cp, NS, "nightly", NODE, timeout=TOLERATION + 60)
    wait_for(
        "a replacement pod of the CronJob's Job",
        lambda: [
            p
            for p in pods(down.cp, NS, "nightly")
            if p["metadata"]["uid"] != down.before["nightly"]
        ],
        30,
    )
    old = wait_terminating_on(down.cp, NS, "operated", NODE, timeout=TOLERATION + 60)
    time.sleep(3)  # nothing this cluster runs recreates it
    assert [p["metadata"]["uid"] for p in pods(down.cp, NS, "operated")] == [old["metadata"]["uid"]]
    # Capture once every evicted pod is past its grace period: stuck, not merely terminating.
    deadlines = [p["metadata"]["deletionTimestamp"] for p in pods(down.cp, NS, "db")]
    time.sleep(max(0.0, _seconds_until(deadlines[0]) + 2))
    _capture(down, "after-eviction")


def test_diagnosis_after_eviction(down: State) -> None:
    d = down.diagnoses["after-eviction"]
    web = _pod_in(d, d_name(d, "web"))
    assert web["kubectlStatus"] == "Terminating"
    assert web["replacement"]["state"] == "running"
    assert web["controller"] == "deployment"
    assert [o["kind"] for o in web["ownerChain"]] == ["ReplicaSet", "Deployment"]
    pinned = _pod_in(d, d_name(d, "pinned"))
    assert pinned["replacement"]["state"] == "pending"
    assert pinned["replacement"]["pendingReason"].startswith("pinned")
    db = _pod_in(d, "db-0")
    assert db["kubectlStatus"] == "Terminating" and db["replacement"]["state"] == "blocked"
    assert db["action"]["code"] == "out-of-service" and db["action"]["risk"] == "high"
    assert "--node-shutdown-confirmed" in db["action"]["remediate"]
    lonely = _pod_in(d, "lonely")
    assert lonely["controller"] == "bare" and lonely["replacement"]["state"] == "none"
    batch = _pod_in(d, d_name(d, "batch"))
    assert batch["controller"] == "job"
    check_job_pod(batch)
    pfp = _pod_in(d, d_name(d, "batch-pfp"))
    assert pfp["replacement"]["state"] == "blocked" and "Failed" in pfp["explanation"]
    agent = _pod_in(d, d_name(d, "agent"))
    assert agent["kubectlStatus"] == "Running" and agent["action"]["code"] == "wait"
    nightly = _pod_in(d, d_name(d, "nightly"))
    assert nightly["controller"] == "cronjob"
    assert [o["kind"] for o in nightly["ownerChain"]] == ["Job", "CronJob"]
    operated = _pod_in(d, "operated")
    assert operated["controller"] == "other" and operated["replacement"]["state"] == "unknown"
    assert "ConfigMap operator-state" in operated["explanation"]


def test_8_kubelet_returns_everything_settles(down: State) -> None:
    cp = down.cp
    cp.start_kubelet(NODE)
    wait_node_ready(cp, NODE)
    wait_for(
        "unreachable taints removed",
        lambda: not {k for k in taint_keys(cp, NODE) if k[0] == UNREACHABLE},
        30,
    )
    for app in ("web", "pinned", "lonely", "batch", "nightly", "operated"):
        wait_for(
            f"old {app} pod removed",
            lambda app=app: (
                down.before[app] not in {p["metadata"]["uid"] for p in pods(cp, NS, app)}
            ),
            60,
        )
    db = wait_for(
        "db-0 recreated and Running",
        lambda: [
            p
            for p in pods(cp, NS, "db")
            if p["metadata"]["uid"] != down.before["db"] and running(p)
        ],
        60,
    )[0]
    assert db["metadata"]["name"] == "db-0"
    agent = pod_on(cp, NS, "agent", NODE)
    assert running(agent) and agent["metadata"]["uid"] == down.before["agent"]  # type: ignore[index]
    wait_for(
        "pinned replacement Running on the returned node",
        lambda: wait_running_on(cp, NS, "pinned", NODE, timeout=1),
        60,
    )
    # podReplacementPolicy Failed waits for phase Failed, and the Job's tracking finalizer holds
    # the pod until then. A real kubelet reports Failed before removing a killed pod; kwok only
    # deletes it, so here the old pod stays. Report the terminal phase as the kubelet would, and
    # the real Job controller takes it from there.
    old = pod_on(cp, NS, "batch-pfp", NODE)
    assert old is not None and old["metadata"]["uid"] == down.before["batch-pfp"]
    assert terminating(old)
    assert old["metadata"]["finalizers"] == ["batch.kubernetes.io/job-tracking"]
    cp.kubectl(
        "patch",
        "pod",
        "-n",
        NS,
        old["metadata"]["name"],
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"phase":"Failed"}}',
    )
    wait_for(
        "batch-pfp replacement created",
        lambda: [
            p for p in pods(cp, NS, "batch-pfp") if p["metadata"]["uid"] != down.before["batch-pfp"]
        ],
        60,
    )
    wait_for(
        "old batch-pfp pod released by the Job controller",
        lambda: (
            down.before["batch-pfp"]
            not in {p["metadata"]["uid"] for p in pods(cp, NS, "batch-pfp")}
        ),
        60,
    )
    assert ready(cp, NODE)["status"] == "True"
    _capture(down, "recovered")


def test_diagnosis_after_recovery(down: State) -> None:
    d = down.diagnoses["recovered"]
    assert down.codes["recovered"] == 0, d["pods"]
    assert d["nodes"] == [] and d["pods"] == []
