"""The language the dump schema (schemas.py) is written in: a spec is a checked JSON scalar, an
object of named fields, a list or a map of one spec, or an object kept whole; the scalars a
Kubernetes object holds (strings, booleans, 64-bit integers, int-or-string, RFC 3339 times)
are checked here, each returning its problem in words (dumpschema.py turns specs into checks).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Union

# --- the schema language -----------------------------------------------------------------


@dataclass(frozen=True)
class Scalar:
    """A JSON scalar checked by `check` (which returns a problem, or None)."""

    describe: str
    check: Callable[[Any], str | None]


@dataclass(frozen=True)
class Object:
    """A JSON object: the listed fields are checked, others left alone; `required` must be
    present (and not null)."""

    fields: dict[str, Spec] = field(default_factory=dict)
    required: tuple[str, ...] = ()


@dataclass(frozen=True)
class ListOf:
    item: Spec


@dataclass(frozen=True)
class MapOf:
    """A JSON object with any keys, every value of one spec (labels, annotations)."""

    value: Spec


@dataclass(frozen=True)
class AnyObject:
    """An object whose content the analysis does not look into (only whether it is set)."""


Spec = Union[Scalar, Object, ListOf, MapOf, AnyObject]  # evaluated at run time: no `|` (3.9)


def _expect(kind: type | tuple[type, ...], word: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            return f"must be {word}, not a boolean"
        return None if isinstance(value, kind) else f"must be {word}, not {_json_type(value)}"

    return check


def _time(value: Any) -> str | None:
    if not isinstance(value, str):
        return f"must be an RFC 3339 time string, not {_json_type(value)}"
    if parse_rfc3339(value) is None:
        return f"is not an RFC 3339 time with a zone (in range): {value[:40]!r}"
    return None


def _int64(value: Any) -> str | None:
    problem = _expect(int, "an integer")(value)
    if problem is None and not -(2**63) <= value < 2**63:
        return "is out of the 64-bit integer range"
    return problem


# RFC 3339 as the API server's Go code reads it (time.RFC3339): a fraction of any length
# (RFC3339Nano has 9 digits), then Z or an offset. datetime.fromisoformat alone differs by
# Python: 3.9 and 3.10 take only 3 or 6 digits, 3.11+ also forms that are not RFC 3339.
_RFC3339 = re.compile(
    r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})", re.ASCII
)


@functools.lru_cache(maxsize=1 << 16)
def parse_rfc3339(value: str) -> datetime | None:
    """The time in UTC (a fraction cut to microseconds), or None for anything else (no zone,
    not RFC 3339, or not representable in UTC, as 0001-01-01T00:00:00+14:00 is not).
    Remembered: a snapshot repeats the same few seconds in thousands of objects, read once
    by the checks and again by the analysis (datetimes are immutable, so sharing is safe)."""
    match = _RFC3339.fullmatch(value)
    if not match:
        return None
    seconds, fraction, zone = match.groups()
    micros = f".{(fraction or '')[:6]:0<6}"
    try:
        parsed = datetime.fromisoformat(seconds + micros + ("+00:00" if zone == "Z" else zone))
        return parsed.astimezone(timezone.utc)
    except (ValueError, OverflowError):
        return None


STR = Scalar("a string", _expect(str, "a string"))
BOOL = Scalar("a boolean", _expect(bool, "a boolean"))
INT = Scalar("an integer", _int64)
TIME = Scalar("an RFC 3339 time", _time)
STR_MAP = MapOf(STR)


def _int_or_str(value: Any) -> str | None:
    if isinstance(value, str):
        return None
    return _int64(value) and "must be an integer or a string (int-or-string)"


INT_OR_STR = Scalar("an integer or a string", _int_or_str)
STR_LIST = ListOf(STR)
ANY = AnyObject()


def obj(required: tuple[str, ...] = (), **fields: Spec) -> Object:
    return Object(dict(fields), required)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"a number ({value!r:.20})"
    if isinstance(value, str):
        return f"a string ({value[:30]!r})"
    return "a list" if isinstance(value, list) else "an object"
