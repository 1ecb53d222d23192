"""claims.read, the analysis' reader of a premise's path: the value the premise checker's own
reader (tests/oracles/premises.py) finds, on every shape a path may meet."""

from __future__ import annotations

import pytest

from kubectl_nodefail.analysis import claims
from tests.oracles.premises import value_at


@pytest.mark.parametrize(
    ("value", "path", "want"),
    [
        ({"a": [{"k": "x", "v": 1}, {"k": "y", "v": 2}]}, "a[k=y].v", 2),
        ({"a": [{"k": "x", "e": "N", "v": 1}, {"k": "x", "e": "M", "v": 2}]}, "a[k=x,e=M].v", 2),
        ({"a": [{"k": "x"}]}, "a[k=z].v", None),
        ({"a": {"k": "x"}}, "a[k=x]", None),  # a selector on a mapping: nothing
        ({"a": 5}, "a[k=x]", None),  # on a number: nothing (not an error)
        ({"a": ["s", {"k": "x", "v": 3}]}, "a[k=x].v", 3),
        ({"a": {"b": None}}, "a.b.c", None),
        ({"m": {"annotations": {"x/y": "1"}}}, "m.annotations[x/y]", "1"),
    ],
)
def test_read_takes_a_path_as_the_premise_checker_does(
    value: object, path: str, want: object
) -> None:
    assert claims.read(value, path) == want  # type: ignore[arg-type]
    assert value_at(value, path) == want  # type: ignore[arg-type]
