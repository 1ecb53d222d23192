"""Progress on stderr while a scan reads the cluster.

-v prints every step as a line. Otherwise, on a terminal only, one status line is shown (and
rewritten in place) once a scan has taken longer than DELAY seconds, and erased before the
result (or an error line) is printed; small clusters answer before it ever appears. A step that
waits on one slow request still shows: the line is redrawn every TICK seconds with the time the
step has waited ("... reading nodes (12 s)"). Never with -o json/yaml (machine output stays
clean for pipes and runbooks) and never when stderr is not a terminal.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

DELAY = 0.8
TICK = 1.0
WAITED = 2.0  # a step shows its waiting time from this many seconds on

_machine_output = False
_active: StatusLine | None = None


def machine_output(output: str) -> None:
    """Called by commands with their -o: json and yaml never get a status line."""
    global _machine_output
    _machine_output = output in ("json", "yaml")


def lines(message: str) -> None:
    print(f"... {message}", file=sys.stderr)


class StatusLine:
    """One line on a terminal, rewritten in place, shown only after `delay` seconds. With
    `tick`, a thread redraws it every `tick` seconds (the step's waiting time) until cleared."""

    def __init__(
        self,
        stream: TextIO,
        delay: float = DELAY,
        clock: Callable[[], float] = time.monotonic,
        tick: float | None = None,
    ) -> None:
        self.stream, self.delay, self.clock = stream, delay, clock
        self.start = clock()
        self.shown = False
        self.message, self.since = "", self.start
        self._lock = threading.Lock()
        self._closed = threading.Event()
        if tick is not None:
            threading.Thread(target=self._ticks, args=(tick,), daemon=True).start()

    def __call__(self, message: str) -> None:
        with self._lock:
            self.message, self.since = message, self.clock()
            self._draw()

    def _ticks(self, tick: float) -> None:
        while not self._closed.wait(tick):
            with self._lock:
                self._draw()

    def _draw(self) -> None:
        """Under the lock: the line, if it is time and something is to be said."""
        now = self.clock()
        if self._closed.is_set() or not self.message or now - self.start < self.delay:
            return
        waited = now - self.since
        tail = f" ({waited:.0f} s)" if waited >= WAITED else ""
        self.stream.write(f"\r\x1b[2K... {self.message}{tail}")
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        """Erase the line; nothing is drawn after this."""
        with self._lock:
            self._closed.set()
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
    _active = StatusLine(stream, tick=TICK)
    return _active


def done() -> None:
    """Erase the status line (before the result is printed)."""
    global _active
    if _active is not None:
        _active.clear()
        _active = None
