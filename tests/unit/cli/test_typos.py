"""Typos a tired human makes, each answered in one line that helps: a namespace the cluster
does not have (a warning with the closest one; silence where RBAC forbids the check), and a
positional argument typed as an option (`--node worker-1`)."""

from __future__ import annotations

from typing import Any

import click
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from kubectl_nodefail.cli.flags import Duration
from kubectl_nodefail.cli.main import main
from kubectl_nodefail.cluster.gather import unknown_namespaces
from kubectl_nodefail.common.errors import Forbidden, NotFound, ServerError, UnreachableError

KNOWN = ["shop", "kube-system", "default", "payments"]


class Namespaces:
    """A cluster whose namespaces answer as `answer` says: 'exists', 404, 403, 500, or
    unreachable; the list of namespaces is `KNOWN` unless it too is forbidden."""

    def __init__(self, answer: str, list_forbidden: bool = False) -> None:
        self.answer = answer
        self.list_forbidden = list_forbidden
        self.asked: list[str] = []

    def get(self, path: str) -> dict[str, Any]:
        self.asked.append(path)
        if self.answer == "exists":
            return {"metadata": {"name": path.rsplit("/", 1)[1]}}
        raise {
            "404": NotFound("not found", status=404),
            "403": Forbidden("forbidden"),
            "500": ServerError("boom", status=500),
            "down": UnreachableError("The connection to the server x was refused"),
        }[self.answer]

    def list_metadata(self, path: str) -> list[dict[str, Any]]:
        if self.list_forbidden:
            raise Forbidden("forbidden")
        return [{"metadata": {"name": n}} for n in KNOWN]


def test_a_typo_names_the_closest_namespace() -> None:
    said = unknown_namespaces(Namespaces("404"), ["shopp"])  # type: ignore[arg-type]
    assert said == ["namespace 'shopp' not found (did you mean shop?): none of its pods were read"]


def test_forbidden_list_still_says_not_found_without_a_guess() -> None:
    said = unknown_namespaces(Namespaces("404", list_forbidden=True), ["shopp"])  # type: ignore[arg-type]
    assert said == ["namespace 'shopp' not found: none of its pods were read"]


@given(
    names=st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=4),
    answer=st.sampled_from(["exists", "404", "403", "500", "down"]),
)
def test_one_line_per_missing_namespace_and_silence_otherwise(
    names: list[str], answer: str
) -> None:
    cluster = Namespaces(answer)
    said = unknown_namespaces(cluster, names)  # type: ignore[arg-type]
    distinct = list(dict.fromkeys(names))
    assert len(cluster.asked) == len(distinct)  # each namespace asked once
    if answer != "404":
        assert said == []  # exists, or the check could not be made: nothing said
        return
    assert len(said) == len(distinct)
    for line, name in zip(said, distinct):
        assert line.startswith(f"namespace {name!r} not found")
        assert "\n" not in line and "\r" not in line
    # the path is escaped: a name cannot reach another resource
    assert all(p.count("/") == 4 for p in cluster.asked), cluster.asked


@given(
    option=st.sampled_from(["--node", "--nodes", "--nod", "--node-name", "--NODE"]),
    value=st.text(min_size=1, max_size=30).filter(lambda v: not v.startswith("-")),
    command=st.sampled_from(["diagnose", "remediate", "dump"]),
)
def test_a_node_typed_as_an_option_is_one_line_saying_how(
    option: str, value: str, command: str
) -> None:
    result = CliRunner().invoke(main, [command, option, value, "--confirm"])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    errors = result.stderr.splitlines()
    assert len(errors) == 1 and errors[0].startswith("error: No such option"), result.stderr
    assert "NODE is an argument, typed without a flag" in errors[0]
    assert f"kubectl nodefail {command} " in errors[0] or f"main {command} " in errors[0]
    assert "--demo" not in errors[0] and "--confirm" not in errors[0]


def test_other_unknown_options_keep_clicks_suggestions() -> None:
    result = CliRunner().invoke(main, ["diagnose", "--namespac", "shop"])
    assert result.exit_code == 2 and "--namespace" in result.stderr


COMMANDS = sorted(main.commands) if isinstance(main, click.Group) else []
WORD = st.from_regex(r"[a-z][a-z0-9-]{0,14}", fullmatch=True)


def _usage_error(args: list[str]) -> str:
    """The one line a usage error gives: exit 2, nothing on stdout, no traceback."""
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, (args, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit), args
    assert result.stdout == "", (args, result.stdout)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), (args, result.stderr)
    return lines[0]


@given(command=st.sampled_from(COMMANDS), word=WORD)
def test_an_unknown_option_of_any_command_is_one_line(command: str, word: str) -> None:
    sub = main.commands[command]
    known = {
        o for p in sub.params for o in getattr(p, "opts", []) + getattr(p, "secondary_opts", [])
    }
    option = f"--{word}"
    if option in known or any(o.startswith(option) for o in known):
        return  # a real option (click also takes a unique prefix of none: it is exact)
    line = _usage_error([command, option])
    assert f"'{option}'" in line
    assert line.endswith(f"(see 'main {command} --help')") or line.endswith(
        f"(see 'kubectl nodefail {command} --help')"
    ), line


@given(word=WORD)
def test_an_unknown_command_is_one_line(word: str) -> None:
    if word in COMMANDS:
        return
    line = _usage_error([word])
    assert f"No such command '{word}'" in line


@given(
    command=st.sampled_from(["diagnose", "remediate", "dump"]),
    value=st.text(min_size=1, max_size=20).filter(lambda v: v.strip() and not v.startswith("-")),
)
def test_a_bad_value_is_one_line_whatever_it_holds(command: str, value: str) -> None:
    """A deadline that is not a duration, escaped: a newline typed in it cannot add a line."""
    try:
        Duration().convert(value, None, None)
        return  # a valid duration
    except click.BadParameter:
        pass
    line = _usage_error([command, "--deadline", value])
    assert "'--deadline'" in line


VALUE_OPTIONS = [
    (name, opt.opts[-1])
    for name, sub in sorted(main.commands.items() if isinstance(main, click.Group) else [])
    for opt in sub.params
    if isinstance(opt, click.Option) and not opt.is_flag and not opt.count
]


@given(st.sampled_from(VALUE_OPTIONS))
def test_an_option_missing_its_value_is_one_line_naming_the_command(
    case: tuple[str, str],
) -> None:
    command, option = case
    line = _usage_error([command, option])
    assert f"'{option}' requires an argument" in line, line
    assert line.endswith(f"{command} --help')"), line
