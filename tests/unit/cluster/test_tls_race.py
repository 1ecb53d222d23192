"""The intermittent `[SSL: TLSV1_ALERT_DECODE_ERROR]` against the API server (issue 18).

Root cause: the pool's connections share one SSLContext, and urllib3 calls
`set_alpn_protocols` on it every time it opens a connection. OpenSSL frees and reallocates the
context's ALPN list there, while SSL_new on another thread (run without the GIL) copies it: a
ClientHello then carries a garbled ALPN extension, which the server rejects with a decode_error
alert. diagnose opens up to 8 connections at once (per-node requests), so under CPU load it
happened now and then.

The race is reproduced here directly at the TLS layer, without a network: threads build
ClientHellos from the shared context (what every new connection does) while others re-set its
ALPN list as urllib3 does; each ClientHello's ALPN extension is parsed and checked. Run in a
subprocess: a use-after-free may also crash the interpreter, which counts as reproduced.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from kubectl_nodefail.cluster import kubeconfig
from tests.support.fakeapi import json_answer, self_signed, serve

RACE = r"""
import json, os, ssl, sys, threading, time
from urllib3.util.ssl_ import ALPN_PROTOCOLS

# The race needs two of its threads really running at once. Under a loaded machine (two suites
# on two cores) it rarely got two cores at the same moment and the reproduction saw nothing
# (run y1 of 2026-12-02: 97,906 intact ClientHellos in 150 s). Where allowed (root), it asks
# the scheduler for a larger share; elsewhere it runs as it is.
try:
    os.nice(-10)
except OSError:
    pass

which, seconds = sys.argv[1], float(sys.argv[2])
if which == "plain":  # what kubeconfig.ssl_context built before the fix
    ctx = ssl.create_default_context()
    ctx.set_alpn_protocols(ALPN_PROTOCOLS)
else:
    from kubectl_nodefail.cluster.kubeconfig import ssl_context
    ctx = ssl_context("race", None, None, None, verify=False)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
EXPECTED = b"\x00\x09\x08http/1.1"
stop = threading.Event()
counts = {"hellos": 0, "garbled": 0}

def alpn(hello):
    i = 5 + 4 + 2 + 32
    i += 1 + hello[i]
    i += 2 + int.from_bytes(hello[i:i + 2], "big")
    i += 1 + hello[i]
    end = i + 2 + int.from_bytes(hello[i:i + 2], "big")
    i += 2
    while i < end:
        kind = int.from_bytes(hello[i:i + 2], "big")
        size = int.from_bytes(hello[i + 2:i + 4], "big")
        if kind == 16:
            return hello[i + 4:i + 4 + size]
        i += 4 + size
    return None

def connect():
    while not stop.is_set():
        out = ssl.MemoryBIO()
        tls = ctx.wrap_bio(ssl.MemoryBIO(), out, server_hostname="apiserver")
        try:
            tls.do_handshake()
        except ssl.SSLWantReadError:
            pass
        counts["hellos"] += 1
        if alpn(out.read()) != EXPECTED:
            counts["garbled"] += 1
            if which == "plain":
                stop.set()

def reconfigure():  # urllib3's ssl_wrap_socket, on every new connection
    while not stop.is_set():
        ctx.set_alpn_protocols(ALPN_PROTOCOLS)

sys.setswitchinterval(1e-6)
threads = [threading.Thread(target=connect) for _ in range(4)]
threads += [threading.Thread(target=reconfigure) for _ in range(2)]
for t in threads:
    t.start()
stop.wait(seconds)
stop.set()
for t in threads:
    t.join()
print(json.dumps(counts))
"""


def race(which: str, seconds: float) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", RACE, which, str(seconds)],
        capture_output=True,
        text=True,
        timeout=seconds + 60,
        check=False,
    )
    if proc.returncode != 0:  # a crash in OpenSSL's copy of freed memory: the race, too
        return {"hellos": 0, "garbled": 1, "crashed": proc.returncode, "stderr": proc.stderr}
    return dict(json.loads(proc.stdout))


def test_the_race_garbles_client_hellos_with_a_plain_shared_context() -> None:
    """The reproduction: with the context as it was built before (re-set by urllib3 on each
    connection), ClientHellos come out garbled (measured: 15 in 63,379 in 15 s on this
    project's 2-core machine; the first one usually within a second). The run stops at the
    first garbled one; its budget is long because the race needs two threads really running at
    once: with two suites side by side on two cores, 40 s saw 20,594 intact ones (2026-12-02)."""
    seen = race("plain", 150)
    assert seen["garbled"] > 0, seen


def test_the_shared_context_keeps_every_client_hello_intact() -> None:
    seen = race("ours", 8)
    assert seen["garbled"] == 0, seen
    assert seen["hellos"] > 1000, seen  # the race was really run


def test_urllib3_does_not_reconfigure_the_context_per_connection(
    tmp_path: Any, monkeypatch: Any
) -> None:
    """Deterministic: once built, opening connections through urllib3 (several, as diagnose
    does) never reaches OpenSSL's ALPN setter again."""
    import ssl

    import urllib3

    calls: list[Any] = []
    real = ssl.SSLContext.set_alpn_protocols

    def counted(self: ssl.SSLContext, protocols: Any) -> None:
        calls.append(list(protocols))
        real(self, protocols)

    cert = self_signed(tmp_path)
    ca = Path(cert[0]).read_bytes()
    ctx = kubeconfig.ssl_context("test", ca, None, None)
    monkeypatch.setattr(ssl.SSLContext, "set_alpn_protocols", counted)
    with serve(lambda n, m, p: json_answer({}), tls=cert) as api:
        pool = urllib3.PoolManager(ssl_context=ctx, cert_reqs="CERT_REQUIRED")
        for _ in range(5):
            resp = pool.request("GET", api.url + "/version", headers={"Connection": "close"})
            assert resp.status == 200
        pool.clear()
    assert calls == []
    assert len(api.requests) == 5


def test_a_garbled_alpn_is_answered_with_a_decode_error_alert(tmp_path: Path) -> None:
    """The last link: a ClientHello whose ALPN extension was garbled as the race garbles it
    (bytes seen in the reproduction) gets the fatal alert decode_error (50) from a TLS server,
    which the client reports as `[SSL: TLSV1_ALERT_DECODE_ERROR] tlsv1 alert decode error`.
    (Go's crypto/tls, the API server's, answers a ClientHello it cannot parse the same way.)"""
    import socket
    import ssl

    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["http/1.1"])
    out = ssl.MemoryBIO()
    tls = ctx.wrap_bio(ssl.MemoryBIO(), out, server_hostname="apiserver")
    with contextlib.suppress(ssl.SSLWantReadError):
        tls.do_handshake()
    hello = bytearray(out.read())
    intact = b"\x00\x09\x08http/1.1"
    at = hello.find(intact)
    assert at > 0
    hello[at : at + len(intact)] = b"\x00\tU)-^\x05\x00\x00\x00\x14"  # seen garbled
    with serve(lambda n, m, p: json_answer({}), tls=self_signed(tmp_path)) as api:
        port = int(api.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(bytes(hello))
            answer = sock.recv(64)
    assert answer[0] == 21 and answer[5:7] == b"\x02\x32", answer.hex()  # fatal decode_error
