"""The exit codes runbooks branch on are documented once and agree everywhere: the README's
table, the --help text of every command, and errors.Exit (which the code exits with)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_nodefail.cli.helptext import EXIT_CODES_HELP
from kubectl_nodefail.cli.main import main
from kubectl_nodefail.common import errors, exitcodes

README = Path(__file__).resolve().parents[3] / "README.md"


def readme_codes() -> dict[int, str]:
    text = README.read_text()
    section = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d+) \| (.+?) \|$", section, flags=re.MULTILINE)
    assert rows, "no exit-code table in the README"
    return {int(code): meaning for code, meaning in rows}


def help_codes(text: str) -> set[int]:
    block = text.split("Exit codes:", 1)[1]
    return {int(c) for c in re.findall(r"^\s+(\d+)\s{2,}\S", block, flags=re.MULTILINE)}


def test_readme_table_matches_the_exit_enum() -> None:
    assert set(readme_codes()) == {int(code) for code in errors.Exit}


def test_help_text_matches_the_exit_enum() -> None:
    assert help_codes(EXIT_CODES_HELP) == {int(code) for code in errors.Exit}


def test_the_top_level_help_lists_every_code_once() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    assert result.stdout.count("Exit codes:") == 1
    assert help_codes(result.stdout) == {int(code) for code in errors.Exit}


def test_the_table_covers_every_code_and_every_command() -> None:
    assert [int(c.exit) for c in exitcodes.TABLE] == list(readme_codes())  # the README's order
    assert set(exitcodes.COMMANDS) == set(main.commands)  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", exitcodes.COMMANDS)
def test_each_command_help_lists_only_its_own_codes(command: str) -> None:
    result = CliRunner().invoke(main, [command, "--help"])
    assert result.exit_code == 0
    own = {int(code.exit) for code in exitcodes.codes_for(command)}
    assert help_codes(result.stdout) == own
    assert result.stdout.count("Exit codes:") == 1
    assert {0, 1, 2} <= own  # success, a bug, a usage error: every command can


def test_dump_help_does_not_list_remediates_codes() -> None:
    text = CliRunner().invoke(main, ["dump", "--help"]).stdout
    assert not help_codes(text) & {3, 4, 5, 6, 7, 15}


def test_every_error_class_exits_with_a_documented_code() -> None:
    documented = set(readme_codes())
    classes = [errors.NodefailError]
    while classes:
        cls = classes.pop()
        classes += cls.__subclasses__()
        if cls is not errors.NodefailError:
            assert int(cls.exit_code) in documented - {int(errors.Exit.INTERNAL)}, cls
