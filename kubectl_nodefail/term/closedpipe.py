"""Standard output or error whose reader went away (`kubectl nodefail diagnose -o json | head`,
a runbook's logger that died before the command).

Python ignores SIGPIPE (so that a dropped API connection is an error to report, not a silent
death), which turns a reader that stops early into a BrokenPipeError at the next write: an
"internal error" and exit 1 for what is an ordinary shell pipeline. kubectl dies of SIGPIPE
there, silently. Here the rest of the output is dropped instead, silently too, and the command
ends with its own exit code (a diagnosis that found problems still exits 3). A loop that only
writes (`diagnose --watch` into a pipe) asks `gone()` and stops. Standard error is treated the
same way: its lines (progress, the one-line error) dropped, the exit code kept; a closed
standard error does not stop a watch whose output is still read.

A write that fails otherwise (a full disk: `diagnose > /mnt/full/out.txt`) is not the reader's
choice: the rest is dropped the same way (no traceback, no half-done run: remediate carries
on with what it was doing, its trail records it), and the command ends with one line saying
so and the usage code 2 ("an output that cannot be written") in place of a code that only
reports an outcome (cli/running.py with_output_checked); standard error failing that way changes
nothing but its own lines.
"""

from __future__ import annotations

import errno
import io
import os
import select
import sys
from typing import TextIO

_gone: set[int] = set()  # the file descriptors whose reader went away (or that failed)
_failed: dict[int, str] = {}  # descriptor -> why a write failed otherwise (a full disk)


def gone(fd: int = 1) -> bool:
    """True once a write to standard output (or the given descriptor) found its reader gone,
    or failed otherwise (output_failed says why): nothing written there arrives any more."""
    return fd in _gone


def output_failed() -> str | None:
    """Why standard output could not be written, when a write failed for another reason than
    a reader that left (ENOSPC on a full disk, EIO, EFBIG): what was written is incomplete."""
    reason = _failed.get(1)
    return None if reason is None else f"could not write standard output: {reason}"


class _DropWhenClosed(io.FileIO):
    """File descriptor 1 or 2 that, once a write fails with EPIPE, points it at /dev/null (so that
    no later write, nor the interpreter's last flush, fails) and reports every write done.

    It writes all it is given before it returns, and stands directly under the text layer, with
    no buffer between: a signal (Ctrl-C ending `diagnose --watch`) is handled as this Python
    method returns, and a BufferedWriter whose write raised keeps the bytes that had gone out
    and writes them again (run z2 of 2026-12-02: the watch's last block printed twice). The
    text layer drops what it handed down before the call, so an interrupted write is never
    repeated. A descriptor someone left non-blocking (a shell, a parent) is waited on when its
    reader is slow (EAGAIN), not taken for a failure."""

    def write(self, data: object) -> int:
        fd = self.fileno()
        view = memoryview(data).cast("B")  # type: ignore[arg-type]
        size = len(view)
        try:
            while view and fd not in _gone:
                try:
                    view = view[os.write(fd, view) :]
                except BlockingIOError:  # a descriptor left non-blocking, its reader slow
                    select.select([], [fd], [])
        except OSError as exc:
            if exc.errno != errno.EPIPE:  # not the reader's choice: the output is incomplete
                _failed.setdefault(fd, exc.strerror or type(exc).__name__)
            _gone.add(fd)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self.fileno())
            os.close(null)
        return size


def install() -> None:
    """Put standard output and standard error on _DropWhenClosed, keeping their encoding,
    error handler and line buffering. Only the process's real streams: a test runner's
    captured ones stay as they are."""
    sys.stdout = _dropping(sys.stdout, sys.__stdout__)
    sys.stderr = _dropping(sys.stderr, sys.__stderr__)


def _dropping(stream: TextIO | None, real: TextIO | None) -> TextIO | None:
    if stream is None or stream is not real or not isinstance(stream, io.TextIOWrapper):
        return stream
    try:
        fd = stream.fileno()
    except (OSError, ValueError):
        return stream
    stream.flush()
    return io.TextIOWrapper(
        _DropWhenClosed(fd, "w", closefd=False),
        encoding=stream.encoding,
        errors=stream.errors,
        newline=None,
        line_buffering=stream.line_buffering,
        write_through=True,
    )
