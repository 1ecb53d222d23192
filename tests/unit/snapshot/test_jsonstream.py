"""jsonstream reads what json.loads reads, element by element, whatever the chunk boundaries."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kubectl_nodefail.snapshot import jsonstream

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def load(text: str, chunk: int) -> Any:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonstream, "CHUNK", chunk)
        return jsonstream.load(io.StringIO(text), object_hook=lambda obj: obj)


@settings(max_examples=150, deadline=None)
@given(doc=JSON, chunk=st.integers(1, 64), indent=st.sampled_from([None, 1]))
@example(doc=0.0, chunk=1, indent=None)  # found: "0" then "." in the next chunk read as 0
@example(doc={"items": [1e-05, -12]}, chunk=1, indent=None)
def test_same_result_as_json_loads(doc: Any, chunk: int, indent: int | None) -> None:
    text = json.dumps(doc, indent=indent)
    assert load(text, chunk) == json.loads(text)


@settings(max_examples=150, deadline=None)
@given(doc=JSON, chunk=st.integers(1, 64), cut=st.integers(0, 400))
def test_truncated_or_damaged_text_is_an_error_with_json_loads_position(
    doc: Any, chunk: int, cut: int
) -> None:
    text = json.dumps({"items": [doc, doc], "kind": "x"}, indent=1)
    damaged = text[: cut % len(text)] + "}" + text[cut % len(text) :]
    try:
        expected = json.loads(damaged)
    except json.JSONDecodeError:
        with pytest.raises(jsonstream.JsonError):
            load(damaged, chunk)
    else:
        assert load(damaged, chunk) == expected


def test_error_position_counts_lines_of_text_already_dropped() -> None:
    text = '{"items": [\n' + ",\n".join(["{}"] * 1000) + ",\n{]\n]}"
    with pytest.raises(jsonstream.JsonError) as info:
        load(text, 16)
    assert (info.value.lineno, info.value.colno) == (1002, 2)
