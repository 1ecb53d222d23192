"""`json.dumps(value, indent=2)`, the same text, at a fraction of its cost.

Before Python 3.13 the standard library has a C encoder only for compact output; with `indent`
it falls back to a pure-Python encoder that chains one generator per nesting level, so every
token climbs the whole depth (a 1,000-node outage diagnosis is ~80 MB of JSON: seconds). This
one appends to one list, strings encoded by the library's own C function. Anything it does not
handle exactly as the library does (a key that is not a string, a value that is not JSON, a
reference cycle) is left to `json.dumps`, which gives its own result or error.

`dump` writes the same text in chunks as it goes: the text of a big outage's diagnosis, held
whole as fragments and then as one string, took more memory than the diagnosis itself
(docs/scale.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import encode_basestring_ascii
from typing import Any

INDENT = "  "
_INF = float("inf")
SPILL_AT = 1 << 14  # fragments `dump` holds before it writes them out as one chunk

Spill = Callable[[list[str]], None]


class _Unsupported(Exception):
    """A value this encoder leaves to json.dumps."""


def dumps(value: Any) -> str:
    """json.dumps(value, indent=2)."""
    out: list[str] = []
    try:
        _any(value, out, "\n", None)
    except (_Unsupported, RecursionError):
        return json.dumps(value, indent=2)
    return "".join(out)


def dump(value: Any, write: Callable[[str], object]) -> None:
    """Write json.dumps(value, indent=2) through `write`, a chunk every SPILL_AT fragments,
    never holding the whole text. A value json.dumps rejects too (one that is not JSON, a
    reference cycle) raises json's own error, after part of the text was written."""
    out: list[str] = []

    def spill(fragments: list[str]) -> None:
        write("".join(fragments))
        fragments.clear()

    try:
        _any(value, out, "\n", spill)
    except (_Unsupported, RecursionError):
        json.dumps(value, indent=2)  # raises the library's own error for what it rejects
        raise
    spill(out)


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


def _key(key: Any) -> str:
    """A key that is not a string, as json's encoder turns it into one: the text of the
    number, boolean or null (json: "keys must be str, int, float, bool or None")."""
    text = _scalar(key)
    if text is None:
        raise _Unsupported
    return text


def _any(value: Any, out: list[str], newline: str, spill: Spill | None) -> None:
    """Append value's JSON; `newline` is a newline and the current level's indentation."""
    text = _scalar(value)
    if text is not None:
        out.append(text)
    elif isinstance(value, (list, tuple)):
        _list(value, out, newline, spill)
    elif isinstance(value, dict):
        _dict(value, out, newline, spill)
    else:
        raise _Unsupported


def _list(
    items: list[Any] | tuple[Any, ...], out: list[str], newline: str, spill: Spill | None
) -> None:
    if spill is not None and len(out) >= SPILL_AT:
        spill(out)
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
            _any(value, out, inner, spill)
    out.append(newline + "]")


def _dict(mapping: dict[Any, Any], out: list[str], newline: str, spill: Spill | None) -> None:
    if spill is not None and len(out) >= SPILL_AT:
        spill(out)
    if not mapping:
        out.append("{}")
        return
    inner = newline + INDENT
    out.append("{" + inner)
    separator = "," + inner
    first = True
    for key, value in mapping.items():
        if first:
            first = False
        else:
            out.append(separator)
        out.append(encode_basestring_ascii(key if isinstance(key, str) else _key(key)) + ": ")
        if type(value) is str:
            out.append(encode_basestring_ascii(value))
        else:
            _any(value, out, inner, spill)
    out.append(newline + "}")
