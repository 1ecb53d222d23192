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

from kubectl_nodefail import incident, jsonindent
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.snapshot import load_dump

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


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
        data = incident.report_with_timelines(diagnose(snap, snap.captured_at), snap)
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
