"""A context's cluster and user, with kubectl's connection flags (Overrides) applied, resolved
to Settings: the server, the TLS material read (file or -data, relative paths against the folder
of the file that defined the entry), the Authorization header (token, tokenFile,
username/password), the Impersonate-* headers, the proxy and the exec plugin to run. What kubectl
refuses in them is a Problem blamed on the file at fault (kubeconfig.py words it as a
ConfigError).
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kubectl_nodefail.cluster import credplugin, proxy
from kubectl_nodefail.common.errors import short


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


def _folder(path: str) -> str:
    return os.path.dirname(os.path.abspath(path)) if path else ""


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
