"""The one client that talks to the API server (Cluster): its requests, retries and time bounds.

It connects as the kubeconfig says (kubeconfig.py: file, context, credentials; the official
client only for exec and auth-provider users), then sends plain HTTP requests and returns raw
JSON dicts: bulk lists are never deserialised into client models
(20,000 pods: 5.0 s through the models vs 0.7 s with json.loads, measured). Every failure is
mapped onto the tool's own errors (errors.py) with a one-line message.

Cluster's list reads are in paging.py, what its answers mean (decoding, error mapping) in
answers.py, the API paths and `trim` in resources.py; their names stay importable from here.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from http import HTTPStatus
from typing import Any, TypeVar
from urllib.parse import urlencode, urlsplit

from kubectl_nodefail import __version__
from kubectl_nodefail.cluster.answers import (
    ErrorAnswers,
    _decode,
    _Retryable,
    _seconds,
    _status_kw,
    answer_field,
    decode_json,
)
from kubectl_nodefail.cluster.budget import Budget
from kubectl_nodefail.cluster.kubeconfig import NO_OVERRIDES, connect
from kubectl_nodefail.cluster.netfail import connection_failure
from kubectl_nodefail.cluster.paging import NODE_PAGE_SIZE, ListReads
from kubectl_nodefail.cluster.resources import (
    Obj,
    node_path,
    owner_api_version,
    owner_path,
    owners_path,
    pod_path,
    trim,
)
from kubectl_nodefail.common.errors import (
    AuthError,
    MalformedResponse,
    NodefailError,
    UnreachableError,
    short,
)
from kubectl_nodefail.snapshot import dumpschema

# What the package, the tests and the tools import from here (a few names now live in the
# modules above).
__all__ = [
    "BACKOFF_SECONDS",
    "MAX_ANSWER_BYTES",
    "NODE_PAGE_SIZE",
    "RETRIES",
    "WORKERS",
    "Cluster",
    "answer_field",
    "node_path",
    "owner_api_version",
    "owner_path",
    "owners_path",
    "parallel",
    "pod_path",
    "thread_pool",
    "trim",
]

T = TypeVar("T")
R = TypeVar("R")
WORKERS = 8
RETRIES = 2  # more tries for a GET that was refused, dropped or told to come back later
BACKOFF_SECONDS = 0.5  # doubled on each retry; a Retry-After may ask for longer
RETRY_STATUSES = {429, 502, 503, 504}
# Throttled (429, or any retryable answer with a Retry-After: API Priority and Fairness does
# this to clients exactly when the cluster struggles): retried while the deadline allows, not
# RETRIES times, as kubectl rides it out; without a Retry-After, backoff doubled up to this, with
# jitter so that the clients of a struggling server do not come back together.
THROTTLE_BACKOFF_MAX = 8.0
READ_CHUNK = 1 << 20
# The most one answer may hold, decompressed: a page of pods or nodes is a few MiB, a server
# that ignores `limit` and sends 60,000 pods ~0.4 GiB. Past it the answer is malformed (exit 14)
# rather than the process's memory: a compressed body can inflate a thousandfold.
MAX_ANSWER_BYTES = 1 << 30

# The objects `get_object` holds to their kind's schema, by the resource in their path.
CHECKED_KINDS = {"nodes": "Node", "pods": "Pod", "leases": "Lease"}


class Cluster(ListReads, ErrorAnswers):
    """A connection to one API server, chosen by kubeconfig and context.

    `timeout` is kubectl's --request-timeout: the longest one request may take (None: no
    limit). `deadline` is a time.monotonic() value the whole run must finish by (--deadline):
    every connect, TLS handshake, read, retry and Retry-After wait is cut to what is left of it.
    """

    throttle_said = False  # the run said once that the server throttles it
    _said_lock = threading.Lock()
    budget = Budget()  # per resource: requests, bytes, seconds (-v)

    def __init__(
        self,
        kubeconfig: str | None = None,
        context: str | None = None,
        timeout: float | None = 30.0,
        deadline: float | None = None,
        overrides: Any = None,
    ) -> None:
        self.timeout = timeout or None
        self.deadline = deadline
        self._conn = connect(
            kubeconfig, context, WORKERS * 2, overrides or NO_OVERRIDES, lambda: self.deadline
        )
        self.context = self._conn.context
        self.host = self._conn.host
        proxy = getattr(self._conn, "proxy", None)
        self.proxy_url = _without_password(proxy) if proxy else None
        acting = [v for k, v in self._conn.impersonation if k == "Impersonate-User"]
        self._acting_as = (
            f"; requests impersonate {acting[0]!r} (as: in the kubeconfig, or --as)"
            if acting
            else ""
        )
        self.sleep: Callable[[float], None] = time.sleep  # replaced by tests
        # where one line for the user goes (the throttling notice); None: nowhere
        self.notice: Callable[[str], None] | None = None
        # Per kind, what each listed item of it goes through as its page arrives (after trim,
        # before keep): the analysis cuts pods to the fields it reads here (cli/live.py
        # gathered), so a big outage's pods are never held whole; a dump keeps them as they are.
        self.shape: dict[str, Callable[[Obj], Obj]] = {}
        self._pool = self._conn.pool
        _quiet_insecure_warning()
        self._user_agent = f"kubectl-nodefail/{__version__}"

    def _auth_headers(self) -> list[tuple[str, str]]:
        """The User-Agent, the credentials' header (a token from an exec plugin or
        auth-provider is refreshed when due) and the Impersonate-* headers (a name may
        repeat); client certificates live in the pool's TLS."""
        return [("User-Agent", self._user_agent), *self._conn.auth_headers()]

    # --- plain requests ---

    def request(
        self,
        method: str,
        path: str,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> Obj:
        """Send one request; return the decoded JSON object. Errors become NodefailErrors.
        (Retries and time bounds: see `_send`.)"""
        data = self._send(method, path, query, body, content_type, accept)
        return _decode(data, f"{method} {path}")

    def _send(
        self,
        method: str,
        path: str,
        query: dict[str, Any] | None,
        body: Any,
        content_type: str,
        accept: str,
    ) -> bytes:
        """Send one request; return the raw body of a 2xx answer. Errors become NodefailErrors.

        GETs are retried (at most RETRIES more times, with backoff) when the connection is
        reset or closed mid-way, or the server answers 429/502/503/504 (client-go's rule: a
        refused connection, an unknown name or a TLS failure fail at once, netfail.py); a
        Retry-After is honoured up to --request-timeout and within the deadline, else the run
        ends at once saying so.
        A request that times out is never retried: the wait would silently double. Writes are
        never retried.
        """
        query = {k: v for k, v in (query or {}).items() if v is not None}
        url_path = path + ("?" + urlencode(query) if query else "")
        attempt = 0
        while True:
            try:
                return self._attempt(method, path, url_path, body, content_type, accept)
            except _Retryable as retry:
                attempt += 1
                if method != "GET" or (attempt > RETRIES and not retry.throttled):
                    raise retry.error from retry
                wait = self._backoff(attempt, retry)
                too_long = self._too_long(wait)
                if too_long:
                    asked = (
                        f"; it asked to wait {retry.retry_after_text!r} (Retry-After)"
                        if retry.retry_after_text is not None
                        else ""
                    )
                    raise type(retry.error)(
                        f"{retry.error.message}{asked}, {too_long}",
                        hint=retry.error.hint or "try again later",
                        **_status_kw(retry.error),
                    ) from retry
                if retry.throttled:
                    self._throttled(retry, wait)
                self.sleep(wait)

    def _backoff(self, attempt: int, retry: _Retryable) -> float:
        """The wait before try `attempt + 1`: the server's Retry-After when it gave one; else
        doubled from BACKOFF_SECONDS, and for a throttled GET past RETRIES capped (at
        THROTTLE_BACKOFF_MAX, and at --request-timeout: our own wait is never refused as too
        long) with jitter."""
        if retry.retry_after is not None:
            return max(retry.retry_after, BACKOFF_SECONDS)
        wait = BACKOFF_SECONDS * 2 ** (min(attempt, 32) - 1)
        if retry.throttled and attempt > RETRIES:
            cap = min(THROTTLE_BACKOFF_MAX, self.timeout or THROTTLE_BACKOFF_MAX)
            wait = min(wait, cap) * random.uniform(0.5, 1.0)
        return wait

    def _throttled(self, retry: _Retryable, wait: float) -> None:
        """Say once per run (on stderr, through `notice`) that the server throttles us."""
        with self._said_lock:
            if Cluster.throttle_said:
                return
            Cluster.throttle_said = True
        if self.notice is not None:
            left = self._left()
            within = f" within the {left:.0f}s left of --deadline" if left is not None else ""
            status = getattr(retry.error, "status", None)
            if isinstance(status, int) and status in RETRY_STATUSES:
                answer = f"{status} {HTTPStatus(status).phrase}"
            else:
                answer = "asked to wait"
            asked = f", Retry-After {retry.retry_after_text}" if retry.retry_after_text else ""
            self.notice(
                f"the API server at {self.host} is throttling requests ({answer}{asked}; "
                f"API Priority and Fairness): retrying{within}"
            )

    def _too_long(self, wait: float) -> str | None:
        """Why a wait before the next try is not made (None: it is). A server's Retry-After
        is honoured up to --request-timeout, and never past the overall deadline."""
        left = self._left()
        if left is not None and wait >= left:
            return f"more than the {max(left, 0):.0f}s left of the overall deadline (--deadline)"
        if self.timeout is not None and wait > self.timeout:
            return f"longer than one request may take (--request-timeout {self.timeout:g}s)"
        return None

    def _left(self) -> float | None:
        """Seconds left before the overall deadline (None: no deadline)."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    def _attempt_timeout(self, what: str) -> float | None:
        """This attempt's timeout: --request-timeout, cut to what is left of the deadline."""
        left = self._left()
        if left is not None and left <= 0:
            raise self._deadline_error(what)
        limits = [t for t in (self.timeout, left) if t is not None]
        return min(limits) if limits else None

    def _attempt(
        self,
        method: str,
        path: str,
        url_path: str,
        body: Any,
        content_type: str,
        accept: str,
    ) -> bytes:
        what = f"{method} {path}"
        timeout = self._attempt_timeout(what)
        headers = self._headers(accept, self._conn.compress)
        if body is not None:
            headers["Content-Type"] = content_type
        started, got, status = time.monotonic(), 0, None
        try:
            resp, data = self._exchange(method, url_path, body, headers, timeout, what)
            got, status = len(data), resp.status
            if resp.status in RETRY_STATUSES:
                raw = resp.headers.get("Retry-After")
                raise _Retryable(self._api_error(resp.status, data, method, path), raw)
            if not 200 <= resp.status <= 299:
                raise self._api_error(resp.status, data, method, path)
            return data
        finally:  # every request sent counts, answered or not (-v: cluster/budget.py)
            Cluster.budget.record(method, path, got, time.monotonic() - started, status)

    def _headers(self, accept: str, compress: bool) -> Any:
        """A request's headers: Accept, the credentials' (a refresh failing is an AuthError)
        and, as kubectl's transport, gzip asked for (a big list is a tenth of its size on the
        wire), or no Accept-Encoding at all (not http.client's own "identity")."""
        import urllib3

        headers = urllib3.HTTPHeaderDict({"Accept": accept})
        headers["Accept-Encoding"] = "gzip" if compress else urllib3.util.SKIP_HEADER
        try:
            for name, value in self._auth_headers():
                headers.add(name, value)
        except NodefailError:
            raise  # a credential plugin's own one line
        except Exception as exc:  # token refreshers fail in many ways
            raise AuthError(
                f"could not get credentials for context {self.context!r}: {short(exc)}",
                hint="log in again",
            ) from exc
        return headers

    def open_watch(self, path: str, query: dict[str, Any], accept: str, idle: float) -> Any:
        """A watch (cluster/watchstream.py): the GET sent with watch=1 and its answer returned
        unread, streaming; `idle` bounds the wait for each next event or bookmark. Asks for
        gzip as every request does (kubectl's transport too; the API server sends a watch
        uncompressed, a proxy may not). A non-2xx answer is read whole
        and becomes the tool's error, as for `request`; a 410 Gone is an ApiError with status
        410 (the resourceVersion is too old: list again)."""
        import urllib3

        what = f"WATCH {path}"
        timeout = self._attempt_timeout(what)
        url_path = path + "?" + urlencode({**query, "watch": "1"})
        headers = self._headers(accept, self._conn.compress)
        data, status, streaming = b"", None, False
        try:
            resp = self._pool.request(
                "GET",
                self.host + url_path,
                headers=headers,
                timeout=urllib3.Timeout(connect=timeout, read=idle),
                retries=False,
                redirect=False,
                preload_content=False,
            )
            status = resp.status
            if 200 <= status <= 299:
                streaming = True  # its bytes are counted by its reader as it ends
                return resp
            data = self._read_body(resp, timeout, what)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            lost = self._lost(exc, timeout, what)  # the watcher opens it again, after a wait
            raise (lost.error if isinstance(lost, _Retryable) else lost) from exc
        finally:  # refused or unanswered: counted here (-v), as every request sent is
            if not streaming:
                Cluster.budget.record("WATCH", path, len(data), 0.0, status)
        raise self._api_error(resp.status, data, "GET", path)

    def _exchange(
        self,
        method: str,
        url_path: str,
        body: Any,
        headers: Any,
        timeout: float | None,
        what: str,
    ) -> tuple[Any, bytes]:
        """One request sent and its whole answer read; a failure to get one becomes the
        tool's error (a reset or dropped connection: retryable)."""
        import urllib3

        try:
            resp = self._pool.request(
                method,
                self.host + url_path,
                body=None if body is None else json.dumps(body),
                headers=headers,
                timeout=urllib3.Timeout(connect=timeout, read=timeout),
                retries=False,
                redirect=False,
                preload_content=False,
            )
            try:
                data = self._read_body(resp, timeout, what)
            except urllib3.exceptions.DecodeError as exc:  # a compressed body that does not
                if not 200 <= resp.status <= 299:  # decompress: an error answer keeps its status
                    data = b""
                else:
                    cause = exc.args[-1] if exc.args else exc  # (urllib3's words, zlib's error)
                    raise MalformedResponse(
                        f"{what}: the API server at {self.host} sent a compressed answer that "
                        f"does not decompress ({short(cause)})"
                    ) from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise self._lost(exc, timeout, what) from exc
        return resp, data

    def _lost(self, exc: Exception, timeout: float | None, what: str) -> Exception:
        """What a request that got no (whole) answer raises: the connection's failure in the
        tool's words; a reset or dropped connection as _Retryable (a GET is sent again, as
        client-go does); no answer in time as the deadline's or --request-timeout's."""
        import urllib3

        if isinstance(exc, urllib3.exceptions.ConnectTimeoutError):  # refused, unresolvable too
            return self._unreachable(connection_failure(exc, self.host, self.proxy_url), timeout)
        if isinstance(exc, (urllib3.exceptions.TimeoutError, TimeoutError)):
            left = self._left()
            if left is not None and (self.timeout is None or left < 1):
                return self._deadline_error(what)
            return UnreachableError(
                f"{what}: no answer from the API server at {self.host} within {_seconds(timeout)}",
                hint=f"context {self.context!r}; check the network, VPN, or the cluster itself",
            )
        failure = connection_failure(exc, self.host, self.proxy_url)
        error = self._unreachable(failure, timeout)
        return _Retryable(error) if failure.retry else error

    def _read_body(self, resp: Any, timeout: float | None, what: str) -> bytes:
        """The whole body, chunk by chunk, never reading past the deadline."""
        chunks: list[bytes] = []
        total = 0
        try:
            while True:
                left = self._left()
                if left is not None and left <= 0:
                    raise self._deadline_error(what)
                sock = getattr(getattr(resp, "connection", None), "sock", None)
                if sock is not None and left is not None:
                    sock.settimeout(min(t for t in (timeout, left) if t is not None))
                chunk = resp.read(READ_CHUNK)
                if not chunk:
                    return b"".join(chunks)
                total += len(chunk)
                if total > MAX_ANSWER_BYTES:
                    raise MalformedResponse(
                        f"{what}: the API server's answer at {self.host} is over "
                        f"{MAX_ANSWER_BYTES >> 20:,} MiB; nothing more of it was read",
                        hint="a page should be a few MiB: check the server or the proxy",
                    )
                chunks.append(chunk)
        finally:
            resp.release_conn()

    def get(self, path: str, **query: Any) -> Obj:
        return self.request("GET", path, query)

    def get_object(self, path: str) -> Obj:
        """GET one object that a mutation will be conditioned on: its metadata must carry a
        name, a uid and a resourceVersion (the preconditions and tests sent with it), and a
        node, pod or lease is held to its kind's dump schema (the fields remediate's re-checks
        read), else MalformedResponse (exit 14). Returned whole, as the server sent it."""
        doc = self.get(path)
        meta = doc.get("metadata")
        for key in ("name", "uid", "resourceVersion"):
            value = meta.get(key) if isinstance(meta, dict) else None
            if not isinstance(value, str) or not value:
                raise MalformedResponse(
                    f"GET {path}: malformed answer from the API server: no metadata.{key}"
                )
        kind = CHECKED_KINDS.get(path.rstrip("/").split("/")[-2])
        if kind is not None:
            dumpschema.take_live([{**doc, "kind": kind}])
        return doc

    def get_bytes(self, path: str, query: dict[str, Any] | None = None, accept: str = "") -> bytes:
        """One GET returning the raw 2xx body (for bulk lists decoded by `decode_json`): the
        same retries, time bounds and error mapping as `request`."""
        return self._send(
            "GET", path, query, None, "application/json", accept or "application/json"
        )

    def get_json(self, path: str, query: dict[str, Any] | None = None, accept: str = "") -> Obj:
        """GET and decode (orjson when installed); a body that is not a JSON object of the
        expected shape is a MalformedResponse (exit 14; a gap for optional reads)."""
        return _decode(self.get_bytes(path, query, accept), f"GET {path}", decode_json)

    def server_version(self) -> str:
        return str(self.get("/version").get("gitVersion", ""))

    # --- mutations (used by remediate/ only: mutations.py, nodepatch.py, lock.py) ---

    def delete(
        self,
        path: str,
        grace_seconds: int | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
    ) -> Obj:
        body: Obj = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if grace_seconds is not None:
            body["gracePeriodSeconds"] = grace_seconds
        if uid or resource_version:
            body["preconditions"] = {
                k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v
            }
        return self.request("DELETE", path, body=body)

    def json_patch(self, path: str, ops: list[Obj]) -> Obj:
        return self.request("PATCH", path, body=ops, content_type="application/json-patch+json")

    def create(self, path: str, obj: Obj) -> Obj:
        return self.request("POST", path, body=obj)

    def close(self) -> None:
        self._conn.close()

    def hang_up(self) -> None:
        """Every kept-open connection closed (the next request opens its own): after minutes
        idle, a NAT or a firewall may have dropped them without a word, and a request sent on
        one would wait for an answer that never comes. Credentials are kept."""
        self._pool.clear()


def _quiet_insecure_warning() -> None:
    """insecure-skip-tls-verify is the kubeconfig's choice, and kubectl says nothing of it:
    urllib3's InsecureRequestWarning (two lines, a library path) is not printed."""
    import warnings

    import urllib3

    warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)


def _without_password(url: str) -> str:
    """A proxy URL as messages show it: user info dropped."""
    parts = urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def parallel(fn: Callable[[T], R], args: Iterable[T]) -> Iterator[R]:
    """Run fn over args on a small thread pool (per-node and per-owner requests)."""
    items = list(args)
    if len(items) <= 1:
        yield from map(fn, items)
        return
    with thread_pool(min(WORKERS, len(items))) as pool:
        yield from pool.map(fn, items)


@contextmanager
def thread_pool(workers: int) -> Iterator[ThreadPoolExecutor]:
    """A thread pool for requests that, on Ctrl-C, drops what has not started and does not
    wait for the requests in flight (a plain `with ThreadPoolExecutor` would hold the Ctrl-C
    up to --request-timeout). Any other ending waits for every request, as before."""
    pool = ThreadPoolExecutor(max_workers=workers)
    interrupted = False
    try:
        yield pool
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        pool.shutdown(wait=not interrupted, cancel_futures=interrupted)
