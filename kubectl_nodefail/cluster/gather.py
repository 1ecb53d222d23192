"""Build a Snapshot from a live cluster, reading only what the diagnosis needs.

Cost follows the affected nodes and pods, not the cluster size:
- all nodes (zone states need them), trimmed as pages arrive;
- Terminating pods found by a server-side Table scan (rows of ~150 bytes, no objects) plus a
  metadata scan of finished pods only (a deleted Succeeded/Failed pod does not print as
  Terminating), then full objects of just those;
- per examined node its lease, its pods (field selector spec.nodeName, indexed by the API
  server's cache) and its events;
- each owner once: by a label selector across namespaces where a label names it
  (pod-template-hash), else one list per kind and namespace where several are wanted, else a GET;
- sibling pods (replacements) with one label-selector list per group of owners, kept only if an
  owner of interest owns them, read as Table rows with metadata where a row can stand for the pod
  (Running and Ready on a Ready node: podrows.py; a third of the bytes), whole otherwise; claims,
  volumes and attachments of just those pods.
Independent reads run concurrently. Optional reads that are forbidden, or whose list broke twice
mid-way, become stated gaps; objects that vanish mid-scan are simply absent.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

from kubectl_nodefail.analysis import automation, facts
from kubectl_nodefail.analysis.nodes import (
    has_problem_condition,
    is_ready,
    lease_late,
    ready_condition,
    shutdown_evidence,
)
from kubectl_nodefail.analysis.pods import pinned_to
from kubectl_nodefail.analysis.storage import claim_names
from kubectl_nodefail.cluster import kube, podrows
from kubectl_nodefail.common.errors import (
    Forbidden,
    MalformedResponse,
    NodefailError,
    NotFound,
    ServerError,
    closest,
)
from kubectl_nodefail.snapshot import kinds
from kubectl_nodefail.snapshot.model import Obj, Snapshot, parse_time

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


class _Reader:
    """Optional reads: a 403, a 5xx, a malformed answer or a list that broke off twice is
    recorded as a gap, a 404 as 'vanished'."""

    def __init__(self, cluster: kube.Cluster) -> None:
        self.cluster = cluster
        self.gaps: list[str] = []

    def optional(self, what: str, fn: Callable[[], Any], default: Any) -> Any:
        try:
            return fn()
        except Forbidden:
            gap = f"{what}: forbidden, so the diagnosis goes without them"
            if gap not in self.gaps:
                self.gaps.append(gap)
            return default
        except (ServerError, MalformedResponse) as exc:
            if getattr(exc, "mid_list", False):
                failure = f"broke off twice mid-way ({exc})"
            elif exc.status is None:
                failure = "sent a malformed answer"
            else:
                failure = f"answered {exc.status}"
            gap = f"{what}: the API server {failure}, so the diagnosis goes without them"
            if gap not in self.gaps:
                self.gaps.append(gap)
            return default
        except NotFound:
            return default
        except NodefailError as exc:
            if not getattr(exc, "mid_list", False):
                raise
            gap = (
                f"{what}: the list broke off twice mid-way ({exc}), so the diagnosis goes "
                "without them"
            )
            if gap not in self.gaps:
                self.gaps.append(gap)
            return default


def _label_selector(selector: Obj | None) -> str | None:
    """matchLabels/matchExpressions -> the query string form."""
    if not selector:
        return None
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts) or None


def focus_nodes(nodes: list[Obj], requested: Collection[str]) -> list[str]:
    """Nodes worth a closer look: not Ready, shut down or out-of-service tainted, reporting a
    problem condition, or named."""
    if requested:
        return [n["metadata"]["name"] for n in nodes if n["metadata"]["name"] in requested]
    return [
        n["metadata"]["name"]
        for n in nodes
        if not is_ready(n) or shutdown_evidence(n) or has_problem_condition(n)
    ]


# Owner kinds whose pods the analysis looks through for replacements (a DaemonSet has one pod
# per node: other nodes' pods are not replacements).
SIBLING_KINDS = ("ReplicaSet", "StatefulSet", "Job", "ReplicationController")
# Pod labels naming their owner uniquely across the cluster (set by the controllers), so one
# label-selector list finds the pods (and ReplicaSets) of many owners in every namespace.
UNIQUE_LABELS = ("pod-template-hash", "batch.kubernetes.io/controller-uid", "controller-uid")
SELECTOR_CHUNK = 100  # values per `key in (...)`: keeps URLs short
MANY_NODES = 30  # examining more nodes than this: one list of leases / node events, not one each
TERMINAL = "status.phase!=Running,status.phase!=Pending,status.phase!=Unknown"
NODE_LEASES = f"/apis/coordination.k8s.io/v1/namespaces/{facts.NODE_LEASE_NAMESPACE}/leases"


def gather(
    cluster: kube.Cluster,
    now: Callable[[], datetime] | None = None,
    only_nodes: Collection[str] = (),
    namespaces: Collection[str] = (),
    progress: Progress = _quiet,
) -> Snapshot:
    clock = now or (lambda: datetime.now(timezone.utc))
    reader = _Reader(cluster)
    progress("reading nodes; scanning pods for Terminating ones")
    with kube.thread_pool(6) as pool:
        # Independent reads overlap: the node list, the two Terminating scans, attachments,
        # events; then, once the nodes are known, the examined nodes' leases and pods while
        # the scans (which grow with the whole cluster) still run.
        f_version = pool.submit(cluster.server_version)
        f_nodes = pool.submit(cluster.list_all, kube.node_path(), "Node", limit=kube.NODE_PAGE_SIZE)
        skip_scan = bool(only_nodes)
        f_table = pool.submit(_terminating_rows, cluster, namespaces, skip_scan)
        f_finished = pool.submit(_deleted_finished, cluster, namespaces, skip_scan)
        f_attach = pool.submit(
            reader.optional,
            "volumeattachments",
            lambda: cluster.list_all(
                "/apis/storage.k8s.io/v1/volumeattachments", "VolumeAttachment"
            ),
            [],
        )
        f_events = pool.submit(
            reader.optional,
            "events",
            lambda: cluster.list_all(
                "/api/v1/events", "Event", fieldSelector="reason=FailedAttachVolume"
            ),
            [],
        )
        # Its failure is not a gap yet: the examined nodes' leases are then read one by one.
        f_all_leases = pool.submit(
            _Reader(cluster).optional,
            "node leases",
            lambda: cluster.list_all(NODE_LEASES, "Lease", keep=_lease_kept),
            None,
        )
        nodes = f_nodes.result()
        focus = focus_nodes(nodes, only_nodes)
        f_on_nodes = pool.submit(
            kube.parallel, lambda name: _pods_on(cluster, namespaces, name), focus
        )
        failed = [n["metadata"]["name"] for n in nodes if not is_ready(n)]
        f_unscheduled = pool.submit(_pinned_pending, cluster, reader, namespaces, failed)
        version = f_version.result()
        candidates = list(dict.fromkeys([*f_table.result(), *f_finished.result()]))
        attachments = f_attach.result()
        events = f_events.result()
        leases = _leases_needed(f_all_leases.result(), nodes, focus, clock(), cluster, reader)
        on_nodes = f_on_nodes.result()
    missing = set(only_nodes) - {n["metadata"]["name"] for n in nodes}
    if missing:
        reader.gaps.append(f"nodes not found: {', '.join(sorted(missing))}")
    focus_set = set(focus)
    progress(f"{len(nodes)} nodes, {len(focus)} to examine, {len(candidates)} Terminating pods")

    pods: dict[str, Obj] = {}
    for batch in on_nodes:
        for pod in batch:
            pods[pod["metadata"]["uid"]] = pod
    progress(f"{len(pods)} pods on examined nodes; reading Terminating pods elsewhere")
    for pod in _full_pods(cluster, candidates, focus_set, pods):
        pods.setdefault(pod["metadata"]["uid"], pod)
    pods.update(_waiting_for_attach(cluster, reader, events, namespaces, pods))
    for pod in f_unscheduled.result():
        pods.setdefault(pod["metadata"]["uid"], pod)

    read_whole = list(pods.values())
    owners, siblings = _owners_and_siblings(
        cluster,
        reader,
        read_whole,
        _row_rules(nodes, focus_set, leases, read_whole),
        progress,
        cluster_wide=not namespaces,
    )
    for pod in siblings:
        pods.setdefault(pod["metadata"]["uid"], pod)
    attachments = [a for a in attachments if (a.get("spec") or {}).get("nodeName") in focus_set]
    attached_pvs = {
        ((a.get("spec") or {}).get("source") or {}).get("persistentVolumeName") or ""
        for a in attachments
    }
    pvcs, pvs = _claims(cluster, reader, list(pods.values()), attached_pvs - {""})
    events += _node_events(cluster, reader, focus)
    automation_objects = _automation(cluster, reader, nodes, focus)
    events += _automation_events(cluster, reader, nodes, focus, automation_objects)
    return Snapshot(
        captured_at=clock(),
        server_version=version,
        source=f"context {cluster.context}",
        nodes=nodes,
        leases=leases,
        pods=list(pods.values()),
        owners=owners,
        volume_attachments=attachments,
        pvcs=pvcs,
        pvs=pvs,
        events=events,
        automation=automation_objects,
        gaps=reader.gaps,
    )


def unknown_namespaces(cluster: kube.Cluster, namespaces: Collection[str]) -> list[str]:
    """A warning for each namespace given with -n that the cluster does not have, with the
    closest one it has (a typo'd namespace reads no pods, which looks like an all-clear).

    A check, never a failure: where RBAC forbids reading namespaces (the least-privilege role
    reads only kube-system's) or the server fails, nothing is said."""
    said: list[str] = []
    for name in dict.fromkeys(namespaces):
        try:
            cluster.get(f"/api/v1/namespaces/{quote(name, safe='')}")
            continue
        except NotFound:
            pass
        except NodefailError:
            continue
        try:
            known = [o["metadata"]["name"] for o in cluster.list_metadata("/api/v1/namespaces")]
        except NodefailError:
            known = []
        close = closest(name, known)
        said.append(
            f"namespace {name!r} not found"
            + (f" (did you mean {close}?)" if close else "")
            + ": none of its pods were read"
        )
    return said


def _pod_paths(namespaces: Collection[str]) -> list[tuple[str | None, str]]:
    """(namespace or None for all, collection path) of the pods to read."""
    if namespaces:
        return [(ns, kube.pod_path(ns)) for ns in namespaces]
    return [(None, "/api/v1/pods")]


def _pods_on(cluster: kube.Cluster, namespaces: Collection[str], node: str) -> list[Obj]:
    out: list[Obj] = []
    for _, path in _pod_paths(namespaces):
        out += cluster.list_all(path, "Pod", fieldSelector=f"spec.nodeName={node}")
    return out


def _lease_kept(obj: Obj) -> Obj:
    """A lease as the analysis reads it: name, renewTime and duration (no managedFields)."""
    kube.trim(obj)
    return obj


def _leases_needed(
    listed: list[Obj] | None,
    nodes: list[Obj],
    focus: list[str],
    now: datetime,
    cluster: kube.Cluster,
    reader: _Reader,
) -> list[Obj]:
    """The examined nodes' leases, and those of Ready nodes whose kubelet stopped renewing (the
    node lifecycle controller has not acted yet: NotReady is coming). From one list of every
    node lease; where that list is refused, one GET per examined node."""
    if listed is None:
        return _leases(cluster, reader, focus)
    wanted = set(focus)
    ready = {n["metadata"]["name"] for n in nodes if is_ready(n)}
    out = []
    for lease in listed:
        name = lease["metadata"].get("name")
        if name in wanted or (name in ready and _late(lease, now)):
            out.append(lease)
    return out


def _late(lease: Obj, now: datetime) -> bool:
    spec = lease.get("spec") or {}
    renewed = parse_time(spec.get("renewTime")) if isinstance(spec.get("renewTime"), str) else None
    duration = spec.get("leaseDurationSeconds")
    return renewed is not None and lease_late(
        now, renewed, duration if isinstance(duration, int) else None
    )


def _leases(cluster: kube.Cluster, reader: _Reader, focus: list[str]) -> list[Obj]:
    """The examined nodes' leases: one GET each, or one list when there are many."""

    def lease(name: str) -> list[Obj]:
        obj = reader.optional("node leases", lambda: cluster.get(f"{NODE_LEASES}/{name}"), None)
        if obj is None:
            return []
        obj.setdefault("kind", "Lease")
        kube.trim(obj)
        return [obj]

    return _per_node(
        reader,
        "node leases",
        focus,
        lambda wanted: cluster.list_all(
            NODE_LEASES, "Lease", keep=lambda o: o if o["metadata"].get("name") in wanted else None
        ),
        lease,
    )


def _per_node(
    reader: _Reader,
    what: str,
    focus: list[str],
    all_at_once: Callable[[set[str]], list[Obj]],
    one: Callable[[str], list[Obj]],
) -> list[Obj]:
    """What the examined nodes need of one kind: a request per node (in parallel), or, past
    MANY_NODES of them, one list kept to those nodes (a gap in the report if it fails)."""
    if len(focus) > MANY_NODES:
        return list(reader.optional(what, lambda: all_at_once(set(focus)), []))
    out: list[Obj] = []
    for batch in kube.parallel(one, focus):
        out += batch
    return out


# A Terminating pod still to read: (namespace or None when only its name is known, name, node).
Candidate = tuple["str | None", str, str]


def _table_columns(columns: list[str]) -> tuple[int, int, int]:
    """Where NAME, STATUS and NODE are in the pods Table (kubectl's printer columns)."""
    col = {name.lower(): i for i, name in enumerate(columns)}
    return col.get("name", 0), col.get("status", 2), col.get("node", 6)


def _deleting_row(columns: list[str], cells: list[Any]) -> bool:
    """A pods Table row printed Terminating, or Unknown (a deleted pod of the NodeLost era)."""
    i_status = columns.index("Status") if "Status" in columns else 2
    return len(cells) == len(columns) and cells[i_status] in ("Terminating", "Unknown")


def _terminating_rows(
    cluster: kube.Cluster, namespaces: Collection[str], skip: bool
) -> list[Candidate]:
    """Pods whose deletion was requested, from a Table scan of every pod: STATUS prints
    Terminating (or Unknown, for the pre-1.27 NodeLost era) for any unfinished pod with a
    deletionTimestamp. The finished ones print Completed/Error: see `_deleted_finished`."""
    if skip:
        return []
    found: list[Candidate] = []
    for ns, path in _pod_paths(namespaces):
        columns, rows = cluster.list_table(path, keep=_deleting_row)
        i_name, _, i_node = _table_columns(columns)
        for cells in rows:
            node = str(cells[i_node] or "")
            found.append((ns, str(cells[i_name]), "" if node == "<none>" else node))
    return found


def _deleted_finished(
    cluster: kube.Cluster, namespaces: Collection[str], skip: bool
) -> list[Candidate]:
    """Finished (Succeeded/Failed) pods whose deletion was requested, from a metadata scan of
    the finished pods only (the few a Table cannot tell apart)."""
    if skip:
        return []
    found: list[Candidate] = []
    for _, path in _pod_paths(namespaces):
        for meta_obj in cluster.list_metadata(
            path,
            keep=lambda o: o if o["metadata"].get("deletionTimestamp") else None,
            fieldSelector=TERMINAL,
        ):
            meta = meta_obj["metadata"]
            found.append((meta.get("namespace", ""), meta.get("name", ""), ""))
    return found


def _full_pods(
    cluster: kube.Cluster,
    candidates: list[Candidate],
    focus: set[str],
    known: dict[str, Obj],
) -> list[Obj]:
    """Full objects of the Terminating pods not already read with their node's pods. A name
    without its namespace is looked up across namespaces by name (and node: the API server's
    cache indexes pods by node)."""
    todo = [c for c in candidates if not (c[2] and c[2] in focus)]

    def read(cand: Candidate) -> list[Obj]:
        ns, name, node = cand
        fields = f"metadata.name={name}" + (f",spec.nodeName={node}" if node else "")
        path = kube.pod_path(ns) if ns else "/api/v1/pods"
        return cluster.list_all(
            path,
            "Pod",
            keep=lambda p: (
                p
                if p["metadata"].get("deletionTimestamp") and p["metadata"].get("uid") not in known
                else None
            ),
            fieldSelector=fields,
        )

    out: list[Obj] = []
    for batch in kube.parallel(read, todo):
        out += batch
    return out


def _owner_refs(obj: Obj) -> Iterable[tuple[str, str, str]]:
    """The owners to read: references to the built-in owner kinds (one of the same name from
    another group, OpenKruise's StatefulSet, is not at the built-in kind's path)."""
    ns = obj["metadata"].get("namespace", "")
    for ref in obj["metadata"].get("ownerReferences") or []:
        kind = ref.get("kind", "")
        if kinds.is_builtin(kind, ref.get("apiVersion")):
            yield (kind, ns, ref.get("name", ""))


def _collection(kind: str, namespace: str) -> str | None:
    """The namespaced collection path of an owner kind (its item path minus the name)."""
    path = kube.owner_path(kind, namespace, "x")
    return path[: -len("/x")] if path else None


def _selector_chunks(key: str, values: Iterable[str]) -> list[str]:
    ordered = sorted(set(values))
    return [
        f"{key} in ({','.join(ordered[i : i + SELECTOR_CHUNK])})"
        for i in range(0, len(ordered), SELECTOR_CHUNK)
    ]


def _read_owners(
    cluster: kube.Cluster,
    reader: _Reader,
    todo: set[tuple[str, str, str]],
    hashes: dict[tuple[str, str, str], str],
    cluster_wide: bool,
) -> dict[tuple[str, str, str], Obj]:
    """Each wanted owner once, in as few requests as the labels and namespaces allow:
    ReplicaSets by their pods' pod-template-hash across namespaces (when cluster_wide), then
    per kind and namespace one list where several are wanted, else one GET."""
    found: dict[tuple[str, str, str], Obj] = {}

    def key_of(obj: Obj) -> tuple[str, str, str]:
        return (obj.get("kind", ""), obj["metadata"].get("namespace", ""), obj["metadata"]["name"])

    def keep_wanted(obj: Obj) -> Obj | None:
        return obj if key_of(obj) in todo else None

    hashed = sorted({h for key, h in hashes.items() if key in todo})
    if cluster_wide and hashed:
        try:
            for batch in kube.parallel(
                lambda selector: cluster.list_all(
                    "/apis/apps/v1/replicasets",
                    "ReplicaSet",
                    keep=keep_wanted,
                    labelSelector=selector,
                ),
                _selector_chunks("pod-template-hash", hashed),
            ):
                found.update((key_of(obj), obj) for obj in batch)
        except (Forbidden, NotFound, ServerError, MalformedResponse):
            pass  # a namespaced role, no such list, a broken answer: per namespace below
        except NodefailError as exc:
            if not getattr(exc, "mid_list", False):  # the list broke twice: per namespace too
                raise
    groups: dict[tuple[str, str], list[str]] = {}
    for kind, ns, name in sorted(todo):
        if (kind, ns, name) not in found and kube.owner_path(kind, ns, name):
            groups.setdefault((kind, ns), []).append(name)

    def read(group: tuple[tuple[str, str], list[str]]) -> list[Obj]:
        (kind, ns), names = group
        if len(names) == 1:
            path = kube.owner_path(kind, ns, names[0]) or ""
            obj = reader.optional(f"{kind} objects", lambda: cluster.get(path), None)
            if obj is None:
                return []
            obj.setdefault("kind", kind)
            return [kube.trim(obj)]
        path = _collection(kind, ns) or ""
        return list(
            reader.optional(
                f"{kind} objects", lambda: cluster.list_all(path, kind, keep=keep_wanted), []
            )
        )

    for batch in kube.parallel(read, sorted(groups.items())):
        found.update((key_of(obj), obj) for obj in batch)
    for (kind, _, _), obj in found.items():  # list items carry none: the dump keeps the group
        obj.setdefault("apiVersion", kube.owner_api_version(kind))
    return found


def _pinned_pending(
    cluster: kube.Cluster, reader: _Reader, namespaces: Collection[str], failed: list[str]
) -> list[Obj]:
    """Unscheduled Pending pods that may run only on failed nodes (pinned by hostname): one
    list of the cluster's unscheduled pods, read only when a node failed."""
    if not failed:
        return []

    def pinned(pod: Obj) -> Obj | None:
        return pod if pinned_to(pod, failed) else None

    def read(path: str) -> list[Obj]:
        return cluster.list_all(
            path, "Pod", fieldSelector="spec.nodeName=,status.phase=Pending", keep=pinned
        )

    out: list[Obj] = []
    for _, path in _pod_paths(namespaces):
        out += reader.optional("pending pods", functools.partial(read, path), [])
    return out


def _waiting_for_attach(
    cluster: kube.Cluster,
    reader: _Reader,
    events: list[Obj],
    namespaces: Collection[str],
    known: dict[str, Obj],
) -> dict[str, Obj]:
    """Pods with a FailedAttachVolume event (Multi-Attach: a volume still on another node):
    they may wait for a failed node's volume. Few, so read one by one."""
    seen = {(p["metadata"].get("namespace", ""), p["metadata"]["name"]) for p in known.values()}
    wanted = sorted(
        {
            (obj.get("namespace", ""), obj.get("name", ""))
            for e in events
            if e.get("reason") == "FailedAttachVolume"
            and (obj := e.get("involvedObject") or {}).get("kind") == "Pod"
            and (not namespaces or obj.get("namespace") in namespaces)
        }
        - seen
    )

    def read(key: tuple[str, str]) -> Obj | None:
        pod = reader.optional("pods", lambda: cluster.get(kube.pod_path(*key)), None)
        if pod is not None:
            pod.setdefault("kind", "Pod")
            shape = cluster.shape.get("Pod")  # as the listed pods are (kube.Cluster.shape)
            pod = shape(kube.trim(pod)) if shape else pod
        return pod

    return {p["metadata"]["uid"]: p for p in kube.parallel(read, wanted) if p}


def _owners_and_siblings(
    cluster: kube.Cluster,
    reader: _Reader,
    pods: list[Obj],
    rules: RowRules,
    progress: Progress,
    cluster_wide: bool = True,
) -> tuple[list[Obj], list[Obj]]:
    """Owner objects up the chain, and the other pods of each owner (to find replacements)."""
    owners: dict[tuple[str, str, str], Obj] = {}
    wanted: set[tuple[str, str, str]] = set()
    hashes: dict[tuple[str, str, str], str] = {}
    for pod in pods:
        for key in _owner_refs(pod):
            wanted.add(key)
            label = (pod["metadata"].get("labels") or {}).get("pod-template-hash")
            if key[0] == "ReplicaSet" and label:
                hashes[key] = label
    for _ in range(3):  # Pod -> ReplicaSet -> Deployment, Pod -> Job -> CronJob
        todo = {k for k in wanted if k not in owners and kube.owner_path(*k)}
        if not todo:
            break
        got = _read_owners(cluster, reader, todo, hashes, cluster_wide)
        for key in todo:
            owners[key] = got.get(key) or {}
        for obj in got.values():
            wanted.update(_owner_refs(obj))
    found = [o for o in owners.values() if o]
    progress(f"{len(found)} owners read; looking for replacements")
    return found, _siblings(cluster, reader, found, rules, cluster_wide)


def _row_rules(
    nodes: list[Obj], focus: Collection[str], leases: list[Obj], pods: list[Obj]
) -> RowRules:
    """Which owners' other pods a Table row may stand for (RowRules), from the nodes, the
    leases read and the pods read whole."""
    # Every failed node, not only the examined ones: a dump of some nodes may be diagnosed for
    # all of them, and each listed node's timeline looks for its own replacements.
    since, whole_nodes = _replacements_since(
        [n for n in nodes if n["metadata"]["name"] in focus or not is_ready(n)]
    )
    # Ready nodes listed for a lease their kubelet stopped renewing: their timelines too take
    # every pod of their pods' controllers (no failure time yet).
    whole_nodes |= {
        name
        for lease in leases
        if isinstance(name := (lease.get("metadata") or {}).get("name"), str)
    } - set(focus)
    return RowRules(
        ready={n["metadata"]["name"] for n in nodes if is_ready(n)} - whole_nodes,
        since=since,
        whole_nodes=whole_nodes,
        whole_owners=_whole_owners(pods, whole_nodes),
        known={p["metadata"].get("uid") for p in pods},
    )


def _replacements_since(examined: list[Obj]) -> tuple[datetime | None, set[str]]:
    """Where the examined nodes' timelines look for replacements (analysis/timeline.py: pods of
    the same controllers created since the node's Ready condition turned): the earliest such
    time, and the nodes without one (a Ready node, or no transition time: their timelines take
    every pod of the controllers)."""
    times: list[datetime] = []
    without: set[str] = set()
    for node in examined:
        ready = ready_condition(node) or {}
        at = parse_time(ready.get("lastTransitionTime")) if ready.get("status") != "True" else None
        if at is None:
            without.add(node["metadata"]["name"])
        else:
            times.append(at)
    return min(times, default=None), without


def _whole_owners(pods: list[Obj], whole_nodes: Collection[str]) -> frozenset[str]:
    """UIDs of the owners whose other pods are read whole: owners of a pod that mounts a claim
    (persistentVolumeClaim or ephemeral: the storage analysis reads their volumes), and owners
    of a pod on a node whose timeline takes every pod of its controllers."""
    return frozenset(
        ref.get("uid", "")
        for pod in pods
        if (
            isinstance(node := (pod.get("spec") or {}).get("nodeName"), str) and node in whole_nodes
        )
        or any(
            "persistentVolumeClaim" in v or "ephemeral" in v
            for v in (pod.get("spec") or {}).get("volumes") or []
        )
        for ref in pod["metadata"].get("ownerReferences") or []
    )


@dataclass(frozen=True)
class RowRules:
    """Which sibling pods a Table row may stand for: on a `ready` node (the node lifecycle
    controller rewrites a not-Ready node's pods' Ready condition, which the row cannot show);
    created before `since` (a pod created since is a replacement in a failed node's timeline,
    which reads when it was scheduled and became Ready: not in a row); not of `whole_owners`
    (see `_whole_owners`), nor of an owner with a pod on one of `whole_nodes` (the nodes whose
    timelines take every pod of their pods' controllers: examined without a failure time, or
    Ready and listed for a lease their kubelet stopped renewing); not already read whole
    (`known` UIDs: left out)."""

    ready: Collection[str]
    since: datetime | None = None
    whole_nodes: Collection[str] = frozenset()
    whole_owners: Collection[str] = frozenset()
    known: Collection[str | None] = frozenset()

    def stands_for(self, pod: Obj | None) -> bool:
        """Whether a pod built from a row (podrows.from_row) may stand for the pod."""
        if pod is None or pod["spec"]["nodeName"] not in self.ready:
            return False
        created = _time(pod["metadata"].get("creationTimestamp"))
        return created is not None and (self.since is None or created < self.since)


def _time(value: Any) -> datetime | None:
    """An RFC 3339 time read before the object is held to the dump schema (None for anything
    else: the pod is then read whole, or the node taken as having no failure time)."""
    return parse_time(value) if isinstance(value, str) else None


# Owners whose pods are always read whole: a StatefulSet's pods each mount their own claims.
WHOLE_PODS_KINDS = ("StatefulSet",)
# Rows of one sibling list that a row cannot stand for (Pending, finished, Terminating, not
# Ready) are read one by one up to this many; past it, the list is read again as full objects.
ROWS_READ_ONE_BY_ONE = 30


def _siblings(
    cluster: kube.Cluster,
    reader: _Reader,
    owners: list[Obj],
    rows: RowRules,
    cluster_wide: bool = True,
) -> list[Obj]:
    """The pods of the given owners, in few lists (see `_sibling_lists`); only pods an owner of
    interest owns are kept. Where the owner's pods mount no claim, a list is read as Table rows
    with metadata (a third of the bytes) and a row stands for a pod Running and Ready on a Ready
    node (podrows.py); the other rows are read whole, except pods already read, which are left
    out (`RowRules`)."""
    uids = {o["metadata"].get("uid") for o in owners}

    def owned(meta: Obj) -> bool:
        return any(uid in uids for uid in _owner_uids(meta))

    def whole(owner: Obj) -> bool:
        return (
            owner.get("kind") in WHOLE_PODS_KINDS
            or owner["metadata"].get("uid") in rows.whole_owners
        )

    lists = [
        (item, False) for item in _sibling_lists([o for o in owners if whole(o)], cluster_wide)
    ]
    lists += [
        (item, True) for item in _sibling_lists([o for o in owners if not whole(o)], cluster_wide)
    ]

    def read(spec: tuple[tuple[str, str], bool]) -> list[Obj]:
        (path, selector), by_rows = spec
        return list(
            reader.optional(
                "pods of the same owner",
                lambda: (
                    _sibling_rows(cluster, reader, path, selector, owned, rows)
                    if by_rows
                    else cluster.list_all(
                        path,
                        "Pod",
                        keep=lambda p: p if owned(p["metadata"]) else None,
                        labelSelector=selector,
                    )
                ),
                [],
            )
        )

    out: list[Obj] = []
    for batch in kube.parallel(read, lists):
        out += batch
    return out


def _sibling_rows(
    cluster: kube.Cluster,
    reader: _Reader,
    path: str,
    selector: str,
    owned: Callable[[Obj], bool],
    rules: RowRules,
) -> list[Obj]:
    """One sibling list as Table rows: the pods rows stand for, and the others read whole (one
    by one, or the list again past ROWS_READ_ONE_BY_ONE or when a row lacks its metadata), in the
    list's order; rows of pods already read are left out."""
    columns, rows, items = cluster.list_rows(
        path,
        "Pod",
        keep=lambda m: owned(m) and _uid(m) not in rules.known,
        labelSelector=selector,
    )
    if items or not rows:
        return items
    shape = cluster.shape.get("Pod")
    # an owner with a pod on a node whose timeline takes all its pods: every row of it whole
    at = columns.index("Node") if "Node" in columns else None
    on_whole_nodes = {
        uid
        for cells, meta in rows
        if meta is not None
        and at is not None
        and len(cells) == len(columns)
        and isinstance(node := cells[at], str)
        and node in rules.whole_nodes
        for uid in _owner_uids(meta)
    }

    def standing(cells: list[Any], meta: Obj | None) -> Obj | None:
        pod = podrows.from_row(columns, cells, meta)
        if pod is None or not rules.stands_for(pod):
            return None
        uids = _owner_uids(pod["metadata"])
        return None if any(u in rules.whole_owners or u in on_whole_nodes for u in uids) else pod

    pods = [standing(cells, meta) for cells, meta in rows]
    todo = [i for i, pod in enumerate(pods) if pod is None]
    if len(todo) > ROWS_READ_ONE_BY_ONE or any(
        not isinstance(ns := (rows[i][1] or {}).get("namespace"), str) or not ns for i in todo
    ):
        return cluster.list_all(
            path, "Pod", keep=lambda p: p if owned(p["metadata"]) else None, labelSelector=selector
        )

    def whole(i: int) -> Obj | None:
        meta = rows[i][1] or {}
        at = kube.pod_path(meta.get("namespace", ""), meta.get("name", ""))
        pod = reader.optional("pods of the same owner", lambda: cluster.get(at), None)
        if pod is None or not owned(pod.get("metadata") or {}):
            return None  # gone since the list, or no longer owned
        pod.setdefault("kind", "Pod")
        return kube.trim(pod)

    for i, pod in zip(todo, kube.parallel(whole, todo)):
        pods[i] = pod
    return [shape(p) if shape else p for p in pods if p is not None]


def _owner_uids(meta: Obj) -> list[str]:
    """The owners' UIDs a pod's metadata names, read before the pod is held to the dump schema:
    MalformedResponse (a stated gap for an optional read) where they are not what the API
    sends, never a traceback."""
    refs = meta.get("ownerReferences") or []
    if not isinstance(refs, list) or not all(
        isinstance(r, dict) and isinstance(r.get("uid", ""), str) for r in refs
    ):
        raise MalformedResponse(
            f"pod {meta.get('name')!r}: metadata.ownerReferences is not a list of owner references"
        )
    return [r.get("uid", "") for r in refs]


def _uid(meta: Obj) -> str | None:
    uid = meta.get("uid")
    if uid is not None and not isinstance(uid, str):
        raise MalformedResponse(f"pod {meta.get('name')!r}: metadata.uid is not a string")
    return uid


def _sibling_lists(owners: list[Obj], cluster_wide: bool = True) -> list[tuple[str, str]]:
    """(path, label selector) lists that find the pods of the given owners: owners whose
    selectors share a label that names them uniquely (pod-template-hash, a Job's controller-uid)
    in one list across namespaces (per namespace when only some namespaces are read); the rest
    grouped by namespace and selector keys into one `key in (...)` list each. Such a list may
    match more than asked: the caller keeps only pods an owner of interest owns."""
    unique: dict[tuple[str, str], set[str]] = {}  # (label, namespace or "" for all): values
    grouped: dict[tuple[str, tuple[str, ...]], dict[str, set[str]]] = {}
    single: list[tuple[str, str]] = []  # selectors with expressions: one list each
    for owner in owners:
        kind = owner.get("kind")
        if kind not in SIBLING_KINDS:
            continue
        sel = (owner.get("spec") or {}).get("selector")
        if kind == "ReplicationController":
            sel = {"matchLabels": sel} if sel else None
        if not isinstance(sel, dict):
            continue
        labels = sel.get("matchLabels") or {}
        ns = owner["metadata"].get("namespace", "")
        key = next((k for k in UNIQUE_LABELS if k in labels), None)
        if key is not None:
            unique.setdefault((key, "" if cluster_wide else ns), set()).add(str(labels[key]))
        elif labels and not sel.get("matchExpressions"):
            group = grouped.setdefault((ns, tuple(sorted(labels))), {})
            for k, v in labels.items():
                group.setdefault(k, set()).add(str(v))
        else:
            selector = _label_selector(sel)
            if selector:
                single.append((kube.pod_path(ns), selector))
    lists: list[tuple[str, str]] = []
    for (label, ns), values in sorted(unique.items()):
        path = kube.pod_path(ns) if ns else "/api/v1/pods"
        lists += [(path, chunk) for chunk in _selector_chunks(label, values)]
    for (ns, keys), by_key in sorted(grouped.items()):
        lists.append(
            (kube.pod_path(ns), ",".join(f"{k} in ({','.join(sorted(by_key[k]))})" for k in keys))
        )
    return lists + single


def _claims(
    cluster: kube.Cluster, reader: _Reader, pods: list[Obj], attached_pvs: set[str]
) -> tuple[list[Obj], list[Obj]]:
    """The pods' PVCs, and the PVs bound to them or attached to an examined node (a
    VolumeAttachment whose pod is gone still needs its PV: its CSI source names the volume in
    the node's status.volumesInUse)."""
    keys = {(p["metadata"].get("namespace", ""), claim) for p in pods for claim in claim_names(p)}

    def pvc(key: tuple[str, str]) -> Obj | None:
        obj = reader.optional(
            "persistentvolumeclaims",
            lambda: cluster.get(f"/api/v1/namespaces/{key[0]}/persistentvolumeclaims/{key[1]}"),
            None,
        )
        if obj is not None:
            obj.setdefault("kind", "PersistentVolumeClaim")
            kube.trim(obj)
        return obj

    claims = [c for c in kube.parallel(pvc, sorted(keys)) if c]
    names = sorted(
        {c["spec"]["volumeName"] for c in claims if (c.get("spec") or {}).get("volumeName")}
        | attached_pvs
    )

    def pv(name: str) -> Obj | None:
        obj = reader.optional(
            "persistentvolumes", lambda: cluster.get(f"/api/v1/persistentvolumes/{name}"), None
        )
        if obj is not None:
            obj.setdefault("kind", "PersistentVolume")
            kube.trim(obj)
        return obj

    return claims, [v for v in kube.parallel(pv, names) if v]


def _node_events(cluster: kube.Cluster, reader: _Reader, focus: list[str]) -> list[Obj]:
    """The events of each examined node (one list for all node events when there are many)."""

    def node_events(name: str) -> list[Obj]:
        return list(
            reader.optional(
                "events",
                lambda: cluster.list_all(
                    "/api/v1/events",
                    "Event",
                    fieldSelector=f"involvedObject.kind=Node,involvedObject.name={name}",
                ),
                [],
            )
        )

    return _per_node(
        reader,
        "events",
        focus,
        lambda wanted: cluster.list_all(
            "/api/v1/events",
            "Event",
            keep=lambda e: e if (e.get("involvedObject") or {}).get("name") in wanted else None,
            fieldSelector="involvedObject.kind=Node",
        ),
        node_events,
    )


# Remediation automation (analysis/automation.py): collection paths (the newest API version
# first: Cluster API v1.11+ serves v1beta2 and still v1beta1; an older one only v1beta1), kind,
# and what a gap names. A 404 on every version (CRD not installed) is simply absent; a 403 a
# stated gap.
AUTOMATION_LISTS = (
    (
        (
            "/apis/cluster.x-k8s.io/v1beta2/machinehealthchecks",
            "/apis/cluster.x-k8s.io/v1beta1/machinehealthchecks",
        ),
        "MachineHealthCheck",
        "Cluster API machinehealthchecks",
    ),
    (
        ("/apis/cluster.x-k8s.io/v1beta2/machines", "/apis/cluster.x-k8s.io/v1beta1/machines"),
        "Machine",
        "Cluster API machines",
    ),
    (("/apis/karpenter.sh/v1/nodeclaims",), "NodeClaim", "Karpenter nodeclaims"),
    (
        ("/apis/remediation.medik8s.io/v1alpha1/nodehealthchecks",),
        "NodeHealthCheck",
        "Medik8s nodehealthchecks",
    ),
)


def _api_version(path: str) -> str:
    """`group/version` of a collection path /apis/GROUP/VERSION/RESOURCE."""
    return "/".join(path.split("/")[2:4])


def _automation(
    cluster: kube.Cluster, reader: _Reader, nodes: list[Obj], focus: list[str]
) -> list[Obj]:
    """The remediation automation objects that may cover a failed examined node (none read
    when no examined node failed). Machines are kept only for those nodes."""
    failed = {n["metadata"]["name"] for n in nodes if not is_ready(n)} & set(focus)
    if not failed:
        return []
    by_name = {n["metadata"]["name"]: n for n in nodes}
    machines = {
        ((by_name[n]["metadata"].get("annotations") or {}).get(automation.MACHINE_ANNOTATION))
        for n in failed
    } - {None}

    def keep_machine(obj: Obj) -> Obj | None:
        node_ref = ((obj.get("status") or {}).get("nodeRef") or {}).get("name")
        return obj if node_ref in failed or obj["metadata"].get("name") in machines else None

    # Karpenter links a NodeClaim to its Node by providerID (automation._karpenter)
    provider_ids = {(by_name[n].get("spec") or {}).get("providerID") for n in failed} - {None, ""}

    def keep_nodeclaim(obj: Obj) -> Obj | None:
        status = obj.get("status") or {}
        linked = status.get("nodeName") in failed or status.get("providerID") in provider_ids
        return obj if linked else None

    def newest(paths: tuple[str, ...], kind: str) -> list[Obj]:
        """The list from the first version served (list items carry no apiVersion: set it)."""
        keep = {"Machine": keep_machine, "NodeClaim": keep_nodeclaim}.get(kind)
        for path in paths:
            try:
                items = cluster.list_all(path, kind, keep=keep)
            except NotFound:
                continue
            for obj in items:
                obj.setdefault("apiVersion", _api_version(path))
            return list(items)
        raise NotFound(f"{kind}: no version served", status=404)

    def read(item: tuple[tuple[str, ...], str, str]) -> list[Obj]:
        paths, kind, what = item
        return list(reader.optional(what, lambda: newest(paths, kind), []))

    out: list[Obj] = []
    for batch in kube.parallel(read, list(AUTOMATION_LISTS)):
        out += batch
    return out


def _automation_events(
    cluster: kube.Cluster,
    reader: _Reader,
    nodes: list[Obj],
    focus: list[str],
    objects: list[Obj],
) -> list[Obj]:
    """Events about the automation objects that cover the failed examined nodes (few)."""
    from kubectl_nodefail.snapshot.model import Snapshot as _Snap

    if not objects:
        return []
    snap = _Snap(captured_at=datetime.now(timezone.utc), nodes=nodes, automation=objects)
    wanted: set[tuple[str, str, str]] = set()
    for name in focus:
        node = snap.node(name)
        if node is not None and not is_ready(node):
            wanted.update(automation.timeline_objects(node, snap))

    def read(key: tuple[str, str, str]) -> list[Obj]:
        kind, _, name = key
        return list(
            reader.optional(
                "events",
                lambda: cluster.list_all(
                    "/api/v1/events",
                    "Event",
                    fieldSelector=f"involvedObject.kind={kind},involvedObject.name={name}",
                ),
                [],
            )
        )

    out: list[Obj] = []
    for batch in kube.parallel(read, sorted(wanted)):
        out += batch
    return out


def stderr_progress(message: str) -> None:
    print(f"... {message}", file=sys.stderr)
