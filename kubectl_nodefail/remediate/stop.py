"""Stopping a run on SIGINT/SIGTERM: the first signal stops it after the request in flight, the
second abandons that request.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType


class Stop:
    """SIGINT/SIGTERM during a run. The first asks to stop once the request in flight has
    answered (its result is recorded); the second abandons that request (KeyboardInterrupt)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.signals = 0

    def is_set(self) -> bool:
        return self._event.is_set()

    def set(self) -> None:
        self._event.set()

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True at once when a stop was asked."""
        return self._event.wait(seconds)

    @contextmanager
    def on_signals(self, say: Callable[[str], None]) -> Iterator[Stop]:
        def handler(signum: int, frame: FrameType | None) -> None:
            self.signals += 1
            self._event.set()
            if self.signals == 1:
                say(
                    f"{signal.Signals(signum).name}: stopping after the request in flight "
                    "(send it again to abandon that request)"
                )
            elif self.signals == 2:
                say("abandoning the request in flight")
                raise KeyboardInterrupt

        old = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield self
        finally:
            for sig, previous in old.items():
                signal.signal(sig, previous)
