"""`kubectl nodefail diagnose`: its options, help and examples. What it does when it runs is
diagnose_run.py, imported only then: `diagnose --help` loads none of the analysis."""

from __future__ import annotations

from typing import Any

import click

from kubectl_nodefail.cli import completion
from kubectl_nodefail.cli.flags import OUTPUTS, connection_options, repeatable_context
from kubectl_nodefail.cli.helptext import DIAGNOSE_EXAMPLES, SUMMARIES
from kubectl_nodefail.cli.running import handle_errors
from kubectl_nodefail.cli.usage import NodefailCommand
from kubectl_nodefail.common import exitcodes
from kubectl_nodefail.term import color


@click.command(
    cls=NodefailCommand,
    short_help=SUMMARIES["diagnose"],
    epilog=DIAGNOSE_EXAMPLES + exitcodes.help_text("diagnose"),
)
@click.argument("nodes", nargs=-1, metavar="[NODE]...", shell_complete=completion.nodes)
@repeatable_context
@connection_options
@click.option(
    "-n",
    "--namespace",
    "namespaces",
    multiple=True,
    metavar="NS",
    help="Only pods in this namespace (repeatable). Nodes are always examined.",
    shell_complete=completion.namespaces,
)
@click.option("-A", "--all-namespaces", is_flag=True, help="Pods of every namespace (default).")
@click.option(
    "-o",
    "--output",
    type=click.Choice([*OUTPUTS, "markdown"]),
    default="table",
    show_default=True,
    help="markdown: the diagnosis and each failed node's timeline, for an incident channel.",
)
@click.option(
    "--from-file",
    metavar="PATH",
    help="Analyse a dump (`kubectl nodefail dump`, or `kubectl get ... -o json`).",
)
@click.option(
    "--demo",
    is_flag=True,
    help="Analyse the bundled snapshot recorded from a real "
    "control plane (a StatefulSet and friends on a dead node).",
)
@click.option(
    "--explain",
    "explain",
    metavar="NAME",
    help="Print the full reasoning for one node, or one pod as NAMESPACE/NAME.",
    shell_complete=completion.explain_targets,
)
@click.option(
    "-w",
    "--watch",
    is_flag=True,
    help="Follow the incident: the cluster is watched and read again when what the diagnosis "
    "rests on changes (a dump file: read every --interval), shown again on a change (redrawn "
    "in place on a terminal); a server that fails or refuses is retried. Ctrl-C stops: the "
    "last diagnosis's exit code, or the failed read's if none succeeded.",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.5),
    default=2.0,
    show_default=True,
    metavar="SECONDS",
    help="How often --watch moves the screen's times on, and the soonest it reads again "
    "after a change (a dump file, a server that fails, or RBAC without `watch`: how often it "
    "reads).",
)
@color.no_color_option
@handle_errors
def diagnose(**given: Any) -> int:
    """Explain every failed node and every stuck pod, by controller type.

    Lists nodes that are not Ready (or carry a shutdown / out-of-service taint) with their likely
    cause and zone state, and every pod on them or stuck Terminating anywhere: what kubectl shows,
    what it really means, why it is stuck for its controller, its replacement, storage blockers,
    when eviction happens, what happens if the node returns, and the safe fix.

    --explain NODE adds the node's incident timeline (last lease renewal, Ready transition,
    taints, evictions, replacements, volumes, recovery), as JSON too (nodes[].timeline).
    """
    # the run, imported when the command runs: its --help loads none of the analysis
    from kubectl_nodefail.cli import diagnose_run

    return diagnose_run.diagnose(**given)
