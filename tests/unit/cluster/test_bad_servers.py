"""Bad servers and bad networks: a documented exit code and one line, within the deadline.

Every case here was an exit 1, a traceback, an extra log line or an unbounded wait before
(issue 9). Local fake servers (tests/support/fakeapi.py) play what a real API server cannot be made
to do: hang, answer garbage, throttle.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_nodefail.cli.main import main
from kubectl_nodefail.cluster import kube
from kubectl_nodefail.cluster.kubeconfig import Overrides
from kubectl_nodefail.common.errors import (
    DeadlineExceeded,
    MalformedResponse,
    ServerError,
    UnreachableError,
)
from tests.support import fakeapi
from tests.support.fakeapi import (
    json_answer,
    kubeconfig,
    self_signed,
    serve,
    silent_socket,
)
from tests.unit.conftest import FIXTURES

CLI = (sys.executable, "-m", "kubectl_nodefail")  # the real entry point, in its own process
VERSION = {"major": "1", "minor": "36", "gitVersion": "v1.36.1"}


def run(*args: str) -> tuple[int, str, str, float]:
    start = time.monotonic()
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr, time.monotonic() - start


SLACK = 5  # seconds past a deadline still counted as "within": a loaded 2-core machine is slow


def start_and_end_seconds(tmp_path: Path) -> float:
    """What starting and ending the real entry point costs at this moment: the same command
    against a port that refuses at once (imports, kubeconfig, one refused connection, exit).
    A deadline counts from the process's start, so a wall time measured around the process is
    the deadline plus this; under two suites side by side it reached 4-5 s (run t of
    2026-12-02: 8.6 s for a 3 s deadline)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    (tmp_path / "refused").mkdir()
    config = kubeconfig(tmp_path / "refused", f"https://127.0.0.1:{port}")
    start = time.monotonic()
    proc = subprocess.run(
        [*CLI, "diagnose", "--kubeconfig", config], capture_output=True, timeout=120, check=False
    )
    assert proc.returncode not in (0, 1), proc.stderr
    return time.monotonic() - start


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def cluster_for(tmp_path: Path, url: str, deadline_in: float | None = None) -> kube.Cluster:
    deadline = None if deadline_in is None else time.monotonic() + deadline_in
    cluster = kube.Cluster(kubeconfig(tmp_path, url), timeout=5, deadline=deadline)
    cluster.sleep = lambda seconds: waits.append(seconds)
    return cluster


waits: list[float] = []


@pytest.fixture(autouse=True)
def _no_waits() -> None:
    waits.clear()


# --- time: a server that never answers ends within the deadline, exit 11 -----------------


def test_never_answering_http_server_ends_within_the_deadline(tmp_path: Path) -> None:
    with serve(lambda n, m, p: None) as api:
        config = kubeconfig(tmp_path, api.url)
        code, _, err, took = run(
            "diagnose", "--kubeconfig", config, "--request-timeout", "0", "--deadline", "4"
        )
    assert code == 11, err
    assert "overall deadline" in one_line(err)
    assert took < 4 + SLACK, took
    # The first reads go out together; none is ever sent again (none if start-up ate the deadline).
    assert len(api.requests) == len(set(api.requests)), api.requests


def test_request_timeout_is_per_request_and_not_doubled(tmp_path: Path) -> None:
    with serve(lambda n, m, p: None) as api:
        config = kubeconfig(tmp_path, api.url)
        code, _, err, took = run("diagnose", "--kubeconfig", config, "--request-timeout", "1s")
    assert code == 11
    assert "no answer from the API server" in one_line(err) and "within 1s" in err
    assert took < 1 + SLACK and api.requests
    assert len(api.requests) == len(set(api.requests)), api.requests  # none sent twice


def test_tls_handshake_that_never_completes_ends_within_the_deadline(tmp_path: Path) -> None:
    with silent_socket() as address:
        config = kubeconfig(tmp_path, f"https://{address}")
        code, _, err, took = run("diagnose", "--kubeconfig", config, "--deadline", "2s")
    assert code == 11, err
    one_line(err)
    assert took < 2 + SLACK, took


def test_tls_server_that_never_answers_ends_within_the_deadline(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    with serve(lambda n, m, p: None, tls=(cert, key)) as api:
        config = kubeconfig(tmp_path, api.url, ca_file=cert)
        code, _, err, took = run("diagnose", "--kubeconfig", config, "--deadline", "4")
    assert code == 11, err
    assert "overall deadline" in one_line(err)
    assert took < 4 + SLACK, took
    # TLS worked; the first reads go out together, none answered, none retried.
    assert len(api.requests) == len(set(api.requests)), api.requests


def test_installed_command_ends_within_the_deadline_over_tls(tmp_path: Path) -> None:
    """The real entry point in its own process, as a runbook calls it: a server that never
    answers, requests allowed 60 s, the deadline 3 s."""
    cert, key = self_signed(tmp_path)
    with serve(lambda n, m, p: None, tls=(cert, key)) as api:
        config = kubeconfig(tmp_path, api.url, ca_file=cert)
        start = time.monotonic()
        proc = subprocess.run(
            [
                *CLI,
                "diagnose",
                "--kubeconfig",
                config,
                "--request-timeout",
                "60",
                "--deadline",
                "3",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        took = time.monotonic() - start
    assert proc.returncode == 11, proc.stderr
    assert one_line(proc.stderr).startswith("error: ")
    assert took < 3 + start_and_end_seconds(tmp_path) + SLACK, took


def test_hanging_credential_plugin_is_killed_at_the_deadline(tmp_path: Path) -> None:
    """A credential plugin that never returns (and started a child of its own) is killed with
    its children at the deadline; the one line names the plugin, not the network; exit 12;
    nothing reached the server."""
    pids = tmp_path / "pids"
    (tmp_path / "server").mkdir()
    cert = self_signed(tmp_path / "server")
    with serve(lambda n, m, p: json_answer(VERSION), tls=cert) as api:
        config = kubeconfig(
            tmp_path,
            api.url,
            ca_file=cert[0],
            exec={
                "apiVersion": "client.authentication.k8s.io/v1",
                "command": "sh",
                "args": ["-c", f"sleep 60 & echo $$ $! > {pids}; wait"],
                "interactiveMode": "Never",
            },
        )
        start = time.monotonic()
        proc = subprocess.run(
            [*CLI, "diagnose", "--kubeconfig", config, "--deadline", "8"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        took = time.monotonic() - start
        assert api.requests == []
    assert proc.returncode == 12, proc.stderr
    line = one_line(proc.stderr)
    assert proc.stderr.count("\n") == 1 and "credential plugin 'sh'" in line, line
    assert "did not finish within" in line and "killed" in line, line
    # 8 s, not 2: with two suites side by side the plugin's own start-up (imports) took longer
    # than 2 s, so the overall deadline passed before the credential plugin was even run.
    assert took < 8 + start_and_end_seconds(tmp_path) + SLACK, took
    assert not [pid for pid in map(int, pids.read_text().split()) if running(pid)]


def running(pid: int) -> bool:
    """The process exists and is not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


# --- retries: GETs only, with backoff, Retry-After within the deadline -----------------------


def test_503_with_a_long_retry_after_fails_at_once_and_says_so(tmp_path: Path) -> None:
    def script(n: int, method: str, path: str):  # type: ignore[no-untyped-def]
        return json_answer({"message": "overloaded"}, 503, **{"Retry-After": "75"})

    with serve(script) as api:
        cluster = cluster_for(tmp_path, api.url, deadline_in=30)
        start = time.monotonic()
        with pytest.raises(ServerError) as info:
            cluster.get("/version")
    assert time.monotonic() - start < 5 and waits == []  # 75 s > what is left: no wait at all
    assert "asked to wait '75' (Retry-After)" in info.value.line()
    assert "left of the overall deadline" in info.value.line()
    assert info.value.exit_code == 14


def test_retry_after_longer_than_a_request_may_take_fails_at_once(tmp_path: Path) -> None:
    def script(n: int, method: str, path: str):  # type: ignore[no-untyped-def]
        return json_answer({"message": "overloaded"}, 503, **{"Retry-After": "20"})

    with serve(script) as api:
        cluster = cluster_for(tmp_path, api.url, deadline_in=300)  # timeout 5 s
        with pytest.raises(ServerError) as info:
            cluster.get("/version")
    assert waits == [] and len(api.requests) == 1
    assert "asked to wait '20' (Retry-After), longer than one request may take" in str(
        info.value.line()
    )


def test_429_with_unreadable_retry_after_backs_off_then_succeeds(tmp_path: Path) -> None:
    def script(n: int, method: str, path: str):  # type: ignore[no-untyped-def]
        if n < 2:
            return json_answer({"message": "slow down"}, 429, **{"Retry-After": "soon"})
        return json_answer(VERSION)

    with serve(script) as api:
        cluster = cluster_for(tmp_path, api.url, deadline_in=30)
        assert cluster.server_version() == "v1.36.1"
    assert waits == [0.5, 1.0] and len(api.requests) == 3


def test_429_short_retry_after_is_honoured(tmp_path: Path) -> None:
    def script(n: int, method: str, path: str):  # type: ignore[no-untyped-def]
        if n == 0:
            return json_answer({}, 429, **{"Retry-After": "3"})
        return json_answer(VERSION)

    with serve(script) as api:
        cluster = cluster_for(tmp_path, api.url, deadline_in=30)
        assert cluster.server_version() == "v1.36.1"
    assert waits == [3.0]


def test_a_429_storm_is_ridden_out_within_the_deadline(tmp_path: Path) -> None:
    """Throttled (APF's 429 with Retry-After: 1) for 8 tries, far past RETRIES: retried while
    the deadline allows, as kubectl rides it out, the server's wait honoured each time, and one
    line said once (however many requests were throttled)."""
    said: list[str] = []

    def script(n: int, method: str, path: str):  # type: ignore[no-untyped-def]
        if n < 8:
            return json_answer({"message": "too many requests"}, 429, **{"Retry-After": "1"})
        return json_answer(VERSION)

    with serve(script) as api:
        cluster = cluster_for(tmp_path, api.url, deadline_in=60)
        cluster.notice = said.append
        kube.Cluster.throttle_said = False
        assert cluster.server_version() == "v1.36.1"
        assert cluster.server_version() == "v1.36.1"
    assert waits == [1.0] * 8 and len(api.requests) == 10
    assert len(said) == 1 and "throttling requests (429 Too Many Requests" in said[0]
    assert "left of --deadline" in said[0]


def test_a_429_without_retry_after_backs_off_with_jitter_within_a_bound(tmp_path: Path) -> None:
    def script(n: int, method: str, path: str):  # type: ignore[no-untyped-def]
        return json_answer({}, 429) if n < 12 else json_answer(VERSION)

    with serve(script) as api:
        cluster = cluster_for(tmp_path, api.url, deadline_in=600)
        assert cluster.server_version() == "v1.36.1"
    assert waits[:2] == [0.5, 1.0]  # the first tries as for any retry
    assert all(0 < w <= 5 for w in waits[2:])  # capped at --request-timeout (5 s here)
    assert len(set(waits[5:])) > 1  # jittered: the clients of a struggling server spread out
    assert len(api.requests) == 13


def test_a_503_without_retry_after_is_still_tried_retries_times(tmp_path: Path) -> None:
    with serve(lambda n, m, p: json_answer({"message": "down"}, 503)) as api:
        cluster = cluster_for(tmp_path, api.url, deadline_in=600)
        with pytest.raises(ServerError):
            cluster.server_version()
    assert len(api.requests) == 1 + kube.RETRIES


def test_throttled_past_the_deadline_is_exit_14_one_line(tmp_path: Path) -> None:
    """A storm longer than --deadline: retried until the next wait would pass it, then one
    line naming the throttling and the deadline, exit 14."""

    def script(n: int, method: str, path: str):  # type: ignore[no-untyped-def]
        return json_answer({"message": "slow down"}, 429, **{"Retry-After": "1"})

    start = time.monotonic()
    with serve(script) as api:
        kube.Cluster.throttle_said = False
        code, _, err, _ = run(
            "diagnose", "--kubeconfig", kubeconfig(tmp_path, api.url), "--deadline", "4"
        )
    assert code == 14
    lines = err.strip().splitlines()
    assert len(lines) == 2, err  # the notice, then the error
    assert lines[0].startswith("warning: the API server at ") and "throttling" in lines[0]
    assert "429 Too Many Requests" in lines[1] and "slow down" in lines[1]
    assert "left of the overall deadline (--deadline)" in lines[1]
    assert time.monotonic() - start < 4 + SLACK
    # far more tries than RETRIES: the deadline, not the count, was the limit
    assert Counter(api.requests)[("GET", "/version")] > 1 + kube.RETRIES


def test_writes_are_never_retried(tmp_path: Path) -> None:
    with serve(lambda n, m, p: json_answer({"message": "down"}, 503)) as api:
        cluster = cluster_for(tmp_path, api.url)
        with pytest.raises(ServerError):
            cluster.create("/api/v1/namespaces/x/events", {"kind": "Event"})
    assert api.requests == [("POST", "/api/v1/namespaces/x/events")] and waits == []


def test_deadline_already_spent_sends_nothing(tmp_path: Path) -> None:
    with serve(lambda n, m, p: json_answer(VERSION)) as api:
        cluster = cluster_for(tmp_path, api.url, deadline_in=-1)
        with pytest.raises(DeadlineExceeded) as info:
            cluster.get("/version")
    assert api.requests == [] and info.value.exit_code == 11


def test_refused_connection_fails_at_once_in_kubectls_words(tmp_path: Path) -> None:
    """kubectl does not retry a refused connection (client-go retries a GET on a reset or
    EOF only): neither do we, and the line is kubectl's, without urllib3's internals."""
    with silent_socket() as address:
        pass  # the port is closed again: connections are refused
    cluster = cluster_for(tmp_path, f"http://{address}", deadline_in=30)
    with pytest.raises(UnreachableError) as info:
        cluster.get("/version")
    assert info.value.line().startswith(
        f"The connection to the server {address} was refused - did you specify the right host "
        "or port? (context "
    )
    assert "Connection(" not in info.value.line() and "Errno" not in info.value.line()
    assert waits == []


def test_a_connection_closed_without_an_answer_is_retried_as_client_go_does(
    tmp_path: Path,
) -> None:
    """A GET whose connection the server closes without answering (Go: EOF) is sent again,
    with backoff, then fails in one line: client-go retries exactly this (IsProbableEOF)."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[int] = []

    def hang_up() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.recv(65536)
            accepted.append(1)
            conn.close()

    threading.Thread(target=hang_up, daemon=True).start()
    try:
        cluster = cluster_for(tmp_path, f"http://127.0.0.1:{listener.getsockname()[1]}", 30)
        with pytest.raises(UnreachableError) as info:
            cluster.get("/version")
    finally:
        listener.close()
    assert info.value.line().startswith("Unable to connect to the server: "), info.value.line()
    assert "Connection(" not in info.value.line() and "Error(" not in info.value.line()
    assert waits == [0.5, 1.0] and len(accepted) == 3


# --- malformed answers: exit 14 -----------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"[1, 2, 3]", "JSON list, not an object"),
        (b"<html>hello</html>", "not JSON"),
        (b"[" * 200_000, "nested too deeply"),
        (b'{"items": "nope"}', "items is not a list"),
        (b'{"items": [{"metadata": {}}]}', "items[0] is not an object with metadata.name"),
        (b'{"metadata": []}', "metadata is not an object"),
    ],
)
def test_malformed_answers_are_exit_14(tmp_path: Path, body: bytes, message: str) -> None:
    with serve(lambda n, m, p: (200, {"Content-Type": "application/json"}, body)) as api:
        cluster = cluster_for(tmp_path, api.url)
        with pytest.raises(MalformedResponse) as info:
            cluster.get("/api/v1/nodes")
    assert message in info.value.line() and info.value.exit_code == 14


def test_server_answering_a_json_list_exit_14_one_line(tmp_path: Path) -> None:
    with serve(lambda n, m, p: (200, {}, b"[]")) as api:
        code, _, err, _ = run("diagnose", "--kubeconfig", kubeconfig(tmp_path, api.url))
    assert code == 14 and "JSON list" in one_line(err)


# --- compression: asked for as kubectl asks; an answer that does not decompress is exit 14 ---

NODES = json.dumps({"kind": "NodeList", "items": [{"metadata": {"name": "n1"}}]}).encode()


@pytest.mark.parametrize(
    ("where", "asked"), [("default", True), ("kubeconfig", False), ("flag", False)]
)
def test_gzip_is_asked_for_as_kubectl_asks_and_decoded(
    tmp_path: Path, where: str, asked: bool
) -> None:
    """kubectl's transport sends Accept-Encoding: gzip unless disable-compression (the
    cluster's kubeconfig entry) or --disable-compression; so does every request here, and the
    compressed answer reads as the plain one (test_kubectl_oracle compares the header with
    kubectl's own)."""
    served: list[fakeapi.FakeApi] = []

    def script(n: int, method: str, path: str) -> fakeapi.Answer:
        if "gzip" in served[0].headers[-1].get("Accept-Encoding", ""):
            compressed = gzip.compress(NODES)
            return 200, {"Content-Type": "application/json", "Content-Encoding": "gzip"}, compressed
        return 200, {"Content-Type": "application/json"}, NODES

    with serve(script) as api:
        served.append(api)
        config = kubeconfig(tmp_path, api.url)
        if where == "kubeconfig":
            doc = json.loads(Path(config).read_text())
            doc["clusters"][0]["cluster"]["disable-compression"] = True
            Path(config).write_text(json.dumps(doc))
        flags = Overrides(disable_compression=True) if where == "flag" else None
        got = kube.Cluster(config, timeout=5, overrides=flags).get("/api/v1/nodes")
    assert got["items"][0]["metadata"]["name"] == "n1"
    assert (api.headers[0].get("Accept-Encoding") == "gzip") is asked, api.headers[0]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not gzip at all", "does not decompress (Error -3 while decompressing data"),
        (gzip.compress(NODES)[:9] + b"\x00" * 40, "does not decompress (Error -3"),
        (gzip.compress(NODES)[:-12], "sent something that is not JSON"),  # cut short
    ],
    ids=["garbage", "corrupted", "cut-short"],
)
def test_an_answer_that_does_not_decompress_is_exit_14_one_line(
    tmp_path: Path, body: bytes, message: str
) -> None:
    """A body marked gzip that is not (garbage, cut short, corrupted): one line, exit 14."""
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    with serve(lambda n, m, p: (200, headers, body)) as api:
        code, _, err, _ = run("diagnose", "--kubeconfig", kubeconfig(tmp_path, api.url))
    assert code == 14, err
    assert message in one_line(err), err


@pytest.mark.parametrize(
    ("status", "code", "words"),
    [(503, 14, "503 Service Unavailable"), (401, 12, "401"), (500, 14, "500")],
)
def test_an_error_answer_that_does_not_decompress_keeps_its_status(
    tmp_path: Path, status: int, code: int, words: str
) -> None:
    """A 5xx or 401 whose body is marked gzip but is not: the status decides (a 503 is
    retried as any 503), not the body (found by the review of the compression change)."""
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    with serve(lambda n, m, p: (status, headers, b"not gzip")) as api:
        got, _, err, _ = run("diagnose", "--kubeconfig", kubeconfig(tmp_path, api.url))
    assert got == code, err
    assert words in one_line(err) and "decompress" not in err
    tries = Counter(api.requests)[("GET", "/version")]
    assert tries == (1 + kube.RETRIES if status == 503 else 1), api.requests


@pytest.mark.parametrize("encoding", ["gzip", "identity"])
def test_an_answer_past_the_size_limit_is_exit_14_and_not_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, encoding: str
) -> None:
    """An answer that decompresses (or simply is) past MAX_ANSWER_BYTES is malformed: one
    line, exit 14, read no further. The limit is lowered here to 4 MiB; the compressed body is
    ~10 KiB for 8 MiB of JSON."""
    monkeypatch.setattr(kube, "MAX_ANSWER_BYTES", 4 << 20)
    body = b'{"items": [' + b'{"metadata": {"name": "n"}},' * 300_000 + b"{}]}"
    headers = {"Content-Type": "application/json"}
    if encoding == "gzip":
        body = gzip.compress(body)
        headers["Content-Encoding"] = "gzip"
    with serve(lambda n, m, p: (200, headers, body)) as api:
        code, _, err, _ = run("diagnose", "--kubeconfig", kubeconfig(tmp_path, api.url))
    assert code == 14, err
    assert "answer at http://127.0.0.1" in one_line(err) and "is over 4 MiB" in one_line(err)


def test_garbage_instead_of_http_is_exit_11_one_line(tmp_path: Path) -> None:
    with silent_socket(reply=b"\x00\xffnot http at all\r\n\r\n") as address:
        config = kubeconfig(tmp_path, f"http://{address}")
        code, _, err, _ = run("diagnose", "--kubeconfig", config, "--deadline", "3")
    assert code == 11, err
    one_line(err)


# --- kubeconfigs: exit 10, one line -----------------------------------------------------


def test_malformed_kubeconfig_yaml_is_exit_10(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text("apiVersion: v1\nclusters: [\n  - name: x\n   bad: : indent\n")
    code, _, err, _ = run("diagnose", "--kubeconfig", str(config))
    assert code == 10 and "is not valid YAML (line" in one_line(err)


def test_server_url_that_is_not_a_url_is_exit_10(tmp_path: Path) -> None:
    code, _, err, _ = run("diagnose", "--kubeconfig", kubeconfig(tmp_path, "not a url at all"))
    assert code == 10 and "'not a url at all' is not an http(s) URL" in one_line(err)


def test_ca_data_that_is_not_a_certificate_is_exit_10(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path, "https://127.0.0.1:6443")
    text = (
        Path(path)
        .read_text()
        .replace(
            '"server": "https://127.0.0.1:6443"',
            '"server": "https://127.0.0.1:6443", "certificate-authority-data": "'
            + base64.b64encode(b"hello, not a certificate").decode()
            + '"',
        )
    )
    Path(path).write_text(text)
    code, _, err, _ = run("diagnose", "--kubeconfig", path)
    assert code == 10 and "certificate data is unusable" in one_line(err)


def test_failing_exec_plugin_has_no_extra_log_line(tmp_path: Path) -> None:
    """The client logs the plugin's failure through the root logger (`ERROR:root:...`);
    in the real process only our one line may reach stderr."""
    with serve(lambda n, m, p: json_answer({"message": "Unauthorized"}, 401)) as api:
        config = kubeconfig(
            tmp_path,
            api.url,
            exec={
                "apiVersion": "client.authentication.k8s.io/v1",
                "command": "false",
                "interactiveMode": "Never",
            },
        )
        proc = subprocess.run(
            [*CLI, "diagnose", "--kubeconfig", config],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            env={**os.environ, "PYTHONWARNINGS": ""},
        )
    assert proc.returncode == 12, proc.stderr
    assert "ERROR:root" not in proc.stderr
    assert one_line(proc.stderr).startswith("error: ")


# --- partial reads stay partial: optional reads failing with 5xx or garbage are gaps ----------


def _recorded_cluster(n: int, method: str, path: str):  # type: ignore[no-untyped-def]
    """Answers from a snapshot recorded on the real control plane, except that leases and
    volumeattachments fail with 503 and events come back malformed."""
    doc = json.loads((FIXTURES / "node-down-after-eviction.json").read_text())
    items = doc["items"]
    route = path.split("?", 1)[0]
    if route == "/version":
        return json_answer(VERSION)
    if "/leases/" in route or "volumeattachments" in route:
        return json_answer({"message": "etcd leader changed"}, 503)
    if route == "/api/v1/events":
        return json_answer({"items": "not a list"})
    if route == "/api/v1/nodes":
        return json_answer({"items": [i for i in items if i["kind"] == "Node"]})
    if route.endswith("/pods"):
        return json_answer({"items": [i for i in items if i["kind"] == "Pod"]})
    name = route.rsplit("/", 1)[-1]
    found = [i for i in items if i["metadata"]["name"] == name and i["kind"] != "Node"]
    return json_answer(found[0]) if found else json_answer({"message": "nope"}, 404)


def test_optional_reads_failing_with_5xx_or_garbage_become_gaps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kube, "BACKOFF_SECONDS", 0.01)  # each 503 is retried: keep it quick
    with serve(_recorded_cluster) as api:
        code, out, err, _ = run("diagnose", "--kubeconfig", kubeconfig(tmp_path, api.url))
    assert code == 3, err
    assert "db-0" in out
    warnings = err.strip().splitlines()
    assert all(line.startswith("warning: ") for line in warnings), err
    assert "warning: node leases: the API server answered 503" in err
    assert "warning: volumeattachments: the API server answered 503" in err
    assert "warning: events: the API server sent a malformed answer" in err


def test_live_objects_of_the_wrong_shape_are_exit_14(tmp_path: Path) -> None:
    """Objects read live are held to the dump schema too: a pod whose status is a string
    (exit 1 in the analysis before) is a malformed answer."""

    def script(n: int, method: str, path: str):  # type: ignore[no-untyped-def]
        answer = _recorded_cluster(n, method, path)
        if path.startswith("/api/v1/pods") and "fieldSelector=spec.nodeName" in path:
            doc = json.loads(answer[2])
            doc["items"][0]["status"] = "Running"
            return json_answer(doc)
        return answer

    with serve(script) as api:
        code, _, err, _ = run("diagnose", "--kubeconfig", kubeconfig(tmp_path, api.url))
    assert code == 14, err
    assert "the API server sent a malformed Pod " in err and "status must be an object" in err
    assert err.count("error: ") == 1 and "Traceback" not in err


@pytest.mark.parametrize("command", ["diagnose", "dump"])
@pytest.mark.parametrize(
    ("conditions", "problem"),
    [
        ([None], "status.conditions[0] must be an object, not null"),
        ("x", "status.conditions must be a list"),
    ],
)
def test_live_nodes_of_the_wrong_shape_are_exit_14(
    tmp_path: Path, command: str, conditions: object, problem: str
) -> None:
    """Nodes are held to the schema as their pages arrive: gather reads their conditions
    before the snapshot is checked (an internal error, exit 1, before; found in the last read
    of 2026-12-02). `dump` keeps them whole but checks them too."""

    def script(n: int, method: str, path: str):  # type: ignore[no-untyped-def]
        answer = _recorded_cluster(n, method, path)
        if path.startswith("/api/v1/nodes") and answer is not None:
            doc = json.loads(answer[2])
            if doc.get("items"):
                doc["items"][0]["status"]["conditions"] = conditions
                return json_answer(doc)
        return answer

    with serve(script) as api:
        code, _, err, _ = run(command, "--kubeconfig", kubeconfig(tmp_path, api.url))
    assert code == 14, err
    assert "the API server sent a malformed Node " in one_line(err) and problem in err


# --- Ctrl-C: a read-only command leaves at once, not after the requests in flight ---------


@pytest.mark.parametrize(
    ("args", "code"), [(("diagnose",), 130), (("diagnose", "--watch", "--interval", "1"), 0)]
)
def test_ctrl_c_does_not_wait_for_a_hanging_request(
    tmp_path: Path, args: tuple[str, ...], code: int
) -> None:
    """Python's exit would join the request threads: a Ctrl-C held up to --request-timeout
    (60 s here). Exit 130 with one line; a watch ends as it does on any Ctrl-C."""
    with serve(fakeapi.hangs_on_pods) as api:
        config = kubeconfig(tmp_path, api.url)
        argv = [*CLI, *args, "--kubeconfig", config, "--request-timeout", "60", "--deadline", "0"]
        returncode, err, took = fakeapi.ctrl_c_while_reading_pods(argv, api)
    assert returncode == code, err
    assert took < SLACK, took  # the request hangs for 60 s; nothing waited for it
    assert "Traceback" not in err
    if code == 130:
        assert one_line(err) == "interrupted"


@pytest.mark.parametrize(
    ("metadata", "missing"),
    [
        (None, "name"),
        ({"uid": "u", "resourceVersion": "1"}, "name"),
        ({"name": "n", "resourceVersion": "1"}, "uid"),
        ({"name": "n", "uid": "u", "resourceVersion": ""}, "resourceVersion"),
        ({"name": "n", "uid": 7, "resourceVersion": "1"}, "uid"),
    ],
)
def test_an_object_to_act_on_without_its_identity_is_exit_14(
    tmp_path: Path, metadata: object, missing: str
) -> None:
    """remediate conditions its patches and deletes on the name, uid and resourceVersion it
    read: an answer lacking one is refused at the boundary, not sent on as an empty value."""
    doc = {"kind": "Node"} if metadata is None else {"kind": "Node", "metadata": metadata}
    body = json.dumps(doc).encode()
    with serve(lambda n, m, p: (200, {"Content-Type": "application/json"}, body)) as api:
        cluster = cluster_for(tmp_path, api.url)
        with pytest.raises(MalformedResponse) as info:
            cluster.get_object("/api/v1/nodes/n")
    assert f"no metadata.{missing}" in info.value.line() and info.value.exit_code == 14
