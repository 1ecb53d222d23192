"""tests/conftest.py: the module order is shuffled by a seed (the same seed, the same order),
never the tests inside a module; a `session_start` module goes first; each module is one xdist
group, unless it names its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ORDERING = (Path(__file__).resolve().parents[1] / "conftest.py").read_text()
MODULES = [f"test_m{i}" for i in range(8)]


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(ORDERING)
    pytester.makeini(
        "[pytest]\nmarkers =\n    session_start: x\n    session_end: x\n    xdist_group: x\n"
    )
    for name in MODULES:
        pytester.makepyfile(
            **{name: "def test_a(): pass\ndef test_b(): pass\ndef test_c(): pass\n"}
        )
    return pytester


def _order(pytester: pytest.Pytester, *args: str) -> list[str]:
    result = pytester.runpytest("--collect-only", "-q", *args)
    return [line for line in result.outlines if "::" in line]


def _modules(ids: list[str]) -> list[str]:
    return list(dict.fromkeys(i.split(".py::")[0] for i in ids))


def test_plain_order_is_the_collection_order(suite: pytest.Pytester) -> None:
    assert _modules(_order(suite)) == MODULES


def test_a_seed_shuffles_modules_reproducibly_and_keeps_each_module_in_order(
    suite: pytest.Pytester,
) -> None:
    orders = []
    for seed in ("1", "2", "3"):
        first = _order(suite, f"--module-seed={seed}")
        assert first == _order(suite, f"--module-seed={seed}")
        assert sorted(_modules(first)) == MODULES
        for name in MODULES:
            inside = [i.split("::")[1] for i in first if i.startswith(f"{name}.py::")]
            assert inside == ["test_a", "test_b", "test_c"]
        orders.append(_modules(first))
    assert len({tuple(o) for o in orders}) > 1  # 8 modules: three seeds agreeing is 1 in 10^9


def test_the_seed_is_printed_and_a_bad_one_is_refused(suite: pytest.Pytester) -> None:
    result = suite.runpytest("--module-seed=random", "-p", "no:cacheprovider")
    seeds = [line for line in result.outlines if "module order: shuffled with" in line]
    assert len(seeds) == 2 and seeds[0] == seeds[1]  # the header and the summary
    bad = suite.runpytest("--module-seed=soon")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "--module-seed: 'soon' is neither a number nor 'random'" in "\n".join(bad.errlines)


def test_a_session_start_module_goes_first_and_session_end_tests_last(
    suite: pytest.Pytester,
) -> None:
    suite.makepyfile(
        test_timer="import pytest\n"
        "@pytest.mark.session_start\ndef test_start(): pass\n"
        "def test_middle(): pass\n"
        "@pytest.mark.session_end\ndef test_end(): pass\n"
    )
    for seed in ("3", "4"):
        ids = _order(suite, f"--module-seed={seed}")
        assert ids[:2] == ["test_timer.py::test_start", "test_timer.py::test_middle"]
        assert ids[-1] == "test_timer.py::test_end"


def test_each_module_is_an_xdist_group_unless_it_names_one(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_named="import pytest\npytestmark = pytest.mark.xdist_group('shared')\n"
        "def test_x(): pass\n"
    )
    suite.makepyfile(
        group_recorder="import json, pytest\n"
        "@pytest.hookimpl(trylast=True)\n"
        "def pytest_collection_modifyitems(items):\n"
        "    groups = {i.nodeid: [m.args[0] for m in i.iter_markers('xdist_group')]\n"
        "              for i in items}\n"
        "    open('groups.json', 'w').write(json.dumps(groups))\n"
    )
    suite.syspathinsert()
    suite.runpytest("--collect-only", "-q", "-p", "group_recorder")
    groups = json.loads((suite.path / "groups.json").read_text())
    assert groups["test_m0.py::test_a"] == ["test_m0.py"]
    assert groups["test_named.py::test_x"] == ["shared"]
