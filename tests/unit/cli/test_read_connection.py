"""`diagnose --watch` reads the cluster read after read on one connection (cli/live.py,
ReadConnection), as one kubectl process does: a credential plugin runs once while its
credential lasts, not at every read; a read refused for its credentials makes the next read
connect anew; the context stays the one the watch began on."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
import pytest

from kubectl_nodefail.cli import live
from kubectl_nodefail.cli.flags import Connection
from kubectl_nodefail.cli.live import ReadConnection, load_snapshot
from kubectl_nodefail.cli.running import DEADLINE_KEY
from kubectl_nodefail.common.errors import AuthError
from tests.support.fakeapi import json_answer, kubeconfig, self_signed, serve

CREDENTIAL = {
    "kind": "ExecCredential",
    "apiVersion": "client.authentication.k8s.io/v1",
    "status": {"token": "tok", "expirationTimestamp": "2999-01-01T00:00:00Z"},
}


def _answer(n: int, method: str, path: str) -> Any:
    if path.startswith("/version"):
        return json_answer({"major": "1", "minor": "36", "gitVersion": "v1.36.1"})
    return json_answer({"kind": "List", "apiVersion": "v1", "metadata": {}, "items": []})


def _read(conn: Connection, reads: ReadConnection) -> Any:
    return load_snapshot(conn, None, False, (), (), warn=False, reads=reads)


def test_reads_share_one_connection_and_its_plugins_credential(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    script = f"echo run >> {runs}; echo '{json.dumps(CREDENTIAL)}'"
    plugin = {"apiVersion": CREDENTIAL["apiVersion"], "command": "sh", "args": ["-c", script]}
    cert = self_signed(tmp_path)
    with serve(_answer, tls=cert) as api:
        config = kubeconfig(tmp_path, api.url, cert[0], exec={**plugin, "interactiveMode": "Never"})
        conn = Connection(config, None, 30.0, 0)
        reads = ReadConnection(conn, None)
        first = reads.cluster()
        for _ in range(3):
            assert _read(conn, reads).nodes == []
        assert reads.cluster() is first
        assert runs.read_text().splitlines() == ["run"]  # one run for three reads
        reads.close()
        assert reads.cluster() is not first  # closed: connected anew, the plugin run again
    assert len(api.requests) >= 6
    assert runs.read_text().splitlines() == ["run", "run"]


def test_a_read_refused_for_its_credentials_connects_anew(tmp_path: Path) -> None:
    """A 401 on the kept connection (a token file rotated, a token revoked): the read is made
    again at once on a new one, which reads the kubeconfig again; refused again, it fails (no
    third try), and so does a 403 (no second)."""
    refuse = {"left": 1, "status": 401}

    def script(n: int, method: str, path: str) -> Any:
        if path.startswith("/api/v1/nodes") and refuse["left"]:
            refuse["left"] -= 1
            code = refuse["status"]
            return json_answer({"kind": "Status", "code": code, "reason": "Unauthorized"}, code)
        return _answer(n, method, path)

    def nodes_asked(api: Any) -> int:
        return sum(1 for _, p in api.requests if p.startswith("/api/v1/nodes"))

    with serve(script) as api:
        conn = Connection(kubeconfig(tmp_path, api.url), None, 30, 0)
        reads = ReadConnection(conn, None)
        first = reads.cluster()
        assert _read(conn, reads).nodes == []  # refused once, made again: read
        assert reads.cluster() is not first and nodes_asked(api) == 2
        refuse["left"] = 5
        with pytest.raises(AuthError):
            _read(conn, reads)
        assert nodes_asked(api) == 4  # the kept connection's try, the new one's: no third
        refuse["left"], refuse["status"] = 5, 403
        reads.cluster()
        with pytest.raises(AuthError):
            _read(conn, reads)
        assert nodes_asked(api) == 5  # forbidden: not made again


def test_a_connection_idle_for_long_is_hung_up_before_the_next_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kept-open connections a NAT may have dropped silently are closed first (credentials kept)."""
    hung: list[bool] = []
    with serve(_answer) as api:
        conn = Connection(kubeconfig(tmp_path, api.url), None, 30, 0)
        reads = ReadConnection(conn, None)
        first = reads.cluster()
        monkeypatch.setattr(type(first), "hang_up", lambda self: hung.append(True))
        _read(conn, reads)
        _read(conn, reads)
        assert hung == []
        monkeypatch.setattr(live, "IDLE_SECONDS", -1.0)
        _read(conn, reads)
        assert hung == [True] and reads.cluster() is first


def test_the_reads_stay_on_the_context_the_watch_began_on(tmp_path: Path) -> None:
    conn = Connection(str(tmp_path / "kubeconfig"), None, 30.0, 0)
    assert ReadConnection(conn, "prod").conn.context == "prod"
    assert ReadConnection(conn._replace(context="named"), None).conn.context == "named"


def test_each_read_carries_the_deadline_of_its_own_refresh(tmp_path: Path) -> None:
    """--deadline bounds each refresh of --watch (diagnose_run._renew_deadline): the shared
    client takes the deadline the command's context holds when a read starts."""
    conn = Connection(kubeconfig(tmp_path, "http://127.0.0.1:9"), None, 30, 0)
    reads = ReadConnection(conn, None)
    ctx = click.Context(click.Command("diagnose"))
    with ctx:
        ctx.meta[DEADLINE_KEY] = 100.0
        first = reads.cluster()
        assert first.deadline == 100.0
        ctx.meta[DEADLINE_KEY] = 200.0
        assert reads.cluster() is first and first.deadline == 200.0
    reads.close()


def test_a_watchs_reads_stay_on_the_context_it_began_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kubectl config use-context` during `diagnose --watch`: the reads go on to the cluster
    the watch (and its watches) began on, not to the new current context, even the one that
    connects anew (its token refused once: the kubeconfig read again)."""
    from click.testing import CliRunner

    from kubectl_nodefail.cli import diagnose_run
    from kubectl_nodefail.cli.main import main
    from kubectl_nodefail.watch import watch as watching

    path = tmp_path / "kubeconfig"

    def config(current: str, a: str, b: str) -> None:
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": current,
                    "clusters": [
                        {"name": "a", "cluster": {"server": a}},
                        {"name": "b", "cluster": {"server": b}},
                    ],
                    "users": [{"name": "u", "user": {"token": "t"}}],
                    "contexts": [
                        {"name": n, "context": {"cluster": n, "user": "u"}} for n in ("a", "b")
                    ],
                }
            )
        )

    asked = {"nodes": 0}

    def refusing_once(n: int, method: str, path: str) -> Any:
        if path.startswith("/api/v1/nodes"):
            asked["nodes"] += 1
            if asked["nodes"] == 2:  # the second read's: on the kept connection
                return json_answer({"kind": "Status", "code": 401}, 401)
        return _answer(n, method, path)

    with serve(refusing_once) as first, serve(_answer) as second:
        config("a", first.url, second.url)

        def two_reads(refresh: Any, *args: Any, **kwargs: Any) -> int:
            refresh()
            config("b", first.url, second.url)  # kubectl config use-context b
            refresh()
            return 0

        monkeypatch.setattr(watching, "run", two_reads)
        # the watch's exit (os._exit: not to wait for reads in flight) as a plain one here
        monkeypatch.setattr(diagnose_run, "leave_now", lambda code: sys.exit(code))
        result = CliRunner().invoke(main, ["diagnose", "--watch", "--kubeconfig", str(path)])
    nodes = [
        [p for _, p in api.requests if p.startswith("/api/v1/nodes")] for api in (first, second)
    ]
    assert result.exit_code == 0, result.output
    assert len(nodes[0]) == 3 and nodes[1] == [], nodes  # read, refused, read anew
