"""The kubeconfig: found, read, merged, checked and resolved to a connection.

Files are merged as kubectl merges them (client-go's ClientConfigLoadingRules.Load): every file
of $KUBECONFIG in order, missing ones skipped (a missing --kubeconfig is an error); for clusters,
users and contexts the first file defining a name wins and later ones are ignored; the first
non-empty current-context wins. A name defined twice in the file that wins is an error, as
kubectl rejects such a file (a later file's duplicates of an earlier name are never read).

Static credentials are resolved (credentials.py) without importing the `kubernetes` client
(importing it costs 0.5-0.7 s, most of a small cluster's diagnosis): the server URL,
certificate-authority (file or -data), client-certificate / client-key (file or -data), token or
tokenFile, username/password, insecure-skip-tls-verify, tls-server-name, proxy-url (proxy.py),
disable-compression and impersonation (as, as-uid, as-groups, as-user-extra). kubectl's
connection flags (Overrides) are applied with client-go's precedence. Relative file paths are
resolved against the folder of the file that defined the entry, as kubectl does. The TLS
context and the urllib3 pool are built in connection.py. `exec` credential plugins are run by
credplugin.py, before any request.

A user with `auth-provider` (oidc) is handed to the official client, imported only then, for
its token: it is given the same files (its own merger reads a list joined by os.pathsep) and
the context chosen here (its merger lets the last current-context win where kubectl lets the
first); what it cannot do as kubectl does (a proxy, connection flags other than --as*) is
refused.

kubectl is the reference (tests/unit/cluster/test_kubectl_oracle.py compares what both send):
a token file's surrounding whitespace is trimmed, a readable `tokenFile` wins over `token` (and
--token), basic-auth credentials are UTF-8, a cluster without `server` is an error rather than
http://localhost, credentials go to https servers only, and what kubectl refuses (a CA with
insecure-skip-tls-verify, a certificate without its key, a token with username/password, a file
and -data for the same thing, impersonation details without a user) is refused. With no
certificate authority the system's trusted roots are used. Every problem is a ConfigError
(exit 10) naming the file it comes from (all the files merged when no single one is to blame).

This module finds, reads, checks and merges the files, hands auth-provider users to the
official client and makes the connection; the names of credentials.py and connection.py used
elsewhere stay importable from here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from kubectl_nodefail.cluster import proxy
from kubectl_nodefail.cluster.connection import (
    Connection,
    Deadline,
    StaticConnection,
    _no_deadline,
    check_url,
    ssl_context,
)
from kubectl_nodefail.cluster.credentials import (
    NO_OVERRIDES,
    Overrides,
    Problem,
    Settings,
    _impersonation,
    _override_cluster,
    _override_user,
    _read_file,
    _settings,
)
from kubectl_nodefail.common.errors import AuthError, ConfigError, short

# What the package, the tests and the tools import from here (a few names now live in the
# modules above).
__all__ = [
    "NO_OVERRIDES",
    "Kubeconfig",
    "Overrides",
    "StaticConnection",
    "connect",
    "context_names",
    "load",
    "read",
    "resolve",
    "ssl_context",
]

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


def load(explicit: str | None) -> Kubeconfig:
    """The merged kubeconfig of --kubeconfig/KUBECONFIG/~/.kube/config."""
    files = find(explicit)
    return Kubeconfig(tuple((path, read(path)) for path in files))


def resolve(
    path: str, doc: dict[str, Any], context: str | None, overrides: Overrides = NO_OVERRIDES
) -> Settings | None:
    """`Kubeconfig.resolve` for a single file already read."""
    return Kubeconfig(((path, doc),)).resolve(context, overrides)


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
