"""The only module that talks to the API server, and the only one importing `kubernetes`.

It loads the kubeconfig the way kubectl does (file, context, exec plugins), then sends plain
HTTP requests and returns raw JSON dicts: bulk lists are never deserialised into client models
(20,000 pods: 5.0 s through the models vs 0.7 s with json.loads, measured). Every failure is
mapped onto the tool's own errors (errors.py) with a one-line message.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

from kubectl_nodefail.errors import (
    ApiError,
    AuthError,
    ConfigError,
    Conflict,
    Forbidden,
    NotFound,
    UnreachableError,
)

Obj = dict[str, Any]
T = TypeVar("T")
R = TypeVar("R")
PAGE_SIZE = 500
WORKERS = 8
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
# A server-side Table (the columns `kubectl get` prints) with rows only, no objects: ~150 bytes a
# pod instead of ~5 KB of PartialObjectMetadata (managedFields, labels, annotations).
TABLE = "application/json;as=Table;g=meta.k8s.io;v=v1,application/json"
# Bigger pages for the two scans every diagnosis makes: each page costs the API server a fixed
# ~0.1 s on top (5,000 nodes: 1.3-1.9 s in pages of 500, 0.7 s in pages of 2,000, measured).
NODE_PAGE_SIZE = 2000
TABLE_PAGE_SIZE = 10000  # rows are small: fewer round trips, bounded server memory
# A list that breaks mid-way (410 Gone: the continue token expired; the API server restarting)
# is read again from the start, once.
LIST_RETRIES = 1
RETRIED_STATUSES = {410, 500, 502, 503, 504}

try:  # optional: a faster decoder (pip install kubectl-nodefail[fast]); json is the fallback
    import orjson as _orjson

    def decode_json(data: bytes) -> Any:
        """Decode a JSON body (orjson when installed, else json)."""
        return _orjson.loads(data)

except ImportError:  # pragma: no cover - exercised when orjson is absent

    def decode_json(data: bytes) -> Any:
        """Decode a JSON body (orjson when installed, else json)."""
        return json.loads(data)


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
Keep = Callable[[Obj], "Obj | None"]


def trim(obj: Obj) -> Obj:
    """Drop what no analysis reads and what weighs most: managedFields (often half an object's
    JSON), kubectl's last-applied copy of the object, and a node's image list. Trimmed objects
    stay valid Kubernetes JSON."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            annotations.pop(LAST_APPLIED, None)
    status = obj.get("status")
    if isinstance(status, dict) and obj.get("kind") == "Node":
        status.pop("images", None)
    return obj


def _kubeconfig_paths(explicit: str | None) -> list[str]:
    if explicit:
        return [explicit]
    env = os.environ.get("KUBECONFIG")
    if env:
        return [p for p in env.split(os.pathsep) if p]
    return [os.path.expanduser("~/.kube/config")]


class Cluster:
    """A connection to one API server, chosen by kubeconfig and context."""

    # Counted by get_bytes (the bulk reads), for the benchmark and -v.
    requests = 0
    bytes_read = 0
    _stats_lock = threading.Lock()

    def __init__(
        self, kubeconfig: str | None = None, context: str | None = None, timeout: float = 30.0
    ) -> None:
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException

        paths = _kubeconfig_paths(kubeconfig)
        existing = [p for p in paths if os.path.exists(p)]
        if not existing:
            raise ConfigError(
                f"no kubeconfig found at {', '.join(paths)}",
                hint="pass --kubeconfig, set KUBECONFIG, or use --from-file to read a dump",
            )
        cfg = client.Configuration()
        try:
            contexts, current = config.list_kube_config_contexts(existing[0])
            names = [c["name"] for c in contexts or []]
            if context and context not in names:
                raise ConfigError(
                    f"context {context!r} not found in {existing[0]}",
                    hint=f"known contexts: {', '.join(names) or 'none'}",
                )
            config.load_kube_config(
                config_file=existing[0],
                context=context,
                client_configuration=cfg,
                persist_config=False,
            )
        except ConfigError:
            raise
        except ConfigException as exc:
            raise ConfigError(f"kubeconfig {existing[0]} is unusable: {exc}") from exc
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise ConfigError(f"kubeconfig {existing[0]} is unusable: {exc}") from exc
        cfg.connection_pool_maxsize = WORKERS * 2
        cfg.retries = 1
        self.context = context or (current or {}).get("name", "")
        self.host = cfg.host
        self.timeout = timeout
        self._api = client.ApiClient(cfg)
        from kubectl_nodefail import __version__

        self._api.user_agent = f"kubectl-nodefail/{__version__}"
        from kubernetes.client import rest

        self._api_exception = rest.ApiException

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
        """Send one request; return the decoded JSON body. Errors become NodefailErrors."""
        import urllib3

        query = {k: v for k, v in (query or {}).items() if v is not None}
        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type
        url_path = path + ("?" + urlencode(query) if query else "")
        try:
            req = self._api.param_serialize(
                method=method,
                resource_path=url_path,
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            resp = self._api.call_api(*req, _request_timeout=(min(self.timeout, 10), self.timeout))
            resp.read()
        except self._api_exception as exc:
            raise self._api_error(exc.status, exc.body, method, path) from exc
        except (
            urllib3.exceptions.MaxRetryError,
            urllib3.exceptions.TimeoutError,
            urllib3.exceptions.ProtocolError,
            urllib3.exceptions.SSLError,
            ConnectionError,
            TimeoutError,
        ) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise UnreachableError(
                f"cannot reach the API server at {self.host}: {_short(reason)}",
                hint=f"context {self.context!r}; check the network, VPN, or the cluster itself",
            ) from exc
        except Exception as exc:  # exec credential plugins and token refreshers fail in many ways
            if "credential" in str(exc).lower() or "token" in str(exc).lower():
                raise AuthError(
                    f"could not get credentials for context {self.context!r}: {_short(exc)}",
                    hint="log in again",
                ) from exc
            raise
        if not 200 <= resp.status <= 299:
            raise self._api_error(resp.status, resp.data, method, path)
        try:
            data = json.loads(resp.data or b"{}")
        except ValueError as exc:
            raise ApiError(
                f"{method} {path}: the API server sent something that is not JSON"
            ) from exc
        return data if isinstance(data, dict) else {"items": data}

    def _api_error(
        self, status: int | None, body: Any, method: str, path: str
    ) -> ApiError | AuthError:
        message = ""
        try:
            message = json.loads(body).get("message", "") if body else ""
        except (ValueError, AttributeError, TypeError):
            message = str(body)[:200] if body else ""
        what = f"{method} {path}"
        if status == 401:
            return AuthError(
                f"the API server rejected the credentials of context {self.context!r} "
                "(401 Unauthorized)",
                hint="expired token or certificate? log in again",
            )
        if status == 403:
            return Forbidden(
                f"forbidden: {what}: {message}", hint="ask for the RBAC role in deploy/rbac/"
            )
        if status == 404:
            return NotFound(f"not found: {what}", status=404)
        if status == 409:
            return Conflict(f"conflict: {what}: {message}", status=409)
        return ApiError(f"{what} failed ({status}): {message}", status=status)

    def get(self, path: str, **query: Any) -> Obj:
        return self.request("GET", path, query)

    def get_bytes(self, path: str, query: dict[str, Any] | None = None, accept: str = "") -> bytes:
        """One GET returning the raw body (for bulk lists decoded by `decode_json`).
        Errors are mapped exactly as in `request`."""
        import urllib3

        query = {k: v for k, v in (query or {}).items() if v is not None}
        url_path = path + ("?" + urlencode(query) if query else "")
        with self._stats_lock:
            self.requests += 1
        try:
            req = self._api.param_serialize(
                method="GET",
                resource_path=url_path,
                header_params={"Accept": accept or "application/json"},
                auth_settings=["BearerToken"],
            )
            resp = self._api.call_api(*req, _request_timeout=(min(self.timeout, 10), self.timeout))
            data = resp.read()
        except self._api_exception as exc:
            raise self._api_error(exc.status, exc.body, "GET", path) from exc
        except (
            urllib3.exceptions.MaxRetryError,
            urllib3.exceptions.TimeoutError,
            urllib3.exceptions.ProtocolError,
            urllib3.exceptions.SSLError,
            ConnectionError,
            TimeoutError,
        ) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise UnreachableError(
                f"cannot reach the API server at {self.host}: {_short(reason)}",
                hint=f"context {self.context!r}; check the network, VPN, or the cluster itself",
            ) from exc
        if not 200 <= resp.status <= 299:
            raise self._api_error(resp.status, data, "GET", path)
        with self._stats_lock:
            self.bytes_read += len(data or b"")
        return data or b"{}"

    def get_json(self, path: str, query: dict[str, Any] | None = None, accept: str = "") -> Obj:
        """GET and decode (orjson when installed); a body that is not a JSON object is an
        ApiError."""
        data = self.get_bytes(path, query, accept)
        try:
            doc = decode_json(data)
        except ValueError as exc:
            raise ApiError(f"GET {path}: the API server sent something that is not JSON") from exc
        if not isinstance(doc, dict):
            raise ApiError(f"GET {path}: the API server sent something that is not an object")
        return doc

    def list_pages(
        self, path: str, accept: str = "", limit: int = PAGE_SIZE, **query: Any
    ) -> Iterator[Obj]:
        """The pages of one list, in order (each a decoded list or Table document)."""
        cont: str | None = None
        while True:
            page = self.get_json(path, {**query, "limit": limit, "continue": cont}, accept)
            yield page
            cont = (page.get("metadata") or {}).get("continue")
            if not cont:
                return

    def _read_list(self, read: Callable[[list[int]], T]) -> T:
        """Run one whole paginated read; if it breaks after its first page (410 Gone on an
        expired continue token, the API server restarting), run it again from the start once.
        A second failure raises the error with `mid_list = True` set on it."""
        attempt = 0
        while True:
            progress = [0]
            try:
                return read(progress)  # read counts the pages it got in progress[0]
            except (ApiError, UnreachableError) as exc:
                status = getattr(exc, "status", None)
                retriable = isinstance(exc, UnreachableError) or status in RETRIED_STATUSES
                if not retriable or progress[0] == 0:
                    raise
                if attempt >= LIST_RETRIES:
                    setattr(exc, "mid_list", True)  # noqa: B010 (read by gather's optional reads)
                    raise
                attempt += 1

    def list_all(
        self,
        path: str,
        kind: str,
        accept: str = "application/json",
        keep: Keep | None = None,
        limit: int = PAGE_SIZE,
        **query: Any,
    ) -> list[Obj]:
        """All items of a list, page by page; each item gets its `kind` (lists omit it) and is
        trimmed (see `trim`) as its page arrives. `keep` may drop items (return None) or
        slim them, so memory follows what is kept, not the list. Retried as `_read_list` says."""

        def read(pages: list[int]) -> list[Obj]:
            items: list[Obj] = []
            for page in self.list_pages(path, accept, limit, **query):
                pages[0] += 1
                for item in page.get("items") or []:
                    if not isinstance(item, dict):
                        continue
                    item.setdefault("kind", kind)
                    kept = keep(trim(item)) if keep else trim(item)
                    if kept is not None:
                        items.append(kept)
            return items

        return self._read_list(read)

    def list_metadata(self, path: str, keep: Keep | None = None, **query: Any) -> list[Obj]:
        """A cheap list: metadata only (PartialObjectMetadataList)."""
        return self.list_all(
            path, "PartialObjectMetadata", accept=METADATA_ONLY, keep=keep, **query
        )

    def list_table(
        self,
        path: str,
        keep: Callable[[list[str], list[Any]], bool] | None = None,
        **query: Any,
    ) -> tuple[list[str], list[list[Any]]]:
        """A server-side Table without objects: (column names, rows of cells), the rows
        filtered by keep(columns, cells) as pages arrive. The cheapest way to scan a big
        collection (~150 bytes a pod); rows carry no namespace. Retried as `_read_list` says."""

        def read(pages: list[int]) -> tuple[list[str], list[list[Any]]]:
            columns: list[str] = []
            rows: list[list[Any]] = []
            for page in self.list_pages(
                path, TABLE, TABLE_PAGE_SIZE, includeObject="None", **query
            ):
                pages[0] += 1
                if not columns:
                    columns = [str(c.get("name", "")) for c in page.get("columnDefinitions") or []]
                for row in page.get("rows") or []:
                    cells = row.get("cells") if isinstance(row, dict) else None
                    if isinstance(cells, list) and (keep is None or keep(columns, cells)):
                        rows.append(cells)
            return columns, rows

        return self._read_list(read)

    def server_version(self) -> str:
        return str(self.get("/version").get("gitVersion", ""))

    # --- mutations (used by actions.py only) ---

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
        self._api.close()


def _short(exc: object) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]


def pod_path(namespace: str, name: str = "") -> str:
    base = f"/api/v1/namespaces/{quote(namespace)}/pods"
    return f"{base}/{quote(name)}" if name else base


def node_path(name: str = "") -> str:
    return f"/api/v1/nodes/{quote(name)}" if name else "/api/v1/nodes"


OWNER_PATHS = {
    "ReplicaSet": "/apis/apps/v1/namespaces/{ns}/replicasets/{name}",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments/{name}",
    "StatefulSet": "/apis/apps/v1/namespaces/{ns}/statefulsets/{name}",
    "DaemonSet": "/apis/apps/v1/namespaces/{ns}/daemonsets/{name}",
    "Job": "/apis/batch/v1/namespaces/{ns}/jobs/{name}",
    "CronJob": "/apis/batch/v1/namespaces/{ns}/cronjobs/{name}",
    "ReplicationController": "/api/v1/namespaces/{ns}/replicationcontrollers/{name}",
}


def owner_path(kind: str, namespace: str, name: str) -> str | None:
    template = OWNER_PATHS.get(kind)
    return template.format(ns=quote(namespace), name=quote(name)) if template else None


def parallel(fn: Callable[[T], R], args: Iterable[T]) -> Iterator[R]:
    """Run fn over args on a small thread pool (per-node and per-owner requests)."""
    items = list(args)
    if len(items) <= 1:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(max_workers=min(WORKERS, len(items))) as pool:
        yield from pool.map(fn, items)
