"""`kubectl nodefail completion SHELL`: print the shell completion script (completion.py makes
it, and completes the values as the shell asks)."""

from __future__ import annotations

import click

from kubectl_nodefail.cli import completion
from kubectl_nodefail.cli.helptext import COMPLETION_HELP, SUMMARIES
from kubectl_nodefail.cli.usage import NodefailCommand
from kubectl_nodefail.common import exitcodes


@click.command(
    "completion",
    cls=NodefailCommand,
    help=COMPLETION_HELP,
    short_help=SUMMARIES["completion"],
    epilog=exitcodes.help_text("completion"),
)
@click.argument("shell", type=click.Choice(completion.SHELLS))
def completion_command(shell: str) -> None:
    group = click.get_current_context().find_root().command  # the whole command line
    click.echo(completion.script(group, shell), nl=False)
