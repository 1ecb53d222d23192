"""`diagnose --watch`'s loop (watch.py) over recorded snapshots: into a pipe a new block only
when what matters changed, one warning per outage; on a terminal the alternate screen, redrawn
line by line, with a change log and an outage banner; Ctrl-C ends it with the last diagnosis's
code. In a real terminal: tests/unit/watch/test_tmux_screen.py; the live test (a node dying and
returning during the watch) is tests/e2e/test_watch.py."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
from click.testing import CliRunner

from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.cli.main import main
from kubectl_nodefail.common.errors import AuthError, Forbidden, ServerError, UnreachableError
from kubectl_nodefail.render.render import table
from kubectl_nodefail.snapshot.model import Snapshot, load_dump
from kubectl_nodefail.watch import changes
from kubectl_nodefail.watch.watch import CLEAR, ENTER, LEAVE, Screen, fingerprint, frame, run
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
    body = blocks[2].split("\n", 1)[1]
    assert body.startswith(
        "change: flaky-a Ready again after about 44s\n"
    )  # the changes first, then the table
    assert next(line for line in body.splitlines() if not line.startswith("change: ")).startswith(
        "All 6 nodes Ready"
    )
    assert code == 0 and err.getvalue() == "" and CLEAR not in out.getvalue()


def test_an_outage_is_reported_once_and_the_watch_goes_on() -> None:
    out, err = io.StringIO(), io.StringIO()
    down = UnreachableError("cannot reach the API server at https://x: refused")
    load = _loader([down, down, down, _snap("node-down-after-eviction")])
    code = run(load, _show, 0.5, out, err, tty=False, title="t", sleep=Stop(6))
    assert err.getvalue().count("cannot reach the API server") == 1
    assert "the API server answers again (unreachable for" in err.getvalue()
    assert code == 3 and "1 of 6 nodes not Ready" in out.getvalue()


def test_a_passing_refusal_is_a_failed_read_the_watch_rides_out() -> None:
    """Right after an API server restart it answers 403 for a moment (RBAC not loaded yet), and
    a binding may be removed for seconds: the watch says so and goes on, as for an outage; a
    401 likewise (a rotated token is read on the next try)."""
    out, err = io.StringIO(), io.StringIO()
    refused = Forbidden('pods is forbidden: User "x" cannot list resource "pods"')
    unauthorized = AuthError("the server has asked for the client to provide credentials")
    snap = _snap("node-down-after-eviction")
    load = _loader([snap, refused, unauthorized, refused, snap])
    code = run(load, _show, 0.5, out, err, tty=False, title="t", sleep=Stop(6))
    said = err.getvalue()
    assert "pods is forbidden" in said and "provide credentials" in said
    assert "the API server answers again (refusing the watch's reads for" in said
    assert code == 3  # the last diagnosis's


@pytest.mark.parametrize(
    ("failure", "code"),
    [
        (UnreachableError("The connection to the server x:6443 was refused"), 11),
        (Forbidden("nodes is forbidden"), 12),
        (ServerError("GET /api/v1/nodes failed (503 Service Unavailable)", status=503), 14),
    ],
)
def test_a_watch_that_never_read_ends_with_the_failures_code(failure: Exception, code: int) -> None:
    """Ctrl-C on a watch that never read the cluster: not 0 (no diagnosis said all clear), the
    failed read's own code, as a plain diagnose would have exited."""
    out, err = io.StringIO(), io.StringIO()
    load = _loader([failure] * 5)
    for tty in (False, True):
        got = run(
            load, _show, 0.5, out, err, tty=tty, title="t", sleep=Stop(3), size=lambda: (80, 24)
        )
        assert got == code


class Clock:
    """time.time() for a watch: each sleep moves it on by the interval."""

    def __init__(self) -> None:
        self.now = 1_780_000_000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _tty_run(items: list[Snapshot | Exception], polls: int, size=(120, 60)):  # type: ignore[no-untyped-def]
    out, err = io.StringIO(), io.StringIO()
    clock = Clock()
    code = run(
        _loader(items),
        _show,
        2.0,
        out,
        err,
        tty=True,
        title="kubectl nodefail diagnose",
        max_polls=polls,
        sleep=clock.sleep,
        clock=clock,
        size=lambda: size,
    )
    return out.getvalue(), err.getvalue(), code


def test_on_a_terminal_the_alternate_screen_is_left_and_unchanged_lines_not_rewritten() -> None:
    text, err, code = _tty_run([_snap("node-down-after-eviction")], polls=3)
    assert text.startswith(ENTER) and LEAVE in text and text.index(LEAVE) > text.rindex("\x1b[1;1H")
    assert text.count(CLEAR) == 2  # the first frame (entering) only: never a clear per refresh
    first, *later = text.split("\x1b[1;1H")[1:]
    assert "kubectl nodefail diagnose   (every 2s;" in first
    for frame_text in later:  # the same cluster: only the title's clock line is written again
        assert frame_text.count("\x1b[") <= 3, frame_text
    assert code == 3 and err == ""


def test_the_change_log_says_what_changed_and_the_outage_banner_its_age() -> None:
    after = _snap("node-down-after-eviction")
    back = _snap("node-down-after-eviction")
    node = next(n for n in back.nodes if n["metadata"]["name"] == "flaky-a")
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    ready.update(status="True", lastTransitionTime="2026-11-30T09:47:14Z")  # 28s after Unknown
    node["spec"]["taints"] = []
    db = next(p for p in back.pods if p["metadata"]["name"] == "db-0")
    db["metadata"]["uid"] = "new-uid"
    down = UnreachableError(
        "cannot reach the API server at https://10.0.0.1:6443: HTTPSConnection(host='10.0.0.1', "
        "port=6443): Failed to establish a new connection: [Errno 111] Connection refused"
    )
    out, err = io.StringIO(), io.StringIO()
    clock = Clock()
    items: list[Snapshot | Exception] = [after, down, down, back]
    screens: list[list[str]] = []

    def show(snap: Snapshot) -> tuple[str, int]:
        return _show(snap)

    state_frames = []
    load = _loader(items)

    def recording_sleep(seconds: float) -> None:
        state_frames.append(out.getvalue())
        clock.sleep(seconds)

    run(
        load,
        show,
        2.0,
        out,
        err,
        tty=True,
        title="t",
        max_polls=4,
        sleep=recording_sleep,
        clock=clock,
        size=lambda: (100, 50),
    )
    screens = [_screen(f) for f in state_frames]
    outage = screens[2]
    assert outage[1].startswith("!! API server unreachable for 2s (since ")
    banner = " ".join(line.strip() for line in outage[1:5])
    assert "Below: the cluster as read at " in banner and ", 4s ago." in banner
    assert "HTTPSConnection" not in banner and "Errno" not in banner
    assert "!! cannot reach the API server at https://10.0.0.1:6443: " in banner
    assert "Connection refused" in banner
    assert any("1 of 6 nodes not Ready" in line for line in outage)  # the last data, kept
    last = screens[3]
    assert last[1].startswith("API server answering again since ")
    log = "\n".join(last[-6:])
    assert "API server unreachable" in log and "API server answering again after 4s" in log
    assert "flaky-a Ready again after 28s" in log
    assert "scenario-down/db-0 replaced (on flaky-a)" in log
    assert all(len(line) <= 100 for line in last) and len(last) == 50
    after_watch = out.getvalue().rsplit(LEAVE, 1)[1]
    assert (
        after_watch.startswith("Changes seen by the watch") and "flaky-a Ready again" in after_watch
    )


def _screen(text: str) -> list[str]:
    """What a terminal shows after `text` (cursor moves to a line's start, erase to its end)."""
    import re

    lines: dict[int, str] = {}
    body = text.split(ENTER, 1)[1]
    for match in re.finditer(r"\x1b\[(\d+);1H(.*?)\x1b\[K", body, re.S):
        lines[int(match[1]) - 1] = match[2]
    return [lines.get(i, "") for i in range(max(lines) + 1)]


def test_a_frame_is_cut_to_the_terminal() -> None:
    from kubectl_nodefail.watch.watch import State

    state = State(text="\n".join(f"line {i} " + "x" * 200 for i in range(100)))
    lines = frame(state, "t", 2.0, 1_780_000_000.0, (80, 24), paint=False)
    assert len(lines) == 24 and all(len(line) <= 80 for line in lines)
    assert any("more lines: a taller terminal shows them" in line for line in lines)
    assert lines[-2:] == ["CHANGES", "none seen yet"]


def test_a_screen_writes_only_the_lines_that_differ() -> None:
    out = io.StringIO()
    screen = Screen(out)
    assert screen.paint(["a", "b", "c"], (80, 24)) == 3
    assert screen.paint(["a", "B", "c"], (80, 24)) == 1
    assert out.getvalue().endswith("\x1b[2;1HB\x1b[K")
    assert screen.paint(["a"], (80, 24)) == 2  # the two lines gone are erased
    assert screen.paint(["a"], (100, 24)) == 1 and out.getvalue().count(CLEAR) == 2  # resized


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


def test_watch_is_not_for_the_demo() -> None:
    result = CliRunner().invoke(main, ["diagnose", "--watch", "--demo"])
    assert result.exit_code == 2 and "--watch follows a live cluster or a dump" in result.stderr


def test_watch_reads_a_dump_again_into_a_pipe(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """--watch --from-file: the file read at every refresh (Ctrl-C after two reads)."""
    import signal
    import subprocess
    import sys
    import time

    path = tmp_path / "dump.json"
    path.write_bytes((FIXTURES / "node-down-after-eviction.json").read_bytes())
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kubectl_nodefail",
            "diagnose",
            "--watch",
            "--interval",
            "0.5",
            "--from-file",
            str(path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Each step waits for what the watch printed, never for a fixed time (a loaded machine
    # may take seconds to start Python).
    import threading

    lines: list[str] = []
    assert proc.stdout is not None
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")))
    reader.start()

    def blocks_seen(n: int) -> bool:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if "".join(lines).count("--- ") >= n:
                return True
            time.sleep(0.1)
        return False

    try:
        assert blocks_seen(1), "".join(lines)
        recovered = tmp_path / "next.json"
        recovered.write_bytes((FIXTURES / "node-down-recovered.json").read_bytes())
        recovered.replace(path)
        assert blocks_seen(2), "".join(lines)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(timeout=30)
        stderr = proc.stderr.read() if proc.stderr else ""
        for pipe in (proc.stdout, proc.stderr):
            if pipe:
                pipe.close()
    stdout = "".join(lines)
    blocks = stdout.split("--- ")[1:]
    assert len(blocks) == 2, stdout
    assert "change: flaky-a Ready again" in blocks[1] and "All 6 nodes Ready" in blocks[1]
    assert proc.returncode == 0, stderr


def test_changes_between_recorded_reads() -> None:
    """The real control plane's reads of one failure (before, after eviction) and another
    run's recovery: what the change log says about them."""
    from kubectl_nodefail.watch.changes import between

    before, after = _snap("node-down-before-eviction"), _snap("node-down-after-eviction")
    recovered = _snap("node-down-recovered")
    assert between(before, after) == [
        "8 pods Terminating: scenario-down/batch-pfp-h74wl, scenario-down/batch-sm65f and 6 more"
    ]
    said = between(after, recovered)
    # kwok (the recordings' kubelet) keeps an old Ready transition time: counted from the
    # NotReady transition (09:46:46) to the read that saw it Ready (09:47:30)
    assert said[0] == "flaky-a Ready again after about 44s"
    assert said[1].startswith("flaky-a untainted node.kubernetes.io/unreachable:NoExecute")
    assert said[2].startswith("8 pods deleted: ")
    assert between(recovered, after)[0] == "flaky-a NotReady"
    assert between(after, after) == []


class Follow:
    """The follower's side of the watch loop (follow.Follower), scripted: what each wait
    returns, in order (an empty list: no change came within the interval)."""

    def __init__(self, waits: list[list[str]], clock: Clock | None = None) -> None:
        self.waits, self.clock = list(waits), clock
        self.primed, self.off, self.closed = False, "", False
        self.calls: list[str] = []

    def prime(self) -> None:
        self.calls.append("prime")
        self.primed = True

    def rebase(self, snap: Snapshot) -> None:
        self.calls.append("rebase")

    def wait(self, seconds: float) -> list[str]:
        self.calls.append("wait")
        if self.clock is not None:
            self.clock.sleep(seconds)
        return self.waits.pop(0) if self.waits else []

    def close(self) -> None:
        self.closed = True


def _piped(
    load: Callable[[], Snapshot],
    follow: Follow,
    polls: int,
    sleep: Callable[[float], None],
    out: io.StringIO | None = None,
) -> None:
    """The watch into a pipe, with this follower, for `polls` refreshes."""
    run(load, _show, 2.0, out or io.StringIO(), io.StringIO(), tty=False, title="t",
        max_polls=polls, sleep=sleep, follow=follow)  # fmt: skip


def test_with_watches_the_cluster_is_read_again_only_when_they_show_a_change() -> None:
    """Into a pipe: the first read, then none while the watches show nothing, a read for the
    change they show; the watches primed before the first read, compared with each read."""
    out = io.StringIO()
    snaps = [_snap("node-down-before-eviction"), _snap("node-down-after-eviction")]
    reads: list[int] = []

    def load() -> Snapshot:
        reads.append(1)
        return snaps[min(len(reads), 2) - 1]

    follow = Follow([[], [], ["node flaky-a NotReady"], []])
    slept: list[float] = []
    _piped(load, follow, 5, slept.append, out)
    assert len(reads) == 2 and slept == []
    assert follow.calls[:2] == ["prime", "rebase"] and follow.calls.count("rebase") == 2
    assert follow.closed
    assert out.getvalue().count("--- ") == 2  # the first block, and the one the change brought


def _redraws(cost: float, polls: int) -> tuple[int, list[object]]:
    """Reads and the moments shown by a terminal watch with nothing changing, whose
    diagnosis costs `cost` CPU seconds (on a meter of the test's own: the machine's load
    does not move it)."""
    clock = Clock()
    used = [0.0]
    shown: list[object] = []
    reads: list[int] = []

    def load() -> Snapshot:
        reads.append(1)
        return _snap("node-down-after-eviction")

    def show(snap: Snapshot) -> tuple[str, int]:
        shown.append(snap.captured_at)
        used[0] += cost
        return _show(snap)

    run(
        load,
        show,
        2.0,
        io.StringIO(),
        io.StringIO(),
        tty=True,
        title="t",
        max_polls=polls,
        sleep=clock.sleep,
        clock=clock,
        size=lambda: (120, 60),
        follow=Follow([[]] * (polls - 1), clock),
        cpu=lambda: used[0],
    )
    return len(reads), shown


def test_on_a_terminal_the_times_move_on_between_reads_without_reading() -> None:
    reads, shown = _redraws(0.05, 4)  # 5% of a core: 1 s of CPU per 20 s, under every 2 s
    assert reads == 1 and len(shown) == 4
    assert len(set(shown)) == 4 and shown == sorted(shown)  # each at its own moment


def test_a_costly_diagnosis_is_redrawn_only_as_often_as_its_share_of_a_core_allows() -> None:
    # 0.15 s of CPU at 5% of a core: one redraw per 3 s at most, so every other 2 s interval
    reads, shown = _redraws(0.15, 7)
    assert reads == 1 and len(shown) == 4
    gaps = [(b - a).total_seconds() for a, b in zip(shown, shown[1:])]  # type: ignore[operator]
    assert gaps == [4.0, 4.0, 4.0]


def test_without_watches_allowed_or_while_reads_fail_it_reads_every_interval() -> None:
    out = io.StringIO()
    reads: list[int] = []
    down = UnreachableError("cannot reach the API server")

    def load() -> Snapshot:
        reads.append(1)
        if len(reads) in (2, 3):
            raise down
        return _snap("node-down-after-eviction")

    slept: list[float] = []
    _piped(load, Follow([["x"], [], [], [], []]), 5, slept.append, out)
    # read, (change) read: fails, (failing: slept) read: fails, (slept) read, then watches again
    assert len(reads) == 4 and slept == [2.0, 2.0]
    off = Follow([])
    off.off = "no watch of pods (forbidden)"
    reads.clear()
    _piped(lambda: (reads.append(1), _snap("node-down-after-eviction"))[1], off, 3, slept.append)
    assert len(reads) == 3


def test_on_a_terminal_a_change_is_on_the_screen_before_the_read_it_brings() -> None:
    """A read at scale takes seconds: the changes the watches showed are on the screen before
    it starts (escaped: a reason comes from the cluster), with when they were seen and how old
    the diagnosis below is; gone once the read has drawn what they change."""
    clock = Clock()
    out = io.StringIO()
    snaps = [_snap("node-down-before-eviction"), _snap("node-down-after-eviction")]
    seen_at_read: list[str] = []

    def load() -> Snapshot:
        seen_at_read.append(out.getvalue())
        return snaps[min(len(seen_at_read), 2) - 1]

    changes = ["node flaky-a NotReady", "Event \x1b[2JWiped of flaky-a", "a", "b", "c"]
    run(load, _show, 2.0, out, io.StringIO(), tty=True, title="t", max_polls=3,
        sleep=clock.sleep, clock=clock, size=lambda: (200, 60),
        follow=Follow([changes, []], clock))  # fmt: skip
    assert len(seen_at_read) == 2
    before = seen_at_read[1][len(seen_at_read[0]) :]  # painted between the two reads
    assert "node flaky-a NotReady; Event \\x1b[2JWiped of flaky-a; a (+2 more)" in before
    assert "reading the cluster again. Below: the cluster as read at" in before
    assert "\x1b[2JWiped" not in out.getvalue()
    after = out.getvalue()[len(seen_at_read[1]) :]
    assert "reading the cluster again" not in after


def test_on_a_terminal_a_reads_diagnosis_is_painted_before_its_changes_are_worked_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At 5,000 nodes the changes between two reads take a tenth of a second to work out: the
    new diagnosis is on the screen first (the reading line gone), its changes in the log at the
    next paint."""
    clock = Clock()
    out = io.StringIO()
    snaps = [_snap("node-down-before-eviction"), _snap("node-down-after-eviction")]
    reads: list[int] = []
    painted_then: list[str] = []
    between = changes.between

    def load() -> Snapshot:
        reads.append(1)
        return snaps[min(len(reads), 2) - 1]

    def timed(old: Snapshot, new: Snapshot) -> list[str]:
        painted_then.append(out.getvalue())
        return between(old, new)

    monkeypatch.setattr(changes, "between", timed)
    run(load, _show, 2.0, out, io.StringIO(), tty=True, title="t", max_polls=3,
        sleep=clock.sleep, clock=clock, size=lambda: (200, 60),
        follow=Follow([["node flaky-a NotReady"], []], clock))  # fmt: skip
    headline = _show(snaps[1])[0].splitlines()[0][:60]  # the new diagnosis' own first line
    assert headline not in _show(snaps[0])[0]
    assert len(painted_then) == 1
    last_paint = painted_then[0].rsplit("reading the cluster again", 1)[1]
    assert headline in last_paint  # painted after the reading line, before `between` ran
    found = between(*snaps)
    assert found and found[0][:40] in out.getvalue()[len(painted_then[0]) :]  # then the log


def test_into_a_pipe_with_v_each_read_says_what_it_was_made_for() -> None:
    """-v: the reasons the watches gave for a read, escaped, before it (none for the first
    read, which no change made)."""
    heard: list[str] = []
    snaps = [_snap("node-down-before-eviction"), _snap("node-down-after-eviction")]
    reads: list[int] = []

    def load() -> Snapshot:
        reads.append(1)
        return snaps[min(len(reads), 2) - 1]

    follow = Follow([[], ["node flaky-a NotReady", "Event \x1b[2JWiped of flaky-a"], []])
    run(load, _show, 2.0, io.StringIO(), io.StringIO(), tty=False, title="t", max_polls=4,
        sleep=lambda _: None, follow=follow, said=heard.append)  # fmt: skip
    assert len(reads) == 2 and len(heard) == 1, heard
    assert heard[0].startswith("read again for: ")
    assert heard[0].endswith("node flaky-a NotReady; Event \\x1b[2JWiped of flaky-a")
