"""Every file a command writes (dump -f, remediate --plan-out and --log-file, also with --zone
and --selector) is checked once, before the first request: a path that cannot be written (a
missing folder, a folder, a folder or file without write permission, ...) is one line on stderr
and exit 2, with nothing requested from the API server and nothing written. The server is a
local fake that records what it is asked (tests/support/fakeapi.py): the check is about the client
not asking."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_nodefail.cli.main import main
from kubectl_nodefail.common import outpath
from kubectl_nodefail.common.errors import BadOptionError
from tests.support import fakeapi


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
    # a zone or selector is planned by zonecmd, which checks --log-file itself
    "remediate --zone --log-file": lambda kc, path: [
        *("remediate", "--zone", "z1", "--kubeconfig", kc, "--confirm"),
        *("--zone-shutdown-confirmed", "z1", "--log-file", path),
    ],
    "remediate --selector --log-file": lambda kc, path: [
        *("remediate", "-l", "pool=a", "--kubeconfig", kc, "--log-file", path),
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


NOBODY = 65534


@contextmanager
def unprivileged() -> Iterator[None]:
    """Run as a user that file modes bind (nobody), then as before. Root may write into a
    folder without write permission, so there the check rightly lets such a path through;
    as root, the real and effective user become nobody for the block (root stays the saved
    one, to come back)."""
    if os.geteuid() != 0:
        yield
        return
    os.setresuid(NOBODY, NOBODY, 0)
    try:
        yield
    finally:
        os.setresuid(0, 0, 0)


@pytest.fixture(scope="module")
def locked(server: fakeapi.FakeApi) -> Iterator[Path]:
    """A folder any user may enter, holding a folder and a file no one but root may write to
    (pytest's own temporary folders are closed to other users)."""
    tmp = Path(tempfile.mkdtemp(prefix="nodefail-outputs-"))
    tmp.chmod(0o755)
    fakeapi.kubeconfig(tmp, server.url)
    (tmp / "kubeconfig").chmod(0o644)
    (tmp / "read-only-folder").mkdir(mode=0o555)
    (tmp / "read-only-file").write_text("x")
    (tmp / "read-only-file").chmod(0o444)
    yield tmp
    (tmp / "read-only-folder").chmod(0o755)
    shutil.rmtree(tmp)


UNWRITABLE = {
    "a folder without write permission": (
        lambda tmp, n: f"{tmp}/read-only-folder/{n}.json",
        "is not writable",
    ),
    "a file without write permission": (
        lambda tmp, n: f"{tmp}/read-only-file",
        "permission denied",
    ),
}


@settings(max_examples=40, deadline=None)
@given(
    bad=st.sampled_from(sorted(UNWRITABLE)), command=st.sampled_from(sorted(COMMANDS)), name=NAMES
)
def test_an_unwritable_path_is_exit_2_before_any_request(
    server: fakeapi.FakeApi, locked: Path, bad: str, command: str, name: str
) -> None:
    kc = str(locked / "kubeconfig")
    # first, as the test's own user, a path it may write to: the command reads the cluster
    # (the fake server's 500: exit 14), so a refusal below is the path's doing
    good = f"{locked}/good-{os.getpid()}.json"
    result = CliRunner().invoke(main, COMMANDS[command](kc, good))
    assert result.exit_code == 14, result.stderr
    Path(good).unlink(missing_ok=True)
    make_path, words = UNWRITABLE[bad]
    before, asked = tree(locked), len(server.requests)
    with unprivileged():
        result = CliRunner().invoke(main, COMMANDS[command](kc, make_path(locked, name)))
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], result.stderr
    assert result.stdout == "" and isinstance(result.exception, SystemExit)
    assert server.requests[asked:] == [], "a request was sent before the path was checked"
    assert tree(locked) == before, "something was written"
    assert (locked / "read-only-file").read_text() == "x"


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
