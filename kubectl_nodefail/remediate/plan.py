"""Pure planning: a diagnosis plus the user's attestations -> ordered, gated steps.

Nothing here touches the cluster. Each step says what it would do, why, on what evidence, and
which gate it passed or failed; refused steps say what would unlock them. actions.py executes
only the allowed steps, re-checking each one right before acting.

What a plan is made of (Step, Binding, Attestation, Plan) is in steps.py, one node's gated steps
in nodesteps.py, a saved plan checked against a live one in narrow.py; this module makes the
Plan of every node's steps, and the names of those modules stay importable from here.
"""

from __future__ import annotations

from collections.abc import Collection

from kubectl_nodefail.analysis import unmarked
from kubectl_nodefail.analysis.findings import NodeFinding, Report
from kubectl_nodefail.analysis.machine import machine_ran
from kubectl_nodefail.analysis.nodes import analyse_node
from kubectl_nodefail.common import attestation
from kubectl_nodefail.common.errors import AttestationContradicted
from kubectl_nodefail.remediate.narrow import attestation_line, binding_problem, narrow, step_key
from kubectl_nodefail.remediate.nodesteps import (
    Options,
    _cluster_refusal,
    _cosmetic,
    _node_steps,
    _strategy,
    finalizer_owner,
    pod_facts,
)
from kubectl_nodefail.remediate.steps import (
    ACTIONS,
    MUTATING,
    NODE_ACTIONS,
    POD_ACTIONS,
    Attestation,
    Binding,
    Plan,
    Step,
)
from kubectl_nodefail.snapshot.model import Snapshot, format_time

# What the package, the tests and the tools import from here (a few names now live in the
# modules above).
__all__ = [
    "ACTIONS",
    "JOBS",
    "MUTATING",
    "NODE_ACTIONS",
    "POD_ACTIONS",
    "REPLACEABLE",
    "STRATEGIES",
    "Attestation",
    "Binding",
    "Options",
    "Plan",
    "Step",
    "_cosmetic",
    "attestation_line",
    "binding_problem",
    "check_attestations",
    "finalizer_owner",
    "make_plan",
    "narrow",
    "pod_facts",
    "step_key",
]

STRATEGIES = ("auto", "out-of-service", "force-delete", "delete-node")
REPLACEABLE = {"deployment", "replicaset", "replicationcontroller"}
JOBS = {"job", "cronjob"}


def check_attestations(snap: Snapshot, attested: Collection[str]) -> None:
    """Refuse the whole run (AttestationContradicted) if the state of a node contradicts an
    attestation typed for it: before any plan is made, whatever else the plan holds. Each
    attested node of the snapshot is judged, whether the plan's scope or report lists it or not
    (a Ready node is in no report); a name the snapshot lacks is the caller's to refuse."""
    by_name = {n["metadata"]["name"]: n for n in snap.nodes if n["metadata"]["name"] in attested}
    for name in sorted(attested):
        node = by_name.get(name)
        said = machine_ran(analyse_node(node, snap, snap.captured_at)) if node is not None else None
        if said:
            raise AttestationContradicted(
                f"{attestation.FLAG} {name}: refused, {said}",
                hint="check that machine again (console, power state, cloud instance state); "
                "nothing was done",
            )


def _not_marked(node: NodeFinding, report: Report) -> str:
    """Why no step is planned on a Ready node nothing marks (no controller leader) or that was
    not marked in time, and what stays stuck there."""
    stuck = [f"{p.namespace}/{p.name}" for p in report.pods if p.node == node.name]
    first = (
        "bring kube-controller-manager back first"
        if node.cause.code == unmarked.CAUSE
        else "find out first why the node lifecycle controller has not marked it NotReady"
    )
    return (
        f"{node.name}: {node.cause.summary}. remediate takes no step on this node while it is "
        f"Ready: {first}, then plan again"
        + (f". Until then, these stay stuck: {', '.join(stuck)}" if stuck else "")
    )


def make_plan(report: Report, opts: Options) -> Plan:
    refusals: list[str] = []
    candidates = [n for n in report.nodes if not opts.only_nodes or n.name in opts.only_nodes]
    acting = [n for n in candidates if n.failed]
    # a plan-wide refusal only where it refuses something: a failed node in scope (removing a
    # stale out-of-service taint from a Ready node is not what a zone brake is about)
    refusal = _cluster_refusal(report, opts) if acting else None
    if refusal:
        refusals.append(refusal)
    if len(acting) > opts.max_nodes:
        refusals.append(
            f"{len(acting)} failed nodes in scope but at most {opts.max_nodes} per run "
            "(--max-nodes): name the nodes to act on, or raise the bound"
        )
        refusal = refusal or refusals[-1]
    refusals += [
        _not_marked(node, report)
        for node in candidates
        if unmarked.of(node) or node.cause.code == "lease-overdue"
    ]
    steps: list[Step] = []
    for node in candidates:
        steps += _node_steps(node, report, opts, refusal)
    at = format_time(report.captured_at)
    return Plan(
        strategy=_strategy(opts),
        steps=steps,
        refusals=refusals,
        attested=sorted(opts.attested),
        attestations=[
            Attestation(node, opts.node_uids.get(node, ""), opts.attested_by, at)
            for node in sorted(opts.attested)
        ],
    )
