"""Queries and waits the scenarios share: pods of an app, node conditions, taints."""

from __future__ import annotations

import json
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubectl_nodefail.analysis.nodes import is_ready
from kubectl_nodefail.cluster import kube, podrows
from tests.e2e import workloads as w
from tests.e2e.controlplane import ControlPlane, wait_for
from tests.support.fakeapi import ctrl_c_default

if TYPE_CHECKING:
    from tests.e2e.conftest import Plugin

Obj = dict[str, Any]


def pods(cp: ControlPlane, ns: str, app: str) -> list[Obj]:
    data = cp.get("pods", namespace=ns, selector=f"app={app}")
    return list((data or {}).get("items") or [])


def drop_finalizers(cp: ControlPlane, ns: str, name: str, check: bool = False) -> None:
    """Remove every finalizer of a pod (a test's own hold), so that the object can go."""
    cp.kubectl(
        "patch",
        "pod",
        "-n",
        ns,
        name,
        "--type=json",
        "-p",
        '[{"op":"remove","path":"/metadata/finalizers"}]',
        check=check,
    )


def pod_on(cp: ControlPlane, ns: str, app: str, node: str) -> Obj | None:
    found = [p for p in pods(cp, ns, app) if p["spec"].get("nodeName") == node]
    return found[0] if found else None


def ready(cp: ControlPlane, node: str) -> Obj:
    obj = cp.get("node", node) or {}
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "Ready"), {"status": "(none yet)"})


def taint_keys(cp: ControlPlane, node: str) -> set[tuple[str, str]]:
    obj = cp.get("node", node)
    return {(t["key"], t["effect"]) for t in obj["spec"].get("taints") or []}


def running(pod: Obj | None) -> bool:
    return (
        bool(pod)
        and pod["status"].get("phase") == "Running"
        and not pod["metadata"].get(  # type: ignore[index]
            "deletionTimestamp"
        )
    )


def terminating(pod: Obj | None) -> bool:
    return bool(pod) and bool(pod["metadata"].get("deletionTimestamp"))  # type: ignore[index]


def controller_log(cp: ControlPlane) -> list[str]:
    """kube-controller-manager's log lines so far."""
    return (cp.cluster_dir / "logs" / "kube-controller-manager.log").read_text().splitlines()


def zone_state_logged(cp: ControlPlane, zone: str, state: str) -> bool:
    """The node lifecycle controller logged the zone's move to `state`."""
    return any(
        zone in line and f'newState="{state}"' in line
        for line in controller_log(cp)
        if "Controller detected that zone is now in new state" in line
    )


def wait_node_ready(cp: ControlPlane, node: str, timeout: float = 60) -> None:
    wait_for(f"node {node} Ready", lambda: ready(cp, node)["status"] == "True", timeout)


def wait_node_unknown(cp: ControlPlane, node: str, timeout: float = 60) -> Obj:
    return wait_for(
        f"node {node} Ready=Unknown",
        lambda: (r := ready(cp, node))["status"] == "Unknown" and r,
        timeout,
    )


def wait_running_on(cp: ControlPlane, ns: str, app: str, node: str, timeout: float = 60) -> Obj:
    return wait_for(
        f"{ns}/{app} Running on {node}",
        lambda: (p := pod_on(cp, ns, app, node)) and running(p) and p,
        timeout,
    )


def wait_terminating_on(cp: ControlPlane, ns: str, app: str, node: str, timeout: float = 90) -> Obj:
    return wait_for(
        f"{ns}/{app} Terminating on {node}",
        lambda: (p := pod_on(cp, ns, app, node)) and terminating(p) and p,
        timeout,
    )


def wait_running_elsewhere(
    cp: ControlPlane, ns: str, app: str, node: str, timeout: float = 90
) -> Obj:
    def probe() -> Obj | None:
        for p in pods(cp, ns, app):
            if p["spec"].get("nodeName") not in (None, node) and running(p):
                return p
        return None

    return wait_for(f"{ns}/{app} Running on a node other than {node}", probe, timeout)


def audit_writes(cp: ControlPlane) -> list[Obj]:
    """Completed writes kubectl-nodefail made, from the apiserver's audit log (access reviews,
    which persist nothing, left out)."""
    log = cp.cluster_dir / "logs" / "audit.log"
    entries = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [
        e
        for e in entries
        if e.get("stage") == "ResponseComplete"
        and e.get("userAgent", "").startswith("kubectl-nodefail/")
        and e["verb"] in ("create", "update", "patch", "delete", "deletecollection")
        and e.get("objectRef", {}).get("resource")
        not in ("selfsubjectaccessreviews", "selfsubjectreviews")
    ]


def writes_since(cp: ControlPlane, start: datetime) -> list[Obj]:
    """The plugin's completed writes (audit_writes) received from `start` on."""
    time.sleep(1)  # the audit log is written as requests complete
    return [
        e
        for e in audit_writes(cp)
        if datetime.fromisoformat(str(e["requestReceivedTimestamp"]).replace("Z", "+00:00"))
        >= start
    ]


def refused_without_a_write(
    cp: ControlPlane, plugin: Plugin, node: str, saved: Path, because: str
) -> None:
    """`remediate NODE --confirm`, attested, and the saved plan replayed with --confirm: both
    refused by the brake (exit 4, saying `because`), and nothing written, the out-of-service
    taint above all."""
    start = datetime.now(timezone.utc)
    named = plugin.run(*attested(node))
    assert named.returncode == 4, named.stdout + named.stderr
    assert because in named.stdout, named.stdout
    replay = plugin.run(
        "remediate", "--plan-in", str(saved), "--node-shutdown-confirmed", node, "--confirm"
    )
    assert replay.returncode == 4, replay.stdout + replay.stderr
    assert because in replay.stdout, replay.stdout
    assert writes_since(cp, start) == []
    assert ("node.kubernetes.io/out-of-service", "NoExecute") not in taint_keys(cp, node)


def attested(
    node: str, *extra: str, strategy: str | None = None, confirm: bool = True
) -> list[str]:
    """The arguments of `remediate NODE [--strategy S] --node-shutdown-confirmed NODE --confirm
    EXTRA...`: the run of an on-call engineer who checked that the machine is off."""
    chosen = ["--strategy", strategy] if strategy else []
    go = ["--confirm"] if confirm else []
    return ["remediate", node, *chosen, "--node-shutdown-confirmed", node, *go, *extra]


def service_account_kubeconfig(
    cp: ControlPlane, tmp_path: Path, name: str, roles: list[str], ns: str
) -> Path:
    """A kubeconfig (context NAME) for a new ServiceAccount NS/NAME bound to these ClusterRoles
    by token: a user who has exactly those rights."""
    cp.apply(
        w.namespace(ns),
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}},
    )
    for role in roles:
        cp.kubectl(
            "create",
            "clusterrolebinding",
            f"{name}-{role}",
            f"--clusterrole={role}",
            f"--serviceaccount={ns}:{name}",
        )
    token = cp.kubectl("create", "token", name, "-n", ns)
    base = cp.get_kubeconfig()
    cluster = base["clusters"][0]["cluster"]
    path = tmp_path / f"{name}.kubeconfig"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": name,
                "clusters": [{"name": "e2e", "cluster": cluster}],
                "users": [{"name": name, "user": {"token": token}}],
                "contexts": [{"name": name, "context": {"cluster": "e2e", "user": name}}],
            }
        )
    )
    return path


def rows_against_objects(cp: ControlPlane, ns: str) -> int:
    """Every row of the API server's pods Table for `ns` that a diagnosis would take for its pod
    (podrows.from_row, on a Ready node, as gather reads the owners' other pods), compared with
    the pod's full object read just after: Running, Ready, the same node and metadata. A pod
    that changed between the two reads is not compared. Returns how many rows were compared."""
    cluster = kube.Cluster(str(cp.kubeconfig), None, timeout=30)
    try:
        ready = {
            n["metadata"]["name"] for n in cluster.list_all("/api/v1/nodes", "Node") if is_ready(n)
        }
        columns, table, items = cluster.list_rows(kube.pod_path(ns), "Pod")
        full = {p["metadata"]["uid"]: p for p in cluster.list_all(kube.pod_path(ns), "Pod")}
    finally:
        cluster.close()
    assert not items and podrows.columns_usable(columns), columns
    compared = 0
    for cells, meta in table:
        pod = podrows.from_row(columns, cells, meta)
        if pod is None or pod["spec"]["nodeName"] not in ready:
            continue
        obj = full.get((meta or {}).get("uid"))
        if obj is None or obj["metadata"].get("resourceVersion") != pod["metadata"].get(
            "resourceVersion"
        ):
            continue
        compared += 1
        assert pod["metadata"] == obj["metadata"], cells
        assert pod["spec"]["nodeName"] == obj["spec"]["nodeName"], cells
        assert obj["status"]["phase"] == "Running", (cells, obj["status"])
        assert any(
            c["type"] == "Ready" and c["status"] == "True" for c in obj["status"]["conditions"]
        ), (cells, obj["status"])
    return compared


def pod_row(data: Obj, ns: str, prefix: str) -> Obj:
    """The diagnosis' row of the pod of `ns` whose name starts with `prefix`."""
    return next(p for p in data["pods"] if p["namespace"] == ns and p["name"].startswith(prefix))


def claims_of(row: Obj, kind: str) -> list[str]:
    """The texts of a pod row's claims of one kind."""
    return [c["text"] for c in row.get("claims") or [] if c["kind"] == kind]


def remediate_confirmed(plugin: Plugin, node: str) -> Obj:
    """remediate NODE with the node attested and --confirm (exit 0), as JSON."""
    proc = plugin.run(
        "remediate", node, "--node-shutdown-confirmed", node, "--confirm", "-o", "json"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return dict(json.loads(proc.stdout))


def check_job_pod(row: Obj) -> None:
    """A Job's evicted pod: its replacement runs or finished, or (the Job SuccessCriteriaMet or
    FailureTarget but not finished while this pod is Terminating) it holds its Job, said with
    those conditions as premises (which the premise checker re-reads from the same moment)."""
    state = row["replacement"]["state"]
    if state == "blocked":
        held = [c for c in row["claims"] if c["kind"] == "blocks"]
        assert held and "but is not" in held[0]["text"], row["claims"]
        fields = {p["field"]: p["value"] for p in held[0]["because"]}
        met = (
            fields.get("status.conditions[type=SuccessCriteriaMet].status"),
            fields.get("status.conditions[type=FailureTarget].status"),
        )
        assert "True" in met, held[0]["because"]
    else:
        assert state in ("running", "finished"), row["replacement"]


def first_run_pod(cp: ControlPlane, ns: str, node: str, timeout: float) -> Obj:
    """The pod a CronJob's first run starts on `node`, once Running there."""
    return wait_for(
        "the first run's pod Running on the node",
        lambda: next(
            (
                p
                for p in cp.get("pods", namespace=ns)["items"]
                if p["spec"].get("nodeName") == node and p["status"].get("phase") == "Running"
            ),
            None,
        ),
        timeout,
    )


def watching(cp: ControlPlane, plugin: Plugin, *args: str) -> subprocess.Popen[str]:
    """`kubectl nodefail diagnose --watch --interval 1 ARGS` started, its stdout and stderr
    piped; Ctrl-C reaches it even from a background shell."""
    return subprocess.Popen(
        [str(cp.bindir / "kubectl"), "nodefail", "diagnose", "--watch", "--interval", "1", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=plugin.env,
        preexec_fn=ctrl_c_default,
    )
