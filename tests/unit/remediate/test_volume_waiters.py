"""A pod on a working node waiting for a ReadWriteOnce volume still attached to a failed node
that has no pod left (recorded by tests/e2e/test_storage.py: the old StatefulSet pod
force-deleted, its replacement on Multi-Attach): what diagnose suggests for the pod, for the
node and what remediate plans agree. The out-of-service taint on the node detaches the volume
at once, so the node's advice offers it and remediate plans it (a first-time trial found the
node advised to wait and remediate saying "Nothing to do", exit 5, while the pod's own advice
sent the user there)."""

from __future__ import annotations

from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.findings import Report
from kubectl_nodefail.common.errors import Exit
from kubectl_nodefail.remediate.plan import Options, make_plan
from tests.unit.conftest import load

NODE, WAITER = "flaky-v2", "scenario-volume-wait/db-v2-0"


def _report() -> Report:
    snap = load("volume-held-by-dead-node")
    return diagnose(snap, snap.captured_at)


def test_the_pod_the_node_and_the_plan_agree_on_the_taint() -> None:
    report = _report()
    pod = next(p for p in report.pods if f"{p.namespace}/{p.name}" == WAITER)
    assert pod.category == "waiting-for-volume" and pod.held_by == [NODE]
    assert f"kubectl nodefail remediate {NODE}" in pod.action.remediate
    node = next(n for n in report.nodes if n.name == NODE)
    assert not [p for p in report.pods if p.node == NODE]  # no pod left on it
    assert "out-of-service taint" in node.action.summary
    assert "None of its pods needs forcing" not in node.action.summary
    assert node.action.remediate.startswith(f"kubectl nodefail remediate {NODE}")

    refused = make_plan(report, Options(server_minor=36))
    [step] = [s for s in refused.steps if s.action == "taint-out-of-service"]
    assert not step.allowed and refused.exit_code() == Exit.PARTIAL
    attested = make_plan(report, Options(attested=[NODE], server_minor=36))
    [step] = [s for s in attested.steps if s.action == "taint-out-of-service"]
    assert step.allowed and attested.exit_code() == Exit.OK
    assert f"{WAITER} (on flaky-v3)" in step.why and step.releases == []
    # what the words rest on: the attachment the pod waits for, on this node
    assert any(
        p.object.startswith("VolumeAttachment/") and p.field == "spec.nodeName" and p.value == NODE
        for p in step.because
    )


def test_other_strategies_plan_nothing_for_it() -> None:
    """Force-deleting pods on the node detaches nothing no pod there uses; only the taint is
    planned for a pod elsewhere."""
    report = _report()
    plan = make_plan(report, Options(attested=[NODE], server_minor=36, strategy="force-delete"))
    assert not [s for s in plan.steps if WAITER in s.why]
