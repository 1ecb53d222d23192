"""The files a command writes besides its standard output: a dump or a saved plan
(`write_file`, to a path checked writable before the cluster was read), and remediate's
--log-file trail (`open_trail`, opened to append before the first change). A file that cannot
be written after all is one line and exit 2."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import IO

from kubectl_nodefail.common.errors import BadOptionError, short


def write_file(
    flag: str, path: str, write: Callable[[IO[str]], object], private: bool = False
) -> None:
    """Write an output file checked by outpath.check_writable; a change since (the folder
    removed, the disk full) is still one line and exit 2. `private`: mode 0600, made so
    before anything is written (an existing file of ours too)."""
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        fd = os.open(path, flags, 0o600) if private else os.open(path, flags, 0o666)
        if private:  # O_CREAT's mode is only for a new file; someone else's keeps theirs
            with contextlib.suppress(OSError):
                os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            write(fh)
    except OSError as exc:
        raise BadOptionError(f"{flag}: cannot write {path}: {short(exc)}") from exc


def open_trail(path: str) -> IO[str]:
    """The --log-file, opened to append before the first change (closed by the caller)."""
    try:
        return open(path, "a", encoding="utf-8")
    except OSError as exc:
        raise BadOptionError(f"--log-file: cannot write {path}: {short(exc)}") from exc
