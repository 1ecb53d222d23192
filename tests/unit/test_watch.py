"""`diagnose --watch`'s loop (watch.py) over recorded snapshots: a new block only when what
matters changed, one warning per outage, Ctrl-C ends it with the last diagnosis's code. The
live test (a node dying and returning during the watch) is tests/e2e/test_watch.py."""

from __future__ import annotations

import io

import pytest
from click.testing import CliRunner

from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.cli import main
from kubectl_nodefail.errors import UnreachableError
from kubectl_nodefail.render import table
from kubectl_nodefail.snapshot import Snapshot, load_dump
from kubectl_nodefail.watch import CLEAR, fingerprint, run
from tests.unit.conftest import FIXTURES


def _snap(name: str) -> Snapshot:
    return load_dump(str(FIXTURES / f"{name}.json"))


def _show(snap: Snapshot) -> tuple[str, int]:
    report = diagnose(snap, snap.captured_at)
    return table(report), 3 if report.problems else 0


class Stop:
    """sleep() that raises KeyboardInterrupt (Ctrl-C) after `n` polls."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __call__(self, _: float) -> None:
        self.n -= 1
        if self.n <= 0:
            raise KeyboardInterrupt


def _loader(items: list[Snapshot | Exception]):  # type: ignore[no-untyped-def]
    queue = list(items)

    def load() -> Snapshot:
        item = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(item, Exception):
            raise item
        return item

    return load


def test_heartbeats_are_not_changes_but_a_failure_and_recovery_are() -> None:
    before, after, recovered = (
        _snap("node-down-before-eviction"),
        _snap("node-down-after-eviction"),
        _snap("node-down-recovered"),
    )
    assert fingerprint(before) != fingerprint(after) != fingerprint(recovered)
    again = _snap("node-down-after-eviction")
    for node in again.nodes:
        for cond in node["status"]["conditions"]:
            cond["lastHeartbeatTime"] = "2026-11-30T10:00:00Z"
        node["metadata"]["resourceVersion"] = "999999"
    assert fingerprint(again) == fingerprint(after)


def test_a_block_per_change_and_ctrl_c_returns_the_last_code() -> None:
    out, err = io.StringIO(), io.StringIO()
    load = _loader(
        [
            _snap("node-down-before-eviction"),
            _snap("node-down-after-eviction"),
            _snap("node-down-after-eviction"),
            _snap("node-down-recovered"),
        ]
    )
    code = run(load, _show, 1.0, out, err, tty=False, title="t", sleep=Stop(5))
    blocks = out.getvalue().split("--- ")[1:]
    assert len(blocks) == 3  # the unchanged third read printed nothing
    assert "1 of 6 nodes not Ready" in blocks[0] and "1 of 6 nodes not Ready" in blocks[1]
    assert blocks[2].split("\n", 1)[1].startswith("All 6 nodes Ready")
    assert code == 0 and err.getvalue() == "" and CLEAR not in out.getvalue()


def test_an_outage_is_reported_once_and_the_watch_goes_on() -> None:
    out, err = io.StringIO(), io.StringIO()
    down = UnreachableError("cannot reach the API server at https://x: refused")
    load = _loader([down, down, down, _snap("node-down-after-eviction")])
    code = run(load, _show, 0.5, out, err, tty=False, title="t", sleep=Stop(6))
    assert err.getvalue().count("cannot reach the API server") == 1
    assert "reading the cluster again" in err.getvalue()
    assert code == 3 and "1 of 6 nodes not Ready" in out.getvalue()


def test_on_a_terminal_the_screen_is_redrawn_every_poll() -> None:
    out, err = io.StringIO(), io.StringIO()
    load = _loader([_snap("node-down-after-eviction")])
    run(
        load,
        _show,
        2.0,
        out,
        err,
        tty=True,
        title="kubectl nodefail diagnose",
        max_polls=3,
        sleep=lambda _: None,
    )
    assert out.getvalue().count(CLEAR) == 3
    assert "kubectl nodefail diagnose   (every 2s;" in out.getvalue()


def test_json_lines_with_watch() -> None:
    out, err = io.StringIO(), io.StringIO()
    load = _loader([_snap("node-down-after-eviction")])
    run(
        load,
        lambda s: ('{\n  "a": 1\n}\n', 3),
        2.0,
        out,
        err,
        tty=False,
        title="t",
        one_line=True,
        max_polls=2,
        sleep=lambda _: None,
    )
    assert out.getvalue() == '{"a":1}\n'


@pytest.mark.parametrize("extra", [["--from-file", "x.json"], ["--demo"]])
def test_watch_needs_a_live_cluster(extra: list[str]) -> None:
    result = CliRunner().invoke(main, ["diagnose", "--watch", *extra])
    assert result.exit_code == 2 and "--watch follows a live cluster" in result.stderr
