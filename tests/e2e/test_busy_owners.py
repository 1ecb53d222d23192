"""Every built-in owner in its busiest state, and a custom resource whose fields collide with
ours, each with a pod on a node that dies, on each supported minor (issue 34).

The audit's CronJob is suspended and its Jobs are made by hand, so a CronJob's status.active
(a list of references, where a Job's is a count) was never filled, and the first real one made
every diagnosis exit 14. Here the real controllers fill every status field they have: CronJobs
of each concurrency policy with a Job running, a parallel Job (active, ready, and on newer
minors terminating), a Deployment, a StatefulSet and a DaemonSet whose templates change after
the node died (rollouts stalled mid-way), and a pod owned by a custom resource named
StatefulSet in another group (apps.kruise.io), whose spec and status hold fields of our names
with other types. Each pod is diagnosed (table, JSON, --explain), dumped and diagnosed from the
dump with every claim's premises checked, and planned by remediate.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin, running_control_plane
from tests.e2e.controlplane import ControlPlane, matrix_minors, requested_version, wait_for
from tests.e2e.helpers import pods, wait_node_ready, wait_node_unknown, wait_running_on

pytestmark = pytest.mark.e2e
NS = "busy-owners"
ZONE = "zone-busy"
DEAD, SPARES = "busy-dead", ["busy-spare-0", "busy-spare-1"]
POLICIES = {"c-allow": "Allow", "c-forbid": "Forbid", "c-replace": "Replace"}
# kept Running on the dead node for the whole module (not evicted while the test looks)
HOLD = 900


@pytest.fixture(
    scope="module",
    params=[
        pytest.param(v, id=f"k8s-{v or 'default'}")
        for v in dict.fromkeys([requested_version(), *matrix_minors()])
    ],
)
def control_plane(request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    """A control plane of each minor under test (replacing the conftest's, of one minor)."""
    minor = request.param
    with running_control_plane(minor, label=f"busy-{minor or 'default'}") as cp:
        yield cp


def _cronjob(name: str, policy: str) -> Any:
    cron = w.cronjob(NS, name, pin=DEAD, toleration_seconds=HOLD, grace=5)
    cron["spec"].update({"schedule": "* * * * *", "suspend": False, "concurrencyPolicy": policy})
    return cron


def _kruise_crd() -> Any:
    """A CRD of OpenKruise's group and kind (apps.kruise.io StatefulSet), schema left open."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "statefulsets.apps.kruise.io"},
        "spec": {
            "group": "apps.kruise.io",
            "scope": "Namespaced",
            "names": {
                "kind": "StatefulSet",
                "plural": "statefulsets",
                "listKind": "StatefulSetList",
            },
            "versions": [
                {
                    "name": "v1beta1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


def _patch_template(cp: ControlPlane, kind: str, name: str) -> None:
    """A new template: the controller starts a rollout (stalled by the dead node's pod)."""
    patch = {"spec": {"template": {"metadata": {"annotations": {"e2e/rev": "2"}}}}}
    cp.kubectl("patch", kind, name, "-n", NS, "--type=merge", "-p", json.dumps(patch))


def _field(cp: ControlPlane, kind: str, name: str, path: str) -> Any:
    obj = json.loads(cp.kubectl("get", kind, name, "-n", NS, "-o", "json"))
    for key in path.split("."):
        obj = (obj or {}).get(key)
    return obj


@pytest.fixture(scope="module")
def busy(control_plane: ControlPlane) -> tuple[ControlPlane, Plugin]:
    cp = control_plane
    cp.add_failable_node(DEAD, ZONE)
    for node in SPARES:
        cp.add_node(node, ZONE)
    wait_node_ready(cp, DEAD)
    job = w.job(NS, "par", pin=DEAD, toleration_seconds=HOLD, grace=5)
    job["spec"].update({"parallelism": 2, "completions": 4})
    cp.apply(
        w.namespace(NS),
        _kruise_crd(),
        *(_cronjob(name, policy) for name, policy in POLICIES.items()),
        job,
        w.only_on(
            w.deployment(NS, "roll", replicas=2, prefer=DEAD, toleration_seconds=HOLD, grace=5),
            [DEAD, *SPARES],
        ),
        w.statefulset(NS, "sts", pin=DEAD, toleration_seconds=HOLD, grace=5),
        w.daemonset(NS, "ds"),
    )
    wait_for(
        "the CRD served",
        lambda: "statefulsets" in cp.kubectl("api-resources", "--api-group=apps.kruise.io"),
        30,
    )
    kruise = {
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "StatefulSet",
        "metadata": {"name": "kruise", "namespace": NS},
        "spec": {"replicas": "three", "updateStrategy": {"rollingUpdate": {"partition": "50%"}}},
    }
    cp.apply(kruise)
    made = json.loads(
        cp.kubectl("get", "statefulsets.apps.kruise.io", "kruise", "-n", NS, "-o", "json")
    )
    status = {"status": {"active": "yes", "conditions": "none", "updateRevision": 7}}
    cp.kubectl(
        "patch", "statefulsets.apps.kruise.io", "kruise", "-n", NS,
        "--subresource=status", "--type=merge", "-p", json.dumps(status),
    )  # fmt: skip
    cp.apply(w.operated_pod(NS, "kruise-0", made, pin=DEAD, toleration_seconds=HOLD, grace=5))
    # the CronJob controller runs each CronJob at the next minute: status.active filled
    for name in POLICIES:
        wait_for(
            f"CronJob {name} active", lambda n=name: _field(cp, "cronjob", n, "status.active"), 100
        )
        wait_running_on(cp, NS, name, DEAD, timeout=60)
    for app in ("par", "roll", "sts", "ds", "kruise-0"):
        wait_running_on(cp, NS, app, DEAD)
    wait_for(
        "Job par counts its ready pods", lambda: _field(cp, "job", "par", "status.ready") == 2, 60
    )
    cp.stop_kubelet(DEAD)
    wait_node_unknown(cp, DEAD)
    for kind, name in (("deployment", "roll"), ("statefulset", "sts"), ("daemonset", "ds")):
        _patch_template(cp, kind, name)
    wait_for(
        "the rollouts started",
        lambda: (
            _field(cp, "statefulset", "sts", "status.updateRevision")
            != _field(cp, "statefulset", "sts", "status.currentRevision")
        ),
        60,
    )
    return cp, Plugin(cp)


EXPECTED = {
    "c-allow": "cronjob",
    "c-forbid": "cronjob",
    "c-replace": "cronjob",
    "par": "job",
    "roll": "deployment",
    "sts": "statefulset",
    "ds": "daemonset",
    "kruise-0": "other",
}


def _dead_pods(data: Any) -> dict[str, Any]:
    out = {}
    for p in data["pods"]:
        if p["namespace"] == NS and p["node"] == DEAD:
            app = next(
                (a for a in EXPECTED if p["name"] == a or p["name"].startswith(a + "-")), None
            )
            if app:
                out.setdefault(app, p)
    return out


def test_the_cronjobs_really_hold_lists_of_active_jobs(busy: tuple[ControlPlane, Plugin]) -> None:
    cp, _ = busy
    for name in POLICIES:
        active = _field(cp, "cronjob", name, "status.active")
        assert isinstance(active, list) and active[0]["kind"] == "Job"
    assert isinstance(_field(cp, "job", "par", "status.active"), int)


def test_every_busy_owners_pod_is_diagnosed_and_explained(
    busy: tuple[ControlPlane, Plugin],
) -> None:
    _, plugin = busy
    # JSON (and, inside diagnose_json, the dump diagnosed from the file, premises checked)
    code, data = plugin.diagnose_json("-n", NS)
    assert code == 3
    found = _dead_pods(data)
    assert {app: p["controller"] for app, p in found.items()} == EXPECTED
    kruise = found["kruise-0"]
    assert kruise["ownerChain"][0]["kind"] == "StatefulSet.apps.kruise.io"
    assert "apps.kruise.io/v1beta1" in kruise["explanation"]
    assert "not in the cluster" not in kruise["explanation"]
    for name in POLICIES:
        assert f"(CronJob {name})" in found[name]["explanation"]
    table = plugin.run("diagnose", "-n", NS)
    assert table.returncode == 3, table.stderr
    for pod in found.values():
        explained = plugin.run("diagnose", "--explain", f"{NS}/{pod['name']}")
        assert explained.returncode == 3, explained.stderr
        assert pod["name"] in explained.stdout


def test_remediate_plans_for_the_busy_owners(busy: tuple[ControlPlane, Plugin]) -> None:
    cp, plugin = busy
    plan = plugin.run("remediate", DEAD, "-o", "json")
    # a plan, not a malformed answer (13/14) or a crash (1): the node's shutdown is not attested
    assert plan.returncode not in (1, 13, 14), plan.stderr
    assert "Traceback" not in plan.stderr
    assert DEAD in json.dumps(json.loads(plan.stdout))
    assert pods(cp, NS, "sts")  # nothing was changed: a plan only
