"""The kubeconfig: found, read, merged, checked and resolved to a connection, in one place.

Files are merged as kubectl merges them (client-go's ClientConfigLoadingRules.Load): every file
of $KUBECONFIG in order, missing ones skipped (a missing --kubeconfig is an error); for clusters,
users and contexts the first file defining a name wins and later ones are ignored; the first
non-empty current-context wins. A name defined twice in the file that wins is an error, as
kubectl rejects such a file (a later file's duplicates of an earlier name are never read).

Static credentials are resolved here without importing the `kubernetes` client (importing it
costs 0.5-0.7 s, most of a small cluster's diagnosis): the server URL, certificate-authority
(file or -data), client-certificate / client-key (file or -data), token or tokenFile,
username/password, insecure-skip-tls-verify, tls-server-name, proxy-url (proxy.py),
disable-compression and impersonation (as, as-uid, as-groups, as-user-extra). kubectl's
connection flags (Overrides) are applied with client-go's precedence. Relative file paths are
resolved against the folder of the file that defined the entry, as kubectl does. The TLS
context and the urllib3 pool are built here. `exec` credential plugins are run by
credplugin.py, before any request.

A user with `auth-provider` (oidc) is handed to the official client, imported only then, for
its token: it is given the same files (its own merger reads a list joined by os.pathsep) and
the context chosen here (its merger lets the last current-context win where kubectl lets the
first); what it cannot do as kubectl does (a proxy, connection flags other than --as*) is
refused.

kubectl is the reference (tests/unit/test_kubectl_oracle.py compares what both send): a token
file's surrounding whitespace is trimmed, a readable `tokenFile` wins over `token` (and
--token), basic-auth credentials are UTF-8, a cluster without `server` is an error rather than
http://localhost, credentials go to https servers only, and what kubectl refuses (a CA with
insecure-skip-tls-verify, a certificate without its key, a token with username/password, a file
and -data for the same thing, impersonation details without a user) is refused. With no
certificate authority the system's trusted roots are used. Every problem is a ConfigError
(exit 10) naming the file it comes from (all the files merged when no single one is to blame).
"""

from __future__ import annotations

import base64
import binascii
import os
import ssl
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from kubectl_nodefail.cluster import credplugin, proxy
from kubectl_nodefail.common.errors import AuthError, ConfigError, short

SECTIONS = ("clusters", "users", "contexts")
DELEGATED = ("auth-provider",)  # credentials only the official client produces


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


def read(path: str) -> dict[str, Any]:
    """The kubeconfig document, checked for the shape kubectl needs. An empty file is an empty
    document, as for kubectl."""
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
    if doc is None:
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


KUBECTL_DEFAULT_SERVER = "http://localhost:8080"  # kubectl's server when nothing names one


@dataclass(frozen=True)
class Overrides:
    """kubectl's connection flags (cli-runtime's ConfigFlags): each one given wins over the
    kubeconfig's field, with client-go's rules (see `_override_cluster`, `_override_user`).
    File paths are the user's, relative to the current folder."""

    cluster: str | None = None
    user: str | None = None
    server: str | None = None
    token: str | None = None
    impersonate: str | None = None
    impersonate_groups: tuple[str, ...] = ()
    impersonate_uid: str | None = None
    certificate_authority: str | None = None
    client_certificate: str | None = None
    client_key: str | None = None
    insecure_skip_tls_verify: bool = False
    tls_server_name: str | None = None
    disable_compression: bool = False


NO_OVERRIDES = Overrides()


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
    # Impersonate-User/-Uid/-Group/-Extra-KEY headers, in order (a name may repeat)
    impersonation: tuple[tuple[str, str], ...] = ()
    proxy: str | None = None  # the proxy URL requests go through (None: direct)
    disable_compression: bool = False
    plugin: credplugin.Plugin | None = None  # an exec credential plugin, run before any request
    cluster_info: dict[str, Any] | None = None  # what provideClusterInfo hands the plugin


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

    def resolve(self, context: str | None, overrides: Overrides = NO_OVERRIDES) -> Settings | None:
        """The settings of `context` (default: current-context) with kubectl's flags applied,
        or None when its user needs the official client (auth-provider). Raises ConfigError."""
        try:
            name, (cluster_file, cluster), (user_file, user_name, user) = self._pick(
                context, overrides
            )
            cluster = _override_cluster(cluster, overrides)
            user = _override_user(user, overrides)
            if any(key in user for key in DELEGATED):
                return None
            return _settings(name, cluster, user, cluster_file, user_file, user_name, overrides)
        except Problem as exc:
            raise ConfigError(f"kubeconfig {exc.path or self.label} is unusable: {exc}") from exc

    def delegated_user(self, context: str | None, overrides: Overrides) -> dict[str, Any]:
        """The user (flags applied) of a context `resolve` delegated, for its impersonation."""
        try:
            _, _, (_, _, user) = self._pick(context, overrides)
        except Problem as exc:  # pragma: no cover - resolve raised it first
            raise ConfigError(f"kubeconfig {exc.path or self.label} is unusable: {exc}") from exc
        return _override_user(user, overrides)

    def _pick(
        self, context: str | None, overrides: Overrides = NO_OVERRIDES
    ) -> tuple[str, tuple[str, dict[str, Any]], tuple[str, str, dict[str, Any]]]:
        """The context's name, its cluster and its user (empty when it names none), each with
        the file that defined it (and the user's name). --cluster and --user name another
        entry than the context's; with --server no context is needed; an empty kubeconfig
        means kubectl's default server."""
        names = self.context_names()
        if context and context not in names:
            raise ConfigError(
                f"context {context!r} not found in {self.label}",
                hint=f"known contexts: {', '.join(names) or 'none'}",
            )
        name = context or self.current_context()
        body: dict[str, Any] = {}
        context_file = ""
        if name:
            context_file, body = self._required("contexts", name)
        elif not (overrides.server or overrides.cluster):
            if names or any(d.get("clusters") for _, d in self.docs):
                raise Problem("no current-context is set (pass --context)")
            return "", ("", {"server": KUBECTL_DEFAULT_SERVER}), ("", "", {})
        cluster_name = overrides.cluster or body.get("cluster")
        cluster: tuple[str, dict[str, Any]] = (context_file, {})
        if isinstance(cluster_name, str) and cluster_name:
            found = self.entry("clusters", cluster_name)
            if found is None and (overrides.cluster or not overrides.server):
                raise Problem(f"cluster {cluster_name!r} not found")
            cluster = found or cluster
        elif not overrides.server:
            raise Problem(f"context {name!r} names no cluster", context_file or None)
        user_name = overrides.user or body.get("user")
        user: tuple[str, str, dict[str, Any]] = ("", "", {})
        if isinstance(user_name, str) and user_name:
            found = self.entry("users", user_name)
            if found is None and overrides.user:
                raise Problem(f"user {user_name!r} not found")
            if found is not None:
                user = (found[0], user_name, found[1])
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
    return Kubeconfig(tuple((path, read(path)) for path in files))


def resolve(
    path: str, doc: dict[str, Any], context: str | None, overrides: Overrides = NO_OVERRIDES
) -> Settings | None:
    """`Kubeconfig.resolve` for a single file already read."""
    return Kubeconfig(((path, doc),)).resolve(context, overrides)


def _override_cluster(cluster: dict[str, Any], flags: Overrides) -> dict[str, Any]:
    """The cluster with kubectl's flags applied (client-go's getCluster): --server replaces
    server; --certificate-authority or --insecure-skip-tls-verify replace the CA (file and
    data) and the skip flag together; --tls-server-name, or --server alone, replace
    tls-server-name (a new server makes the file's name meaningless)."""
    merged = dict(cluster)
    if flags.server:
        merged["server"] = flags.server
    if flags.insecure_skip_tls_verify or flags.certificate_authority:
        merged["insecure-skip-tls-verify"] = flags.insecure_skip_tls_verify
        merged.pop("certificate-authority-data", None)
        merged.pop("certificate-authority", None)
        if flags.certificate_authority:
            merged["certificate-authority"] = os.path.abspath(flags.certificate_authority)
    if flags.tls_server_name or flags.server:
        merged.pop("tls-server-name", None)
        if flags.tls_server_name:
            merged["tls-server-name"] = flags.tls_server_name
    if flags.disable_compression:
        merged["disable-compression"] = True
    return merged


def _override_user(user: dict[str, Any], flags: Overrides) -> dict[str, Any]:
    """The user with kubectl's flags applied (client-go merges every non-empty flag over the
    kubeconfig's field of the same meaning)."""
    merged = dict(user)
    for key, value in (
        ("token", flags.token),
        ("client-certificate", _absolute(flags.client_certificate)),
        ("client-key", _absolute(flags.client_key)),
        ("as", flags.impersonate),
        ("as-uid", flags.impersonate_uid),
        ("as-groups", list(flags.impersonate_groups)),
    ):
        if value:
            merged[key] = value
    return merged


def _absolute(path: str | None) -> str | None:
    """A flag's file path: relative to the current folder, not to a kubeconfig."""
    return os.path.abspath(path) if path else None


def _settings(
    context: str,
    cluster: dict[str, Any],
    user: dict[str, Any],
    cluster_file: str,
    user_file: str,
    user_name: str = "",
    overrides: Overrides = NO_OVERRIDES,
) -> Settings:
    """The settings from the cluster's and the user's fields; relative paths against the folder
    of the file that defined each, problems blamed on that file."""
    with _blame(cluster_file):
        server = cluster.get("server")
        if server is None or server == "":
            raise Problem(f"context {context!r}: its cluster has no server")
        if not isinstance(server, str):
            raise Problem(f"server {server!r} is not a string")
        host = server.rstrip("/")
        skip = cluster.get("insecure-skip-tls-verify")
        if skip is not None and not isinstance(skip, bool):
            raise Problem(f"insecure-skip-tls-verify is {skip!r}, not true or false")
        tls_name = _string(cluster, "tls-server-name")
        compression = cluster.get("disable-compression")
        compression = False if compression is None else compression  # empty (null): unset
        if not isinstance(compression, bool):
            raise Problem(f"disable-compression is {compression!r}, not true or false")
        _both("certificate-authority", cluster)
        tls = host.startswith("https")  # as the client: TLS material is read for https only
        ca = _material(cluster, "certificate-authority", _folder(cluster_file)) if tls else None
        proxy_url = _string(cluster, "proxy-url")
        try:
            chosen_proxy = proxy.choose(host, proxy_url)
        except proxy.Problem as exc:
            raise Problem(str(exc)) from exc
    with _blame(user_file):
        user_base = _folder(user_file)
        label = user_name or "(none)"
        _both("client-certificate", user)
        _both("client-key", user)
        _one_method(user, label)  # kubectl checks these whatever the server's scheme
        # kubectl sends no credentials to an http:// server (client-go reads them for TLS only)
        cert = _material(user, "client-certificate", user_base) if tls else None
        key = _material(user, "client-key", user_base) if tls else None
        authorization = _authorization(user, user_base) if tls else None
        impersonation = _impersonation(user, label)
        plugin = None
        if "exec" in user:
            try:
                parsed = credplugin.parse(label, user["exec"], user_base)
                plugin = parsed if tls else None
            except credplugin.Problem as exc:
                raise Problem(str(exc)) from exc
    with _blame(cluster_file):  # after the user's checks, in kubectl's order
        if skip and ca:
            raise Problem(
                "certificate-authority and insecure-skip-tls-verify are both set "
                "(kubectl refuses a CA with the insecure flag)"
            )
    info = None
    if plugin is not None and plugin.provide_cluster_info:
        info = credplugin.cluster_info(
            host, tls_name, bool(skip), ca, proxy_url, compression, cluster.get("extensions")
        )
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
        impersonation=impersonation,
        proxy=chosen_proxy,
        disable_compression=compression,
        plugin=plugin,
        cluster_info=info,
    )


def _both(key: str, body: dict[str, Any]) -> None:
    """kubectl refuses a file and inline data for the same thing."""
    if body.get(key) and body.get(f"{key}-data"):
        raise Problem(f"{key} and {key}-data are both set (kubectl refuses this)")


HEADER_TOKEN = frozenset(
    "!#$&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)


def _impersonation(user: dict[str, Any], label: str) -> tuple[tuple[str, str], ...]:
    """The Impersonate-* headers of `as`, `as-uid`, `as-groups`, `as-user-extra` (flags
    applied). A uid, groups or extra without `as` is refused, as kubectl refuses it."""
    name = _string(user, "as")
    uid = _string(user, "as-uid")
    groups = user.get("as-groups") or []
    extra = user.get("as-user-extra") or {}
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        raise Problem(f"user {label!r}: as-groups is not a list of strings")
    if not isinstance(extra, dict) or not all(
        isinstance(k, str) and isinstance(v, list) and all(isinstance(x, str) for x in v)
        for k, v in extra.items()
    ):
        raise Problem(f"user {label!r}: as-user-extra is not a map of string lists")
    if not name:
        if uid or groups or extra:
            raise Problem(
                f"user {label!r}: requesting uid, groups or user-extra without impersonating "
                "a user (set as, or pass --as)"
            )
        return ()
    headers = [("Impersonate-User", name)]
    if uid:
        headers.append(("Impersonate-Uid", uid))
    headers += [("Impersonate-Group", g) for g in groups]
    for key, values in extra.items():
        escaped = "".join(
            ch if ch in HEADER_TOKEN else "".join(f"%{b:02X}" for b in ch.encode("utf-8"))
            for ch in key
        )
        headers += [(f"Impersonate-Extra-{escaped}", v) for v in values]
    return tuple(headers)


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


def _one_method(user: dict[str, Any], label: str) -> None:
    """What kubectl's validation refuses in a user, for http and https servers alike: a client
    certificate without its key (or the reverse), a token with username/password."""
    cert = bool(user.get("client-certificate") or user.get("client-certificate-data"))
    key = bool(user.get("client-key") or user.get("client-key-data"))
    if cert != key:
        missing = "client-key" if cert else "client-certificate"
        raise Problem(f"user {label!r} has a client certificate or key without its {missing}")
    token = _string(user, "token") or _string(user, "tokenFile")
    if token and (_string(user, "username") or _string(user, "password")):
        raise Problem(
            f"user {label!r}: more than one authentication method (a token and "
            "username/password); kubectl allows only one"
        )


def _authorization(user: dict[str, Any], base: str) -> str | None:
    """The Authorization header: a token (or token file), or username/password (kubectl
    refuses both at once)."""
    token = _string(user, "token")
    token_file = _string(user, "tokenFile")
    username, password = _string(user, "username"), _string(user, "password")
    if token_file:
        # client-go sends the file's token whenever the file can be read, over `token` and
        # even over --token (checked with kubectl 1.32 and 1.36); `token` only when it cannot
        try:
            token = _read_file("tokenFile", token_file, base).decode("utf-8", "replace").strip()
        except Problem:
            if not token:
                raise
    if token:
        return f"Bearer {token}"
    if username:
        # client-go's HasBasicAuth: a username, however empty the password; a password alone
        # sends nothing
        pair = f"{username}:{password or ''}".encode()
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


ALPN = ("http/1.1",)  # what urllib3 offers (urllib3.util.ssl_.ALPN_PROTOCOLS)


class SharedContext(ssl.SSLContext):
    """A TLS context shared by every connection of the pool, on several threads, that urllib3
    cannot reconfigure under another connection's feet.

    urllib3 calls `set_alpn_protocols` on the context it is given each time it opens a
    connection. OpenSSL's SSL_CTX_set_alpn_protos frees and reallocates the context's ALPN list
    while SSL_new on another thread (CPython releases the GIL around it) copies that list: the
    new connection's ClientHello then carries a garbled ALPN extension, and the API server
    answers with a decode_error alert. That was the intermittent `[SSL:
    TLSV1_ALERT_DECODE_ERROR]` under load (issue 18; reproduced and tested in
    tests/unit/test_tls_race.py). Here the list is set once, before the context is shared;
    setting the same list again does nothing.
    """

    def set_alpn_protocols(self, alpn_protocols: Iterable[str]) -> None:
        wanted = tuple(alpn_protocols)
        if getattr(self, "_nodefail_alpn", None) == wanted:
            return
        super().set_alpn_protocols(list(wanted))
        self._nodefail_alpn = wanted


def ssl_context(
    path: str, ca: bytes | None, cert: bytes | None, key: bytes | None, verify: bool = True
) -> ssl.SSLContext:
    """A TLS context trusting `ca` (else the system's roots) and presenting the client
    certificate, as ssl.create_default_context makes it, but safe to share across threads
    (SharedContext). The key touches the disk only in a private temporary folder, for the
    moment `load_cert_chain` (which reads files only) needs it."""
    try:
        ctx = SharedContext(ssl.PROTOCOL_TLS_CLIENT)
        if sys.version_info >= (3, 13):  # what create_default_context adds there
            ctx.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN | ssl.VERIFY_X509_STRICT  # novermin
        if ca:
            ctx.load_verify_locations(cadata=ca.decode("ascii"))
        else:
            ctx.load_default_certs()
        ctx.set_alpn_protocols(ALPN)
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
    TLS (through the proxy kubectl would use), and the headers of each request: credentials
    and impersonation (a header name may repeat: Impersonate-Group)."""

    context: str
    host: str
    pool: Any  # urllib3.PoolManager or ProxyManager
    impersonation: tuple[tuple[str, str], ...] = ()
    proxy: str | None = None  # the proxy requests go through
    # Accept-Encoding: gzip on every request, as kubectl's transport sends it unless
    # disable-compression (kubeconfig) or --disable-compression says not to. auth-provider
    # users (ClientConnection) keep the default False: their path is the official client's.
    compress: bool = False

    def auth_headers(self) -> list[tuple[str, str]]:
        raise NotImplementedError

    def close(self) -> None:
        self.pool.clear()


Deadline = Callable[[], "float | None"]


def _no_deadline() -> float | None:
    return None


class StaticConnection(Connection):
    """Credentials from the kubeconfig and flags, or from an exec credential plugin run here
    before any request (again when its credential expires)."""

    def __init__(
        self, path: str, settings: Settings, pool_size: int, deadline: Deadline = _no_deadline
    ) -> None:
        import urllib3

        path = settings.origin or path
        check_url(path, settings.host)
        self.context = settings.context
        self.host = settings.host
        self.settings = settings
        self.impersonation = settings.impersonation
        self.proxy = settings.proxy
        self.compress = not settings.disable_compression
        self._deadline = deadline
        self._lock = threading.Lock()
        self._credential: credplugin.Credential | None = None
        cert, key = settings.cert, settings.key
        # as client-go: a plugin is not asked when a token or basic credentials are given
        if settings.plugin is not None and not settings.authorization:
            self._credential = credplugin.run(settings.plugin, settings.cluster_info, deadline())
            if cert is None and self._credential.cert:
                cert, key = self._credential.cert, self._credential.key
        tls: dict[str, Any] = {}
        if urlsplit(settings.host).scheme == "https":
            tls["ssl_context"] = ssl_context(path, settings.ca, cert, key, settings.verify)
            tls["cert_reqs"] = "CERT_REQUIRED" if settings.verify else "CERT_NONE"
            if settings.tls_server_name:
                tls["server_hostname"] = settings.tls_server_name
        if settings.proxy:
            proxy_url = urlsplit(settings.proxy)
            headers = None
            if proxy_url.username is not None:
                from urllib.parse import unquote

                headers = urllib3.make_headers(
                    proxy_basic_auth=f"{unquote(proxy_url.username)}:"
                    f"{unquote(proxy_url.password or '')}"
                )
            self.pool = _proxy_manager()(
                settings.proxy,
                num_pools=4,
                maxsize=pool_size,
                proxy_headers=headers,
                proxy_ssl_context=tls.get("ssl_context"),
                **tls,
            )
        else:
            self.pool = urllib3.PoolManager(num_pools=4, maxsize=pool_size, **tls)

    def auth_headers(self) -> list[tuple[str, str]]:
        auth = self.settings.authorization
        if auth is None and self._credential is not None and self._credential.token:
            auth = f"Bearer {self._token()}"
        return ([("Authorization", auth)] if auth else []) + list(self.impersonation)

    def _token(self) -> str | None:
        """The plugin's token, the plugin run again once it has expired."""
        with self._lock:
            credential = self._credential
            assert credential is not None
            if not credential.fresh():
                plugin = self.settings.plugin
                assert plugin is not None
                credential = credplugin.run(plugin, self.settings.cluster_info, self._deadline())
                self._credential = credential
            return credential.token


def _proxy_manager() -> Any:
    """urllib3's ProxyManager, except that a plain-http request through the proxy keeps
    repeated headers as separate lines (urllib3 joins them into one "a, b" there, which
    would make two Impersonate-Group values one group; found by tests/unit/
    test_kubectl_oracle.py)."""
    import urllib3
    from urllib3.util import parse_url

    class ProxyManager(urllib3.ProxyManager):
        def _set_proxy_headers(self, url: str, headers: Any = None) -> Any:
            merged = urllib3.HTTPHeaderDict({"Accept": "*/*"})
            netloc = parse_url(url).netloc
            if netloc:
                merged["Host"] = netloc
            for name, value in (headers or {}).items():
                if name.lower() in ("accept", "host"):
                    merged[name] = value
                else:
                    merged.add(name, value)
            return merged

    return ProxyManager


class ClientConnection(Connection):
    """auth-provider users, through the official client's loader and pool: its
    `auth_settings()` refreshes the token when it is due. The impersonation is ours; what the
    client cannot do as kubectl does (a proxy, the connection flags other than --as,
    --as-group, --as-uid) is refused."""

    def __init__(
        self,
        kubeconfig: Kubeconfig,
        context: str,
        pool_size: int,
        overrides: Overrides = NO_OVERRIDES,
    ) -> None:
        from kubernetes import client, config

        path = kubeconfig.label
        _refuse_for_delegated(path, overrides)
        user = kubeconfig.delegated_user(context or None, overrides)
        try:
            self.impersonation = _impersonation(user, "(auth-provider)")
        except Problem as exc:
            raise ConfigError(f"kubeconfig {path} is unusable: {exc}") from exc
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
        try:
            if proxy.choose(cfg.host, None) is not None or _cluster_proxy(kubeconfig, context):
                raise ConfigError(
                    f"kubeconfig {path}: a proxy is set for context {context!r}, whose "
                    "auth-provider user kubectl-nodefail reaches only directly; nothing was sent",
                    hint="unset HTTPS_PROXY / proxy-url, or use an exec credential plugin",
                )
        except proxy.Problem as exc:
            raise ConfigError(f"kubeconfig {path} is unusable: {exc}") from exc
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
        if not self._authorization() and not cfg.cert_file:
            self.close()
            raise AuthError(
                f"getting credentials of context {context!r}: the auth-provider gave none",
                hint="log in again; nothing was sent to the cluster",
            )

    def _authorization(self) -> list[tuple[str, str]]:
        return [
            (auth["key"], auth["value"])
            for auth in self._cfg.auth_settings().values()
            if auth.get("in") == "header" and auth.get("value")
        ]

    def auth_headers(self) -> list[tuple[str, str]]:
        return self._authorization() + list(self.impersonation)

    def close(self) -> None:
        self._api.close()


def _refuse_for_delegated(path: str, flags: Overrides) -> None:
    given = [
        flag
        for flag, value in (
            ("--cluster", flags.cluster),
            ("--user", flags.user),
            ("--server", flags.server),
            ("--token", flags.token),
            ("--certificate-authority", flags.certificate_authority),
            ("--client-certificate", flags.client_certificate),
            ("--client-key", flags.client_key),
            ("--insecure-skip-tls-verify", flags.insecure_skip_tls_verify),
            ("--tls-server-name", flags.tls_server_name),
        )
        if value
    ]
    if given:
        raise ConfigError(
            f"kubeconfig {path}: {', '.join(given)} cannot be combined with an auth-provider "
            "user in kubectl-nodefail; nothing was sent",
            hint="use kubectl for this, or a kubeconfig context that says it",
        )


def _cluster_proxy(kubeconfig: Kubeconfig, context: str) -> bool:
    _, (_, cluster), _ = kubeconfig._pick(context or None)
    return bool(cluster.get("proxy-url"))


def _file_bytes(path: str, file: str | None) -> bytes | None:
    try:
        return _read_file("a certificate file", file, "") if file else None
    except Problem as exc:
        raise ConfigError(f"kubeconfig {path} is unusable: {exc}") from exc


def connect(
    explicit: str | None,
    context: str | None,
    pool_size: int,
    overrides: Overrides = NO_OVERRIDES,
    deadline: Deadline = _no_deadline,
) -> Connection:
    """The connection for --kubeconfig/KUBECONFIG, --context (default: current-context) and
    kubectl's other connection flags. An exec plugin runs here, before any request."""
    merged = load(explicit)
    settings = merged.resolve(context, overrides)
    if settings is None:
        return ClientConnection(merged, context or merged.current_context(), pool_size, overrides)
    return StaticConnection(merged.label, settings, pool_size, deadline)
