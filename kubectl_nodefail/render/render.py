"""Findings and plans as text: table (one screen), wide (with evidence), json, yaml, prose.

Every function returns a string; the CLI prints it. Colour is never used, so NO_COLOR holds.
The text functions (table, explain, plan) escape what they show from the cluster first
(printable.clean), before any width is measured; json and yaml keep every value exact.
"""

from __future__ import annotations

import textwrap
from datetime import datetime
from typing import Any, TextIO

from tabulate import tabulate

from kubectl_nodefail.analysis import advice, facts, outage, summary
from kubectl_nodefail.analysis import brake as brakes
from kubectl_nodefail.analysis.findings import Action, NodeFinding, PodFinding, Report
from kubectl_nodefail.analysis.owners import describe as describe_owners
from kubectl_nodefail.analysis.text import ago, duration, plural
from kubectl_nodefail.render import jsonindent
from kubectl_nodefail.snapshot.data import to_data
from kubectl_nodefail.snapshot.model import format_time
from kubectl_nodefail.term import fit
from kubectl_nodefail.term.printable import clean as escaped

API_VERSION = "kubectl-nodefail/v1"


def report_data(report: Report) -> dict[str, Any]:
    data = to_data(report)
    c = summary.counts(report)
    totals = {
        "problems": report.problems,
        "nodesTotal": c.nodes_total,
        "nodesNotReady": c.nodes_not_ready,
        "stuckPods": len(report.pods),
        "podsOnFailedNodes": c.on_failed_nodes,
        "waitingForVolume": c.waiting_for_volume,
        "waitingForNode": c.waiting_for_node,
        "terminatingElsewhere": c.elsewhere,
        "heldByFinalizers": c.held_by_finalizers,
        "onDeletedNodes": c.on_deleted_nodes,
    }
    return {"apiVersion": API_VERSION, "kind": "Diagnosis", "summary": totals, **data}


def as_json(data: Any) -> str:
    """json.dumps(data, indent=2), by jsonindent: the same text, several times faster."""
    return jsonindent.dumps(data) + "\n"


def write_json(data: Any, out: TextIO) -> None:
    """as_json(data) written to `out` chunk by chunk, never held whole: the text of a big
    outage's diagnosis is tens of megabytes."""
    jsonindent.dump(data, out.write)
    out.write("\n")
    out.flush()


def write_data(data: Any, output: str, out: TextIO) -> None:
    """`-o json` (in chunks) or `-o yaml` of data, written to `out`."""
    if output == "json":
        write_json(data, out)
    else:
        out.write(as_yaml(data))
        out.flush()


def as_yaml(data: Any) -> str:
    import yaml

    return str(yaml.safe_dump(data, sort_keys=False, width=100))


def _node_for(node: NodeFinding) -> str:
    return duration(node.not_ready_seconds) if node.not_ready_seconds is not None else "-"


def _lease(node: NodeFinding) -> str:
    return ago(node.lease_age_seconds) if node.lease_age_seconds is not None else "-"


def _owner(pod: PodFinding) -> str:
    return summary.owner_of(pod)


def _stuck(pod: PodFinding, node_down: float | None = None) -> str:
    """How long it has been stuck: past its grace period once deleted; before that, on a failed
    node, as long as the node has been not Ready (it has been unreachable that long)."""
    if pod.stuck_seconds is None:
        return duration(node_down) if pod.node_failed and node_down is not None else "-"
    return duration(pod.stuck_seconds) if pod.stuck_seconds > 0 else "in grace"


def _next(pod: PodFinding, now: datetime) -> str:
    """What happens next, in a few words."""
    return summary.next_step(pod, now)


def headline(report: Report) -> str:
    when = format_time(report.captured_at)
    where = f"{report.source}" + (
        f", Kubernetes {report.server_version}" if report.server_version else ""
    )
    c = summary.counts(report)
    scoped = bool(report.scope_nodes or report.scope_namespaces)
    if not report.problems and not scoped:
        return (
            f"All {plural(report.nodes_total, 'node')} Ready and no pod stuck terminating. "
            f"Nothing to do. ({where}, {when})"
        )
    if not report.problems:
        return f"{_scope(report)}: nothing stuck. {_outside(report, c)}({where}, {when})"
    text = (f"{_scope(report)}: " if scoped else "") + (
        f"{c.nodes_not_ready} of {plural(report.nodes_total, 'node')} not Ready, "
        f"{plural(c.node_failure, 'stuck pod')}"
    )
    waits = []
    if c.waiting_for_volume:
        waits.append(f"{c.waiting_for_volume} waiting for a volume held by a failed node")
    if c.waiting_for_node:
        waits.append(f"{c.waiting_for_node} Pending: they may run only on a failed node")
    if c.on_deleted_nodes:
        waits.append(f"{c.on_deleted_nodes} bound to a deleted node: PodGC removes them")
    if waits:
        text += f" ({'; '.join(waits)})"
    late = [n for n in report.nodes if n.cause.code == "lease-not-renewed"]
    if late:
        text += (
            f"; {len(late)} Ready {'node' if len(late) == 1 else 'nodes'} not renewing "
            f"{'its' if len(late) == 1 else 'their'} lease (NotReady is coming)"
        )
    if c.elsewhere:
        text += (
            f"; {plural(c.elsewhere, 'pod')} Terminating on nodes that did not fail"
            f" ({c.held_by_finalizers} held by finalizers)"
        )
    return f"{text} ({where}, {when})"


def _scope(report: Report) -> str:
    """What a filtered view shows: 'node healthy-0', 'namespace shop', or both."""
    parts = []
    if report.scope_nodes:
        parts.append(
            ("node " if len(report.scope_nodes) == 1 else "nodes ") + ", ".join(report.scope_nodes)
        )
    if report.scope_namespaces:
        parts.append(
            ("namespace " if len(report.scope_namespaces) == 1 else "namespaces ")
            + ", ".join(report.scope_namespaces)
        )
    return " and ".join(parts)


def _outside(report: Report, c: summary.Counts) -> str:
    """A filtered all-clear never speaks for the rest of the cluster."""
    if c.nodes_not_ready:
        return (
            f"Elsewhere {c.nodes_not_ready} of {plural(report.nodes_total, 'node')} "
            "not Ready: run without the filter to see them. "
        )
    return f"(This view is filtered; all {plural(report.nodes_total, 'node')} are Ready.) "


# The default table's columns (fit.Col: what is cut first when a row is wider than the terminal)
NODE_COLUMNS = [
    fit.Col("NODE", cuts=((2, 24), (4, 8)), middle=True),
    fit.Col("STATUS"),
    fit.Col("FOR"),
    fit.Col("ZONE", cuts=((2, 16), (3, 8)), middle=True),
    fit.Col("LEASE RENEWED"),
    fit.Col("CAUSE", cuts=((1, 12),)),
    fit.Col("ACTION", cuts=((1, 12),)),
]
POD_COLUMNS = [
    fit.Col("POD", cuts=((2, 28), (4, 16)), middle=True),
    fit.Col("STATUS"),
    fit.Col("NODE", cuts=((2, 16), (4, 8)), middle=True),
    fit.Col("OWNER", cuts=((1, 16), (3, 8)), middle=True),
    fit.Col("STUCK"),
    fit.Col("NEXT", cuts=((1, 14), (3, 7))),
    fit.Col("ACTION"),
]


def table(
    report: Report,
    wide: bool = False,
    outage_view: outage.Outage | None = None,
    width: int | None = None,
) -> str:
    """Every listed node and stuck pod, one row each; or, given the outage summary of a report
    too big for one screen (outage.is_outage), that summary (never with `wide`). `width`: the
    terminal's columns (fit.width); the default view is fitted to it, -o wide only wraps its
    prose there (at spaces: never inside a word)."""
    if outage_view is not None and not wide and report.problems:
        return outage_table(report, outage_view, width)
    report = escaped(report)
    out = fit.prose(headline(report), width)
    if not report.problems:
        return "\n".join(out + _notes(report.gaps, width)) + "\n"
    if report.nodes:
        rows = []
        for n in report.nodes:
            row = [
                n.name,
                n.status,
                _node_for(n),
                n.zone,
                _lease(n),
                n.cause.summary,
                n.action.summary if n.action else "",
            ]
            if wide:
                row.insert(5, ", ".join(f"{t.key}:{t.effect}" for t in n.taints) or "-")
                row.insert(6, str(n.pod_count))
            rows.append(row)
        out += ["", _table(NODE_COLUMNS, rows, wide, width, extra={5: ["TAINTS", "PODS"]})]
    covered = [(n.name, c) for n in report.nodes for c in n.automation]
    if covered:
        out += ["", "AUTOMATION (who else acts on these nodes)"]
        out += [line for name, c in covered for line in fit.prose(f"- {name}: {c.summary}", width)]
    troubled = [z for z in report.zones if z.not_ready]
    if troubled:
        out.append("")
        for z in troubled:
            out += fit.prose(
                f"zone {z.zone}: {z.state}, evictions {z.eviction}. {z.explanation}", width
            )
    for note in report.cluster:
        out += fit.prose(f"!! {note}", width, indent="   ")
    if report.pods:
        rows = []
        down = {n.name: n.not_ready_seconds for n in report.nodes}
        for p in report.pods:
            if p.category == summary.ELSEWHERE:
                continue
            row = [
                f"{p.namespace}/{p.name}",
                p.kubectl_status,
                p.node or "-",
                _owner(p),
                _stuck(p, down.get(p.node)),
                _next(p, report.captured_at),
                p.action.code,
            ]
            if wide:
                row[5:5] = [p.ready, p.replacement.summary]
            rows.append(row)
        for group in summary.elsewhere_groups(report):
            rows.append(_group_row(group, report.captured_at, wide))
        out += ["", _table(POD_COLUMNS, rows, wide, width, extra={5: ["READY", "REPLACEMENT"]})]
    held = _held_lines(report)
    if held:
        out += ["", "HELD BY FINALIZERS (not a node failure)"]
        for line in held:
            out += fit.prose(line, width)
    if wide:
        out += ["", "EVIDENCE"]
        for n in report.nodes:
            out += fit.prose(f"node {n.name}: " + "; ".join(n.cause.evidence), width)
        for p in report.pods:
            if p.category != summary.ELSEWHERE:
                evidence = "; ".join(p.evidence + p.storage)
                out += fit.prose(f"pod {p.namespace}/{p.name}: {evidence}", width)
    actions = _node_suggestions(report, width)
    if actions:
        out += ["", "SUGGESTED", *actions]
    out += _notes(report.gaps, width)
    out += [
        "",
        *fit.prose(
            "Details: -o wide, or --explain NAME (a node or namespace/pod) for the full "
            "reasoning; -o json for runbooks.",
            width,
        ),
    ]
    return "\n".join(out) + "\n"


def _notes(gaps: list[str], width: int | None) -> list[str]:
    return [line for g in gaps for line in fit.prose(f"note: {g}", width)]


def _table(
    columns: list[fit.Col],
    rows: list[list[Any]],
    wide: bool,
    width: int | None,
    extra: dict[int, list[str]],
) -> str:
    """The default view fitted to `width` (fit.table); -o wide with the `extra` columns inserted
    at their index, its prose cells wrapped at spaces (_WIDE_LIMITS), never inside a word."""
    if not wide:
        return fit.table(columns, rows, width)
    headers = [c.header for c in columns]
    for at, names in extra.items():
        headers[at:at] = names
    limits = [_WIDE_LIMITS.get(h) for h in headers]
    cells = [
        [fit.cell(str(v), limit) if limit else v for v, limit in zip(row, limits)] for row in rows
    ]
    return tabulate(cells, headers=headers, tablefmt="plain")


def _group_row(group: summary.PodGroup, now: datetime, wide: bool) -> list[str]:
    """One row for pods Terminating on healthy nodes for one reason (finalizers, owner)."""
    first = group.pods[0]
    if len(group.pods) == 1:
        name, node = f"{first.namespace}/{first.name}", first.node or "-"
    else:
        name = f"{first.namespace}/{first.name} and {len(group.pods) - 1} more"
        node = group.nodes[0] if len(group.nodes) == 1 else f"{len(group.nodes)} nodes"
    statuses = sorted({p.kubectl_status for p in group.pods})
    longest = max(group.pods, key=lambda p: p.stuck_seconds or 0)
    row = [
        name,
        "/".join(statuses),
        node,
        group.owner,
        _stuck(longest),
        _next(first, now),
        first.action.code,
    ]
    if wide:
        row[5:5] = ["-", "-"]
    return row


def _held_lines(report: Report) -> list[str]:
    """Pods held by finalizers on nodes that did not fail: counted per finalizer and owner."""
    lines = []
    for group in summary.elsewhere_groups(report):
        if not group.finalizers:
            continue
        who = "; ".join(f"{f}: {advice.finalizer_owner(f)}" for f in group.finalizers)
        lines.append(
            f"- {plural(len(group.pods), 'pod')} in {group.namespace} owned by {group.owner}, "
            f"on {plural(len(group.nodes), 'node')}: finalizers {', '.join(group.finalizers)} "
            f"(removed by {who})"
        )
    return lines


# -o wide: the prose columns' width (a longer word, such as a taint, keeps its whole width)
_WIDE_LIMITS = {"CAUSE": 40, "ACTION": 30, "REPLACEMENT": 40, "TAINTS": 40}


def risk_label(action: Action) -> str:
    """`[risk LEVEL]`, and for a step an attestation unlocks, what it risks if that is wrong."""
    if action.if_still_running:
        return f"[risk {action.risk} if the machine still runs: {action.if_still_running}]"
    return f"[risk {action.risk}]"


def _node_suggestions(report: Report, width: int | None = None) -> list[str]:
    seen: list[str] = []
    for n in report.nodes:
        a = n.action
        if a and (a.kubectl or a.remediate):
            seen += fit.prose(f"- {n.name}: {a.summary} {risk_label(a)}", width)
            for cmd in (a.remediate, a.kubectl):
                if cmd:
                    seen += fit.command(f"    $ {cmd}", width)
    return seen


EXPLAIN_WIDTH = 100


def _wrap(label: str, text: str, width: int | None = None) -> str:
    """`label: text` wrapped at EXPLAIN_WIDTH, or the terminal's width if narrower."""
    return textwrap.fill(
        text,
        width=min(EXPLAIN_WIDTH, width or EXPLAIN_WIDTH),
        initial_indent=f"{label}: ",
        subsequent_indent=" " * (len(label) + 2),
        break_on_hyphens=False,
        break_long_words=False,
    )


def _wide_failure(p: PodFinding, report: Report, width: int | None) -> list[str]:
    """The pod's zone when it is in disruption, and the brake when it holds over a failed
    node's pod: what the zone does to its eviction, and why remediate will not force it."""
    node = next((n for n in report.nodes if n.name == p.node), None)
    zone = next((z for z in report.zones if node is not None and z.zone == node.zone), None)
    lines = []
    if zone is not None and zone.state != facts.ZONE_NORMAL:
        text = f"{zone.zone}: {zone.state}, evictions {zone.eviction}. {zone.explanation}"
        lines.append(_wrap("Zone", text, width=width))
    if report.brake is not None and p.node_failed:
        lines.append(_wrap("Wide failure", brakes.refusal(report.brake), width=width))
    return lines


def explain_pod(
    p: PodFinding, now: datetime, width: int | None = None, report: Report | None = None
) -> str:
    p, report = escaped((p, report))
    lines = [
        f"Pod {p.namespace}/{p.name} on node {p.node or '(none)'}",
        _wrap("kubectl shows", f"{p.kubectl_status} (READY {p.ready})", width=width),
        _wrap("What it means", p.meaning, width=width),
        _wrap("Owner", describe_owners(p.owner_chain) + f" [{p.controller}]", width=width),
        _wrap("Why it is stuck", p.explanation, width=width),
        _wrap("Replacement", p.replacement.summary, width=width),
    ]
    if p.timeline:
        lines.append(_wrap("Timeline", p.timeline, width=width))
    for note in p.storage:
        lines.append(_wrap("Storage", note, width=width))
    if p.if_node_returns:
        lines.append(_wrap("If the node returns", p.if_node_returns, width=width))
    if report is not None:
        lines += _wide_failure(p, report, width)
    action = p.action
    until = f" (until {format_time(action.until)})" if action.until else ""
    lines.append(
        _wrap(
            "Suggested", f"{action.code}{until}: {action.summary} {risk_label(action)}", width=width
        )
    )
    for cmd in (action.remediate, action.kubectl):
        if cmd:
            lines += fit.command(f"    $ {cmd}", width)
    lines.append(_wrap("Evidence", "; ".join(p.evidence), width=width))
    return "\n".join(lines) + "\n"


def explain_node(n: NodeFinding, report: Report, width: int | None = None) -> str:
    n, report = escaped((n, report))
    zone = next((z for z in report.zones if z.zone == n.zone), None)
    lines = [
        f"Node {n.name} ({n.status}"
        + (f" for {duration(n.not_ready_seconds)}" if n.not_ready_seconds is not None else "")
        + ")"
    ]
    if n.ready:
        lines.append(
            _wrap(
                "Ready condition",
                f"{n.ready.status}, reason {n.ready.reason}: "
                f"{n.ready.message}; last heartbeat "
                + (format_time(n.ready.last_heartbeat) if n.ready.last_heartbeat else "-"),
                width=width,
            )
        )
    lines.append(
        _wrap(
            "Lease", f"renewed {_lease(n)}" if n.lease_renewed else "not read / none", width=width
        )
    )
    lines.append(
        _wrap("Cause", f"{n.cause.summary} (confidence {n.cause.confidence})", width=width)
    )
    for ev in n.cause.evidence:
        lines.append(f"    - {ev}")
    for t in n.taints:
        added = f" since {format_time(t.time_added)}" if t.time_added else ""
        lines.append(
            _wrap(
                "Taint", f"{t.key}{'=' + t.value if t.value else ''}:{t.effect}{added}", width=width
            )
        )
    for c in n.conditions:
        if c.problem or c.type not in (
            "MemoryPressure",
            "DiskPressure",
            "PIDPressure",
            "NetworkUnavailable",
        ):
            tag = "problem" if c.problem else "informational"
            lines.append(
                _wrap(
                    "Condition", f"{c.type}={c.status} ({tag}) {c.reason} {c.message}", width=width
                )
            )
    if zone:
        lines.append(
            _wrap(
                "Zone",
                f"{zone.zone}: {zone.state}, evictions {zone.eviction}. {zone.explanation}",
                width=width,
            )
        )
    for volume in n.volumes_attached:
        lines.append(_wrap("Volume still attached", volume, width=width))
    if n.shutdown_evidence:
        lines.append(_wrap("Shutdown evidence", "; ".join(n.shutdown_evidence), width=width))
    else:
        lines.append(
            _wrap(
                "Shutdown evidence",
                "none: the API cannot tell a dead machine from a "
                "dead kubelet or a network partition. Check the machine before forcing "
                "anything.",
                width=width,
            )
        )
    for cov in n.automation:
        lines.append(_wrap("Automation", f"[{cov.state}] {cov.summary}"))
    pods = [p for p in report.pods if p.node == n.name]
    lines.append(
        _wrap(
            "Pods", f"{plural(n.pod_count, 'pod')} bound; {len(pods)} listed as stuck", width=width
        )
    )
    if n.action:
        lines.append(_wrap("Suggested", f"{n.action.summary} {risk_label(n.action)}", width=width))
        for cmd in (n.action.remediate, n.action.kubectl):
            if cmd:
                lines += fit.command(f"    $ {cmd}", width)
    return "\n".join(lines) + "\n"


def plan_document(plan: Any, summary: dict[str, int]) -> dict[str, Any]:
    """The saved form of a plan (also what `remediate -o json` prints for a dry run): its data
    with the digest of what it decides (planfile.digest)."""
    from kubectl_nodefail.remediate import planfile

    data = plan_data(plan, False, summary)
    data["digest"] = planfile.digest(plan)
    return data


def plan_data(
    plan: Any, confirmed: bool, summary: dict[str, int], interrupted: bool = False
) -> dict[str, Any]:
    data = {
        "apiVersion": API_VERSION,
        "kind": "RemediationResult" if confirmed else "RemediationPlan",
        "confirmed": confirmed,
        "summary": summary,
        **to_data(plan),
    }
    if confirmed:
        data["interrupted"] = interrupted
    return data


# results of steps whose request was sent (unconfirmed: accepted, its effect not seen)
CHANGED = ("done", "unconfirmed", "failed", "interrupted")


def _plan_head(plan: Any, confirmed: bool, interrupted: bool) -> str:
    """The first line: what ran, or what --confirm would run."""
    from kubectl_nodefail.remediate.plan import MUTATING

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
    from kubectl_nodefail.remediate.plan import attestation_line

    lines += [attestation_line(plan, record) for record in plan.attestations]
    unrecorded = [n for n in plan.attested if n not in {a.node for a in plan.attestations}]
    if unrecorded:
        lines.append(f"Shutdown attested by the operator for: {', '.join(unrecorded)}")
    lines += [f"REFUSED: {r}" for r in plan.refusals]
    out = [wrapped for line in lines for wrapped in fit.prose(line, width)]
    if not plan.steps:
        out.append("Nothing to do: no failed node (or stale out-of-service taint) in scope.")
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


# The outage view (outage.is_outage): one terminal screen whatever the size of the failure.
OUTAGE_LINES = 60
OUTAGE_WIDTH = 118
OUTAGE_NODE_ROWS = 8
OUTAGE_ACTIONS = 2


def _lines(text: str, width: int, subsequent_indent: str = "") -> list[str]:
    """Wrapped at spaces only: names (node-1, out-of-service) are never cut at a hyphen."""
    return textwrap.wrap(
        text,
        width=width,
        subsequent_indent=subsequent_indent,
        break_on_hyphens=False,
        break_long_words=False,
    )


OUTAGE_NODE_COLUMNS = [
    fit.Col("ZONE", cuts=((2, 16), (3, 10)), middle=True),
    fit.Col("CAUSE", cuts=((1, 12),)),
    fit.Col("NODES", right=True),
    fit.Col("STUCK PODS", right=True),
    fit.Col("OLDEST"),
    fit.Col("EVICTIONS (ZONE STATE)", cuts=((1, 10),)),
]
OUTAGE_OWNER_COLUMNS = [
    fit.Col("NAMESPACE", cuts=((2, 10),), middle=True),
    fit.Col("OWNER", cuts=((2, 24), (3, 16)), middle=True),
    fit.Col("STUCK", right=True),
    fit.Col("SERVING"),
    fit.Col("BLOCKED"),
    fit.Col("VOLUME"),
    fit.Col("NEXT", cuts=((1, 12),)),
]


def outage_table(report: Report, view: outage.Outage, width: int | None = None) -> str:
    """What the on-call engineer decides on, in at most OUTAGE_LINES lines: failed nodes by
    zone and cause, the workloads hit by owner (blocked StatefulSets and volumes first), the
    first suggestions with a command each. Every row is in -o wide, --explain and -o json.
    Prose is wrapped at OUTAGE_WIDTH or the terminal's `width` if narrower; the tables are
    fitted to `width` (fit.table)."""
    report, view = escaped((report, view))
    c = summary.counts(report)
    w = min(OUTAGE_WIDTH, width) if width else OUTAGE_WIDTH
    head = _lines(headline(report), width=w, subsequent_indent="  ")
    head += [
        line
        for note in report.cluster
        for line in _lines(f"!! {note}", width=w, subsequent_indent="   ")
    ]
    nodes = _outage_nodes(report, view, w, width)
    actions = _outage_actions(view, w, width)
    notes = [line for g in report.gaps[:2] for line in _lines(f"note: {g}", w, "  ")]
    if len(report.gaps) > 2:
        notes.append(f"note: {len(report.gaps) - 2} more notes: -o wide")
    tail = [
        "",
        *_lines(
            f"This is the outage view ({c.nodes_not_ready} nodes not Ready, "
            f"{plural(len(report.pods), 'stuck pod')}). Every node and pod, one row each: -o wide;",
            w,
        ),
        *_lines(
            "one of them in full: --explain NAME (a node or namespace/pod); all of it: -o json.", w
        ),
    ]
    used = len(head) + len(nodes) + len(actions) + len(notes) + len(tail) + 1  # + blank line
    owners = _outage_owners(report, view, OUTAGE_LINES - used, w, width)
    return "\n".join([*head, *nodes, "", *owners, *actions, *notes, *tail]) + "\n"


def _outage_nodes(report: Report, view: outage.Outage, w: int, width: int | None) -> list[str]:
    groups = view.node_groups
    failed = sum(len(g.nodes) for g in groups)
    zones = len({g.zone for g in groups})
    shown = groups[:OUTAGE_NODE_ROWS]
    rows = [
        [
            g.zone,
            g.cause,
            len(g.nodes),
            g.pods,
            duration(g.oldest_seconds) if g.oldest_seconds is not None else "-",
            f"{g.eviction} ({g.zone_state})" if g.eviction else "-",
        ]
        for g in shown
    ]
    table_text = fit.table(OUTAGE_NODE_COLUMNS, rows, width)
    out = [
        "",
        *_lines(
            f"NODES: {plural(failed, 'node')} listed in {plural(zones, 'zone')}, by zone and "
            "cause (OLDEST: not Ready the longest)",
            w,
        ),
        *table_text.splitlines(),
    ]
    rest = groups[len(shown) :]
    if rest:
        out += _lines(
            f"... and {plural(len(rest), 'more group')} "
            f"({plural(sum(len(g.nodes) for g in rest), 'node')}): -o wide",
            w,
        )
    return out


def _next_words(steps: dict[str, int]) -> str:
    ranked = sorted(steps.items(), key=lambda kv: (kv[0] != "BLOCKED", -kv[1], kv[0]))
    words = "; ".join(f"{step} {n}" for step, n in ranked[:2])
    return words + ("; ..." if len(ranked) > 2 else "")


def _outage_owners(
    report: Report, view: outage.Outage, budget: int, w: int, width: int | None
) -> list[str]:
    """The owners hit, as many rows as `budget` lines allow (title, header and a 'more' line
    included); blocked StatefulSets and volumes come first, so they are shown first."""
    groups = view.owners
    title = [
        *_lines(
            f"WORKLOADS: {plural(len(report.pods), 'stuck pod')} of "
            f"{plural(len(groups), 'owner')}, blocked StatefulSets and volumes first",
            w,
        ),
        *_lines("(SERVING: its pods Ready on Ready nodes / replicas wanted)", w),
    ]
    room = max(budget - len(title) - 2, 1)  # the title, the header, the 'more' line
    shown, named = (groups, []) if len(groups) <= room + 1 else _owner_rows(groups, room, w)
    rows = [
        [
            g.namespace or "-",
            g.owner,
            g.stuck,
            f"{g.ready}/{g.wanted}" if g.ready is not None and g.wanted is not None else "-",
            g.blocked + 0 or "-",
            g.volumes + 0 or "-",
            _next_words(g.next_steps),
        ]
        for g in shown
    ]
    table_text = fit.table(OUTAGE_OWNER_COLUMNS, rows, width)
    out = [*title, *table_text.splitlines()]
    out += named
    rest = groups[len(shown) :]
    if rest:
        out += _lines(
            f"... and {plural(len(rest), 'more owner')} "
            f"({plural(sum(g.stuck for g in rest), 'stuck pod')}, "
            f"{sum(g.blocked for g in rest)} blocked): -o wide",
            w,
        )
    return out


def _owner_rows(
    groups: list[outage.OwnerGroup], room: int, w: int = OUTAGE_WIDTH
) -> tuple[list[outage.OwnerGroup], list[str]]:
    """As many owner rows as fit in `room` lines with every blocked StatefulSet named: those
    without a row of their own are named in lines below the table."""
    blocked = [g for g in groups if g.statefulset and g.blocked]
    named: list[str] = []
    for rows in range(room, 0, -1):
        rest = [f"{g.namespace}/{g.owner.partition('/')[2]}" for g in blocked[rows:]]
        named = (
            _lines(
                f"blocked StatefulSets too ({len(rest)}): " + ", ".join(rest),
                width=w,
                subsequent_indent="  ",
            )
            if rest
            else []
        )
        if rows + len(named) <= room:
            return groups[:rows], named
    return groups[:1], named


def printable(command: str) -> str:
    """A suggested command as the outage view may print it: never --confirm, never an attestation
    filled in with a real node name (a placeholder in <...> stays); without them remediate only
    prints its plan."""
    words = command.split()
    out: list[str] = []
    skip = False
    for i, word in enumerate(words):
        if skip:
            skip = False
            continue
        if word == "--confirm":
            continue
        if word.startswith("--node-shutdown-confirmed"):
            value = word.partition("=")[2] or (words[i + 1] if i + 1 < len(words) else "")
            if value.startswith("<"):
                out.append(word)
                continue
            skip = "=" not in word
            continue
        out.append(word)
    return " ".join(out)


def _left_out(command: str, printed: str) -> str:
    """What printable() removed, said where the command is shown."""
    gone = set(command.split()) - set(printed.split())
    parts = [
        *(
            ["the attestation"]
            if any(w.startswith("--node-shutdown-confirmed") for w in gone)
            else []
        ),
        *(["--confirm"] if "--confirm" in gone else []),
    ]
    if not parts:
        return ""
    return f" ({' and '.join(parts)} left out: it prints the plan)"


def _outage_actions(
    view: outage.Outage, w: int = OUTAGE_WIDTH, width: int | None = None
) -> list[str]:
    groups = view.actions
    shown = groups[:OUTAGE_ACTIONS]
    out = [
        "",
        *_lines(
            f"FIRST ACTIONS ({len(shown)} of {plural(len(groups), 'kind')} suggested; "
            "each node's and pod's own in -o wide)",
            w,
        ),
    ]
    for g in shown:
        whom = ", ".join(
            part
            for part in (
                plural(len(g.nodes), "node") if g.nodes else "",
                plural(len(g.pods), "pod") if g.pods else "",
            )
            if part
        )
        out += _lines(
            f"- {whom}: {g.summary} [risk {g.risk}]",
            width=w,
            subsequent_indent="  ",
        )
        example = (g.nodes or g.pods)[0]
        for cmd in g.commands[:1]:
            text = printable(cmd)
            out += _lines(f"  for {example}{_left_out(cmd, text)}:", w, "    ")
            out += fit.command(f"    $ {text}", width)
    return out
