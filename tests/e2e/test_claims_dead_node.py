"""Claims about pods of one dead node that the tool once got wrong (issue 8: 1, 2, 5, 6).

On one node whose kubelet stops: a Deployment pod tolerating unreachable forever, a bare pod
held by a custom finalizer, a Parallel and an OrderedReady StatefulSet scaled up and updated
while their ordinal 0 is stuck; and, on the healthy nodes, 60 pods of a Deployment scaled to 0
that a finalizer holds. Each test states what the real control plane did, then checks the
diagnosis says exactly that.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import pytest

from kubectl_nodefail.analysis import summary
from tests.e2e import workloads as w
from tests.e2e.conftest import HEALTHY_NODES, Plugin
from tests.e2e.controlplane import ControlPlane, wait_for
from tests.e2e.helpers import (
    drop_finalizers,
    pod_on,
    pods,
    running,
    taint_keys,
    terminating,
    wait_node_ready,
    wait_node_unknown,
    wait_running_on,
    wait_terminating_on,
)
from tests.oracles.invariants import report_from_data

pytestmark = pytest.mark.e2e
NS = "scenario-claims"
NODE = "flaky-k"
FINALIZER = "e2e.nodefail/hold"
HELD = 60
OOS = "node.kubernetes.io/out-of-service"


@dataclass
class Dead:
    cp: ControlPlane
    plugin: Plugin
    code: int
    diagnosis: Any
    table: str


def _pod(d: Any, name: str) -> Any:
    found = [p for p in d["pods"] if p["namespace"] == NS and p["name"] == name]
    assert found, f"{name} missing: {[p['name'] for p in d['pods']]}"
    return found[0]


def _forever_name(cp: ControlPlane) -> str:
    return str(pod_on(cp, NS, "forever", NODE)["metadata"]["name"])  # type: ignore[index]


def _sts_truth(cp: ControlPlane, name: str) -> dict[str, Any]:
    sts = cp.get("statefulset", name, namespace=NS)
    revisions = {
        p["metadata"]["name"]: p["metadata"]["labels"].get("controller-revision-hash")
        for p in pods(cp, NS, name)
    }
    return {
        "current": sts["status"].get("currentRevision"),
        "update": sts["status"].get("updateRevision"),
        "pods": revisions,
    }


@pytest.fixture(scope="module")
def dead(control_plane: ControlPlane, plugin: Plugin) -> Dead:
    cp = control_plane
    cp.add_failable_node(NODE)
    wait_node_ready(cp, NODE)
    held = w.with_finalizer(
        w.only_on(w.deployment(NS, "held-many", replicas=HELD), HEALTHY_NODES), FINALIZER
    )
    cp.apply(
        w.namespace(NS),
        w.deployment(NS, "forever", prefer=NODE, tolerations=w.forever_tolerations()),
        # Tolerates every taint, the out-of-service one included (a blanket toleration).
        w.deployment(NS, "blanket", prefer=NODE, tolerations=[{"operator": "Exists"}]),
        w.with_finalizer(
            w.bare_pod(NS, "held-dead", pin=NODE, toleration_seconds=5, grace=5), FINALIZER
        ),
        w.statefulset(NS, "par", policy="Parallel", prefer=NODE, toleration_seconds=5, grace=5),
        w.statefulset(NS, "ord", prefer=NODE, toleration_seconds=5, grace=5),
        held,
    )
    for app in ("forever", "blanket", "held-dead", "par", "ord"):
        wait_running_on(cp, NS, app, NODE)
    wait_for(
        f"{HELD} held-many pods Running",
        lambda: sum(1 for p in pods(cp, NS, "held-many") if running(p)) == HELD,
        120,
    )
    # Scaled to 0: kwok (the kubelet) finishes each deletion; the finalizer keeps every object.
    cp.kubectl("scale", "deployment", "-n", NS, "held-many", "--replicas=0")
    wait_for(
        "held-many pods Terminating past their grace period",
        lambda: (
            all(
                terminating(p) and p["metadata"].get("deletionGracePeriodSeconds") == 0
                for p in pods(cp, NS, "held-many")
            )
            and len(pods(cp, NS, "held-many")) == HELD
        ),
        120,
    )
    cp.stop_kubelet(NODE)
    wait_node_unknown(cp, NODE)
    for app in ("held-dead", "par", "ord"):
        wait_terminating_on(cp, NS, app, NODE, timeout=60)
    # Scale both StatefulSets up, then change their template (a rolling update).
    for name in ("par", "ord"):
        cp.kubectl("scale", "statefulset", "-n", NS, name, "--replicas=3")
    for ordinal in (1, 2):
        wait_for(
            f"par-{ordinal} Running",
            lambda o=ordinal: any(
                p["metadata"]["name"] == f"par-{o}" and running(p) for p in pods(cp, NS, "par")
            ),
            60,
        )
    for name in ("par", "ord"):
        cp.kubectl(
            "patch",
            "statefulset",
            "-n",
            NS,
            name,
            "--type=merge",
            "-p",
            json.dumps({"spec": {"template": {"metadata": {"annotations": {"e2e/rev": "2"}}}}}),
        )
    time.sleep(8)  # give the StatefulSet controller time to roll what it can
    # Past every grace period (5 s): stuck, not merely terminating.
    plugin.record(
        "dead-node-claims",
        "issue 8: forever toleration, finalizers, Parallel StatefulSet, 60 finalizer-held pods",
        "node down, StatefulSets scaled to 3 and updated",
    )
    code, d = plugin.diagnose_json("-n", NS)
    table = plugin.run("diagnose", "-n", NS).stdout
    return Dead(cp, plugin, code, d, table)


def test_forever_toleration_is_never_evicted_and_nothing_replaces_it(dead: Dead) -> None:
    cp = dead.cp
    assert ("node.kubernetes.io/unreachable", "NoExecute") in taint_keys(cp, NODE)
    forever = pod_on(cp, NS, "forever", NODE)
    assert forever is not None and not terminating(forever)
    assert len(pods(cp, NS, "forever")) == 1  # the ReplicaSet made no replacement
    p = _pod(dead.diagnosis, _forever_name(cp))
    assert "never evicted" in p["timeline"] and p["replacement"]["state"] == "none"
    assert p["action"]["code"] == "out-of-service"
    assert "serves" not in p["action"]["summary"] and "cosmetic" not in p["action"]["summary"]
    assert "delete the Node object" in p["action"]["summary"]
    report = report_from_data(dead.diagnosis)
    mine = next(x for x in report.pods if x.name == p["name"])
    assert summary.next_step(mine, report.captured_at) == "never evicted"


def test_finalizer_on_a_dead_node_pod_is_named_with_its_remover(dead: Dead) -> None:
    p = _pod(dead.diagnosis, "held-dead")
    assert p["finalizers"] == [FINALIZER] and p["terminating"]
    assert FINALIZER in p["meaning"] and "kubelet is not reporting" in p["meaning"]
    assert FINALIZER in p["action"]["summary"]
    assert "removed by the controller that set it (e2e.nodefail)" in p["action"]["summary"]
    assert p["action"]["code"] == "finalizer-held"
    assert (
        "neither the out-of-service taint nor a force delete removes the object, so nothing "
        "remediate does releases it" in p["action"]["summary"]
    )
    assert FINALIZER in p["ifNodeReturns"] and "object stays" in p["ifNodeReturns"]


def test_statefulset_pending_work_for_both_policies(dead: Dead) -> None:
    cp = dead.cp
    par, ord_ = _sts_truth(cp, "par"), _sts_truth(cp, "ord")
    # Parallel: scaling proceeded past the stuck ordinal; OrderedReady: it did not.
    assert {"par-0", "par-1", "par-2"} == set(par["pods"])
    assert set(ord_["pods"]) == {"ord-0"}
    assert par["update"] != par["current"] and ord_["update"] != ord_["current"]
    stale_par = sorted(n for n, h in par["pods"].items() if h != par["update"])
    # The rolling update went from the highest ordinal down and stopped at the stuck one.
    assert stale_par == ["par-0"], par
    d = dead.diagnosis
    p0 = _pod(d, "par-0")
    assert "Parallel" in p0["explanation"] and "scaling proceeds" in p0["explanation"]
    assert "goes from the highest ordinal down, stops at this one" in p0["explanation"]
    ordinals = ", ".join(n.rsplit("-", 1)[1] for n in stale_par)
    assert (
        f"rolling update to revision {par['update']} not finished: ordinals {ordinals} "
        f"still on {par['current']}" in p0["explanation"]
    ), (par, p0["explanation"])
    o0 = _pod(d, "ord-0")
    assert "OrderedReady" in o0["explanation"]
    assert "ordinals 1, 2 not created yet (replicas 3)" in o0["explanation"]
    assert f"ordinals 0 still on {ord_['current']}" in o0["explanation"]


def test_finalizer_held_pods_on_healthy_nodes_are_grouped(dead: Dead) -> None:
    d = dead.diagnosis
    held = [p for p in d["pods"] if p["name"].startswith("held-many-")]
    assert len(held) == HELD
    assert all(p["category"] == "terminating-elsewhere" and not p["nodeFailed"] for p in held)
    assert all(p["ifNodeReturns"] == "" for p in held)
    assert d["summary"]["heldByFinalizers"] == HELD
    assert d["summary"]["terminatingElsewhere"] == HELD
    on_dead = d["summary"]["podsOnFailedNodes"]
    assert on_dead == len([p for p in d["pods"] if p["node"] == NODE])
    first = dead.table.splitlines()[0]
    stuck = f"{on_dead} stuck pods;" if on_dead != 1 else "1 stuck pod;"
    assert stuck in first, first
    assert f"{HELD} pods Terminating on nodes that did not fail ({HELD} held by finalizers)" in (
        first
    )
    rows = [line for line in dead.table.splitlines() if line.startswith(f"{NS}/held-many-")]
    assert len(rows) == 1 and f"and {HELD - 1} more" in rows[0], rows
    nodes = {p["node"] for p in held}
    assert (
        f"- {HELD} pods in {NS} owned by Deployment/held-many, on {len(nodes)} node" in dead.table
    )
    assert f"finalizers {FINALIZER}" in dead.table


def test_force_delete_and_out_of_service_leave_a_finalizer_held_pod(dead: Dead) -> None:
    """The claims behind the finalizer advice: a force delete leaves the object, and so does
    PodGC under the out-of-service taint (which does release the StatefulSet pods)."""
    cp = dead.cp
    before = pod_on(cp, NS, "held-dead", NODE)
    assert before is not None
    cp.kubectl(
        "delete", "pod", "-n", NS, "held-dead", "--grace-period=0", "--force", "--wait=false"
    )
    time.sleep(2)
    after = pod_on(cp, NS, "held-dead", NODE)
    assert after is not None and after["metadata"]["uid"] == before["metadata"]["uid"]
    assert after["metadata"]["finalizers"] == [FINALIZER]
    code, d = dead.plugin.diagnose_json("-n", NS)
    assert code == 3 and FINALIZER in _pod(d, "held-dead")["action"]["summary"]
    old = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods(cp, NS, "ord")}
    cp.kubectl("taint", "node", NODE, f"{OOS}=nodeshutdown:NoExecute")
    try:
        wait_for(
            "PodGC to force-delete ord-0 under the out-of-service taint",
            lambda: old["ord-0"] not in {p["metadata"]["uid"] for p in pods(cp, NS, "ord")},
            90,
        )
        # The out-of-service taint frees the pod that tolerated unreachable forever, too.
        wait_for(
            "the forever pod released from the dead node",
            lambda: pod_on(cp, NS, "forever", NODE) is None,
            90,
        )
        still = pod_on(cp, NS, "held-dead", NODE)
        assert still is not None and still["metadata"]["uid"] == before["metadata"]["uid"]
        # PodGC force-deletes only Terminating pods: one that tolerates the taint stays.
        blanket = pod_on(cp, NS, "blanket", NODE)
        assert blanket is not None and not terminating(blanket)
        code, d = dead.plugin.diagnose_json("-n", NS)
        p = _pod(d, "held-dead")
        assert FINALIZER in p["action"]["summary"]
        b = _pod(d, blanket["metadata"]["name"])
        # a force delete releases it (the default plan carries one: test_reaching_the_node)
        assert b["action"]["code"] == "force-delete", b["action"]
        assert "PodGC force-deletes only Terminating pods" in b["action"]["summary"]
        # The kubelet returns: it finishes the deletion, the finalizer still keeps the object.
        cp.start_kubelet(NODE)
        wait_node_ready(cp, NODE)
        time.sleep(3)
        back = pod_on(cp, NS, "held-dead", NODE)
        assert back is not None and back["metadata"]["uid"] == before["metadata"]["uid"]
        assert back["metadata"]["finalizers"] == [FINALIZER]
    finally:
        drop_finalizers(cp, NS, "held-dead")
        for p in pods(cp, NS, "held-many"):
            drop_finalizers(cp, NS, p["metadata"]["name"])
        cp.start_kubelet(NODE)
        wait_node_ready(cp, NODE)
        cp.kubectl("taint", "node", NODE, f"{OOS}-", check=False)
        cp.kubectl("delete", "namespace", NS, "--wait=false")
