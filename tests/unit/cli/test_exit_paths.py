"""Every row of the exit-code table (kubectl_nodefail/common/exitcodes.py: the README's table and
each command's --help), for every command the row names, reached through the installed plugin: the
console script `kubectl-nodefail` the project's install put beside this Python, run as its own
process. A runbook branches on these codes, so each (code, command) pair has a case here that
exits with it, one line on stderr for an error; the pairs only a live cluster can reach
(remediate --confirm interrupted or unconfirmed, a saved plan replayed on another cluster) name
the test that asserts them, and a test checks that the named test exists and asserts that code.
Exit 1 is a bug in the tool: no case may reach it (every case below asserts its own code)."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kubectl_nodefail.common.errors import Exit
from kubectl_nodefail.common.exitcodes import TABLE
from tests.support import fakeapi
from tests.support.fakeapi import json_answer, kubeconfig, serve
from tests.unit.conftest import FIXTURES

ROOT = Path(__file__).resolve().parents[3]
PLUGIN = Path(sys.executable).parent / "kubectl-nodefail"  # what `pip install` put there
DOWN = str(FIXTURES / "node-down-after-eviction.json")
VERSION = fakeapi.VERSION


@contextmanager
def _refused(tmp: Path) -> Iterator[str]:
    """A kubeconfig whose server is a port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    yield kubeconfig(tmp, f"https://127.0.0.1:{port}")


def _answering(answer: fakeapi.Answer) -> Callable[[Path], Iterator[str]]:
    @contextmanager
    def server(tmp: Path) -> Iterator[str]:
        with serve(lambda n, method, path: answer) as api:
            yield kubeconfig(tmp, api.url)

    return server  # type: ignore[return-value]


def _nothing_there(n: int, method: str, path: str) -> fakeapi.Answer:
    """A cluster with no objects at all: its version, and every list empty."""
    if path.startswith("/version"):
        return json_answer(VERSION)
    return json_answer({"kind": "List", "apiVersion": "v1", "metadata": {}, "items": []})


@contextmanager
def _empty_cluster(tmp: Path) -> Iterator[str]:
    with serve(_nothing_there) as api:
        yield kubeconfig(tmp, api.url)


UNAUTHORIZED = json_answer({"kind": "Status", "code": 401, "message": "Unauthorized"}, 401)
GARBAGE = (200, {"Content-Type": "application/json"}, b"<html>not json</html>")
CLUSTER_COMMANDS = {"diagnose": (), "remediate": ("flaky-a",), "dump": ()}

# (code, command) -> (arguments, the server behind --kubeconfig or None)
CASES: dict[tuple[int, str], tuple[tuple[str, ...], Callable[..., object] | None]] = {
    (0, "diagnose"): (
        ("diagnose", "--from-file", str(FIXTURES / "node-down-recovered.json")),
        None,
    ),
    (0, "remediate"): (
        ("remediate", "flaky-s2", "--from-file", str(FIXTURES / "cloud-shutdown.json")),
        None,
    ),
    (0, "version"): (("version", "--client"), None),
    (0, "rbac"): (("rbac",), None),
    (0, "completion"): (("completion", "bash"), None),
    (3, "diagnose"): (("diagnose", "--demo"), None),
    (4, "remediate"): (("remediate", "--from-file", DOWN), None),
    (5, "remediate"): (
        ("remediate", "--from-file", str(FIXTURES / "node-down-recovered.json")),
        None,
    ),
    **{
        (2, c): ((c, "--no-such-flag"), None)
        for c in ("diagnose", "remediate", "dump", "version", "rbac", "completion")
    },
    **{
        (10, c): ((c, *a, "--kubeconfig", "/nonexistent/kubeconfig"), None)
        for c, a in CLUSTER_COMMANDS.items()
    },
    **{(11, c): ((c, *a), _refused) for c, a in CLUSTER_COMMANDS.items()},
    **{(12, c): ((c, *a), _answering(UNAUTHORIZED)) for c, a in CLUSTER_COMMANDS.items()},
    **{(14, c): ((c, *a), _answering(GARBAGE)) for c, a in CLUSTER_COMMANDS.items()},
    (13, "diagnose"): (("diagnose", "--from-file", "{bad}"), None),
    (13, "remediate"): (("remediate", "--from-file", "{bad}"), None),
    (16, "diagnose"): (("diagnose", "nosuch", "--from-file", DOWN), None),
    (16, "remediate"): (("remediate", "nosuch", "--from-file", DOWN), None),
    (16, "dump"): (("dump", "nosuch"), _empty_cluster),
    (0, "dump"): (("dump", "-f", "out.json"), _empty_cluster),
    (17, "remediate"): (
        ("remediate", "--from-file", DOWN, "--node-shutdown-confirmed", "healthy-0"),
        None,
    ),
}
# Ctrl-C while reading a cluster that never answers its pods (remediate's interruption is 6)
CTRL_C = ("diagnose", "dump")
# Reached only on a live cluster: the test that asserts it, and the code it asserts.
ELSEWHERE = {
    (6, "remediate"): "tests/unit/remediate/test_interrupted_remediate.py"
    "::test_a_signal_while_reading_exits_6_at_once_with_nothing_done",
    (7, "remediate"): "tests/e2e/test_remediate_effects.py",
    (15, "remediate"): "tests/e2e/test_remediate_binding.py",
}


def _pairs() -> list[tuple[int, str]]:
    return sorted(
        (int(code.exit), command)
        for code in TABLE
        if code.exit != Exit.INTERNAL
        for command in code.commands
    )


def test_every_documented_pair_has_a_case() -> None:
    """No (code, command) of the table is left without a case here, a Ctrl-C case or a named
    test elsewhere; and no case exits with a code the table does not give that command."""
    covered = set(CASES) | {(130, c) for c in CTRL_C} | set(ELSEWHERE)
    assert set(_pairs()) - covered == set()
    assert covered - set(_pairs()) == set()


@pytest.mark.parametrize(("code", "command"), sorted(CASES))
def test_each_pair_exits_with_its_code_through_the_installed_plugin(
    code: int, command: str, tmp_path: Path
) -> None:
    assert PLUGIN.exists(), f"the console script is not installed beside {sys.executable}"
    args, server = CASES[(code, command)]
    bad = tmp_path / "bad.json"
    bad.write_text('{"items": 5}')
    args = tuple(a.replace("{bad}", str(bad)) for a in args)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "KUBECONFIG": str(tmp_path / "none")}
    with server(tmp_path) if server else _nothing() as config:  # type: ignore[operator]
        extra = ("--kubeconfig", config, "--deadline", "20") if config else ()
        proc = subprocess.run(
            [str(PLUGIN), *args, *extra],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=60,
            check=False,
        )
    assert proc.returncode == code, (args, proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    if code >= 10:  # an error: one line on stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@contextmanager
def _nothing() -> Iterator[str]:
    yield ""


@pytest.mark.parametrize("command", CTRL_C)
def test_ctrl_c_is_130_through_the_installed_plugin(command: str, tmp_path: Path) -> None:
    with serve(fakeapi.hangs_on_pods) as api:
        config = kubeconfig(tmp_path, api.url)
        argv = [str(PLUGIN), command, "--kubeconfig", config, "--request-timeout", "60"]
        returncode, err, _ = fakeapi.ctrl_c_while_reading_pods(argv, api, cwd=tmp_path)
    assert returncode == 130, err
    assert err.strip() == "interrupted", err


@pytest.mark.parametrize(("code", "command"), sorted(ELSEWHERE))
def test_the_pairs_a_live_cluster_reaches_are_asserted_where_named(code: int, command: str) -> None:
    where = ELSEWHERE[(code, command)]
    path, _, function = where.partition("::")
    source = (ROOT / path).read_text()
    if function:
        assert re.search(rf"^def {re.escape(function)}\(", source, re.M), where
    assert re.search(rf"returncode == {code}\b", source), where
    assert command in source, where


def test_an_interrupted_verbose_run_still_says_what_it_asked(tmp_path: Path) -> None:
    """-v's request budget is printed however the run ends: a Ctrl-C leaves at once (not
    after the reads in flight), and once skipped it (as `diagnose --watch`'s end did)."""
    with serve(fakeapi.hangs_on_pods) as api:
        config = kubeconfig(tmp_path, api.url)
        argv = [str(PLUGIN), "diagnose", "-v", "--kubeconfig", config, "--request-timeout", "60"]
        returncode, err, _ = fakeapi.ctrl_c_while_reading_pods(argv, api, cwd=tmp_path)
    assert returncode == 130, err
    lines = err.strip().splitlines()
    assert "interrupted" in lines and lines[-1].startswith("  "), err
    assert any(line.startswith("requests: ") for line in lines), err
    assert any(line.split()[:2] == ["list", "nodes"] for line in lines), err
