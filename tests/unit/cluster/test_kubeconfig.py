"""kubeconfig.py: static kubeconfigs resolved without the kubernetes client, the same way.

The differential property compares the loader with the official client's own (the reference
this project used before) on generated kubeconfigs. The client's `load_kube_config` is given
the file (not `load_kube_config_from_dict`): only with the file does it resolve relative paths
against the kubeconfig's folder, as kubectl does. Local fake servers then check that what was
resolved reaches the wire: the token or basic credentials, the client certificate, the CA,
tls-server-name.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_nodefail.cli.main import main
from kubectl_nodefail.cluster import kube, kubeconfig
from kubectl_nodefail.common.errors import ConfigError
from tests.support.fakeapi import json_answer, self_signed, serve

SCALE = int(os.environ.get("NODEFAIL_PROPERTY_SCALE", "1"))
SETTINGS = settings(
    max_examples=60 * SCALE,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
VERSION = {"major": "1", "minor": "36", "gitVersion": "v1.36.1"}

NAMES = st.sampled_from(["a", "b", "prod", "kind-kind"])
WORD = st.text("abcdefghijklmnopqrstuvwxyz0123456789-._~+/=", min_size=1, max_size=24)
ASCII = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=0, max_size=16)


@st.composite
def material(draw: st.DrawFn, key: str) -> dict[str, Any]:
    """`key` as nothing, -data, an absolute file or a file relative to the kubeconfig."""
    how = draw(st.sampled_from(["none", "data", "absolute", "relative", "relative-up"]))
    content = draw(st.binary(min_size=1, max_size=64))
    if how == "none":
        return {}
    if how == "data":
        return {f"{key}-data": base64.b64encode(content).decode()}
    return {key: {"file": how, "content": content}}


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, Any]:
    """A cluster with every static field kubectl knows."""
    scheme = draw(st.sampled_from(["https", "https", "http"]))
    port = draw(st.integers(1, 65535))
    cluster: dict[str, Any] = {
        "server": f"{scheme}://{draw(NAMES)}.example:{port}{draw(st.sampled_from(['', '/']))}"
    }
    cluster.update(draw(material("certificate-authority")))
    skip = draw(st.sampled_from([None, True, False]))
    if skip is not None:
        cluster["insecure-skip-tls-verify"] = skip
    if draw(st.booleans()):
        cluster["tls-server-name"] = draw(WORD)
    return cluster


@st.composite
def users(draw: st.DrawFn) -> dict[str, Any]:
    """A user with static credentials: certificates, token, token file, basic."""
    user: dict[str, Any] = {}
    user.update(draw(material("client-certificate")))
    user.update(draw(material("client-key")))
    auth = draw(st.sampled_from(["none", "token", "tokenFile", "both", "basic", "all"]))
    if auth in ("token", "both", "all"):
        user["token"] = draw(WORD)
    if auth in ("tokenFile", "both"):
        user["tokenFile"] = {"file": "relative", "content": draw(WORD).encode()}
    if auth in ("basic", "all"):
        user["username"], user["password"] = draw(ASCII), draw(ASCII)
    return user


@st.composite
def kubeconfigs(draw: st.DrawFn) -> dict[str, Any]:
    """1-3 kubeconfig files (each in its own folder) whose cluster, user and context names
    overlap across files (unique within one: kubectl rejects a file repeating a name), whose
    contexts may name a cluster or user of another file, each with its own current-context or
    none; sometimes a missing file in the list."""
    count = draw(st.integers(1, 3))
    docs: list[dict[str, Any]] = []
    for i in range(count):
        last = i == count - 1  # the last file guarantees a cluster and a context somewhere
        cluster_names = draw(st.lists(NAMES, min_size=int(last), max_size=3, unique=True))
        user_names = draw(st.lists(NAMES, max_size=3, unique=True))
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": n, "cluster": draw(clusters())} for n in cluster_names],
                "users": [{"name": n, "user": draw(users())} for n in user_names],
            }
        )
    all_clusters = sorted({c["name"] for d in docs for c in d["clusters"]})
    all_users = sorted({u["name"] for d in docs for u in d["users"]})
    for i, doc in enumerate(docs):
        names = draw(st.lists(NAMES, min_size=int(i == count - 1), max_size=3, unique=True))
        doc["contexts"] = []
        for name in names:
            context = {"cluster": draw(st.sampled_from(all_clusters))}
            if all_users and draw(st.booleans()):
                context["user"] = draw(st.sampled_from(all_users))
            doc["contexts"].append({"name": f"ctx-{name}", "context": context})
    all_contexts = sorted({c["name"] for d in docs for c in d["contexts"]})
    for doc in docs:
        current = draw(st.sampled_from([None, "", *all_contexts]))
        if current is not None:
            doc["current-context"] = current
    missing = draw(st.one_of(st.none(), st.integers(0, count)))
    chosen = draw(st.one_of(st.none(), st.sampled_from(all_contexts)))
    return {"docs": docs, "missing": missing, "context": chosen}


def _write(root: Path, doc: dict[str, Any], folder: Path, counter: itertools.count[int]) -> Path:
    """The kubeconfig as folder/config, with its files placed where each says (relative paths
    against that folder)."""
    folder.mkdir(parents=True)
    for section, body in (("clusters", "cluster"), ("users", "user")):
        for entry in doc[section]:
            fields = entry[body]
            for key, value in list(fields.items()):
                if not isinstance(value, dict):
                    continue
                count = next(counter)
                where = {
                    "absolute": str(root / f"abs-{count}.pem"),
                    "relative": f"certs/{count}.pem",
                    "relative-up": f"../up-{count}.pem",
                }[value["file"]]
                target = Path(where) if os.path.isabs(where) else folder / where
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(value["content"])
                fields[key] = where
    path = folder / "config"
    path.write_text(json.dumps(doc))
    return path


def _for_the_client(path: Path) -> Path:
    """A copy of the kubeconfig beside it whose users' relative client-certificate and
    client-key are absolute against its folder (kubectl's per-entry rule, which the client
    does not follow when the user and the cluster come from different files)."""
    doc = json.loads(path.read_text())
    for entry in doc["users"]:
        for key in ("client-certificate", "client-key"):
            file = entry["user"].get(key)
            if file and not os.path.isabs(file):
                entry["user"][key] = os.path.normpath(path.parent / file)
    copy = path.with_name("config-for-the-client")
    copy.write_text(json.dumps(doc))
    return copy


def _read(file: str | None) -> bytes | None:
    return Path(file).read_bytes() if file else None


@SETTINGS
@given(case=kubeconfigs())
def test_static_kubeconfigs_resolve_as_the_official_client_merges(case: dict[str, Any]) -> None:
    """KUBECONFIG=a:b:c against the client's own merger (`load_kube_config` given the same
    list): first file defining a name wins, relative paths against the defining file's folder,
    missing files skipped. The client lets the LAST current-context win where kubectl lets the
    first non-empty one win, so the client is handed the context kubectl would pick; and it
    resolves a user's relative client-certificate/-key against the folder of the CLUSTER's file
    where kubectl uses the user's own, so it is given those two already absolute."""
    from kubernetes import client, config

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        counter = itertools.count()
        files = [
            _write(root, doc, root / f"home{i}" / ".kube", counter)
            for i, doc in enumerate(case["docs"])
        ]
        theirs = [_for_the_client(path) for path in files]
        if case["missing"] is not None:
            for some in (files, theirs):
                some.insert(case["missing"], root / "nowhere" / "config")
        listed = os.pathsep.join(map(str, files))
        expected = case["context"] or next(
            (d["current-context"] for d in case["docs"] if d.get("current-context")), ""
        )
        with mock.patch.dict(os.environ, {"KUBECONFIG": listed}):
            merged = kubeconfig.load(None)
            assert merged.files == [str(f) for f in files if f.exists()]
            if not expected:
                with pytest.raises(ConfigError, match="no current-context is set"):
                    merged.resolve(case["context"])
                return
            refusal = _kubectl_refuses(merged, case["context"])
            if refusal:
                with pytest.raises(ConfigError, match=refusal):
                    merged.resolve(case["context"])
                return
            ours = merged.resolve(case["context"])
        assert ours is not None
        cfg = client.Configuration()
        temp = root / "client-temp"
        temp.mkdir()
        config.load_kube_config(
            config_file=os.pathsep.join(map(str, theirs)),
            context=expected,
            client_configuration=cfg,
            persist_config=False,
            temp_file_path=str(temp),
        )
        assert ours.host == cfg.host
        assert ours.context == expected
        assert ours.ca == _read(cfg.ssl_ca_cert)
        assert ours.cert == _read(cfg.cert_file)
        assert ours.key == _read(cfg.key_file)
        assert ours.verify == cfg.verify_ssl
        assert ours.tls_server_name == cfg.tls_server_name
        # kubectl sends credentials over TLS only (the client sends them over http too)
        https = cfg.host.startswith("https")
        theirs = cfg.api_key.get("BearerToken") or None
        _, _, (user_file, _, user) = merged._pick(case["context"])
        if user.get("tokenFile") and user.get("token"):
            # kubectl sends the token file's token over `token` (the client sends `token`)
            file = Path(user_file).parent / user["tokenFile"]
            theirs = "Bearer " + file.read_text().strip()
        elif not (user.get("token") or user.get("tokenFile")) and not user.get("username"):
            # kubectl sends basic auth only with a username (client-go's HasBasicAuth); the
            # client sends it with an empty one too ("Basic Og==")
            theirs = None
        assert ours.authorization == (theirs if https else None)


def _kubectl_refuses(merged: kubeconfig.Kubeconfig, context: str | None) -> str | None:
    """What kubectl refuses (and the client accepts) in the chosen context, checked with
    kubectl 1.32 and 1.36 against a local server: a client certificate without its key (or the
    reverse) and a token with username/password, whatever the scheme (its validation); a CA
    with insecure-skip-tls-verify for https (its TLS set-up)."""
    _, (_, cluster), (_, _, user) = merged._pick(context)
    cert = bool(user.get("client-certificate") or user.get("client-certificate-data"))
    key = bool(user.get("client-key") or user.get("client-key-data"))
    if cert != key:
        return "without its"
    if (user.get("token") or user.get("tokenFile")) and (
        user.get("username") or user.get("password")
    ):
        return "more than one authentication method"
    https = str(cluster.get("server", "")).startswith("https")
    ca = cluster.get("certificate-authority") or cluster.get("certificate-authority-data")
    if https and cluster.get("insecure-skip-tls-verify") and ca:
        return "insecure"
    return None


def _config(tmp: Path, cluster: dict[str, Any], user: dict[str, Any]) -> str:
    path = tmp / "kube" / "config"
    path.parent.mkdir(exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": cluster}],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    return str(path)


def _version(n: int, method: str, path: str) -> Any:
    return json_answer(VERSION)


def _auth(headers: dict[str, str]) -> str | None:
    """The Authorization header as sent (header names are case-insensitive)."""
    return {k.lower(): v for k, v in headers.items()}.get("authorization")


def _version_seen(config: str) -> None:
    cluster = kube.Cluster(config, timeout=5)
    try:
        assert cluster.server_version() == "v1.36.1"
    finally:
        cluster.close()


@contextmanager
def _tls(tmp_path: Path, script: Any = None) -> Iterator[tuple[Any, dict[str, Any]]]:
    """A local TLS server and the cluster entry reaching it (kubectl sends credentials over
    TLS only)."""
    (tmp_path / "server").mkdir(exist_ok=True)
    cert = self_signed(tmp_path / "server")
    ca = base64.b64encode(Path(cert[0]).read_bytes()).decode()
    with serve(script or _version, tls=cert) as api:
        yield api, {"server": api.url, "certificate-authority-data": ca}


def test_token_file_relative_to_the_kubeconfig_and_trimmed(tmp_path: Path) -> None:
    """kubectl reads tokenFile relative to the kubeconfig's folder and trims the newline a
    `echo TOKEN > file` leaves (the client sent it, which no HTTP library accepts)."""
    with _tls(tmp_path) as (api, cluster):
        config = _config(tmp_path, cluster, {"tokenFile": "token"})
        (tmp_path / "kube" / "token").write_text("s3cret\n")
        _version_seen(config)
    assert _auth(api.headers[0]) == "Bearer s3cret"


def test_basic_credentials_reach_the_server(tmp_path: Path) -> None:
    with _tls(tmp_path) as (api, cluster):
        _version_seen(_config(tmp_path, cluster, {"username": "ü", "password": "p"}))
    expected = "Basic " + base64.b64encode("ü:p".encode()).decode()
    assert _auth(api.headers[0]) == expected


def test_client_certificate_and_ca_data_reach_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kube, "RETRIES", 0)
    (tmp_path / "server").mkdir()
    (tmp_path / "client").mkdir()
    server = self_signed(tmp_path / "server")
    client_cert, client_key = self_signed(tmp_path / "client")

    def data(file: str) -> str:
        return base64.b64encode(Path(file).read_bytes()).decode()

    with serve(_version, tls=server, client_ca=client_cert) as api:
        cluster = {"server": api.url, "certificate-authority-data": data(server[0])}
        user = {"client-certificate-data": data(client_cert), "client-key-data": data(client_key)}
        _version_seen(_config(tmp_path, cluster, user))
        assert _auth(api.headers[0]) is None
        # without the client certificate the server's handshake refuses: exit 11, one line
        result = CliRunner().invoke(
            main, ["diagnose", "--kubeconfig", _config(tmp_path, cluster, {})]
        )
    assert result.exit_code == 11, result.stderr
    assert result.stderr.count("\n") == 1
    assert len(api.requests) == 1


def test_tls_server_name_is_the_name_checked(tmp_path: Path) -> None:
    """The certificate is for 127.0.0.1; the URL says localhost: only tls-server-name makes
    the name check pass."""
    server = self_signed(tmp_path)
    with serve(_version, tls=server) as api:
        url = api.url.replace("127.0.0.1", "localhost")
        cluster = {"server": url, "certificate-authority": server[0]}
        with pytest.raises(
            Exception, match="Unable to connect to the server: tls: failed to verify certificate"
        ):
            _version_seen(_config(tmp_path, cluster, {"token": "t"}))
        _version_seen(_config(tmp_path, {**cluster, "tls-server-name": "127.0.0.1"}, {}))
    assert len(api.requests) == 1


@pytest.mark.parametrize(
    ("cluster", "user", "message"),
    [
        ({}, {}, "its cluster has no server"),
        ({"server": "https://x:1", "insecure-skip-tls-verify": "false"}, {}, "not true or false"),
        ({"server": "https://x:1", "certificate-authority": "nope.pem"}, {}, "nope.pem"),
        ({"server": "https://x:1", "certificate-authority-data": "a"}, {}, "is not base64"),
        ({"server": "https://x:1"}, {"token": 12}, "token is not a string"),
        ({"server": "https://x:1", "disable-compression": "yes"}, {}, "not true or false"),
    ],
)
def test_unusable_static_fields_are_exit_10(
    tmp_path: Path, cluster: dict[str, Any], user: dict[str, Any], message: str
) -> None:
    config = _config(tmp_path, cluster, user)
    with pytest.raises(ConfigError, match=message):
        kubeconfig.connect(config, None, 1)
    result = CliRunner().invoke(main, ["diagnose", "--kubeconfig", config])
    assert result.exit_code == 10, result.stderr
    assert result.stderr.count("\n") == 1 and "kubeconfig" in result.stderr


def test_missing_context_names_the_known_ones(tmp_path: Path) -> None:
    config = _config(tmp_path, {"server": "https://x:1"}, {})
    with pytest.raises(ConfigError, match="context 'nope' not found") as caught:
        kubeconfig.connect(config, "nope", 1)
    assert caught.value.hint == "known contexts: c"


def test_diagnose_on_a_static_kubeconfig_never_imports_the_client(tmp_path: Path) -> None:
    from tests.unit.cluster.test_bad_servers import _recorded_cluster

    code = (
        "import sys\nfrom kubectl_nodefail.cli.main import main\n"
        "try:\n    main(['diagnose', '--kubeconfig', sys.argv[1]])\n"
        "except SystemExit as exc:\n    print('exit', exc.code)\n"
        "print('kubernetes' in sys.modules)\n"
    )
    with serve(_recorded_cluster) as api:
        config = _config(tmp_path, {"server": api.url}, {"token": "t"})
        proc = subprocess.run(
            [sys.executable, "-c", code, config], capture_output=True, text=True, check=False
        )
    assert proc.stdout.splitlines()[-2:] == ["exit 3", "False"], proc.stdout + proc.stderr
    assert "db-0" in proc.stdout


def _exec_plugin(token: str) -> dict[str, Any]:
    """An exec credential plugin (a shell one-liner) that prints an ExecCredential."""
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": token},
    }
    return {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": "sh",
        "args": ["-c", f"echo '{json.dumps(credential)}'"],
        "interactiveMode": "Never",
    }


def test_exec_plugins_token_reaches_the_server(tmp_path: Path) -> None:
    """A credential plugin's token reaches the server: the plugin ran before the request."""
    plugin = _exec_plugin("from-the-plugin")
    with _tls(tmp_path) as (api, cluster):
        config = _config(tmp_path, cluster, {"exec": plugin})
        settings = kubeconfig.resolve(config, kubeconfig.read(config), None)
        assert settings is not None and settings.plugin is not None
        _version_seen(config)
    assert _auth(api.headers[0]) == "Bearer from-the-plugin"


def _file(folder: Path, doc: dict[str, Any]) -> str:
    """A kubeconfig document as folder/config (the folder created)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config").write_text(json.dumps(doc))
    return str(folder / "config")


def _named(section: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, section[:-1]: body}


def _cli(args: list[str], listed: list[str]) -> Any:
    return CliRunner().invoke(main, args, env={"KUBECONFIG": os.pathsep.join(listed)})


def test_a_context_only_in_the_second_file_is_found_with_its_token_file(tmp_path: Path) -> None:
    """The on-call case: KUBECONFIG=~/.kube/config:~/.kube/prod.yaml, the context in the
    second; its relative tokenFile is read from the second file's folder, not the first's."""
    first = _file(tmp_path / "home", {"current-context": "dev", "contexts": []})
    (tmp_path / "prod" / "token").parent.mkdir()
    (tmp_path / "prod" / "token").write_text("prod-token\n")
    second = _file(
        tmp_path / "prod",
        {
            "clusters": [_named("clusters", "p", {"server": "https://prod:6443"})],
            "users": [_named("users", "p", {"tokenFile": "token"})],
            "contexts": [_named("contexts", "prod", {"cluster": "p", "user": "p"})],
        },
    )
    with mock.patch.dict(os.environ, {"KUBECONFIG": os.pathsep.join([first, second])}):
        assert kubeconfig.context_names(None) == ["prod"]
        settings = kubeconfig.load(None).resolve("prod")
        with pytest.raises(ConfigError, match="context 'dev' not found"):
            kubeconfig.load(None).resolve(None)  # the first file's current-context, nowhere
    assert settings is not None
    assert (settings.host, settings.authorization) == ("https://prod:6443", "Bearer prod-token")


def test_current_context_comes_from_the_second_file_when_the_first_has_none(
    tmp_path: Path,
) -> None:
    cluster = [_named("clusters", "c", {"server": "https://one:1"})]
    contexts = [_named("contexts", "one", {"cluster": "c"}), _named("contexts", "two", {})]
    doc = {"current-context": "", "clusters": cluster, "contexts": contexts}
    first = _file(tmp_path / "a", doc)
    second = _file(tmp_path / "b", {"current-context": "one"})
    third = _file(tmp_path / "c", {"current-context": "two"})  # later: ignored, as in kubectl
    merged = kubeconfig.Kubeconfig(tuple((p, kubeconfig.read(p)) for p in (first, second, third)))
    assert merged.current_context() == "one"
    settings = merged.resolve(None)
    assert settings is not None and settings.context == "one"


def test_a_missing_file_in_the_middle_is_skipped(tmp_path: Path) -> None:
    doc = {
        "current-context": "c",
        "clusters": [_named("clusters", "c", {"server": "https://x:1"})],
        "contexts": [_named("contexts", "c", {"cluster": "c"})],
    }
    first = _file(tmp_path / "a", {})
    (tmp_path / "a" / "config").write_text("")  # empty: kubectl reads it as an empty config
    listed = [first, str(tmp_path / "gone" / "config"), _file(tmp_path / "b", doc)]
    with mock.patch.dict(os.environ, {"KUBECONFIG": os.pathsep.join(listed)}):
        merged = kubeconfig.load(None)
    assert merged.files == [listed[0], listed[2]]
    settings = merged.resolve(None)
    assert settings is not None and settings.host == "https://x:1"
    result = _cli(["diagnose", "--context", "nope"], listed)
    assert result.exit_code == 10, result.stderr
    assert result.stderr.count("\n") == 1
    assert f"context 'nope' not found in {listed[0]}{os.pathsep}{listed[2]}" in result.stderr


def test_a_name_in_two_files_is_the_first_files(tmp_path: Path) -> None:
    """First file wins for a context, a cluster and a user alike; a name repeated within the
    file that wins is an error naming that file (kubectl rejects such a file), while a later
    file's repetitions of it are never read."""
    first = _file(
        tmp_path / "a",
        {
            "clusters": [_named("clusters", "c", {"server": "https://first:1"})],
            "users": [_named("users", "u", {"token": "first"})],
            "contexts": [_named("contexts", "x", {"cluster": "c", "user": "u"})],
        },
    )
    again = {
        "clusters": [_named("clusters", "c", {"server": "https://second:1"})] * 2,
        "users": [_named("users", "u", {"token": "second"})] * 2,
        "contexts": [_named("contexts", "x", {"cluster": "other"})] * 2,
    }
    second = _file(tmp_path / "b", again)
    merged = kubeconfig.Kubeconfig(tuple((p, kubeconfig.read(p)) for p in (first, second)))
    settings = merged.resolve("x")
    assert settings is not None
    assert (settings.host, settings.authorization) == ("https://first:1", "Bearer first")
    assert merged.context_names() == ["x"]
    twice = kubeconfig.Kubeconfig(tuple((p, kubeconfig.read(p)) for p in (second, first)))
    with pytest.raises(ConfigError, match=f"kubeconfig {second} is unusable: contexts has 2"):
        twice.resolve("x")


def test_problems_name_the_file_defining_the_entry(tmp_path: Path) -> None:
    first = _file(
        tmp_path / "a", {"contexts": [_named("contexts", "x", {"cluster": "c", "user": "u"})]}
    )
    second = _file(tmp_path / "b", {"clusters": [_named("clusters", "c", {})]})
    result = _cli(["diagnose", "--context", "x"], [first, second])
    assert result.exit_code == 10, result.stderr
    assert result.stderr.count("\n") == 1
    assert f"kubeconfig {second} is unusable: context 'x': its cluster has no server" in (
        result.stderr
    )


def test_a_missing_explicit_kubeconfig_is_exit_10_even_with_kubeconfig_set(
    tmp_path: Path,
) -> None:
    good = _config(tmp_path, {"server": "https://x:1"}, {})
    gone = str(tmp_path / "gone")
    result = _cli(["diagnose", "--kubeconfig", gone], [good])
    assert result.exit_code == 10, result.stderr
    assert result.stderr.count("\n") == 1 and f"no kubeconfig found at {gone}" in result.stderr


def test_completion_and_all_contexts_see_the_merged_contexts(tmp_path: Path) -> None:
    from kubectl_nodefail.cluster.contexts import kubeconfig_contexts

    first = _file(tmp_path / "a", {"contexts": [_named("contexts", "b", {})]})
    second = _file(
        tmp_path / "b", {"contexts": [_named("contexts", "a", {}), _named("contexts", "b", {})]}
    )
    with mock.patch.dict(os.environ, {"KUBECONFIG": os.pathsep.join([first, second])}):
        assert kubeconfig_contexts(None) == ["b", "a"]
    assert kubeconfig_contexts(second) == ["a", "b"]


def test_exec_users_of_a_later_file_are_run_with_the_merged_view(tmp_path: Path) -> None:
    """The exec user lives in the second file; the first file's current-context is the one
    kubectl uses (the client alone would take the last file's)."""
    plugin = _exec_plugin("from-the-plugin")
    with _tls(tmp_path) as (api, cluster_entry):
        first = _file(
            tmp_path / "a",
            {
                "current-context": "exec",
                "clusters": [_named("clusters", "c", cluster_entry)],
                "contexts": [_named("contexts", "exec", {"cluster": "c", "user": "e"})],
            },
        )
        empty = _file(tmp_path / "empty", {})
        (tmp_path / "empty" / "config").write_text("")  # the client alone refuses it
        second = _file(
            tmp_path / "b",
            {
                "current-context": "other",
                "users": [_named("users", "e", {"exec": plugin})],
                "contexts": [_named("contexts", "other", {"cluster": "nowhere"})],
            },
        )
        with mock.patch.dict(os.environ, {"KUBECONFIG": os.pathsep.join([first, empty, second])}):
            conn = kubeconfig.connect(None, None, 1)
            try:
                assert isinstance(conn, kubeconfig.StaticConnection)
                assert conn.context == "exec"
                assert _auth(dict(conn.auth_headers())) == "Bearer from-the-plugin"
            finally:
                conn.close()
            cluster = kube.Cluster(None, timeout=5)
            try:
                assert cluster.server_version() == "v1.36.1"
            finally:
                cluster.close()
    assert _auth(api.headers[0]) == "Bearer from-the-plugin"


@pytest.mark.parametrize(("value", "compress"), [(None, True), (False, True), (True, False)])
def test_disable_compression_empty_means_unset_as_for_kubectl(
    tmp_path: Path, value: bool | None, compress: bool
) -> None:
    """`disable-compression:` with no value is null, which kubectl reads as unset (gzip asked
    for), not an unusable kubeconfig (found by the review of the compression change)."""
    config = _config(tmp_path, {"server": "https://x:1", "disable-compression": value}, {})
    assert kubeconfig.connect(config, None, 1).compress is compress
