"""hack/test_runs.py: the measured-runs table of docs/testing.md is the one its records give, and
a record keeps exactly the log lines that carry figures."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[3]


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("test_runs_tool", REPO / "hack" / "test_runs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


tool = _module()

LOG = """\
python3 -m venv .venv
[build-control-plane 01:20:00] building kubernetes-v1.36.1-01603f0dc57a (this can take a while)
[build-control-plane 01:29:10] built kubernetes-v1.36.1-01603f0dc57a in 550s
NODEFAIL_MATRIX="1.26 1.31" .venv/bin/pytest -n 8 --module-seed=random
module order: shuffled with --module-seed=4242
........................................................ [ 50%]
FAILED tests/e2e/test_x.py::test_y - assert 1 == 2
================== slowest 12 units of work (module or minor) ==================
  420.7s   gw1 from    0.0s  tests/e2e/test_force_detach.py
workers busy (of 639s): gw0 607s, gw1 535s
1 passed in 2.00s
================= 1 failed, 1433 passed in 663.49s (0:11:03) ==================
\tUser time (seconds): 694.68
\tSystem time (seconds): 122.06
\tPercent of CPU this job got: 116%
\tElapsed (wall clock) time (h:mm:ss or m:ss): 1:02:40.98
\tMaximum resident set size (kbytes): 324880
exit 2
"""

META = {
    "run": "z",
    "commit": "abc1234",
    "command": "make test MODULE_SEED=random",
    "caches": "cold",
    "beside": "nothing",
}


def test_a_record_keeps_the_figures_and_drops_the_rest(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_text(LOG)
    text = tool.save(log, META)
    lines = text.splitlines()
    assert lines[:5] == [f"# {k}: {v}" for k, v in META.items()]
    assert "python3 -m venv .venv" not in text
    assert not any(line.startswith("....") for line in lines)
    assert "FAILED tests/e2e/test_x.py::test_y - assert 1 == 2" in lines
    assert "1 passed in 2.00s" not in lines  # a test's own output, not pytest's result line
    for kept in (
        "built kubernetes-v1.36.1-01603f0dc57a in 550s",
        "pytest -n 8",
        "--module-seed=4242",
        "1 failed, 1433 passed in 663.49s",
        "Elapsed (wall clock)",
        "workers busy (of 639s)",
        "exit 2",
    ):
        assert kept in text, kept


def test_a_row_is_read_from_the_records_lines(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_text(LOG)
    record = tmp_path / "2026-12-02-z.txt"
    record.write_text(tool.save(log, META))
    (row,) = [tool.row(r) for r in tool.records(tmp_path)]
    cells = dict(zip(tool.HEADER, row))
    assert cells["run"] == "[z](test-runs/2026-12-02-z.txt)"
    assert cells["workers"] == "8"
    assert cells["order"] == "shuffled, seed 4242"
    assert cells["result"] == "1 failed, 1433 passed; exit 2"
    assert cells["pytest"] == "663 s"
    assert cells["workers busy"] == "535-607 s of 639 s"
    assert cells["whole run"] == "62 min 41 s"
    assert cells["CPU, cores (without the control planes)"] == f"{(694.68 + 122.06) / 3760.98:.2f}"


def test_a_record_without_its_header_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "r.txt"
    bad.write_text("# run: q\n# commit: abc\n===== 1 passed in 1.0s =====\n")
    with pytest.raises(ValueError, match="command"):
        tool.load(bad)


def test_the_table_in_docs_testing_is_the_generated_one() -> None:
    assert tool.main(["check"]) == 0, "run: python hack/test_runs.py write"
    assert tool.records(), "no run records in docs/test-runs/"
