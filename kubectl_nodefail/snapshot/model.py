"""One plain-data picture of the cluster, built live (see gather.py) or loaded from a dump file.

Objects stay the raw JSON dicts the API server sent: nothing is deserialised into client models,
which keeps big clusters fast and makes a dump file exactly what the analysis sees.

A dump file is a JSON object `{"kind": "NodefailDump", "capturedAt": ..., "items": [...]}`.
Plain `kubectl get nodes,pods,... -A -o json` output (a `List`) is accepted as well.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import cached_property, lru_cache
from typing import Any, TypeVar

from kubectl_nodefail.common.errors import BadInputError, NameNotFound, closest
from kubectl_nodefail.snapshot import dumpschema, jsonstream, kinds

UTC = timezone.utc
Obj = dict[str, Any]
T = TypeVar("T")
DUMP_KIND = "NodefailDump"
DUMP_API_VERSION = "kubectl-nodefail/v1"
# A kubectl List's gap: it does not say which kinds and namespaces were listed
OWNERS_UNLISTED = (
    "owners not in the kubectl List: unknown whether they exist (a List does not say what was "
    "listed), so none is taken as deleted"
)
# Kinds of remediation automation objects (analysis/automation/; their apiVersion's group is
# checked there): a Machine is not an owner of pods.
AUTOMATION_KINDS = ("Machine", "MachineHealthCheck", "NodeHealthCheck", "NodeClaim")
MAX_DUMP_BYTES = 1 << 30  # 1 GiB of JSON (a 60,000-pod dump is 0.2-0.3 GiB)


def minor_of(version: str | None) -> int | None:
    """The minor of a Kubernetes version string (v1.36.1 -> 36), None when it is not one."""
    match = re.match(r"v?1\.(\d+)", version or "")
    return int(match.group(1)) if match else None


def parse_time(value: str | None) -> datetime | None:
    """Parse an RFC 3339 timestamp as the API server writes it (zone required, optional
    fraction); None when absent. Dumps are checked by dumpschema before analysis reads them."""
    if not value:
        return None
    return dumpschema.parse_rfc3339(value)


def shifted(when: datetime, seconds: float) -> datetime:
    """`when` + `seconds`, saturating at the calendar's ends: a toleration or grace period of
    2^62 seconds (valid int64s in the API) means 'forever', not an OverflowError."""
    try:
        return when + timedelta(seconds=seconds)
    except OverflowError:
        return (datetime.max if seconds > 0 else datetime.min).replace(tzinfo=UTC)


@lru_cache(maxsize=1 << 16)
def format_time(value: datetime) -> str:
    """RFC 3339 in UTC, to the second. Remembered: an outage's report writes the same few
    instants tens of thousands of times. Equal datetimes share an entry: the same instant in
    UTC or a fixed offset, all this program makes (two `fold`s of one local time in a
    ZoneInfo zone compare equal but are not the same instant: none is ever made here)."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Snapshot:
    """The cluster at one moment, as plain dicts. `gaps` names what could not be read."""

    captured_at: datetime
    server_version: str | None = None
    source: str = ""
    nodes: list[Obj] = field(default_factory=list)
    leases: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    owners: list[Obj] = field(default_factory=list)
    volume_attachments: list[Obj] = field(default_factory=list)
    pvcs: list[Obj] = field(default_factory=list)
    pvs: list[Obj] = field(default_factory=list)
    events: list[Obj] = field(default_factory=list)
    # remediation automation: Cluster API Machines and MachineHealthChecks, NodeHealthChecks
    automation: list[Obj] = field(default_factory=list)
    gaps: list[str] = field(default_factory=list)
    # Free-form provenance, e.g. which scenario and moment a recorded fixture shows.
    notes: dict[str, Any] = field(default_factory=dict)
    # when the objects were read, where `captured_at` has been moved on since (`diagnose
    # --watch` shows the diagnosis again as time passes): a Lease's state is judged then
    read_at: datetime | None = None
    _memo: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    # --- look-ups the analysis uses (indexes built once; snapshots are not mutated) ---

    def __copy__(self) -> Snapshot:
        """A shallow copy with indexes of its own (made when first used): a copy whose lists
        are then replaced must not share, nor clear, the original's."""
        new = object.__new__(type(self))
        new.__dict__.update((k, v) for k, v in self.__dict__.items() if k not in _CACHED)
        new.__dict__["_memo"] = {}
        return new

    def __setattr__(self, name: str, value: Any) -> None:
        """A list given a new value (a test reorders the pods, `cli.live.checked` cuts a live
        snapshot) drops the indexes built from the old one."""
        super().__setattr__(name, value)
        if name in _INDEXED:
            for key in _CACHED:
                self.__dict__.pop(key, None)
            self.__dict__.get("_memo", {}).clear()

    @cached_property
    def server_minor(self) -> int | None:
        """The server's Kubernetes minor (36 for v1.36.1), None when unknown."""
        return minor_of(self.server_version)

    @cached_property
    def _nodes(self) -> dict[str, Obj]:
        return {n["metadata"]["name"]: n for n in self.nodes}

    @cached_property
    def _leases(self) -> dict[str, Obj]:
        return {
            x["metadata"]["name"]: x
            for x in self.leases
            if x["metadata"].get("namespace") == "kube-node-lease"
        }

    @cached_property
    def _owners(self) -> dict[tuple[str, str, str], Obj]:
        return {
            (
                kinds.owner_key(o.get("kind", ""), o.get("apiVersion")),
                o["metadata"].get("namespace", ""),
                o["metadata"]["name"],
            ): o
            for o in self.owners
        }

    @cached_property
    def _pods(self) -> dict[tuple[str, str], Obj]:
        return {(p["metadata"].get("namespace", ""), p["metadata"]["name"]): p for p in self.pods}

    @cached_property
    def _pods_by_owner(self) -> dict[str, list[Obj]]:
        table: dict[str, list[Obj]] = {}
        for pod in self.pods:
            for ref in pod["metadata"].get("ownerReferences") or []:
                table.setdefault(ref.get("uid", ""), []).append(pod)
        return table

    @cached_property
    def _pvcs(self) -> dict[tuple[str, str], Obj]:
        return {(o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in self.pvcs}

    @cached_property
    def _pvs(self) -> dict[str, Obj]:
        return {o["metadata"]["name"]: o for o in self.pvs}

    def node(self, name: str) -> Obj | None:
        return self._nodes.get(name)

    def lease(self, node_name: str) -> Obj | None:
        return self._leases.get(node_name)

    def owner(
        self, kind: str, namespace: str, name: str, api_version: str | None = None
    ) -> Obj | None:
        """The owner object a reference names: by kind, apiVersion group (an OpenKruise
        StatefulSet is not an apps/v1 one), namespace and name."""
        return self._owners.get((kinds.owner_key(kind, api_version), namespace, name))

    def pod(self, namespace: str, name: str) -> Obj | None:
        return self._pods.get((namespace, name))

    def pods_owned_by(self, uid: str) -> list[Obj]:
        return self._pods_by_owner.get(uid, [])

    def pvc(self, namespace: str, name: str) -> Obj | None:
        return self._pvcs.get((namespace, name))

    def pv(self, name: str) -> Obj | None:
        return self._pvs.get(name)

    @cached_property
    def _events_about(self) -> dict[tuple[Any, Any, Any], list[Obj]]:
        table: dict[tuple[Any, Any, Any], list[Obj]] = {}
        for e in self.events:
            inv = e.get("involvedObject") or {}
            table.setdefault(
                (inv.get("kind"), inv.get("namespace", ""), inv.get("name")), []
            ).append(e)
        return table

    def events_about(self, kind: str, namespace: str, name: str) -> list[Obj]:
        """The events whose involvedObject is this object, in the snapshot's order."""
        return list(self._events_about.get((kind, namespace, name), []))

    # Positions in the snapshot's lists, for look-ups that must keep the snapshot's order.

    @cached_property
    def _pods_on(self) -> dict[str | None, list[int]]:
        return _positions(self.pods, lambda p: (p.get("spec") or {}).get("nodeName"))

    def pods_on(self, node: str) -> list[Obj]:
        """The pods bound to `node`, in the snapshot's order."""
        return [self.pods[i] for i in self._pods_on.get(node, [])]

    @cached_property
    def _attachments_on(self) -> dict[str | None, list[int]]:
        return _positions(
            self.volume_attachments, lambda va: (va.get("spec") or {}).get("nodeName")
        )

    @cached_property
    def _attachments_of(self) -> dict[str | None, list[int]]:
        return _positions(
            self.volume_attachments,
            lambda va: ((va.get("spec") or {}).get("source") or {}).get("persistentVolumeName"),
        )

    def attachments(self, nodes: Iterable[str] = (), pvs: Iterable[str] = ()) -> list[Obj]:
        """The VolumeAttachments on any of `nodes` or of any of the PVs `pvs` (by name), each
        once, in the snapshot's order."""
        at = {i for n in nodes for i in self._attachments_on.get(n, [])}
        at.update(i for pv in pvs for i in self._attachments_of.get(pv, []))
        return [self.volume_attachments[i] for i in sorted(at)]

    def memo(self, name: str, build: Callable[[Snapshot], T]) -> T:
        """An index an analysis module builds from this snapshot once (`build(self)`), kept
        under `name`. Snapshots are not changed once read, so it stays true."""
        if name not in self._memo:
            self._memo[name] = build(self)
        return self._memo[name]

    # --- (de)serialisation ---

    def to_dump(self) -> Obj:
        items: list[Obj] = []
        for kind, objs in (
            ("Node", self.nodes),
            ("Lease", self.leases),
            ("Pod", self.pods),
            (None, self.owners),
            ("VolumeAttachment", self.volume_attachments),
            ("PersistentVolumeClaim", self.pvcs),
            ("PersistentVolume", self.pvs),
            ("Event", self.events),
            (None, self.automation),
        ):
            for obj in objs:
                items.append(
                    obj if kind is None or obj.get("kind") == kind else {"kind": kind, **obj}
                )
        return {
            "apiVersion": DUMP_API_VERSION,
            "kind": DUMP_KIND,
            "capturedAt": self.captured_at.astimezone(UTC).isoformat().replace("+00:00", "Z"),
            "serverVersion": self.server_version,
            "source": self.source,
            "gaps": self.gaps,
            "notes": self.notes,
            "items": items,
        }


# The snapshot's lists of objects: each indexed (a new list gets new indexes), each held to the
# dump schema when read live (cli/live.py checked).
LISTS = (
    "nodes",
    "leases",
    "pods",
    "owners",
    "volume_attachments",
    "pvcs",
    "pvs",
    "events",
    "automation",
)
_INDEXED = frozenset(LISTS)
_CACHED = [k for k, v in vars(Snapshot).items() if isinstance(v, cached_property)]


def _positions(objs: list[Obj], key: Callable[[Obj], Any]) -> dict[Any, list[int]]:
    """Where each key occurs in objs: key -> ascending positions."""
    table: dict[Any, list[int]] = {}
    for i, obj in enumerate(objs):
        table.setdefault(key(obj), []).append(i)
    return table


def require_nodes(snap: Snapshot, names: Iterable[str]) -> None:
    """Every node the user named exists here, or one NameNotFound line (with close names)."""
    known = [n["metadata"]["name"] for n in snap.nodes]
    present = set(known)
    missing = [name for name in names if name not in present]
    if not missing:
        return
    close = closest(missing[0], known)
    listed = ", ".join(f'"{m}"' for m in missing)
    raise NameNotFound(
        f"nodes {listed} not found",  # kubectl's words for it
        hint=f"did you mean {close}?" if close else f"not in {snap.source}",
    )


def one_per_name(pods: list[Obj]) -> list[Obj]:
    """One object per namespace and name. Reads made moments apart may hold a pod and the one
    its StatefulSet made again under that name after it went (audit 2050/180: the old w-0 from
    the failed node's pods, the new one from its owner's): the newer (the higher
    resourceVersion, else the later read) is the one that exists."""
    chosen: dict[tuple[Any, Any], Obj] = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        key = (meta.get("namespace"), meta.get("name"))
        old = chosen.get(key)
        if old is None or not _older(pod, old):
            chosen[key] = pod
    if len(chosen) == len(pods):
        return pods
    kept = {id(p) for p in chosen.values()}
    return [p for p in pods if id(p) in kept]


def _older(a: Obj, b: Obj) -> bool:
    """`a` was written before `b` (resourceVersions are etcd revisions: compared as numbers)."""
    ra = (a.get("metadata") or {}).get("resourceVersion")
    rb = (b.get("metadata") or {}).get("resourceVersion")
    if isinstance(ra, str) and isinstance(rb, str) and ra.isdigit() and rb.isdigit():
        return int(ra) < int(rb)
    return False


def from_items(items: Iterable[Obj], captured_at: datetime, **meta: Any) -> Snapshot:
    """Sort a flat list of objects (each with its `kind`) into a Snapshot."""
    snap = Snapshot(captured_at=captured_at, **meta)
    buckets = {
        "Node": snap.nodes,
        "Lease": snap.leases,
        "Pod": snap.pods,
        "VolumeAttachment": snap.volume_attachments,
        "PersistentVolumeClaim": snap.pvcs,
        "PersistentVolume": snap.pvs,
        "Event": snap.events,
    }
    for kind in AUTOMATION_KINDS:
        buckets[kind] = snap.automation
    for obj in items:
        kind = obj.get("kind", "")
        builtin = kind in AUTOMATION_KINDS or kinds.is_builtin(kind, obj.get("apiVersion"))
        if kind in buckets and builtin:
            buckets[kind].append(obj)
        elif kind:  # ReplicaSets, StatefulSets, Jobs, ... and any other owner kind
            snap.owners.append(obj)
    snap.pods = one_per_name(snap.pods)
    return snap


def _read_json(path: str) -> Any:
    """The parsed file, or one BadInputError line (missing, too big, not JSON, too deep).

    Parsed item by item (jsonstream), each item checked and cut to what the analysis reads
    (dumpschema.take_item) as soon as it is read: neither the file's text nor the parts of the
    objects the analysis never reads are ever held whole."""
    try:
        size = os.stat(path).st_size
        if size > MAX_DUMP_BYTES:
            raise BadInputError(
                f"dump file {path} is {size / (1 << 20):,.0f} MiB, more than the "
                f"{MAX_DUMP_BYTES >> 20:,} MiB this tool reads",
                hint="dump fewer nodes or namespaces: `kubectl nodefail dump NODE... -n NS`",
            )
        with open(path, encoding="utf-8") as fh:
            return jsonstream.load(fh, on_item=dumpschema.take_item)
    except FileNotFoundError as exc:
        raise BadInputError(f"dump file not found: {path}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInputError(f"cannot read dump file {path}: {exc}") from exc
    except jsonstream.JsonError as exc:
        raise BadInputError(
            f"dump file {path} is not valid JSON (line {exc.lineno}, column {exc.colno})",
            hint="write one with `kubectl nodefail dump` or `kubectl get nodes,pods -A -o json`",
        ) from exc
    except RecursionError as exc:  # the parser's stack bounds the depth; no object nests so
        raise BadInputError(f"dump file {path} is nested too deeply to be Kubernetes JSON") from exc
    except ValueError as exc:  # e.g. a number too long to convert
        raise BadInputError(f"dump file {path} is not usable JSON: {exc}") from exc


def load_dump(path: str) -> Snapshot:
    """Load a dump written by `kubectl nodefail dump`, or `kubectl get ... -o json` output.

    The content is checked against dumpschema before anything reads it: a wrong type anywhere
    the analysis looks is exit 13 with the object and field named, never a crash later.
    """
    doc = _read_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
        raise BadInputError(
            f"dump file {path} has no 'items' list",
            hint="expected `kubectl nodefail dump` output or a kubectl List",
        )
    meta: dict[str, Any] = {"source": path}
    if doc.get("kind") == DUMP_KIND:
        if not doc.get("capturedAt"):
            raise BadInputError(f"dump file {path} has no valid capturedAt time")
        dumpschema.check_envelope(doc, dumpschema.DUMP, path)
        captured = parse_time(doc["capturedAt"])
        assert captured is not None  # checked by the schema
        meta.update(
            server_version=doc.get("serverVersion"),
            gaps=list(doc.get("gaps") or []),
            notes=dict(doc.get("notes") or {}),
        )
    elif doc.get("kind") == "List":
        dumpschema.check_envelope(doc, dumpschema.LIST, path)
        # kubectl output carries no capture time: the file's modification time is the best guess.
        captured = datetime.fromtimestamp(os.path.getmtime(path), tz=UTC)
        meta["gaps"] = [
            "capture time unknown (kubectl List): using the file's modification time",
            # which kinds and namespaces were listed, a List does not say: an owner absent from
            # it may exist (analysis/controllers/overrides.owner_gone reads this gap)
            OWNERS_UNLISTED,
        ]
    else:
        kind = doc.get("kind")
        raise BadInputError(
            f"dump file {path} is of kind {kind if isinstance(kind, str) else None!r}, "
            "not a dump or List"
        )
    dumpschema.check_items(doc["items"])
    snap = from_items(doc["items"], captured, **meta)
    if not snap.nodes and not snap.pods:
        raise BadInputError(f"dump file {path} holds no nodes and no pods")
    return snap
