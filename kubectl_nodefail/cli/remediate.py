"""`kubectl nodefail remediate`: its options, help and examples. What it does when it runs is
remediate_run.py (and zone.py for --zone and --selector), imported only then: `remediate --help`
loads none of the planner."""

from __future__ import annotations

from typing import Any

import click

from kubectl_nodefail.cli import completion
from kubectl_nodefail.cli.flags import OUTPUTS, connection_options
from kubectl_nodefail.cli.helptext import REMEDIATE_EXAMPLES, STRATEGY_HELP, SUMMARIES
from kubectl_nodefail.cli.running import handle_errors
from kubectl_nodefail.cli.usage import NodefailCommand
from kubectl_nodefail.common import exitcodes
from kubectl_nodefail.term import color


@click.command(
    cls=NodefailCommand,
    short_help=SUMMARIES["remediate"],
    epilog=REMEDIATE_EXAMPLES + STRATEGY_HELP + exitcodes.help_text("remediate"),
)
@click.argument("nodes", nargs=-1, metavar="[NODE]...", shell_complete=completion.nodes)
@connection_options
@click.option("-o", "--output", type=click.Choice(OUTPUTS), default="table", show_default=True)
@click.option("--confirm", is_flag=True, help="Execute the plan. Without it nothing is changed.")
@click.option(
    "--strategy",
    type=click.Choice(["auto", "out-of-service", "force-delete", "delete-node"]),
    default="auto",
    show_default=True,
    help="What a confirmed-down node gets (see below).",
)
@click.option(
    "--node-shutdown-confirmed",
    "attested",
    multiple=True,
    metavar="NODE",
    help="Attest that NODE's machine is powered off (repeatable; one per node). "
    "Unlocks the destructive steps for that node only. With --plan-in: type again the "
    "attestation the plan carries, or it does not count.",
)
@click.option(
    "--max-nodes",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Act on at most this many failed nodes in one run.",
)
@click.option(
    "--allow-disruption",
    is_flag=True,
    help="Act even while a zone is disrupted or many nodes are down (usually the "
    "network or control plane: be sure first).",
)
@click.option(
    "--despite-automation",
    is_flag=True,
    help="Act even on a node that its remediation automation (MachineHealthCheck, "
    "NodeHealthCheck, Karpenter, cluster-autoscaler) remediates now or within "
    "--wait-timeout: you race it.",
)
@click.option(
    "--log-file",
    type=click.Path(),  # checked by outpath.check_writable, in one line
    metavar="PATH",
    help="Append a JSON line when each change starts and one with its result "
    "(checked writable before anything is done).",
)
@click.option(
    "--wait-timeout",
    type=float,
    default=120.0,
    show_default=True,
    metavar="SECONDS",
    help="How long to watch pods and volumes go after an out-of-service taint.",
)
@click.option("--from-file", metavar="PATH", help="Plan from a dump (never executes).")
@click.option(
    "--zone",
    metavar="ZONE",
    help="Plan every failed node of this zone (its topology.kubernetes.io/zone label, or "
    "REGION/ZONE as diagnose shows it), StatefulSets and volumes first; --confirm runs "
    "8 nodes at a time. See docs/outage.md.",
)
@click.option(
    "-l",
    "--selector",
    metavar="SELECTOR",
    help="Plan every failed node matching this label selector (a rack), as --zone does.",
)
@click.option(
    "--zone-shutdown-confirmed",
    "zone_confirmed",
    metavar="ZONE",
    help="Attest that the machines of --zone ZONE are powered off (type the zone again). "
    "Covers its not-Ready nodes whose lease is stale; never a Ready node or one whose lease "
    "is renewed.",
)
@click.option(
    "--selector-shutdown-confirmed",
    "selector_confirmed",
    metavar="SELECTOR",
    help="As --zone-shutdown-confirmed, for the nodes of --selector (type it again).",
)
@click.option(
    "--plan-out",
    metavar="PATH",
    type=click.Path(),  # checked by outpath.check_writable, in one line
    help="Also save the plan as JSON, for review and a later --plan-in --confirm.",
)
@click.option(
    "--plan-in",
    metavar="PATH",
    type=click.Path(dir_okay=False),
    help="Narrow to this saved plan: run (with --confirm) only its steps that a plan "
    "computed from the live cluster now allows too. Refused (exit 15) for another context, "
    "server or cluster, or a node recreated since.",
)
@color.no_color_option
@handle_errors
def remediate(**given: Any) -> int:
    """Plan the safe fix for failed nodes; carry it out with --confirm.

    \b
    Every step states why, its evidence and its gate. Destructive steps need evidence that the
    machine is really down: --node-shutdown-confirmed NODE, or the cloud provider's shutdown
    taint. Without it, StatefulSet pods and pods holding RWO volumes are never force-deleted.
    Right before each step the node, its lease and the pod are read again; anything that moved
    since the plan (node back, lease renewed, pod recreated or bound elsewhere) is skipped,
    never deleted. DaemonSet and mirror pods are never acted on; Ready nodes only lose a stale
    out-of-service taint; pods held by a finalizer are named, never promised released.
    A saved plan (--plan-in) only narrows: the live plan decides. One run at a time per node
    (a lock annotation). SIGINT/SIGTERM stop after the request in flight (exit 6).
    """
    # the run, imported when the command runs: its --help loads none of the planner
    from kubectl_nodefail.cli import remediate_run

    return remediate_run.remediate(**given)
