"""A failed connection is said in kubectl's words, one line, without library internals, and
retried only when client-go would retry it (a reset or EOF, not a refusal)."""

from __future__ import annotations

import http.client
import socket
import ssl
import time
from unittest import mock

import pytest
import urllib3
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_nodefail.cli.main import main
from kubectl_nodefail.cluster import kube
from kubectl_nodefail.cluster.netfail import connection_failure
from kubectl_nodefail.common.errors import UnreachableError
from tests.support.fakeapi import kubeconfig, silent_socket

INTERNALS = ("Connection(", "urllib3", "Errno", "_ssl.c", "[SSL", "object at 0x", "Error(")


def refused() -> BaseException:
    return ConnectionRefusedError(111, "Connection refused")


def unknown_name() -> BaseException:
    return socket.gaierror(socket.EAI_NONAME, "Name or service not known")


def untrusted() -> BaseException:
    error = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] (_ssl.c:1006)")
    error.verify_message = "self-signed certificate in certificate chain"
    return error


def reset() -> BaseException:
    return ConnectionResetError(104, "Connection reset by peer")


def eof() -> BaseException:
    return http.client.RemoteDisconnected("Remote end closed connection without response")


def unreachable_net() -> BaseException:
    return OSError(101, "Network is unreachable")


def timed_out() -> BaseException:
    return socket.timeout("timed out")


ROOTS = {
    "refused": refused,
    "dns": unknown_name,
    "tls": untrusted,
    "reset": reset,
    "eof": eof,
    "network": unreachable_net,
    "timeout": timed_out,
}


def wrapped(root: BaseException, how: str) -> BaseException:
    """The root cause as urllib3 hands it over: wrapped, chained, or bare."""
    if how == "new-connection":
        outer: BaseException = urllib3.exceptions.NewConnectionError(
            None, f"HTTPSConnection(host='x', port=1): Failed: {root}"
        )
        outer.__cause__ = root
        return outer
    if how == "protocol":
        return urllib3.exceptions.ProtocolError("Connection aborted.", root)
    if how == "ssl":
        outer = urllib3.exceptions.SSLError(root)
        outer.__context__ = root
        return outer
    return root


servers = st.sampled_from(
    [
        "https://127.0.0.1:1",
        "https://api.example.com",
        "http://10.0.0.1:8080",
        "https://[::1]:6443",
        "https://kube.internal:6443/prefix",
    ]
)


@given(
    root=st.sampled_from(sorted(ROOTS)),
    how=st.sampled_from(["new-connection", "protocol", "ssl", "bare"]),
    server=servers,
)
def test_every_failure_is_one_kubectl_line_without_internals(
    root: str, how: str, server: str
) -> None:
    failure = connection_failure(wrapped(ROOTS[root](), how), server)
    line = UnreachableError(failure.message, hint=f"context 'c'; {failure.hint}").line()
    assert "\n" not in line
    assert not any(bit in line for bit in INTERNALS), line
    assert line.startswith(("The connection to the server ", "Unable to connect to the server: "))
    # client-go retries a GET on a reset connection or an EOF, nothing else
    assert failure.retry == (root in ("reset", "eof")), (root, failure)
    if root == "refused":
        assert failure.message.endswith("was refused - did you specify the right host or port?")


def test_the_words_of_each_kind() -> None:
    say = {
        k: connection_failure(v(), "https://api.example.com:6443").message for k, v in ROOTS.items()
    }
    assert say["refused"] == (
        "The connection to the server api.example.com:6443 was refused - did you specify the "
        "right host or port?"
    )
    assert (
        say["dns"]
        == "Unable to connect to the server: dial tcp: lookup api.example.com: no such host"
    )
    assert (
        say["timeout"]
        == "Unable to connect to the server: dial tcp api.example.com:6443: i/o timeout"
    )
    assert say["tls"] == (
        "Unable to connect to the server: tls: failed to verify certificate: self-signed "
        "certificate in certificate chain"
    )
    assert say["reset"] == "Unable to connect to the server: connection reset by peer"
    assert say["network"] == (
        "Unable to connect to the server: dial tcp api.example.com:6443: connect: network is "
        "unreachable"
    )
    # the port Go's dialer shows when the URL has none
    assert (
        "dial tcp api.example.com:443:"
        in connection_failure(timed_out(), "https://api.example.com").message
    )


def test_a_refused_proxy_is_named_not_the_server_behind_it() -> None:
    proxy_error = urllib3.exceptions.ProxyError("Unable to connect to proxy", refused())
    failure = connection_failure(proxy_error, "https://api.example.com", "http://proxy.corp:3128")
    assert failure.message.startswith("The connection to the proxy proxy.corp:3128 was refused")


@settings(max_examples=12, deadline=None)
@given(
    scheme=st.sampled_from(["https", "http"]),
    where=st.sampled_from(["closed-port", "unknown-name"]),
    label=st.from_regex(r"[a-z][a-z0-9]{0,10}", fullmatch=True),
    command=st.sampled_from([["diagnose"], ["dump"], ["remediate", "worker-1"]]),
)
def test_an_unreachable_server_is_one_line_exit_11_at_once(
    tmp_path_factory: pytest.TempPathFactory,
    scheme: str,
    where: str,
    label: str,
    command: list[str],
) -> None:
    """The whole command, not just the wording: one line, exit 11, no traceback, and no wait
    (no retry of a refused connection or an unknown name)."""
    with silent_socket() as address:
        pass  # closed again: connections to it are refused
    host = address if where == "closed-port" else f"{label}.nodefail.invalid:6443"
    config = kubeconfig(tmp_path_factory.mktemp("kc"), f"{scheme}://{host}")
    start = time.monotonic()
    with mock.patch.object(kube, "BACKOFF_SECONDS", 30.0):  # a retry would wait 30 s
        result = CliRunner().invoke(main, [*command, "--kubeconfig", config])
    took = time.monotonic() - start
    assert result.exit_code == 11, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.stderr
    assert lines[0].startswith(
        ("error: The connection to the server ", "error: Unable to connect to the server: ")
    )
    assert not any(bit in lines[0] for bit in INTERNALS), lines[0]
    assert took < 25, took  # no retry: a retry would have waited 30 s


def test_user_info_in_a_server_url_is_never_printed() -> None:
    failure = connection_failure(refused(), "https://admin:s3cret@api.example.com:6443")
    assert "s3cret" not in failure.message and "api.example.com:6443" in failure.message
