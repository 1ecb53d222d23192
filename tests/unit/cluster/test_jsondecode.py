"""The two JSON decoders (common/jsondecode.py): orjson where the platform has it, the standard
library else, give the same values, so every output is the same bytes: on every recorded
fixture (the objects as the real API server served them, through the analysis to the JSON and
the table), and on any JSON document hypothesis draws, strict or beyond (NaN, huge numbers,
lone surrogates: the standard library's answer either way)."""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.common import jsondecode
from kubectl_nodefail.render import render
from kubectl_nodefail.snapshot import dumpschema
from kubectl_nodefail.snapshot.model import from_items, parse_time

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
DUMPS = sorted(FIXTURES.rglob("*.json"))
LINES = sorted(FIXTURES.rglob("*.jsonl"))


def same(a: Any, b: Any) -> bool:
    """Equal and of the same types all the way down (1 == 1.0 == True in Python; not here), a
    NaN equal to a NaN; `a` (jsondecode's) a float where `b` (the standard library's) is an
    integer beyond 64 bits, as jsondecode documents (orjson reads such a literal as a float)."""
    if type(a) is float and type(b) is int and not -(2**63) <= b < 2**64:
        return a == float(b)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def both(data: bytes) -> tuple[Any, Any]:
    """`data` decoded by jsondecode (orjson first) and by the standard library alone; an error
    is returned as its type and message."""
    out = []
    for loads in (jsondecode.loads, json.loads):
        try:
            out.append(loads(data))
        except (ValueError, RecursionError) as exc:
            out.append((type(exc), str(exc)))
    return out[0], out[1]


def test_orjson_is_what_decodes_here() -> None:
    """The test extra installs orjson: the identity below compares two decoders, not one."""
    assert jsondecode.decoder() == f"orjson {orjson.__version__}"


@pytest.mark.parametrize("path", DUMPS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_fixture_decodes_and_renders_the_same_bytes(path: Path) -> None:
    data = path.read_bytes()
    fast, slow = both(data)
    assert same(fast, slow)
    if not isinstance(fast, dict) or not isinstance(fast.get("items"), list):
        return  # a recorded answer other than a dump (a plan, a results file): values only
    outputs = []
    for doc in (fast, slow):
        dumpschema.check_items(doc["items"])
        captured = parse_time(doc.get("capturedAt")) or parse_time("2026-12-01T00:00:00Z")
        assert captured is not None
        report = diagnose(from_items(doc["items"], captured), captured)
        outputs.append((render.as_json(render.report_data(report)), render.table(report)))
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize("path", LINES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_recorded_watch_event_decodes_the_same(path: Path) -> None:
    lines = [line for line in path.read_bytes().splitlines() if line.strip()]
    assert lines
    for line in lines:
        fast, slow = both(line)
        assert same(fast, slow), line[:200]


# Any JSON value: the API's domain (64-bit integers, finite floats, any text) and beyond it.
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)


@given(documents)
@settings(max_examples=300)
def test_any_document_decodes_the_same(doc: Any) -> None:
    text = json.dumps(doc)  # NaN and Infinity as the standard library writes them
    for data in (text.encode(), text):
        fast, slow = both(data)
        assert same(fast, slow), text[:200]


@given(st.binary(max_size=64) | st.text(max_size=64).map(str.encode))
@settings(max_examples=300)
def test_any_bytes_decode_the_same_or_fail_the_same(data: bytes) -> None:
    fast, slow = both(data)
    assert same(fast, slow), data


@pytest.mark.parametrize(
    ("data", "ints"),
    [
        (b"18446744073709551615", True),  # 2**64 - 1: both read an integer
        (b"-9223372036854775808", True),  # -2**63
        (b"20000000000000000000", False),  # beyond 64 bits: orjson a float
        (b"[-9223372036854775809]", False),
    ],
)
def test_the_one_difference_is_an_integer_beyond_64_bits(data: bytes, ints: bool) -> None:
    """Found by the test above (hypothesis drew b'20000000000000000000'): the difference the
    module documents, and no other: within 64 bits both read the same integer."""
    fast, slow = both(data)
    assert same(fast, slow)
    assert (fast == slow and type(fast) is type(slow)) is ints


@pytest.mark.parametrize(
    "data",
    [
        b"NaN",
        b"[Infinity, -Infinity]",
        b"1e400",
        b'"\\ud800"',
        b"[" * 5000 + b"]" * 5000,  # past orjson's nesting limit
        b"\xef\xbb\xbf{}",  # a byte-order mark
        b'{"a": 1, "a": 2}',
        b"-0",
        b"1.0",
        "\ufeff[]".encode("utf-16"),
        b"{bad",
    ],
)
def test_what_orjson_refuses_is_the_standard_librarys_answer(data: bytes) -> None:
    fast, slow = both(data)
    assert same(fast, slow)


def test_the_one_difference_left_is_an_integer_beyond_64_bits() -> None:
    """Documented in jsondecode: the API server never writes one for an integer field."""
    fast, slow = both(b"18446744073709551616")
    assert fast == slow and type(fast) is float and type(slow) is int


def test_turned_off_or_absent_the_standard_library_decodes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(jsondecode.ENV, "stdlib")
    try:
        fresh = importlib.reload(jsondecode)
        assert fresh.decoder() == "json (standard library)"
        assert same(fresh.loads(b'{"a": [1, 2.5, "x"]}'), {"a": [1, 2.5, "x"]})
    finally:
        monkeypatch.delenv(jsondecode.ENV)
        importlib.reload(jsondecode)
    assert jsondecode.decoder().startswith("orjson ")
