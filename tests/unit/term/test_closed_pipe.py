"""A reader that stops early (`diagnose -o json | head`): the rest of the output is dropped
silently and the command ends with its own exit code, never "internal error" and exit 1
(closedpipe.py). In real processes, with their standard output a pipe whose read end is closed
before the first write; `--watch` into such a pipe stops after the block that found it gone.
The same for standard error (a runbook's logger gone): its lines dropped, the output and the
exit code as with a reader."""

from __future__ import annotations

import fcntl
import io
import os
import subprocess
import sys
import time

import pytest

from kubectl_nodefail.term import closedpipe
from kubectl_nodefail.watch.watch import run
from tests.unit.conftest import FIXTURES
from tests.unit.watch.test_watch import _loader, _show, _snap

DUMP = str(FIXTURES / "node-down-after-eviction.json")


def _run_into_closed_pipe(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the plugin with its stdout a pipe nobody reads: the read end closed at once."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubectl_nodefail", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read()
    proc.stderr.close()
    return subprocess.CompletedProcess(proc.args, proc.wait(timeout=120), "", err)


@pytest.mark.parametrize("output", ["", "wide", "json", "yaml", "markdown"])
def test_diagnose_into_a_closed_pipe_keeps_its_exit_code_and_says_nothing(output: str) -> None:
    args = ["diagnose", "--from-file", DUMP] + (["-o", output] if output else [])
    proc = _run_into_closed_pipe(*args)
    assert proc.returncode == 3, proc.stderr  # problems found, as into a terminal
    assert "error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    "args, code",
    [
        (["remediate", "--from-file", DUMP, "-o", "json"], None),
        (["version", "--client"], 0),
        (["completion", "bash"], 0),
        (["--help"], 0),
    ],
)
def test_every_command_into_a_closed_pipe(args: list[str], code: int | None) -> None:
    into_a_terminal = subprocess.run(
        [sys.executable, "-m", "kubectl_nodefail", *args], capture_output=True, text=True
    )
    proc = _run_into_closed_pipe(*args)
    assert proc.returncode == (into_a_terminal.returncode if code is None else code)
    assert proc.returncode not in (1, 120), proc.stderr
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["diagnose", "--from-file", DUMP],  # problems found: 3, progress on stderr
        ["diagnose", "--from-file", DUMP, "-o", "json"],
        ["diagnose", "--demo"],
        ["diagnose", "--from-file", "/nonexistent/dump.json"],  # the one-line error: 13
        ["remediate", "--from-file", DUMP],
        ["diagnose", "--no-such-flag"],  # usage: 2
        ["dump", "-f", "/nonexistent-folder/x.json"],  # an output path refused: 2
    ],
)
def test_a_closed_standard_error_changes_neither_the_output_nor_the_exit_code(
    args: list[str],
) -> None:
    command = [sys.executable, "-m", "kubectl_nodefail", *args]
    with_reader = subprocess.run(command, capture_output=True, text=True)
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stderr.close()  # nobody reads standard error
    out = proc.stdout.read()
    proc.stdout.close()
    assert proc.wait(timeout=120) == with_reader.returncode
    assert with_reader.returncode not in (0, 1) or args[0] == "remediate"
    assert out == with_reader.stdout


def test_a_big_output_is_cut_by_its_reader_without_an_error() -> None:
    """Many writes after the reader left: `head -c 100` of a long JSON."""
    code = (
        "from kubectl_nodefail.term import closedpipe; import sys; closedpipe.install(); "
        "[print('x' * 1000) for _ in range(5000)]; "
        "print('gone' if closedpipe.gone() else 'not gone', file=sys.stderr)"
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None and writer.stderr is not None
    head = writer.stdout.read(100)
    writer.stdout.close()
    err = writer.stderr.read()
    writer.stderr.close()
    assert writer.wait(timeout=60) == 0, err
    assert head == "x" * 100 and err == "gone\n"


def test_the_watch_stops_once_its_reader_left(monkeypatch: pytest.MonkeyPatch) -> None:
    """Into a pipe the watch writes only on a change; the write that finds the reader gone
    ends it, with the last diagnosis's code, instead of diagnosing for nobody until Ctrl-C."""
    out, err = io.StringIO(), io.StringIO()
    load = _loader([_snap("node-down-before-eviction"), _snap("node-down-after-eviction")])
    written: list[str] = []

    def write(text: str) -> int:
        written.append(text)
        monkeypatch.setattr(closedpipe, "_gone", {1})  # as the first write found it
        return len(text)

    monkeypatch.setattr(out, "write", write)
    polls: list[float] = []
    code = run(load, _show, 1.0, out, err, tty=False, title="t", sleep=polls.append, max_polls=50)
    assert code == 3
    assert len(written) == 1 and polls == []  # stopped right after its first block


def test_a_write_interrupted_after_its_bytes_went_out_is_not_written_again() -> None:
    """Ctrl-C handled as the write returns (after the bytes went out): the text is not sent a
    second time by the flush that follows (a BufferedWriter under it kept and re-sent it: run
    z2, `--watch`'s last block twice)."""
    code = (
        "import os, sys\n"
        "from kubectl_nodefail.term import closedpipe\n"
        "closedpipe.install()\n"
        "real, calls = os.write, []\n"
        "def write(fd, data):\n"
        "    n = real(fd, data)\n"
        "    calls.append(n)\n"
        "    if len(calls) == 1:\n"
        "        raise KeyboardInterrupt\n"
        "    return n\n"
        "closedpipe.os.write = write\n"
        "try:\n"
        "    sys.stdout.write('block\\n' * 3)\n"
        "except KeyboardInterrupt:\n"
        "    sys.stdout.flush()\n"
        "sys.stdout.write('after\\n')\n"
        "sys.stdout.flush()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "block\n" * 3 + "after\n"


@pytest.mark.parametrize(
    "args",
    [
        ["diagnose", "--from-file", DUMP],
        ["diagnose", "--from-file", DUMP, "-o", "json"],
        ["diagnose", "--demo", "-o", "yaml"],
        ["remediate", "--from-file", DUMP],
        ["version", "--client"],
        ["--help"],
    ],
)
def test_a_full_disk_under_the_output_is_one_line_and_exit_2(args: list[str]) -> None:
    """`diagnose > /mnt/full/out.txt`: not a reader that left, an output that is incomplete:
    one line, the usage code 2 ("an output that cannot be written") in place of a code that
    only reports the outcome (0, 3, 5), never a traceback and 1; remediate's 4 (some steps
    refused) is kept."""
    command = [sys.executable, "-m", "kubectl_nodefail", *args]
    with_room = subprocess.run(command, capture_output=True, text=True)
    with open("/dev/full", "w") as full:
        proc = subprocess.run(command, stdout=full, stderr=subprocess.PIPE, text=True)
    assert proc.returncode == (2 if with_room.returncode in (0, 3, 5) else 4), proc.stderr
    assert with_room.returncode in (0, 3, 4, 5)
    said = [line for line in proc.stderr.splitlines() if line.startswith("error")]
    assert said == [
        "error: could not write standard output: No space left on device: the output is incomplete"
    ], proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "args", [["diagnose", "--from-file", DUMP], ["diagnose", "--from-file", "/nonexistent"]]
)
def test_a_full_disk_under_standard_error_keeps_the_output_and_the_code(args: list[str]) -> None:
    command = [sys.executable, "-m", "kubectl_nodefail", *args]
    with_room = subprocess.run(command, capture_output=True, text=True)
    with open("/dev/full", "w") as full:
        proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=full, text=True)
    assert proc.returncode == with_room.returncode and proc.stdout == with_room.stdout
    assert proc.returncode in (3, 13)


def test_a_non_blocking_output_with_a_slow_reader_loses_nothing() -> None:
    """Standard output left non-blocking by whoever started the command (EAGAIN while the
    reader is slow) is waited on, not taken for a full disk: every byte arrives, exit 0."""
    code = (
        "from kubectl_nodefail.term import closedpipe; closedpipe.install(); "
        "[print('x' * 999) for _ in range(2000)]"
    )
    read, write = os.pipe()
    fcntl.fcntl(write, fcntl.F_SETFL, fcntl.fcntl(write, fcntl.F_GETFL) | os.O_NONBLOCK)
    writer = subprocess.Popen([sys.executable, "-c", code], stdout=write, stderr=subprocess.PIPE)
    os.close(write)
    time.sleep(1)  # the pipe fills (64 KiB) long before this reader starts
    got = b""
    with os.fdopen(read, "rb") as fh:
        got = fh.read()
    assert writer.stderr is not None
    err = writer.stderr.read().decode()
    writer.stderr.close()
    assert writer.wait(timeout=60) == 0, err
    assert got == (b"x" * 999 + b"\n") * 2000


def test_a_full_disk_under_a_watch_still_says_so_and_exits_2() -> None:
    """The watch leaves through os._exit (not after a refresh in flight): the same line, 2."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "kubectl_nodefail", "diagnose", "--from-file", DUMP, "--watch"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 2, proc.stderr
    assert "could not write standard output: No space left on device" in proc.stderr


@pytest.mark.parametrize(
    "code, final", [(0, 2), (3, 2), (5, 2), (2, 2), (4, 4), (6, 6), (7, 7), (11, 11), (130, 130)]
)
def test_an_incomplete_output_changes_only_the_codes_that_only_report_an_outcome(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], code: int, final: int
) -> None:
    """A remediate that ended partial (4), interrupted (6) or unconfirmed (7) keeps its code:
    a runbook branches on it; the line about the output is said either way."""
    from kubectl_nodefail.cli import running as cli

    monkeypatch.setattr(closedpipe, "_failed", {1: "No space left on device"})
    assert cli.with_output_checked(code) == final
    assert "the output is incomplete" in capsys.readouterr().err
    monkeypatch.setattr(closedpipe, "_failed", {})
    assert cli.with_output_checked(code) == code
