"""diagnose's advice and remediate's plan agree, on every recorded fixture: what diagnose tells
the user to do with a pod or node is the step remediate plans for it once the machine is
attested off (both decide from advice.disposition)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from kubectl_nodefail.analysis import advice, brake
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.findings import NodeFinding, Report
from kubectl_nodefail.analysis.machine import machine_ran
from kubectl_nodefail.common import attestation
from kubectl_nodefail.common.errors import AttestationContradicted
from kubectl_nodefail.remediate.plan import MUTATING, Options, Plan, check_attestations, make_plan
from kubectl_nodefail.snapshot.model import Snapshot, load_dump
from tests.unit.conftest import FIXTURES

ALL = sorted(FIXTURES.rglob("*.json"))
RELEASING = {"out-of-service", "force-delete"}


@pytest.mark.parametrize("path", ALL, ids=[str(p.relative_to(FIXTURES)) for p in ALL])
def test_advice_is_the_attested_plans_step(path: Path) -> None:
    snap = load_dump(str(path))
    report = diagnose(snap, snap.captured_at)
    failed = [n for n in report.nodes if n.failed]
    for node in failed:
        ran = machine_ran(node)
        if ran is not None:
            _refused_and_never_suggested(snap, report, node, ran, path.name)
            continue
        opts = Options(
            attested=[node.name],
            only_nodes=[node.name],
            max_nodes=len(report.nodes) + 1,
            server_minor=snap.server_minor,
        )
        if report.brake is not None:
            _braked_advice_is_the_refusal(report, make_plan(report, opts), node, path.name)
        plan = make_plan(report, replace(opts, allow_disruption=True))
        destructive = [s for s in plan.steps if s.action in MUTATING and s.node == node.name]
        finalizer_held = {s.target for s in plan.steps if s.action == "finalizer-held"}
        for pod in report.pods:
            if pod.node != node.name or not pod.node_failed:
                continue
            target = f"pod/{pod.namespace}/{pod.name}"
            # what a step releases is its `releases` (its why may name pods it does not
            # release: those whose volumes stay attached, held by a finalizer)
            released = any(
                s.target == target
                or any(r.split(" (", 1)[0] == f"{pod.namespace}/{pod.name}" for r in s.releases)
                for s in destructive
            )
            where = f"{path.name} {target}: advice {pod.action.code} ({pod.action.summary})"
            assert (pod.action.code == "finalizer-held") == (target in finalizer_held), where
            if pod.action.code in RELEASING:
                assert released, where + f"; plan: {[(s.action, s.why) for s in destructive]}"
            if released:
                assert pod.action.code not in ("finalizer-held", "none-possible"), where
                assert "cosmetic" not in pod.action.summary, where
        suggests_taint = "let remediate apply the out-of-service taint" in (
            node.action.summary if node.action else ""
        ) or (node.action is not None and node.action.code == "out-of-service")
        if suggests_taint:
            assert any(s.action == "taint-out-of-service" for s in destructive), (
                f"{path.name} node {node.name}: advice {node.action}; plan {plan.steps}"
            )


def test_a_node_whose_pods_need_nothing_is_not_sent_to_the_taint() -> None:
    snap = load_dump(str(FIXTURES / "node-down-after-eviction.json"))
    report = diagnose(snap, snap.captured_at)
    node = next(n for n in report.nodes if n.failed)
    pods = [p for p in report.pods if p.node == node.name]
    cosmetic = [p for p in pods if advice.disposition(p, "out-of-service")[0] == advice.COSMETIC]
    assert cosmetic
    action = advice.for_node(node, snap.server_minor, cosmetic)
    assert "out-of-service taint" not in action.summary.replace("needs the out-of-service", "")
    assert "--node-shutdown-confirmed" not in action.remediate


def _braked_advice_is_the_refusal(
    report: Report, plan: Plan, node: NodeFinding, where: str
) -> None:
    """While the brake holds, the plan refuses every destructive step on the node, and nothing
    diagnose says of it or its pods advises one as if it would run: each such suggestion names
    the brake first, with the brake's facts as its premises."""
    assert report.brake is not None
    assert any(report.brake.text in r for r in plan.refusals), (where, plan.refusals)
    assert not any(s.allowed for s in plan.steps if s.action in MUTATING), where
    actions = [node.action] + [p.action for p in report.pods if p.node == node.name]
    for action in actions:
        if action is None:
            continue
        assert action.code not in RELEASING, f"{where} {node.name}: {action}"
        takes_a_step = attestation.FLAG in action.remediate or "delete-node" in action.remediate
        if takes_a_step or "out-of-service taint" in action.summary.split("Then:")[-1]:
            assert action.summary.startswith(brake.ADVICE_OPENINGS), f"{where}: {action.summary}"
            assert set(report.brake.because) <= set(action.because), where


def _refused_and_never_suggested(
    snap: Snapshot, report: Report, node: NodeFinding, ran: str, where: str
) -> None:
    """A node whose state says its machine ran after the failure began: remediate refuses an
    attestation on it, so no suggestion diagnose makes for it or its pods asks for one."""
    with pytest.raises(AttestationContradicted) as refused:
        check_attestations(snap, [node.name])
    assert ran in refused.value.message and node.name in refused.value.message
    actions = [node.action] + [p.action for p in report.pods if p.node == node.name]
    for action in actions:
        shown = action.remediate if action is not None else ""
        assert attestation.FLAG not in shown, f"{where} {node.name}: suggests {shown}"
