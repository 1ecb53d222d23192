"""remediate on the real control plane: gates, re-checks, preconditions, RBAC and the trail."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane, wait_for
from tests.e2e.helpers import (
    attested,
    pod_on,
    pods,
    service_account_kubeconfig,
    taint_keys,
    terminating,
    wait_node_ready,
    wait_node_unknown,
    wait_running_elsewhere,
    wait_running_on,
    wait_terminating_on,
    zone_state_logged,
)

pytestmark = pytest.mark.e2e
NS = "scenario-remediate"
OOS = "node.kubernetes.io/out-of-service"


def _json(proc: Any) -> Any:
    assert proc.stdout, f"no output (exit {proc.returncode}): {proc.stderr}"
    return json.loads(proc.stdout)


def _down(cp: ControlPlane, *nodes: str, grace: int = 10) -> dict[str, str]:
    """Fail these nodes with a StatefulSet pod on each; return the stuck pods' UIDs."""
    for node in nodes:
        if cp.get("node", node) is None:
            cp.add_failable_node(node)
    for node in nodes:
        wait_node_ready(cp, node)
    cp.apply(
        w.namespace(NS),
        *[w.statefulset(NS, f"db-{n}", prefer=n, toleration_seconds=5, grace=grace) for n in nodes],
    )
    uids = {n: wait_running_on(cp, NS, f"db-{n}", n)["metadata"]["uid"] for n in nodes}
    for node in nodes:
        cp.stop_kubelet(node)
    for node in nodes:
        wait_node_unknown(cp, node)
        wait_terminating_on(cp, NS, f"db-{node}", node, timeout=60)
    return uids


def test_statefulset_force_delete_needs_attestation(
    control_plane: ControlPlane, plugin: Plugin, tmp_path: Path
) -> None:
    cp, node = control_plane, "flaky-r1"
    cp.add_failable_node(node)
    wait_node_ready(cp, node)
    cp.apply(
        w.namespace(NS),
        w.deployment(NS, "web-r1", prefer=node, toleration_seconds=5),
        w.daemonset(NS, "agent-r"),
    )
    uids = _down(cp, node)
    web = wait_terminating_on(cp, NS, "web-r1", node, timeout=60)
    # Without attestation: the destructive step is refused and says what would unlock it.
    proc = plugin.run("remediate", node, "--strategy", "force-delete", "-o", "json")
    assert proc.returncode == 4, proc.stderr
    plan = _json(proc)
    refused = [s for s in plan["steps"] if not s["allowed"]]
    assert [s["target"] for s in refused] == [f"pod/{NS}/db-{node}-0"]
    assert "--node-shutdown-confirmed <NODE-YOU-VERIFIED-IS-POWERED-OFF>" in refused[0]["gate"]
    assert f"Check the machine of {node}" in refused[0]["gate"]
    waits = {s["target"]: s["why"] for s in plan["steps"] if s["action"] == "wait"}
    assert any("daemonset pod: never acted on" in why for why in waits.values())
    assert "the stuck object is cosmetic" in waits[f"pod/{NS}/{web['metadata']['name']}"]
    # Attested and confirmed: the StatefulSet pod is force-deleted and recreated elsewhere.
    log = tmp_path / "trail.jsonl"
    proc = plugin.run(
        *attested(node, strategy="force-delete"),
        "--log-file",
        str(log),
        "-o",
        "json",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    done = [s for s in _json(proc)["steps"] if s["result"] == "done"]
    assert [s["target"] for s in done] == [f"pod/{NS}/db-{node}-0"]
    new = wait_running_elsewhere(cp, NS, f"db-{node}", node, timeout=60)
    assert new["metadata"]["uid"] != uids[node]
    # DaemonSet and Deployment pods were left alone.
    agent = pod_on(cp, NS, "agent-r", node)
    assert agent is not None and not terminating(agent)
    assert pod_on(cp, NS, "web-r1", node)["metadata"]["uid"] == web["metadata"]["uid"]  # type: ignore[index]
    # The trail: a JSON line before the request and one after, and an Event for each.
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["action"], r["result"]) for r in records] == [
        ("force-delete-pod", "starting"),
        ("force-delete-pod", "done"),
    ]
    events = cp.get("events", namespace=NS)["items"]
    reasons = {e["reason"] for e in events if e["involvedObject"].get("uid") == uids[node]}
    assert {"NodefailForceDeletePodStarting", "NodefailForceDeletePod"} <= reasons
    cp.start_kubelet(node)
    wait_node_ready(cp, node)


def test_out_of_service_strategy_and_taint_removal(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    cp, node = control_plane, "flaky-r2"
    uids = _down(cp, node)
    proc = plugin.run(
        *attested(node),
        "--wait-timeout",
        "90",
        "-o",
        "json",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    step = next(s for s in _json(proc)["steps"] if s["action"] == "taint-out-of-service")
    assert step["result"] == "done" and "no Terminating pod" in step["detail"]
    assert (OOS, "NoExecute") in taint_keys(cp, node)
    annotations = cp.get("node", node)["metadata"]["annotations"]
    assert "kubectl-nodefail" in annotations["kubectl-nodefail.io/out-of-service-by"]
    new = wait_running_elsewhere(cp, NS, f"db-{node}", node, timeout=60)
    assert new["metadata"]["uid"] != uids[node]
    # The kubelet returns: the taint stays until removed, and remediate removes it.
    cp.start_kubelet(node)
    wait_node_ready(cp, node)
    assert (OOS, "NoExecute") in taint_keys(cp, node)
    proc = plugin.run("remediate", node, "--confirm", "-o", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [s["action"] for s in _json(proc)["steps"]] == ["remove-out-of-service"]
    assert (OOS, "NoExecute") not in taint_keys(cp, node)


def _saved_force_delete_refused(
    plugin: Plugin, plan: Path, node: str, detail: str, retyped: bool = True
) -> None:
    """A saved plan replayed (with the attestation typed again, or not): exit 4, its force
    delete refused (by the live plan), the refusal's detail starting with `detail`."""
    attested = ("--node-shutdown-confirmed", node) if retyped else ()
    proc = plugin.run("remediate", "--plan-in", str(plan), *attested, "--confirm", "-o", "json")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    step = next(s for s in _json(proc)["steps"] if s["action"] == "force-delete-pod")
    assert step["result"] == "refused", step
    assert step["detail"].startswith(detail), step
    # the pod is not stuck now (its node is back, or it was recreated elsewhere): the refused
    # step says nothing of it staying stuck (issue 33 item 7)
    assert step["releases"] == [], step


def test_rechecks_skip_a_returned_node_and_a_recreated_pod(
    control_plane: ControlPlane, plugin: Plugin, tmp_path: Path
) -> None:
    cp, back, renamed = control_plane, "flaky-r3", "flaky-r4"
    uids = _down(cp, back, renamed)
    plans = {}
    for node in (back, renamed):
        plans[node] = tmp_path / f"{node}.json"
        proc = plugin.run(
            *attested(node, strategy="force-delete", confirm=False),
            "--plan-out",
            str(plans[node]),
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
    # The node comes back between plan and --confirm: the attestation typed again is refused
    # (the node is Ready: exit 17, nothing done); without it, the live plan has nothing for the
    # node, so the saved step is refused, never run.
    cp.start_kubelet(back)
    wait_node_ready(cp, back)
    retyped = plugin.run(
        "remediate", "--plan-in", str(plans[back]), "--node-shutdown-confirmed", back,
        "--confirm", "-o", "json",
    )  # fmt: skip
    assert retyped.returncode == 17 and retyped.stdout == "", retyped.stdout + retyped.stderr
    assert f"refused, node {back} is Ready" in retyped.stderr, retyped.stderr
    _saved_force_delete_refused(
        plugin,
        plans[back],
        back,
        f"not allowed now (the live plan has no force-delete-pod for pod/{NS}/db-{back}-0 on "
        f"node {back}",
        retyped=False,
    )
    # A pod recreated with the same name after the plan (elsewhere): the live plan has no step
    # for it, so the saved one is refused (the executor's own UID checks: test_remediate_safety).
    cp.kubectl("delete", "pod", "-n", NS, f"db-{renamed}-0", "--grace-period=0", "--force")
    again = wait_running_elsewhere(cp, NS, f"db-{renamed}", renamed, timeout=60)
    assert again["metadata"]["name"] == f"db-{renamed}-0"
    assert again["metadata"]["uid"] != uids[renamed]
    _saved_force_delete_refused(
        plugin,
        plans[renamed],
        renamed,
        f"not allowed now (the live plan has no force-delete-pod for pod/{NS}/db-{renamed}-0",
    )
    survivor = [p for p in pods(cp, NS, f"db-{renamed}") if not terminating(p)]
    assert [p["metadata"]["uid"] for p in survivor] == [again["metadata"]["uid"]]
    cp.start_kubelet(renamed)
    wait_node_ready(cp, renamed)


def test_zone_disruption_is_refused(control_plane: ControlPlane, plugin: Plugin) -> None:
    """Three of five nodes of a zone down: PartialDisruption, and the controller stops NoExecute
    tainting in the zone (nodes noticed before the zone crossed 55 % may already carry it, so
    the brake is checked on a fourth node failing afterwards). remediate refuses to act."""
    cp, zone = control_plane, "zone-z"
    first, late = ["flaky-z1", "flaky-z2", "flaky-z3"], "flaky-z4"
    cp.add_node("healthy-z", zone)
    for node in [*first, late]:
        cp.add_node(node, zone, managed_by=node)
        cp.start_kubelet(node)
    for node in [*first, late, "healthy-z"]:
        wait_node_ready(cp, node)
    try:
        for node in first:
            cp.stop_kubelet(node)
        for node in first:
            wait_node_unknown(cp, node)
        wait_for(
            "the controller to see zone-z in PartialDisruption",
            lambda: zone_state_logged(cp, zone, "PartialDisruption"),
            30,
        )
        cp.stop_kubelet(late)
        wait_node_unknown(cp, late)
        wait_for(
            "the unreachable NoSchedule taint on the late node",
            lambda: ("node.kubernetes.io/unreachable", "NoSchedule") in taint_keys(cp, late),
            30,
        )
        time.sleep(5)  # at 10 nodes/s, NoExecute tainting would have reached it by now
        assert ("node.kubernetes.io/unreachable", "NoExecute") not in taint_keys(cp, late)
        plugin.record("zone-partial-disruption", "zone disruption", "4 of 5 nodes of zone-z down")
        code, d = plugin.diagnose_json()
        assert code == 3
        z = next(z for z in d["zones"] if z["zone"].endswith(zone))
        assert z["state"] == "PartialDisruption" and z["eviction"] == "stopped"
        proc = plugin.run(*attested(late, "-o", "json"))
        assert proc.returncode == 4, proc.stdout + proc.stderr
        data = _json(proc)
        assert any("PartialDisruption" in r for r in data["refusals"])
        assert all(s["result"] in ("refused", "waited") for s in data["steps"])
    finally:
        for node in [*first, late]:
            cp.start_kubelet(node)
        for node in [*first, late]:
            wait_node_ready(cp, node)


def test_rbac_read_only_role_diagnoses_and_is_refused_before_any_change(
    control_plane: ControlPlane, plugin: Plugin, tmp_path: Path
) -> None:
    cp, node = control_plane, "flaky-r5"
    roles = plugin.run("rbac")  # the roles the plugin ships (deploy/rbac/ is their copy)
    assert roles.returncode == 0, roles.stderr
    cp.kubectl("apply", "-f", "-", stdin=roles.stdout)
    reader = service_account_kubeconfig(cp, tmp_path, "reader", ["kubectl-nodefail-diagnose"], NS)
    uids = _down(cp, node)
    proc = plugin.run("diagnose", "--kubeconfig", str(reader), "-o", "json")
    assert proc.returncode == 3, proc.stderr
    assert _json(proc)["gaps"] == []
    proc = plugin.run(
        "remediate",
        node,
        "--kubeconfig",
        str(reader),
        "--strategy",
        "force-delete",
        "--node-shutdown-confirmed",
        node,
        "--confirm",
    )
    assert proc.returncode == 12, proc.stdout + proc.stderr
    assert proc.stderr.startswith("error: refused before any change: missing permissions:")
    assert f"delete pods in namespace {NS}" in proc.stderr
    assert f"create events in namespace {NS}" in proc.stderr
    assert "(bind the roles `kubectl nodefail rbac remediate` prints)" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert proc.stdout == ""
    assert pod_on(cp, NS, f"db-{node}", node)["metadata"]["uid"] == uids[node]  # type: ignore[index]
    # Credentials the API server rejects: one line, exit 12.
    bad = tmp_path / "bad.kubeconfig"
    bad.write_text(
        reader.read_text().replace(
            json.loads(reader.read_text())["users"][0]["user"]["token"], "expired-or-bogus"
        )
    )
    proc = plugin.run("diagnose", "--kubeconfig", str(bad))
    assert proc.returncode == 12 and "401 Unauthorized" in proc.stderr
    # The remediate role, bound with the diagnose role, is enough for the same step.
    fixer = service_account_kubeconfig(
        cp, tmp_path, "fixer", ["kubectl-nodefail-diagnose", "kubectl-nodefail-remediate"], NS
    )
    proc = plugin.run(
        "remediate",
        node,
        "--kubeconfig",
        str(fixer),
        "--strategy",
        "force-delete",
        "--node-shutdown-confirmed",
        node,
        "--confirm",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wait_running_elsewhere(cp, NS, f"db-{node}", node, timeout=60)
    cp.start_kubelet(node)
    wait_node_ready(cp, node)


def test_optional_reads_forbidden_become_gaps(
    control_plane: ControlPlane, plugin: Plugin, tmp_path: Path
) -> None:
    cp = control_plane
    cp.apply(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "nodefail-minimal"},
            "rules": [
                {"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["get", "list"]}
            ],
        }
    )
    minimal = service_account_kubeconfig(cp, tmp_path, "minimal", ["nodefail-minimal"], NS)
    proc = plugin.run("diagnose", "--kubeconfig", str(minimal), "-o", "json")
    assert proc.returncode in (0, 3), proc.stderr
    gaps = " ".join(_json(proc)["gaps"])
    assert "events: forbidden" in gaps and "volumeattachments: forbidden" in gaps
    assert "warning: " in proc.stderr


def test_dry_run_sends_no_mutating_request(control_plane: ControlPlane, plugin: Plugin) -> None:
    """Proof from the apiserver's audit log (Metadata level for every write): every write the
    plugin made in this session falls inside a --confirm run; runs without --confirm wrote
    nothing but access reviews (which persist nothing)."""
    cp, node = control_plane, "spare-1"
    cp.add_node(node, "zone-a")
    wait_node_ready(cp, node)
    cp.kubectl("taint", "node", node, f"{OOS}=nodeshutdown:NoExecute")
    for _ in range(3):  # dry runs of a plan that would write (remove the stale taint)
        proc = plugin.run("remediate", node, "-o", "json")
        assert proc.returncode == 0 and _json(proc)["steps"][0]["allowed"], proc.stderr
    proc = plugin.run("remediate", node, "--confirm")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    log = cp.cluster_dir / "logs" / "audit.log"
    reviews = {"selfsubjectaccessreviews", "selfsubjectreviews"}

    def writes() -> list[Any]:
        entries = [json.loads(line) for line in log.read_text().splitlines()]
        return [
            e
            for e in entries
            if e.get("userAgent", "").startswith("kubectl-nodefail/")
            and e["verb"] in ("create", "update", "patch", "delete")
            and e.get("objectRef", {}).get("resource") not in reviews
        ]

    found = wait_for(
        "the confirmed patch in the audit log",
        lambda: [
            e for e in writes() if e["verb"] == "patch" and e["objectRef"].get("name") == node
        ],
        30,
    )
    assert found
    dry_runs = [r for r in plugin.runs if r.command == "remediate" and not r.confirmed]
    assert len(dry_runs) >= 3
    for entry in writes():
        when = datetime.fromisoformat(entry["requestReceivedTimestamp"].replace("Z", "+00:00"))
        run = next((r for r in plugin.runs if r.start <= when <= r.end), None)
        assert run is not None, f"a write outside any plugin run: {entry['objectRef']}"
        assert run.confirmed, f"a dry run wrote: {entry['verb']} {entry['objectRef']}"


def test_delete_node_strategy_lets_podgc_clean_up(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    cp, node = control_plane, "flaky-r6"
    uids = _down(cp, node)
    proc = plugin.run(
        *attested(node, strategy="delete-node"),
        "-o",
        "json",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    step = next(s for s in _json(proc)["steps"] if s["action"] == "delete-node")
    assert step["result"] == "done"
    assert cp.get("node", node) is None
    new = wait_running_elsewhere(cp, NS, f"db-{node}", node, timeout=120)  # PodGC, then the STS
    assert new["metadata"]["uid"] != uids[node]
    events = cp.get("events", namespace="default")["items"]
    assert any(
        e["reason"] == "NodefailDeleteNode" and e["involvedObject"]["name"] == node for e in events
    )
