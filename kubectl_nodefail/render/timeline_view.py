"""The incident timeline for people: as text under `--explain NODE`, and as Markdown.

Entries of the same second, kind and wording (eight pods evicted by the same taint in the same
second) become one line naming the objects, so a node with many pods still reads in a screen.
The JSON output keeps every entry (analysis/timeline.py)."""

from __future__ import annotations

from datetime import datetime
from itertools import groupby

from kubectl_nodefail.analysis.text import duration
from kubectl_nodefail.analysis.timeline import Entry
from kubectl_nodefail.term import printable

NAMES_SHOWN = 4


def _ago(seconds: float, due: bool = False) -> str:
    if due:  # a deadline still to come (a fraction of a second, too)
        return f"in {duration(-seconds)}"
    seconds = int(seconds)
    if seconds < 0:
        return "in the future (clock skew?)"
    if seconds < 120:
        return f"{seconds}s ago"
    if seconds < 7200:
        return f"{seconds // 60}m ago"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m ago"


def _short(ref: str) -> str:
    """pod/NS/NAME -> NAME (the namespace is in the pod tables already)."""
    return ref.rsplit("/", 1)[-1]


def grouped(entries: list[Entry]) -> list[tuple[Entry, list[str]]]:
    """(first entry, objects) per run of entries with one second, kind and summary."""
    key = lambda e: (e.time.replace(microsecond=0), e.kind, e.summary)  # noqa: E731
    return [
        (group[0], [e.object for e in group])
        for group in (list(g) for _, g in groupby(entries, key))
    ]


def _line(entry: Entry, objects: list[str]) -> str:
    if len(objects) == 1:
        subject = objects[0]
    else:
        kind = objects[0].split("/", 1)[0]
        names = ", ".join(_short(o) for o in objects[:NAMES_SHOWN])
        more = f" and {len(objects) - NAMES_SHOWN} more" if len(objects) > NAMES_SHOWN else ""
        subject = f"{len(objects)} {kind}s ({names}{more})"
    return f"{subject}: {entry.summary}"


UNTIMED = "Also present, with no time recorded (no timeAdded): taint {}"


def text(entries: list[Entry], now: datetime, untimed: list[str] | None = None) -> str:
    entries = printable.clean(entries)  # what the API recorded, escaped (printable.py)
    if not entries:
        return "Timeline: nothing recorded (no such node in this snapshot)\n"
    out = ["Timeline (from what the API still records; times UTC):"]
    for entry, objects in grouped(entries):
        when = entry.time.strftime("%H:%M:%S")
        out.append(
            f"  {when}  {_ago((now - entry.time).total_seconds(), entry.due):>9}  "
            f"{_line(entry, objects)}"
        )
    return "\n".join(out) + "\n"


def markdown(entries: list[Entry], now: datetime) -> str:
    entries = printable.clean(entries)
    if not entries:
        return "_Nothing recorded._\n"
    out = ["| time (UTC) | | what happened | source |", "|---|---|---|---|"]
    for entry, objects in grouped(entries):
        when = entry.time.strftime("%Y-%m-%d %H:%M:%S")
        ago = _ago((now - entry.time).total_seconds(), entry.due)
        what = _line(entry, objects).replace("|", "\\|")
        out.append(f"| {when} | {ago} | {what} | {entry.source} |")
    return "\n".join(out) + "\n"
