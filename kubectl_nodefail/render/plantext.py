"""A remediation plan or its result as text: the head line (what ran, or what --confirm would
run), the cluster it is bound to, the attestations and refusals, then one step per row (or, on a
narrow terminal, each step's prose under its row), and with -o wide its evidence and gates.

The text is escaped (printable.clean) before any width is measured.
"""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from kubectl_nodefail.remediate.plan import MUTATING, attestation_line
from kubectl_nodefail.term import fit
from kubectl_nodefail.term.printable import clean as escaped

# results of steps whose request was sent (unconfirmed: accepted, its effect not seen)
CHANGED = ("done", "unconfirmed", "failed", "interrupted")


def _plan_head(plan: Any, confirmed: bool, interrupted: bool) -> str:
    """The first line: what ran, or what --confirm would run."""
    if confirmed:
        if any(s.result in CHANGED for s in plan.steps):
            return "Executed" + (" until interrupted" if interrupted else "")
        if interrupted:
            return "Interrupted before any change: nothing was changed"
        return "Nothing was executed: no step could change anything"
    if plan.mutating:
        return "Plan (DRY RUN: nothing was changed; add --confirm to run it)"
    if any(s.action in MUTATING for s in plan.steps):
        return (
            "Plan (DRY RUN: nothing was changed; every step that would change something is "
            "REFUSED: running it would change nothing)"
        )
    return "Plan (DRY RUN: nothing was changed; no step changes anything)"


PLAN_TARGET, PLAN_WHY = 44, 70  # the plan's cells, wrapped at spaces (fit.cell)


def plan_table(
    plan: Any,
    confirmed: bool,
    wide: bool = False,
    interrupted: bool = False,
    width: int | None = None,
) -> str:
    """The plan or its result, one step per row; its prose (WHY / DETAIL) wrapped inside the
    cell at spaces only, at PLAN_WHY columns or what the terminal's `width` leaves (at least
    30: nothing a step says is cut); the header lines wrapped at the terminal's width."""
    plan = escaped(plan)
    head = _plan_head(plan, confirmed, interrupted)
    lines = [f"{head}. Strategy: {plan.strategy}."]
    where = _plan_cluster(plan.bound_to)
    if where:
        lines.append(where)
    lines += [attestation_line(plan, record) for record in plan.attestations]
    unrecorded = [n for n in plan.attested if n not in {a.node for a in plan.attestations}]
    if unrecorded:
        lines.append(f"Shutdown attested by the operator for: {', '.join(unrecorded)}")
    lines += [f"REFUSED: {r}" for r in plan.refusals]
    out = [wrapped for line in lines for wrapped in fit.prose(line, width)]
    if not plan.steps:
        out.append(
            "No step planned: see the refusal above."
            if plan.refusals
            else "Nothing to do: no failed node (or stale out-of-service taint) in scope."
        )
        return "\n".join(out) + "\n"
    rows = []
    for i, s in enumerate(plan.steps, 1):
        state = s.result or ("ok" if s.allowed else "REFUSED")
        note = s.detail if s.result else (s.why if s.allowed else s.gate)
        rows.append([i, s.action, s.target, state, note.rstrip(".") + _pods_note(s)])
    headers = ["#", "ACTION", "TARGET", "RESULT" if confirmed else "GATE", "WHY / DETAIL"]
    why = PLAN_WHY
    if width:
        target = min(PLAN_TARGET, max(len(r[2]) for r in rows))
        used = sum(
            max(len(h) + 2, *(len(str(r[i])) for r in rows)) if i != 2 else max(target, 8)
            for i, h in enumerate(headers[:4])
        )
        why = min(PLAN_WHY, width - used - 2 * 4)
        if why < PLAN_NARROW:
            out += ["", *_plan_stacked(rows, headers, width)]
            return "\n".join(out + _plan_evidence(plan, wide)) + "\n"
    rows = [[n, a, fit.cell(t, PLAN_TARGET), r, fit.cell(w, why)] for n, a, t, r, w in rows]
    out += [
        "",
        tabulate(  # cells wrapped at spaces only (fit.cell): a name is never cut
            rows, headers=headers, tablefmt="plain"
        ),
    ]
    return "\n".join(out + _plan_evidence(plan, wide)) + "\n"


PLAN_NARROW = 30  # a WHY / DETAIL column narrower than this: each step's prose under its row


def _plan_stacked(rows: list[list[Any]], headers: list[str], width: int) -> list[str]:
    """The plan on a narrow terminal: # ACTION TARGET GATE on a row, the step's WHY / DETAIL
    wrapped under it (indented, at spaces only), so that nothing a step says is cut."""
    table = tabulate([r[:4] for r in rows], headers=headers[:4], tablefmt="plain").splitlines()
    out = [table[0], f"     {headers[4]}"]
    for line, row in zip(table[1:], rows):
        out.append(line)
        out += fit.prose(str(row[4]), width, indent=" " * 5, first=" " * 5)
    return out


def _plan_evidence(plan: Any, wide: bool) -> list[str]:
    if not wide:
        return []
    out = ["", "EVIDENCE AND GATES"]
    for i, s in enumerate(plan.steps, 1):
        out.append(f"{i}. why: {s.why}")
        out.append(f"   gate: {s.gate}")
        if s.evidence:
            out.append(f"   evidence: {'; '.join(s.evidence)}")
    return out


def _pods_note(step: Any) -> str:
    """What the step is for: the stuck pods it frees (or, refused or not run, leaves stuck),
    and those on its node it never frees (finalizers)."""
    notes = []
    freed = ", ".join(step.releases)
    itself = step.releases and step.target.startswith("pod/") and len(step.releases) == 1
    runs = step.allowed and step.result in ("", "done", "unconfirmed", "interrupted")
    if freed and not runs:
        notes.append(
            "Until it runs, the pod stays stuck"
            if itself
            else f"Until it runs, these stay stuck: {freed}"
        )
    elif freed and not itself and freed not in step.why:  # a taint's why names them already
        notes.append(f"Releases {freed}")
    if step.leaves_stuck:
        notes.append(f"Leaves stuck (finalizers): {', '.join(step.leaves_stuck)}")
    return "".join(f". {n}" for n in notes) + ("." if notes else "")


def _plan_cluster(bound: Any) -> str:
    """Which cluster a plan or its result is about (the binding a saved plan carries)."""
    if bound.source:
        return f"From the dump {bound.source}" + (
            f", read at {bound.captured_at}." if bound.captured_at else "."
        )
    if not bound.server:
        return ""
    identity = (
        f"cluster kube-system UID {bound.cluster_uid}"
        if bound.cluster_uid
        else "cluster identity not read"
    )
    return (
        f"Context {bound.context} (server {bound.server}, {identity}), read at {bound.captured_at}."
    )
