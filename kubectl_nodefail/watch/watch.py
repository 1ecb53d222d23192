"""`diagnose --watch`: follow an incident live.

Every INTERVAL seconds the cluster is read again (nodes, the pods of failed nodes, the
Terminating ones: what diagnose reads), or the dump given with --from-file is read again.

On a terminal, as watch(1) and k9s do: the alternate screen (the shell's screen and scrollback
come back untouched when the watch ends, Ctrl-C, SIGTERM and errors included); each refresh
rewrites only the lines that changed (nothing is cleared into the scrollback); the diagnosis is
cut to the terminal's height; a change log at the bottom says what changed between reads
(changes.py: "worker-2 Ready again after 28s", "shop/db-0 replaced"); when a read fails (API
server unreachable, timeouts) a banner at the top says so, since when, and how old the data
below it is, and another says when the server answers again. After the watch, the change log
is printed on the normal screen. What the cluster holds is shown escaped (printable.py): the
diagnosis by its renderers, the change log and a failed read's reason here.

Into a pipe or a file: a new block only on a change, headed by a `--- TIME ---` line and the
changes since the previous block (`change: ...`), one JSON document per line with -o json; a
failed read is one warning on stderr, and one more when the cluster answers again.

Ctrl-C ends it cleanly, with the exit code of the last diagnosis (0 nothing wrong, 3 problems
found).
"""

from __future__ import annotations

import copy
import json
import re
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, TextIO

from kubectl_nodefail.analysis.text import duration
from kubectl_nodefail.common.errors import (
    ApiError,
    AuthError,
    NodefailError,
    UnreachableError,
    one_line,
)
from kubectl_nodefail.snapshot.model import Snapshot
from kubectl_nodefail.term import closedpipe, color, fit, printable
from kubectl_nodefail.watch import changes

# xterm's alternate screen (DEC private mode 1049: saves the cursor, switches, clears) and the
# cursor hidden while the watch draws; both undone on the way out.
ENTER = "\x1b[?1049h\x1b[?25l"
LEAVE = "\x1b[?25h\x1b[?1049l"
CLEAR = "\x1b[H\x1b[2J"  # within the alternate screen only: it has no scrollback
ERASE_LINE = "\x1b[K"
LOG_LINES = 5  # change-log lines at the bottom of the screen
BACK_SECONDS = 10.0  # how long the "answers again" banner stays
SESSION_LOG = 20  # change-log lines printed after the watch
RETIME_SHARE = 0.05  # the most of a core the screen's times may take while nothing changes

_CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _ready(obj: dict[str, Any]) -> str:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return str(cond.get("status"))
    return ""


def fingerprint(snap: Snapshot) -> tuple[Any, ...]:
    """What the watch reacts to; heartbeats and resourceVersions alone are not changes (nor
    the leader's renewals: only its going, its return or a new one)."""
    nodes = sorted(
        (
            n["metadata"]["name"],
            _ready(n),
            tuple(
                sorted((t["key"], t["effect"]) for t in (n.get("spec") or {}).get("taints") or [])
            ),
            bool((n.get("spec") or {}).get("unschedulable")),
        )
        for n in snap.nodes
    )
    pods = sorted(
        (
            p["metadata"].get("namespace", ""),
            p["metadata"]["name"],
            p["metadata"].get("uid", ""),
            (p.get("spec") or {}).get("nodeName") or "",
            (p.get("status") or {}).get("phase") or "",
            bool(p["metadata"].get("deletionTimestamp")),
            _ready(p),
        )
        for p in snap.pods
    )
    return (tuple(nodes), tuple(pods), changes.leader_state(snap))


def clip(line: str, width: int) -> str:
    """`line` cut to `width` visible columns (with an ellipsis when it has no color); escape
    sequences (color) kept, never cut."""
    if len(_CSI.sub("", line)) <= width:
        return line
    if "\x1b[" not in line:
        return fit.cut(line, width)
    out, seen, i = [], 0, 0
    while i < len(line) and seen < width:
        match = _CSI.match(line, i)
        if match:
            out.append(match.group(0))
            i = match.end()
            continue
        out.append(line[i])
        seen += 1
        i += 1
    return "".join(out) + (color.RESET if "\x1b[" in line else "")


class Screen:
    """The alternate screen, repainted line by line: only the lines that differ from the last
    frame are written (cursor moved there, line rewritten, rest of it erased)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.shown: list[str] = []
        self.size: tuple[int, int] | None = None

    def enter(self) -> None:
        self.out.write(ENTER + CLEAR)
        self.out.flush()

    def leave(self) -> None:
        self.out.write(LEAVE)
        self.out.flush()

    def paint(self, lines: list[str], size: tuple[int, int]) -> int:
        """Show `lines` (already within `size`); returns how many lines were written."""
        parts = []
        if size != self.size:  # resized (or the first frame): everything again
            parts.append(CLEAR)
            self.shown, self.size = [], size
        written = 0
        for row in range(max(len(lines), len(self.shown))):
            new = lines[row] if row < len(lines) else ""
            old = self.shown[row] if row < len(self.shown) else None
            if new != old:
                parts.append(f"\x1b[{row + 1};1H{new}{ERASE_LINE}")
                written += 1
        self.shown = list(lines)
        if parts:
            self.out.write("".join(parts))
            self.out.flush()
        return written


@dataclass
class State:
    """What the watch knows between reads."""

    snap: Snapshot | None = None
    read_at: float | None = None  # wall clock of the last good read
    text: str = ""
    code: int = 0
    failing_since: float | None = None
    failure: str = ""
    failing_how: str = "unreachable"  # what the failing server does: unreachable, refusing, ...
    failure_code: int = 0  # the failed read's exit code (the watch's, if none ever succeeded)
    back_at: float | None = None
    back_after: float = 0.0
    log: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)  # changes not yet printed (pipes)
    reading: str = ""  # the changes the read in progress was made for (escaped), and when seen
    shown_at: float = 0.0  # when the diagnosis on the screen was made, and its cost
    show_seconds: float = 0.0  # in CPU seconds of this thread (a loaded machine's wait is not cost)
    cpu: Callable[[], float] = time.thread_time


def _clock(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%H:%M:%S")


_INTERNALS = [
    re.compile(
        r"<?(?:urllib3\.\w+\.)?HTTPS?Connection(?:Pool)?"
        r"(?: object at 0x[0-9a-f]+>|\([^)]*\)):?\s*"
    ),
    re.compile(r"\[Errno -?\d+\]\s*"),
    re.compile(r"Max retries exceeded with url: \S+ \(Caused by \w+\(\s*"),
]


def _how(exc: NodefailError) -> str:
    """What the failing server does, in the banner's words."""
    if isinstance(exc, AuthError):
        return "refusing the watch's reads"
    if isinstance(exc, ApiError):
        return "failing the watch's reads"
    return "unreachable"


def final_code(state: State) -> int:
    """The watch's exit code: the last diagnosis's, or, when no read ever succeeded, the
    failed read's (a refused or unreachable server is not an all-clear)."""
    return state.code if state.snap is not None else state.failure_code


def plain_reason(exc: NodefailError) -> str:
    """The failure in words for the banner: the error's own line without client-library
    internals (connection objects, errno numbers)."""
    text = exc.message
    for pattern in _INTERNALS:
        text = pattern.sub("", text)
    return one_line(text.rstrip(") "))


def frame(
    state: State,
    title: str,
    interval: float,
    now: float,
    size: tuple[int, int],
    paint: bool,
    watching: bool = False,
) -> list[str]:
    """The screen: title, banner, the diagnosis (cut to the height), the change log.
    `watching`: the cluster is read on a change its watches show, not every interval."""
    width, height = size
    how = "watched, read on a change" if watching else f"every {interval:g}s"
    top = [f"{title}   ({how}; {_clock(now)}; Ctrl-C to stop)"]
    red = (color.BOLD + color.RED) if paint else ""
    green = color.GREEN if paint else ""
    bold = color.BOLD if paint else ""
    end = color.RESET if paint else ""
    if state.failing_since is not None:
        down = duration(now - state.failing_since)
        data = (
            f"Below: the cluster as read at {_clock(state.read_at)}, "
            f"{duration(now - state.read_at)} ago."
            if state.read_at is not None
            else "Nothing read yet."
        )
        banner = [
            f"!! API server {state.failing_how} for {down} (since {_clock(state.failing_since)}); "
            f"retrying every {interval:g}s. {data}",
            f"!! {state.failure}",
        ]
        top += [f"{red}{line}{end}" for text in banner for line in fit.prose(text, width, "   ")]
    elif state.reading:
        text = (
            f"{state.reading}: reading the cluster again. Below: the cluster as read at "
            f"{_clock(state.read_at)}."
            if state.read_at is not None
            else state.reading
        )
        top += [f"{bold}{line}{end}" for line in fit.prose(text, width, "   ")]
    elif state.back_at is not None and now - state.back_at < BACK_SECONDS:
        text = (
            f"API server answering again since {_clock(state.back_at)} "
            f"({state.failing_how} for {duration(state.back_after)}); the data below is new."
        )
        top += [f"{green}{line}{end}" for line in fit.prose(text, width, "   ")]
    log = state.log[-LOG_LINES:]
    bottom = ["", "CHANGES" + (f" (last {len(log)} of {len(state.log)})" if state.log else "")]
    bottom += log or ["none seen yet"]
    body = ["", *state.text.splitlines()]
    room = max(height - len(top) - len(bottom), 1)
    if len(body) > room:
        hidden = len(body) - room + 1
        body = [*body[: room - 1], f"... {hidden} more lines: a taller terminal shows them"]
    body += [""] * (room - len(body))
    return [clip(line, width) for line in (top + body + bottom)[:height]]


@contextmanager
def _sigterm_as_ctrl_c() -> Iterator[None]:
    """SIGTERM ends the watch as Ctrl-C does, so the terminal is restored either way."""

    def stop(signum: int, _: Any) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread (tests): nothing to restore
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(
    load: Callable[[], Snapshot],
    show: Callable[[Snapshot], tuple[str, int]],
    interval: float,
    out: TextIO,
    err: TextIO,
    tty: bool,
    title: str,
    one_line: bool = False,
    sleep: Callable[[float], None] = time.sleep,
    max_polls: int | None = None,
    clock: Callable[[], float] = time.time,
    size: Callable[[], tuple[int, int]] | None = None,
    follow: Any = None,
    cpu: Callable[[], float] = time.thread_time,
    said: Callable[[str], None] | None = None,
) -> int:
    """Follow until Ctrl-C (or `max_polls` refreshes, for tests); return the last diagnosis's
    exit code. `follow` (follow.Follower): the cluster is read again when its watches show a
    change, not every `interval` (which then only moves the screen's times on). `cpu`: the
    CPU-seconds meter the screen's redraws are rationed by (RETIME_SHARE). `said` (-v, into a
    pipe): each read's reasons, as the watches gave them, before it."""
    state = State(cpu=cpu)
    try:
        if not tty:
            return _lines(
                state,
                load,
                show,
                interval,
                out,
                err,
                one_line,
                sleep,
                max_polls,
                clock,
                follow,
                said,
            )
        return _screen(
            state, load, show, interval, out, title, sleep, max_polls, clock, size, follow
        )
    finally:
        if follow is not None:
            follow.close()


def _screen(
    state: State,
    load: Callable[[], Snapshot],
    show: Callable[[Snapshot], tuple[str, int]],
    interval: float,
    out: TextIO,
    title: str,
    sleep: Callable[[float], None],
    max_polls: int | None,
    clock: Callable[[], float],
    size: Callable[[], tuple[int, int]] | None,
    follow: Any,
) -> int:
    """On a terminal: the alternate screen, repainted at each refresh."""
    screen = Screen(out)
    measure = size or (lambda: (fit.width(out) or 80, fit.height(out)))
    paint = color.enabled(out)

    def painted() -> None:
        """A read's diagnosis on the screen as soon as it is made (the read is over: no
        reading line); its changes join the log at the next paint, a moment later."""
        state.reading = ""
        dims = measure()
        screen.paint(_frame(state, title, interval, clock(), dims, paint, follow), dims)

    with _sigterm_as_ctrl_c():
        screen.enter()
        try:
            polls = 0
            read: bool | list[str] = True
            while max_polls is None or polls < max_polls:
                polls += 1
                if read:
                    if isinstance(read, list) and state.snap is not None:
                        # what the watches showed, on the screen before the read (seconds at
                        # scale) that brings what it changes
                        state.reading, dims = _seen(read, clock()), measure()
                        screen.paint(
                            _frame(state, title, interval, clock(), dims, paint, follow), dims
                        )
                    _read(state, load, show, clock, follow, painted)
                    state.reading = ""
                else:
                    _retime(state, show, clock)
                dims = measure()
                screen.paint(_frame(state, title, interval, clock(), dims, paint, follow), dims)
                read = _wait(state, follow, interval, sleep)
        except KeyboardInterrupt:
            pass
        finally:
            screen.leave()
    if state.log:
        width = measure()[0]
        out.write(f"Changes seen by the watch (the last {min(len(state.log), SESSION_LOG)}):\n")
        for line in state.log[-SESSION_LOG:]:
            out.write("".join(f"{x}\n" for x in fit.prose(line, width, " " * 12, first="  ")))
    out.flush()
    return final_code(state)


def _frame(
    state: State,
    title: str,
    interval: float,
    now: float,
    dims: tuple[int, int],
    paint: bool,
    follow: Any,
) -> list[str]:
    watching = follow is not None and not follow.off and state.failing_since is None
    return frame(state, title, interval, now, dims, paint, watching)


SEEN_SHOWN = 3  # the changes named on the "reading" line; the rest counted


def _seen(reasons: list[str], now: float) -> str:
    """The changes a read is made for, as the screen's line says them (escaped: they carry
    names and reasons from the cluster)."""
    named = list(dict.fromkeys(printable.escape(r) for r in reasons))
    more = len(named) - SEEN_SHOWN
    return (
        f"{_clock(now)}  "
        + "; ".join(named[:SEEN_SHOWN])
        + (f" (+{more} more)" if more > 0 else "")
    )


def _wait(
    state: State, follow: Any, interval: float, sleep: Callable[[float], None]
) -> bool | list[str]:
    """Wait for the next refresh; truthy when it reads the cluster again: True every
    `interval` without watches, and while reads fail (the banner says how long); with them, as
    soon as one shows a change the screen may depend on (follow.py), the changes (a list),
    else an empty list."""
    if follow is None or follow.off or state.snap is None or state.failing_since is not None:
        sleep(interval)
        return True
    return list(follow.wait(interval))


def _retime(
    state: State, show: Callable[[Snapshot], tuple[str, int]], clock: Callable[[], float]
) -> None:
    """The diagnosis again at this moment, on the snapshot the watches keep current (no change
    came since it was read): its times ("evicted 12s ago", what is due when) move on. Not more
    often than RETIME_SHARE of a core allows: a big outage's diagnosis takes a while."""
    if state.snap is None or state.read_at is None:
        return
    now = clock()
    if now - state.shown_at < state.show_seconds / RETIME_SHARE:
        return
    snap = copy.copy(state.snap)
    snap.read_at = state.snap.read_at or state.snap.captured_at
    snap.captured_at = state.snap.captured_at + timedelta(seconds=max(now - state.read_at, 0.0))
    _show(state, show, snap, now)


def _show(
    state: State,
    show: Callable[[Snapshot], tuple[str, int]],
    snap: Snapshot,
    now: float,
) -> None:
    started = state.cpu()
    state.text, state.code = show(snap)
    state.shown_at, state.show_seconds = now, max(state.cpu() - started, 0.0)


def _read(
    state: State,
    load: Callable[[], Snapshot],
    show: Callable[[Snapshot], tuple[str, int]],
    clock: Callable[[], float],
    follow: Any = None,
    shown: Callable[[], None] | None = None,
) -> bool:
    """One read: True when it succeeded (state updated, changes logged; the watches compare
    what comes next with it). `shown` (the screen) is called once its diagnosis is made, before
    the changes are worked out (a tenth of a second at 5,000 nodes)."""
    try:
        if follow is not None and not follow.primed:
            follow.prime()  # before the read: nothing after it is missed
        snap = load()
    except (UnreachableError, ApiError, AuthError) as exc:
        # A refusal (401/403) is a failed read like any other: right after an API server
        # restarts it refuses for a moment (RBAC not loaded yet), a binding may be back in
        # seconds, a rotated token is read on the next try. The watch says so and retries.
        now = clock()
        how = _how(exc)
        if state.failing_since is None or how != state.failing_how:
            state.log.append(f"{_clock(now)}  API server {how}")
        if state.failing_since is None:
            state.failing_since = now
        state.failing_how = how
        state.failure = printable.escape(plain_reason(exc))
        state.failure_code = int(exc.exit_code)
        return False
    now = clock()
    stamp = _clock(now)
    if state.failing_since is not None:
        state.back_at, state.back_after = now, now - state.failing_since
        state.log.append(
            f"{stamp}  API server answering again after {duration(state.back_after)} "
            f"({state.failing_how})"
        )
        state.failing_since = None
    last, state.snap, state.read_at = state.snap, snap, now
    try:
        _show(state, show, snap, now)
        if shown is not None:
            shown()
    finally:  # a Ctrl-C meanwhile: the read's changes still in the log the watch ends with
        if last is not None:
            found = printable.clean(changes.between(last, snap))  # names, taints: escaped
            state.log += [f"{stamp}  {line}" for line in found]
            state.pending += found
        if follow is not None:
            follow.rebase(snap)
    return True


def _lines(
    state: State,
    load: Callable[[], Snapshot],
    show: Callable[[Snapshot], tuple[str, int]],
    interval: float,
    out: TextIO,
    err: TextIO,
    one_line: bool,
    sleep: Callable[[float], None],
    max_polls: int | None,
    clock: Callable[[], float],
    follow: Any = None,
    said: Callable[[str], None] | None = None,
) -> int:
    """Into a pipe or a file: a block per change, warnings on stderr (and with `said`, the
    reasons each read is made for)."""
    last: tuple[Any, ...] | None = None
    polls = 0
    read: bool | list[str] = True
    try:
        while max_polls is None or polls < max_polls:
            polls += 1
            if not read:  # the watches showed no change: nothing new to print
                read = _wait(state, follow, interval, sleep)
                continue
            if said is not None and isinstance(read, list):
                said(f"read again for: {_seen(read, clock())}")
            failing = state.failure if state.failing_since is not None else ""
            if not _read(state, load, show, clock, follow):
                if state.failure != failing:
                    err.write(f"warning: {state.failure} (retrying every {interval:g}s)\n")
                    err.flush()
                read = _wait(state, follow, interval, sleep)
                continue
            if failing:
                err.write(
                    "warning: the API server answers again "
                    f"({state.failing_how} for {duration(state.back_after)})\n"
                )
                err.flush()
            assert state.snap is not None
            current = fingerprint(state.snap)
            if current != last:
                stamp = _clock(clock())
                if one_line:
                    out.write(json.dumps(json.loads(state.text), separators=(",", ":")) + "\n")
                else:
                    notes = "".join(f"change: {c}\n" for c in state.pending)
                    out.write(f"--- {stamp} ---\n{notes}{state.text}")
                state.pending = []
                out.flush()
                last = current
                if closedpipe.gone():  # the reader left (`| head`): nothing reads the next
                    break
            read = _wait(state, follow, interval, sleep)
    except KeyboardInterrupt:
        out.flush()
    return final_code(state)
