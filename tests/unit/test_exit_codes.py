"""The exit codes runbooks branch on are documented once and agree everywhere: the README's
table, the --help text of every command, and errors.Exit (which the code exits with)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_nodefail import errors
from kubectl_nodefail.cli import EXIT_CODES_HELP, main

README = Path(__file__).resolve().parents[2] / "README.md"


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


@pytest.mark.parametrize("command", ["diagnose", "remediate", "dump"])
def test_every_command_help_lists_every_code(command: str) -> None:
    result = CliRunner().invoke(main, [command, "--help"])
    assert result.exit_code == 0
    assert help_codes(result.stdout) == {int(code) for code in errors.Exit}


def test_every_error_class_exits_with_a_documented_code() -> None:
    documented = set(readme_codes())
    classes = [errors.NodefailError]
    while classes:
        cls = classes.pop()
        classes += cls.__subclasses__()
        if cls is not errors.NodefailError:
            assert int(cls.exit_code) in documented - {int(errors.Exit.INTERNAL)}, cls
