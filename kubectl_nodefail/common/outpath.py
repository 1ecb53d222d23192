"""The one check of every file a command writes: dump -f, remediate --plan-out and --log-file.

It runs before the first request, so a path that cannot be written costs nothing: one line, exit
2 (usage), nothing read from the cluster and nothing written. It looks, and creates nothing: the
parent folder must exist and be writable, the path must not name a folder, and the name must be
one the file system can take. The path is checked as given, not normalised, since that is what
open() will follow ("missing/../x.json" needs a folder "missing").
"""

from __future__ import annotations

import os

from kubectl_nodefail.common.errors import BadOptionError


def check_writable(flag: str, path: str | None) -> None:
    """Refuse, with BadOptionError (exit 2), an output path that cannot be written.
    None means the option was not given; '-' is never passed here (stdout)."""
    if path is None:
        return
    if not path:
        raise BadOptionError(f"{flag}: the path is empty", hint="nothing was done")
    problem = _problem(path)
    if problem:
        raise BadOptionError(f"{flag}: cannot write {path}: {problem}", hint="nothing was done")


def _problem(path: str) -> str | None:
    try:
        os.fsencode(path)
    except UnicodeError:
        return "it is not a valid file name here"
    if "\0" in path:
        return "it contains a NUL character"
    folder, name = os.path.split(path)
    folder = folder or os.curdir
    if name in ("", os.curdir, os.pardir) or os.path.isdir(path):
        return "it is a folder, not a file"
    if not os.path.isdir(folder):
        exists = os.path.lexists(folder)
        return f"{folder} is not a folder" if exists else f"the folder {folder} does not exist"
    if len(os.fsencode(name)) > _limit(folder, "PC_NAME_MAX", 255):
        return "the file name is too long"
    if len(os.fsencode(os.path.abspath(path))) >= _limit(folder, "PC_PATH_MAX", 4096):
        return "the path is too long"
    if os.path.islink(path) and not os.path.exists(path):  # open() creates its target
        return _problem(os.path.realpath(path))
    if os.path.exists(path):
        return None if os.access(path, os.W_OK) else "permission denied"
    return None if os.access(folder, os.W_OK | os.X_OK) else f"the folder {folder} is not writable"


def _limit(folder: str, name: str, default: int) -> int:
    try:
        return os.pathconf(folder, name)
    except (OSError, ValueError):
        return default
