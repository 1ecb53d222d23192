"""JSON bodies decoded by orjson where the platform has it, else by the standard library: the
same Python values either way, so every output is the same bytes. (`-o json` is encoded by it
too, where it writes the same text: render/jsonindent.py.)

Where orjson comes from: the krew archives for linux amd64/arm64 and darwin carry its compiled
module for each CPython the plugin supports (release/build.py), pip and pipx users get it with
the `fast` extra. It is chosen at start: an interpreter it was not built for (another CPython,
musl, another architecture) fails to import it, and the standard library decodes.

The same values: orjson refuses what the standard library accepts beyond strict JSON (NaN,
Infinity, numbers too large for a float, lone surrogates in strings, nesting past its limit),
and such a body is then decoded by the standard library, which answers as it would have alone:
the same value, or the same error. The one difference left is an integer literal beyond 64
bits, which orjson reads as a float: the API server never writes one for an integer field (its
integers are int64), and a float64 it writes as one ("18446744073709552000") is a float there
too. `KUBECTL_NODEFAIL_JSON=stdlib` turns orjson off (a comparison, a suspected difference).
"""

from __future__ import annotations

import json
import os
from types import ModuleType
from typing import Any

ENV = "KUBECTL_NODEFAIL_JSON"


def _orjson_module() -> ModuleType | None:
    """orjson, unless it is absent, built for another interpreter, or turned off."""
    if os.environ.get(ENV) == "stdlib":
        return None
    try:
        import orjson
    except (ImportError, OSError):
        return None
    return orjson


_orjson = _orjson_module()


def loads(data: bytes | str) -> Any:
    """Decode a JSON document (orjson when it can, else the standard library)."""
    if _orjson is not None:
        try:
            return _orjson.loads(data)
        except _orjson.JSONDecodeError:
            pass  # beyond strict JSON, or not JSON: the standard library's answer
    return json.loads(data)


def compiled() -> ModuleType | None:
    """orjson when it is what decodes (render/jsonindent.py encodes by it too), else None."""
    return _orjson


def decoder() -> str:
    """What decodes: `orjson 3.11.5` or `json (standard library)`."""
    if _orjson is None:
        return "json (standard library)"
    return f"orjson {getattr(_orjson, '__version__', '?')}"
