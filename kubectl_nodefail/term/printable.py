"""Text from the cluster or a dump made printable before it reaches a terminal or a Markdown file.

A container's waiting reason, an Event's message, a name in a dump: any string the API stores
can hold an escape sequence (`ESC ] 0 ; title BEL` retitles the terminal, `ESC [ 2 J` clears
it, `ESC [ 32 m` paints a fake green Ready), a carriage return or backspaces that overwrite
what was printed, a C1 control (`U+009B` is CSI on many terminals), or a bidi override that
shows a name backwards. The text outputs show every such character as an escape instead:

- `\\n`, `\\r`, `\\t` for newline, carriage return and tab (inside a value a newline would
  start a line of its own that looks like ours: a forged table row);
- `\\xHH` for the other C0 controls (U+0000-U+001F), DEL (U+007F) and the C1 controls
  (U+0080-U+009F): ESC is `\\x1b`, CSI `\\x9b`;
- `\\uHHHH` (`\\UHHHHHHHH` past U+FFFF) for format characters (Unicode category Cf: the bidi
  overrides and isolates U+202A-U+202E and U+2066-U+2069, zero-width spaces and joiners, the
  byte-order mark, tag characters), the line and paragraph separators U+2028 and U+2029, and
  lone surrogates.

A backslash itself is not escaped, so the notation is for reading, not for reversing: the exact
value is in `-o json` and `-o yaml`, which are data and are never changed here.

`clean` is applied to what a text output is made from (the diagnosis, a plan, a timeline), at
the entry of each text renderer and before any width is measured (fit.py cuts and wraps the
escaped text, so columns stay aligned); `text` is the last guard on a whole output text (its
own newlines kept), applied before color.py adds the plugin's own escape sequences.
"""

from __future__ import annotations

import dataclasses
import unicodedata
from typing import Any

# Categories shown as escapes: controls, format characters, surrogates, line/paragraph separators
_ESCAPED = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    point = ord(ch)
    if point < 0x100:
        return f"\\x{point:02x}"
    if point < 0x10000:
        return f"\\u{point:04x}"
    return f"\\U{point:08x}"


def escape(value: str) -> str:
    """`value` with every control, format character, separator and surrogate as an escape."""
    if value.isprintable():  # every character escaped here is one str.isprintable rejects
        return value
    out = "".join(_escape_char(ch) if unicodedata.category(ch) in _ESCAPED else ch for ch in value)
    return value if out == value else out  # (a no-break space: not printable, not escaped)


def text(output: str) -> str:
    """A whole output text made printable, its line breaks (ours) kept."""
    if output.isprintable():
        return output
    return "\n".join(escape(line) for line in output.split("\n"))


# Per dataclass type: its field names (looked up once per type, not once per object)
_FIELDS: dict[type, tuple[str, ...]] = {}


def clean(value: Any) -> Any:
    """`value` with every string in it escaped (dataclasses, lists, tuples and dicts, keys too,
    walked): a copy where something changed, the same object where nothing did, so the usual
    diagnosis, with nothing to escape, is not copied."""
    return _clean(value, {})


def _clean(value: Any, seen: dict[int, Any]) -> Any:
    kind = type(value)
    if kind is str:
        return escape(value)
    if kind in (int, float, bool, type(None)):
        return value
    key = id(value)
    if key in seen:
        return seen[key]
    result = value
    if kind is list:
        items = [_clean(v, seen) for v in value]
        if any(a is not b for a, b in zip(items, value)):
            result = items
    elif kind is tuple:
        items = [_clean(v, seen) for v in value]
        if any(a is not b for a, b in zip(items, value)):
            result = tuple(items)
    elif kind is dict:
        pairs = [(_clean(k, seen), _clean(v, seen)) for k, v in value.items()]
        if any(a is not k or b is not v for (a, b), (k, v) in zip(pairs, value.items())):
            result = dict(pairs)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = _FIELDS.get(kind)
        if names is None:
            names = _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(value) if f.init)
        changed = {}
        for name in names:
            old = getattr(value, name)
            new = _clean(old, seen)
            if new is not old:
                changed[name] = new
        if changed:
            result = dataclasses.replace(value, **changed)
    seen[key] = result
    return result
