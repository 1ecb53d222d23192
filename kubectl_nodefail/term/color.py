"""Color and emphasis for the human-readable output, only where a person reads it.

On when stdout is a terminal, unless NO_COLOR is set to anything non-empty (no-color.org),
TERM is "dumb", or `--no-color` was given. Applied after the tables are laid out, so the escape
codes never shift a column; it marks only words whose meaning is fixed (statuses, gates, risks,
the commands to run), and the text without color says exactly the same.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from typing import Any, TextIO

import click

from kubectl_nodefail.term import printable

RESET = "\x1b[0m"
BOLD = "\x1b[1m"
RED = "\x1b[31m"
GREEN = "\x1b[32m"
YELLOW = "\x1b[33m"

# (pattern, style): a word or phrase, never a fragment of a name
RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"(?<![\w-])(NotReady|Unknown)(?![\w-])"), BOLD + RED),
    (re.compile(r"(?<![\w-])(BLOCKED|REFUSED|failed|lost)(?![\w-])"), BOLD + RED),
    (re.compile(r"\[risk (high)[] ]"), RED),
    (re.compile(r"\[risk (medium)[] ]"), YELLOW),
    (re.compile(r"(?<![\w-])(Terminating|Pending|replacement Pending)(?![\w-])"), YELLOW),
    (re.compile(r"(DRY RUN)"), BOLD + YELLOW),
    (re.compile(r"(?<![\w-])(Nothing to do\.|All \d+ nodes Ready)"), GREEN),
    (re.compile(r"(?m)^(\s*\$ .+)$"), BOLD),
    (re.compile(r"(?m)^(SUGGESTED|Plan|Executed)\b"), BOLD),
    # a table's header line: capitals and spaces only, at least two columns
    (re.compile(r"(?m)^( *(?:#  )?[A-Z][A-Z/ ]*[A-Z](?: {2,}[A-Z][A-Z/ ]*[A-Z])+ *)$"), BOLD),
]

_disabled_by_flag = False


def _disable(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    global _disabled_by_flag
    if value:
        _disabled_by_flag = True
    return value


def no_color_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`--no-color` on a command, without a parameter in its signature."""
    return click.option(
        "--no-color",
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=_disable,
        help="No color or emphasis (also NO_COLOR=1; never when output is not a terminal).",
    )(fn)


def enabled(stream: TextIO | None = None, env: dict[str, str] | None = None) -> bool:
    env = dict(os.environ) if env is None else env
    stream = sys.stdout if stream is None else stream
    if _disabled_by_flag or env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, on: bool) -> str:
    """The text with the RULES' styles when `on`; unchanged otherwise."""
    if not on:
        return text
    for pattern, style in RULES:
        text = pattern.sub(lambda m, s=style: _wrap(m, s), text)  # type: ignore[misc]
    return text


def _wrap(match: re.Match[str], style: str) -> str:
    whole, group = match.group(0), match.group(1)
    start = match.start(1) - match.start(0)
    return whole[:start] + style + group + RESET + whole[start + len(group) :]


def style_for_terminal(text: str) -> str:
    """Color for stdout when it is a terminal and color is allowed; first, whatever control
    character is left in the text is escaped (printable.text: the renderers escaped the
    cluster's strings already), so the only escape sequences on stdout are these styles."""
    return paint(printable.text(text), enabled())
