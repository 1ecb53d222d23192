"""Text fitted to a terminal's width: tables one row per object, prose and commands wrapped.

The width comes from `width()`: on a terminal, COLUMNS when set (as shutil reads it), else the
terminal's own size; into a pipe or a file, no width at all (None), as `kubectl get`: a runbook
gets the same full rows whatever terminal started it. With no width nothing is cut or wrapped
here (the prose keeps its own limits in render/).

A fitted table keeps every column and its name; when the natural widths do not fit, cells are
cut with an ellipsis, in tiers (Col.cuts, each column down to a width per tier, widest first):
first the prose and secondary columns (CAUSE, ACTION, OWNER, NEXT: the whole text is in -o wide
and --explain) to a readable width, then the names to a comfortable one (cut in the middle: the
start of the namespace and the unique suffix stay), then the secondary columns to a few
characters, then the names to their minimum. Only when that is not enough (a narrow terminal, a
long status such as ContainerCreating) is every column cut, widest first, down to its header's
width (the last resort): the codes too (STATUS, STUCK, pod ACTION), otherwise never cut. Below
the headers' widths a row is wider than the terminal (docs/screen.md).
"""

from __future__ import annotations

import os
import textwrap
from dataclasses import dataclass
from typing import Any, TextIO

GAP = 2  # tabulate's "plain" format: two spaces between columns
PAD = 2  # ... and a column at least two wider than its header
ELLIPSIS = "…"
LAST_RESORT_NAME = 8  # a name is not cut below this, even as a last resort


def width(stream: TextIO, env: dict[str, str] | None = None) -> int | None:
    """The columns to fit output to: COLUMNS or the terminal's size on a terminal; None into a
    pipe or a file."""
    isatty = getattr(stream, "isatty", None)
    if not (isatty and isatty()):
        return None
    env = dict(os.environ) if env is None else env
    text = env.get("COLUMNS", "").strip()
    if text.isdigit() and int(text) > 0:
        return int(text)
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return None
    return columns if columns > 0 else None


def height(stream: TextIO, env: dict[str, str] | None = None) -> int:
    """The terminal's rows (LINES when set); 24 when they cannot be read."""
    env = dict(os.environ) if env is None else env
    text = env.get("LINES", "").strip()
    if text.isdigit() and int(text) > 0:
        return int(text)
    try:
        rows = os.get_terminal_size(stream.fileno()).lines
    except (OSError, ValueError, AttributeError):
        return 24
    return rows if rows > 0 else 24


@dataclass(frozen=True)
class Col:
    """A column: its header; `cuts`: (tier, width) pairs, the width it is cut down to in that
    tier (tier 1 first; none: only as the last resort); `middle`: cut in the middle (names),
    else at the end; `right`: right-aligned (counts)."""

    header: str
    cuts: tuple[tuple[int, int], ...] = ()
    middle: bool = False
    right: bool = False


def cut(text: str, size: int, middle: bool = False) -> str:
    """`text` in at most `size` columns, an ellipsis where it was cut. A name (`middle`) loses
    the end of its prefix first (`scen…/db-0`, `Stat…/db`), then the middle of the rest, so
    that what tells objects apart, the end (`pinned-…-hv4z6`), stays."""
    if len(text) <= size:
        return text
    if size <= 1:
        return text[:size]
    if not middle:
        return text[: size - 1] + ELLIPSIS
    prefix, slash, name = text.rpartition("/")
    if slash:
        room = size - len(name) - 1
        if room >= 2:
            return cut(prefix, room) + "/" + name
        if size >= 4:
            return ELLIPSIS + "/" + cut(name, size - 2, middle=True)
    tail = (size - 1) // 2
    head = size - 1 - tail
    return text[:head] + ELLIPSIS + text[len(text) - tail :]


def widths(cols: list[Col], rows: list[list[str]], limit: int | None) -> list[int]:
    """Each column's width: its natural one (as tabulate lays it out: at least its header and
    two spaces), then, while the row is wider than `limit`, without those two spaces, then cut
    tier by tier (widest first) down to the tiers' minimums, then (the last resort) every
    column, widest first, down to its header's width."""
    longest = [max([0, *(len(r[i]) for r in rows)]) for i in range(len(cols))]
    sizes = [max(len(c.header) + PAD, longest[i]) for i, c in enumerate(cols)]
    if limit is None:
        return sizes
    excess = sum(sizes) + GAP * (len(cols) - 1) - limit
    for i, c in enumerate(cols):
        spare = min(sizes[i] - max(len(c.header), longest[i]), max(excess, 0))
        sizes[i] -= spare
        excess -= spare
    for tier in sorted({t for c in cols for t, _ in c.cuts}):
        floor = {
            i: max(len(c.header), size)
            for i, c in enumerate(cols)
            for t, size in c.cuts
            if t == tier
        }
        members = list(floor)
        while excess > 0:
            room = [i for i in members if sizes[i] > floor[i]]
            if not room:
                break
            widest = max(room, key=lambda i: (sizes[i], -i))
            sizes[widest] -= 1
            excess -= 1
    last = [max(len(c.header), LAST_RESORT_NAME if c.middle else 0) for c in cols]
    while excess > 0:
        room = [i for i in range(len(cols)) if sizes[i] > last[i]]
        if not room:
            break
        widest = max(room, key=lambda i: (sizes[i], -i))
        sizes[widest] -= 1
        excess -= 1
    return sizes


def table(cols: list[Col], rows: list[list[Any]], limit: int | None) -> str:
    """A plain table (tabulate's "plain" layout), one line per row, within `limit` columns
    when the tiers allow it."""
    return "\n".join(lines(cols, rows, limit))


def natural(cols: list[Col], rows: list[list[Any]]) -> int:
    """The width of the table uncut: what `table` needs to cut nothing."""
    cells = [[" ".join(str(v).split()) for v in row] for row in rows]
    return sum(widths(cols, cells, None)) + GAP * (len(cols) - 1)


def lines(cols: list[Col], rows: list[list[Any]], limit: int | None) -> list[str]:
    """`table`'s lines: the header's, then one per row."""
    cells = [[" ".join(str(v).split()) for v in row] for row in rows]
    sizes = widths(cols, cells, limit)
    lines = []
    for row in [[c.header for c in cols], *cells]:
        fitted = [cut(v, sizes[i], cols[i].middle) for i, v in enumerate(row)]
        lines.append(
            (" " * GAP)
            .join(
                v.rjust(sizes[i]) if cols[i].right else v.ljust(sizes[i])
                for i, v in enumerate(fitted)
            )
            .rstrip()
        )
    return lines


def prose(text: str, limit: int | None, indent: str = "  ", first: str = "") -> list[str]:
    """`text` wrapped at spaces only (a name or a taint such as node.kubernetes.io/out-of-service
    is never cut, even at a hyphen); one line when there is no limit. A word longer than a whole
    line (a dump's path, a 253-character name) is the one thing cut, in its middle as a table's
    name is (`/check/wo…/dump.json`): never wrapped into a second line, never past `limit`."""
    if limit is None:
        return [first + text]
    wrapped = textwrap.wrap(
        text,
        width=limit,
        initial_indent=first,
        subsequent_indent=indent,
        break_on_hyphens=False,
        break_long_words=False,
    ) or [first.rstrip()]
    return [_within(line, first if i == 0 else indent, limit) for i, line in enumerate(wrapped)]


def _within(line: str, lead: str, limit: int) -> str:
    """A wrapped line within `limit`: only a line holding one over-long word is wider, and that
    word is cut (after `lead`, the line's indent)."""
    if len(line) <= limit:
        return line
    return lead + cut(line[len(lead) :], max(limit - len(lead), 1), middle=True)


def command(line: str, limit: int | None, indent: str = "        ") -> list[str]:
    """A shell command line (`    $ kubectl ...`) within `limit`: continued with ` \\` at a
    space, so that it still pastes as one command; a word is never cut."""
    if limit is None or len(line) <= limit:
        return [line]
    words = line.split(" ")
    lead = len(line) - len(line.lstrip(" "))
    out: list[str] = []
    current = line[:lead]
    for word in words[lead:]:
        candidate = f"{current} {word}" if current.strip() else current + word
        if current.strip() and len(candidate) + 2 > limit:
            out.append(current + " \\")
            current = indent + word
        else:
            current = candidate
    out.append(current)
    return out


def cell(text: str, size: int) -> str:
    """Wrapped inside a cell of -o wide (several lines), at spaces only: never inside a word."""
    return "\n".join(
        textwrap.wrap(text, width=size, break_on_hyphens=False, break_long_words=False) or [""]
    )
