"""The README's "real output" blocks are what the commands print today, with the exit codes the
README gives: `diagnose --demo` on a 120-column terminal, and `remediate --from-file` of the same
snapshot into a pipe (the plan, then with the node's name typed)."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_nodefail.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
README = (ROOT / "README.md").read_text()
DEMO = "kubectl_nodefail/examples/statefulset-node-down.json"


def block_after(marker: str) -> str:
    """The first fenced block after the README line that starts with `marker`."""
    after = README.split("\n" + marker, 1)[1]
    return after.split("\n```\n", 1)[1].split("\n```\n", 1)[0] + "\n"


def block_starting(first_line: str) -> str:
    """The fenced block whose first line starts with `first_line`."""
    body = README.split("```\n" + first_line, 1)[1].split("\n```\n", 1)[0]
    return first_line + body + "\n"


def run_on_terminal(args: list[str], columns: int) -> tuple[int, str]:
    """Runs the plugin with its stdout on a pseudo-terminal `columns` wide: (exit code, stdout)."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": str(columns), "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubectl_nodefail", *args],
        stdout=follower,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return proc.wait(timeout=60), b"".join(chunks).decode().replace("\r\n", "\n")


def test_the_demo_output_is_what_diagnose_prints_on_a_120_column_terminal() -> None:
    assert "Real output, `kubectl nodefail diagnose --demo` (exit 3: problems found)" in README
    code, out = run_on_terminal(["diagnose", "--demo"], 120)
    # the demo names its snapshot by where it is installed; the README by its place in the repo
    out = out.replace(str(ROOT / DEMO), DEMO)
    assert code == 3
    assert out == block_after("Real output, `kubectl nodefail diagnose --demo`")


def test_the_plan_output_is_what_remediate_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    assert f"(`kubectl nodefail remediate --from-file {DEMO}`,\nexit 4:" in README
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(main, ["remediate", "--from-file", DEMO])
    assert result.exit_code == 4
    assert result.stdout == block_starting("Plan (DRY RUN")


def test_with_the_node_named_the_step_releases_what_the_readme_quotes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    quoted = re.search(r'now step 4, becomes `ok`: "(.+?)"', README, flags=re.DOTALL)
    assert quoted, "the README no longer quotes step 4 with the node's name typed"
    assert "With the node's name typed in place of the placeholder (exit 0)" in README
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(
        main, ["remediate", "--from-file", DEMO, "--node-shutdown-confirmed", "flaky-a"]
    )
    assert result.exit_code == 0
    step4 = result.stdout.split("\n  4  ", 1)[1]
    assert step4.split()[:3] == ["taint-out-of-service", "node/flaky-a", "ok"]
    assert " ".join(quoted.group(1).split()) in " ".join(step4.split())
