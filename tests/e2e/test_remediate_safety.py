"""remediate's safety promises on the real control plane: a tampered saved plan changes nothing,
outputs are checked before the first change, an interrupted run keeps its trail and a re-run
finishes it, a finalizer-held pod is named and never waited for, two runs on one node never
double-act, and the executor re-checks the live object itself. "Nothing changed" is proven from
the API server's audit log."""

from __future__ import annotations

import copy
import io
import json
import os
import signal
import subprocess
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from kubectl_nodefail.remediate import planfile
from kubectl_nodefail.remediate.plan import Step
from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin, Run, nodefail_bin
from tests.e2e.controlplane import ControlPlane, LeaseRenewing, wait_for
from tests.e2e.helpers import (
    attested,
    audit_writes,
    drop_finalizers,
    pod_on,
    running,
    taint_keys,
    terminating,
    wait_node_ready,
    wait_node_unknown,
    wait_running_on,
    wait_terminating_on,
)

pytestmark = pytest.mark.e2e
NS = "scenario-safety"
LOCK = "kubectl-nodefail.io/lock"
OOS = "node.kubernetes.io/out-of-service"

Obj = dict[str, Any]


def _json(proc: Any) -> Any:
    assert proc.stdout, f"no output (exit {proc.returncode}): {proc.stderr}"
    return json.loads(proc.stdout)


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _writes_between(cp: ControlPlane, start: datetime, end: datetime) -> list[Obj]:
    """The plugin's completed writes received in [start, end] (the audit log is written as
    requests complete; give it a moment)."""
    time.sleep(1)
    return [
        e
        for e in audit_writes(cp)
        if start
        <= datetime.fromisoformat(e["requestReceivedTimestamp"].replace("Z", "+00:00"))
        <= end
    ]


def _pod_deletes(cp: ControlPlane, names: set[str]) -> Counter[str]:
    """How often each of these pods was deleted successfully by the plugin (whole session)."""
    return Counter(
        e["objectRef"]["name"]
        for e in audit_writes(cp)
        if e["verb"] == "delete"
        and e["objectRef"].get("resource") == "pods"
        and e["objectRef"].get("namespace") == NS
        and e["objectRef"].get("name") in names
        and (e.get("responseStatus") or {}).get("code") == 200
    )


def _pods_on(cp: ControlPlane, node: str) -> list[Obj]:
    items = (cp.get("pods", namespace=NS) or {}).get("items") or []
    return [p for p in items if p["spec"].get("nodeName") == node]


def _annotations(cp: ControlPlane, node: str) -> dict[str, str]:
    return dict((cp.get("node", node) or {}).get("metadata", {}).get("annotations") or {})


def _fail_with_pods(cp: ControlPlane, node: str, count: int) -> list[Obj]:
    """A failable node with `count` bare pods pinned to it that tolerate the unreachable taint
    for an hour (so nothing evicts them); then its kubelet dies."""
    cp.add_failable_node(node)
    wait_node_ready(cp, node)
    cp.apply(
        w.namespace(NS),
        *[
            w.bare_pod(NS, f"{node}-p{i:02d}", pin=node, toleration_seconds=3600, grace=10)
            for i in range(count)
        ],
    )
    wait_for(
        f"{count} pods Running on {node}",
        lambda: len([p for p in _pods_on(cp, node) if running(p)]) == count,
        120,
    )
    cp.stop_kubelet(node)
    wait_node_unknown(cp, node)

    def marked_not_ready() -> list[Obj]:
        # The node lifecycle controller marks each pod Ready=False after the node: wait for it
        # (it changes their resourceVersions, which a delete sends as a precondition).
        found = _pods_on(cp, node)
        conds = [
            next((c for c in p["status"].get("conditions") or [] if c["type"] == "Ready"), {})
            for p in found
        ]
        return found if all(c.get("status") == "False" for c in conds) else []

    return list(wait_for(f"{node}'s pods marked not Ready", marked_not_ready, 60))


def _fail_with_statefulset(cp: ControlPlane, node: str) -> Obj:
    cp.add_failable_node(node)
    wait_node_ready(cp, node)
    cp.apply(
        w.namespace(NS),
        w.statefulset(NS, f"db-{node}", prefer=node, toleration_seconds=5, grace=10),
    )
    wait_running_on(cp, NS, f"db-{node}", node)
    cp.stop_kubelet(node)
    wait_node_unknown(cp, node)
    return wait_terminating_on(cp, NS, f"db-{node}", node, timeout=60)


class Background:
    """The plugin run in the background (to signal it), recorded like Plugin.run's runs."""

    def __init__(self, plugin: Plugin, *args: str) -> None:
        self.plugin, self.args = plugin, args
        self.start = _now()
        self.proc = subprocess.Popen(
            [nodefail_bin(), *args],
            env=plugin.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def signal(self, sig: int) -> None:
        os.kill(self.proc.pid, sig)

    def finish(self, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        out, err = self.proc.communicate(timeout=timeout)
        self.plugin.runs.append(Run(self.args[0], "--confirm" in self.args, self.start, _now()))
        return subprocess.CompletedProcess(self.args, self.proc.returncode, out, err)


def _resign(data: Obj) -> Obj:
    """What someone editing the file by hand and recomputing its digest would write."""
    data["digest"] = planfile.sign(data)
    return data


def test_tampered_saved_plans_change_nothing(
    control_plane: ControlPlane, plugin: Plugin, tmp_path: Path
) -> None:
    cp, node = control_plane, "flaky-t1"
    victim = _fail_with_statefulset(cp, node)
    victim_name = victim["metadata"]["name"]
    cp.apply(w.bare_pod(NS, "bystander", pin="healthy-0"))
    bystander = wait_running_on(cp, NS, "bystander", "healthy-0")
    saved = {}
    for name, extra in (("refused", ()), ("allowed", ("--node-shutdown-confirmed", node))):
        path = tmp_path / f"{name}.json"
        proc = plugin.run(
            "remediate", node, "--strategy", "force-delete", *extra, "--plan-out", str(path)
        )
        assert proc.returncode == (4 if name == "refused" else 0), proc.stdout + proc.stderr
        saved[name] = json.loads(path.read_text())

    def edited(name: str, resign: bool, **changes: Any) -> Path:
        data = copy.deepcopy(saved[name])
        step = next(s for s in data["steps"] if s["action"] == "force-delete-pod")
        step.update(changes)
        if resign:
            _resign(data)
        path = tmp_path / f"edited-{len(list(tmp_path.iterdir()))}.json"
        path.write_text(json.dumps(data))
        return path

    start = _now()
    malformed = {
        "allowed as a string": (edited("refused", False, allowed="false"), "allowed must be"),
        "empty UID": (edited("allowed", True, uid=""), "has no valid UID"),
        "unknown action": (edited("allowed", True, action="evict-pod"), "unknown action"),
        "target a number": (edited("allowed", True, target=5), "target must be a string"),
        "target not a pod": (edited("allowed", True, target="pod/broken"), "is not a pod name"),
        "facts of the wrong shape": (
            edited("allowed", True, because=[{"object": 1, "field": "f", "value": None}]),
            "object must be a string",
        ),
        "digest mismatch": (
            edited("allowed", False, uid=bystander["metadata"]["uid"]),
            "edited after it was saved",
        ),
    }
    for case, (path, message) in malformed.items():
        proc = plugin.run("remediate", "--plan-in", str(path), "--confirm", "-o", "json")
        assert proc.returncode == 13, (case, proc.stdout, proc.stderr)
        assert proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1, case
        assert message in proc.stderr, (case, proc.stderr)
    # Well-formed (digest recomputed) but widening: refused per step from live state.
    widening = {
        "switched on by hand": (
            edited("refused", True, allowed=True),
            "not allowed now (no evidence the machine is down",
        ),
        # a step's facts are words, never read back: naming the bystander changes nothing
        "switched on, its facts naming the bystander": (
            edited(
                "refused",
                True,
                allowed=True,
                because=[
                    {"object": f"Pod/{NS}/bystander", "field": "spec.nodeName", "value": node}
                ],
            ),
            "not allowed now (no evidence the machine is down",
        ),
        "retargeted to a pod on a Ready node": (
            edited(
                "allowed",
                True,
                target=f"pod/{NS}/bystander",
                uid=bystander["metadata"]["uid"],
                resourceVersion=bystander["metadata"]["resourceVersion"],
            ),
            f"not allowed now (the live plan has no force-delete-pod for pod/{NS}/bystander",
        ),
        "retargeted with its node": (
            edited(
                "allowed",
                True,
                node="healthy-0",
                target=f"pod/{NS}/bystander",
                uid=bystander["metadata"]["uid"],
                resourceVersion=bystander["metadata"]["resourceVersion"],
            ),
            "not allowed now (the live plan has no force-delete-pod",
        ),
    }
    for case, (path, message) in widening.items():
        # the attestation in an attested file counts only typed again at the replay
        again = () if case.startswith("switched on") else ("--node-shutdown-confirmed", node)
        proc = plugin.run("remediate", "--plan-in", str(path), *again, "--confirm", "-o", "json")
        assert proc.returncode == 4, (case, proc.stdout, proc.stderr)
        steps = [s for s in _json(proc)["steps"] if s["action"] == "force-delete-pod"]
        assert [s["result"] for s in steps] == ["refused"], (case, steps)
        assert steps[0]["detail"].startswith(message), (case, steps[0]["detail"])
        assert "bystander" not in json.dumps(steps[0]["because"]), (case, steps[0])
    assert _writes_between(cp, start, _now()) == []
    assert pod_on(cp, NS, f"db-{node}", node)["metadata"]["uid"] == victim["metadata"]["uid"]  # type: ignore[index]
    assert (
        pod_on(cp, NS, "bystander", "healthy-0")["metadata"]["uid"]
        == (  # type: ignore[index]
            bystander["metadata"]["uid"]
        )
    )
    # The untouched saved plan still runs: narrowing keeps what the live plan allows too.
    proc = plugin.run(
        "remediate",
        "--plan-in",
        str(tmp_path / "allowed.json"),
        "--node-shutdown-confirmed",
        node,
        "--confirm",
        "-o",
        "json",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    done = [s["target"] for s in _json(proc)["steps"] if s["result"] == "done"]
    assert done == [f"pod/{NS}/{victim_name}"]
    cp.start_kubelet(node)
    wait_node_ready(cp, node)


def test_unwritable_outputs_are_refused_before_any_change(
    control_plane: ControlPlane, plugin: Plugin, tmp_path: Path
) -> None:
    cp, node = control_plane, "flaky-t2"
    victim = _fail_with_statefulset(cp, node)
    missing = tmp_path / "no-such-folder"
    start = _now()
    for flag in ("--log-file", "--plan-out"):
        proc = plugin.run(
            *attested(node, strategy="force-delete"),
            flag,
            str(missing / "out.json"),
        )
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1
        assert f"error: {flag}: cannot write" in proc.stderr and "does not exist" in proc.stderr
    assert _writes_between(cp, start, _now()) == []
    assert pod_on(cp, NS, f"db-{node}", node)["metadata"]["uid"] == victim["metadata"]["uid"]  # type: ignore[index]
    cp.start_kubelet(node)
    wait_node_ready(cp, node)


def _trail(path: Path) -> list[Obj]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_sigint_mid_run_keeps_the_trail_and_a_rerun_finishes(
    control_plane: ControlPlane, plugin: Plugin, tmp_path: Path
) -> None:
    cp, node = control_plane, "flaky-t3"
    pods = _fail_with_pods(cp, node, 40)
    names = {p["metadata"]["name"] for p in pods}
    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}
    log = tmp_path / "trail.jsonl"
    args = (
        *attested(node, strategy="force-delete"),
        "--log-file",
        str(log),
        "-o",
        "json",
    )
    run = Background(plugin, *args)
    wait_for(
        "the first pod deleted",
        lambda: log.exists() and '"result": "done"' in log.read_text(),
        90,
        interval=0.02,
    )
    # Stop the process where it is, queue SIGINT, let it go on: the signal lands mid-run.
    run.signal(signal.SIGSTOP)
    run.signal(signal.SIGINT)
    run.signal(signal.SIGCONT)
    proc = run.finish()
    assert proc.returncode == 6, proc.stdout + proc.stderr
    assert "re-run the same command to finish the rest" in proc.stderr
    steps = {s["target"]: s for s in _json(proc)["steps"] if s["action"] == "force-delete-pod"}
    results = Counter(s["result"] for s in steps.values())
    assert set(results) == {"done", "not started"}, results
    done = {t.rsplit("/", 1)[1] for t, s in steps.items() if s["result"] == "done"}
    # Every deleted pod (the audit log's word) has its trail lines and both Events.
    deleted = wait_for(
        "the deletes in the audit log",
        lambda: (c := _pod_deletes(cp, names)) and sum(c.values()) == len(done) and c,
        30,
    )
    assert set(deleted) == done and set(deleted.values()) == {1}
    trail = _trail(log)
    for name in done:
        lines = [r["result"] for r in trail if r["target"] == f"pod/{NS}/{name}"]
        assert lines == ["starting", "done"], (name, lines)
    events = (cp.get("events", namespace=NS) or {}).get("items") or []
    for name in done:
        reasons = {e["reason"] for e in events if e["involvedObject"].get("uid") == uids[name]}
        assert {"NodefailForceDeletePodStarting", "NodefailForceDeletePod"} <= reasons, name
    left = {p["metadata"]["name"] for p in _pods_on(cp, node)}
    assert left == names - done
    assert LOCK not in _annotations(cp, node)  # released on the way out
    # A lock left by a run that died (expired) is taken over; the re-run finishes the rest.
    dead = {"holder": "a run that died", "token": "dead", "until": "2020-01-01T00:00:00Z"}
    cp.kubectl("annotate", "node", node, f"{LOCK}={json.dumps(dead)}")
    proc = plugin.run(*args, "-v")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "taking over the expired lock of a run that died" in proc.stderr
    again = {s["target"].rsplit("/", 1)[1] for s in _json(proc)["steps"] if s["result"] == "done"}
    assert again == names - done
    assert _pods_on(cp, node) == []
    deleted = wait_for(
        "all deletes in the audit log",
        lambda: (c := _pod_deletes(cp, names)) and sum(c.values()) == len(names) and c,
        30,
    )
    assert set(deleted.values()) == {1}  # each pod deleted once over both runs
    assert LOCK not in _annotations(cp, node)
    cp.start_kubelet(node)
    wait_node_ready(cp, node)


def test_two_runs_at_once_never_double_act(control_plane: ControlPlane, plugin: Plugin) -> None:
    cp, node = control_plane, "flaky-t4"
    pods = _fail_with_pods(cp, node, 30)
    names = {p["metadata"]["name"] for p in pods}
    args = (
        *attested(node, strategy="force-delete"),
        "-o",
        "json",
    )
    from kubectl_nodefail.cluster.kube import Cluster

    api = Cluster(str(cp.kubeconfig))  # polls in milliseconds, unlike a kubectl process
    try:
        first = Background(plugin, *args)
        held = wait_for(
            "the first run's lock on the node",
            lambda: (api.get(f"/api/v1/nodes/{node}")["metadata"].get("annotations") or {}).get(
                LOCK
            ),
            90,
            interval=0.005,
        )
        first.signal(signal.SIGSTOP)  # a slow first run, still holding the lock
    finally:
        api.close()
    try:
        second = plugin.run(*args)
        assert _annotations(cp, node).get(LOCK) == held  # the second left the lock alone
    finally:
        first.signal(signal.SIGCONT)
    assert second.returncode == 4, second.stdout + second.stderr
    steps = [s for s in _json(second)["steps"] if s["action"] == "force-delete-pod"]
    assert steps and {s["result"] for s in steps} == {"skipped"}
    holder = json.loads(held)
    for step in steps:
        assert step["detail"].startswith(
            f"another remediate run holds the lock on node {node}: {holder['holder']}, "
            f"until {holder['until']}; stood back"
        ), step["detail"]
    proc = first.finish()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _pods_on(cp, node) == []
    deleted = wait_for(
        "the deletes in the audit log",
        lambda: (c := _pod_deletes(cp, names)) and sum(c.values()) >= len(names) and c,
        30,
    )
    assert set(deleted) == names and set(deleted.values()) == {1}  # each pod deleted once
    assert LOCK not in _annotations(cp, node)
    cp.start_kubelet(node)
    wait_node_ready(cp, node)


def test_a_finalizer_held_pod_is_named_and_never_waited_for(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    cp, node = control_plane, "flaky-t5"
    held = f"held-{node}"
    cp.add_failable_node(node)
    wait_node_ready(cp, node)
    cp.apply(
        w.namespace(NS),
        w.statefulset(NS, f"db-{node}", prefer=node, toleration_seconds=5, grace=10),
        w.finalizer_pod(NS, held, node),
    )
    wait_running_on(cp, NS, f"db-{node}", node)
    wait_running_on(cp, NS, held, node)
    cp.stop_kubelet(node)
    wait_node_unknown(cp, node)
    wait_terminating_on(cp, NS, f"db-{node}", node, timeout=60)
    wait_terminating_on(cp, NS, held, node, timeout=60)  # evicted after its 20 s toleration
    plugin.record("finalizer-on-failed-node", "finalizer on a failed node", "both evicted")
    try:
        proc = plugin.run("remediate", node, "--node-shutdown-confirmed", node, "-o", "json")
        assert proc.returncode == 4, proc.stdout + proc.stderr
        steps = {s["target"]: s for s in _json(proc)["steps"]}
        step = steps[f"pod/{NS}/{held}"]
        assert step["action"] == "finalizer-held" and not step["allowed"]
        assert "held by finalizer e2e.nodefail/hold" in step["why"]
        assert "the controller that added it (e2e.nodefail) must remove it" in step["gate"]
        taint = steps[f"node/{node}"]
        assert taint["action"] == "taint-out-of-service" and taint["allowed"]
        assert f"db-{node}-0" in taint["why"] and held not in taint["why"]
        proc = plugin.run(
            *attested(node),
            "--wait-timeout",
            "120",
            "-o",
            "json",
        )
        assert proc.returncode == 4, proc.stdout + proc.stderr
        steps = {s["target"]: s for s in _json(proc)["steps"]}
        assert steps[f"pod/{NS}/{held}"]["result"] == "blocked"
        assert "e2e.nodefail/hold" in steps[f"pod/{NS}/{held}"]["detail"]
        taint = steps[f"node/{node}"]
        assert taint["result"] == "done", taint
        assert "no Terminating pod released by the taint left" in taint["detail"]
        assert (
            f"held by finalizers, not waited for: {NS}/{held} (e2e.nodefail/hold)"
            in (taint["detail"])
        )
        assert "after 120s" not in taint["detail"]
        assert terminating(pod_on(cp, NS, held, node))  # still there: nothing claimed otherwise
    finally:
        drop_finalizers(cp, NS, held)
        cp.start_kubelet(node)
        wait_node_ready(cp, node)
    proc = plugin.run("remediate", node, "--confirm", "-o", "json")  # the stale taint goes
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_executor_rechecks_the_live_object(control_plane: ControlPlane, plugin: Plugin) -> None:
    """Defence in depth below the narrowing: steps handed straight to the executor (as a bug or
    a race could) are checked against the object they touch, on the real API server."""
    from kubectl_nodefail.cluster.kube import Cluster
    from kubectl_nodefail.remediate.actions import Executor, _lease_second
    from kubectl_nodefail.remediate.plan import Plan, Step

    cp, node = control_plane, "flaky-t6"
    (victim,) = _fail_with_pods(cp, node, 1)
    cp.apply(w.bare_pod(NS, "bystander-x", pin="healthy-0"))
    bystander = wait_running_on(cp, NS, "bystander-x", "healthy-0")
    lease = cp.get("lease", node, namespace="kube-node-lease")
    renewed = _lease_second(lease["spec"]["renewTime"])
    vm, bm = victim["metadata"], bystander["metadata"]

    def step(target: str, uid: str, rv: str, action: str = "force-delete-pod") -> Step:
        return Step(action, node, target, "test", True, "test", ["test"], uid, rv, renewed)

    victim_step = step(f"pod/{NS}/{vm['name']}", vm["uid"], vm["resourceVersion"])
    malformed = Plan(
        "force-delete",
        [
            step(f"pod/{NS}/{vm['name']}", "", vm["resourceVersion"]),  # no UID
            step(f"pod/{NS}/{vm['name']}", vm["uid"], ""),  # no resourceVersion
            step(f"pod/{NS}/{vm['name']}", vm["uid"], vm["resourceVersion"], "evict-pod"),
            victim_step,  # well formed, but in a plan with malformed steps: not run either
        ],
        [],
        [node],
    )
    moved = Plan(
        "force-delete",
        [
            step(f"pod/{NS}/bystander-x", bm["uid"], bm["resourceVersion"]),  # retargeted
            step(f"pod/{NS}/{vm['name']}", "0d6f1c3e-0000-4000-8000-000000000000", "1"),
            step(f"pod/{NS}/{vm['name']}", vm["uid"], "1"),  # the pod moved on since the plan
        ],
        [],
        [node],
    )
    start = _now()
    cluster = Cluster(str(cp.kubeconfig))
    try:
        Executor(cluster, "e2e-test", wait_timeout=5).run(malformed)
        after_malformed = _now()
        Executor(cluster, "e2e-test", wait_timeout=5).run(moved)
    finally:
        cluster.close()
        plugin.runs.append(Run("remediate", True, start, _now()))
    got = [(s.result, s.detail) for s in malformed.steps]
    assert {r for r, _ in got} == {"refused"}
    assert "never sent" in got[0][1] and "UID" in got[0][1]
    assert "never sent" in got[1][1] and "resourceVersion" in got[1][1]
    assert "never sent" in got[2][1] and "unknown action" in got[2][1]
    assert got[3][1].startswith("nothing run: another step of this plan is malformed")
    assert _writes_between(cp, start, after_malformed) == []  # not even the lock
    got = [(s.result, s.detail) for s in moved.steps]
    assert got[0][0] == "skipped" and "bound to node 'healthy-0', not" in got[0][1]
    assert got[1][0] == "skipped" and "a different pod of that name exists now" in got[1][1]
    assert got[2][0] == "skipped" and "precondition failed" in got[2][1]
    writes = _writes_between(cp, start, _now())
    deletes = [e for e in writes if e["verb"] == "delete"]
    assert [e["responseStatus"]["code"] for e in deletes] == [409]  # only the stale one, refused
    assert pod_on(cp, NS, vm["name"], node)["metadata"]["uid"] == vm["uid"]  # type: ignore[index]
    assert pod_on(cp, NS, "bystander-x", "healthy-0")["metadata"]["uid"] == bm["uid"]  # type: ignore[index]
    assert LOCK not in _annotations(cp, node)
    cp.start_kubelet(node)
    wait_node_ready(cp, node)


def test_a_node_delete_with_hostile_values_deletes_nothing(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    """delete-node steps handed straight to the executor, each with one hostile value: no node
    UID, the UID of another object (the name recreated), a lease renewal the node's lease no
    longer has (its kubelet may be alive), a Ready node. None is sent; the API server's audit
    log holds no delete of a Node, and both nodes are the objects they were."""
    from kubectl_nodefail.cluster.kube import Cluster
    from kubectl_nodefail.remediate.actions import Executor, _lease_second
    from kubectl_nodefail.remediate.plan import Plan, Step

    cp, node, ready = control_plane, "flaky-t9", "healthy-0"
    _fail_with_pods(cp, node, 1)
    uid = cp.get("node", node)["metadata"]["uid"]
    ready_uid = cp.get("node", ready)["metadata"]["uid"]

    def renewed(name: str) -> str:
        lease = cp.get("lease", name, namespace="kube-node-lease")
        return _lease_second(lease["spec"]["renewTime"])

    def delete(name: str, node_uid: str, lease: str) -> Plan:
        step = Step("delete-node", name, f"node/{name}", "test", True, "test", ["test"], node_uid)
        step.lease_renewed = lease
        return Plan("delete-node", [step], [], [name])

    plans = {
        "no UID": delete(node, "", renewed(node)),
        "another object": delete(node, "0d6f1c3e-0000-4000-8000-000000000000", renewed(node)),
        "lease moved": delete(node, uid, "2026-01-01T00:00:00Z"),
        "Ready node": delete(ready, ready_uid, renewed(ready)),
    }
    start = _now()
    cluster = Cluster(str(cp.kubeconfig))
    try:
        for plan in plans.values():
            Executor(cluster, "e2e-test", wait_timeout=5).run(plan)
    finally:
        cluster.close()
        plugin.runs.append(Run("remediate", True, start, _now()))
    got = {what: (plan.steps[0].result, plan.steps[0].detail) for what, plan in plans.items()}
    assert got["no UID"][0] == "refused" and "has no valid node UID" in got["no UID"][1]
    assert (
        got["another object"][0] == "skipped" and "another object now" in got["another object"][1]
    )
    assert got["lease moved"][0] == "skipped" and "lease changed" in got["lease moved"][1]
    assert got["Ready node"][0] == "skipped" and "came back (Ready)" in got["Ready node"][1]
    writes = _writes_between(cp, start, _now())
    assert not [e for e in writes if e["verb"] == "delete"], writes
    assert cp.get("node", node)["metadata"]["uid"] == uid
    assert cp.get("node", ready)["metadata"]["uid"] == ready_uid
    assert LOCK not in _annotations(cp, node) and LOCK not in _annotations(cp, ready)
    cp.start_kubelet(node)
    wait_node_ready(cp, node)


class _NodeChangesUnderPatches:
    """A kube.Cluster whose node patches are raced: before the patches numbered in `raced`
    (1-based, in the order sent), someone else (kubectl, another client) writes the node, so the
    object the executor read is stale when its patch arrives, as happens when a kubelet or a
    controller updates the node between our read and our write."""

    def __init__(self, cp: ControlPlane, raced: set[int], signal_at: int = 0) -> None:
        from kubectl_nodefail.cluster.kube import Cluster
        from kubectl_nodefail.remediate.actions import Stop

        self.cp, self.raced, self.signal_at, self.sent = cp, raced, signal_at, 0
        self.inner = Cluster(str(cp.kubeconfig))
        self.stop = Stop()  # set as a first SIGINT would, while patch `signal_at` is in flight
        self.raced_after: set[int] = set()

    def json_patch(self, path: str, ops: list[Obj]) -> Obj:
        self.sent += 1
        if self.sent in self.raced:
            name = path.rsplit("/", 1)[-1]
            self.cp.kubectl("annotate", "node", name, f"e2e-race={self.sent}", "--overwrite")
        if self.sent == self.signal_at:
            self.stop.set()
        try:
            return self.inner.json_patch(path, ops)
        except Exception:
            if self.sent in self.raced_after:  # a write between the refusal and our next read
                name = path.rsplit("/", 1)[-1]
                self.cp.kubectl("annotate", "node", name, f"e2e-race={self.sent}", "--overwrite")
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _run_raced(
    plugin: Plugin, plan: Any, cluster: _NodeChangesUnderPatches, trail: Any = None
) -> datetime:
    """Run the plan through an executor on the raced cluster (a confirmed run for the audit
    attribution); when it started."""
    from kubectl_nodefail.remediate.actions import Executor

    start = _now()
    try:
        executor = Executor(cluster, "e2e-test", trail, wait_timeout=5, stop=cluster.stop)  # type: ignore[arg-type]
        executor.run(plan)
    finally:
        cluster.close()
        plugin.runs.append(Run("remediate", True, start, _now()))
    return start


def _node_patch_codes(cp: ControlPlane, node: str, start: datetime) -> list[int]:
    return [
        e["responseStatus"]["code"]
        for e in _writes_between(cp, start, _now())
        if e["verb"] == "patch"
        and e["objectRef"].get("resource") == "nodes"
        and e["objectRef"].get("name") == node
    ]


def test_a_node_changing_under_the_patches(control_plane: ControlPlane, plugin: Plugin) -> None:
    """The real API server refuses a node patch whose resourceVersion test fails with a bare 422
    (no word of the test). The executor reads the node again to tell that apart: the lock, its
    release and remove-out-of-service (gated on the node alone) try again and succeed; the
    out-of-service taint (planned from more than the node) is skipped, never sent blind."""
    from kubectl_nodefail.common.errors import ApiError
    from kubectl_nodefail.remediate.actions import Executor, NodeChanged, _lease_second
    from kubectl_nodefail.remediate.plan import Plan

    cp, node = control_plane, "flaky-t7"
    cp.add_failable_node(node)
    wait_node_ready(cp, node)

    uid = cp.get("node", node)["metadata"]["uid"]  # the Node planned, as a live plan names it

    def step(action: str, renewed: str = "") -> Step:
        return Step(action, node, f"node/{node}", "test", True, "test", ["test"], uid, "", renewed)

    # A Ready node with a stale out-of-service taint: every first attempt is raced (the lock's,
    # the step's and the release's patches are 1, 3 and 5; their retries 2, 4 and 6).
    cp.kubectl("taint", "node", node, f"{OOS}=nodeshutdown:NoExecute")
    plan = Plan("out-of-service", [step("remove-out-of-service")], [], [node])
    trail = io.StringIO()
    start = _run_raced(plugin, plan, _NodeChangesUnderPatches(cp, raced={1, 3, 5}), trail)
    (done,) = plan.steps
    assert done.result == "done", done.detail
    assert "attempt 2: the node changed under the earlier ones" in done.detail
    assert (OOS, "NoExecute") not in taint_keys(cp, node)
    assert LOCK not in _annotations(cp, node)
    assert _node_patch_codes(cp, node, start) == [422, 200, 422, 200, 422, 200]
    lines = [json.loads(line) for line in trail.getvalue().splitlines()]
    assert [line["result"] for line in lines] == ["starting", "retrying", "done"]
    assert "attempt 1 refused: node flaky-t7 changed between our read" in lines[1]["detail"]

    # Raced under every attempt (patches 2, 3 and 4, after the lock's): given up, taint kept.
    cp.kubectl("taint", "node", node, f"{OOS}=nodeshutdown:NoExecute")
    plan = Plan("out-of-service", [step("remove-out-of-service")], [], [node])
    start = _run_raced(plugin, plan, _NodeChangesUnderPatches(cp, raced={2, 3, 4}))
    (given_up,) = plan.steps
    assert given_up.result == "skipped", given_up.detail
    assert given_up.detail.endswith("; 3 times in a row, given up; re-run"), given_up.detail
    assert (OOS, "NoExecute") in taint_keys(cp, node)
    assert LOCK not in _annotations(cp, node)
    assert _node_patch_codes(cp, node, start) == [200, 422, 422, 422, 200]
    cp.kubectl("taint", "node", node, f"{OOS}-")

    # A signal while the lock is being taken: the step never starts, the lock is released.
    cp.kubectl("taint", "node", node, f"{OOS}=nodeshutdown:NoExecute")
    plan = Plan("out-of-service", [step("remove-out-of-service")], [], [node])
    start = _run_raced(plugin, plan, _NodeChangesUnderPatches(cp, raced=set(), signal_at=1))
    (stopped,) = plan.steps
    assert (stopped.result, stopped.detail) == ("not started", "the run was interrupted first")
    assert (OOS, "NoExecute") in taint_keys(cp, node)
    assert LOCK not in _annotations(cp, node)
    assert _node_patch_codes(cp, node, start) == [200, 200]  # the lock and its release only
    cp.kubectl("taint", "node", node, f"{OOS}-")

    # A 422 of another kind (validation: it names the object and the cause) stays what it is,
    # even when the node changes before the executor reads it again.
    cluster = _NodeChangesUnderPatches(cp, raced=set())
    cluster.raced_after = {1}
    bad = {"key": "e2e/bad", "value": "x", "effect": "NoSuchEffect"}
    start = _now()
    try:
        with pytest.raises(ApiError) as refused:
            Executor(cluster, "e2e-test")._patch_node(  # type: ignore[arg-type]
                cp.get("node", node), [{"op": "add", "path": "/spec/taints", "value": [bad]}]
            )
    finally:
        cluster.close()
        plugin.runs.append(Run("remediate", True, start, _now()))
    assert not isinstance(refused.value, NodeChanged)
    assert refused.value.status == 422 and "is invalid" in refused.value.message
    assert _annotations(cp, node)["e2e-race"] == "1"  # the node did change in between

    # The same node down: the taint's patch (2, after the lock's) is raced and not sent again.
    cp.stop_kubelet(node)
    wait_node_unknown(cp, node)
    lease = cp.get("lease", node, namespace="kube-node-lease")
    plan = Plan(
        "out-of-service",
        [step("taint-out-of-service", _lease_second(lease["spec"]["renewTime"]))],
        [],
        [node],
    )
    start = _run_raced(plugin, plan, _NodeChangesUnderPatches(cp, raced={2}))
    (skipped,) = plan.steps
    assert skipped.result == "skipped", skipped.detail
    assert "changed since the plan (precondition failed)" in skipped.detail
    assert f"node {node} changed between our read and our write" in skipped.detail
    assert (OOS, "NoExecute") not in taint_keys(cp, node)
    assert LOCK not in _annotations(cp, node)
    assert _node_patch_codes(cp, node, start) == [200, 422, 200]
    cp.start_kubelet(node)
    wait_node_ready(cp, node)


def _deny_nodefail_events(cp: ControlPlane, about: list[str]) -> None:
    """A ValidatingAdmissionPolicy refusing kubectl-nodefail's Events about these objects: an
    API server that RBAC's preflight says yes to and that still refuses the Event."""
    names = ", ".join(f"'{n}'" for n in about)
    cp.apply(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "e2e-no-nodefail-events"},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["events"],
                        }
                    ]
                },
                "validations": [
                    {
                        "expression": f"!(object.reason.startsWith('Nodefail') && "
                        f"object.involvedObject.name in [{names}])",
                        "message": "e2e: no kubectl-nodefail Events here",
                    }
                ],
            },
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "e2e-no-nodefail-events"},
            "spec": {"policyName": "e2e-no-nodefail-events", "validationActions": ["Deny"]},
        },
    )


def _event_accepted(cp: ControlPlane, about: str) -> bool:
    probe = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": "e2e-probe.", "namespace": "default"},
        "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": about},
        "reason": "NodefailProbe",
        "message": "e2e: is the policy in force?",
        "type": "Normal",
    }
    out = cp.kubectl("create", "-f", "-", stdin=json.dumps(probe), check=False)
    return "created" in out


def test_a_step_is_sent_only_once_its_starting_event_is_written(
    control_plane: ControlPlane, plugin: Plugin, tmp_path: Path
) -> None:
    """The Event that records a step before its request is part of the record. A pod left
    Terminating on a dead node by the deletion of its namespace (a usual way to get one): the
    namespace accepts no new object, so the pod's Events go on its node, naming the pod. When
    the server refuses that too (an admission policy), the pod is not deleted."""
    cp, node, ns = control_plane, "flaky-t8", "scenario-ns-deleted"
    cp.add_failable_node(node)
    wait_node_ready(cp, node)
    cp.apply(w.namespace(ns), w.bare_pod(ns, "kept", pin=node, toleration_seconds=3600, grace=10))
    pod = wait_running_on(cp, ns, "kept", node)
    cp.stop_kubelet(node)
    wait_node_unknown(cp, node)
    cp.kubectl("delete", "namespace", ns, "--wait=false")
    wait_terminating_on(cp, ns, "kept", node)
    log = tmp_path / "trail.jsonl"
    args = (*attested(node, strategy="force-delete"), "--log-file", str(log), "-o", "json")

    _deny_nodefail_events(cp, ["kept", node])
    try:
        wait_for("the policy in force", lambda: not _event_accepted(cp, node), 60, interval=1)
        start = _now()
        proc = plugin.run(*args)
        assert proc.returncode == 4, proc.stdout + proc.stderr
        (step,) = [s for s in _json(proc)["steps"] if s["action"] == "force-delete-pod"]
        assert step["result"] == "failed", step
        assert step["detail"].startswith("starting Event not recorded: ")
        assert f"namespace {ns} is being deleted, and on node {node}: " in step["detail"]
        assert "e2e: no kubectl-nodefail Events here" in step["detail"]
        assert step["detail"].endswith("; nothing sent")
        assert [e for e in _writes_between(cp, start, _now()) if e["verb"] == "delete"] == []
        lines = [json.loads(line) for line in log.read_text().splitlines()]
        assert [t["result"] for t in lines if t["target"] == f"pod/{ns}/kept"] == [
            "starting",
            "failed",
        ]
        assert LOCK not in _annotations(cp, node)
    finally:
        cp.kubectl(
            "delete",
            "validatingadmissionpolicybinding,validatingadmissionpolicy",
            "e2e-no-nodefail-events",
            check=False,
        )
    kept = pod_on(cp, ns, "kept", node)
    assert kept is not None and kept["metadata"]["uid"] == pod["metadata"]["uid"]

    wait_for("the policy gone", lambda: _event_accepted(cp, node), 60, interval=1)
    proc = plugin.run(*args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (step,) = [s for s in _json(proc)["steps"] if s["action"] == "force-delete-pod"]
    assert step["result"] == "done", step
    assert step["detail"].endswith(
        f" (its Event is on node {node}: namespace {ns} is being deleted)"
    )
    events = cp.get("events", namespace="default")["items"]
    ours = [
        e
        for e in events
        if e["involvedObject"].get("name") == node
        and e["reason"].startswith("NodefailForceDeletePod")
    ]
    assert {e["reason"] for e in ours} == {
        "NodefailForceDeletePodStarting",
        "NodefailForceDeletePod",
    }
    assert all(e["message"].startswith(f"pod {ns}/kept: kubectl-nodefail ") for e in ours)
    node_uid = cp.get("node", node)["metadata"]["uid"]
    assert {e["involvedObject"].get("uid") for e in ours} == {node_uid}  # kubectl describe node
    wait_for("the namespace gone", lambda: cp.get("namespace", ns) is None, 60)
    cp.start_kubelet(node)
    wait_node_ready(cp, node)


def test_an_attestation_the_live_state_contradicts_is_refused(
    control_plane: ControlPlane, plugin: Plugin, tmp_path: Path
) -> None:
    """The operator typed the name of a machine that runs: a Ready node, or a node whose kubelet
    came back after a saved plan attested it. Both refused with the evidence, exit 17, one line,
    nothing written (the audit log), whatever else the plan holds (a dead node attested too)."""
    cp, dead, back = control_plane, "flaky-c1", "flaky-c2"
    _fail_with_pods(cp, dead, 1)
    _fail_with_pods(cp, back, 1)
    saved = tmp_path / "plan.json"
    made = plugin.run(
        "remediate", back, "--node-shutdown-confirmed", back, "--plan-out", str(saved)
    )
    assert made.returncode == 0, made.stdout + made.stderr
    start = _now()
    ready = plugin.run(
        "remediate", dead, "--node-shutdown-confirmed", dead,
        "--node-shutdown-confirmed", "healthy-0", "--confirm",
    )  # fmt: skip
    assert ready.returncode == 17, ready.stdout + ready.stderr
    assert ready.stdout == "" and len(ready.stderr.strip().splitlines()) == 1, ready.stderr
    assert "--node-shutdown-confirmed healthy-0: refused, node healthy-0 is Ready" in ready.stderr
    with LeaseRenewing(cp, dead):  # its kubelet is back far enough to renew the lease
        renewing = plugin.run("remediate", dead, "--node-shutdown-confirmed", dead, "--confirm")
    assert renewing.returncode == 17, renewing.stdout + renewing.stderr
    assert f"refused, the kubelet of {dead} renewed its lease at" in renewing.stderr
    cp.start_kubelet(back)
    wait_node_ready(cp, back)
    replay = plugin.run(
        "remediate", "--plan-in", str(saved), "--node-shutdown-confirmed", back, "--confirm"
    )
    assert replay.returncode == 17, replay.stdout + replay.stderr
    assert f"--node-shutdown-confirmed {back}: refused, node {back} is Ready" in replay.stderr
    assert _writes_between(cp, start, _now()) == []
    assert (OOS, "NoExecute") not in taint_keys(cp, dead)
    assert all(not terminating(p) for p in _pods_on(cp, dead))
