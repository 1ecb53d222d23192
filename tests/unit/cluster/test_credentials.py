"""Connecting as kubectl does (issue 18): impersonation, credential plugins that fail loudly,
kubectl's connection flags, proxies, an empty kubeconfig. Local TLS servers record what
arrives; what kubectl itself sends for the same kubeconfig was checked with kubectl 1.32 against
such a server (see docs/connecting.md). The real control plane proves the RBAC side
(tests/e2e/test_kubeconfig_live.py)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_nodefail.cluster import proxy
from tests.support.fakeapi import json_answer, self_signed, serve, silent_socket

CLI = (sys.executable, "-m", "kubectl_nodefail")
VERSION = {"major": "1", "minor": "36", "gitVersion": "v1.36.1"}
NODES = {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": []}


def _answer(n: int, method: str, path: str) -> Any:
    if path.startswith("/version"):
        return json_answer(VERSION)
    if path.startswith("/api/v1/nodes"):
        return json_answer(NODES)
    return json_answer({"kind": "List", "apiVersion": "v1", "metadata": {}, "items": []})


@contextmanager
def tls_server(tmp_path: Path) -> Iterator[tuple[Any, dict[str, Any]]]:
    folder = tmp_path / "server"
    folder.mkdir(exist_ok=True)
    cert = self_signed(folder)
    ca = base64.b64encode(Path(cert[0]).read_bytes()).decode()
    with serve(_answer, tls=cert) as api:
        yield api, {"server": api.url, "certificate-authority-data": ca}


def write(tmp_path: Path, cluster: dict[str, Any], user: dict[str, Any]) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": cluster}],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    return str(path)


def plugin_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **(env or {})},
    )


def headers_of(api: Any) -> list[list[tuple[str, str]]]:
    """Every request's headers as (lower-case name, value) pairs, repeats kept."""
    return [[(k.lower(), v) for k, v in h] for h in api.raw_headers]


# --- impersonation ---------------------------------------------------------------------------


def test_impersonation_from_the_kubeconfig_reaches_every_request(tmp_path: Path) -> None:
    user = {
        "token": "t",
        "as": "alice",
        "as-uid": "42",
        "as-groups": ["g1", "g2"],
        "as-user-extra": {"scopes": ["a", "b"], "we/ird key": ["x"]},
    }
    with tls_server(tmp_path) as (api, cluster):
        proc = plugin_cli("diagnose", "--kubeconfig", write(tmp_path, cluster, user))
    assert proc.returncode == 0, proc.stderr
    assert len(api.raw_headers) >= 3
    for sent in headers_of(api):
        assert ("impersonate-user", "alice") in sent
        assert ("impersonate-uid", "42") in sent
        assert [v for k, v in sent if k == "impersonate-group"] == ["g1", "g2"]
        assert [v for k, v in sent if k == "impersonate-extra-scopes"] == ["a", "b"]
        assert ("impersonate-extra-we%2fird%20key", "x") in sent
        assert ("authorization", "Bearer t") in sent


def test_as_flags_win_over_the_kubeconfig(tmp_path: Path) -> None:
    """kubectl's precedence (checked with kubectl 1.32): --as replaces `as`, --as-group
    replaces `as-groups`, `as-user-extra` stays."""
    user = {"token": "t", "as": "alice", "as-groups": ["g1"], "as-user-extra": {"k": ["v"]}}
    with tls_server(tmp_path) as (api, cluster):
        config = write(tmp_path, cluster, user)
        proc = plugin_cli(
            "diagnose", "--kubeconfig", config, "--as", "bob", "--as-group", "x", "--as-group", "y"
        )
    assert proc.returncode == 0, proc.stderr
    for sent in headers_of(api):
        assert [v for k, v in sent if k == "impersonate-user"] == ["bob"]
        assert [v for k, v in sent if k == "impersonate-group"] == ["x", "y"]
        assert ("impersonate-extra-k", "v") in sent


@pytest.mark.parametrize("flag", [["--as-group", "g"], ["--as-uid", "1"]])
def test_groups_or_uid_without_a_user_are_refused_before_any_request(
    tmp_path: Path, flag: list[str]
) -> None:
    with tls_server(tmp_path) as (api, cluster):
        proc = plugin_cli("diagnose", "--kubeconfig", write(tmp_path, cluster, {}), *flag)
        assert api.requests == []
    assert proc.returncode == 10 and proc.stderr.count("\n") == 1, proc.stderr
    assert "without impersonating a user" in proc.stderr


# --- credential plugins ----------------------------------------------------------------------


def exec_user(script: str, **extra: Any) -> dict[str, Any]:
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": "sh",
            "args": ["-c", script],
            "interactiveMode": "Never",
            **extra,
        }
    }


@pytest.mark.parametrize(
    ("user", "expected"),
    [
        (exec_user("echo 'token expired, run: login' >&2; exit 1"), "token expired, run: login"),
        (exec_user("echo not json"), "not an ExecCredential (JSON): not json"),
        (
            {
                "exec": {
                    "apiVersion": "client.authentication.k8s.io/v1beta1",
                    "command": "no-such-login-plugin",
                    "installHint": "install it with: brew install login",
                }
            },
            "is not installed: no-such-login-plugin is not on PATH (install it with: brew",
        ),
        (exec_user('echo \'{"kind": "ExecCredential"}\''), "apiVersion None"),
        (
            exec_user(
                'echo \'{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",'
                '"status":{}}\''
            ),
            "neither a token nor a client certificate",
        ),
    ],
)
def test_a_failing_plugin_stops_before_any_request(
    tmp_path: Path, user: dict[str, Any], expected: str
) -> None:
    """kubectl sends nothing when its plugin fails; neither do we (before: the requests went
    out anonymous and the user read `forbidden ... system:anonymous`)."""
    with tls_server(tmp_path) as (api, cluster):
        proc = plugin_cli("diagnose", "--kubeconfig", write(tmp_path, cluster, user))
        assert api.requests == []
    assert proc.returncode == 12, proc.stderr
    assert proc.stderr.count("\n") == 1 and expected in proc.stderr, proc.stderr
    assert "user 'u'" in proc.stderr and "nothing was sent" in proc.stderr


def test_plugin_protocol_v1beta1_with_cluster_info(tmp_path: Path) -> None:
    """env, args, KUBERNETES_EXEC_INFO (interactive false without a terminal, the cluster with
    provideClusterInfo), the token used on every request."""
    seen = tmp_path / "seen.json"
    credential = {
        "kind": "ExecCredential",
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "status": {"token": "from-plugin", "expirationTimestamp": "2999-01-01T00:00:00Z"},
    }
    script = f'echo "$KUBERNETES_EXEC_INFO" > {seen}; echo "$0 $MY_VAR" >> {seen}; '
    script += f"echo '{json.dumps(credential)}'"
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "sh",
            "args": ["-c", script, "argv1"],
            "env": [{"name": "MY_VAR", "value": "from-env"}],
            "provideClusterInfo": True,
        }
    }
    with tls_server(tmp_path) as (api, cluster):
        cluster["extensions"] = [
            {"name": "client.authentication.k8s.io/exec", "extension": {"audience": "x"}}
        ]
        proc = plugin_cli("diagnose", "--kubeconfig", write(tmp_path, cluster, user))
    assert proc.returncode == 0, proc.stderr
    info_line, args_line = seen.read_text().splitlines()
    info = json.loads(info_line)
    assert info["apiVersion"] == "client.authentication.k8s.io/v1beta1"
    assert info["spec"]["interactive"] is False
    assert info["spec"]["cluster"]["server"] == cluster["server"]
    assert (
        info["spec"]["cluster"]["certificate-authority-data"]
        == cluster["certificate-authority-data"]
    )
    assert info["spec"]["cluster"]["config"] == {"audience": "x"}
    assert args_line == "argv1 from-env"
    assert all(("authorization", "Bearer from-plugin") in h for h in headers_of(api))


def test_a_token_flag_means_the_plugin_is_not_run(tmp_path: Path) -> None:
    """As client-go: a bearer token given, the exec plugin is not asked."""
    with tls_server(tmp_path) as (api, cluster):
        config = write(tmp_path, cluster, exec_user("exit 1"))
        proc = plugin_cli("diagnose", "--kubeconfig", config, "--token", "flag-token")
    assert proc.returncode == 0, proc.stderr
    assert all(("authorization", "Bearer flag-token") in h for h in headers_of(api))


# --- kubectl's connection flags and the empty kubeconfig --------------------------------------


def test_empty_kubeconfig_with_server_and_token_flags(tmp_path: Path) -> None:
    """An empty file is an empty config (kubectl's rule, not exit 10): --server, --token and
    --certificate-authority are enough, as for kubectl."""
    empty = tmp_path / "empty"
    empty.write_text("")
    with tls_server(tmp_path) as (api, cluster):
        ca = tmp_path / "ca.pem"
        ca.write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
        proc = plugin_cli(
            "diagnose",
            "--kubeconfig",
            str(empty),
            "-s",
            api.url,
            "--token",
            "tok",
            "--certificate-authority",
            str(ca),
        )
    assert proc.returncode == 0, proc.stderr
    assert all(("authorization", "Bearer tok") in h for h in headers_of(api))


def test_empty_kubeconfig_alone_means_kubectls_default_server(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text("")
    proc = plugin_cli("diagnose", "--kubeconfig", str(empty), "--deadline", "5")
    assert proc.returncode == 11, proc.stderr
    assert "The connection to the server localhost:8080 was refused" in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_cluster_and_user_flags_pick_other_entries(tmp_path: Path) -> None:
    with tls_server(tmp_path) as (api, cluster):
        path = tmp_path / "kubeconfig"
        path.write_text(
            json.dumps(
                {
                    "current-context": "c",
                    "clusters": [
                        {"name": "dead", "cluster": {"server": "https://127.0.0.1:1"}},
                        {"name": "live", "cluster": cluster},
                    ],
                    "users": [
                        {"name": "u", "user": {"token": "wrong"}},
                        {"name": "other", "user": {"token": "right"}},
                    ],
                    "contexts": [{"name": "c", "context": {"cluster": "dead", "user": "u"}}],
                }
            )
        )
        proc = plugin_cli(
            "diagnose", "--kubeconfig", str(path), "--cluster", "live", "--user", "other"
        )
        missing = plugin_cli("diagnose", "--kubeconfig", str(path), "--user", "nobody")
    assert proc.returncode == 0, proc.stderr
    assert all(("authorization", "Bearer right") in h for h in headers_of(api))
    assert missing.returncode == 10 and "user 'nobody' not found" in missing.stderr


def test_no_credentials_over_plain_http(tmp_path: Path) -> None:
    """kubectl reads credentials for TLS servers only; impersonation still goes (both checked
    with kubectl 1.32)."""
    with serve(_answer) as api:
        config = write(tmp_path, {"server": api.url}, {"token": "t", "as": "alice"})
        proc = plugin_cli("diagnose", "--kubeconfig", config)
    assert proc.returncode == 0, proc.stderr
    for sent in headers_of(api):
        assert "authorization" not in dict(sent) and ("impersonate-user", "alice") in sent


# --- proxies ---------------------------------------------------------------------------------


def test_a_proxy_that_is_down_fails_as_kubectl_does(tmp_path: Path) -> None:
    """proxy-url set and nothing listening there: no direct connection behind its back."""
    with tls_server(tmp_path) as (api, cluster), silent_socket() as dead:
        host = dead.rsplit(":", 1)[0]
        cluster["proxy-url"] = f"http://{host}:1"
        proc = plugin_cli("diagnose", "--kubeconfig", write(tmp_path, cluster, {"token": "t"}))
        assert api.requests == []
    assert proc.returncode == 11, proc.stderr


def test_socks5_proxies_are_refused_loudly(tmp_path: Path) -> None:
    with tls_server(tmp_path) as (api, cluster):
        cluster["proxy-url"] = "socks5://127.0.0.1:1080"
        proc = plugin_cli("diagnose", "--kubeconfig", write(tmp_path, cluster, {"token": "t"}))
        assert api.requests == []
    assert proc.returncode == 10 and proc.stderr.count("\n") == 1
    assert "socks5 proxies are not supported" in proc.stderr


def test_proxy_environment_as_go_reads_it() -> None:
    env = {"HTTPS_PROXY": "proxy.corp:3128", "NO_PROXY": ".internal,10.0.0.0/8,exact.io:6443"}
    assert proxy.choose("https://api.example:6443", None, env) == "http://proxy.corp:3128"
    assert proxy.choose("https://a.internal:6443", None, env) is None
    assert proxy.choose("https://10.1.2.3:6443", None, env) is None
    assert proxy.choose("https://exact.io:6443", None, env) is None
    assert proxy.choose("https://exact.io:443", None, env) == "http://proxy.corp:3128"
    assert proxy.choose("https://127.0.0.1:6443", None, env) is None  # loopback: never
    assert proxy.choose("https://localhost:6443", None, env) is None
    assert proxy.choose("http://api.example", None, env) is None  # HTTP_PROXY only for http
    assert proxy.choose("https://127.0.0.1:6443", "http://p:1", env) == "http://p:1"
    with pytest.raises(proxy.Problem, match="unsupported scheme 'ftp'"):
        proxy.choose("https://x", "ftp://p:1", {})


@settings(max_examples=60, deadline=None, database=None)
@given(
    host=st.from_regex(r"[a-z]{1,6}(\.[a-z]{1,6}){0,2}", fullmatch=True),
    suffix_dot=st.booleans(),
    star=st.booleans(),
)
def test_no_proxy_domains_match_the_domain_and_its_subdomains(
    host: str, suffix_dot: bool, star: bool
) -> None:
    """`example.com` matches itself and sub.example.com; `.example.com` and `*.example.com`
    only subdomains; never a name that merely ends with the same letters."""
    entry = ("*" if star else "") + ("." if star or suffix_dot else "") + host
    env = {"HTTPS_PROXY": "http://p:1", "NO_PROXY": entry}
    only_subdomains = star or suffix_dot
    assert (proxy.choose(f"https://{host}", None, env) is None) == (not only_subdomains)
    assert proxy.choose(f"https://sub.{host}", None, env) is None
    assert proxy.choose(f"https://x{host}", None, env) == "http://p:1"


def test_plugin_hang_leaves_no_process_and_is_quick(tmp_path: Path) -> None:
    """The plugin's own stderr so far is not needed: it is killed at --deadline (see also
    test_bad_servers)."""
    with tls_server(tmp_path) as (api, cluster):
        # a deadline long enough for the plugin to have started on a loaded machine (with 1 s
        # the deadline could pass before it did: exit 11, the run's own deadline), far shorter
        # than the plugin's hang
        config = write(tmp_path, cluster, exec_user("sleep 120"))
        start = time.monotonic()
        proc = plugin_cli("diagnose", "--kubeconfig", config, "--deadline", "8")
        took = time.monotonic() - start
        assert api.requests == []
    assert proc.returncode == 12 and "credential plugin 'sh' did not finish" in proc.stderr
    assert took < 90, took  # killed at the deadline, not after the plugin's 120 s


def test_plugin_credential_is_reused_until_it_expires(tmp_path: Path) -> None:
    """One run of the plugin for a whole diagnosis while its credential is valid; run again
    (for each request) once expirationTimestamp has passed, as client-go does."""
    for expiry, many in (("2999-01-01T00:00:00Z", False), ("2000-01-01T00:00:00Z", True)):
        runs = tmp_path / f"runs-{many}"
        credential = {
            "kind": "ExecCredential",
            "apiVersion": "client.authentication.k8s.io/v1",
            "status": {"token": "tok", "expirationTimestamp": expiry},
        }
        user = exec_user(f"echo run >> {runs}; echo '{json.dumps(credential)}'")
        with tls_server(tmp_path) as (api, cluster):
            proc = plugin_cli("diagnose", "--kubeconfig", write(tmp_path, cluster, user))
        assert proc.returncode == 0, proc.stderr
        count = len(runs.read_text().splitlines())
        assert len(api.requests) >= 3
        assert count == (len(api.requests) + 1 if many else 1), (count, len(api.requests))


def test_a_refusal_while_impersonating_names_the_impersonated_user(tmp_path: Path) -> None:
    folder = tmp_path / "server"
    folder.mkdir()
    cert = self_signed(folder)
    ca = base64.b64encode(Path(cert[0]).read_bytes()).decode()
    refused = {"kind": "Status", "message": 'nodes is forbidden: User "alice" cannot list'}
    with serve(lambda n, m, p: json_answer(refused, 403), tls=cert) as api:
        cluster = {"server": api.url, "certificate-authority-data": ca}
        proc = plugin_cli(
            "diagnose", "--kubeconfig", write(tmp_path, cluster, {"token": "t"}), "--as", "alice"
        )
    assert proc.returncode == 12 and proc.stderr.count("\n") == 1, proc.stderr
    assert "requests impersonate 'alice'" in proc.stderr
