"""The outage view (outage.is_outage): one terminal screen whatever the size of the failure.

Failed nodes by zone and cause, the workloads hit by owner (blocked StatefulSets and volumes
first), and the first suggestions with a command each (shown without --confirm or a filled-in
attestation: `printable`). The text is escaped (printable.clean) before any width is measured.
"""

from __future__ import annotations

import dataclasses

from kubectl_nodefail.analysis import outage, summary
from kubectl_nodefail.analysis.findings import Report
from kubectl_nodefail.analysis.text import duration, plural
from kubectl_nodefail.render.words import headline
from kubectl_nodefail.term import fit
from kubectl_nodefail.term.printable import clean as escaped

# The outage view (outage.is_outage): one terminal screen whatever the size of the failure.
OUTAGE_LINES = 60
OUTAGE_WIDTH = 118
OUTAGE_NODE_ROWS = 8
OUTAGE_ACTIONS = 2
# The report's fields this view prints as text; its findings (nodes, pods) it only counts, by
# their codes and categories (the headline's counts): they are not escaped here (at 5,000
# nodes that walk was most of the view's time), whatever is left is (color.style_for_terminal)
PRINTED = ("source", "server_version", "scope_nodes", "scope_namespaces", "cluster", "gaps")


def _lines(text: str, width: int, subsequent_indent: str = "") -> list[str]:
    """Wrapped at spaces only: names (node-1, out-of-service) are never cut at a hyphen; a word
    longer than a line (a dump's path) is cut in its middle (fit.prose)."""
    return fit.prose(text, width, indent=subsequent_indent) if text.strip() else []


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
    report = dataclasses.replace(report, **escaped({f: getattr(report, f) for f in PRINTED}))
    view = escaped(view)
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
