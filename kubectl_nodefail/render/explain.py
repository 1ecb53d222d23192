"""`--explain NAME`: one node or one pod in prose, every line of the reasoning behind its row
(its conditions, lease, taints, zone, volumes, owner, timeline and the suggested step).

The text is escaped (printable.clean) before it is wrapped.
"""

from __future__ import annotations

import textwrap
from datetime import datetime

from kubectl_nodefail.analysis import brake as brakes
from kubectl_nodefail.analysis import facts
from kubectl_nodefail.analysis.findings import NodeFinding, PodFinding, Report
from kubectl_nodefail.analysis.owners import describe as describe_owners
from kubectl_nodefail.analysis.text import duration, plural
from kubectl_nodefail.render.words import _lease, risk_label
from kubectl_nodefail.snapshot.model import format_time
from kubectl_nodefail.term import fit
from kubectl_nodefail.term.printable import clean as escaped

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
