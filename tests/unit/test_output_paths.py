"""Every file a command writes (dump -f, remediate --plan-out and --log-file) is checked once,
before the first request: a path that cannot be written is one line on stderr and exit 2, with
nothing requested from the API server and nothing written. The server is a local fake that
records what it is asked (tests/unit/fakeapi.py): the check is about the client not asking."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_nodefail import outpath
from kubectl_nodefail.cli import main
from kubectl_nodefail.errors import BadOptionError
from tests.unit import fakeapi


@pytest.fixture(scope="module")
def server() -> Iterator[fakeapi.FakeApi]:
    """Answers every request with a 500: any request sent is counted."""
    with fakeapi.serve(lambda n, method, path: fakeapi.json_answer({}, status=500)) as api:
        yield api


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory, server: fakeapi.FakeApi) -> Path:
    """A folder holding the kubeconfig, a file, a folder and a symbolic link to a missing
    folder, each a parent or target that cannot take an output file."""
    tmp = tmp_path_factory.mktemp("outputs")
    fakeapi.kubeconfig(tmp, server.url)
    (tmp / "a-file").write_text("x")
    (tmp / "a-folder").mkdir()
    (tmp / "a-link").symlink_to(tmp / "absent" / "deeper")
    return tmp


NAMES = st.text(
    alphabet=st.characters(blacklist_characters="/\0", blacklist_categories=("Cs",)),
    min_size=1,
    max_size=20,
).filter(lambda n: n not in (".", ".."))

# (how the path is bad, a path in `tmp` built from a generated name)
BAD = {
    "missing folder": lambda tmp, n: f"{tmp}/absent-{n}/{n}.json",
    "missing folder, deep": lambda tmp, n: f"{tmp}/absent/{n}/{n}/x.json",
    "missing folder then ..": lambda tmp, n: f"{tmp}/absent-{n}/../{n}.json",
    "an existing folder": lambda tmp, n: f"{tmp}/a-folder",
    "a trailing slash": lambda tmp, n: f"{tmp}/{n}/",
    "a dot": lambda tmp, n: f"{tmp}/a-folder/{n}/..",
    "parent is a file": lambda tmp, n: f"{tmp}/a-file/{n}",
    "a link into a missing folder": lambda tmp, n: f"{tmp}/a-link",
    "a name too long": lambda tmp, n: f"{tmp}/{n}{'x' * 256}",
    "empty": lambda tmp, n: "",
}

COMMANDS = {
    "dump -f": lambda kc, path: ["dump", "--kubeconfig", kc, "-f", path],
    "dump --file, nodes named": lambda kc, path: ["dump", "n1", "--kubeconfig", kc, "--file", path],
    "remediate --plan-out": lambda kc, path: ["remediate", "--kubeconfig", kc, "--plan-out", path],
    "remediate --log-file": lambda kc, path: [
        *("remediate", "n1", "--kubeconfig", kc, "--confirm"),
        *("--node-shutdown-confirmed", "n1", "--log-file", path),
    ],
}


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(bad=st.sampled_from(sorted(BAD)), command=st.sampled_from(sorted(COMMANDS)), name=NAMES)
def test_a_bad_output_path_is_exit_2_before_any_request(
    server: fakeapi.FakeApi, place: Path, bad: str, command: str, name: str
) -> None:
    path = BAD[bad](place, name)
    argv = COMMANDS[command](str(place / "kubeconfig"), path)
    before, asked = tree(place), len(server.requests)
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: --")
    assert "cannot write" in lines[0] or lines[0].endswith("the path is empty (nothing was done)")
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert isinstance(result.exception, SystemExit)
    assert server.requests[asked:] == [], "a request was sent before the path was checked"
    assert tree(place) == before, "something was written"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_good_output_path_goes_on_to_the_server(
    server: fakeapi.FakeApi, place: Path, command: str, tmp_path: Path
) -> None:
    """The same commands with a writable path do ask the fake server (which answers 500: exit
    14): the test above would see a request sent before the check."""
    asked = len(server.requests)
    result = CliRunner().invoke(
        main, COMMANDS[command](str(place / "kubeconfig"), str(tmp_path / "out.json"))
    )
    assert result.exit_code == 14, result.stderr
    assert len(server.requests) > asked


def test_the_messages_name_the_problem(place: Path, tmp_path: Path) -> None:
    kc = str(place / "kubeconfig")
    cases = {
        f"{tmp_path}/missing/x.json": f"the folder {tmp_path}/missing does not exist",
        str(tmp_path): "it is a folder, not a file",
        f"{place}/a-file/x": f"{place}/a-file is not a folder",
        f"{tmp_path}/{'x' * 300}": "the file name is too long",
        "": "--file: the path is empty",
    }
    for path, words in cases.items():
        result = CliRunner().invoke(main, ["dump", "--kubeconfig", kc, "-f", path])
        assert result.exit_code == 2 and words in result.stderr, result.stderr
        assert result.stderr.endswith("(nothing was done)\n")


def test_names_no_command_line_can_carry_are_refused_too(tmp_path: Path) -> None:
    """A NUL or a lone surrogate cannot come from a shell (argv is bytes, decoded with
    surrogateescape) but can from a caller of the function: refused, never an exception."""
    for path, words in ((f"{tmp_path}/x\0", "NUL"), (f"{tmp_path}/x\ud800", "not a valid")):
        with pytest.raises(BadOptionError, match=words) as caught:
            outpath.check_writable("--file", path)
        assert caught.value.exit_code == 2
    outpath.check_writable("--file", f"{tmp_path}/\udcff.json")  # the byte 0xff: a fine name
    assert list(tmp_path.iterdir()) == []
