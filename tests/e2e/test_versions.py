"""The core node-failure scenarios on the Kubernetes minor under test.

The module runs on the suite's minor (the newest, or $NODEFAIL_K8S_VERSION) and on each minor
of $NODEFAIL_MATRIX (e.g. "1.26 1.31": `make test` and `make test-matrix` set it), each minor
a unit of work of its own, so a parallel run runs the minors side by side. Per minor, on its
own real control plane: a kubelet stops -> the node goes Unknown and is tainted -> the pods as
that minor's kubectl shows them -> eviction -> the per-controller explanations -> force delete
-> the kubelet returns; and on a second node the out-of-service path that remediate picks for
the minor. Where the controller-manager still has --enable-taint-manager (before 1.27), a
second control plane runs with it off: the node lifecycle controller then marks the pods
NodeLost and kubectl prints Unknown (the NodeLost era, recorded for the unit tests).

Snapshots go to tests/fixtures/v1.MINOR/ with NODEFAIL_RECORD=1.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kubectl_nodefail.analysis import versions
from tests import openapi
from tests.e2e import workloads as w
from tests.e2e.conftest import REPO, Plugin, running_control_plane, version_fixtures
from tests.e2e.controlplane import ControlPlane, matrix_minors, requested_version, wait_for
from tests.e2e.helpers import (
    check_job_pod,
    pod_on,
    pods,
    rows_against_objects,
    running,
    service_account_kubeconfig,
    taint_keys,
    terminating,
    wait_node_ready,
    wait_node_unknown,
    wait_running_elsewhere,
    wait_running_on,
    wait_terminating_on,
)

pytestmark = pytest.mark.e2e
NS = "versions"
ZONE = "zone-versions"  # its own zone: other modules' dead nodes never brake its evictions
HEALTHY = [f"healthy-ver-{i}" for i in range(3)]
DOWN, OOS = "ver-down", "ver-oos"  # kubelet stops and returns; out-of-service path
# Leaves time to diagnose the moment before eviction on a busy machine: 30 s was outrun with two
# suites side by side on 2 cores (load ~25, 2026-12-02, run m).
TOLERATION = 60
GRACE = 10
UNREACHABLE = "node.kubernetes.io/unreachable"
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"


def _minor_param(version: str | None) -> Any:
    # The id `k8s-...` makes each minor a unit of work of its own in a parallel run
    # (tests/conftest.py: work_group).
    return pytest.param(version, id=f"k8s-{version or 'default'}")


@pytest.fixture(
    scope="module",
    params=[_minor_param(v) for v in dict.fromkeys([requested_version(), *matrix_minors()])],
)
def minor(request: pytest.FixtureRequest) -> str | None:
    """The minor asked for (None: the build script's default)."""
    version: str | None = request.param
    return version


@pytest.fixture(scope="module")
def control_plane(minor: str | None) -> Iterator[ControlPlane]:
    """A control plane of each minor under test (this replaces the conftest's, which is of the
    suite's minor only)."""
    with running_control_plane(minor, label=f"versions-{minor or 'default'}") as cp:
        yield cp


@dataclass
class Matrix:
    cp: ControlPlane
    plugin: Plugin
    minor: int
    wanted: str | None  # the minor asked for (None: the build script's default)
    uids: dict[str, str] = field(default_factory=dict)
    diagnoses: dict[str, Any] = field(default_factory=dict)
    codes: dict[str, int] = field(default_factory=dict)
    kubectl_seen: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)
    kubectl_seen_after: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)


def kubectl_statuses(cp: ControlPlane, ns: str) -> dict[str, tuple[str, str]]:
    """READY and STATUS of every pod, exactly as this minor's kubectl prints them."""
    out = cp.kubectl("get", "pods", "-n", ns, "--no-headers")
    return {cols[0]: (cols[1], cols[2]) for cols in (line.split() for line in out.splitlines())}


def record(state: Matrix, moment: str, *nodes: str) -> None:
    """Snapshot these nodes' part of the cluster (into tests/fixtures/v1.MINOR/ when recording)
    and keep the diagnosis with kubectl's view just before and just after it: pods only move
    forward (Running -> Terminating -> gone), so the diagnosis must match one of the two."""
    scenario = f"version matrix on 1.{state.minor}"
    state.plugin.record(f"node-down-{moment}", scenario, moment, nodes)
    state.kubectl_seen[moment] = kubectl_statuses(state.cp, NS)
    state.codes[moment], state.diagnoses[moment] = state.plugin.diagnose_json(*nodes)
    state.kubectl_seen_after[moment] = kubectl_statuses(state.cp, NS)


def as_kubectl_shows(state: Matrix, moment: str, pod: Any) -> None:
    """The diagnosis shows a pod's READY and STATUS exactly as this minor's kubectl did."""
    views = {state.kubectl_seen[moment].get(pod["name"])}
    views.add(state.kubectl_seen_after[moment].get(pod["name"]))
    assert (pod["ready"], pod["kubectlStatus"]) in views, (pod["name"], views)


def pod_named(diagnosis: Any, name: str) -> Any:
    found = [p for p in diagnosis["pods"] if p["name"] == name and p["namespace"] == NS]
    assert found, f"{name} missing from diagnosis: {[p['name'] for p in diagnosis['pods']]}"
    return found[0]


def agents(cp: ControlPlane) -> list[Any]:
    return pods(cp, NS, "agent")


def stuck_on(cp: ControlPlane, node: str) -> list[Any]:
    """The pods of this module bound to the node (other than its DaemonSet pod)."""
    return [
        p
        for app in ("web", "db", "lonely", "batch")
        for p in pods(cp, NS, app)
        if p["spec"].get("nodeName") == node
    ]


def name_on(state: Matrix, app: str, node: str) -> str:
    pod = pod_on(state.cp, NS, app, node)
    assert pod is not None, f"no pod of {app} on {node}"
    return str(pod["metadata"]["name"])


@pytest.fixture(scope="module")
def matrix(control_plane: ControlPlane, minor: str | None) -> Matrix:
    cp = control_plane
    for name in HEALTHY:
        cp.add_node(name, ZONE)
    for node in (DOWN, OOS):
        cp.add_failable_node(node, ZONE)
    for node in (DOWN, OOS):
        wait_node_ready(cp, node)
    tol = {"toleration_seconds": TOLERATION, "grace": GRACE}
    cp.apply(
        w.namespace(NS),
        w.deployment(NS, "web", prefer=DOWN, **tol),
        w.statefulset(NS, "db", prefer=DOWN, **tol),
        w.daemonset(NS, "agent"),
        w.bare_pod(NS, "lonely", pin=DOWN, **tol),
        w.job(NS, "batch", prefer=DOWN, **tol),
        w.statefulset(NS, "store", prefer=OOS, **tol),
    )
    state = Matrix(cp, Plugin(cp), cp.server_minor(), minor)
    state.plugin.fixtures = version_fixtures(cp)
    for app in ("web", "db", "agent", "lonely", "batch"):
        state.uids[app] = wait_running_on(cp, NS, app, DOWN)["metadata"]["uid"]
    state.uids["store"] = wait_running_on(cp, NS, "store", OOS)["metadata"]["uid"]
    state.uids["agent-oos"] = wait_running_on(cp, NS, "agent", OOS)["metadata"]["uid"]
    cp.stop_kubelet(DOWN)
    cp.stop_kubelet(OOS)
    return state


def test_the_recorded_openapi_is_the_servers(control_plane: ControlPlane) -> None:
    """tests/recorded-openapi/v1.MINOR.json (what tests/unit/snapshot/test_openapi_schemas.py
    holds the dump schema to) is this minor's API server's own OpenAPI v3 for the kinds the analysis
    reads; NODEFAIL_RECORD=1 writes it."""
    cp = control_plane
    served = openapi.record(lambda path: json.loads(cp.kubectl("get", "--raw", path)))
    target = openapi.FIXTURES / f"v1.{cp.server_minor()}.json"
    if os.environ.get("NODEFAIL_RECORD") == "1":
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(served, indent=1, sort_keys=True) + "\n")
    assert served == json.loads(target.read_text()), f"{target} is not what the server serves"


def test_the_control_plane_runs_the_requested_minor(matrix: Matrix) -> None:
    version = matrix.cp.server_version()
    wanted = matrix.wanted
    if wanted is not None:
        assert version.startswith("v" + wanted.lstrip("v").rsplit(".", 1)[0] + ".")
    both = json.loads(matrix.cp.kubectl("version", "-o", "json"))
    assert both["clientVersion"]["gitVersion"] == version  # kubectl of the same release
    assert versions.OLDEST_TESTED_MINOR <= matrix.minor <= versions.NEWEST_TESTED_MINOR


def test_kubelet_stops_node_goes_unknown_and_tainted(matrix: Matrix) -> None:
    for node in (DOWN, OOS):
        cond = wait_node_unknown(matrix.cp, node)
        assert cond["reason"] == "NodeStatusUnknown"
        assert cond["message"] == "Kubelet stopped posting node status."
        wait_for(
            f"unreachable NoSchedule and NoExecute taints on {node}",
            lambda n=node: (
                {(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")}
                <= taint_keys(matrix.cp, n)
            ),
            30,
        )
    web = pod_on(matrix.cp, NS, "web", DOWN)
    assert web is not None and running(web)
    pod_ready = next(c for c in web["status"]["conditions"] if c["type"] == "Ready")
    assert pod_ready["status"] == "False"
    record(matrix, "before-eviction", DOWN, OOS)


def test_before_eviction_pods_show_running_in_kubectl_and_diagnose(matrix: Matrix) -> None:
    seen, d = matrix.kubectl_seen["before-eviction"], matrix.diagnoses["before-eviction"]
    assert matrix.codes["before-eviction"] == 3
    on_down = [p for p in d["pods"] if p["node"] == DOWN and p["namespace"] == NS]
    assert len(on_down) == 5
    for p in on_down:
        # Same STATUS and READY as this minor's own kubectl, and never NodeLost by default.
        as_kubectl_shows(matrix, "before-eviction", p)
        assert seen[p["name"]][1] == "Running" and p["era"] == "current"
    node = next(n for n in d["nodes"] if n["name"] == DOWN)
    assert node["status"] == "NotReady" and node["cause"]["code"] == "kubelet-stopped"
    web = pod_named(d, name_on(matrix, "web", DOWN))
    assert web["replacement"]["state"] == "not-yet" and web["evictionAt"] is not None
    assert any(f"1.{matrix.minor}:" in note for note in d["serverBehaviour"])


def test_eviction_by_the_taint_manager(matrix: Matrix) -> None:
    old = wait_terminating_on(matrix.cp, NS, "web", DOWN, timeout=TOLERATION + 60)
    assert old["metadata"]["uid"] == matrix.uids["web"]
    assert old["status"].get("reason") != "NodeLost"
    targets = [c for c in old["status"].get("conditions", []) if c["type"] == "DisruptionTarget"]
    # PodDisruptionConditions: beta and on by default from 1.26, GA 1.31.
    assert [c.get("reason") for c in targets] == ["DeletionByTaintManager"]
    for app in ("db", "lonely", "batch"):
        wait_terminating_on(matrix.cp, NS, app, DOWN, timeout=30)
    wait_running_elsewhere(matrix.cp, NS, "web", DOWN)
    # The Job's replacement runs on a healthy node, where kwok completes Job pods at once.
    wait_for(
        "the Job's replacement pod on another node",
        lambda: [
            p for p in pods(matrix.cp, NS, "batch") if p["spec"].get("nodeName") not in (None, DOWN)
        ],
        60,
    )
    wait_terminating_on(matrix.cp, NS, "store", OOS, timeout=30)
    record(matrix, "after-eviction", DOWN, OOS)


def test_after_eviction_kubectl_and_per_controller_explanations(matrix: Matrix) -> None:
    d = matrix.diagnoses["after-eviction"]
    for p in (p for p in d["pods"] if p["namespace"] == NS):
        as_kubectl_shows(matrix, "after-eviction", p)
    by_app = {
        app: pod_named(d, name_on(matrix, app, DOWN))
        for app in ("web", "db", "agent", "lonely", "batch")
    }
    for app in ("web", "db", "lonely", "batch"):
        assert by_app[app]["kubectlStatus"] == "Terminating", app
    assert by_app["web"]["controller"] == "deployment"
    assert by_app["web"]["replacement"]["state"] == "running"
    assert by_app["db"]["controller"] == "statefulset"
    assert by_app["db"]["replacement"]["state"] == "blocked"
    assert by_app["db"]["action"]["code"] == "out-of-service"
    assert by_app["agent"]["controller"] == "daemonset"
    assert by_app["agent"]["kubectlStatus"] == "Running"
    assert "never evicted" in by_app["agent"]["timeline"]
    assert by_app["lonely"]["controller"] == "bare"
    assert by_app["lonely"]["replacement"]["state"] == "none"
    assert by_app["batch"]["controller"] == "job"
    check_job_pod(by_app["batch"])


def test_table_rows_stand_for_their_pods_on_this_minor(matrix: Matrix) -> None:
    """The rows a diagnosis takes for the owners' other pods (podrows.py) say what the full
    objects say on this minor's API server too (its printer's columns)."""
    assert rows_against_objects(matrix.cp, NS) >= 2


def test_out_of_service_path_remediate_picks_for_this_minor(matrix: Matrix) -> None:
    cp, plugin = matrix.cp, matrix.plugin
    confirmed = ("--node-shutdown-confirmed", OOS, "--confirm", "--wait-timeout", "90")
    proc = plugin.run("remediate", OOS, *confirmed, "-o", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    actions = [s["action"] for s in json.loads(proc.stdout)["steps"]]
    if versions.out_of_service_usable(matrix.minor):
        assert "taint-out-of-service" in actions
        assert (OUT_OF_SERVICE, "NoExecute") in taint_keys(cp, OOS)
        # Who did it: SelfSubjectReview is served from 1.27 (v1beta1; v1 from 1.28); on 1.26
        # only as v1alpha1 behind a gate that is off, so the context is named instead.
        by = cp.get("node", OOS)["metadata"]["annotations"]["kubectl-nodefail.io/out-of-service-by"]
        context = cp.get_kubeconfig()["current-context"]
        who = "kwok-admin" if matrix.minor >= 27 else f"unknown user (context {context})"
        assert by.startswith(f"{who} at "), by
        # The real PodGC force-deletes the Terminating pod; the DaemonSet pod is evicted too.
        wait_for(
            "the DaemonSet pod on the out-of-service node gone",
            lambda: matrix.uids["agent-oos"] not in {p["metadata"]["uid"] for p in agents(cp)},
            60,
        )
    else:
        assert "force-delete-pod" in actions and "taint-out-of-service" not in actions
    new = wait_running_elsewhere(cp, NS, "store", OOS, timeout=60)
    assert new["metadata"]["name"] == "store-0" and new["metadata"]["uid"] != matrix.uids["store"]


def test_force_delete_lets_the_statefulset_recreate_its_pod(matrix: Matrix) -> None:
    cp = matrix.cp
    old = pod_on(cp, NS, "db", DOWN)
    assert old is not None and terminating(old) and old["metadata"]["uid"] == matrix.uids["db"]
    cp.kubectl("delete", "pod", "-n", NS, "db-0", "--grace-period=0", "--force")
    new = wait_running_elsewhere(cp, NS, "db", DOWN, timeout=60)
    assert new["metadata"]["name"] == "db-0" and new["metadata"]["uid"] != matrix.uids["db"]


def test_kubelet_returns_and_everything_settles(matrix: Matrix, tmp_path: Path) -> None:
    cp = matrix.cp
    cp.start_kubelet(DOWN)
    wait_node_ready(cp, DOWN)
    wait_for(
        "the Terminating pods on the returned node removed by its kubelet",
        lambda: not [p for p in stuck_on(cp, DOWN) if terminating(p)],
        60,
    )
    assert pods(cp, NS, "lonely") == []  # a bare pod is never replaced
    agent = pod_on(cp, NS, "agent", DOWN)
    assert agent is not None and agent["metadata"]["uid"] == matrix.uids["agent"]
    wait_for("the DaemonSet pod Ready again", lambda: running(pod_on(cp, NS, "agent", DOWN)), 30)
    record(matrix, "recovered", DOWN)
    assert matrix.codes["recovered"] == 0, matrix.diagnoses["recovered"]
    # The out-of-service node comes back; remediate lifts the stale taint.
    cp.start_kubelet(OOS)
    wait_node_ready(cp, OOS)
    if versions.out_of_service_usable(matrix.minor):  # the taint went on above: it stays
        assert (OUT_OF_SERVICE, "NoExecute") in taint_keys(cp, OOS)
        # Removed by a user with the project's roles only (deploy/rbac), not an admin.
        cp.kubectl("apply", "-f", str(REPO / "deploy" / "rbac"))
        roles = ["kubectl-nodefail-diagnose", "kubectl-nodefail-remediate"]
        fixer = service_account_kubeconfig(cp, tmp_path, "versions-fixer", roles, NS)
        proc = matrix.plugin.run(
            "remediate", OOS, "--kubeconfig", str(fixer), "--confirm", "-o", "json"
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        steps = json.loads(proc.stdout)["steps"]
        assert [(s["action"], s["result"]) for s in steps] == [("remove-out-of-service", "done")]
        # 1.26 forbids SelfSubjectReview to all but admins: the context is named instead.
        by = cp.get("node", OOS)["metadata"]["annotations"][
            "kubectl-nodefail.io/out-of-service-removed-by"
        ]
        who = (
            f"system:serviceaccount:{NS}:versions-fixer"
            if matrix.minor >= 27
            else "unknown user (context versions-fixer)"
        )
        assert by.startswith(f"{who} at "), by
    assert (OUT_OF_SERVICE, "NoExecute") not in taint_keys(cp, OOS)


# --- NodeLost era: the controller-manager's own eviction path (before 1.27) ---


def test_taint_manager_flag_exists_only_before_1_27(matrix: Matrix) -> None:
    """Ground truth for `node_lost_possible`: the flag that turns the NodeLost path on."""
    # Deprecated flags are hidden from --help: ask the binary to parse it instead.
    kcm = str(matrix.cp.bindir / "kube-controller-manager")
    proc = subprocess.run(
        [kcm, "--enable-taint-manager=false", "--version"],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    has_flag = proc.stdout.startswith(f"Kubernetes v1.{matrix.minor}.")
    assert has_flag or "unknown flag: --enable-taint-manager" in proc.stderr, proc.stderr
    assert has_flag == versions.behaviour(matrix.minor).node_lost_possible


@pytest.fixture(scope="module")
def nodelost_cluster(matrix: Matrix) -> Iterator[ControlPlane | None]:
    """A second control plane of the same minor with the taint manager off (only where the
    flag exists): the node lifecycle controller evicts by itself after pod-eviction-timeout."""
    if not versions.behaviour(matrix.minor).node_lost_possible:
        yield None
        return
    args = {"enable-taint-manager": "false", "pod-eviction-timeout": "10s"}
    with running_control_plane(matrix.wanted, controller_manager_args=args, label="nodelost") as cp:
        yield cp


def test_nodelost_era_on_a_real_pre_1_27_controller(
    matrix: Matrix, nodelost_cluster: ControlPlane | None
) -> None:
    if nodelost_cluster is None:
        # 1.27+: no NodeLost path exists; the default path was checked above (never NodeLost).
        assert not versions.behaviour(matrix.minor).node_lost_possible
        return
    cp = nodelost_cluster
    node = "lost-1"
    cp.add_failable_node(node)
    wait_node_ready(cp, node)
    cp.apply(
        w.namespace(NS),
        w.deployment(NS, "web", prefer=node, toleration_seconds=None, grace=GRACE),
        w.statefulset(NS, "db", prefer=node, toleration_seconds=None, grace=GRACE),
        w.daemonset(NS, "agent"),
    )
    for app in ("web", "db", "agent"):
        wait_running_on(cp, NS, app, node)
    cp.stop_kubelet(node)
    wait_node_unknown(cp, node)
    old = wait_terminating_on(cp, NS, "db", node, timeout=90)
    assert old["status"].get("reason") == "NodeLost"
    assert old["status"].get("message") == f"Node {node} which was running pod db-0 is unresponsive"
    wait_running_elsewhere(cp, NS, "web", node, timeout=60)
    seen = kubectl_statuses(cp, NS)
    assert seen["db-0"][1] == "Unknown"  # the NodeLost era's display
    plugin = Plugin(cp)
    plugin.fixtures = version_fixtures(cp)
    moment = "taint manager off (--enable-taint-manager=false), after eviction"
    plugin.record("nodelost-era", f"NodeLost era on 1.{matrix.minor}", moment, (node,))
    code, d = plugin.diagnose_json(node)
    assert code == 3
    db = pod_named(d, "db-0")
    assert db["kubectlStatus"] == "Unknown" and db["era"] == "nodelost"
    assert (db["ready"], db["kubectlStatus"]) == seen["db-0"]
    assert any("NodeLost era" in note for note in d["cluster"])
    # The controller sets NodeLost on every pod of the node before deleting the others; the
    # DaemonSet pod is never deleted: kubectl then prints the bare reason.
    agent = next(p for p in d["pods"] if p["controller"] == "daemonset")
    assert (agent["ready"], agent["kubectlStatus"]) == seen[agent["name"]]
