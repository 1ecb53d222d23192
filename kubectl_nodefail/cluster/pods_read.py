"""The pods gather.py reads besides the owners' other pods: those on the examined nodes, the
Terminating ones (found by a Table scan of every pod and a metadata scan of the finished ones,
then read whole), unscheduled Pending pods pinned to failed nodes and pods waiting for a volume
attachment; and the claims and volumes of the pods read.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from kubectl_nodefail.analysis.pods import pinned_to
from kubectl_nodefail.analysis.storage import claim_names
from kubectl_nodefail.cluster import kube
from kubectl_nodefail.cluster.reads import _pod_paths, _Reader
from kubectl_nodefail.snapshot.model import Obj

TERMINAL = "status.phase!=Running,status.phase!=Pending,status.phase!=Unknown"

# A Terminating pod still to read: (namespace or None when only its name is known, name, node).
Candidate = tuple["str | None", str, str]


@dataclass
class Kept:
    """What `diagnose --watch` carries from one read to the next (watch/follow.py keeps it
    true to its watch of pods; gather takes it instead of reading again and leaves its own):
    - `pods_on`: each examined node's pods as its last list returned them;
    - `deleting`: uid -> (namespace, name, node: "" for none) of every pod whose deletion was
      requested, or may have been (read whole, a pod without a deletionTimestamp is left out:
      `_full_pods`), in place of the two Terminating scans; None: scan;
    - `gone`: with `deleting`, the nodes pods were bound to without a Node (the scan's
      `gone_nodes`), whose pods are listed as an examined node's are;
    - `owners`: the owners the last read found, by (kind, namespace, name), each dropped by
      the first change its kind's watch shows to it (owners_read.owner_key);
    - `whole`: the pods being deleted on nodes not examined, as the last read had them whole
      (`_full_pods`), by (namespace, name), each dropped by the first change to it;
    - `nodes`: every Node the last read had, by name (None: list them all), and `changed`: the
      names of those the watch of Nodes showed a change to since (added, changed, deleted),
      read again (nodes_read.read_nodes);
    - `siblings`: by owner uid, the other pods of each owner the last read listed
      (siblings_read.Found), taken again while the owner is kept and no pod it owns, or owned
      at that read, changed since (`drop_siblings`)."""

    pods_on: dict[str, list[Obj]] = field(default_factory=dict)
    deleting: dict[str, Candidate] | None = None
    gone: list[str] = field(default_factory=list)
    owners: dict[tuple[str, str, str], Obj] = field(default_factory=dict)
    whole: dict[tuple[str, str], Obj] = field(default_factory=dict)
    nodes: dict[str, Obj] | None = None
    changed: set[str] = field(default_factory=set)
    siblings: dict[str, Found] = field(default_factory=dict)
    # pod uid -> the owners in `siblings` whose lists had it (a pod that left its owner names
    # none: which one it left is found here)
    sibling_of: dict[str, set[str]] = field(default_factory=dict)

    def keep_siblings(self, found: dict[str, Found]) -> None:
        """The owners' other pods this read found, kept for the next."""
        self.siblings, self.sibling_of = found, {}
        for owner, held in found.items():
            for uid in held.uids():
                self.sibling_of.setdefault(uid, set()).add(owner)

    def drop_siblings(self, pod: str, owners: Collection[str]) -> None:
        """A pod changed (the watch of pods): the owners it names and those whose lists had it
        read again."""
        for owner in {*owners, *self.sibling_of.get(pod, ())}:
            self.siblings.pop(owner, None)


@dataclass(frozen=True)
class Found:
    """An owner's other pods as one read's lists found them (diagnose --watch): `pods`, as the
    lists gave them (a Table row that stood for its pod, podrows.READ_FROM, or whole);
    `by_rows`, whether they were listed as rows (a StatefulSet's pods, or those of an owner
    RowRules.whole_owners names, are listed whole); `elsewhere`, the uids of pods the lists
    matched but left out, read whole elsewhere in that read (RowRules.known)."""

    pods: tuple[Obj, ...]
    by_rows: bool
    elsewhere: frozenset[str] = frozenset()

    def uids(self) -> set[str]:
        return {str(p["metadata"].get("uid") or "") for p in self.pods} | set(self.elsewhere)


def deleting_of(pods: Collection[Obj]) -> dict[str, Candidate]:
    """`Kept.deleting` from the pods a read has: those with a deletionTimestamp."""
    return {
        str(p["metadata"].get("uid") or ""): (
            str(p["metadata"].get("namespace") or ""),
            str(p["metadata"].get("name") or ""),
            str((p.get("spec") or {}).get("nodeName") or ""),
        )
        for p in pods
        if p["metadata"].get("deletionTimestamp")
    }


def _pods_on(cluster: kube.Cluster, namespaces: Collection[str], node: str) -> list[Obj]:
    out: list[Obj] = []
    for _, path in _pod_paths(namespaces):
        out += cluster.list_all(path, "Pod", fieldSelector=f"spec.nodeName={node}")
    return out


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
) -> tuple[list[Candidate], set[str]]:
    """Pods whose deletion was requested, from a Table scan of every pod: STATUS prints
    Terminating (or Unknown, for the pre-1.27 NodeLost era) for any unfinished pod with a
    deletionTimestamp. The finished ones print Completed/Error: see `_deleted_finished`. And
    the names of the nodes the pods are bound to (a name no Node has: its pods are bound to a
    deleted node, `gone_nodes`)."""
    if skip:
        return [], set()
    found: list[Candidate] = []
    bound: set[str] = set()
    for ns, path in _pod_paths(namespaces):
        columns, rows = cluster.list_table(path, keep=_noting_nodes(bound))
        i_name, _, i_node = _table_columns(columns)
        for cells in rows:
            node = str(cells[i_node] or "")
            found.append((ns, str(cells[i_name]), "" if node == "<none>" else node))
    return found, bound


def _noting_nodes(bound: set[str]) -> Callable[[list[str], list[Any]], bool]:
    """`_deleting_row`, noting in `bound` the node of every row it sees."""
    at: list[int] = []  # NODE's column, found once

    def keep(columns: list[str], cells: list[Any]) -> bool:
        if not at:
            at.append(_table_columns(columns)[2])
        if len(cells) == len(columns) and isinstance(cells[at[0]], str):
            bound.add(cells[at[0]])
        return _deleting_row(columns, cells)

    return keep


def gone_nodes(bound: set[str], known: set[str]) -> list[str]:
    """The names pods are bound to that no Node has (`known`: the Nodes' names), sorted."""
    return sorted(name for name in bound if name and name != "<none>" and name not in known)


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
    held: dict[tuple[str, str], Obj] | None = None,
) -> list[Obj]:
    """Full objects of the Terminating pods not already read with their node's pods. A name
    without its namespace is looked up across namespaces by name (and node: the API server's
    cache indexes pods by node). `held` (diagnose --watch: Kept.whole): such pods as an earlier
    read had them, unchanged since; taken instead of read again, and left holding this read's."""
    todo = [c for c in candidates if not (c[2] and c[2] in focus)]
    before = dict(held) if held is not None else {}

    def keep(pod: Obj) -> Obj | None:
        meta = pod["metadata"]
        return pod if meta.get("deletionTimestamp") and meta.get("uid") not in known else None

    def read(cand: Candidate) -> list[Obj]:
        ns, name, node = cand
        if ns is not None and (ns, name) in before:
            return [p for p in [keep(before[(ns, name)])] if p is not None]
        fields = f"metadata.name={name}" + (f",spec.nodeName={node}" if node else "")
        path = kube.pod_path(ns) if ns else "/api/v1/pods"
        return cluster.list_all(path, "Pod", keep=keep, fieldSelector=fields)

    out: list[Obj] = []
    for batch in kube.parallel(read, todo):
        out += batch
    if held is not None:
        held.clear()
        held.update({(p["metadata"].get("namespace", ""), p["metadata"]["name"]): p for p in out})
    return out


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
