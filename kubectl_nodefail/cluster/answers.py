"""What the API server's answers mean: a 2xx body decoded and held to the shape the readers
rely on (else MalformedResponse, exit 14); an error answer, a failed connection or a spent
deadline worded as the tool's one-line errors (errors.py); a retryable failure with its
Retry-After, the signal kube.Cluster's retries run on.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from http import HTTPStatus
from typing import Any

from kubectl_nodefail.cluster.netfail import Failure
from kubectl_nodefail.cluster.resources import Obj
from kubectl_nodefail.common import jsondecode
from kubectl_nodefail.common.errors import (
    ApiError,
    AuthError,
    Conflict,
    DeadlineExceeded,
    Forbidden,
    Gone,
    MalformedResponse,
    NodefailError,
    NotFound,
    ServerError,
    UnreachableError,
    short,
)

# a 2xx body's decoder: orjson where the platform has it, else the standard library, the same
# values either way (common/jsondecode.py)
decode_json = jsondecode.loads


def answer_field(doc: Obj, *keys: str) -> Any:
    """A field of an API answer read outside the dump schema (an access or identity review),
    or None where a level on the way is missing or not an object: an answer of the wrong
    shape reads as the field absent, never as a traceback."""
    value: Any = doc
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


class ErrorAnswers:
    """The failures of kube.Cluster's requests as the tool's errors, worded with the context
    and server it talks to (set by Cluster)."""

    context: str
    host: str
    _acting_as: str

    def _unreachable(self, failure: Failure, timeout: float | None) -> UnreachableError:
        """A failed connection as kubectl words it (netfail), our hint added."""
        where = f"context {self.context!r}" if self.context else "no context: kubectl's default"
        hint = f"{where}; {failure.hint}"
        if failure.kind == "timeout":
            hint = f"no connection within {_seconds(timeout)}; {hint}"
        return UnreachableError(failure.message, hint=hint)

    def _deadline_error(self, what: str) -> DeadlineExceeded:
        return DeadlineExceeded(
            f"{what}: the overall deadline ran out waiting for the API server at {self.host}",
            hint=f"context {self.context!r}; raise --deadline, or check the network and the "
            "cluster",
        )

    def _api_error(self, status: int | None, body: Any, method: str, path: str) -> NodefailError:
        """An error answer, as the tool's error for its status (one line, the server's word)."""
        what = f"{method} {path}"
        message, bare = "", False
        causes: tuple[str, ...] = ()
        try:
            doc = json.loads(body) if body else {}
            if isinstance(doc, dict):
                message = str(doc.get("message", ""))
                details = doc.get("details")
                told = ("kind", "name", "causes")
                bare = doc.get("kind") == "Status" and not (
                    isinstance(details, dict) and any(details.get(k) for k in told)
                )
                found = details.get("causes") if isinstance(details, dict) else None
                if isinstance(found, list):
                    causes = tuple(str(c.get("reason")) for c in found if isinstance(c, dict))
        except (ValueError, RecursionError):
            pass
        if not message and body:
            text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
            message = short(text) if text.strip() else ""
        error = self._error_for(status, message, what, bare)
        error.causes = causes
        return error

    def _error_for(self, status: int | None, message: str, what: str, bare: bool) -> NodefailError:
        if status == 401:
            return AuthError(
                f"the API server rejected the credentials of context {self.context!r} "
                "(401 Unauthorized)",
                hint="expired token or certificate? log in again",
            )
        if status == 403:
            return Forbidden(
                f"forbidden: {what}: {message}",
                hint="ask for the roles `kubectl nodefail rbac` prints" + self._acting_as,
            )
        if status == 404:
            return NotFound(f"not found: {what}", status=404)
        if status == 409:
            return Conflict(f"conflict: {what}: {message}", status=409)
        if status == 410:
            return Gone(f"gone: {what}: {message}", status=410)
        if status is not None and (status >= 500 or status == 429):
            return ServerError(
                f"{what} failed ({status} {_reason_phrase(status)}): {message}".rstrip(": "),
                status=status,
            )
        return ApiError(
            f"{what} failed ({status}): {message}".rstrip(": "), status=status, bare=bare
        )


def _seconds(timeout: float | None) -> str:
    return "the time allowed" if timeout is None else f"{timeout:g}s"


def _reason_phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "error"


def _status_kw(error: NodefailError) -> dict[str, Any]:
    return {"status": error.status} if isinstance(error, ApiError) else {}


class _Retryable(Exception):  # a signal inside request(); never leaves it
    """A failure worth trying a GET again for; `error` is what to raise when out of tries."""

    def __init__(self, error: NodefailError, retry_after: str | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.retry_after_text = retry_after
        self.retry_after = _parse_retry_after(retry_after)
        # told to come back (429, or a Retry-After): retried while the deadline allows
        self.throttled = getattr(error, "status", None) == 429 or self.retry_after is not None


def _parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds (delta-seconds or an HTTP date); None when absent or unreadable."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def _decode(data: bytes, what: str, loads: Callable[[bytes], Any] = json.loads) -> Obj:
    """A 2xx body as a JSON object of the expected shape, or MalformedResponse (exit 14)."""
    try:
        doc = loads(data or b"{}")
    except RecursionError as exc:
        raise MalformedResponse(f"{what}: the API server's answer is nested too deeply") from exc
    except ValueError as exc:
        raise MalformedResponse(f"{what}: the API server sent something that is not JSON") from exc
    if not isinstance(doc, dict):
        raise MalformedResponse(
            f"{what}: the API server sent a JSON {type(doc).__name__}, not an object"
        )
    problem = _shape_problem(doc)
    if problem:
        raise MalformedResponse(f"{what}: malformed answer from the API server: {problem}")
    return doc


def _shape_problem(doc: Obj) -> str | None:
    """What the readers rely on in every answer: metadata objects; lists of named objects."""
    if "metadata" in doc and not isinstance(doc["metadata"], dict):
        return "metadata is not an object"
    if "rows" in doc and not isinstance(doc["rows"], list):
        return "rows is not a list"
    if "items" not in doc:
        return None
    items = doc["items"]
    if items is None:
        doc["items"] = []
        return None
    if not isinstance(items, list):
        return "items is not a list"
    for i, item in enumerate(items):
        meta = item.get("metadata") if isinstance(item, dict) else None
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            return f"items[{i}] is not an object with metadata.name"
    return None
