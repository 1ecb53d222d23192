"""A connection to the API server that failed: kubectl's words for it, and whether to retry.

kubectl (k8s.io/kubectl/pkg/cmd/util, StandardErrorMessage) says a refused connection as
"The connection to the server HOST was refused - did you specify the right host or port?"
and any other failure to connect as "Unable to connect to the server: ERR", ERR being Go's
own text ("dial tcp 10.0.0.1:6443: i/o timeout", "dial tcp: lookup NAME: no such host").
Python's exceptions carry library internals (urllib3 class names, `HTTPSConnection(host=...)`,
`_ssl.c:1006`); this module finds the operating system's cause under them and words it as Go
would. client-go retries a GET only when the connection was reset or closed mid-way
(IsConnectionReset, IsProbableEOF): a refused connection, an unknown name, a TLS failure or a
connect timeout fail at once, as kubectl does (docs/errors.md has the timings).
"""

from __future__ import annotations

import errno
import socket
import ssl
from typing import NamedTuple
from urllib.parse import urlsplit

DEFAULT_PORTS = {"https": 443, "http": 80}
SERVER_HINT = "check the network, VPN, or the cluster itself"


class Failure(NamedTuple):
    message: str  # kubectl's sentence
    hint: str  # what to check, after the context
    kind: str  # refused, dns, tls, timeout, reset, network
    retry: bool  # a GET may be sent again (client-go's rule)


def causes(exc: BaseException) -> list[BaseException]:
    """The exception and everything it wraps (urllib3's reason, args, __cause__, __context__),
    outermost first, each once."""
    seen: list[BaseException] = []
    todo = [exc]
    while todo and len(seen) < 20:
        current = todo.pop(0)
        if any(current is s for s in seen):
            continue
        seen.append(current)
        nested = [getattr(current, "reason", None), current.__cause__, current.__context__]
        nested += [a for a in getattr(current, "args", ()) if isinstance(a, BaseException)]
        todo += [n for n in nested if isinstance(n, BaseException)]
    return seen


def _hostport(server: str) -> tuple[str, str]:
    """(host, host:port) of a server URL; the port filled in as Go's dialer shows it."""
    parts = urlsplit(server)
    host = parts.hostname or parts.netloc or server
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None:
        port = DEFAULT_PORTS.get(parts.scheme, 443)
    shown = f"[{host}]" if ":" in host else host
    return host, f"{shown}:{port}"


def _strerror(error: OSError) -> str:
    """An OS error as Go prints one: lower case, no errno (`connection reset by peer`)."""
    text = error.strerror or (errno.errorcode.get(error.errno or 0, "") if error.errno else "")
    return (text or "connection failed").strip().lower()


def connection_failure(exc: BaseException, server: str, proxy: str | None = None) -> Failure:
    """How to say that connecting to `server` (its URL) failed with `exc`, and whether a GET
    may try again. `proxy`: the proxy the request went through (its URL, no password)."""
    chain = causes(exc)
    host, hostport = _hostport(server)
    through = ""
    if proxy is not None and any(type(c).__name__ == "ProxyError" for c in chain):
        # the failure is the proxy's: name it, not the server behind it
        host, hostport = _hostport(proxy)
        through = f" (the proxy {proxy}, for the server {server})"
    netloc = urlsplit(proxy if proxy is not None and through else server).netloc
    netloc = netloc.rpartition("@")[2] or hostport  # never a password in a message
    unable = "Unable to connect to the server" + through + ": "

    def first(*types: type) -> BaseException | None:
        return next((c for c in chain if isinstance(c, types)), None)

    def named(*names: str) -> BaseException | None:
        return next((c for c in chain if type(c).__name__ in names), None)

    if first(ConnectionRefusedError):
        return Failure(
            f"The connection to the {'proxy' if through else 'server'} {netloc} was refused "
            "- did you specify the right host or port?",
            "is the API server running? check the server URL in the kubeconfig",
            "refused",
            False,
        )
    lookup = first(socket.gaierror)
    if isinstance(lookup, socket.gaierror):
        said = "no such host" if lookup.errno == socket.EAI_NONAME else _strerror(lookup)
        return Failure(
            f"{unable}dial tcp: lookup {host}: {said}",
            "check the server name in the kubeconfig, and DNS or the VPN",
            "dns",
            False,
        )
    tls_hint = "check the server URL and its CA data"
    verify = first(ssl.SSLCertVerificationError)
    if isinstance(verify, ssl.SSLCertVerificationError):
        said = str(verify.verify_message or "certificate not trusted").strip()
        return Failure(f"{unable}tls: failed to verify certificate: {said}", tls_hint, "tls", False)
    eof = Failure(f"{unable}EOF (the server closed the connection)", SERVER_HINT, "reset", True)
    if named("RemoteDisconnected", "IncompleteRead"):  # RemoteDisconnected is a reset too
        return eof
    reset = first(ConnectionResetError, ConnectionAbortedError, BrokenPipeError)
    if isinstance(reset, OSError):
        return Failure(f"{unable}{_strerror(reset)}", SERVER_HINT, "reset", True)
    tls = first(ssl.SSLError)
    if isinstance(tls, ssl.SSLError):
        said = str(tls.reason or "handshake failed").replace("_", " ").lower()
        return Failure(f"{unable}tls: {said}", tls_hint, "tls", False)
    if first(socket.timeout, TimeoutError) or named("ConnectTimeoutError"):
        return Failure(f"{unable}dial tcp {hostport}: i/o timeout", SERVER_HINT, "timeout", False)
    other = next((c for c in chain if isinstance(c, OSError) and (c.strerror or c.errno)), None)
    if isinstance(other, OSError):
        return Failure(
            f"{unable}dial tcp {hostport}: connect: {_strerror(other)}",
            SERVER_HINT,
            "network",
            False,
        )
    if named("ProtocolError"):  # dropped mid-way, nothing more said
        return eof
    return Failure(f"{unable}the connection failed", SERVER_HINT, "network", False)
