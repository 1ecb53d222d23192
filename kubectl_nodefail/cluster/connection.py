"""The connection kube.Cluster sends its requests through: the server URL checked, a TLS
context safe to share across threads (SharedContext), a urllib3 pool that goes through the proxy
kubectl would use, and the headers of each request: the kubeconfig's credentials, or an exec
plugin's (credplugin.py) run again when they expire. auth-provider users connect through the
official client instead (kubeconfig.ClientConnection).
"""

from __future__ import annotations

import os
import ssl
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote, urlsplit

from kubectl_nodefail.cluster import credplugin
from kubectl_nodefail.cluster.credentials import Settings
from kubectl_nodefail.common.errors import ConfigError, short


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
    tests/unit/cluster/test_tls_race.py). Here the list is set once, before the context is shared;
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
