"""How a zone plan (and its result) is shown: one row per node, in the order the nodes are acted
on, under what the on-call engineer must know first (scope, attestation coverage, the brake).
The per-step table stays in `-o wide` and in JSON (`steps`, with a `zone` section)."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from kubectl_nodefail.common import attestation
from kubectl_nodefail.remediate.plan import MUTATING, Plan, Step
from kubectl_nodefail.remediate.zoneplan import NodeRow, ZoneView, suggestion
from kubectl_nodefail.render import render
from kubectl_nodefail.term import printable

LISTED = 8  # names listed inline before "and N more"
WIDTH = 118  # the head's lines are wrapped to this


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:LISTED])
    return shown + (f" and {len(names) - LISTED} more" if len(names) > LISTED else "")


def _action(row: NodeRow) -> str:
    acting = [s for s in row.steps if s.action in MUTATING]
    if not acting:
        held = sum(1 for s in row.steps if s.action == "finalizer-held")
        return f"none ({held} finalizer-held)" if held else "none (nothing to release)"
    kinds = sorted({s.action for s in acting})
    return ", ".join(
        f"{k} x{sum(1 for s in acting if s.action == k)}" if k == "force-delete-pod" else k
        for k in kinds
    )


def _gate(row: NodeRow, confirmed: bool) -> str:
    acting = [s for s in row.steps if s.action in MUTATING]
    if confirmed:
        results = sorted({s.result or "?" for s in acting})
        return ", ".join(results) if acting else "-"
    if not acting:
        return "-"
    return "ok" if all(s.allowed for s in acting) else "REFUSED"


def _pods(row: NodeRow) -> str:
    freed = sum(len(s.releases) for s in row.steps if s.action in MUTATING)
    parts = [f"{freed} pods"]
    if row.statefulset_pods:
        parts.append(f"{row.statefulset_pods} sts")
    if row.volume_pods or row.volumes_attached:
        parts.append(f"{row.volume_pods} vol pods, {row.volumes_attached} attached")
    return "; ".join(parts)


def _detail(row: NodeRow, confirmed: bool) -> str:
    acting = [s for s in row.steps if s.action in MUTATING]
    if confirmed and acting:
        first = next((s for s in acting if s.result not in ("done",)), acting[0])
        return first.detail
    if acting and not all(s.allowed for s in acting):
        return _short_gate(next(s for s in acting if not s.allowed))
    return row.evidence


def _short_gate(step: Step) -> str:
    """A refused step's reason, short (the full text is listed once below the table)."""
    gate = step.gate
    if gate.startswith("no evidence"):
        return "needs an attestation (its machine not confirmed off)"
    if gate.startswith("a zone run does not act on"):
        return "spared: its lease is renewed (or unread); needs its own attestation"
    return gate.split(". ")[0]


def text(plan: Plan, view: ZoneView, confirmed: bool, interrupted: bool, wide: bool) -> str:
    plan, view = printable.clean((plan, view))  # names from the cluster, escaped (printable.py)
    head = render._plan_head(plan, confirmed, interrupted)
    out = [f"{head}. Scope: {view.scope.words}. Strategy: {plan.strategy}."]
    where = render._plan_cluster(plan.bound_to)
    if where:
        out.append(where)
    out.append(
        f"{len(view.scope.nodes)} nodes in {view.scope.words}: {view.failed} not Ready "
        f"({len(view.rows)} with steps), {len(view.ready)} Ready"
        + (
            f" ({_names(view.ready)}): a Ready node is never tainted or deleted (at most it "
            "loses a stale out-of-service taint)."
            if view.ready
            else "."
        )
    )
    out += _attestation_lines(view)
    first = sum(1 for r in view.rows if r.first)
    out.append(
        f"Order: the {first} nodes holding StatefulSet pods or volumes first, then the longest "
        f"down. --confirm acts on at most {view.pool} nodes at a time; each node is re-read "
        "right before its change (still not Ready, lease not renewed since this plan, the pod "
        "the same object): anything that moved is skipped."
    )
    out += [f"Brake: {line}" for line in view.brake]
    out += [f"REFUSED: {r}" for r in plan.refusals]
    out = [line for text in out for line in render._lines(text, WIDTH, "  ")]
    if not view.rows:
        out.append(
            f"Nothing to do: no failed node (or stale out-of-service taint) in {view.scope.words}."
        )
        return "\n".join(out) + "\n"
    rows = [
        [i, r.node, _action(r), _gate(r, confirmed), _pods(r), _detail(r, confirmed)]
        for i, r in enumerate(view.rows, 1)
    ]
    out += [
        "",
        tabulate(
            rows,
            headers=[
                "#",
                "NODE",
                "ACTION",
                "RESULT" if confirmed else "GATE",
                "RELEASES",
                "DETAIL" if confirmed else "EVIDENCE / WHY NOT",
            ],
            tablefmt="plain",
            maxcolwidths=[None, None, None, None, None, 60],
        ),
    ]
    out += _reasons(plan, confirmed)
    if wide:
        out += ["", render.plan_table(plan, confirmed, wide=True, interrupted=interrupted)]
    return "\n".join(out) + "\n"


def _attestation_lines(view: ZoneView) -> list[str]:
    cover, scope = view.coverage, view.scope
    lines = []
    if cover.typed:
        lines.append(
            f"Attestation: {scope.flag} {scope.value} (typed) covers {len(cover.attested)} "
            "not-Ready nodes whose lease is stale."
        )
    else:
        lines.append(
            "Attestation: none for the whole scope. After checking that the machines are off "
            f"(console, power state, cloud instance state), type {suggestion(scope)} (the "
            f"{scope.kind} itself, as you typed it above) or, node by node, "
            f"{attestation.flag()}."
        )
    if cover.excluded:
        lines.append(
            f"Never covered by a zone attestation ({len(cover.excluded)}): "
            + "; ".join(f"{n}: {why}" for n, why in sorted(cover.excluded.items())[:LISTED])
            + (" ..." if len(cover.excluded) > LISTED else "")
            + ". Only a check of that machine and its name typed with "
            f"{attestation.FLAG} unlocks it."
        )
    return lines


def _reasons(plan: Plan, confirmed: bool) -> list[str]:
    """Each distinct refusal (or, after --confirm, each skip or failure) once, with its nodes."""
    groups: dict[str, list[str]] = {}
    for step in plan.steps:
        if step.action not in MUTATING:
            continue
        if confirmed and step.result in ("skipped", "failed", "refused", "unconfirmed"):
            key = f"{step.result}: {step.detail}"
        elif not confirmed and not step.allowed:
            key = step.gate
        else:
            continue
        names = groups.setdefault(key, [])
        if step.node not in names:
            names.append(step.node)
    if not groups:
        return []
    out = ["", "WHY NOT DONE" if confirmed else "WHY REFUSED"]
    for key, names in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        out.append(f"- {len(names)} node(s) ({_names(names)}): {key}")
    return out


def data(view: ZoneView) -> dict[str, Any]:
    """The `zone` section of the JSON plan or result."""
    return {
        "scope": {"kind": view.scope.kind, "value": view.scope.value},
        "nodes": view.scope.nodes,
        "zones": view.scope.zones,
        "ready": view.ready,
        "attestation": {
            "typed": view.coverage.typed,
            "covers": view.coverage.attested,
            "notCovered": view.coverage.excluded,
        },
        "order": [
            {
                "node": r.node,
                "first": r.first,
                "statefulsetPods": r.statefulset_pods,
                "volumePods": r.volume_pods,
                "volumesAttached": r.volumes_attached,
                "evidence": r.evidence,
            }
            for r in view.rows
        ],
        "brake": view.brake,
        "concurrency": view.pool,
    }
