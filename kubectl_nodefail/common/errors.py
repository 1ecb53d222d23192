"""The tool's own error hierarchy and its documented exit codes.

Every failure the user can cause or meet (bad kubeconfig, unreachable API server, expired
credentials, malformed dump) is one of these; the CLI prints its one-line message and hint and
exits with its code. Anything else is a bug (exit 1, traceback only with -v).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum


class Exit(IntEnum):
    """Exit codes. Stable: runbooks branch on them."""

    # diagnose: nothing wrong; remediate: every change done, waits listed (or, as a plan, runnable)
    OK = 0
    INTERNAL = 1  # a bug in the tool
    USAGE = 2  # bad flags or arguments (click's own code)
    PROBLEMS_FOUND = 3  # diagnose: failed nodes or stuck pods were found
    PARTIAL = 4  # remediate: some steps refused, skipped or failed
    NOTHING_TO_DO = 5  # remediate: no action is needed or possible
    INTERRUPTED = 6  # remediate --confirm: stopped by SIGINT/SIGTERM; re-run to finish
    UNCONFIRMED = 7  # remediate --confirm: a step was accepted but its effect not observed
    CONFIG = 10  # no kubeconfig, unknown context, unusable configuration; python3 < 3.9 (zipapp)
    UNREACHABLE = 11  # API server unreachable or timing out
    AUTH = 12  # credentials rejected (401) or a required read forbidden (403)
    BAD_INPUT = 13  # malformed or unreadable dump file
    API = 14  # any other API server error
    PLAN_MISMATCH = 15  # remediate --plan-in: the plan was made for another cluster or node
    NOT_FOUND = 16  # a node named on the command line does not exist (kubectl's NotFound)
    ATTESTATION_CONTRADICTED = 17  # remediate: an attestation the cluster's state contradicts
    CTRL_C = 130  # diagnose, dump: interrupted by Ctrl-C (remediate's interruptions are 6)


class NodefailError(Exception):
    """Base error: a one-line message, an optional hint and an exit code."""

    exit_code: Exit = Exit.INTERNAL
    causes: tuple[str, ...] = ()  # an API error's details.causes[].reason (Go: CauseType)

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def line(self) -> str:
        """The one line printed to stderr (line breaks and control characters from the
        input, e.g. a name in a dump, are escaped: it stays one line)."""
        return one_line(f"{self.message} ({self.hint})" if self.hint else self.message)


def short(exc: object) -> str:
    """The first line of an exception's text (its type's name when it has none), cut to 200."""
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:200]


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name a typo most likely meant (difflib's ratio 0.6 or more), or None: the
    one rule behind every "did you mean" (nodes, namespaces, --explain names)."""
    import difflib

    close = difflib.get_close_matches(name, list(dict.fromkeys(known)), n=1, cutoff=0.6)
    return close[0] if close else None


def one_line(text: str) -> str:
    """`text` with every character that could break or hide a line escaped (\\n, \\x85, ...)."""
    return "".join(
        ch if ch.isprintable() or ch == " " else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )


class ConfigError(NodefailError):
    exit_code = Exit.CONFIG


class UnreachableError(NodefailError):
    exit_code = Exit.UNREACHABLE


class AuthError(NodefailError):
    exit_code = Exit.AUTH


class BadInputError(NodefailError):
    exit_code = Exit.BAD_INPUT


class NameNotFound(NodefailError):
    """A node the user named is not in the cluster (or the dump): as kubectl, an error, never
    an all-clear for a typo."""

    exit_code = Exit.NOT_FOUND


class BadOptionError(NodefailError):
    """An option value that cannot be used (e.g. an output path that cannot be written)."""

    exit_code = Exit.USAGE


class InterruptedRun(NodefailError):
    """SIGINT/SIGTERM before the first change: nothing was done."""

    exit_code = Exit.INTERRUPTED


class PlanMismatch(NodefailError):
    """A saved plan replayed against another context, server or cluster, or on a node
    recreated since: refused before anything is written."""

    exit_code = Exit.PLAN_MISMATCH


class AttestationContradicted(NodefailError):
    """remediate: a typed --node-shutdown-confirmed names a node whose state says its machine
    runs (Ready, or a kubelet that renewed its lease after the failure began): refused before
    anything is written, whatever else the plan holds."""

    exit_code = Exit.ATTESTATION_CONTRADICTED


class ApiError(NodefailError):
    """Any other error answer from the API server; `status` is the HTTP status when known."""

    exit_code = Exit.API

    def __init__(
        self, message: str, hint: str | None = None, status: int | None = None, bare: bool = False
    ) -> None:
        super().__init__(message, hint)
        self.status = status
        # A Status naming no object and no cause: the server said no more than its code (as it
        # does for a JSON patch that does not apply, a failed `test` included).
        self.bare = bare


class NotFound(ApiError):
    """The object is gone (404). Callers usually treat this as 'vanished mid-run', not failure."""


class Conflict(ApiError):
    """A precondition (UID / resourceVersion) did not match (409)."""


class Forbidden(AuthError):
    """A 403 on one request; optional reads turn this into a stated gap, not a failure."""


class ServerError(ApiError):
    """A 5xx answer (or a 429 still refused after the retries the deadline allowed): the server
    failed this request. Optional reads turn it into a stated gap; required ones exit 14."""


class Gone(ApiError):
    """A 410: the continue token or resourceVersion of a paginated list has expired."""


class MalformedResponse(ApiError):
    """The server answered 2xx with something that is not the JSON object the request expects."""


class DeadlineExceeded(UnreachableError):
    """The overall deadline of the run (--deadline) ran out before the work was done."""


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """' (did you mean X?)' for the closest known names, or ''."""
    close = closest(name, known)
    return f" (did you mean {close}?)" if close else ""


def explain_not_found(nodes: list[str], pods: list[str], name: str) -> NodefailError:
    """The one line for an --explain NAME that is not in the diagnosis (pods: NS/NAME)."""
    known = nodes + pods
    if "/" not in name:  # a bare pod name is matched by name too
        known += [p.split("/", 1)[1] for p in pods]
    return BadOptionError(
        f"--explain {name}: not found among the failed nodes and stuck pods of this diagnosis"
        f"{did_you_mean(name, known)}",
        hint="a healthy node or pod has nothing to explain; a pod is NAMESPACE/NAME",
    )
