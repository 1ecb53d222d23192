"""Read a JSON object from a file without holding the file's text: element by element.

A dump is one JSON object whose bulk is one list (`items`: 60,000 pods are 0.2-0.3 GB of text).
`json.load` holds that whole text and every parsed object at once; here the text is read in
chunks and each top-level value (and each element of a top-level list) is parsed as soon as it
is complete, so the text read so far can be dropped. With an object_hook that cuts each object
to what is needed, memory is what is kept, not the file's size.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TextIO

CHUNK = 1 << 20
_WHITESPACE = " \t\n\r"
_NUMBER_CHARS = "0123456789.eE+-"


class JsonError(ValueError):
    """Not valid JSON, at a line and column of the file (1-based)."""

    def __init__(self, message: str, lineno: int, colno: int) -> None:
        super().__init__(f"{message} (line {lineno}, column {colno})")
        self.lineno = lineno
        self.colno = colno


class _Reader:
    def __init__(self, fh: TextIO, object_hook: Callable[[dict[str, Any]], Any] | None) -> None:
        self.fh = fh
        self.text = ""
        self.pos = 0
        self.eof = False
        self.lines_before = 0  # newlines in the text already dropped
        self.column_base = 0  # characters of the current line already dropped
        self.decoder = json.JSONDecoder(object_hook=object_hook)

    def fill(self) -> bool:
        """Read more (at least as much again as is buffered); False at the end of the file."""
        if self.eof:
            return False
        if self.pos > CHUNK:  # drop what was parsed
            dropped = self.text[: self.pos]
            newlines = dropped.count("\n")
            if newlines:
                self.lines_before += newlines
                self.column_base = len(dropped) - dropped.rfind("\n") - 1
            else:
                self.column_base += len(dropped)
            self.text, self.pos = self.text[self.pos :], 0
        more = self.fh.read(max(CHUNK, len(self.text)))
        self.eof = not more
        self.text += more
        return not self.eof

    def error(self, message: str, pos: int | None = None) -> JsonError:
        pos = self.pos if pos is None else pos
        before = self.text[:pos]
        newlines = before.count("\n")
        column = pos - before.rfind("\n") if newlines else self.column_base + pos + 1
        return JsonError(message, self.lines_before + newlines + 1, column)

    def peek(self) -> str:
        """The next non-whitespace character ('' at the end), without consuming it."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in _WHITESPACE:
                self.pos += 1
            if self.pos < len(self.text) or not self.fill():
                return self.text[self.pos : self.pos + 1]

    def expect(self, chars: str) -> str:
        char = self.peek()
        if not char or char not in chars:
            raise self.error(f"expected {' or '.join(repr(c) for c in chars)}")
        self.pos += 1
        return char

    def value(self) -> Any:
        """One complete JSON value (a number only once what follows it is read too)."""
        self.peek()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                if self.fill():
                    continue
                raise self.error(exc.msg, exc.pos) from exc
            # A number is complete only once a character that cannot continue it is read.
            complete = end < len(self.text) and self.text[end] not in _NUMBER_CHARS
            if complete or not self.fill():
                self.pos = end
                return value


def load(
    fh: TextIO,
    object_hook: Callable[[dict[str, Any]], Any] | None = None,
    on_item: Callable[[Any], Any] | None = None,
    items_key: str = "items",
) -> Any:
    """The document in `fh`; a top-level object's list values are parsed element by element,
    those of `items_key` each passed through `on_item` as soon as it is parsed (what it
    returns is kept).

    Raises JsonError (with line and column) for invalid JSON, RecursionError for nesting
    deeper than the parser's stack."""
    reader = _Reader(fh, object_hook)
    if reader.peek() != "{":
        doc = reader.value()
    else:
        reader.pos += 1
        doc = {}
        while reader.peek() != "}":
            if doc:
                reader.expect(",")
            if reader.peek() != '"':
                raise reader.error("expected a key")
            key = reader.value()
            reader.expect(":")
            if reader.peek() == "[":
                reader.pos += 1
                items: list[Any] = []
                while reader.peek() != "]":
                    if items:
                        reader.expect(",")
                    item = reader.value()
                    items.append(on_item(item) if on_item and key == items_key else item)
                reader.pos += 1
                doc[key] = items
            else:
                doc[key] = reader.value()
        reader.expect("}")
        if object_hook is not None:
            doc = object_hook(doc)
    if reader.peek():
        raise reader.error("extra data after the document")
    return doc
