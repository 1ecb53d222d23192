"""The help a tired human reads: every command's summary whole on an 80-column screen, one
version format, and click's option suggestions that help."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from kubectl_nodefail.cli.main import main


def commands_section(text: str) -> list[str]:
    block = text.split("Commands:\n", 1)[1]
    return [line for line in block.split("\n\n", 1)[0].splitlines() if line.strip()]


@pytest.mark.parametrize("width", [80, 120, 200])
def test_every_summary_is_whole_on_one_line(width: int) -> None:
    result = CliRunner().invoke(main, ["--help"], terminal_width=width)
    assert result.exit_code == 0
    rows = commands_section(result.stdout)
    names = sorted(main.commands)  # type: ignore[attr-defined]
    assert [row.split()[0] for row in rows] == names  # one line a command: nothing wrapped
    for row, name in zip(rows, names):
        summary = row.split(None, 1)[1]
        command = main.commands[name]  # type: ignore[attr-defined]
        assert summary == command.get_short_help_str(), row
        assert "..." not in row and len(row) <= 80, row


def test_no_summary_is_ever_cut() -> None:
    """click cuts a summary it makes from the help text at a limit: ours never are."""
    for command in main.commands.values():  # type: ignore[attr-defined]
        assert command.get_short_help_str(limit=10) == command.get_short_help_str(limit=1000)


def test_version_flag_and_version_command_say_the_same() -> None:
    flag = CliRunner().invoke(main, ["--version"])
    command = CliRunner().invoke(main, ["version", "--client"])
    assert flag.exit_code == command.exit_code == 0
    assert flag.stdout == command.stdout
    assert re.fullmatch(
        r"kubectl-nodefail \S+ \(Python \d+\.\d+\.\d+\S*\)\nJSON decoder: (orjson \S+|json "
        r"\(standard library\))\n",
        flag.stdout,
    )
