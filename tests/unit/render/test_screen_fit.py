"""The default table at a terminal's width (fit.py, render.table): one row per object, every
line within 80, 120 and 200 columns for every recorded snapshot, cells cut with an ellipsis and
never wrapped; -o wide never breaks a word; into a pipe (no width) nothing is cut. The same in
a real terminal: tests/unit/watch/test_tmux_screen.py."""

from __future__ import annotations

import io
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_nodefail.analysis import outage, summary
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.findings import Report
from kubectl_nodefail.cli.main import main
from kubectl_nodefail.render import render
from kubectl_nodefail.snapshot.model import load_dump
from kubectl_nodefail.term import fit
from tests.unit.conftest import FIXTURES

SNAPSHOTS = sorted(FIXTURES.glob("*.json"))
NODE_HEADER = "NODE     STATUS"  # how the node table's header line starts at any width


def _report(path: Path) -> tuple[Report, outage.Outage | None]:
    snap = load_dump(str(path))
    report = diagnose(snap, snap.captured_at)
    return report, outage.summarise(report) if outage.is_outage(report) else None


def _rows(text: str, header: str) -> list[str]:
    """The rows of the table whose header line starts with `header` (indented: the narrow
    view), up to its blank line; in the narrow view, without its namespace-and-node lines (the
    rows are indented by two, those lines not, their continuations by four)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith(header))
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        rows.append(line)
    if lines[start].startswith(" "):
        return [r for r in rows if r.startswith("  ") and not r.startswith("   ")]
    return rows


def _listed_pods(report: Report) -> int:
    alone = [p for p in report.pods if p.category != summary.ELSEWHERE]
    return len(alone) + len(summary.elsewhere_groups(report))


@pytest.mark.parametrize("path", SNAPSHOTS, ids=[p.stem for p in SNAPSHOTS])
@pytest.mark.parametrize("width", [80, 120, 200])
def test_every_line_fits_and_each_object_is_one_row(path: Path, width: int) -> None:
    report, view = _report(path)
    text = render.table(report, outage_view=view, width=width)
    too_long = [line for line in text.splitlines() if len(line) > width]
    assert not too_long, "\n".join(too_long)
    if view is not None or not report.problems:
        return
    if report.nodes:
        rows = _rows(text, "NODE ")
        assert len(rows) == len(report.nodes)
        for row, node in zip(rows, report.nodes):
            assert row.split()[1] == node.status  # STATUS is whole whenever the tiers suffice
    if _listed_pods(report):
        rows = _rows(text, "POD ")
        assert len(rows) == _listed_pods(report)
        # a pod's name and its NEXT are never cut at these widths (a group row of "N more" may)
        whole = [r for r in rows if " more " not in r]
        assert not any(fit.ELLIPSIS in r for r in whole), "\n".join(whole)


def test_the_demo_at_80_columns_cuts_no_pod_name_and_no_next() -> None:
    """Narrower than the pod table: the namespace and node become lines of their own, OWNER and
    STUCK go (they are in -o wide and --explain), and every pod name, NEXT and code is whole;
    the node table drops ZONE (one zone, named by the zone line) before it cuts its prose."""
    report, _ = _report(FIXTURES / "node-down-after-eviction.json")
    text = render.table(report, width=80)
    pods = _rows(text, "POD ")
    header = _header_of(text, "  POD ")
    assert header.split() == ["POD", "STATUS", "NEXT", "ACTION"]
    assert not any(fit.ELLIPSIS in row for row in pods)
    for pod in report.pods:
        row = next(r for r in pods if r.split()[0] == pod.name)
        assert row.split()[-1] == pod.action.code
    assert "namespace scenario-down, on node flaky-a" in text.splitlines()
    db = next(row for row in pods if row.split()[0] == "db-0")
    assert "BLOCKED" in db and db.split()[-1] == "out-of-service"
    node_header = _header_of(text, "NODE ")
    assert "ZONE" not in node_header
    node = _rows(text, "NODE ")[0]
    assert node.startswith("flaky-a  NotReady") and node.endswith(fit.ELLIPSIS)
    assert "Details: -o wide, or --explain NAME" in text.replace("\n  ", " ")


@pytest.mark.parametrize("width", [100, 120])
def test_a_narrow_view_drops_what_says_least_first(width: int) -> None:
    """Between the natural width and 80: OWNER as kubectl's short kind, then STUCK, then the
    kind alone, then nothing, each only when the one before does not fit."""
    report, _ = _report(FIXTURES / "node-down-after-eviction.json")
    header = _header_of(render.table(report, width=width), "  POD ").split()
    assert header[:3] == ["POD", "STATUS", "OWNER"] and header[-2:] == ["NEXT", "ACTION"]
    rows = _rows(render.table(report, width=width), "POD ")
    db = next(r for r in rows if r.split()[0] == "db-0")
    assert "sts/db" in db.split() or "sts" in db.split()


def test_wide_says_when_the_terminal_is_too_narrow_for_it() -> None:
    report, _ = _report(FIXTURES / "node-down-after-eviction.json")
    narrow = render.table(report, wide=True, width=120).replace("\n  ", " ")
    assert "note: -o wide needs" in narrow and "this terminal has 120" in narrow
    assert "note: -o wide needs" not in render.table(report, wide=True, width=None)
    assert "note: -o wide needs" not in render.table(report, wide=True, width=10_000)


def _header_of(text: str, start: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(start))


def test_without_a_width_nothing_is_cut_and_rows_stay_one_line() -> None:
    """Into a pipe, as kubectl: the whole text, one line per object, whatever COLUMNS says."""
    report, _ = _report(FIXTURES / "node-down-after-eviction.json")
    text = render.table(report)
    assert fit.ELLIPSIS not in text
    node = report.nodes[0]
    (row,) = _rows(text, "NODE ")
    assert row.endswith(node.action.summary if node.action else node.cause.summary)
    assert node.cause.summary in row
    result = CliRunner().invoke(main, ["diagnose", "--demo"], env={"COLUMNS": "80"})
    assert result.exit_code == 3 and fit.ELLIPSIS not in result.stdout
    (row,) = _rows(result.stdout, "NODE ")
    assert node.cause.summary in row and len(row) > 200


@pytest.mark.parametrize("path", SNAPSHOTS, ids=[p.stem for p in SNAPSHOTS])
def test_wide_never_breaks_a_word(path: Path) -> None:
    report, _ = _report(path)
    text = render.table(report, wide=True)
    words = set(text.split())
    for node in report.nodes:
        for taint in node.taints:
            assert f"{taint.key}:{taint.effect}" in text  # e.g. node.kubernetes.io/out-of-service
        for word in (node.action.summary if node.action else "").split():
            assert word in words or any(word in w for w in words), word
    for pod in report.pods:
        if pod.category == summary.ELSEWHERE:
            continue  # grouped on one row, its replacement not shown
        for word in pod.replacement.summary.split():
            assert any(word in w for w in words), word


def test_wide_keeps_an_out_of_service_taint_whole() -> None:
    report, _ = _report(FIXTURES / "out-of-service-applied.json")
    text = render.table(report, wide=True)
    assert "node.kubernetes.io/out-of-service:NoExecute" in text
    assert not re.search(r"node\.kubernetes\.io/out-of-\s*\n", text)


NAME = st.text(alphabet="abcdefghij-0123456789", min_size=1, max_size=30)


@given(
    rows=st.lists(st.tuples(NAME, NAME, NAME, st.text(min_size=0, max_size=80)), max_size=6),
    limit=st.integers(min_value=40, max_value=220),
)
@settings(max_examples=200, deadline=None)
def test_a_fitted_table_is_one_line_a_row_within_the_limit(
    rows: list[tuple[str, str, str, str]], limit: int
) -> None:
    cols = [
        fit.Col("NAME", cuts=((3, 8),), middle=True),
        fit.Col("STATUS"),
        fit.Col("OWNER", cuts=((1, 20), (2, 6)), middle=True),
        fit.Col("CAUSE", cuts=((1, 6),)),
    ]
    cells = [[f"ns/{a}", b, c, d] for a, b, c, d in rows]
    text = fit.table(cols, cells, limit)
    lines = text.splitlines()
    assert len(lines) == len(rows) + 1
    assert lines[0].split() == ["NAME", "STATUS", "OWNER", "CAUSE"]
    # the headers (never cut) fit in 40: so must every row
    assert all(len(line) <= limit for line in lines), text
    for line, row in zip(lines[1:], cells):
        assert line.startswith(fit.cut(row[0], len(line.split("  ")[0].rstrip()), middle=True))


@given(text=st.text(min_size=0, max_size=60), size=st.integers(min_value=0, max_value=70))
def test_cut_is_within_size_and_marks_what_it_cut(text: str, size: int) -> None:
    for middle in (False, True):
        out = fit.cut(text, size, middle)
        assert len(out) <= max(size, 0)
        if len(text) <= size:
            assert out == text
        elif size > 1:
            assert fit.ELLIPSIS in out and out != text


def test_a_name_keeps_its_end() -> None:
    assert fit.cut("scenario-down/pinned-5c7db6df59-hv4z6", 16, middle=True) == ("…/pinned-…-hv4z6")
    assert fit.cut("scenario-down/db-0", 12, middle=True) == "scenar…/db-0"
    assert fit.cut("StatefulSet/db", 8, middle=True) == "Stat…/db"


@given(
    words=st.lists(st.text(alphabet="abc-<>=/", min_size=1, max_size=20), min_size=1, max_size=12),
    limit=st.integers(min_value=30, max_value=120),
)
def test_a_wrapped_command_is_the_same_command(words: list[str], limit: int) -> None:
    line = "    $ kubectl nodefail " + " ".join(words)
    lines = fit.command(line, limit)
    # a line is over the limit only when it is one word that no break can shorten
    assert all(len(x) <= limit or len(x.removesuffix(" \\").split()) == 1 for x in lines)
    assert all(x.endswith(" \\") for x in lines[:-1])
    joined = " ".join(x.removesuffix(" \\").strip() for x in lines)
    assert shlex.split(joined.replace("<", "").replace(">", "")) == shlex.split(
        line.strip().replace("<", "").replace(">", "")
    )


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        raise io.UnsupportedOperation("no descriptor")


def test_the_width_comes_from_the_terminal_never_from_a_pipe() -> None:
    assert fit.width(io.StringIO(), env={"COLUMNS": "80"}) is None
    assert fit.width(Tty(), env={"COLUMNS": "97"}) == 97
    assert fit.width(Tty(), env={"COLUMNS": "junk"}) is None  # and no size: no width


@given(
    words=st.lists(  # of any length to 240 (st.text's sizes stay small: long ones are rare)
        st.builds(
            lambda n, unit: (unit * n)[:n],
            st.integers(min_value=1, max_value=240),
            st.sampled_from(["ab/", "c-d.", "x", "node-"]),
        ),
        min_size=1,
        max_size=12,
    ),
    limit=st.integers(min_value=20, max_value=200),
)
def test_prose_is_within_its_limit_and_cuts_only_a_word_longer_than_a_line(
    words: list[str], limit: int
) -> None:
    lines = fit.prose(" ".join(words), limit, indent="  ")
    assert all(len(line) <= limit for line in lines), lines
    room = limit - 2  # the narrowest line: a continuation's
    for word in words:
        if len(word) <= room:  # it fits a line: wrapped whole, never cut
            assert any(word in line.split() for line in lines), (word, lines)


@pytest.mark.parametrize("width", [80, 120, 200])
def test_a_dump_read_from_a_long_path_still_fits_and_keeps_its_file_name(
    tmp_path: Path, width: int
) -> None:
    """CI's checkout path is longer than this one's: a headline naming the dump read (as
    --from-file does) must fit any terminal whatever the path, the file's name kept."""
    deep = tmp_path.joinpath(*(["a-rather-long-directory-name"] * 6))
    deep.mkdir(parents=True)
    dump = deep / "recreate-rollout-unscheduled-terminating.json"
    dump.write_bytes((FIXTURES / dump.name).read_bytes())
    report, view = _report(dump)
    assert len(str(dump)) > 200  # wider than any width here
    text = render.table(report, outage_view=view, width=width)
    too_long = [line for line in text.splitlines() if len(line) > width]
    assert not too_long, "\n".join(too_long)
    assert f"/{dump.name}," in text
