"""Progress on stderr while a scan reads the cluster.

-v prints every step as a line. Otherwise, on a terminal only, one status line is shown (and
rewritten in place) once a scan has taken longer than DELAY seconds, and erased before the
result is printed; small clusters answer before it ever appears. Never with -o json/yaml
(machine output stays clean for pipes and runbooks) and never when stderr is not a terminal.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

DELAY = 0.8

_machine_output = False
_active: StatusLine | None = None


def machine_output(output: str) -> None:
    """Called by commands with their -o: json and yaml never get a status line."""
    global _machine_output
    _machine_output = output in ("json", "yaml")


def lines(message: str) -> None:
    print(f"... {message}", file=sys.stderr)


class StatusLine:
    """One line on a terminal, rewritten in place, shown only after `delay` seconds."""

    def __init__(
        self,
        stream: TextIO,
        delay: float = DELAY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream, self.delay, self.clock = stream, delay, clock
        self.start = clock()
        self.shown = False

    def __call__(self, message: str) -> None:
        if self.clock() - self.start < self.delay:
            return
        self.stream.write(f"\r\x1b[2K... {message}")
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self.shown = False


def reporter(verbose: int, stream: TextIO | None = None) -> Callable[[str], None]:
    """The progress callback for one scan."""
    global _active
    stream = sys.stderr if stream is None else stream
    if verbose:
        return lines
    if _machine_output or not stream.isatty():
        return lambda _: None
    _active = StatusLine(stream)
    return _active


def done() -> None:
    """Erase the status line (before the result is printed)."""
    global _active
    if _active is not None:
        _active.clear()
        _active = None
