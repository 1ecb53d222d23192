"""The kubeconfig: found, read, merged, checked and resolved to a connection, in one place.

Files are merged as kubectl merges them (client-go's ClientConfigLoadingRules.Load): every file
of $KUBECONFIG in order, missing ones skipped (a missing --kubeconfig is an error); for clusters,
users and contexts the first file defining a name wins and later ones are ignored; the first
non-empty current-context wins. A name defined twice in the file that wins is an error, as
kubectl rejects such a file (a later file's duplicates of an earlier name are never read).

Static credentials are resolved here without importing the `kubernetes` client (importing it
costs 0.5-0.7 s, most of a small cluster's diagnosis): the server URL, certificate-authority
(file or -data), client-certificate / client-key (file or -data), token or tokenFile,
username/password, insecure-skip-tls-verify and tls-server-name. Relative file paths are
resolved against the folder of the file that defined the entry, as kubectl does. The TLS
context and the urllib3 pool are built here.

A user with `exec` (credential plugins) or `auth-provider` (oidc, gcp, azure) is handed to the
official client, imported only then: it owns token refresh, caching and the plugin protocols.
It is given the same files (its own merger reads a list joined by os.pathsep) and the context
chosen here: its merger lets the last current-context win where kubectl lets the first.

Where the client and kubectl differ, this follows kubectl: a token file's surrounding
whitespace is trimmed, an empty `token` falls back to `tokenFile`, basic-auth credentials are
UTF-8, and a cluster without `server` is an error rather than http://localhost. With no
certificate authority the system's trusted roots are used. `proxy-url` is not read (the client
never read it either). Every problem is a ConfigError (exit 10) naming the file it comes
from (all the files merged when no single one is to blame).
"""

from __future__ import annotations

import base64
import binascii
import os
import ssl
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from kubectl_nodefail.errors import ConfigError, short

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


def find(explicit: str | None) -> list[str]:
    """The kubeconfig files in use, in kubectl's order: those of `paths` that exist (each once).
    A missing --kubeconfig is an error even when other files exist, as in kubectl."""
    candidates = list(dict.fromkeys(paths(explicit)))
    found = [path for path in candidates if os.path.exists(path)]
    if not found:
        raise ConfigError(
            f"no kubeconfig found at {', '.join(candidates)}",
            hint="pass --kubeconfig, set KUBECONFIG, or use --from-file to read a dump",
        )
    return found


def read(path: str, empty_ok: bool = False) -> dict[str, Any]:
    """The kubeconfig document, checked for the shape kubectl needs. With `empty_ok` an empty
    file is an empty document (kubectl skips an empty file among several)."""
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise ConfigError(f"kubeconfig {path} is not valid YAML{where}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read kubeconfig {path}: {short(exc)}") from exc
    if doc is None and empty_ok:
        return {}
    problem = _shape_problem(doc)
    if problem:
        raise ConfigError(f"kubeconfig {path} is unusable: {problem}")
    return dict(doc)


def context_names(explicit: str | None) -> list[str]:
    """The context names of the merged kubeconfig, in kubectl's order (first file first)."""
    return load(explicit).context_names()


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
    origin: str = ""  # the file(s) these settings come from, for messages


class Problem(Exception):
    """Why a kubeconfig cannot be used (the message, without the file's name), and the file
    defining the entry at fault when one is."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


@dataclass(frozen=True)
class Kubeconfig:
    """The merged view of one or more kubeconfig documents, as kubectl sees them."""

    docs: tuple[tuple[str, dict[str, Any]], ...]  # (file, document), in kubectl's order

    @property
    def files(self) -> list[str]:
        return [path for path, _ in self.docs]

    @property
    def label(self) -> str:
        """How messages name the kubeconfig: its file, or the files merged joined as in
        $KUBECONFIG."""
        return os.pathsep.join(self.files)

    def current_context(self) -> str:
        """The first non-empty current-context (kubectl's rule)."""
        found = (d.get("current-context") for _, d in self.docs)
        return next((str(name) for name in found if name), "")

    def context_names(self) -> list[str]:
        names = (c["name"] for _, d in self.docs for c in d.get("contexts") or [])
        return list(dict.fromkeys(names))

    def entry(self, section: str, name: str) -> tuple[str, dict[str, Any]] | None:
        """The file and body of `name` in `section` from the first file defining it; a name
        defined twice in that file is a Problem (kubectl rejects the file)."""
        for path, doc in self.docs:
            found = [e for e in doc.get(section) or [] if e["name"] == name]
            if len(found) > 1:
                raise Problem(f"{section} has {len(found)} entries named {name!r}", path)
            if found:
                return path, dict(found[0].get(section[:-1]) or {})
        return None

    def resolve(self, context: str | None) -> Settings | None:
        """The settings of `context` (default: current-context), or None when its user needs
        the official client (exec or auth-provider). Raises ConfigError."""
        try:
            name, (cluster_file, cluster), (user_file, user) = self._pick(context)
            if any(key in user for key in DELEGATED):
                return None
            return _settings(name, cluster, user, cluster_file, user_file)
        except Problem as exc:
            raise ConfigError(f"kubeconfig {exc.path or self.label} is unusable: {exc}") from exc

    def _pick(
        self, context: str | None
    ) -> tuple[str, tuple[str, dict[str, Any]], tuple[str, dict[str, Any]]]:
        """The context's name, its cluster and its user (empty when it names none), each with
        the file that defined it."""
        names = self.context_names()
        if context and context not in names:
            raise ConfigError(
                f"context {context!r} not found in {self.label}",
                hint=f"known contexts: {', '.join(names) or 'none'}",
            )
        name = context or self.current_context()
        if not name:
            raise Problem("no current-context is set (pass --context)")
        context_file, body = self._required("contexts", name)
        cluster_name = body.get("cluster")
        if not isinstance(cluster_name, str) or not cluster_name:
            raise Problem(f"context {name!r} names no cluster", context_file)
        cluster = self._required("clusters", cluster_name)
        user_name = body.get("user")
        user: tuple[str, dict[str, Any]] = ("", {})
        if isinstance(user_name, str) and user_name:
            user = self.entry("users", user_name) or user
        return name, cluster, user

    def _required(self, section: str, name: str) -> tuple[str, dict[str, Any]]:
        found = self.entry(section, name)
        if found is None:
            raise Problem(f"{section[:-1]} {name!r} not found")
        return found


def _folder(path: str) -> str:
    return os.path.dirname(os.path.abspath(path)) if path else ""


def load(explicit: str | None) -> Kubeconfig:
    """The merged kubeconfig of --kubeconfig/KUBECONFIG/~/.kube/config."""
    files = find(explicit)
    return Kubeconfig(tuple((path, read(path, empty_ok=len(files) > 1)) for path in files))


def resolve(path: str, doc: dict[str, Any], context: str | None) -> Settings | None:
    """`Kubeconfig.resolve` for a single file already read."""
    return Kubeconfig(((path, doc),)).resolve(context)


def _settings(
    context: str, cluster: dict[str, Any], user: dict[str, Any], cluster_file: str, user_file: str
) -> Settings:
    """The settings from the cluster's and the user's fields; relative paths against the folder
    of the file that defined each, problems blamed on that file."""
    with _blame(cluster_file):
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
        ca = _material(cluster, "certificate-authority", _folder(cluster_file)) if tls else None
    with _blame(user_file):
        user_base = _folder(user_file)
        cert = _material(user, "client-certificate", user_base) if tls else None
        key = _material(user, "client-key", user_base) if tls else None
        authorization = _authorization(user, user_base)
    return Settings(
        context=context,
        host=host,
        verify=not skip,
        ca=ca,
        cert=cert,
        key=key,
        tls_server_name=tls_name or None,
        authorization=authorization,
        origin=cluster_file if user_file in ("", cluster_file) else f"{cluster_file}, {user_file}",
    )


@contextmanager
def _blame(path: str) -> Iterator[None]:
    """Problems raised inside are about an entry of `path`."""
    try:
        yield
    except Problem as exc:
        exc.path = exc.path or path or None
        raise


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
            raise Problem(f"{data_key} is not base64: {short(exc)}") from exc
    file = _string(body, key)
    return _read_file(key, file, base) if file else None


def _read_file(key: str, file: str, base: str) -> bytes:
    full = os.path.normpath(os.path.join(base, file))
    try:
        with open(full, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise Problem(f"{key} {full}: {short(exc)}") from exc


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
            f"kubeconfig {path}: the certificate data is unusable: {short(exc)}",
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

        path = settings.origin or path
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

    def __init__(self, kubeconfig: Kubeconfig, context: str, pool_size: int) -> None:
        from kubernetes import client, config

        path = kubeconfig.label
        # the same files (the client merges a list joined by os.pathsep; it refuses an empty
        # file, which adds nothing) and the context chosen by kubectl's rules
        files = os.pathsep.join(p for p, doc in kubeconfig.docs if doc)
        cfg = client.Configuration()
        try:
            config.load_kube_config(
                config_file=files, context=context, client_configuration=cfg, persist_config=False
            )
        except Exception as exc:  # the library's own errors for a config it cannot use
            raise ConfigError(f"kubeconfig {path} is unusable: {short(exc)}") from exc
        check_url(path, cfg.host)
        if cfg.host.startswith("https"):  # checked now rather than failing on the first request
            ca, cert, key = (
                _file_bytes(path, f) for f in (cfg.ssl_ca_cert, cfg.cert_file, cfg.key_file)
            )
            ssl_context(path, ca, cert, key)
        cfg.connection_pool_maxsize = pool_size
        cfg.retries = False  # kube.Cluster retries itself: only GETs, within the deadline
        self.context = context
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
    merged = load(explicit)
    settings = merged.resolve(context)
    if settings is None:
        return ClientConnection(merged, context or merged.current_context(), pool_size)
    return StaticConnection(merged.label, settings, pool_size)
