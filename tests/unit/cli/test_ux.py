"""The on-call UX: program name, examples in --help, version, color rules, the status line,
and completion's protocols (values from the cluster are tested end to end in tests/e2e)."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from kubectl_nodefail import __version__
from kubectl_nodefail.cli.main import main
from kubectl_nodefail.cli.usage import program_name
from kubectl_nodefail.common.jsondecode import decoder
from kubectl_nodefail.term import color, progress
from tests.unit.conftest import FIXTURES

AFTER = str(FIXTURES / "node-down-after-eviction.json")
ESC = "\x1b["


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_program_name_is_what_kubectl_users_type() -> None:
    assert program_name({}) == "kubectl nodefail"
    assert program_name({"KUBECTL_PLUGINS_CALLER": "/usr/local/bin/kubectl"}) == "kubectl nodefail"
    assert program_name({"KUBECTL_PLUGINS_CALLER": "/usr/bin/oc"}) == "oc nodefail"


@pytest.mark.parametrize(
    "command", ["diagnose", "remediate", "dump", "version", "completion", "rbac"]
)
def test_every_command_has_usage_and_real_examples(command: str) -> None:
    result = CliRunner().invoke(main, [command, "--help"], prog_name=program_name({}))
    assert result.exit_code == 0
    assert result.stdout.startswith(f"Usage: kubectl nodefail {command} ")
    examples = [
        line.strip()
        for line in result.stdout.splitlines()
        if line.strip().startswith("kubectl nodefail ")
    ]
    assert examples, result.stdout
    # every example parses strictly: the command and its options exist, values are valid
    for example in examples:
        words = example.split("#")[0].split("|")[0].split(">")[0].split()[2:]
        group_ctx = main.make_context("kubectl nodefail", list(words), resilient_parsing=True)
        sub = main.get_command(group_ctx, words[0])
        assert sub is not None, example
        sub.make_context(words[0], list(words[1:]), parent=group_ctx)


def test_installed_command_says_kubectl_nodefail_in_usage() -> None:
    exe = Path(sys.executable).parent / "kubectl-nodefail"
    proc = subprocess.run([str(exe), "diagnose", "--bogus"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stdout == ""
    assert proc.stderr.startswith("error: No such option '--bogus'")
    assert proc.stderr.endswith(" (see 'kubectl nodefail diagnose --help')\n")


def test_version_without_a_cluster_says_so_and_exits_0(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["version", "--kubeconfig", str(tmp_path / "none")], catch_exceptions=False
    )
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"kubectl-nodefail {__version__} (Python ")
    assert lines[1] == f"JSON decoder: {decoder()}"
    assert lines[2].startswith("Server: unknown: no kubeconfig found at ")
    result = CliRunner().invoke(main, ["version", "--client", "-o", "json"])
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc == {"plugin": __version__, "python": doc["python"], "jsonDecoder": decoder()}


def test_color_only_on_a_terminal_and_never_with_no_color() -> None:
    assert color.enabled(Tty(), env={}) is True
    assert color.enabled(io.StringIO(), env={}) is False
    assert color.enabled(Tty(), env={"NO_COLOR": "1"}) is False
    assert color.enabled(Tty(), env={"NO_COLOR": ""}) is True  # no-color.org: non-empty only
    assert color.enabled(Tty(), env={"TERM": "dumb"}) is False


def test_color_changes_no_word_and_no_column() -> None:
    _, out = _diagnose_table()
    painted = color.paint(out, True)
    assert ESC in painted
    plain = color.paint(out, False)
    assert plain == out
    strip = __import__("re").compile(r"\x1b\[[0-9;]*m")
    assert strip.sub("", painted) == out
    # whole words only: a node or pod named like a status is left alone
    assert color.paint("pod NotReady-x and NotReady", True).startswith("pod NotReady-x and ")


def _diagnose_table() -> tuple[int, str]:
    result = CliRunner().invoke(main, ["diagnose", "--from-file", AFTER])
    return result.exit_code, result.stdout


def _run_in_a_pty(*args: str, env: dict[str, str] | None = None) -> str:
    """Run the installed command with stdout and stderr on a pseudo-terminal."""
    exe = Path(sys.executable).parent / "kubectl-nodefail"
    leader, follower = pty.openpty()
    full_env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    proc = subprocess.Popen(
        [str(exe), *args], stdout=follower, stderr=follower, env={**full_env, **(env or {})}
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=30)
    os.close(leader)
    return b"".join(chunks).decode()


def test_color_on_a_real_terminal_off_with_no_color_or_flag() -> None:
    assert ESC in _run_in_a_pty("diagnose", "--from-file", AFTER)
    assert ESC not in _run_in_a_pty("diagnose", "--from-file", AFTER, env={"NO_COLOR": "1"})
    assert ESC not in _run_in_a_pty("diagnose", "--from-file", AFTER, "--no-color")
    assert ESC not in _run_in_a_pty("diagnose", "--from-file", AFTER, "-o", "json")


def test_status_line_shows_only_for_slow_scans_and_is_erased() -> None:
    now = [0.0]
    tty = Tty()
    line = progress.StatusLine(tty, delay=1.0, clock=lambda: now[0])
    line("reading nodes")
    assert tty.getvalue() == ""  # quick scans never show it
    now[0] = 2.0
    line("scanning pods")
    assert tty.getvalue().endswith("... scanning pods") and "\n" not in tty.getvalue()
    line.clear()
    assert tty.getvalue().endswith("\r\x1b[2K")


def test_no_status_line_for_json_yaml_or_a_pipe() -> None:
    progress.machine_output("json")
    try:
        assert not isinstance(progress.reporter(0, Tty()), progress.StatusLine)
    finally:
        progress.machine_output("table")
    assert not isinstance(progress.reporter(0, io.StringIO()), progress.StatusLine)
    assert isinstance(progress.reporter(0, Tty()), progress.StatusLine)
    assert progress.reporter(1, Tty()) is progress.lines
    progress.done()


def _complete(env: dict[str, str], *args: str) -> str:
    exe = Path(sys.executable).parent / "kubectl-nodefail"
    proc = subprocess.run(
        [str(exe), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "KUBECONFIG": "/nonexistent", **env},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return proc.stdout


def test_bash_completion_of_commands_and_choices() -> None:
    out = _complete(
        {
            "_KUBECTL_NODEFAIL_COMPLETE": "bash_complete",
            "COMP_WORDS": "kubectl-nodefail dia",
            "COMP_CWORD": "1",
        }
    )
    assert out.split() == ["plain,diagnose"]
    out = _complete(
        {
            "_KUBECTL_NODEFAIL_COMPLETE": "bash_complete",
            "COMP_WORDS": "kubectl-nodefail diagnose -o ",
            "COMP_CWORD": "3",
        }
    )
    assert out.split() == [f"plain,{o}" for o in ("table", "wide", "json", "yaml", "markdown")]


def test_kubectl_plugin_completion_protocol() -> None:
    out = _complete({"_KUBECTL_NODEFAIL_COMPLETE": "kubectl_complete"}, "")
    lines = out.splitlines()
    assert lines[-1] == ":4"
    assert [line.split("\t")[0] for line in lines[:-1]] == [
        "completion",
        "diagnose",
        "dump",
        "rbac",
        "remediate",
        "version",
    ]
    out = _complete({"_KUBECTL_NODEFAIL_COMPLETE": "kubectl_complete"}, "remediate", "--str")
    assert out.splitlines() == ["--strategy\tWhat a confirmed-down node gets (see below).", ":4"]


def test_node_completion_without_a_cluster_completes_nothing_quietly() -> None:
    out = _complete({"_KUBECTL_NODEFAIL_COMPLETE": "kubectl_complete"}, "diagnose", "")
    assert out.splitlines() == [":4"]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish", "kubectl"])
def test_completion_scripts_name_kubectl_nodefail_never_kubectl(shell: str) -> None:
    result = CliRunner().invoke(main, ["completion", shell])
    assert result.exit_code == 0
    script = result.stdout
    assert "_KUBECTL_NODEFAIL_COMPLETE" in script and "kubectl-nodefail" in script
    assert "complete -o nosort -F _kubectl_nodefail_completion kubectl\n" not in script


def test_completion_rejects_an_unknown_shell() -> None:
    result = CliRunner().invoke(main, ["completion", "tcsh"])
    assert result.exit_code == 2
    assert isinstance(main, click.Group)


def test_a_step_waiting_on_a_slow_request_still_shows_and_counts_its_wait() -> None:
    """The first read hanging: no new message comes, the ticking line appears anyway once the
    delay has passed, with the step's waiting time; nothing is drawn after it is cleared."""
    now = [0.0]
    tty = Tty()
    line = progress.StatusLine(tty, delay=1.0, clock=lambda: now[0])
    line("reading nodes")
    assert tty.getvalue() == ""
    now[0] = 1.5
    line._draw()  # a tick, as the thread does
    assert tty.getvalue().endswith("... reading nodes")
    now[0] = 12.2
    line._draw()
    assert tty.getvalue().endswith("... reading nodes (12 s)")
    line.clear()
    cleared = tty.getvalue()
    now[0] = 20.0
    line._draw()
    line("too late")
    assert tty.getvalue() == cleared and cleared.endswith("\r\x1b[2K")


def test_the_ticking_thread_redraws_and_stops_when_cleared() -> None:
    tty = Tty()
    line = progress.StatusLine(tty, delay=0.0, tick=0.01)
    line("reading nodes")
    deadline = time.monotonic() + 5
    while tty.getvalue().count("reading nodes") < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert tty.getvalue().count("reading nodes") >= 3  # redrawn by the thread
    line.clear()
    time.sleep(0.05)
    settled = tty.getvalue()
    time.sleep(0.05)
    assert tty.getvalue() == settled and settled.endswith("\r\x1b[2K")
