"""The kubeconfig: found, read, checked and resolved to a connection, in one place.

Static credentials are resolved here without importing the `kubernetes` client (importing it
costs 0.5-0.7 s, most of a small cluster's diagnosis): the server URL, certificate-authority
(file or -data), client-certificate / client-key (file or -data), token or tokenFile,
username/password, insecure-skip-tls-verify and tls-server-name. Relative file paths are
resolved against the kubeconfig file's folder, as kubectl does. The TLS context and the urllib3
pool are built here.

A user with `exec` (credential plugins) or `auth-provider` (oidc, gcp, azure) is handed to the
official client, imported only then: it owns token refresh, caching and the plugin protocols.

Where the client and kubectl differ, this follows kubectl: a token file's surrounding
whitespace is trimmed, an empty `token` falls back to `tokenFile`, basic-auth credentials are
UTF-8, and a cluster without `server` is an error rather than http://localhost. With no
certificate authority the system's trusted roots are used. `proxy-url` is not read (the client
never read it either). Every problem is a ConfigError (exit 10) naming the file.
"""

from __future__ import annotations

import base64
import binascii
import os
import ssl
import tempfile
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from kubectl_nodefail.errors import ConfigError

SECTIONS = ("clusters", "users", "contexts")
DELEGATED = ("exec", "auth-provider")  # credentials only the official client produces


def paths(explicit: str | None) -> list[str]:
    """Where kubectl looks: --kubeconfig, else each path of $KUBECONFIG, else ~/.kube/config."""
    if explicit:
        return [explicit]
    env = os.environ.get("KUBECONFIG")
    if env:
        return [p for p in env.split(os.pathsep) if p]
    return [os.path.expanduser("~/.kube/config")]


def find(explicit: str | None) -> str:
    """The kubeconfig file in use: the first of `paths` that exists."""
    candidates = paths(explicit)
    for path in candidates:
        if os.path.exists(path):
            return path
    raise ConfigError(
        f"no kubeconfig found at {', '.join(candidates)}",
        hint="pass --kubeconfig, set KUBECONFIG, or use --from-file to read a dump",
    )


def read(path: str) -> dict[str, Any]:
    """The kubeconfig document, checked for the shape kubectl needs."""
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise ConfigError(f"kubeconfig {path} is not valid YAML{where}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read kubeconfig {path}: {_short(exc)}") from exc
    problem = _shape_problem(doc)
    if problem:
        raise ConfigError(f"kubeconfig {path} is unusable: {problem}")
    return dict(doc)


def context_names(explicit: str | None) -> list[str]:
    """The context names of the kubeconfig in use, in its order."""
    path = find(explicit)
    return [c["name"] for c in read(path).get("contexts") or []]


def _shape_problem(doc: Any) -> str | None:
    """Named clusters, users and contexts, each a mapping; a string current-context."""
    if not isinstance(doc, dict):
        return "it is not a YAML mapping"
    for section in SECTIONS:
        entries = doc.get(section) or []
        if not isinstance(entries, list):
            return f"{section} is not a list"
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                return f"{section}[{i}] has no name"
            body = entry.get(section[:-1])
            if body is not None and not isinstance(body, dict):
                return f"{section}[{i}] ({entry['name']}): {section[:-1]} is not a mapping"
    if not isinstance(doc.get("current-context") or "", str):
        return "current-context is not a string"
    return None


@dataclass(frozen=True)
class Settings:
    """One context's connection settings, with the TLS material read (PEM bytes)."""

    context: str
    host: str
    verify: bool = True
    ca: bytes | None = None
    cert: bytes | None = None
    key: bytes | None = None
    tls_server_name: str | None = None
    authorization: str | None = None  # the Authorization header: "Bearer ..." or "Basic ..."


class Problem(Exception):
    """Why a kubeconfig cannot be used (the message, without the file's name)."""


def resolve(path: str, doc: dict[str, Any], context: str | None) -> Settings | None:
    """The settings of `context` (default: current-context), or None when its user needs the
    official client (exec or auth-provider). Raises ConfigError."""
    try:
        name, cluster, user = _pick(path, doc, context)
        if any(key in user for key in DELEGATED):
            return None
        return _settings(name, cluster, user, os.path.dirname(os.path.abspath(path)))
    except Problem as exc:
        raise ConfigError(f"kubeconfig {path} is unusable: {exc}") from exc


def _pick(
    path: str, doc: dict[str, Any], context: str | None
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The context's name, its cluster and its user (empty when it names none)."""
    contexts = doc.get("contexts") or []
    names = [c["name"] for c in contexts]
    if context and context not in names:
        raise ConfigError(
            f"context {context!r} not found in {path}",
            hint=f"known contexts: {', '.join(names) or 'none'}",
        )
    name = context or doc.get("current-context") or ""
    if not name:
        raise Problem("no current-context is set (pass --context)")
    body = _named(contexts, "contexts", name, required=True)
    cluster_name = body.get("cluster")
    if not isinstance(cluster_name, str) or not cluster_name:
        raise Problem(f"context {name!r} names no cluster")
    cluster = _named(doc.get("clusters") or [], "clusters", cluster_name, required=True)
    user_name = body.get("user")
    user = {}
    if isinstance(user_name, str) and user_name:
        user = _named(doc.get("users") or [], "users", user_name, required=False)
    return name, cluster, user


def _named(entries: list[Any], section: str, name: str, required: bool) -> dict[str, Any]:
    """The body (cluster, user, context) of the one entry called `name` in `section`."""
    found = [e for e in entries if e["name"] == name]
    if len(found) > 1:
        raise Problem(f"{section} has {len(found)} entries named {name!r}")
    if not found:
        if required:
            raise Problem(f"{section[:-1]} {name!r} not found")
        return {}
    return dict(found[0].get(section[:-1]) or {})


def _settings(context: str, cluster: dict[str, Any], user: dict[str, Any], base: str) -> Settings:
    server = cluster.get("server")
    if server is None:
        raise Problem(f"context {context!r}: its cluster has no server")
    if not isinstance(server, str):
        raise Problem(f"server {server!r} is not a string")
    host = server.rstrip("/")
    skip = cluster.get("insecure-skip-tls-verify")
    if skip is not None and not isinstance(skip, bool):
        raise Problem(f"insecure-skip-tls-verify is {skip!r}, not true or false")
    tls_name = _string(cluster, "tls-server-name")
    tls = host.startswith("https")  # as the client: TLS material is read for https only
    return Settings(
        context=context,
        host=host,
        verify=not skip,
        ca=_material(cluster, "certificate-authority", base) if tls else None,
        cert=_material(user, "client-certificate", base) if tls else None,
        key=_material(user, "client-key", base) if tls else None,
        tls_server_name=tls_name or None,
        authorization=_authorization(user, base),
    )


def _string(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is not None and not isinstance(value, str):
        raise Problem(f"{key} is not a string")
    return value


def _material(body: dict[str, Any], key: str, base: str) -> bytes | None:
    """`key`-data (base64; preferred when present) or the file `key` names, as bytes."""
    data_key = f"{key}-data"
    if data_key in body:
        data = _string(body, data_key)
        if not data:
            return None
        try:
            return base64.standard_b64decode(data)
        except (binascii.Error, ValueError) as exc:
            raise Problem(f"{data_key} is not base64: {_short(exc)}") from exc
    file = _string(body, key)
    return _read_file(key, file, base) if file else None


def _read_file(key: str, file: str, base: str) -> bytes:
    full = os.path.normpath(os.path.join(base, file))
    try:
        with open(full, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise Problem(f"{key} {full}: {_short(exc)}") from exc


def _authorization(user: dict[str, Any], base: str) -> str | None:
    """The Authorization header: a token (or token file), else username/password."""
    token = _string(user, "token")
    token_file = _string(user, "tokenFile")
    if not token and token_file:
        token = _read_file("tokenFile", token_file, base).decode("utf-8", "replace").strip()
    if token:
        return f"Bearer {token}"
    username, password = _string(user, "username"), _string(user, "password")
    if username is not None and password is not None:
        pair = f"{username}:{password}".encode()
        return "Basic " + base64.b64encode(pair).decode("ascii")
    return None


def check_url(path: str, host: str) -> None:
    """The server URL, checked now rather than failing on the first request."""
    try:
        url = urlsplit(host)
        port = url.port
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"kubeconfig {path}: server {host!r} is not a valid URL") from exc
    if url.scheme not in ("http", "https") or not url.hostname or port == 0:
        raise ConfigError(
            f"kubeconfig {path}: server {host!r} is not an http(s) URL",
            hint="expected e.g. https://10.0.0.1:6443",
        )


def ssl_context(
    path: str, ca: bytes | None, cert: bytes | None, key: bytes | None, verify: bool = True
) -> ssl.SSLContext:
    """A TLS context trusting `ca` (else the system's roots) and presenting the client
    certificate. The key touches the disk only in a private temporary folder, for the moment
    `load_cert_chain` (which reads files only) needs it."""
    try:
        ctx = ssl.create_default_context(cadata=ca.decode("ascii") if ca else None)
        if not verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if cert:
            with tempfile.TemporaryDirectory(prefix="nodefail-") as tmp:
                cert_file = os.path.join(tmp, "cert.pem")
                key_file = os.path.join(tmp, "key.pem") if key else None
                for file, data in ((cert_file, cert), (key_file, key)):
                    if file and data is not None:
                        fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                        with os.fdopen(fd, "wb") as fh:
                            fh.write(data)
                ctx.load_cert_chain(cert_file, key_file)
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise ConfigError(
            f"kubeconfig {path}: the certificate data is unusable: {_short(exc)}",
            hint="check certificate-authority(-data) and client-certificate/key(-data)",
        ) from exc
    return ctx


class Connection:
    """What kube.Cluster needs from the kubeconfig: the server, a urllib3 pool that speaks its
    TLS, and the headers that authenticate each request."""

    context: str
    host: str
    pool: Any  # urllib3.PoolManager

    def auth_headers(self) -> dict[str, str]:
        raise NotImplementedError

    def close(self) -> None:
        self.pool.clear()


class StaticConnection(Connection):
    """Credentials that never change during a run, sent as they are."""

    def __init__(self, path: str, settings: Settings, pool_size: int) -> None:
        import urllib3

        check_url(path, settings.host)
        self.context = settings.context
        self.host = settings.host
        self.settings = settings
        tls: dict[str, Any] = {}
        if urlsplit(settings.host).scheme == "https":
            tls["ssl_context"] = ssl_context(
                path, settings.ca, settings.cert, settings.key, settings.verify
            )
            tls["cert_reqs"] = "CERT_REQUIRED" if settings.verify else "CERT_NONE"
            if settings.tls_server_name:
                tls["server_hostname"] = settings.tls_server_name
        self.pool = urllib3.PoolManager(num_pools=4, maxsize=pool_size, **tls)

    def auth_headers(self) -> dict[str, str]:
        auth = self.settings.authorization
        return {"Authorization": auth} if auth else {}


class ClientConnection(Connection):
    """exec and auth-provider users, through the official client's loader and pool: its
    `auth_settings()` runs the plugin or refreshes the token when it is due."""

    def __init__(self, path: str, context: str | None, pool_size: int) -> None:
        from kubernetes import client, config

        cfg = client.Configuration()
        try:
            config.load_kube_config(
                config_file=path, context=context, client_configuration=cfg, persist_config=False
            )
        except Exception as exc:  # the library's own errors for a config it cannot use
            raise ConfigError(f"kubeconfig {path} is unusable: {_short(exc)}") from exc
        check_url(path, cfg.host)
        if cfg.host.startswith("https"):  # checked now rather than failing on the first request
            ca, cert, key = (
                _file_bytes(path, f) for f in (cfg.ssl_ca_cert, cfg.cert_file, cfg.key_file)
            )
            ssl_context(path, ca, cert, key)
        cfg.connection_pool_maxsize = pool_size
        cfg.retries = False  # kube.Cluster retries itself: only GETs, within the deadline
        self.context = context or ""
        self.host = cfg.host
        self._cfg = cfg
        self._api = client.ApiClient(cfg)
        self.pool = self._api.rest_client.pool_manager

    def auth_headers(self) -> dict[str, str]:
        headers = {}
        for auth in self._cfg.auth_settings().values():
            if auth.get("in") == "header" and auth.get("value"):
                headers[auth["key"]] = auth["value"]
        return headers

    def close(self) -> None:
        self._api.close()


def _file_bytes(path: str, file: str | None) -> bytes | None:
    try:
        return _read_file("a certificate file", file, "") if file else None
    except Problem as exc:
        raise ConfigError(f"kubeconfig {path} is unusable: {exc}") from exc


def connect(explicit: str | None, context: str | None, pool_size: int) -> Connection:
    """The connection for --kubeconfig/KUBECONFIG and --context (default: current-context)."""
    path = find(explicit)
    doc = read(path)
    settings = resolve(path, doc, context)
    if settings is None:
        conn: Connection = ClientConnection(path, context, pool_size)
        conn.context = context or str(doc.get("current-context") or "")
        return conn
    return StaticConnection(path, settings, pool_size)


def _short(exc: object) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:200]
