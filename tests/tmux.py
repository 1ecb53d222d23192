"""A real terminal for tests: a tmux server of its own (`tmux -L <unique socket> -f /dev/null`),
one pane of a given size running a command; keys typed with send-keys, the screen read with
capture-pane. Used by tests/unit/watch/test_tmux_screen.py and tests/e2e/test_watch_screen.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

TMUX = shutil.which("tmux")


def require_tmux() -> str:
    """The tmux binary, or a skip that says so (CI and the dev machine have it)."""
    if not TMUX:
        pytest.skip("tmux is not installed: the real-terminal tests need it (apt install tmux)")
    return TMUX


class Pane:
    """One tmux pane of `cols` x `rows` on a private server."""

    def __init__(self, tmux: str, socket: str) -> None:
        self.tmux, self.socket = tmux, socket

    def _run(self, *args: str) -> str:
        proc = subprocess.run(
            [self.tmux, "-L", self.socket, *args], capture_output=True, text=True, timeout=20
        )
        assert proc.returncode == 0, f"tmux {' '.join(args)}: {proc.stderr.strip()}"
        return proc.stdout

    def screen(self, joined: bool = False, history: bool = True) -> list[str]:
        """The pane's lines (with the scrollback when `history`); `joined`: lines the terminal
        wrapped are joined again (capture-pane -J), so a wrapped line shows as one."""
        args = ["capture-pane", "-p", "-t", "main"]
        if history:
            args += ["-S", "-"]
        if joined:
            args.append("-J")
        lines = self._run(*args).split("\n")
        while lines and not lines[-1].strip():
            lines.pop()
        return lines

    def normal_screen(self) -> list[str]:
        """While a program is on the alternate screen: the saved normal screen (capture -a)."""
        return self._run("capture-pane", "-p", "-a", "-t", "main").rstrip("\n").split("\n")

    def title(self) -> str:
        """The pane's title (what an OSC 0 or 2 sequence sets)."""
        return self._run("display-message", "-p", "-t", "main", "#{pane_title}").strip()

    def alternate_on(self) -> bool:
        return self._run("display-message", "-p", "-t", "main", "#{alternate_on}").strip() == "1"

    def keys(self, *keys: str) -> None:
        self._run("send-keys", "-t", "main", *keys)

    def wait_for(
        self, what: str, check: Callable[[list[str]], bool], timeout: float = 30
    ) -> list[str]:
        deadline = time.monotonic() + timeout
        lines = self.screen()
        while time.monotonic() < deadline:
            lines = self.screen()
            if check(lines):
                return lines
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}; the screen:\n" + "\n".join(lines))


@contextmanager
def pane(command: str, cols: int, rows: int, env: dict[str, str]) -> Iterator[Pane]:
    """The shell `command` in a new pane of `cols` x `rows`, then `exit=CODE` printed and the
    pane kept (the shell sleeps) until the test is done; the server is killed after. The shell
    itself survives a Ctrl-C (a trap: the command still gets SIGINT with its default action)."""
    tmux = require_tmux()
    socket = f"nodefail-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    clean = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES", "TMUX", "NO_COLOR")}
    clean.setdefault("TERM", "xterm-256color")
    script = f"trap true INT; {command}; echo exit=$?; sleep 600"
    subprocess.run(
        [tmux, "-L", socket, "-f", "/dev/null", "new-session", "-d", "-s", "main",
         "-x", str(cols), "-y", str(rows), "sh", "-c", script],
        env=clean,
        check=True,
        timeout=20,
    )  # fmt: skip
    p = Pane(tmux, socket)
    try:
        yield p
    finally:
        subprocess.run([tmux, "-L", socket, "kill-server"], capture_output=True, timeout=20)
