"""`kubectl nodefail dump`: its options, help and examples. What it does when it runs is
dump_run.py, imported only then: `dump --help` loads none of the cluster reader."""

from __future__ import annotations

from typing import Any

import click

from kubectl_nodefail.cli import completion
from kubectl_nodefail.cli.flags import connection_options
from kubectl_nodefail.cli.helptext import DUMP_EXAMPLES, SUMMARIES
from kubectl_nodefail.cli.running import handle_errors
from kubectl_nodefail.cli.usage import NodefailCommand
from kubectl_nodefail.common import exitcodes


@click.command(
    cls=NodefailCommand,
    short_help=SUMMARIES["dump"],
    epilog=DUMP_EXAMPLES + exitcodes.help_text("dump"),
)
@click.argument("nodes", nargs=-1, metavar="[NODE]...", shell_complete=completion.nodes)
@connection_options
@click.option(
    "-n",
    "--namespace",
    "namespaces",
    multiple=True,
    metavar="NS",
    shell_complete=completion.namespaces,
)
@click.option(
    "-f",
    "--file",
    "out",
    type=click.Path(),
    default="-",
    show_default=True,
    help="Where to write the dump ('-' = stdout); a file is made readable by its owner only.",
)
@click.option(
    "--no-redact",
    is_flag=True,
    help="Keep whole objects (env values, args, commands, pod templates, every annotation): "
    "secrets included.",
)
@handle_errors
def dump(**given: Any) -> int:
    """Write what diagnose reads as one JSON file, for offline analysis (--from-file).

    Each object is cut to the fields the analysis reads: container env values, args and
    commands, pod templates and the annotations it does not read are left out (the dump's
    notes say so), so that a dump can be attached to a ticket. --no-redact keeps whole objects.
    """
    # the run, imported when the command runs: its --help loads none of the cluster reader
    from kubectl_nodefail.cli import dump_run

    return dump_run.dump(**given)
