"""Dataclasses as JSON-ready data: camelCase keys, RFC 3339 times, floats to one decimal. The
one form every JSON output and the saved plan file (its digest included) take."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from kubectl_nodefail.snapshot.model import format_time


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


# Per type: its dataclass fields as (name, camelCase key), or None for a type that is not a
# dataclass. Found once per type, not once per object (a big outage has ~100 objects per pod).
_FIELDS: dict[type, tuple[tuple[str, str], ...] | None] = {}
_PLAIN = (str, int, bool, type(None))
# A dataclass field with metadata {DATA: False} is not data (the JSON places it itself).
DATA = "data"


def _fields(value: Any) -> tuple[tuple[str, str], ...] | None:
    kind = type(value)
    if kind not in _FIELDS:
        is_data = dataclasses.is_dataclass(value) and not isinstance(value, type)
        _FIELDS[kind] = (
            tuple(
                (f.name, _camel(f.name))
                for f in dataclasses.fields(value)
                if f.metadata.get(DATA, True)
            )
            if is_data
            else None
        )
    return _FIELDS[kind]


def to_data(value: Any) -> Any:
    """Dataclasses -> JSON-ready dicts with camelCase keys and RFC 3339 times."""
    if type(value) in _PLAIN:
        return value
    fields = _fields(value)
    if fields is not None:
        return {key: to_data(getattr(value, name)) for name, key in fields}
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, (list, tuple)):
        return [to_data(v) for v in value]
    if isinstance(value, dict):
        return {k: to_data(v) for k, v in value.items()}
    if isinstance(value, float):
        return round(value, 1)
    return value
