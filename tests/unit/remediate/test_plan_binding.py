"""A saved plan is bound to its cluster: context, server, kube-system's UID and the node
objects it was made for; its attestations count only typed again at the replay, and are shown.
(The replay on a recreated node, on the real control plane: e2e test_remediate_binding.)"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_nodefail.analysis.findings import Report
from kubectl_nodefail.cli.main import main
from kubectl_nodefail.common.errors import BadInputError
from kubectl_nodefail.remediate import planfile
from kubectl_nodefail.remediate.actions import summary
from kubectl_nodefail.remediate.plan import (
    Binding,
    Options,
    Plan,
    attestation_line,
    binding_problem,
    make_plan,
    narrow,
)
from kubectl_nodefail.render import render
from tests.unit.conftest import FIXTURES, load, report_of

NODE = "flaky-a"
UID = "f8bc244e-a63a-459f-8af3-76e2f3f2b50e"  # flaky-a in node-down-after-eviction
HERE = Binding("ctx-a", "https://a:6443", "ks-uid-a", "2026-11-30T09:47:27Z", "", {NODE: UID})


def _uids() -> dict[str, str]:
    return {
        n["metadata"]["name"]: n["metadata"]["uid"] for n in load("node-down-after-eviction").nodes
    }


def _planned(report: Report, **kwargs: object) -> Plan:
    opts = Options(node_uids=_uids(), server_minor=36, attested_by="alice", **kwargs)  # type: ignore[arg-type]
    plan = make_plan(report, opts)
    plan.bound_to = HERE
    return plan


def test_node_steps_carry_the_node_uid_and_the_plan_its_cluster(after_eviction: Report) -> None:
    plan = _planned(after_eviction, attested=[NODE])
    taint = next(s for s in plan.steps if s.action == "taint-out-of-service")
    assert taint.uid == UID
    data = json.loads(render.as_json(render.plan_document(plan, summary(plan))))
    assert data["boundTo"] == {
        "context": "ctx-a",
        "server": "https://a:6443",
        "clusterUid": "ks-uid-a",
        "capturedAt": "2026-11-30T09:47:27Z",
        "source": "",
        "nodeUids": {NODE: UID},
    }
    assert data["attestations"] == [
        {"node": NODE, "nodeUid": UID, "by": "alice", "at": "2026-11-30T09:47:27Z"}
    ]
    assert next(s for s in data["steps"] if s["action"] == "taint-out-of-service")["uid"] == UID
    again = planfile.load(copy.deepcopy(data))
    assert again.bound_to == HERE and again.attestations == plan.attestations
    # The binding and the record are signed: an edit of either is an edited plan.
    for edit in (
        lambda d: d["boundTo"].update(clusterUid="ks-uid-b"),
        lambda d: d["boundTo"]["nodeUids"].update({NODE: "0000-other"}),
        lambda d: d["attestations"][0].update(by="someone else"),
    ):
        edited = copy.deepcopy(data)
        edit(edited)
        with pytest.raises(BadInputError, match="edited after it was saved"):
            planfile.load(edited)


def test_a_plan_without_its_binding_is_rejected(after_eviction: Report) -> None:
    plan = _planned(after_eviction, attested=[NODE])
    data = json.loads(render.as_json(render.plan_document(plan, summary(plan))))
    old = {k: v for k, v in data.items() if k not in ("boundTo", "attestations")}
    with pytest.raises(BadInputError, match="names no cluster"):
        planfile.load(old)
    unbound_step = copy.deepcopy(data)
    next(s for s in unbound_step["steps"] if s["target"] == f"node/{NODE}")["uid"] = ""
    unbound_step["digest"] = "sha256:" + "0" * 64
    with pytest.raises(BadInputError, match="has no valid node UID"):
        planfile.load(unbound_step)


@pytest.mark.parametrize(
    ("live", "message"),
    [
        (replace(HERE, context="ctx-b"), "made for context 'ctx-a' (server https://a:6443)"),
        (replace(HERE, server="https://b:6443"), "and this is context 'ctx-a' (server https://b"),
        (replace(HERE, cluster_uid="ks-uid-b"), "another cluster behind this context and server"),
        (replace(HERE, node_uids={NODE: "new-uid"}), f"node {NODE} is another object now"),
    ],
)
def test_another_cluster_context_server_or_node_is_refused(
    after_eviction: Report, live: Binding, message: str
) -> None:
    saved = _planned(after_eviction, attested=[NODE])
    assert binding_problem(saved, HERE) is None
    assert binding_problem(saved, replace(HERE, node_uids={})) is None  # node gone: narrowing's
    problem = binding_problem(saved, live)
    assert problem is not None and message in problem


def test_a_plan_from_a_dump_is_bound_to_no_cluster(after_eviction: Report) -> None:
    saved = _planned(after_eviction)
    saved.bound_to = Binding(source="incident.json")
    problem = binding_problem(saved, HERE)
    assert problem is not None and "from the dump incident.json" in problem


def test_the_files_attestation_counts_only_typed_again(after_eviction: Report) -> None:
    saved = _planned(after_eviction, attested=[NODE])
    typed = _planned(after_eviction, attested=[NODE])
    plan = narrow(saved, typed)
    assert plan.mutating and plan.attested == [NODE]
    assert "counts" in attestation_line(plan, plan.attestations[0])
    untyped = _planned(after_eviction)
    plan = narrow(saved, untyped)
    assert not plan.mutating and plan.attested == []
    line = attestation_line(plan, plan.attestations[0])
    assert line.startswith(
        f"This plan carries an attestation by alice at 2026-11-30T09:47:27Z that {NODE} is "
        "shut down; NOT typed again"
    )
    taint = next(s for s in plan.steps if s.action == "taint-out-of-service")
    assert "was not typed again for this run" in taint.gate
    assert line in render.plan_table(plan, False)


def test_an_attestation_the_file_lacks_cannot_be_added_at_replay(tmp_path: Path) -> None:
    after = str(FIXTURES / "node-down-after-eviction.json")
    path = tmp_path / "plan.json"
    result = CliRunner().invoke(main, ["remediate", "--from-file", after, "--plan-out", str(path)])
    assert result.exit_code == 4, result.output
    result = CliRunner().invoke(
        main,
        ["remediate", "--plan-in", str(path), "--node-shutdown-confirmed", NODE, "--confirm"],
    )
    assert result.exit_code == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert "has no attestation for that node" in result.stderr


def test_the_plan_header_names_its_cluster(after_eviction: Report) -> None:
    text = render.plan_table(_planned(after_eviction), False)
    assert (
        "Context ctx-a (server https://a:6443, cluster kube-system UID ks-uid-a), read at "
        "2026-11-30T09:47:27Z." in text.splitlines()[1]
    )
    from_dump = report_of("node-down-after-eviction")
    plan = make_plan(from_dump, Options())
    plan.bound_to = Binding(captured_at="2026-11-30T09:47:27Z", source="d.json")
    assert "From the dump d.json, read at 2026-11-30T09:47:27Z." in render.plan_table(plan, True)


def test_every_step_names_the_pods_it_is_for_even_refused(after_eviction: Report) -> None:
    """Without an attestation the plan still shows the pods the refused step would release
    (the StatefulSet pod and the bare pod among them), not only the harmless wait rows."""
    plan = _planned(after_eviction)
    taint = next(s for s in plan.steps if s.action == "taint-out-of-service")
    assert not taint.allowed
    assert "scenario-down/db-0 (statefulset)" in taint.releases
    assert "scenario-down/lonely (bare)" in taint.releases
    text = render.plan_table(plan, False)
    flat = " ".join(re.sub(r"-\n\s+", "-", text).split())
    assert "Until it runs, these stay stuck: scenario-down/batch-pfp-h74wl (job), " in flat
    assert "scenario-down/db-0 (statefulset)" in flat
    forced = _planned(after_eviction, strategy="force-delete")
    held = [s for s in forced.steps if s.action == "finalizer-held"]
    deletes = [s for s in forced.steps if s.action == "force-delete-pod"]
    assert held and deletes
    assert all(s.releases == [f"{s.target[4:]} ({s.why.split(':')[0]})"] for s in deletes)
    assert "Until it runs, the pod stays stuck" in " ".join(
        render.plan_table(forced, False).split()
    )
    attested = _planned(after_eviction, attested=[NODE], strategy="force-delete")
    assert all(s.allowed for s in attested.steps if s.action == "force-delete-pod")


def test_plan_out_prints_the_next_command_with_the_placeholder(after_eviction: Report) -> None:
    from kubectl_nodefail.cli.remediate_run import _next_command

    attested = _planned(after_eviction, attested=[NODE])
    text = _next_command(attested, "p.json", None, None)
    assert text.endswith(
        "\n  kubectl nodefail remediate --plan-in p.json --context ctx-a "
        "--node-shutdown-confirmed <NODE-YOU-VERIFIED-IS-POWERED-OFF>"
    )
    assert f"checked that the machine of {NODE} is still powered off" in text
    refused = _next_command(_planned(after_eviction), "p.json", "/k", None)
    assert refused.endswith(
        f"\n  kubectl nodefail remediate {NODE} --kubeconfig /k --context ctx-a "
        "--node-shutdown-confirmed <NODE-YOU-VERIFIED-IS-POWERED-OFF> --plan-out p.json"
    )
    stale = make_plan(report_of("out-of-service-stale"), Options(only_nodes=["flaky-d"]))
    stale.bound_to = HERE
    runnable = _next_command(stale, "p.json", None, None)
    assert runnable.endswith(
        "add --confirm to:\n  kubectl nodefail remediate --plan-in p.json --context ctx-a"
    )
    from tests.unit.remediate.test_human_gate import violations

    for said in (text, refused, runnable):
        assert violations(said) == []


def test_a_taint_names_the_pods_it_leaves_stuck() -> None:
    plan = make_plan(report_of("finalizer-on-failed-node"), Options(server_minor=36))
    taint = next(s for s in plan.steps if s.action == "taint-out-of-service")
    assert taint.leaves_stuck == ["scenario-safety/held-flaky-t5 (e2e.nodefail/hold)"]
    held = next(s for s in plan.steps if s.action == "finalizer-held")
    assert held.target == "pod/scenario-safety/held-flaky-t5"
    assert "scenario-safety/held-flaky-t5" not in " ".join(taint.releases)
    text = " ".join(re.sub(r"-\n\s+", "-", render.plan_table(plan, False)).split())
    assert "Leaves stuck (finalizers): scenario-safety/held-flaky-t5 (e2e.nodefail/hold)." in text


def test_binding_a_saved_plan_needs_the_cluster_identity() -> None:
    """Without `get namespaces/kube-system` a plan is shown ("cluster identity not read") but
    not saved or replayed: exit 12, naming the permission."""
    from kubectl_nodefail.cli.planning import cluster_binding as _binding
    from kubectl_nodefail.common.errors import AuthError, Exit, Forbidden

    class NoNamespaces:
        context, host = "ctx-a", "https://a:6443"

        def get_object(self, path: str) -> dict[str, object]:
            raise Forbidden(f"forbidden: GET {path}")

    snap = load("node-down-after-eviction")
    shown = _binding(NoNamespaces(), snap, None, False, {NODE: UID})
    assert shown.cluster_uid == "" and shown.context == "ctx-a"
    plan = make_plan(report_of("node-down-after-eviction"), Options())
    plan.bound_to = shown
    assert "cluster identity not read" in render.plan_table(plan, False).splitlines()[1]
    with pytest.raises(AuthError) as err:
        _binding(NoNamespaces(), snap, None, True, {NODE: UID})
    assert err.value.exit_code == Exit.AUTH and "namespaces/kube-system" in err.value.line()
