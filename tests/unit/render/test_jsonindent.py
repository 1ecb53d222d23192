"""jsonindent.dumps is json.dumps(indent=2), character for character: on any JSON-like value
(and the values json accepts beyond JSON: tuples, NaN, infinities, int and float subclasses,
non-string keys), on every recorded diagnosis, and with the same error for what is not JSON."""

from __future__ import annotations

import enum
import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.render import jsonindent, render
from kubectl_nodefail.snapshot.model import load_dump

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
DEMO = FIXTURES.parents[1] / "kubectl_nodefail" / "examples" / "statefulset-node-down.json"


class Level(enum.IntEnum):
    LOW = 1


class Ratio(float):
    def __repr__(self) -> str:
        return "not a number's repr"


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.just(Level.LOW),
    st.floats(allow_nan=False).map(Ratio),
)
keys = st.one_of(st.text(), st.integers(), st.booleans(), st.none(), st.floats())
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.lists(inner, max_size=5).map(tuple),
        st.dictionaries(st.text(), inner, max_size=5),
        st.dictionaries(keys, inner, max_size=3),
    ),
    max_leaves=40,
)


@given(values)
def test_same_text_as_json_dumps(value: object) -> None:
    assert jsonindent.dumps(value) == json.dumps(value, indent=2)


def test_every_recorded_diagnosis_encodes_the_same() -> None:
    for path in sorted(FIXTURES.glob("*.json")):
        snap = load_dump(str(path))
        data = render.report_data(diagnose(snap, snap.captured_at, timelines=True))
        assert jsonindent.dumps(data) == json.dumps(data, indent=2), path.name


def test_what_is_not_json_fails_as_json_fails() -> None:
    for bad in ({"when": object()}, [1, {2, 3}]):
        with pytest.raises(TypeError, match="is not JSON serializable"):
            jsonindent.dumps(bad)
    cycle: list[object] = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="Circular reference detected"):
        jsonindent.dumps(cycle)
    assert jsonindent.dumps([math.inf, -math.inf]) == "[\n  Infinity,\n  -Infinity\n]"


def _dumped(value: object, spill_at: int) -> tuple[str, int]:
    """jsonindent.dump's text and how many chunks it wrote, spilling every `spill_at`."""
    chunks: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonindent, "SPILL_AT", spill_at)
        jsonindent.dump(value, chunks.append)
    return "".join(chunks), len(chunks)


@given(values, st.integers(min_value=1, max_value=8))
def test_dump_writes_the_same_text_in_chunks(value: object, spill_at: int) -> None:
    assert _dumped(value, spill_at)[0] == json.dumps(value, indent=2)


def test_dump_of_a_recorded_diagnosis_is_written_in_many_chunks_of_bounded_size() -> None:
    snap = load_dump(str(DEMO))
    data = render.report_data(diagnose(snap, snap.captured_at, timelines=True))
    chunks: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonindent, "SPILL_AT", 64)
        patch.setattr(jsonindent, "_orjson", None)  # the walk alone
        jsonindent.dump(data, chunks.append)
    assert "".join(chunks) == json.dumps(data, indent=2)
    assert len(chunks) > 10
    # a chunk is written once a container starts past SPILL_AT fragments: the largest holds
    # what one container's scalars add before the next container starts
    assert max(len(c) for c in chunks) < 64 * 200


def test_with_orjson_the_text_is_the_same_and_still_comes_in_chunks() -> None:
    """orjson writes each item of the top level's lists and objects whole: the same text, and a
    chunk once FAST_SPILL_AT fragments are held, so no chunk holds more than that many items
    and what the walk adds between them."""
    assert jsonindent._orjson is not None  # the test extra installs it
    snap = load_dump(str(DEMO))
    data = render.report_data(diagnose(snap, snap.captured_at, timelines=True))
    items = [
        json.dumps(v, indent=2)
        for top in data.values()
        if isinstance(top, (list, dict))
        for v in (top if isinstance(top, list) else top.values())
        if isinstance(v, (list, dict))
    ]
    chunks: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonindent, "FAST_SPILL_AT", 2)
        jsonindent.dump(data, chunks.append)
    assert "".join(chunks) == json.dumps(data, indent=2)
    assert len(chunks) > 10
    biggest = max(len(text) for text in items)
    assert max(len(c) for c in chunks) <= 2 * (biggest + 200 * len(data)), (
        max(len(c) for c in chunks),
        biggest,
    )


def test_dump_fails_as_json_fails() -> None:
    cycle: list[object] = []
    cycle.append(cycle)
    for bad, error, text in (
        ({"when": object()}, TypeError, "is not JSON serializable"),
        ({(1, 2): "tuple key"}, TypeError, "keys must be str"),
        (cycle, ValueError, "Circular reference detected"),
    ):
        with pytest.raises(error, match=text):
            jsonindent.dump(bad, lambda _: None)


plain = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),  # orjson refuses past 64 bits
        st.floats(),  # NaN, infinities, exponents: the walk writes those
        st.text(),  # non-ASCII: orjson writes UTF-8, json escapes: the walk
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(), inner, max_size=4)
    ),
    max_leaves=30,
)


@given(plain)
def test_orjson_below_the_top_writes_json_dumps_text(value: object) -> None:
    """Where orjson writes (an item of a list or object in the top level's object), the text is
    json.dumps's, character for character, whatever the value; else the walk writes it."""
    assert jsonindent._orjson is not None
    doc = {"top": [value, {"k": value}], "other": {"v": value}}
    assert jsonindent.dumps(doc) == json.dumps(doc, indent=2)


def test_orjson_writes_the_recorded_diagnoses_items() -> None:
    """The property above compares texts; here, that orjson did write them: every item of the
    demo diagnosis's lists is plain JSON, and _fast gives its text."""
    snap = load_dump(str(DEMO))
    data = render.report_data(diagnose(snap, snap.captured_at, timelines=True))
    written = 0
    for pod in data["pods"]:
        text = jsonindent._fast(pod, "\n    ")
        assert text == json.dumps(pod, indent=2).replace("\n", "\n    ")
        written += 1
    assert written > 0
