"""Which proxy reaches the API server, as client-go chooses it.

A cluster's `proxy-url` wins and is used for every request (loopback included). Without it the
environment is read as Go's net/http reads it: HTTPS_PROXY (else https_proxy) for an https
server, HTTP_PROXY (else http_proxy) for an http one, a value without a scheme taken as
http://; no proxy for `localhost` and loopback addresses, nor for a server NO_PROXY (else
no_proxy) matches: `*`, an IP, a CIDR, or a domain (`example.com` and `.example.com` both
match its subdomains, the first also itself), each with an optional :port.

http and https proxies are used through CONNECT (urllib3's ProxyManager). A socks5 proxy,
which kubectl also speaks, is refused with one line (exit 10): it would need a SOCKS library
this plugin does not ship, and connecting directly instead would bypass the proxy.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from urllib.parse import urlsplit

KUBECONFIG_SCHEMES = ("http", "https", "socks5")
ENV_SCHEMES = ("http", "https", "socks5", "socks5h")
SUPPORTED = ("http", "https")


class Problem(Exception):
    """A proxy kubectl would refuse, or one we cannot use (the message says which)."""


def choose(server: str, proxy_url: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """The proxy URL for `server` (None: connect directly). Raises Problem."""
    if proxy_url:
        return _usable(_parse(proxy_url, KUBECONFIG_SCHEMES, "proxy-url"), "proxy-url")
    env = os.environ if env is None else env
    try:
        target = urlsplit(server)
    except ValueError:
        return None
    https = target.scheme == "https"
    names = ("HTTPS_PROXY", "https_proxy") if https else ("HTTP_PROXY", "http_proxy")
    found = next(((n, env[n]) for n in names if env.get(n)), None)
    if found is None:
        return None
    name, value = found
    try:
        host = (target.hostname or "").lower()
        port = target.port or (443 if https else 80)
    except ValueError:
        return None  # not a URL: kubeconfig.check_url says so before anything is sent
    if not _use_proxy(host, port, env.get("NO_PROXY") or env.get("no_proxy") or ""):
        return None
    url = _parse(value, ENV_SCHEMES, name)
    return _usable(url, f"${name}")


def _parse(value: str, schemes: tuple[str, ...], where: str) -> str:
    try:
        url = urlsplit(value)
        if not url.scheme or not url.hostname:
            url = urlsplit("http://" + value)  # Go's rule for a proxy given without a scheme
        url.port  # noqa: B018 (raises on a bad port)
    except ValueError as exc:
        raise Problem(f"{where} {value!r} is not a URL: {exc}") from exc
    if url.scheme not in schemes:
        raise Problem(
            f"{where} {value!r}: unsupported scheme {url.scheme!r}, must be " + ", ".join(schemes)
        )
    if not url.hostname:
        raise Problem(f"{where} {value!r} names no host")
    return url.geturl()


def _usable(url: str, where: str) -> str:
    scheme = urlsplit(url).scheme
    if scheme not in SUPPORTED:
        raise Problem(
            f"{where} {url!r}: {scheme} proxies are not supported by kubectl-nodefail "
            "(kubectl speaks them); nothing was sent"
        )
    return url


def _use_proxy(host: str, port: int, no_proxy: str) -> bool:
    """Go's rule (golang.org/x/net/http/httpproxy): loopback and NO_PROXY go direct."""
    if host == "localhost":
        return False
    ip = _ip(host)
    if ip is not None and ip.is_loopback:
        return False
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return False
        if "/" in entry:
            try:
                if ip is not None and ip in ipaddress.ip_network(entry, strict=False):
                    return False
            except ValueError:
                pass
            continue
        name, entry_port = _split_port(entry)
        if entry_port is not None and entry_port != port:
            continue
        entry_ip = _ip(name)
        if entry_ip is not None:
            if ip is not None and ip == entry_ip:
                return False
            continue
        if ip is not None or not name:
            continue  # domains match names only
        if name.startswith("*."):
            name = name[1:]
        if name.startswith("."):
            if host.endswith(name):
                return False
        elif host == name or host.endswith("." + name):
            return False
    return True


def _split_port(entry: str) -> tuple[str, int | None]:
    if entry.startswith("["):  # [v6]:port
        close = entry.find("]")
        rest = entry[close + 1 :]
        port = int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
        return entry[1:close], port
    if entry.count(":") == 1:
        name, _, digits = entry.partition(":")
        return name, int(digits) if digits.isdigit() else None
    return entry, None


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
