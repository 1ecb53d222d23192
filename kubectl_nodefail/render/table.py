"""The diagnose table: every listed node and stuck pod, one row each, fitted to the terminal;
or -o wide, with the taints, readiness, replacements and evidence. A report too big for one
screen is shown as the outage view (outageview.py) instead.

The text is escaped (printable.clean) before any width is measured.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tabulate import tabulate

from kubectl_nodefail.analysis import outage, summary
from kubectl_nodefail.analysis.findings import NodeFinding, PodFinding, Report
from kubectl_nodefail.analysis.text import duration
from kubectl_nodefail.render.outageview import outage_table
from kubectl_nodefail.render.words import _lease, headline, risk_label
from kubectl_nodefail.term import fit
from kubectl_nodefail.term.printable import clean as escaped


def _node_for(node: NodeFinding) -> str:
    return duration(node.not_ready_seconds) if node.not_ready_seconds is not None else "-"


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
        out += ["", _node_table(rows, wide, width)]
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
        out += ["", _pod_table(rows, wide, width)]
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
    widest = max(len(line) for chunk in out for line in chunk.split("\n"))
    if wide and width is not None and widest > width:
        # -o wide is not fitted (its prose wraps inside cells): say so rather than let the
        # terminal fold its rows into ragged blocks unannounced
        out += [
            "",
            *fit.prose(
                f"note: -o wide needs {widest} columns and this terminal has {width}: its rows "
                "wrap. Widen the terminal, or read one object with --explain NAME, or -o json.",
                width,
            ),
        ]
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


def _node_table(rows: list[list[str]], wide: bool, width: int | None) -> str:
    """The node table; narrower than its natural width, without ZONE when every node listed is
    in the same zone (the zone line below names it), before any cell is cut."""
    extra = {5: ["TAINTS", "PODS"]}
    zones = {row[3] for row in rows}
    if wide or width is None or fit.natural(NODE_COLUMNS, rows) <= width or len(zones) > 1:
        return _table(NODE_COLUMNS, rows, wide, width, extra=extra)
    columns = [c for c in NODE_COLUMNS if c.header != "ZONE"]
    return fit.table(columns, [row[:3] + row[4:] for row in rows], width)


def _pod_table(rows: list[list[str]], wide: bool, width: int | None) -> str:
    """The pod table; narrower than its natural width, the narrow view (`_narrow_pods`)."""
    if wide or width is None or fit.natural(POD_COLUMNS, rows) <= width:
        return _table(POD_COLUMNS, rows, wide, width, extra={5: ["READY", "REPLACEMENT"]})
    return _narrow_pods(rows, width)


# kubectl's short names of the owners' kinds (`kubectl api-resources`), for a narrow screen
SHORT_KINDS = {
    **{"Deployment": "deploy", "StatefulSet": "sts", "DaemonSet": "ds", "ReplicaSet": "rs"},
    **{"ReplicationController": "rc", "Job": "job", "CronJob": "cj", "ConfigMap": "cm"},
    **{"Pod": "po", "Node": "no", "Service": "svc", "PersistentVolumeClaim": "pvc"},
}
INDENT = "  "  # a narrow view's rows, under their namespace and node's line
POD_NAME = fit.Col("POD", middle=True)  # cut only as the last resort (below ~60 columns)
NARROW_VIEWS = (  # tried in order: the first that fits whole is shown
    ("OWNER", "STUCK"),
    ("OWNER",),
    ("KIND",),
    (),
)


def _short_owner(owner: str, kind_only: bool) -> str:
    """`StatefulSet/db` as `sts/db` (or `sts`); `(none)` and other words as they are."""
    kind, slash, name = owner.partition("/")
    if not slash:
        return owner
    short = SHORT_KINDS.get(kind, kind.lower())
    return short if kind_only else f"{short}/{name}"


def _narrow_pods(rows: list[list[str]], width: int) -> str:
    """The pods on a screen narrower than their table: each namespace and node a line of its
    own over its pods' rows, and the columns that say least go before a pod name or a NEXT is
    cut: OWNER as kubectl's short kind (`sts/db`), then STUCK, then OWNER's name (`sts`), then
    OWNER (each is in -o wide and --explain). Names are cut only when even POD STATUS NEXT
    ACTION does not fit (about 60 columns)."""
    groups: dict[tuple[str, str], list[list[str]]] = {}
    for name, status, node, owner, stuck, nxt, action in rows:
        namespace, _, pod = name.partition("/")
        groups.setdefault((namespace, node), []).append([pod, status, owner, stuck, nxt, action])
    room = width - len(INDENT)
    for shown in NARROW_VIEWS:
        columns = [POD_NAME, fit.Col("STATUS")]
        columns += [fit.Col("OWNER")] if shown[:1] in (("OWNER",), ("KIND",)) else []
        columns += [fit.Col("STUCK")] if "STUCK" in shown else []
        columns += [fit.Col("NEXT"), fit.Col("ACTION")]
        cells = {
            key: [
                [
                    pod,
                    status,
                    *([_short_owner(owner, shown[0] == "KIND")] if shown else []),
                    *([stuck] if "STUCK" in shown else []),
                    nxt,
                    action,
                ]
                for pod, status, owner, stuck, nxt, action in members
            ]
            for key, members in groups.items()
        }
        every = [row for members in cells.values() for row in members]
        if fit.natural(columns, every) <= room:
            break
    header, *lines = fit.lines(columns, every, room)
    out, at = [INDENT + header], 0
    for (namespace, node), members in cells.items():
        where = (
            "not scheduled" if node == "-" else f"on {node}" if " " in node else f"on node {node}"
        )
        out += fit.prose(f"namespace {namespace}, {where}", width, indent="    ")
        out += [INDENT + line for line in lines[at : at + len(members)]]
        at += len(members)
    return "\n".join(out)


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
    return [f"- {c.text}" for c in report.held_claims]


# -o wide: the prose columns' width (a longer word, such as a taint, keeps its whole width)
_WIDE_LIMITS = {"CAUSE": 40, "ACTION": 30, "REPLACEMENT": 40, "TAINTS": 40}


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
