"""The words the text views share, so they say them the same way: the headline over a diagnosis
(the table and the outage view), a node's lease age and an action's risk label (the table and
--explain). Here rather than in table.py, which shows the outage view: no import circle.
"""

from __future__ import annotations

from kubectl_nodefail.analysis import summary
from kubectl_nodefail.analysis.findings import Action, NodeFinding, Report
from kubectl_nodefail.analysis.nodes import nothing_marks
from kubectl_nodefail.analysis.text import ago, plural
from kubectl_nodefail.snapshot.model import format_time

# The headline's words for each cause of a Ready node whose kubelet stopped renewing its lease.
_SILENT_READY = (
    ("lease-not-renewed", " (NotReady is coming)"),
    ("lease-overdue", " and not marked NotReady in time"),
    (
        "no-controller-leader",
        ", and kube-controller-manager has no leader (nothing marks them NotReady)",
    ),
)


def _lease(node: NodeFinding) -> str:
    return ago(node.lease_age_seconds) if node.lease_age_seconds is not None else "-"


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
        orphans = [p for p in report.pods if p.category == summary.ON_DELETED]
        leaderless = any(summary.leaderless(p) for p in orphans)
        over = sum(1 for p in orphans if summary.passed_over(p))
        waits.append(
            f"{c.on_deleted_nodes} bound to a deleted node: "
            + (
                f"PodGC has not removed {'it' if over == 1 else 'them'} long after it"
                if over == len(orphans)
                else "PodGC removes them"
                + (" once kube-controller-manager has a leader" if leaderless else "")
                + (f" ({over} long overdue)" if over else "")
            )
        )
    if waits:
        text += f" ({'; '.join(waits)})"
    for code, tail in _SILENT_READY:  # Ready nodes whose kubelet stopped renewing its lease
        silent = sum(1 for n in report.nodes if n.cause.code == code)
        if any(n.cause.code == code and nothing_marks(n.cause) for n in report.nodes):
            tail = " (nothing marks them NotReady: the node lifecycle controller does not run)"
        if silent:
            text += (
                f"; {silent} Ready {'node' if silent == 1 else 'nodes'} not renewing "
                f"{'its' if silent == 1 else 'their'} lease{tail}"
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


def risk_label(action: Action) -> str:
    """`[risk LEVEL]`, and for a step an attestation unlocks, what it risks if that is wrong."""
    if action.if_still_running:
        return f"[risk {action.risk} if the machine still runs: {action.if_still_running}]"
    return f"[risk {action.risk}]"
