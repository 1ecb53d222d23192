"""Tiny local HTTP(S) servers that misbehave as a real API server cannot be made to: hang,
answer garbage, throttle. They decide nothing about Kubernetes; they only exercise the
client side of kube.py (timeouts, retries, error mapping). Loopback only, stopped by the test.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

# (status, headers, body) for the n-th request (0-based); None = never answer
Answer = tuple[int, dict[str, str], bytes] | None
Script = Callable[[int, str, str], Answer]


class FakeApi:
    """What one fake server saw: the requests, as (method, path), and their headers."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.requests: list[tuple[str, str]] = []
        self.headers: list[dict[str, str]] = []
        self.raw_headers: list[list[tuple[str, str]]] = []  # in order, repeated names kept


def json_answer(doc: Any, status: int = 200, **headers: str) -> Answer:
    return status, {"Content-Type": "application/json", **headers}, json.dumps(doc).encode()


def answering(answer: Callable[[str, dict[str, list[str]]], Any]) -> Script:
    """A script answering each request with the JSON `answer(path, query)` returns (the
    query parsed, each name to its values)."""

    def script(_n: int, _method: str, path: str) -> Answer:
        url = urlparse(path)
        return json_answer(answer(url.path, parse_qs(url.query)))

    return script


def table(columns: list[str], rows: list[tuple[list[Any], dict[str, Any] | None]]) -> Any:
    """A server-side Table of these columns, each row its cells and (unless None) its object's
    metadata, as includeObject=Metadata gives it."""
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
        "columnDefinitions": [{"name": c} for c in columns],
        "rows": [
            {
                "cells": c,
                **({"object": {"kind": "PartialObjectMetadata", "metadata": m}} if m else {}),
            }
            for c, m in rows
        ],
    }


def self_signed(tmp: Path) -> tuple[str, str]:
    """A throwaway certificate and key for 127.0.0.1, made by the openssl CLI."""
    openssl = shutil.which("openssl")
    assert openssl, "the TLS tests need the openssl command"
    cert, key = tmp / "server.crt", tmp / "server.key"
    subprocess.run(
        [
            *(openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"),
            *("-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    return str(cert), str(key)


@contextmanager
def serve(
    script: Script, tls: tuple[str, str] | None = None, client_ca: str | None = None
) -> Iterator[FakeApi]:
    """An HTTP(S) server on 127.0.0.1 answering each request as `script` says; with
    `client_ca`, the TLS handshake requires a client certificate signed by it."""
    stop = threading.Event()
    api = FakeApi("")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            return None

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            api.requests.append((self.command, self.path))
            api.headers.append(dict(self.headers))
            api.raw_headers.append(list(self.headers.items()))
            answer = script(len(api.requests) - 1, self.command, self.path)
            if answer is None:
                stop.wait(60)  # never answer (until the test ends)
                return
            status, headers, body = answer
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_DELETE = do_PATCH = _answer

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    # a client that hangs up mid-answer (a limit reached, a deadline) is what some tests want:
    # not a traceback on the test's stderr
    server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
    scheme = "http"
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(*tls)
        if client_ca:
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(cafile=client_ca)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    # A connection reset between the server's select and its accept left accept() blocking
    # for good, and shutdown() waiting on it (a unit run hung in the kubeconfig tests while an
    # audit loaded the machine): with a timeout, accept gives up and the loop sees the stop.
    server.socket.settimeout(1.0)
    api.url = f"{scheme}://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


@contextmanager
def silent_socket(reply: bytes | None = None) -> Iterator[str]:
    """A TCP port that accepts and then says nothing (or `reply`, then nothing): a TLS
    handshake or an HTTP request to it never completes. Yields 'host:port'."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            held.append(conn)
            if reply is not None:
                conn.sendall(reply)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(2)
        for conn in held:
            conn.close()
        listener.close()


def kubeconfig(tmp: Path, server: str, ca_file: str | None = None, **user: Any) -> str:
    """A kubeconfig file (JSON is YAML) for one cluster, one user, one context."""
    cluster: dict[str, Any] = {"server": server}
    if ca_file:
        cluster["certificate-authority"] = ca_file
    path = tmp / "kubeconfig"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "fake",
                "clusters": [{"name": "fake", "cluster": cluster}],
                "users": [{"name": "u", "user": user or {"token": "t"}}],
                "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}],
            }
        )
    )
    return str(path)


VERSION = {"major": "1", "minor": "36", "gitVersion": "v1.36.1"}


def hangs_on_pods(n: int, method: str, path: str) -> Answer:
    """Answers the version and an empty node list; never answers a pods request."""
    if path.startswith("/version"):
        return json_answer(VERSION)
    if path.startswith("/api/v1/nodes"):
        return json_answer({"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": []})
    return None


def ctrl_c_default() -> None:
    """In the child: SIGINT back to its default, so Python turns it into KeyboardInterrupt. A
    shell without job control starts background commands with SIGINT ignored, and Python keeps
    an ignored SIGINT ignored (as it should: the user's Ctrl-C is not for background jobs), so a
    suite run from such a shell would otherwise never see its Ctrl-C arrive."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def ctrl_c_while_reading_pods(
    argv: list[str], api: FakeApi, **popen: Any
) -> tuple[int, str, float]:
    """Runs `argv`, sends it SIGINT once it has asked `api` for pods (which never answers them)
    and for the nodes (answered at once, then given a second to be read: the pods scan starts
    beside the node list, and a signal before the nodes' answer was read left them out of -v's
    budget in a loaded CI run), and returns (exit code, stderr, seconds from the signal to the
    exit)."""
    with subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_default,
        **popen,
    ) as proc:
        try:
            deadline = time.monotonic() + 30
            while not (
                any("/pods" in path for _, path in api.requests)
                and any(path.startswith("/api/v1/nodes") for _, path in api.requests)
            ):
                assert time.monotonic() < deadline and proc.poll() is None, "no pods request"
                time.sleep(0.05)
            time.sleep(1.0)
            start = time.monotonic()
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=30)
            return proc.returncode, err, time.monotonic() - start
        finally:
            proc.kill()
