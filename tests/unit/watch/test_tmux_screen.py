"""The screen in a real terminal (tmux, tests/tmux.py): the default table within 80, 120 and 200
columns with nothing wrapped; `diagnose --watch` on the alternate screen with its change log,
the shell's screen given back at Ctrl-C (and, on a bare pseudo-terminal, at SIGTERM and at an
error); Ctrl-C typed into `remediate --confirm` exits 6.

No control plane: the table and the watch read recorded snapshots (--demo, --from-file, the
watch's file replaced between reads as a dump loop would); remediate talks to a local server
that never answers (the real one cannot be made to hang on cue). The same watch against the
real control plane, a node dying and returning and the API server cut off and back:
tests/e2e/test_watch_screen.py.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import shlex
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.fakeapi import kubeconfig, serve
from tests.tmux import pane
from tests.unit.conftest import FIXTURES

PLUGIN = [sys.executable, "-m", "kubectl_nodefail"]
ENV = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}


def _output(lines: list[str]) -> list[str]:
    """The command's own lines: up to the `exit=` line the test's shell prints."""
    end = next(i for i, line in enumerate(lines) if line.startswith("exit="))
    return lines[:end]


@pytest.mark.parametrize("cols", [80, 120, 200])
def test_the_default_table_fits_the_terminal(cols: int) -> None:
    command = f"{shlex.join(PLUGIN)} diagnose --demo 2>/dev/null"
    with pane(command, cols, 60, ENV) as p:
        lines = p.wait_for("the table", lambda s: any(x.startswith("exit=") for x in s))
        joined = p.screen(joined=True)
    out = _output(lines)
    assert lines[len(out)] == "exit=3"
    # capture-pane -J joins the lines the terminal wrapped: the same count, nothing wrapped
    assert len(_output(joined)) == len(out), "\n".join(x for x in joined if len(x) > cols)
    assert all(len(line) <= cols for line in out)
    node_header = next(x for x in out if x.startswith("NODE "))
    # one zone: ZONE goes before any cell is cut (the zone line names it)
    assert node_header.split() == ["NODE", "STATUS", "FOR", "LEASE", "RENEWED", "CAUSE", "ACTION"]
    pod_header = next(x for x in out if x.lstrip().startswith("POD "))
    pods = _pod_rows(out[out.index(pod_header) :])
    assert (
        pod_header.split()
        == {
            80: ["POD", "STATUS", "NEXT", "ACTION"],  # namespace and node as group lines
            120: ["POD", "STATUS", "OWNER", "STUCK", "NEXT", "ACTION"],
            200: ["POD", "STATUS", "NODE", "OWNER", "STUCK", "NEXT", "ACTION"],
        }[cols]
    )
    assert len(pods) == 11  # one row per pod of the demo, at every width
    assert sum("out-of-service" in row.split() for row in pods) == 4
    assert "…" not in "\n".join(pods)  # no pod name, NEXT or code is cut at any of these widths
    assert any("replacement Pending" in row for row in pods)
    assert "…" in "\n".join(out)  # the node's prose is


def _pod_rows(block: list[str]) -> list[str]:
    """The pod rows under the POD header (its first line), up to the blank line: in the narrow
    view, the lines indented by two (the namespace-and-node lines are not)."""
    header, *rest = block
    rows = rest[: rest.index("")] if "" in rest else rest
    if not header.startswith(" "):
        return rows
    return [r for r in rows if r.startswith("  ") and not r.startswith("   ")]


def _title_and_clear(tmp: Path) -> Path:
    """The recorded failure with a window title (OSC 0) and a clear-screen sequence in the failed
    node's name (everywhere it is named) and in its Ready condition's reason."""
    attack = "\x1b]0;pwned\x07\x1b[2J"
    text = (FIXTURES / "node-down-after-eviction.json").read_text()
    dump = json.loads(text.replace('"flaky-a"', json.dumps("flaky-a" + attack)))
    for item in dump["items"]:
        if item.get("kind") == "Node" and item["metadata"]["name"].startswith("flaky-a"):
            for cond in item["status"]["conditions"]:
                cond["reason"] = (cond.get("reason") or "") + attack
    path = tmp / "hostile.json"
    path.write_text(json.dumps(dump))
    return path


@pytest.mark.parametrize("args", ["", "-o wide", "-o markdown", "--explain flaky-a"])
def test_escape_sequences_from_the_cluster_leave_the_terminal_alone(
    tmp_path: Path, args: str
) -> None:
    """The screen is not cleared and the title not set by what a dump holds: the line printed
    before the command stays, the sequences are shown escaped. The same bytes printed raw do
    both (the check can fail)."""
    dump = _title_and_clear(tmp_path)
    raw = "printf 'before\\n\\033]0;pwned\\007\\033[2J'"
    with pane(raw, 120, 40, ENV) as p:
        p.wait_for("the raw bytes", lambda s: any(x.startswith("exit=") for x in s))
        assert p.title() == "pwned" and "before" not in p.screen(history=False)
    if args.startswith("--explain"):
        args = shlex.join(["--explain", "flaky-a\x1b]0;pwned\x07\x1b[2J"])
    command = f"echo before; {shlex.join(PLUGIN)} diagnose --from-file {dump} {args} 2>&1"
    with pane(command, 120, 250, ENV) as p:
        lines = p.wait_for("the diagnosis", lambda s: any(x.startswith("exit=") for x in s))
        title, visible = p.title(), p.screen(history=False)
    assert visible[0] == "before", visible[:3]  # a clear would have scrolled it off the screen
    out = "\n".join(_output(lines))
    assert "\\x1b]0;pwned\\x07\\x1b[2J" in out
    assert title != "pwned"
    assert lines[len(_output(lines))] == "exit=3"


def _recovered(tmp: Path) -> Path:
    """The recorded failure after eviction, as the next read would show it once the node is
    back: Ready 28 s after it went Unknown, taints gone, db-0 recreated (a new UID)."""
    dump = json.loads((FIXTURES / "node-down-after-eviction.json").read_text())
    for item in dump["items"]:
        meta = item.get("metadata") or {}
        if item.get("kind") == "Node" and meta.get("name") == "flaky-a":
            for cond in item["status"]["conditions"]:
                if cond["type"] == "Ready":
                    cond.update(status="True", lastTransitionTime="2026-11-30T09:47:14Z")
            item["spec"]["taints"] = []
        if item.get("kind") == "Pod" and meta.get("name") == "db-0":
            meta["uid"] = "0000-recreated"
    path = tmp / "recovered.json"
    path.write_text(json.dumps(dump))
    return path


def test_watch_on_the_alternate_screen_with_a_change_log(tmp_path: Path) -> None:
    dump = tmp_path / "dump.json"
    dump.write_bytes((FIXTURES / "node-down-after-eviction.json").read_bytes())
    recovered = _recovered(tmp_path)
    watch = [*PLUGIN, "diagnose", "--watch", "--interval", "0.5", "--from-file", str(dump)]
    command = f"echo before-the-watch; {shlex.join(watch)}"
    with pane(command, 100, 40, ENV) as p:
        first = p.wait_for(
            "the watch's first frame", lambda s: any("Ctrl-C to stop" in x for x in s)
        )
        assert p.alternate_on()
        assert p.normal_screen()[0] == "before-the-watch"  # the shell's screen, kept aside
        assert any(x.startswith("CHANGES") for x in first) and "none seen yet" in first
        assert any("1 of 6 nodes not Ready" in x for x in first)
        os.replace(recovered, dump)  # the next read sees the node back
        back = p.wait_for(
            "the change log", lambda s: any("flaky-a Ready again after 28s" in x for x in s)
        )
        assert any("scenario-down/db-0 replaced (on flaky-a)" in x for x in back)
        assert len(back) == 40 and all(len(x) <= 100 for x in back)  # one screen, no scroll
        assert back[-1].strip() != ""  # the log sits at the bottom of the screen
        p.keys("C-c")
        after = p.wait_for("the shell's screen again", lambda s: any("exit=" in x for x in s))
        assert not p.alternate_on()
    assert after[0] == "before-the-watch"
    # nothing of the frames went into the scrollback: only the change log is printed after
    assert not any("Ctrl-C to stop" in x for x in after)
    assert any(x.startswith("Changes seen by the watch") for x in after)
    assert any("flaky-a Ready again after 28s" in x for x in after)
    assert all(len(x) <= 100 for x in after)
    assert "exit=3" in after  # the last diagnosis: the node is back, its pods still Terminating


def test_ctrl_c_in_remediate_confirm_exits_6(tmp_path: Path) -> None:
    with serve(lambda n, method, path: None) as api:  # accepts, never answers
        config = kubeconfig(tmp_path, api.url)
        command = shlex.join([*PLUGIN, "remediate", "n1", "--confirm"])
        with pane(command, 100, 20, {**ENV, "KUBECONFIG": config}) as p:
            deadline = time.monotonic() + 30
            while not api.requests and time.monotonic() < deadline:
                time.sleep(0.05)
            assert api.requests, "the command sent no request"

            # its reads hang: the status line still shows, with the time the step has waited
            def ticking(screen: list[str]) -> bool:
                return any(x.startswith("... reading nodes") and x.endswith(" s)") for x in screen)

            waiting = p.wait_for("the status line", ticking, 20)
            assert len([x for x in waiting if x.startswith("...")]) == 1, waiting
            p.keys("C-c")  # the signal comes mid-read
            lines = p.wait_for("the exit", lambda s: any(x.startswith("exit=") for x in s), 20)
    out = _output(lines)
    assert lines[len(out)] == "exit=6"
    # the status line (and the terminal's ^C echo on it) erased before the one error line
    assert out == ["error: interrupted before any change: nothing was done"], out
    assert all(method == "GET" for method, _ in api.requests)


def _on_a_pty(
    args: list[str], then: Callable[[subprocess.Popen[bytes]], None]
) -> tuple[bytes, int]:
    """`args` with stdout and stderr on a pseudo-terminal; `then(proc)` once its first frame is
    drawn; everything it wrote and its exit code."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    env = {k: v for k, v in ENV.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen(args, stdout=slave, stderr=slave, stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 30
    while b"Ctrl-C to stop" not in seen and time.monotonic() < deadline:
        if select.select([master], [], [], 0.2)[0]:
            seen += os.read(master, 65536)
    assert b"Ctrl-C to stop" in seen, seen[-500:]
    then(proc)
    while True:
        try:
            chunk = os.read(master, 65536) if select.select([master], [], [], 5)[0] else b""
        except OSError:  # the other end closed
            chunk = b""
        if not chunk:
            break
        seen += chunk
    os.close(master)
    return seen, proc.wait(timeout=20)


def test_sigterm_and_errors_give_the_terminal_back(tmp_path: Path) -> None:
    from kubectl_nodefail.watch.watch import ENTER, LEAVE

    dump = tmp_path / "dump.json"
    dump.write_bytes((FIXTURES / "node-down-after-eviction.json").read_bytes())
    watch = [*PLUGIN, "diagnose", "--watch", "--interval", "0.5", "--from-file", str(dump)]

    seen, code = _on_a_pty(watch, lambda proc: proc.send_signal(signal.SIGTERM))
    assert seen.startswith(ENTER.encode()) and LEAVE.encode() in seen
    assert code == 3  # as Ctrl-C: the last diagnosis's code

    def corrupt(_: subprocess.Popen[bytes]) -> None:
        broken = tmp_path / "broken.json"
        broken.write_text("{not json")
        broken.replace(dump)

    seen, code = _on_a_pty(watch, corrupt)
    left = seen.rindex(LEAVE.encode())
    assert code == 13  # a dump that cannot be read: its documented exit code
    assert b"error: " in seen[left:] and b"Traceback" not in seen  # the line after the screen


@pytest.mark.parametrize("cols", [80, 120])
def test_the_remediate_plan_fits_the_terminal(cols: int) -> None:
    """The plan of the demo's failed node (a dry run: nothing to write to): every line within
    the width, nothing wrapped by the terminal, every step on its own row; at 80 columns each
    step's WHY / DETAIL under its row, never cut (the refusal's placeholder whole)."""
    from kubectl_nodefail.examples import demo_path

    command = shlex.join([*PLUGIN, "remediate", "flaky-a", "--from-file", demo_path()])
    with pane(f"{command} 2>/dev/null", cols, 60, ENV) as p:
        lines = p.wait_for("the plan", lambda s: any(x.startswith("exit=") for x in s))
        joined = p.screen(joined=True)
    out = _output(lines)
    assert lines[len(out)] == "exit=4"  # the taint is refused: partial
    assert len(_output(joined)) == len(out) and all(len(x) <= cols for x in out)
    steps = [x for x in out if re.match(r"  \d+  ", x)]
    assert [x.split()[0] for x in steps] == [str(i) for i in range(1, 7)]
    assert steps[-1].split()[1:4] == ["taint-out-of-service", "node/flaky-a", "REFUSED"]
    assert "<NODE-YOU-VERIFIED-IS-POWERED-OFF>," in " ".join(out).split()
