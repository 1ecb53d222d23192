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

Where orjson decodes (common/jsondecode.py), it writes each item of the top level's lists and
objects (a pod, a node: kilobytes each, so the text still comes in chunks), ten times faster,
when its text is this one's: only JSON's own types (no tuples, no subclasses), string keys,
integers of 64 bits, finite floats in the range both write without an exponent (0, and 1e-4 to
1e16: the same shortest digits; outside it `1e16` against `1e+16`), and printable ASCII out
(orjson writes UTF-8 and DEL where json escapes them). Anything else: the walk below, as before.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import encode_basestring_ascii
from typing import Any

from kubectl_nodefail.common import jsondecode

INDENT = "  "
_INF = float("inf")
SPILL_AT = 1 << 14  # fragments `dump` holds before it writes them out as one chunk
FAST_SPILL_AT = 64  # fragments, once orjson's (kilobytes each) are among them
# a container goes to orjson whole from this depth (the length of its newline and indentation:
# an item of a list or object that is itself in the top level's object)
FAST_FROM = len("\n" + 2 * INDENT)
_orjson = jsondecode.compiled()
_JSON_TYPES = (dict, list, str, int, float, bool, type(None))

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


def _plain(value: Any) -> bool:
    """JSON's own types only, string keys, and finite floats orjson and json write alike."""
    kind = type(value)
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or (type(item) not in _SCALARS and not _plain(item)):
                return False
        return True
    if kind is list:
        return all(type(item) in _SCALARS or _plain(item) for item in value)
    if kind is float:
        return value == 0 or 1e-4 <= abs(value) < 1e16  # NaN and infinities: False
    return kind in _JSON_TYPES


_SCALARS = frozenset((str, int, bool, type(None)))  # written alike (orjson: up to 64 bits)


def _fast(value: Any, newline: str) -> str | None:
    """value's JSON by orjson at `newline`'s indentation, where it is this module's text."""
    if _orjson is None or not _plain(value):
        return None
    try:
        data = _orjson.dumps(value, option=_orjson.OPT_INDENT_2)
    except TypeError:  # orjson.JSONEncodeError: an integer beyond 64 bits, nesting too deep
        return None
    if not data.isascii() or b"\x7f" in data:  # json escapes both; orjson writes them
        return None
    return data.decode("ascii").replace("\n", newline)


def _any(value: Any, out: list[str], newline: str, spill: Spill | None) -> None:
    """Append value's JSON; `newline` is a newline and the current level's indentation."""
    text = _scalar(value)
    if text is not None:
        out.append(text)
        return
    if len(newline) >= FAST_FROM and _orjson is not None:
        text = _fast(value, newline)
        if text is not None:
            out.append(text)
            if spill is not None and len(out) >= FAST_SPILL_AT:
                spill(out)
            return
    if isinstance(value, (list, tuple)):
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
