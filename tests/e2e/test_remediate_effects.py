"""remediate reports effects, not requests (issue 17, 7): an accepted out-of-service taint whose
pods an admission policy keeps is `unconfirmed` (exit 7), naming the pod still there; never
"done", exit 0. A ValidatingAdmissionPolicy refuses every pod DELETE in this module's namespace,
so neither the taint-eviction controller nor PodGC can remove the pod the taint was for."""

from __future__ import annotations

import json
import time

import pytest

from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane, wait_for
from tests.e2e.helpers import (
    attested,
    pod_on,
    taint_keys,
    wait_node_ready,
    wait_node_unknown,
    wait_running_on,
)

pytestmark = pytest.mark.e2e
NS = "scenario-effects"
NODE = "flaky-fx"
POLICY = "nodefail-e2e-no-pod-delete"
OOS = "node.kubernetes.io/out-of-service"


def _policy() -> list[dict]:  # type: ignore[type-arg]
    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": POLICY},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["DELETE"],
                            "resources": ["pods"],
                        }
                    ],
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NS}},
                },
                "validations": [
                    {"expression": "false", "message": "pods here are kept (e2e admission policy)"}
                ],
            },
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": POLICY},
            "spec": {"policyName": POLICY, "validationActions": ["Deny"]},
        },
    ]


def test_an_accepted_taint_whose_pods_stay_is_unconfirmed_not_done(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    cp = control_plane
    cp.add_failable_node(NODE)
    wait_node_ready(cp, NODE)
    cp.apply(
        w.namespace(NS),
        w.only_on(w.statefulset(NS, "kept", toleration_seconds=300, grace=5), [NODE]),
    )
    wait_running_on(cp, NS, "kept", NODE)
    cp.apply(*_policy())
    # The policy is in force once a (server-side dry-run) delete is refused: policies load
    # asynchronously. A refused kubectl prints nothing on stdout.
    pod = pod_on(cp, NS, "kept", NODE)
    assert pod is not None
    wait_for(
        "the admission policy refusing pod deletes",
        lambda: (
            cp.kubectl(
                "delete", "pod", "-n", NS, pod["metadata"]["name"], "--dry-run=server", check=False
            )
            == ""
        ),
        60,
    )
    try:
        cp.stop_kubelet(NODE)
        wait_node_unknown(cp, NODE)
        before = pod_on(cp, NS, "kept", NODE)
        assert before is not None
        tainted = time.monotonic()
        proc = plugin.run(*attested(NODE), "--wait-timeout", "15", "-o", "json")
        data = json.loads(proc.stdout)
        step = next(s for s in data["steps"] if s["action"] == "taint-out-of-service")
        # The taint was applied (the request was accepted) ...
        assert (OOS, "NoExecute") in taint_keys(cp, NODE)
        # ... but the pod it was for is still there: not done, and exit 7 says so.
        after = pod_on(cp, NS, "kept", NODE)
        assert after is not None and after["metadata"]["uid"] == before["metadata"]["uid"]
        assert step["result"] == "unconfirmed", step
        assert f"{NS}/kept-0" in step["detail"] and "admission policy" in step["detail"]
        assert proc.returncode == 7, proc.stdout + proc.stderr
        # Re-run once PodGC's time has passed (issue 38 item 5): the pod the taint was for is
        # still there, so the plan force-deletes it (never "nothing to do", exit 5), and the
        # policy's refusal of that delete is the step's result: exit 4.
        time.sleep(max(0.0, 65 - (time.monotonic() - tainted)))
        again = plugin.run(*attested(NODE), "--wait-timeout", "15", "-o", "json")
        assert again.returncode == 4, again.stdout + again.stderr
        steps = json.loads(again.stdout)["steps"]
        force = next(s for s in steps if s["action"] == "force-delete-pod")
        assert force["target"] == f"pod/{NS}/kept-0", steps
        assert force["result"] in ("failed", "refused"), force
        assert "pods here are kept" in force["detail"], force
    finally:
        cp.kubectl("delete", "validatingadmissionpolicybinding", POLICY, check=False)
        cp.kubectl("delete", "validatingadmissionpolicy", POLICY, check=False)
        cp.kubectl("taint", "node", NODE, f"{OOS}-", check=False)
        cp.start_kubelet(NODE)
        wait_node_ready(cp, NODE, timeout=90)
        cp.kubectl("delete", "namespace", NS, "--wait=false", check=False)
