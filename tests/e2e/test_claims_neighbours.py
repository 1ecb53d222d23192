"""Neighbours of the situations the diagnosis was fixed for (issue 17): true in the usual case,
each sentence once printed where its premise did not hold. On one node whose kubelet dies:

- `fin`: a StatefulSet pod that also carries a finalizer (what releases it? not the taint);
- `shrink`: a StatefulSet scaled to 0 while its ordinal 0 is stuck (not recreated);
- `done`: a Job pod that had Succeeded before the node died, held by a finalizer (not failed
  work, nothing waits on it);
- `anti`: a Deployment whose replacement cannot schedule: required anti-affinity and a node
  affinity to the two nodes of this module (the scheduler's own reason, not a guessed taint);
- `pinned`: a Deployment pinned to the dead node by nodeSelector: its replacement is Pending on
  no node, a victim of the failure listed and counted as such.

The real control plane plays each out; each test states what it did, then checks the diagnosis
and the remediate plan say exactly that, with every claim's premises true in the recorded dump.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from kubectl_nodefail.analysis import outage
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.cluster import kube, podrows
from kubectl_nodefail.render import render
from kubectl_nodefail.snapshot import dumpschema
from kubectl_nodefail.snapshot import model as snapshot
from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane, wait_for
from tests.e2e.helpers import (
    pod_on,
    pods,
    running,
    terminating,
    wait_node_ready,
    wait_node_unknown,
    wait_running_on,
    wait_terminating_on,
)
from tests.oracles import premises

pytestmark = pytest.mark.e2e
NS = "scenario-neighbours"
DEAD = "nb-dead"
SPARE = "nb-spare"
FINALIZER = "e2e.nodefail/hold"


@dataclass
class Dead:
    cp: ControlPlane
    plugin: Plugin
    diagnosis: Any
    dump: Any
    dump_path: str


def _row(d: Any, app: str) -> Any:
    found = [p for p in d["pods"] if p["namespace"] == NS and p["name"].startswith(app + "-")]
    assert len(found) == 1, f"{app}: {[p['name'] for p in d['pods']]}"
    return found[0]


def _anti(replicas: int) -> Any:
    dep = w.only_on(
        w.deployment(NS, "anti", replicas=replicas, toleration_seconds=5, grace=5), [DEAD, SPARE]
    )
    dep["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"] = {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": "anti"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
    return dep


@pytest.fixture(scope="module")
def dead(control_plane: ControlPlane, plugin: Plugin) -> Dead:
    cp = control_plane
    for node in (DEAD, SPARE):
        cp.add_failable_node(node)
        wait_node_ready(cp, node)
    done = w.with_finalizer(
        w.only_on(w.job(NS, "done", toleration_seconds=5, grace=5), [DEAD]), FINALIZER
    )
    cp.apply(
        w.namespace(NS),
        w.with_finalizer(
            w.only_on(w.statefulset(NS, "fin", toleration_seconds=5, grace=5), [DEAD]),
            FINALIZER,
        ),
        w.only_on(w.statefulset(NS, "shrink", toleration_seconds=5, grace=5), [DEAD]),
        done,
        _anti(2),
        w.only_on(
            w.deployment(NS, "moved", prefer=DEAD, toleration_seconds=5, grace=5), [DEAD, SPARE]
        ),
        w.deployment(NS, "pinned", pin=DEAD, toleration_seconds=5, grace=5),
    )
    for app in ("fin", "shrink", "done", "anti", "pinned", "moved"):
        wait_running_on(cp, NS, app, DEAD)
    wait_running_on(cp, NS, "anti", SPARE)
    # The Job's pod finishes: a real kubelet would report it; the failable nodes' kwok does not
    # complete pods, so the status is written as a kubelet writes it.
    job_pod = pod_on(cp, NS, "done", DEAD)
    assert job_pod is not None
    cp.kubectl(
        "patch",
        "pod",
        "-n",
        NS,
        job_pod["metadata"]["name"],
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": {"phase": "Succeeded"}}),
    )
    wait_for(
        "Job done Complete",
        lambda: any(
            c["type"] == "Complete" and c["status"] == "True"
            for c in (cp.get("job", "done", namespace=NS).get("status") or {}).get("conditions", [])
        ),
        60,
    )
    cp.stop_kubelet(DEAD)
    wait_node_unknown(cp, DEAD)
    for app in ("fin", "shrink", "anti", "pinned", "moved"):
        wait_terminating_on(cp, NS, app, DEAD, timeout=60)
    wait_running_on(cp, NS, "moved", SPARE)  # its replacement, Running and Ready
    cp.kubectl("scale", "statefulset", "-n", NS, "shrink", "--replicas=0")
    wait_for(
        "StatefulSet shrink at replicas 0",
        lambda: cp.get("statefulset", "shrink", namespace=NS)["spec"]["replicas"] == 0,
        30,
    )
    wait_for(
        "the anti replacement Pending with the scheduler's reason",
        lambda: any(
            p["status"].get("phase") == "Pending"
            and any(
                c.get("type") == "PodScheduled" and c.get("message")
                for c in p["status"].get("conditions", [])
            )
            for p in pods(cp, NS, "anti")
        ),
        60,
    )
    path = plugin.record("neighbours", "issue 17 neighbours", "after eviction, shrink at 0")
    dump = json.loads(path.read_text())
    code, d = plugin.diagnose_json("-n", NS)
    assert code == 3
    return Dead(cp, plugin, d, dump, str(path))


def test_every_claim_has_its_premises_in_the_cluster(dead: Dead) -> None:
    live = {
        f"Pod/{NS}/{p['metadata']['name']}": p
        for app in ("fin", "shrink", "done", "anti")
        for p in pods(dead.cp, NS, app)
    }
    assert live
    # The diagnosis' premises re-read from the recorded dump (diagnosed from that same file).
    proc = dead.plugin.run("diagnose", "--from-file", dead.dump_path, "-n", NS, "-o", "json")
    assert proc.returncode == 3, proc.stderr
    assert [str(f) for f in premises.check(dead.dump, json.loads(proc.stdout))] == []


def test_pods_read_as_table_rows_diagnose_as_their_full_objects(dead: Dead, tmp_path: Any) -> None:
    """The recorded dump holds the owners' other pods that are Running and Ready on a Ready
    node as Table rows (podrows.py); the same dump with each of them replaced by its full object,
    read now, gives the same diagnosis, word for word."""
    rows = [o for o in dead.dump["items"] if podrows.READ_FROM in o]
    assert any(p["metadata"]["name"].startswith("anti-") for p in rows), rows
    # a replacement created since the node failed is read whole: the timeline says when it was
    # scheduled and became Ready, which a row does not
    assert not any(p["metadata"]["name"].startswith("moved-") for p in rows), rows
    full = []
    for pod in dead.dump["items"]:
        if podrows.READ_FROM in pod:
            meta = pod["metadata"]
            pod = dead.cp.get("pod", meta["name"], namespace=meta["namespace"])
            assert pod is not None and pod["metadata"]["uid"] == meta["uid"]
            assert pod["status"]["phase"] == "Running" and pod["spec"]["nodeName"] == SPARE
            pod = dumpschema.cut_live(kube.trim(pod))
        full.append(pod)
    whole = tmp_path / "whole.json"
    whole.write_text(json.dumps({**dead.dump, "items": full}))
    outputs = []
    for path in (dead.dump_path, str(whole)):
        proc = dead.plugin.run("diagnose", "--from-file", path, "-o", "json")
        assert proc.returncode == 3, proc.stderr
        outputs.append({**json.loads(proc.stdout), "source": "(the file read)"})
    assert outputs[0] == outputs[1]
    timeline = next(n for n in outputs[0]["nodes"] if n["name"] == DEAD)["timeline"]
    moved = [e["kind"] for e in timeline if f"pod/{NS}/moved-" in e["object"]]
    assert "replacement-scheduled" in moved and "replacement-ready" in moved, timeline
    # the outage view's "serving" count (ready vs wanted) reads the rows' Ready: the same too
    views = []
    for path in (dead.dump_path, str(whole)):
        snap = snapshot.load_dump(path)
        views.append(render.to_data(outage.summarise(diagnose(snap, snap.captured_at))))
    assert views[0] == views[1]
    anti = next(o for o in views[0]["owners"] if o["owner"] == "Deployment/anti")
    assert (anti["ready"], anti["wanted"]) == (1, 2), anti


def test_a_finalizer_held_statefulset_pod_is_not_released_by_the_taint(dead: Dead) -> None:
    cp = dead.cp
    pod = pod_on(cp, NS, "fin", DEAD)
    assert terminating(pod) and pod["metadata"]["finalizers"] == [FINALIZER]  # type: ignore[index]
    row = _row(dead.diagnosis, "fin")
    assert "Released only by" not in row["explanation"]
    assert f"finalizers {FINALIZER} keep the object" in row["explanation"]
    assert row["action"]["code"] == "finalizer-held"
    assert "--node-shutdown-confirmed" not in row["action"]["remediate"]
    # remediate agrees: even attested, nothing it does releases the pod.
    proc = dead.plugin.run("remediate", DEAD, "--node-shutdown-confirmed", DEAD, "-o", "json")
    plan = json.loads(proc.stdout)
    steps = {s["target"]: s for s in plan["steps"]}
    assert steps[f"pod/{NS}/fin-0"]["action"] == "finalizer-held"


def test_a_statefulset_ordinal_outside_replicas_is_not_recreated(dead: Dead) -> None:
    row = _row(dead.diagnosis, "shrink")
    assert row["replacement"]["state"] == "not-wanted"
    assert "outside that range" in row["explanation"]
    assert "recreates" not in row["ifNodeReturns"] and "is not recreated" in row["ifNodeReturns"]
    assert row["action"]["code"] == "wait"


def test_a_finished_job_pod_held_by_a_finalizer_is_not_failed_work(dead: Dead) -> None:
    cp = dead.cp
    job_pod = pod_on(cp, NS, "done", DEAD)
    assert job_pod is not None and job_pod["status"]["phase"] == "Succeeded"
    # The taint-eviction controller deletes a finished pod too; the API server gives a finished
    # pod grace period 0 (no kubelet needed): only the finalizer keeps it.
    assert terminating(job_pod) and job_pod["metadata"]["deletionGracePeriodSeconds"] == 0
    row = next(p for p in dead.diagnosis["pods"] if p["name"] == job_pod["metadata"]["name"])
    assert "counts it as failed" not in row["ifNodeReturns"]
    assert "as soon as the pod is Terminating" not in row["explanation"]
    assert "past its grace period" not in row["meaning"]
    assert f"only finalizers {FINALIZER} keep the object" in row["meaning"]
    assert row["replacement"]["state"] == "not-needed"
    assert (
        row["action"]["code"] == "finalizer-held"
        and "nothing waits on it" in (row["action"]["summary"])
    )


def test_a_pending_replacements_cause_is_the_schedulers(dead: Dead) -> None:
    pending = [p for p in pods(dead.cp, NS, "anti") if p["status"].get("phase") == "Pending"]
    assert pending
    message = next(
        c["message"] for c in pending[0]["status"]["conditions"] if c["type"] == "PodScheduled"
    )
    row = _row(dead.diagnosis, "anti")
    assert row["replacement"]["state"] == "pending"
    assert "healthy nodes carry taints" not in row["replacement"]["summary"]
    assert "the scheduler found no node" in row["replacement"]["pendingReason"]
    assert "anti-affinity" in message and "anti-affinity" in row["replacement"]["pendingReason"]
    assert "the replacement keeps running" not in row["ifNodeReturns"]


def test_a_replacement_pinned_to_the_dead_node_is_listed_and_counted(dead: Dead) -> None:
    waiting = [
        p
        for p in pods(dead.cp, NS, "pinned")
        if p["status"].get("phase") == "Pending" and not p["spec"].get("nodeName")
    ]
    assert len(waiting) == 1
    rows = [p for p in dead.diagnosis["pods"] if p["name"] == waiting[0]["metadata"]["name"]]
    assert len(rows) == 1 and rows[0]["category"] == "waiting-for-node"
    assert f"may run only on {DEAD}" in rows[0]["explanation"]
    assert dead.diagnosis["summary"]["waitingForNode"] >= 1
    proc = dead.plugin.run("diagnose", "-n", NS)
    assert "Pending: they may run only on a failed node" in proc.stdout.splitlines()[0]
    assert "waits for node" in proc.stdout


def test_after_the_node_returns_shrink_is_not_recreated(dead: Dead) -> None:
    cp = dead.cp
    cp.start_kubelet(DEAD)
    wait_node_ready(cp, DEAD)
    wait_for(
        "the stuck shrink-0 gone",
        lambda: not pods(cp, NS, "shrink"),
        90,
    )
    wait_for(
        "anti running on both nodes", lambda: sum(running(p) for p in pods(cp, NS, "anti")) == 2, 90
    )
    assert not pods(cp, NS, "shrink")  # the prediction: not recreated (outside replicas 0)
