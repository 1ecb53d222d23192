"""Standard output whose reader went away (`kubectl nodefail diagnose -o json | head`).

Python ignores SIGPIPE (so that a dropped API connection is an error to report, not a silent
death), which turns a reader that stops early into a BrokenPipeError at the next write: an
"internal error" and exit 1 for what is an ordinary shell pipeline. kubectl dies of SIGPIPE
there, silently. Here the rest of the output is dropped instead, silently too, and the command
ends with its own exit code (a diagnosis that found problems still exits 3). A loop that only
writes (`diagnose --watch` into a pipe) asks `gone()` and stops.
"""

from __future__ import annotations

import errno
import io
import os
import sys

_gone = False


def gone() -> bool:
    """True once a write to standard output found its reader gone."""
    return _gone


class _DropWhenClosed(io.FileIO):
    """File descriptor 1 that, once a write fails with EPIPE, points it at /dev/null (so that
    no later write, nor the interpreter's last flush, fails) and reports every write done.

    It writes all it is given before it returns, and stands directly under the text layer, with
    no buffer between: a signal (Ctrl-C ending `diagnose --watch`) is handled as this Python
    method returns, and a BufferedWriter whose write raised keeps the bytes that had gone out
    and writes them again (run z2 of 2026-12-02: the watch's last block printed twice). The
    text layer drops what it handed down before the call, so an interrupted write is never
    repeated."""

    def write(self, data: object) -> int:
        global _gone
        view = memoryview(data).cast("B")  # type: ignore[arg-type]
        size = len(view)
        try:
            while view and not _gone:
                view = view[os.write(self.fileno(), view) :]
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise
            _gone = True
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self.fileno())
            os.close(null)
        return size


def install() -> None:
    """Put standard output on _DropWhenClosed, keeping its encoding and line buffering.
    Only the process's real standard output: a test runner's captured stream stays as it is."""
    out = sys.stdout
    if out is None or out is not sys.__stdout__ or not isinstance(out, io.TextIOWrapper):
        return
    try:
        fd = out.fileno()
    except (OSError, ValueError):
        return
    out.flush()
    sys.stdout = io.TextIOWrapper(
        _DropWhenClosed(fd, "w", closefd=False),
        encoding=out.encoding,
        errors=out.errors,
        newline=None,
        line_buffering=out.line_buffering,
        write_through=True,
    )
