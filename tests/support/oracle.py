"""A recording HTTPS server and a recording CONNECT proxy, for comparing what kubectl and the
plugin send for the same kubeconfig and flags (tests/unit/cluster/test_kubectl_oracle.py). They
decide nothing about Kubernetes: they answer every GET with an empty list and write down, per
request, the TLS server name asked for (SNI), the client certificate presented, and the headers; the
proxy writes down each CONNECT target. Loopback only."""

from __future__ import annotations

import json
import select
import shutil
import socket
import socketserver
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

SERVER_NAME = "apiserver.test"  # in the server certificate; resolvable only through the proxy


@dataclass
class Pki:
    """A CA, a server certificate it signed (127.0.0.1 and SERVER_NAME), and a client
    certificate it signed (CN nodefail-oracle-client), all PEM files."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def make_pki(folder: Path) -> Pki:
    openssl = shutil.which("openssl")
    assert openssl, "the oracle tests need the openssl command"

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], check=True, capture_output=True, cwd=folder)

    run(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=oracle-ca",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
    )
    for name, subject, ext in (
        ("server", "/CN=oracle-server", f"subjectAltName=IP:127.0.0.1,DNS:{SERVER_NAME}"),
        ("client", "/CN=nodefail-oracle-client", "extendedKeyUsage=clientAuth"),
    ):
        (folder / f"{name}.ext").write_text(ext + "\n")
        run(
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            subject,
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
        )
        run(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            f"{name}.ext",
            "-out",
            f"{name}.crt",
        )
    return Pki(
        folder / "ca.crt",
        folder / "server.crt",
        folder / "server.key",
        folder / "client.crt",
        folder / "client.key",
    )


@dataclass
class Seen:
    """One request as the server saw it."""

    sni: str | None
    client_cn: str | None
    path: str
    headers: list[tuple[str, str]]  # lower-case names, in order, repeats kept


@dataclass
class Recorder:
    url: str
    port: int
    seen: list[Seen] = field(default_factory=list)

    def clear(self) -> None:
        self.seen.clear()


ANSWERS: dict[str, Any] = {
    "/api": {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []},
    "/version": {"major": "1", "minor": "36", "gitVersion": "v1.36.1"},
}


@contextmanager
def recording_server(pki: Pki | None) -> Iterator[Recorder]:
    """HTTPS on 127.0.0.1 that asks for (but does not require) a client certificate; plain
    HTTP without `pki`."""
    recorder = Recorder("", 0)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            return None

        def do_GET(self) -> None:
            conn = self.connection
            peer = conn.getpeercert() if isinstance(conn, ssl.SSLSocket) else None
            cn = None
            for rdn in (peer or {}).get("subject", ()):
                for key, value in rdn:
                    if key == "commonName":
                        cn = value
            recorder.seen.append(
                Seen(
                    getattr(conn, "oracle_sni", None),
                    cn,
                    self.path,
                    [(k.lower(), v) for k, v in self.headers.items()],
                )
            )
            path = self.path.split("?")[0]
            doc = ANSWERS.get(path) or {
                "kind": "List",
                "apiVersion": "v1",
                "metadata": {},
                "items": [],
            }
            body = json.dumps(doc).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if pki is not None:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(pki.server_cert), str(pki.server_key))
        ctx.verify_mode = ssl.CERT_OPTIONAL
        ctx.load_verify_locations(cafile=str(pki.ca))

        def remember_sni(sock: Any, name: str | None, _ctx: Any) -> None:
            sock.oracle_sni = name

        ctx.sni_callback = remember_sni
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    recorder.port = server.server_address[1]
    recorder.url = f"{'https' if pki else 'http'}://127.0.0.1:{recorder.port}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield recorder
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Proxy:
    url: str
    targets: list[str] = field(default_factory=list)  # CONNECT host:port, in order


@contextmanager
def connect_proxy(pki: Pki | None = None) -> Iterator[Proxy]:
    """An HTTP CONNECT proxy on 127.0.0.1: any target host is reached at 127.0.0.1 (so
    SERVER_NAME works through it), every target recorded. With `pki`, an https proxy (the
    server certificate: the client must trust the test CA to use it)."""
    proxy = Proxy("")

    class Tunnel(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            client: socket.socket = self.request
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = client.recv(4096)
                if not chunk:
                    return
                data += chunk
            head, _, rest = data.partition(b"\r\n\r\n")
            first, _, headers = head.partition(b"\r\n")
            method, target, version = first.decode().split(" ", 2)
            if method != "CONNECT":  # plain http through the proxy: absolute-form request
                url = urlsplit(target)
                proxy.targets.append(f"{url.scheme} {url.netloc}")
                path = (url.path or "/") + (f"?{url.query}" if url.query else "")
                forward = f"{method} {path} {version}\r\n".encode() + headers + b"\r\n\r\n"
                try:
                    upstream = socket.create_connection(("127.0.0.1", url.port or 80), timeout=5)
                except OSError:
                    client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                    return
                upstream.sendall(forward + rest)
                _pipe(client, upstream)
                return
            proxy.targets.append(target)
            port = int(target.rsplit(":", 1)[1])
            try:
                upstream = socket.create_connection(("127.0.0.1", port), timeout=5)
            except OSError:
                client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                return
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            if rest:
                upstream.sendall(rest)
            _pipe(client, upstream)

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True

        def get_request(self) -> tuple[socket.socket, Any]:
            sock, addr = super().get_request()
            if tls is None:
                return sock, addr
            sock.settimeout(10)
            return tls.wrap_socket(sock, server_side=True), addr

    tls = None
    if pki is not None:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(str(pki.server_cert), str(pki.server_key))
    server = Server(("127.0.0.1", 0), Tunnel)
    scheme = "https" if pki is not None else "http"
    proxy.url = f"{scheme}://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        server.shutdown()
        server.server_close()


def _pipe(a: socket.socket, b: socket.socket) -> None:
    try:
        while True:
            ready, _, _ = select.select([a, b], [], [], 10)
            if not ready:
                return
            for sock in ready:
                data = sock.recv(65536)
                if not data:
                    return
                (b if sock is a else a).sendall(data)
    except OSError:
        return
    finally:
        b.close()


def dead_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
