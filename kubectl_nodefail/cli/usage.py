"""How a command line is read and its usage told: the program named as kubectl users type it,
every usage error as one line (exit 2), an unknown option that names a positional argument
answered with how to type it, and a command's --help with kubectl's connection flags in a
section of their own (NodefailCommand, the class of every command)."""

from __future__ import annotations

import os
import shlex
from typing import Any

import click

from kubectl_nodefail.cli.flags import CONNECTION_PARAMS
from kubectl_nodefail.common.errors import closest, one_line
from kubectl_nodefail.term import printable


def program_name(env: dict[str, str] | None = None) -> str:
    """How usage lines name the command: `kubectl nodefail`, as kubectl users type it.
    kubectl sets KUBECTL_PLUGINS_CALLER to its own path when it runs a plugin; a differently
    named caller (an `oc` or a renamed kubectl) is named instead."""
    caller = (os.environ if env is None else env).get("KUBECTL_PLUGINS_CALLER", "")
    base = os.path.basename(caller) if caller else ""
    return f"{base or 'kubectl'} nodefail"


class OneLineUsageError(click.ClickException):
    """A usage error as one line on stderr, exit 2, like the tool's other errors: `error:
    MESSAGE (see 'kubectl nodefail COMMAND --help')`. click's own is four lines (the usage, a
    hint, a blank line, then the error)."""

    exit_code = 2

    def __init__(self, error: click.UsageError) -> None:
        super().__init__(" ".join(one_line(error.format_message()).split()))
        self.command_path = error.ctx.command_path if error.ctx is not None else program_name()

    def show(self, file: Any = None) -> None:
        line = f"error: {self.message} (see '{self.command_path} --help')"
        click.echo(printable.text(line), file=file, err=True)


class NodefailCommand(click.Command):
    """A command whose --help lists kubectl's connection flags in their own section, as
    `kubectl options` does."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, list(args))
        except click.NoSuchOption as exc:
            said = argument_as_option(self, ctx, exc.option_name, args)
            if said is None:
                raise
            raise click.NoSuchOption(exc.option_name, said, [], ctx) from None
        except click.UsageError as exc:
            if exc.ctx is None:  # click's parser leaves it out (a missing value): name the command
                exc.ctx = ctx
            raise

    def get_short_help_str(self, limit: int = 45) -> str:
        """The summary in the top-level --help: never cut with '...' (click cuts a summary
        it makes to fit); every command sets a short_help that fits 80 columns."""
        return super().get_short_help_str(limit=1 << 16)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        own: list[tuple[str, str]] = []
        connection: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None:
                (connection if param.name in CONNECTION_PARAMS else own).append(record)
        for title, rows in (("Options", own), ("Connection options (as kubectl's)", connection)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def _stem(word: str) -> str:
    return word.strip("-").lower().replace("-", "_").rstrip("s")


def argument_as_option(
    command: click.Command, ctx: click.Context, option: str, args: list[str]
) -> str | None:
    """The message for an unknown option that names one of the command's positional
    arguments (`diagnose --node worker-1`: NODE is typed bare), or None. click would suggest
    whichever option spells closest (`--demo`); this says how the argument is given, with the
    value typed, and nothing else of the command line."""
    arguments = {_stem(p.name or ""): p for p in command.params if isinstance(p, click.Argument)}
    meant = closest(_stem(option), arguments)
    if meant is None:
        return None
    value = ""
    for i, word in enumerate(args):
        if word.startswith(option + "="):
            value = word.split("=", 1)[1]
            break
        if word == option:
            following = args[i + 1] if i + 1 < len(args) else ""
            value = "" if following.startswith("-") else following
            break
    name = (arguments[meant].name or "").upper().rstrip("S")
    example = f"{ctx.command_path} {shlex.quote(value) if value else name}"
    return one_line(
        f"No such option '{option}': {name} is an argument, typed without a flag: {example}"
    )
