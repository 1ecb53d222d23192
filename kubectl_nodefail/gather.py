"""Build a Snapshot from a live cluster, reading only what the diagnosis needs.

Cost follows the affected nodes and pods, not the cluster size: all nodes (needed for zone
states), then per failed node its lease and its pods (field selector spec.nodeName), a cheap
metadata-only scan for Terminating pods cluster-wide, and the owners, sibling pods, claims,
volume attachments and events of just those pods. Per-node and per-owner requests run
concurrently. Optional reads that are forbidden become stated gaps; objects that vanish
mid-scan are simply absent.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection
from datetime import datetime, timezone
from typing import Any

from kubectl_nodefail import kube
from kubectl_nodefail.analysis import facts
from kubectl_nodefail.analysis.nodes import has_problem_condition, is_ready, shutdown_evidence
from kubectl_nodefail.errors import Forbidden, MalformedResponse, NotFound, ServerError
from kubectl_nodefail.snapshot import Obj, Snapshot

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


class _Reader:
    """Optional reads: a 403, a 5xx or a malformed answer is recorded as a gap, a 404 as
    'vanished'."""

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
            failure = "sent a malformed answer" if exc.status is None else f"answered {exc.status}"
            gap = f"{what}: the API server {failure}, so the diagnosis goes without them"
            if gap not in self.gaps:
                self.gaps.append(gap)
            return default
        except NotFound:
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


def gather(
    cluster: kube.Cluster,
    now: Callable[[], datetime] | None = None,
    only_nodes: Collection[str] = (),
    namespaces: Collection[str] = (),
    progress: Progress = _quiet,
) -> Snapshot:
    clock = now or (lambda: datetime.now(timezone.utc))
    reader = _Reader(cluster)
    version = cluster.server_version()
    progress("reading nodes")
    nodes = cluster.list_all(kube.node_path(), "Node")
    missing = set(only_nodes) - {n["metadata"]["name"] for n in nodes}
    if missing:
        reader.gaps.append(f"nodes not found: {', '.join(sorted(missing))}")
    focus = focus_nodes(nodes, only_nodes)
    progress(f"{len(nodes)} nodes, {len(focus)} to examine")

    def lease(name: str) -> Obj | None:
        obj = reader.optional(
            "node leases",
            lambda: cluster.get(
                "/apis/coordination.k8s.io/v1/namespaces/"
                f"{facts.NODE_LEASE_NAMESPACE}/leases/{name}"
            ),
            None,
        )
        if obj is not None:
            obj.setdefault("kind", "Lease")
        return obj

    leases = [x for x in kube.parallel(lease, focus) if x]

    def pods_on(name: str) -> list[Obj]:
        paths = [kube.pod_path(ns) for ns in namespaces] if namespaces else ["/api/v1/pods"]
        out: list[Obj] = []
        for path in paths:
            out += cluster.list_all(path, "Pod", fieldSelector=f"spec.nodeName={name}")
        return out

    pods: dict[str, Obj] = {}
    for batch in kube.parallel(pods_on, focus):
        for pod in batch:
            pods[pod["metadata"]["uid"]] = pod
    progress(f"{len(pods)} pods on examined nodes; scanning for Terminating pods")
    pods.update(_terminating_elsewhere(cluster, namespaces, pods, only_nodes))
    events = _events(cluster, reader, focus)
    pods.update(_waiting_for_attach(cluster, reader, events, namespaces, pods))

    owners, siblings = _owners_and_siblings(cluster, reader, list(pods.values()), progress)
    for pod in siblings:
        pods.setdefault(pod["metadata"]["uid"], pod)
    pvcs, pvs = _claims(cluster, reader, list(pods.values()))
    attachments = reader.optional(
        "volumeattachments",
        lambda: cluster.list_all("/apis/storage.k8s.io/v1/volumeattachments", "VolumeAttachment"),
        [],
    )
    focus_set = set(focus)
    return Snapshot(
        captured_at=clock(),
        server_version=version,
        source=f"context {cluster.context}",
        nodes=nodes,
        leases=leases,
        pods=list(pods.values()),
        owners=owners,
        volume_attachments=[
            a for a in attachments if (a.get("spec") or {}).get("nodeName") in focus_set
        ],
        pvcs=pvcs,
        pvs=pvs,
        events=events,
        gaps=reader.gaps,
    )


def _terminating_elsewhere(
    cluster: kube.Cluster,
    namespaces: Collection[str],
    known: dict[str, Obj],
    only_nodes: Collection[str],
) -> dict[str, Obj]:
    """Metadata-only scan of every pod; full objects only for those being deleted."""
    if only_nodes:
        return {}
    paths = [kube.pod_path(ns) for ns in namespaces] if namespaces else ["/api/v1/pods"]
    deleting = []
    for path in paths:
        for meta_obj in cluster.list_metadata(path):
            meta = meta_obj.get("metadata") or {}
            if meta.get("deletionTimestamp") and meta.get("uid") not in known:
                deleting.append((meta.get("namespace", ""), meta["name"]))

    def full(key: tuple[str, str]) -> Obj | None:
        try:
            pod = cluster.get(kube.pod_path(*key))
        except NotFound:
            return None  # finished deleting while we looked
        pod.setdefault("kind", "Pod")
        return pod

    return {p["metadata"]["uid"]: p for p in kube.parallel(full, deleting) if p}


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
        return pod

    return {p["metadata"]["uid"]: p for p in kube.parallel(read, wanted) if p}


def _owners_and_siblings(
    cluster: kube.Cluster, reader: _Reader, pods: list[Obj], progress: Progress
) -> tuple[list[Obj], list[Obj]]:
    """Owner objects up the chain, and the other pods of each owner (to find replacements)."""
    owners: dict[tuple[str, str, str], Obj] = {}
    wanted = set()
    for pod in pods:
        for ref in pod["metadata"].get("ownerReferences") or []:
            wanted.add(
                (ref.get("kind", ""), pod["metadata"].get("namespace", ""), ref.get("name", ""))
            )
    for _ in range(3):  # Pod -> ReplicaSet -> Deployment, Pod -> Job -> CronJob
        todo = [k for k in wanted if k not in owners and kube.owner_path(*k)]
        if not todo:
            break

        def read(key: tuple[str, str, str]) -> tuple[tuple[str, str, str], Obj | None]:
            path = kube.owner_path(*key)
            obj = reader.optional(f"{key[0]} objects", lambda: cluster.get(path or ""), None)
            if obj is not None:
                obj.setdefault("kind", key[0])
            return key, obj

        for key, obj in kube.parallel(read, todo):
            owners[key] = obj or {}
            for ref in (obj or {}).get("metadata", {}).get("ownerReferences") or []:
                wanted.add((ref.get("kind", ""), key[1], ref.get("name", "")))
    found = [o for o in owners.values() if o]
    progress(f"{len(found)} owners read; looking for replacements")

    def siblings(owner: Obj) -> list[Obj]:
        if owner.get("kind") not in (
            "ReplicaSet",
            "StatefulSet",
            "Job",
            "DaemonSet",
            "ReplicationController",
        ):
            return []
        spec = owner.get("spec") or {}
        sel = spec.get("selector")
        selector = _label_selector(
            sel if owner.get("kind") != "ReplicationController" else {"matchLabels": sel}
        )
        if not selector:
            return []
        if owner.get("kind") == "DaemonSet":
            return []  # one per node: other nodes' pods are not replacements
        return reader.optional(
            "pods of the same owner",
            lambda: cluster.list_all(
                kube.pod_path(owner["metadata"]["namespace"]), "Pod", labelSelector=selector
            ),
            [],
        )

    sib: list[Obj] = []
    for batch in kube.parallel(siblings, found):
        sib += batch
    return found, sib


def _claims(cluster: kube.Cluster, reader: _Reader, pods: list[Obj]) -> tuple[list[Obj], list[Obj]]:
    keys = {
        (p["metadata"].get("namespace", ""), v["persistentVolumeClaim"]["claimName"])
        for p in pods
        for v in (p.get("spec") or {}).get("volumes") or []
        if v.get("persistentVolumeClaim")
    }

    def pvc(key: tuple[str, str]) -> Obj | None:
        obj = reader.optional(
            "persistentvolumeclaims",
            lambda: cluster.get(f"/api/v1/namespaces/{key[0]}/persistentvolumeclaims/{key[1]}"),
            None,
        )
        if obj is not None:
            obj.setdefault("kind", "PersistentVolumeClaim")
        return obj

    claims = [c for c in kube.parallel(pvc, sorted(keys)) if c]
    names = sorted(
        {c["spec"]["volumeName"] for c in claims if (c.get("spec") or {}).get("volumeName")}
    )

    def pv(name: str) -> Obj | None:
        obj = reader.optional(
            "persistentvolumes", lambda: cluster.get(f"/api/v1/persistentvolumes/{name}"), None
        )
        if obj is not None:
            obj.setdefault("kind", "PersistentVolume")
        return obj

    return claims, [v for v in kube.parallel(pv, names) if v]


def _events(cluster: kube.Cluster, reader: _Reader, focus: list[str]) -> list[Obj]:
    """Multi-Attach errors cluster-wide, and the events of each examined node."""
    events = reader.optional(
        "events",
        lambda: cluster.list_all(
            "/api/v1/events", "Event", fieldSelector="reason=FailedAttachVolume"
        ),
        [],
    )

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

    for batch in kube.parallel(node_events, focus):
        events += batch
    return list(events)


def stderr_progress(message: str) -> None:
    print(f"... {message}", file=sys.stderr)
