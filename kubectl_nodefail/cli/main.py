"""`kubectl nodefail`: the command group, the console entry point (`main`). Flags become
options, errors become exit codes (running.py); each command is a module of its own, imported
only when that command is asked for (click's LazyGroup).

Kept thin and light: `kubectl nodefail --help` imports click, the shared modules of the command
line and no command (it is measured against `python3 -c pass`); a command's --help imports its
own module, and what only its run needs (the kubernetes client above all, but also many-cluster
runs, the analysis) is imported when it runs.
"""

from __future__ import annotations

import gc
import importlib
from collections.abc import Iterator, MutableMapping
from gettext import gettext as _
from typing import Any

import click

from kubectl_nodefail.cli import completion
from kubectl_nodefail.cli.helptext import EXIT_CODES_HELP, SUMMARIES
from kubectl_nodefail.cli.running import with_output_checked
from kubectl_nodefail.cli.usage import NodefailCommand, OneLineUsageError, program_name
from kubectl_nodefail.term import closedpipe

# The commands: where each is defined ("module:attribute"), imported when it is asked for.
COMMANDS = {
    "completion": "kubectl_nodefail.cli.completion_command:completion_command",
    "diagnose": "kubectl_nodefail.cli.diagnose:diagnose",
    "dump": "kubectl_nodefail.cli.dump:dump",
    "rbac": "kubectl_nodefail.cli.rbac:rbac_command",
    "remediate": "kubectl_nodefail.cli.remediate:remediate",
    "version": "kubectl_nodefail.cli.version:version",
}

# The cyclic garbage collector's thresholds (CPython's default: 700, 10, 10). A big outage's
# snapshot and diagnosis are millions of small containers, next to none in a cycle; at the
# default, collections were a third of the analysis of 20,000 stuck pods (docs/scale.md).
GC_THRESHOLD = (100_000, 10, 10)


class LazyCommands(MutableMapping[str, click.Command]):
    """A group's commands by name, each imported from its module ("module:attribute") the first
    time it is looked up; the names alone (iterating, `in`) import nothing."""

    def __init__(self, where: dict[str, str]) -> None:
        self.where = dict(where)
        self.loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self.loaded:
            module, attribute = self.where[name].split(":")
            self.loaded[name] = getattr(importlib.import_module(module), attribute)
        return self.loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self.where.setdefault(name, "")
        self.loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self.where[name]
        self.loaded.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self.where

    def __iter__(self) -> Iterator[str]:
        return iter(self.where)

    def __len__(self) -> int:
        return len(self.where)


class LazyGroup(click.Group):
    """click's LazyGroup: `list_commands` gives the names of `commands` (a LazyCommands) and
    `get_command` imports the one asked for, so that a command's --help imports that command
    only. The group's own --help lists the commands with their SUMMARIES: none is imported."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self.commands)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """As click's, the rows from SUMMARIES (each command's short_help, never cut)."""
        rows = [(name, SUMMARIES[name]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section(_("Commands")):
                formatter.write_dl(rows)


class PluginGroup(LazyGroup):
    """The command group, named as kubectl users type it; completion's variable fixed (click
    would derive it from the program name, which has a space)."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        gc.set_threshold(*GC_THRESHOLD)
        closedpipe.install()  # `| head`: the rest dropped, the command's own exit code
        kwargs.setdefault("prog_name", program_name())
        kwargs.setdefault("complete_var", completion.COMPLETE_VAR)
        try:
            return super().main(*args, **kwargs)
        except SystemExit as end:
            code = end.code if isinstance(end.code, int) else 0 if end.code is None else 1
            final = with_output_checked(code)
            if final == code:
                raise
            raise SystemExit(final) from end

    # A usage error of any command (an unknown option or command, a missing or invalid value,
    # options that exclude each other) leaves the group as one line: the two places click
    # raises them from are the group's own arguments and everything under invoke.
    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except click.UsageError as exc:
            raise OneLineUsageError(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            raise OneLineUsageError(exc) from None


PluginGroup.command_class = NodefailCommand


def _print_version(ctx: click.Context, value: bool) -> None:
    """--version: the same text as `version --client`, one format for both."""
    if not value or ctx.resilient_parsing:
        return
    # the version command's module, as the group imports it: only when asked for
    from kubectl_nodefail.cli.version import describe

    click.echo(describe(None).text(), nl=False)
    ctx.exit()


@click.group(
    cls=PluginGroup,
    commands=LazyCommands(COMMANDS),
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=EXIT_CODES_HELP,
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=lambda ctx, param, value: _print_version(ctx, value),
    help="Print the plugin's version (as `version --client` does) and exit.",
)
def main() -> None:
    """Explain failed nodes and stuck pods, and fix them safely.

    \b
      kubectl nodefail diagnose            what is wrong, why, what happens next
      kubectl nodefail remediate NODE      the safe plan (changes nothing)
      kubectl nodefail remediate NODE --confirm   carry the plan out
      kubectl nodefail completion bash     shell completion (see its --help)
    """
