"""tests/conftest.py: the module order is shuffled by a seed (the same seed, the same order),
never the tests inside a module; a `session_start` module goes first; each module is one xdist
group, unless it names its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import work_group

pytest_plugins = ["pytester"]

ORDERING = (Path(__file__).resolve().parents[2] / "conftest.py").read_text()
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


def test_units_of_work_are_modules_shared_groups_and_minors() -> None:
    assert work_group("tests/e2e/test_node_down.py::test_1_kubelet_stops") == (
        "tests/e2e/test_node_down.py"
    )
    assert work_group("tests/unit/cli/test_cli.py::test_x[a-b]") == "tests/unit/cli/test_cli.py"
    release = work_group("tests/e2e/test_release.py::test_zipapp_runs_on_a_bare_python[p0]")
    assert release == work_group("tests/e2e/test_krew_manifest.py::test_a_corrupted_archive")
    minors = {
        work_group(f"tests/e2e/test_versions.py::test_{t}[k8s-{m}]")
        for t in ("a", "b")
        for m in ("default", "1.26", "1.31")
    }
    assert minors == {
        "tests/e2e/test_versions.py[k8s-default]",
        "tests/e2e/test_versions.py[k8s-1.26]",
        "tests/e2e/test_versions.py[k8s-1.31]",
    }


def test_a_parallel_run_keeps_each_module_on_one_worker(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess("-n", "3", "-v", "-p", "no:cacheprovider")
    workers: dict[str, set[str]] = {}
    for line in result.outlines:
        if "PASSED" in line and line.startswith("[gw"):
            workers.setdefault(line.split()[-1].split("::")[0], set()).add(line.split()[0])
    assert sorted(workers) == [f"{m}.py" for m in MODULES]
    assert all(len(w) == 1 for w in workers.values()), workers
    assert len(set().union(*workers.values())) > 1  # and the modules were spread


def test_a_worker_that_dies_leaves_the_run_to_finish_the_rest(pytester: pytest.Pytester) -> None:
    """A worker dies after finishing units of its own (run z6 hung at 95 %): the run still
    ends, the test that killed it is reported failed once and not run again, and every other
    test runs exactly once."""
    pytester.makeconftest(ORDERING)
    pytester.makeini("[pytest]\nmarkers =\n    session_start: x\n    session_end: x\n")
    quick = "def test_a(): pass\ndef test_b(): pass\ndef test_c(): pass\n"
    pytester.makepyfile(
        test_m0="import time\n" + "".join(f"def test_{n}(): time.sleep(1)\n" for n in "abcd"),
        test_m1=quick,
        test_m2=quick,
        test_m3=quick,
        test_m4="import os\ndef test_a(): pass\ndef test_b(): os._exit(3)\ndef test_c(): pass\n",
        test_m5=quick,
        test_m6=quick,
    )
    result = pytester.runpytest_subprocess("-n", "2", "-v", "-p", "no:cacheprovider", timeout=120)
    outcomes = [
        (line.split()[-1], line.split()[-2])
        for line in result.outlines
        if line.startswith("[gw") and line.split()[-2] in ("PASSED", "FAILED")
    ]
    ran = [nodeid for nodeid, _ in outcomes]
    assert sorted(ran) == sorted(set(ran)), ran  # nothing twice
    assert [n for n, outcome in outcomes if outcome == "FAILED"] == ["test_m4.py::test_b"]
    assert len(ran) == 4 + 3 * 6
    result.assert_outcomes(passed=21, failed=1)
