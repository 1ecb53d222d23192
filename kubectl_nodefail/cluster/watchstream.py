"""Watches for `diagnose --watch` (issue 37): one long-lived GET ?watch=1 per resource, read as
the API server streams it, as kubectl get -w and client-go's reflector read theirs.

Each `Watcher` is a thread that keeps its resource watched from a resourceVersion: first from
a one-item list (the collection's current version, a few hundred bytes), then from the last
event or bookmark it read. A stream the server ends (timeoutSeconds: 5-10 minutes, drawn as
client-go draws it, so that the watches of many clients do not come back together) is opened
again from there; a `410 Gone` (that version is no longer kept) or a broken stream lists the
resource again, that resource only, and says so: events may have been missed. A resource
watched `whole` (the Events the diagnosis reads) is listed whole instead, its objects' versions
kept from the list and the events, so that listing again says what differs (as client-go's
informers do), not that anything may have: the API server keeps no watch cache for Events, so
their watches get no bookmarks, and a quiet one's version is compacted away by etcd within
minutes (every 5-10 minutes, a 410). What a watcher
reads goes, as `Change`s, into the queue its owner drains (watch/follow.py decides what a
change means for the diagnosis on the screen).

Rows are read small: Nodes as Table rows without their objects (~300 bytes, where a Node with
its images is ~10 KB and a 5,000-node cluster's kubelets update theirs ~1,000 times a minute),
Pods as Table rows with their metadata, owners as metadata only, VolumeAttachments, Events
(filtered by the server) and kube-controller-manager's Lease (one, named by the server's field
selector) whole. Every stream is counted in the request budget (-v) as `watch
RESOURCE`, with the bytes it carried.
"""

from __future__ import annotations

import contextlib
import queue
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from kubectl_nodefail.cluster.kube import Cluster
from kubectl_nodefail.cluster.paging import METADATA_ONLY, TABLE
from kubectl_nodefail.common import jsondecode
from kubectl_nodefail.common.errors import (
    ApiError,
    Forbidden,
    MalformedResponse,
    NodefailError,
    NotFound,
)
from kubectl_nodefail.snapshot.model import Obj

WATCH_MIN_SECONDS = 300  # client-go's reflector: minWatchTimeout, times 1 + rand
# A quiet watch may carry nothing until the server ends it (bookmarks come only from its watch
# cache, and not for every resource): the read waits that long and a little more. A connection
# that died silently meanwhile is found by the follower's probe (follow.PROBE_SECONDS).
IDLE_SLACK = 30
BACKOFF_MAX = 30.0
SHORT_SECONDS = 1.0  # a watch that ended sooner is paced as a failure
MAX_LINE = 16 << 20  # one event: a Pod's metadata row is a few KB; past this the stream is bad
OBJECT_ROW = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"


@dataclass(frozen=True)
class Resource:
    """A watched collection: its path, how its items are asked for, and the query (a field
    selector) that narrows it."""

    name: str  # as the budget and the follower name it: nodes, pods, replicasets.apps, ...
    path: str
    accept: str = "application/json"
    query: dict[str, str] = field(default_factory=dict)
    # listed whole (its objects' Rows kept): a list again yields its differences, not `expired`.
    # For small collections of whole objects whose quiet watches go stale (Events); read as
    # JSON objects (`accept` is for the stream), so no Table cells.
    whole: bool = False


def table(name: str, path: str, include: str) -> Resource:
    return Resource(name, path, TABLE, {"includeObject": include})


def metadata(name: str, path: str) -> Resource:
    return Resource(name, path, OBJECT_ROW)


@dataclass(frozen=True)
class Row:
    """An object as a watch carried it, held to the few fields the follower reads (any other
    shape reads as those fields empty: what the server sends is checked here, once)."""

    name: str = ""
    namespace: str = ""
    uid: str = ""  # not in a Node's Table row (no object asked for)
    version: str = ""  # resourceVersion
    deletion: str = ""  # deletionTimestamp
    owners: tuple[str, ...] = ()  # ownerReferences' uids
    status: str = ""  # a Table row's STATUS cell (Node: Ready, NotReady, ...; Pod: Terminating)
    node: str = ""  # a Pod row's NODE cell; a VolumeAttachment's spec.nodeName
    involved: tuple[str, str] = ("", "")  # an Event's involvedObject kind and name
    reason: str = ""  # an Event's reason
    acquired: str = ""  # a Lease's spec.acquireTime
    renewed: str = ""  # a Lease's spec.renewTime
    lasts: int = 0  # a Lease's spec.leaseDurationSeconds


@dataclass(frozen=True)
class Change:
    """One thing a watch said: kind ADDED, MODIFIED or DELETED of `row`; or, with no row,
    `expired` (the watch had to list again: events in between may be lost), `broken` (it
    cannot reach the server; `error` says why), `refused` (403 or 404: it stopped) or
    `relisted` (a `whole` resource listed again, its differences said: what it held was whole
    until `since`, time.monotonic(); a read made after that may have seen what came between,
    which no difference says when it came and went before the list)."""

    resource: str
    kind: str
    row: Row = field(default_factory=Row)
    error: NodefailError | None = None
    since: float = 0.0


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _obj(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def row_of(obj: Obj, columns: list[str]) -> Row | None:
    """An event's object as the follower reads it: a Table's first row (its cells by column
    name, its object's metadata when asked for) or a whole object. None: no object."""
    cells: dict[str, str] = {}
    if obj.get("kind") == "Table":
        rows = obj.get("rows")
        first = rows[0] if isinstance(rows, list) and rows else None
        if not isinstance(first, dict):
            return None
        raw = first.get("cells")
        if isinstance(raw, list):
            cells = {c: _text(v) for c, v in zip(columns, raw)}
        meta = _obj(_obj(first.get("object")).get("metadata"))
        version = _text(meta.get("resourceVersion")) or _text(
            _obj(obj.get("metadata")).get("resourceVersion")
        )
    elif isinstance(obj.get("metadata"), dict):
        meta = obj["metadata"]
        version = _text(meta.get("resourceVersion"))
    else:
        return None
    refs = meta.get("ownerReferences")
    involved = _obj(obj.get("involvedObject"))
    spec = _obj(obj.get("spec"))
    lasts = spec.get("leaseDurationSeconds")
    return Row(
        name=_text(meta.get("name")) or cells.get("Name", ""),
        namespace=_text(meta.get("namespace")),
        uid=_text(meta.get("uid")),
        version=version,
        deletion=_text(meta.get("deletionTimestamp")),
        owners=tuple(_text(_obj(r).get("uid")) for r in refs if _obj(r).get("uid"))
        if isinstance(refs, list)
        else (),
        status=cells.get("Status", ""),
        node=cells.get("Node", "") or _text(_obj(obj.get("spec")).get("nodeName")),
        involved=(_text(involved.get("kind")), _text(involved.get("name"))),
        reason=_text(obj.get("reason")),
        acquired=_text(spec.get("acquireTime")),
        renewed=_text(spec.get("renewTime")),
        lasts=lasts if isinstance(lasts, int) and not isinstance(lasts, bool) else 0,
    )


class Watcher(threading.Thread):
    """One resource kept watched until `stop`; its changes put on `out`."""

    def __init__(self, cluster: Cluster, resource: Resource, out: queue.Queue[Change]) -> None:
        super().__init__(name=f"watch {resource.name}", daemon=True)
        self.cluster, self.resource, self.out = cluster, resource, out
        self.version = ""
        self.primes = 0  # lists made to start from (each a new start: events before it unseen)
        self.columns: list[str] = []
        # a `whole` resource's objects by uid, as the list and the events since left them (None:
        # not known, the next list is a new start), and until when they held every change
        # (time.monotonic(): the list, or the end of the stream that followed it)
        self.items: dict[str, Row] | None = None
        self.held = 0.0
        self.stopping = threading.Event()
        self._resp: Any = None

    def prime(self) -> None:
        """The collection's current resourceVersion, from a one-item list (a `whole`
        resource: from a list of it all, its objects kept): the watch starts there, so that
        nothing after it is missed (a read made after this is newer)."""
        if self.resource.whole:
            query: dict[str, Any] = dict(self.resource.query)
            objs, version = self.cluster.list_versioned(self.resource.path, "", **query)
            rows = [row_of(obj, []) for obj in objs]
            self.items = {r.uid: r for r in rows if r is not None and r.uid}
            if len(self.items) != len(objs):  # one it cannot tell apart: no differences
                self.items = None
            self.held = time.monotonic()
        else:
            page = self.cluster.get_json(
                self.resource.path, {**self.resource.query, "limit": 1}, METADATA_ONLY
            )
            version = str((page.get("metadata") or {}).get("resourceVersion") or "")
        self.primes += 1  # before the version: a new version never shows with the old count
        self.version = version

    def _start_over(self) -> None:
        """Listed again (its version was too old, or its stream broke): a `whole` resource's
        differences from what it had go on the queue as changes; otherwise `expired`."""
        before, held = self.items, self.held
        self.prime()
        after = self.items
        if before is None or after is None:
            self.out.put(Change(self.resource.name, "expired"))
            return
        name = self.resource.name
        self.out.put(Change(name, "relisted", since=held))
        for uid, row in after.items():
            was = before.get(uid)
            if was is None or was.version != row.version:
                self.out.put(Change(name, "ADDED" if was is None else "MODIFIED", row))
        for uid, row in before.items():
            if uid not in after:
                self.out.put(Change(name, "DELETED", row))

    def stop(self) -> None:
        self.stopping.set()
        self.cut()

    def cut(self) -> None:
        """The stream in progress ended now (a connection that may have died silently): the
        watcher lists again and watches from there."""
        resp = self._resp
        if resp is not None:
            with contextlib.suppress(Exception):  # already closed
                resp.shutdown()  # a read blocked on the socket returns now

    def run(self) -> None:
        failures = 0
        while not self.stopping.is_set():
            started = time.monotonic()
            try:
                if not self.version:
                    self._start_over()
                self._stream()
                failures = 0
                if time.monotonic() - started < SHORT_SECONDS:  # a server (or a proxy) that
                    failures = self._pace(failures)  # ends every watch at once: not a hot loop
            except ApiError as exc:
                if exc.status == 410:  # too old: list again, from now
                    self.version = ""
                    failures = self._pace(failures)
                    continue
                failures = self._failed(exc, failures)
            except NodefailError as exc:
                failures = self._failed(exc, failures)
            except Exception as exc:  # a stream cut in any way (bad JSON too): open it again
                failures = self._failed(
                    NodefailError(f"watch {self.resource.name}: {exc}"), failures
                )

    def _failed(self, exc: NodefailError, failures: int) -> int:
        if self.stopping.is_set():
            return failures
        self.version = ""  # events may have been lost while it was down: list again
        self.out.put(Change(self.resource.name, "broken", error=exc))
        return self._pace(failures)

    def _pace(self, failures: int) -> int:
        """The wait before the next try: doubled per failure in a row (with jitter), at most
        BACKOFF_MAX; the first one short."""
        self.stopping.wait(min(BACKOFF_MAX, 0.5 * 2.0**failures) * random.uniform(0.5, 1.0))
        return failures + 1

    def _stream(self) -> None:
        """One watch, from self.version to its end."""
        seconds = int(WATCH_MIN_SECONDS * (1 + random.random()))
        query = {
            **self.resource.query,
            "resourceVersion": self.version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(seconds),
        }
        try:
            resp = self.cluster.open_watch(
                self.resource.path, query, self.resource.accept, seconds + IDLE_SLACK
            )
        except (Forbidden, NotFound) as exc:  # listed, but not watched: RBAC without `watch`
            self.stopping.set()  # first: a drain that takes the change sees it stopped
            self.out.put(Change(self.resource.name, "refused", error=exc))
            return
        self._resp, started, carried = resp, time.monotonic(), 0
        try:
            pending = b""
            for chunk in resp.stream(64 << 10, decode_content=True):
                carried += len(chunk)
                pending += chunk
                if len(pending) > MAX_LINE:
                    raise NodefailError(f"watch {self.resource.name}: an event over 16 MiB")
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        self._event(jsondecode.loads(line))
                if self.stopping.is_set():
                    return
        finally:
            self._resp = None
            self.held = time.monotonic()  # every event it carried is in `items`
            resp.release_conn()
            Cluster.budget.record(
                "WATCH", self.resource.path, carried, time.monotonic() - started, resp.status
            )

    def _event(self, event: Any) -> None:
        """One line of the stream, decoded: a change put on the queue, a bookmark's version
        kept; an ERROR raised (410: list again); anything else malformed (the stream is then
        opened again)."""
        if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
            raise MalformedResponse(f"watch {self.resource.name}: an event that is not one")
        kind, obj = event.get("type"), event["object"]
        if kind == "ERROR":
            code = obj.get("code")
            raise ApiError(
                f"watch {self.resource.name}: {obj.get('message') or obj.get('reason')}",
                status=code if isinstance(code, int) else None,
            )
        heads = obj.get("columnDefinitions")
        if obj.get("kind") == "Table" and isinstance(heads, list) and heads:
            self.columns = [_text(_obj(c).get("name")) for c in heads]
        version = _text(_obj(obj.get("metadata")).get("resourceVersion"))
        if version:
            self.version = version
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            # an object it cannot read still goes on (a row with nothing: whatever the
            # follower keeps from its reads is dropped, it names no object to read again for)
            row = row_of(obj, self.columns)
            self._keep(str(kind), row)
            self.out.put(Change(self.resource.name, str(kind), row or Row()))

    def _keep(self, kind: str, row: Row | None) -> None:
        """A `whole` resource's kept objects, as the event leaves them (one it cannot tell
        apart: not known any more)."""
        if self.items is None:
            return
        if row is None or not row.uid:
            self.items = None
        elif kind == "DELETED":
            self.items.pop(row.uid, None)
        else:
            self.items[row.uid] = row
