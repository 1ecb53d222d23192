"""`json.dumps(value, indent=2)`, the same text, at a fraction of its cost.

Before Python 3.13 the standard library has a C encoder only for compact output; with `indent`
it falls back to a pure-Python encoder that chains one generator per nesting level, so every
token climbs the whole depth (a 1,000-node outage diagnosis is ~80 MB of JSON: seconds). This
one appends to one list, strings encoded by the library's own C function. Anything it does not
handle exactly as the library does (a key that is not a string, a value that is not JSON, a
reference cycle) is left to `json.dumps`, which gives its own result or error.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii
from typing import Any

INDENT = "  "
_INF = float("inf")


class _Unsupported(Exception):
    """A value this encoder leaves to json.dumps."""


def dumps(value: Any) -> str:
    """json.dumps(value, indent=2)."""
    out: list[str] = []
    try:
        _any(value, out, "\n")
    except (_Unsupported, RecursionError):
        return json.dumps(value, indent=2)
    return "".join(out)


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == _INF:
        return "Infinity"
    if value == -_INF:
        return "-Infinity"
    return float.__repr__(value)


def _scalar(value: Any) -> str | None:
    """The JSON of a scalar as json's encoder writes it; None for a container or other."""
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)  # IntEnum and other subclasses: the number
    if isinstance(value, float):
        return _float(value)
    return None


def _any(value: Any, out: list[str], newline: str) -> None:
    """Append value's JSON; `newline` is a newline and the current level's indentation."""
    text = _scalar(value)
    if text is not None:
        out.append(text)
    elif isinstance(value, (list, tuple)):
        _list(value, out, newline)
    elif isinstance(value, dict):
        _dict(value, out, newline)
    else:
        raise _Unsupported


def _list(items: list[Any] | tuple[Any, ...], out: list[str], newline: str) -> None:
    if not items:
        out.append("[]")
        return
    inner = newline + INDENT
    out.append("[" + inner)
    separator = "," + inner
    first = True
    for value in items:
        if first:
            first = False
        else:
            out.append(separator)
        if type(value) is str:
            out.append(encode_basestring_ascii(value))
        else:
            _any(value, out, inner)
    out.append(newline + "]")


def _dict(mapping: dict[Any, Any], out: list[str], newline: str) -> None:
    if not mapping:
        out.append("{}")
        return
    inner = newline + INDENT
    out.append("{" + inner)
    separator = "," + inner
    first = True
    for key, value in mapping.items():
        if not isinstance(key, str):
            raise _Unsupported  # json turns numbers, booleans and None into strings
        if first:
            first = False
        else:
            out.append(separator)
        out.append(encode_basestring_ascii(key) + ": ")
        if type(value) is str:
            out.append(encode_basestring_ascii(value))
        else:
            _any(value, out, inner)
    out.append(newline + "}")
