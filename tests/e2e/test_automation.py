"""Remediation automation on the real control plane: Cluster API's MachineHealthCheck and
Medik8s' NodeHealthCheck, their CRDs installed with their real group, version and kind, their
objects written as those controllers write them (status through the status subresource), a
node killed under each. Asserted: the diagnosis (covered, next action and time, stopped), the
timeline (remediation started, the automation's events), and the plan (remediate stands back,
and acts with --despite-automation). Without read access to those objects: a named gap."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_nodefail.analysis import automation
from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import REPO, ControlPlane
from tests.e2e.helpers import (
    attested,
    service_account_kubeconfig,
    taint_keys,
    wait_node_ready,
    wait_node_unknown,
    wait_running_on,
    wait_terminating_on,
)
from tests.oracles import premises

pytestmark = pytest.mark.e2e
NS = "scenario-automation"
CAPI_NS = "capi-system-e2e"
MHC_NODE, NHC_NODE, MHC2_NODE = "auto-mhc", "auto-nhc", "auto-mhc2"
KARPENTER_NODE, CA_NODE, CLOUD_NODE = "auto-karp", "auto-ca", "auto-cloud"
OUT_OF_SERVICE = ("node.kubernetes.io/out-of-service", "NoExecute")


def _crd(group: str, version: str, kind: str, plural: str, scope: str) -> dict[str, Any]:
    """A CRD of the real group/version/kind: a structural schema that keeps unknown fields,
    with the status subresource (status is written apart, as the controllers do). `version`
    may list several, comma-separated, the last one stored (all served)."""
    names = version.split(",")
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {
                "kind": kind,
                "plural": plural,
                "singular": kind.lower(),
                "listKind": f"{kind}List",
            },
            "versions": [
                {
                    "name": name,
                    "served": True,
                    "storage": name == names[-1],
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
                for name in names
            ],
        },
    }


CRDS = [
    _crd("cluster.x-k8s.io", "v1beta1", "Machine", "machines", "Namespaced"),
    # Cluster API v1.11+ serves both (v1beta2 stored); its Machines here only v1beta1, as an
    # older Cluster API serves them: gather falls back to the version served
    _crd(
        "cluster.x-k8s.io",
        "v1beta1,v1beta2",
        "MachineHealthCheck",
        "machinehealthchecks",
        "Namespaced",
    ),
    _crd("remediation.medik8s.io", "v1alpha1", "NodeHealthCheck", "nodehealthchecks", "Cluster"),
    _crd("karpenter.sh", "v1", "NodeClaim", "nodeclaims", "Cluster"),
]


def _now(offset: float = 0) -> str:
    when = datetime.now(timezone.utc) + timedelta(seconds=offset)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _status(
    cp: ControlPlane, resource: str, name: str, status: dict[str, Any], ns: str | None = None
) -> None:
    """Write an object's status through the status subresource, as its controller does."""
    where = ["-n", ns] if ns else []
    cp.kubectl(
        "patch",
        resource,
        name,
        *where,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
    )


def _event(
    cp: ControlPlane,
    kind: str,
    api: str,
    name: str,
    ns: str,
    reason: str,
    message: str,
    source: str,
) -> None:
    """An Event about an automation object, as its controller's recorder writes it."""
    cp.apply(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{name}.{reason.lower()}", "namespace": ns or "default"},
            "involvedObject": {
                "apiVersion": api,
                "kind": kind,
                "name": name,
                **({"namespace": ns} if ns else {}),
            },
            "reason": reason,
            "message": message,
            "type": "Normal",
            "source": {"component": source},
            "firstTimestamp": _now(),
            "lastTimestamp": _now(),
            "count": 1,
        }
    )


def _explain(plugin: Plugin, node: str) -> dict[str, Any]:
    """`diagnose --explain NODE -o json`: the node's entry with its timeline."""
    proc = plugin.run("diagnose", node, "-o", "json", "--explain", node)
    assert proc.returncode in (0, 3), proc.stderr
    return dict(json.loads(proc.stdout))


def _node(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(n for n in data["nodes"] if n["name"] == name)


def _plan(plugin: Plugin, node: str, *extra: str) -> tuple[int, dict[str, Any]]:
    proc = plugin.run(*attested(node, confirm=False), "-o", "json", *extra)
    assert proc.returncode in (0, 4, 5), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def _node_step(plan: dict[str, Any], node: str) -> dict[str, Any]:
    return next(s for s in plan["steps"] if s["target"] == f"node/{node}")


def _check_premises(plugin: Plugin, data: dict[str, Any], name: str) -> None:
    """Every automation claim's premises, re-read from a dump taken right after."""
    dump = json.loads(plugin.record(name, "automation", "diagnosed").read_text())
    wrong = premises.check(dump, data)
    assert not wrong, [str(x) for x in wrong]


def _coverage(plugin: Plugin, node: str, recorded: str) -> dict[str, Any]:
    """The node's one automation in a live diagnosis, every premise of it checked against a
    dump taken right after (kept as `recorded`)."""
    _, data = plugin.diagnose_json(node)
    (cov,) = _node(data, node)["automation"]
    _check_premises(plugin, data, recorded)
    return dict(cov)


def _assert_not_waited_for(plugin: Plugin, node: str) -> None:
    """remediate's plan for the node does not stand back for the automation."""
    _, plan = _plan(plugin, node)
    assert _node_step(plan, node)["allowed"], plan


@pytest.fixture(scope="module")
def crds(control_plane: ControlPlane) -> ControlPlane:
    cp = control_plane
    cp.apply(*CRDS)
    for crd in CRDS:
        cp.kubectl(
            "wait", "--for=condition=Established", "--timeout=60s", f"crd/{crd['metadata']['name']}"
        )
    cp.apply(w.namespace(NS), w.namespace(CAPI_NS))
    return cp


def _revive(cp: ControlPlane, node: str) -> None:
    """The kubelet back: one failed node at a time in this module (no zone disruption, no
    mass failure to refuse for another reason)."""
    cp.start_kubelet(node)
    wait_node_ready(cp, node, timeout=90)


def _kill_with_pod(cp: ControlPlane, node: str, app: str) -> None:
    cp.add_failable_node(node)
    wait_node_ready(cp, node)
    cp.apply(w.statefulset(NS, app, prefer=node, toleration_seconds=5))
    wait_running_on(cp, NS, app, node)
    cp.stop_kubelet(node)
    wait_node_unknown(cp, node, timeout=120)
    wait_terminating_on(cp, NS, app, node, timeout=90)


def test_machine_health_check(crds: ControlPlane, plugin: Plugin) -> None:
    cp, node = crds, MHC_NODE
    cp.add_failable_node(node)
    cp.kubectl(
        "annotate",
        "node",
        node,
        "cluster.x-k8s.io/machine=workers-abc12",
        f"cluster.x-k8s.io/cluster-namespace={CAPI_NS}",
    )
    cp.apply(
        {
            "apiVersion": "cluster.x-k8s.io/v1beta1",
            "kind": "Machine",
            "metadata": {
                "name": "workers-abc12",
                "namespace": CAPI_NS,
                "labels": {
                    "cluster.x-k8s.io/cluster-name": "e2e",
                    "cluster.x-k8s.io/deployment-name": "workers",
                },
            },
            "spec": {
                "clusterName": "e2e",
                "bootstrap": {"dataSecretName": "x"},
                "infrastructureRef": {"kind": "DockerMachine", "name": "workers-abc12"},
            },
        },
        {
            "apiVersion": "cluster.x-k8s.io/v1beta1",
            "kind": "MachineHealthCheck",
            "metadata": {"name": "workers-unhealthy", "namespace": CAPI_NS},
            "spec": {
                "clusterName": "e2e",
                "selector": {"matchLabels": {"cluster.x-k8s.io/deployment-name": "workers"}},
                "maxUnhealthy": "40%",
                "nodeStartupTimeout": "10m0s",
                "unhealthyConditions": [
                    {"type": "Ready", "status": "Unknown", "timeout": "1m30s"},
                    {"type": "Ready", "status": "False", "timeout": "1m30s"},
                ],
            },
        },
    )
    _status(
        cp,
        "machines.cluster.x-k8s.io",
        "workers-abc12",
        {
            "phase": "Running",
            "nodeRef": {"kind": "Node", "name": node},
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": _now()}],
        },
        CAPI_NS,
    )
    allowed = {"type": "RemediationAllowed", "status": "True", "lastTransitionTime": _now()}
    mhc_status = {
        "expectedMachines": 1,
        "currentHealthy": 1,
        "remediationsAllowed": 1,
        "targets": ["workers-abc12"],
        "conditions": [allowed],
    }
    _status(cp, "machinehealthchecks.cluster.x-k8s.io", "workers-unhealthy", mhc_status, CAPI_NS)
    _kill_with_pod(cp, node, "db-mhc")

    # 1. Covered, and scheduled: Ready Unknown since T, plus its 1m30s timeout.
    _, data = plugin.diagnose_json(node)
    found = _node(data, node)
    (cov,) = found["automation"]
    assert cov["automation"] == "Cluster API MachineHealthCheck"
    assert cov["object"] == f"MachineHealthCheck/{CAPI_NS}/workers-unhealthy"
    assert cov["state"] in ("scheduled", "due"), cov
    since = datetime.fromisoformat(found["ready"]["lastTransition"].replace("Z", "+00:00"))
    due = since + timedelta(seconds=90)
    assert cov["at"] == due.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert found["action"]["code"] == "wait"
    _check_premises(plugin, data, "automation-mhc-scheduled")
    # remediate stands back: the MHC acts within this plan's time (--wait-timeout 120 s)
    code, plan = _plan(plugin, node)
    step = _node_step(plan, node)
    assert code == 4 and not step["allowed"]
    assert "stands back" in step["gate"] and "workers-unhealthy" in step["gate"]

    # 2. Stopped: more unhealthy than maxUnhealthy. It replaces nothing: no standing back.
    stopped = {
        **allowed,
        "status": "False",
        "reason": "TooManyUnhealthy",
        "severity": "Warning",
        "message": "Remediation is not allowed, the number of "
        "not started or unhealthy machines exceeds maxUnhealthy (total: 1, unhealthy: 1, "
        "maxUnhealthy: 40%)",
    }
    _status(
        cp,
        "machinehealthchecks.cluster.x-k8s.io",
        "workers-unhealthy",
        {**mhc_status, "currentHealthy": 0, "remediationsAllowed": 0, "conditions": [stopped]},
        CAPI_NS,
    )
    cov = _coverage(plugin, node, "automation-mhc-stopped")
    assert cov["state"] == "stopped" and "maxUnhealthy 40%" in cov["summary"]
    _assert_not_waited_for(plugin, node)
    _status(
        cp,
        "machinehealthchecks.cluster.x-k8s.io",
        "workers-unhealthy",
        {**mhc_status, "currentHealthy": 0, "conditions": [allowed]},
        CAPI_NS,
    )

    # 2b. Skipped: the Machine carries cluster.x-k8s.io/skip-remediation (the Cluster API
    # book's "Skipping Remediation"): it replaces nothing, so nothing is waited for.
    machine = ["machines.cluster.x-k8s.io", "workers-abc12", "-n", CAPI_NS]
    cp.kubectl("annotate", *machine, f"{automation.CAPI_SKIP_REMEDIATION}=")
    cov = _coverage(plugin, node, "automation-mhc-skipped")
    assert cov["state"] == "stopped" and automation.CAPI_SKIP_REMEDIATION in cov["summary"]
    _assert_not_waited_for(plugin, node)
    cp.kubectl("annotate", *machine, f"{automation.CAPI_SKIP_REMEDIATION}-")

    # 2c. Handed to a remediation template: the MHC marked the Machine unhealthy just now, so
    # the external remediator acts (stood back from); then its request could not be created
    # (ExternalRemediationRequestAvailable False): nothing remediates it.
    mhc_ref = ["machinehealthchecks.cluster.x-k8s.io", "workers-unhealthy", "-n", CAPI_NS]
    template = {"apiVersion": "infra.example/v1", "kind": "RebootRemediationTemplate"}
    cp.kubectl(
        "patch", *mhc_ref, "--type=merge", "-p",
        json.dumps({"spec": {"remediationTemplate": {**template, "name": "reboot"}}}),
    )  # fmt: skip
    unhealthy = {
        "type": "HealthCheckSucceeded",
        "status": "False",
        "reason": "UnhealthyNode",
        "severity": "Warning",
        "lastTransitionTime": _now(),
    }
    _status(cp, "machines.cluster.x-k8s.io", "workers-abc12", {"conditions": [unhealthy]}, CAPI_NS)
    cov = _coverage(plugin, node, "automation-mhc-external")
    assert cov["state"] == "acting" and "RebootRemediationTemplate reboot" in cov["summary"]
    code, plan = _plan(plugin, node)
    assert code == 4 and "stands back" in _node_step(plan, node)["gate"]
    not_created = {
        "type": "ExternalRemediationRequestAvailable",
        "status": "False",
        "reason": "ExternalRemediationTemplateNotFound",
        "severity": "Error",
        "lastTransitionTime": _now(),
    }
    _status(
        cp,
        "machines.cluster.x-k8s.io",
        "workers-abc12",
        {"conditions": [unhealthy, not_created]},
        CAPI_NS,
    )
    cov = _coverage(plugin, node, "automation-mhc-external-failed")
    assert cov["state"] == "stopped" and "could not be created" in cov["summary"]
    _assert_not_waited_for(plugin, node)
    cp.kubectl(
        "patch", *mhc_ref, "--type=json", "-p",
        '[{"op": "remove", "path": "/spec/remediationTemplate"}]',
    )  # fmt: skip

    # 3. Acting: the MHC marked the Machine for remediation (OwnerRemediated False).
    _status(
        cp,
        "machinehealthchecks.cluster.x-k8s.io",
        "workers-unhealthy",
        {**mhc_status, "currentHealthy": 0, "conditions": [allowed]},
        CAPI_NS,
    )
    marked = _now()
    _status(
        cp,
        "machines.cluster.x-k8s.io",
        "workers-abc12",
        {
            "conditions": [
                {
                    "type": "HealthCheckSucceeded",
                    "status": "False",
                    "reason": "UnhealthyNode",
                    "severity": "Warning",
                    "lastTransitionTime": marked,
                    "message": "Condition Ready on node is reporting status Unknown "
                    "for more than 1m30s",
                },
                {
                    "type": "OwnerRemediated",
                    "status": "False",
                    "reason": "WaitingForRemediation",
                    "severity": "Warning",
                    "lastTransitionTime": marked,
                    "message": "MachineHealthCheck failed",
                },
            ]
        },
        CAPI_NS,
    )
    _event(
        cp,
        "Machine",
        "cluster.x-k8s.io/v1beta1",
        "workers-abc12",
        CAPI_NS,
        "MachineMarkedUnhealthy",
        "Machine workers-abc12 has been marked as unhealthy",
        "machinehealthcheck-controller",
    )
    data = _explain(plugin, node)
    assert data["kind"] == "NodeExplanation"
    (cov,) = data["automation"]
    assert cov["state"] == "acting" and cov["at"] == marked
    kinds = [(e["kind"], e["summary"]) for e in data["timeline"]]
    assert ("automation", "Cluster API MachineHealthCheck: remediation started") in kinds
    assert any(s.startswith("event MachineMarkedUnhealthy") for _, s in kinds), kinds
    code, plan = _plan(plugin, node)
    step = _node_step(plan, node)
    assert code == 4 and not step["allowed"] and "OwnerRemediated" in step["gate"]
    # the table names it, the suggestions never pre-fill the override
    table = plugin.run("diagnose", node).stdout
    assert "AUTOMATION" in table and "workers-unhealthy" in table
    assert "--despite-automation" not in table.split("SUGGESTED")[-1]

    # 4. The operator overrides: remediate acts, saying whom it races.
    proc = plugin.run(*attested(node, "--despite-automation", "--wait-timeout", "60"), "-o", "json")
    assert proc.returncode in (0, 7), proc.stdout + proc.stderr
    assert OUT_OF_SERVICE in taint_keys(cp, node)
    step = _node_step(json.loads(proc.stdout), node)
    assert step["result"] in ("done", "unconfirmed")
    assert "despite Cluster API MachineHealthCheck" in step["gate"]


def test_machine_health_check_v1beta2(crds: ControlPlane, plugin: Plugin) -> None:
    """A MachineHealthCheck as Cluster API v1.11+ writes it (cluster.x-k8s.io/v1beta2):
    spec.checks.unhealthyNodeConditions with timeoutSeconds, spec.remediation.triggerIf, and
    metav1.Conditions in its status."""
    cp, node = crds, MHC2_NODE
    cp.add_failable_node(node)
    cp.kubectl(
        "annotate",
        "node",
        node,
        "cluster.x-k8s.io/machine=edge-def34",
        f"cluster.x-k8s.io/cluster-namespace={CAPI_NS}",
    )
    cp.apply(
        {
            "apiVersion": "cluster.x-k8s.io/v1beta1",
            "kind": "Machine",
            "metadata": {
                "name": "edge-def34",
                "namespace": CAPI_NS,
                "labels": {
                    "cluster.x-k8s.io/cluster-name": "e2e-edge",
                    "cluster.x-k8s.io/deployment-name": "edge",
                },
            },
            "spec": {
                "clusterName": "e2e-edge",
                "bootstrap": {"dataSecretName": "x"},
                "infrastructureRef": {"kind": "DockerMachine", "name": "edge-def34"},
            },
        },
        {
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "MachineHealthCheck",
            "metadata": {"name": "edge-unhealthy", "namespace": CAPI_NS},
            "spec": {
                "clusterName": "e2e-edge",
                "selector": {"matchLabels": {"cluster.x-k8s.io/deployment-name": "edge"}},
                "checks": {
                    "nodeStartupTimeoutSeconds": 600,
                    "unhealthyNodeConditions": [
                        {"type": "Ready", "status": "Unknown", "timeoutSeconds": 75},
                        {"type": "Ready", "status": "False", "timeoutSeconds": 75},
                    ],
                },
                "remediation": {"triggerIf": {"unhealthyLessThanOrEqualTo": "40%"}},
            },
        },
    )
    _status(
        cp,
        "machines.cluster.x-k8s.io",
        "edge-def34",
        {"phase": "Running", "nodeRef": {"kind": "Node", "name": node}},
        CAPI_NS,
    )
    allowed = {
        "type": "RemediationAllowed",
        "status": "True",
        "reason": "RemediationAllowed",
        "message": "",
        "observedGeneration": 1,
        "lastTransitionTime": _now(),
    }
    mhc_status = {
        "expectedMachines": 1,
        "currentHealthy": 1,
        "remediationsAllowed": 1,
        "targets": ["edge-def34"],
        "conditions": [allowed],
    }
    resource = "machinehealthchecks.v1beta2.cluster.x-k8s.io"
    _status(cp, resource, "edge-unhealthy", mhc_status, CAPI_NS)
    _kill_with_pod(cp, node, "db-mhc2")

    # Scheduled at Ready's transition + 75 s (timeoutSeconds): refused, allowed with the flag.
    _, data = plugin.diagnose_json(node)
    found = _node(data, node)
    (cov,) = found["automation"]
    assert cov["object"] == f"MachineHealthCheck/{CAPI_NS}/edge-unhealthy"
    assert cov["state"] in ("scheduled", "due"), cov
    since = datetime.fromisoformat(found["ready"]["lastTransition"].replace("Z", "+00:00"))
    assert cov["at"] == (since + timedelta(seconds=75)).strftime("%Y-%m-%dT%H:%M:%SZ")
    fields = {p["field"] for c in cov["claims"] for p in c["because"]}
    assert "spec.checks.unhealthyNodeConditions" in fields, fields
    _check_premises(plugin, data, "automation-mhc-v1beta2-scheduled")
    code, plan = _plan(plugin, node)
    step = _node_step(plan, node)
    assert code == 4 and "stands back" in step["gate"] and "edge-unhealthy" in step["gate"]
    _, plan = _plan(plugin, node, "--despite-automation")
    assert _node_step(plan, node)["allowed"]

    # Stopped by triggerIf.unhealthyLessThanOrEqualTo (RemediationAllowed False).
    stopped = {
        **allowed,
        "status": "False",
        "reason": "TooManyUnhealthy",
        "message": "Remediation is not allowed, the number of not started or unhealthy "
        "machines exceeds maxUnhealthy (total: 1, unhealthy: 1, maxUnhealthy: 40%)",
    }
    _status(
        cp,
        resource,
        "edge-unhealthy",
        {**mhc_status, "currentHealthy": 0, "remediationsAllowed": 0, "conditions": [stopped]},
        CAPI_NS,
    )
    cov = _coverage(plugin, node, "automation-mhc-v1beta2-stopped")
    assert cov["state"] == "stopped", cov
    assert "triggerIf.unhealthyLessThanOrEqualTo 40%" in cov["summary"]
    _assert_not_waited_for(plugin, node)
    _revive(cp, node)


def test_node_health_check(crds: ControlPlane, plugin: Plugin) -> None:
    cp, node = crds, NHC_NODE
    nhc = {
        "apiVersion": "remediation.medik8s.io/v1alpha1",
        "kind": "NodeHealthCheck",
        "metadata": {"name": "nhc-worker-snr"},
        "spec": {
            "selector": {
                "matchExpressions": [
                    {"key": "node-role.kubernetes.io/control-plane", "operator": "DoesNotExist"},
                    {"key": "e2e-automation", "operator": "In", "values": ["nhc"]},
                ]
            },
            "minHealthy": "51%",
            "unhealthyConditions": [
                {"type": "Ready", "status": "False", "duration": "100s"},
                {"type": "Ready", "status": "Unknown", "duration": "100s"},
            ],
            "remediationTemplate": {
                "apiVersion": "self-node-remediation.medik8s.io/v1alpha1",
                "kind": "SelfNodeRemediationTemplate",
                "name": "self-node-remediation-automatic-strategy-template",
                "namespace": "medik8s",
            },
        },
    }
    cp.apply(nhc)
    cp.add_failable_node(node)
    cp.kubectl("label", "node", node, "e2e-automation=nhc")
    enabled = {
        "observedNodes": 3,
        "healthyNodes": 3,
        "phase": "Enabled",
        "reason": "NHC is enabled, no ongoing remediation",
        "conditions": [
            {
                "type": "Disabled",
                "status": "False",
                "reason": "NodeHealthCheckEnabled",
                "message": "",
                "lastTransitionTime": _now(),
            }
        ],
    }
    _status(cp, "nodehealthchecks.remediation.medik8s.io", "nhc-worker-snr", enabled)
    _kill_with_pod(cp, node, "db-nhc")

    cov = _coverage(plugin, node, "automation-nhc-scheduled")
    assert cov["automation"] == "Medik8s NodeHealthCheck"
    assert cov["object"] == "NodeHealthCheck/nhc-worker-snr"
    assert cov["state"] in ("scheduled", "due") and "SelfNodeRemediation" in cov["summary"]
    code, plan = _plan(plugin, node)
    assert code == 4 and "stands back" in _node_step(plan, node)["gate"]

    # minHealthy short-circuit: 1 of 3 healthy, fewer than 51% (2): it starts nothing.
    _status(
        cp,
        "nodehealthchecks.remediation.medik8s.io",
        "nhc-worker-snr",
        {**enabled, "healthyNodes": 1},
    )
    cov = _coverage(plugin, node, "automation-nhc-stopped")
    assert cov["state"] == "stopped" and "1 of 3 nodes are healthy" in cov["summary"]
    _assert_not_waited_for(plugin, node)

    # Excluded: the node is labelled for planned maintenance; NHC skips it whatever its rules.
    _status(cp, "nodehealthchecks.remediation.medik8s.io", "nhc-worker-snr", enabled)
    cp.kubectl("label", "node", node, f"{automation.NHC_EXCLUDE_LABEL}=true")
    cov = _coverage(plugin, node, "automation-nhc-excluded")
    assert cov["state"] == "stopped" and automation.NHC_EXCLUDE_LABEL in cov["summary"]
    _assert_not_waited_for(plugin, node)
    cp.kubectl("label", "node", node, f"{automation.NHC_EXCLUDE_LABEL}-")

    # Listed unhealthy without a remediation: it ran and skips the node for now.
    _status(
        cp,
        "nodehealthchecks.remediation.medik8s.io",
        "nhc-worker-snr",
        {**enabled, "unhealthyNodes": [{"name": node}]},
    )
    cov = _coverage(plugin, node, "automation-nhc-listed")
    assert cov["state"] == "stopped" and "skipping the node for now" in cov["summary"], cov
    _assert_not_waited_for(plugin, node)

    # Remediating: NHC created the SelfNodeRemediation and records it.
    started = _now()
    _status(
        cp,
        "nodehealthchecks.remediation.medik8s.io",
        "nhc-worker-snr",
        {
            **enabled,
            "healthyNodes": 2,
            "phase": "Remediating",
            "reason": "NHC is remediating",
            "unhealthyNodes": [
                {
                    "name": node,
                    "remediations": [
                        {
                            "resource": {
                                "apiVersion": "self-node-remediation.medik8s.io/v1alpha1",
                                "kind": "SelfNodeRemediation",
                                "namespace": "medik8s",
                                "name": node,
                                "uid": "0b3c1c2e-0000-4000-8000-000000000001",
                            },
                            "started": started,
                        }
                    ],
                }
            ],
        },
    )
    _event(
        cp,
        "NodeHealthCheck",
        "remediation.medik8s.io/v1alpha1",
        "nhc-worker-snr",
        "",
        "RemediationCreated",
        f"Created remediation object for node {node}",
        "NodeHealthCheck",
    )
    data = _explain(plugin, node)
    (cov,) = data["automation"]
    assert cov["state"] == "acting" and cov["at"] == started
    assert f"SelfNodeRemediation medik8s/{node}" in cov["summary"]
    summaries = [e["summary"] for e in data["timeline"]]
    assert "Medik8s NodeHealthCheck: remediation started" in summaries
    assert any(s.startswith("event RemediationCreated") for s in summaries), summaries
    code, plan = _plan(plugin, node)
    assert code == 4 and "SelfNodeRemediation" in _node_step(plan, node)["gate"]
    code, plan = _plan(plugin, node, "--despite-automation")
    step = _node_step(plan, node)
    assert step["allowed"] and "despite Medik8s NodeHealthCheck" in step["gate"]
    # the override unlocks nothing else: without the attestation, still refused
    proc = plugin.run("remediate", node, "--despite-automation", "-o", "json")
    assert proc.returncode == 4
    assert not _node_step(json.loads(proc.stdout), node)["allowed"]
    _revive(cp, node)


NODECLAIM = "general-purpose-x7k2p"
POOL = "general-purpose"


def _nodeclaim(cp: ControlPlane, node: str) -> None:
    """A NodeClaim as Karpenter (AWS provider) writes one for a registered node: its NodePool
    label, the termination finalizer, the EC2NodeClass reference; in its status the node's
    name and providerID (the link repair uses) and the lifecycle conditions."""
    cp.apply(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {
                "name": NODECLAIM,
                "finalizers": ["karpenter.sh/termination"],
                "labels": {"karpenter.sh/nodepool": POOL},
            },
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "default",
                },
                "requirements": [],
            },
        }
    )
    conditions = [
        {
            "type": t,
            "status": "True",
            "reason": t,
            "message": "",
            "lastTransitionTime": _now(),
        }
        for t in ("Launched", "Registered", "Initialized", "Ready")
    ]
    _status(
        cp,
        "nodeclaims.karpenter.sh",
        NODECLAIM,
        {"nodeName": node, "providerID": f"kwok://{node}", "conditions": conditions},
    )


def _ready_since(cp: ControlPlane, node: str, seconds_ago: float) -> str:
    """Move the dead node's Ready condition's lastTransitionTime back (status Unknown stays:
    the node lifecycle controller does not rewrite a condition already Unknown)."""
    since = _now(-seconds_ago)
    cp.kubectl(
        "patch",
        "node",
        node,
        "--subresource=status",
        "--type=strategic",
        "-p",
        json.dumps({"status": {"conditions": [{"type": "Ready", "lastTransitionTime": since}]}}),
    )
    # and its lease with it: a kubelet renews it last the node-monitor grace period (40 s)
    # before Ready turns Unknown; left as it is, it says the machine ran after the failure
    # began, and remediate refuses an attestation on it
    renewed = (datetime.now(timezone.utc) - timedelta(seconds=seconds_ago + 40)).strftime(
        "%Y-%m-%dT%H:%M:%S.000000Z"
    )
    cp.kubectl(
        "patch",
        "lease",
        node,
        "-n",
        "kube-node-lease",
        "--type=merge",
        "-p",
        json.dumps({"spec": {"renewTime": renewed}}),
    )
    return since


def test_karpenter(crds: ControlPlane, plugin: Plugin) -> None:
    cp, node = crds, KARPENTER_NODE
    cp.add_failable_node(node)
    cp.kubectl("label", "node", node, f"karpenter.sh/nodepool={POOL}")
    # the cloud provider's ID, as the kubelet registers it; Karpenter links by it
    cp.kubectl("patch", "node", node, "-p", json.dumps({"spec": {"providerID": f"kwok://{node}"}}))
    _nodeclaim(cp, node)
    _kill_with_pod(cp, node, "db-karp")

    # 1. Covered; repair, if enabled, deletes the NodeClaim at Ready's transition + 30 min (the
    # AWS provider's toleration, assumed and said so): beyond the plan's horizon, allowed.
    _, data = plugin.diagnose_json(node)
    (cov,) = _node(data, node)["automation"]
    assert cov["automation"] == "Karpenter" and cov["state"] == "scheduled", cov
    assert cov["object"] == f"NodeClaim/{NODECLAIM}"
    ready = next(c for c in cp.get("node", node)["status"]["conditions"] if c["type"] == "Ready")
    since = datetime.strptime(ready["lastTransitionTime"], "%Y-%m-%dT%H:%M:%SZ")
    due = (since + timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert cov["at"] == due and f"deletes NodeClaim {NODECLAIM} at {due}" in cov["summary"]
    assert "if node repair is enabled" in cov["summary"] and "assumed" in cov["summary"]
    # the advice does not wait 30 min on a guess (the gate is off by default)
    assert "covers it" not in _node(data, node)["action"]["summary"]
    _check_premises(plugin, data, "automation-karpenter-scheduled")
    _assert_not_waited_for(plugin, node)

    # 2. Down for 29 minutes: repair is due within the plan's horizon; remediate stands back,
    # names Karpenter and its time, and acts only with --despite-automation.
    _ready_since(cp, node, 29 * 60)
    cov = _coverage(plugin, node, "automation-karpenter-due")
    assert cov["state"] in ("scheduled", "due"), cov
    code, plan = _plan(plugin, node)
    step = _node_step(plan, node)
    assert code == 4 and not step["allowed"] and "stands back" in step["gate"]
    assert "Karpenter" in step["gate"] and NODECLAIM in step["gate"]
    _, plan = _plan(plugin, node, "--despite-automation")
    step = _node_step(plan, node)
    assert step["allowed"] and "despite Karpenter" in step["gate"]
    # the refusal, as the on-call reads it, hands over neither attestation nor override
    from tests.unit.remediate.test_human_gate import violations

    refusal = plugin.run("remediate", node)
    assert refusal.returncode == 4 and "Karpenter" in refusal.stdout
    assert not violations(refusal.stdout + refusal.stderr)

    # 3. Down for 40 minutes and the NodeClaim not deleted: repair is not coming (probably not
    # enabled); said so, and remediate no longer waits for it.
    _ready_since(cp, node, 40 * 60)
    cov = _coverage(plugin, node, "automation-karpenter-overdue")
    assert cov["state"] == "overdue" and "probably not enabled" in cov["summary"], cov
    _assert_not_waited_for(plugin, node)

    # 4. A second node of the pool unhealthy: 2 of 2 > 20% (1, rounded up): repair blocked.
    peer = f"{node}-peer"
    cp.add_node(peer, "zone-karp-peer", managed_by="nobody")
    cp.kubectl("label", "node", peer, f"karpenter.sh/nodepool={POOL}")
    beat = _now()
    _status(
        cp,
        "node",
        peer,
        {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": "KubeletNotReady",
                    "message": "container runtime network not ready",
                    "lastHeartbeatTime": beat,
                    "lastTransitionTime": beat,
                }
            ]
        },
    )
    cov = _coverage(plugin, node, "automation-karpenter-stopped")
    assert cov["state"] == "stopped" and "2 of its 2 nodes are unhealthy" in cov["summary"], cov
    _, plan = _plan(plugin, node)
    step = _node_step(plan, node)
    # not held back by Karpenter (whatever else the second dead node's zone may gate)
    assert "stands back" not in step["gate"] and "Karpenter" not in step["gate"], step
    cp.kubectl("delete", "node", peer, "--wait=true")

    # 4b. Karpenter's own word that repair is blocked (its pool counted with its real policies):
    # a NodeRepairBlocked Warning about the node, as its recorder writes it.
    cp.apply(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{node}.noderepairblocked", "namespace": "default"},
            "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": node},
            "reason": "NodeRepairBlocked",
            "message": "more than 20% nodes are unhealthy in the nodepool",
            "type": "Warning",
            "source": {"component": "karpenter"},
            "firstTimestamp": _now(-60),
            "lastTimestamp": _now(-60),
            "count": 1,
        }
    )
    cov = _coverage(plugin, node, "automation-karpenter-blocked-event")
    assert cov["state"] == "stopped" and "node repair is enabled" in cov["summary"], cov
    cp.kubectl("delete", "event", "-n", "default", f"{node}.noderepairblocked")

    # 5. Repair deletes the NodeClaim (its finalizer keeps it while Karpenter terminates).
    cp.kubectl("delete", "nodeclaims.karpenter.sh", NODECLAIM, "--wait=false")
    cov = _coverage(plugin, node, "automation-karpenter-acting")
    assert cov["state"] == "acting" and "being deleted since" in cov["summary"]
    code, plan = _plan(plugin, node)
    assert code == 4 and "Karpenter is replacing it" in _node_step(plan, node)["gate"]
    _, plan = _plan(plugin, node, "--despite-automation")
    assert _node_step(plan, node)["allowed"]
    cp.kubectl(
        "patch",
        "nodeclaims.karpenter.sh",
        NODECLAIM,
        "--type=merge",
        "-p",
        json.dumps({"metadata": {"finalizers": None}}),
    )
    _revive(cp, node)


def test_cluster_autoscaler(crds: ControlPlane, plugin: Plugin) -> None:
    cp, node = crds, CA_NODE
    _kill_with_pod(cp, node, "db-ca")
    unix = int(datetime.now(timezone.utc).timestamp())
    # Unneeded for 19 min 30 s: removed 30 s from now with the default unready time (20 min).
    cp.kubectl(
        "taint",
        "node",
        node,
        f"DeletionCandidateOfClusterAutoscaler={unix - 1170}:PreferNoSchedule",
    )
    cov = _coverage(plugin, node, "automation-ca-scheduled")
    assert cov["automation"] == "cluster-autoscaler" and cov["state"] in ("scheduled", "due")
    assert "--scale-down-unready-time" in cov["summary"]
    code, plan = _plan(plugin, node)
    assert code == 4 and "stands back" in _node_step(plan, node)["gate"]
    # Marked for deletion: acting since the taint's value.
    cp.kubectl("taint", "node", node, f"ToBeDeletedByClusterAutoscaler={unix}:NoSchedule")
    _, data = plugin.diagnose_json(node)
    (cov,) = _node(data, node)["automation"]
    assert cov["state"] == "acting"
    assert cov["at"] == datetime.fromtimestamp(unix, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    code, plan = _plan(plugin, node)
    assert code == 4 and "cluster-autoscaler is removing" in _node_step(plan, node)["gate"]
    _, plan = _plan(plugin, node, "--despite-automation")
    assert _node_step(plan, node)["allowed"]
    _revive(cp, node)


def test_cloud_node_lifecycle(crds: ControlPlane, plugin: Plugin) -> None:
    cp, node = crds, CLOUD_NODE
    _kill_with_pod(cp, node, "db-cloud")
    cp.kubectl("taint", "node", node, "node.cloudprovider.kubernetes.io/shutdown:NoSchedule")
    cov = _coverage(plugin, node, "automation-cloud-shutdown")
    assert cov["automation"] == "cloud node lifecycle controller"
    assert cov["state"] == "watching" and cov["at"] is None
    assert "replaces nothing" in cov["summary"]
    assert "deletes the Node only once the instance no longer exists" in cov["summary"]
    # nothing to race: the shutdown taint is evidence, the plan proceeds without attestation
    proc = plugin.run("remediate", node, "-o", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _node_step(json.loads(proc.stdout), node)["allowed"]
    _revive(cp, node)


def test_without_read_access_the_automation_is_a_named_gap(
    crds: ControlPlane, plugin: Plugin, tmp_path: Path
) -> None:
    cp = crds
    shipped = yaml.safe_load((REPO / "deploy" / "rbac" / "diagnose.yaml").read_text())
    groups = ("cluster.x-k8s.io", "remediation.medik8s.io", "karpenter.sh")
    narrower = {
        **shipped,
        "metadata": {"name": "nodefail-no-automation"},
        "rules": [r for r in shipped["rules"] if not set(r["apiGroups"]) & set(groups)],
    }
    assert len(narrower["rules"]) < len(shipped["rules"])  # the shipped role grants them
    cp.apply(shipped, narrower)
    for role, gap in (("kubectl-nodefail-diagnose", False), ("nodefail-no-automation", True)):
        kubeconfig = service_account_kubeconfig(cp, tmp_path, f"sa-{role[-8:]}", [role], NS)
        proc = plugin.run("diagnose", MHC_NODE, "-o", "json", "--kubeconfig", str(kubeconfig))
        assert proc.returncode in (0, 3), proc.stderr
        data = json.loads(proc.stdout)
        gaps = " ".join(data["gaps"])
        assert ("Cluster API machines: forbidden" in gaps) is gap, gaps
        assert ("Medik8s nodehealthchecks: forbidden" in gaps) is gap, gaps
        (cov,) = _node(data, MHC_NODE)["automation"]
        # unreadable, the Machine the node names is "unknown here", never a guess
        assert cov["state"] == ("unknown" if gap else "acting"), cov
