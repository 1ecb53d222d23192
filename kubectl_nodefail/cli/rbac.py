"""`kubectl nodefail rbac [COMMAND]`: print the least-privilege ClusterRoles (the roles package
ships them) as YAML; nothing is read from or sent to the cluster."""

from __future__ import annotations

import click

from kubectl_nodefail import roles
from kubectl_nodefail.cli.helptext import RBAC_EXAMPLES, SUMMARIES
from kubectl_nodefail.cli.usage import NodefailCommand
from kubectl_nodefail.common import exitcodes


@click.command(
    "rbac",
    cls=NodefailCommand,
    short_help=SUMMARIES["rbac"],
    epilog=RBAC_EXAMPLES + exitcodes.help_text("rbac"),
)
@click.argument("command", required=False, type=click.Choice(["diagnose", "remediate"]))
def rbac_command(command: str | None) -> None:
    """Print the ClusterRoles a user of COMMAND needs, as YAML (default: every role).

    diagnose, dump and remediate's plan need kubectl-nodefail-diagnose (read-only);
    remediate --confirm needs it and kubectl-nodefail-remediate (the writes its steps make).
    Nothing is read from or sent to the cluster: apply the output, then bind the roles.
    """
    click.echo(roles.for_command(command), nl=False)
