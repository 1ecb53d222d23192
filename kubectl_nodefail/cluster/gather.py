"""Build a Snapshot from a live cluster, reading only what the diagnosis needs.

Cost follows the affected nodes and pods, not the cluster size:
- all nodes (zone states need them), trimmed as pages arrive;
- Terminating pods found by a server-side Table scan (rows of ~150 bytes, no objects) plus a
  metadata scan of finished pods only (a deleted Succeeded/Failed pod does not print as
  Terminating), then full objects of just those;
- kube-controller-manager's leader Lease (when its in-memory clocks started);
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

What to read is planned here (`gather`); the reads themselves are in reads.py (optional reads
and gaps), nodes_read.py, pods_read.py, owners_read.py, siblings_read.py and automation_read.py,
whose names used elsewhere stay importable from here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection
from datetime import datetime, timezone
from urllib.parse import quote

from kubectl_nodefail.analysis import facts, unmarked
from kubectl_nodefail.analysis.leader import of_lease
from kubectl_nodefail.analysis.leader import state as leader_state
from kubectl_nodefail.analysis.nodes import (
    LEADER_GAP,
    has_problem_condition,
    is_ready,
    shutdown_evidence,
)
from kubectl_nodefail.cluster import kube
from kubectl_nodefail.cluster.automation_read import _automation, _automation_events
from kubectl_nodefail.cluster.nodes_read import (
    _leader_lease,
    _leases_needed,
    _node_events,
    node_leases,
    read_nodes,
)
from kubectl_nodefail.cluster.owners_read import _owner_refs, _owners_and_siblings, owner_key
from kubectl_nodefail.cluster.pods_read import (
    Kept,
    _claims,
    _deleted_finished,
    _full_pods,
    _pinned_pending,
    _pods_on,
    _terminating_rows,
    _waiting_for_attach,
    deleting_of,
    gone_nodes,
)
from kubectl_nodefail.cluster.reads import Progress, _quiet, _Reader
from kubectl_nodefail.cluster.siblings_read import (
    ROWS_READ_ONE_BY_ONE,
    RowRules,
    _replacements_since,
    _row_rules,
    _sibling_rows,
    _siblings,
    _whole_owners,
)
from kubectl_nodefail.common.errors import NodefailError, NotFound, closest
from kubectl_nodefail.snapshot.model import Obj, Snapshot, minor_of, one_per_name

# What the package, the tests and the tools import from here (a few names now live in the
# modules above).
__all__ = [
    "ROWS_READ_ONE_BY_ONE",
    "RowRules",
    "_Reader",
    "_owner_refs",
    "_replacements_since",
    "_sibling_rows",
    "_siblings",
    "_whole_owners",
    "gather",
    "unknown_namespaces",
]


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


# how gather states that a node became one nothing marks after its pods were to be read
MARKED_LATE_GAP = "nodes past their time to be marked NotReady during the read"


def _unmarked(
    cluster: kube.Cluster,
    reader: _Reader,
    nodes: list[Obj],
    leases: list[Obj],
    focus: list[str],
    version: str | None,
    now: datetime,
) -> list[str]:
    """Ready nodes whose kubelet stopped renewing its lease and that nothing marks NotReady (no
    kube-controller-manager leader, or its node lifecycle controller past due): their pods are
    as stuck as a failed node's and are read too (analysis/unmarked.py). The leader's Lease is
    read for this only when a Ready node's lease is late; the snapshot's own copy is read last
    (gather)."""
    late = _late_leases(leases, focus)
    if not late:
        return []
    chief = reader.optional(LEADER_GAP, lambda: _leader_lease(cluster), [])
    return _silent(nodes, late, chief, version, now, reader.gaps)


def _silent(
    nodes: list[Obj],
    late: list[Obj],
    chief: list[Obj],
    version: str | None,
    now: datetime,
    gaps: list[str],
) -> list[str]:
    """unmarked.silent on what gather read: the leader's Lease, if any, read at `now`."""
    read = not any(g.startswith(LEADER_GAP) for g in gaps)
    lead = of_lease(chief[0], now) if chief else None
    return unmarked.silent(nodes, late, lead, minor_of(version), now, read)


def _late_leases(leases: list[Obj], focus: Collection[str]) -> list[Obj]:
    """The late leases read of nodes not examined: Ready nodes whose kubelet stopped renewing
    (nodes_read._leases_needed)."""
    examined = set(focus)
    return [
        lease
        for lease in leases
        if lease["metadata"].get("namespace") == facts.NODE_LEASE_NAMESPACE
        and lease["metadata"].get("name") not in examined
    ]


def gather(
    cluster: kube.Cluster,
    now: Callable[[], datetime] | None = None,
    only_nodes: Collection[str] = (),
    namespaces: Collection[str] = (),
    progress: Progress = _quiet,
    kept: Kept | None = None,
) -> Snapshot:
    """The snapshot. `kept` (diagnose --watch: watch/follow.py): what an earlier read had and
    the watches show unchanged since (an examined node's pods, the pods being deleted and
    those of them read whole, the owners), taken instead of read again; left holding this
    read's own."""
    clock = now or (lambda: datetime.now(timezone.utc))
    lists = dict(kept.pods_on) if kept is not None else {}
    deleting = kept.deleting if kept is not None and not only_nodes else None
    reader = _Reader(cluster)
    progress("reading nodes; scanning pods for Terminating ones")
    with kube.thread_pool(6) as pool:
        # Independent reads overlap: the node list, the two Terminating scans, attachments,
        # events; then, once the nodes are known, the examined nodes' leases and pods while
        # the scans (which grow with the whole cluster) still run.
        f_version = pool.submit(cluster.server_version)
        f_nodes = pool.submit(read_nodes, cluster, kept)
        skip_scan = bool(only_nodes) or deleting is not None
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
            lambda: node_leases(cluster),
            None,
        )
        nodes, nodes_kept = f_nodes.result()
        focus = focus_nodes(nodes, only_nodes)
        fresh = [name for name in focus if name not in lists]
        f_on_nodes = pool.submit(
            kube.parallel, lambda name: _pods_on(cluster, namespaces, name), fresh
        )
        failed = [n["metadata"]["name"] for n in nodes if not is_ready(n)]
        f_unscheduled = pool.submit(_pinned_pending, cluster, reader, namespaces, failed)
        version = f_version.result()
        scanned, bound = f_table.result()
        candidates = list(
            dict.fromkeys(
                deleting.values()  # as the watch of pods keeps them
                if deleting is not None
                else [*scanned, *f_finished.result()]
            )
        )
        # nodes pods are bound to that no Node has (deleted): their pods, as an examined
        # node's, analysed as bound to a deleted node (analysis/orphans.py)
        known = {n["metadata"]["name"] for n in nodes}
        missing = set(only_nodes) - known
        gone = (
            []  # a node named that does not exist is refused (NameNotFound), its pods unread
            if only_nodes
            else [g for g in kept.gone if g not in known]
            if kept is not None and deleting is not None
            else gone_nodes(bound, known)
        )
        attachments = f_attach.result()
        events = f_events.result()
        leases = _leases_needed(f_all_leases.result(), nodes, focus, clock(), cluster, reader)
        silent = (
            [] if only_nodes else _unmarked(cluster, reader, nodes, leases, focus, version, clock())
        )
        more = [name for name in [*silent, *gone] if name not in lists]
        listed = {
            **dict(zip(fresh, f_on_nodes.result())),
            **dict(zip(more, kube.parallel(lambda n: _pods_on(cluster, namespaces, n), more))),
        }
        focus = [*focus, *silent]  # a new list: the one above may still be read
        on_nodes = {
            name: listed[name] if name in listed else lists[name] for name in [*focus, *gone]
        }
    if kept is not None:  # a deleted node none of whose pods is left: not listed again
        kept.pods_on, kept.gone = on_nodes, [g for g in gone if on_nodes.get(g)]
    if missing:
        reader.gaps.append(f"nodes not found: {', '.join(sorted(missing))}")
    focus_set = set(focus)
    progress(
        f"{len(nodes)} nodes"
        + (f" ({nodes_kept} unchanged since the last read, not read again)" if nodes_kept else "")
        + f", {len(focus)} to examine, {len(candidates)} Terminating pods"
        + (" (as the watch of pods kept them since the last read)" if deleting is not None else "")
    )

    pods: dict[str, Obj] = {}
    for batch in on_nodes.values():
        for pod in batch:
            pods[pod["metadata"]["uid"]] = pod
    held = sum(1 for name in focus if name not in listed)
    progress(
        f"{len(pods)} pods on examined nodes"
        + (f" ({held} of {len(focus)} nodes' lists unchanged since the last read)" if held else "")
        + "; reading Terminating pods elsewhere"
    )
    whole = kept.whole if kept is not None else None
    for pod in _full_pods(cluster, candidates, focus_set, pods, whole):
        pods.setdefault(pod["metadata"]["uid"], pod)
    pods.update(_waiting_for_attach(cluster, reader, events, namespaces, pods))
    for pod in f_unscheduled.result():
        pods.setdefault(pod["metadata"]["uid"], pod)
    if kept is not None:  # every pod being deleted: the examined nodes' and the scans' ones
        kept.deleting = None if only_nodes else deleting_of(pods.values())

    read_whole = list(pods.values())
    owners, siblings, owners_lists = _owners_and_siblings(
        cluster,
        reader,
        read_whole,
        _row_rules(nodes, focus_set, leases, read_whole),
        progress,
        cluster_wide=not namespaces,
        held=kept.owners if kept is not None else None,
        held_siblings=kept.siblings if kept is not None else None,
    )
    if kept is not None:
        kept.owners = {owner_key(o): o for o in owners}
        kept.keep_siblings(owners_lists)
    for pod in siblings:
        pods.setdefault(pod["metadata"]["uid"], pod)
    attachments = [a for a in attachments if (a.get("spec") or {}).get("nodeName") in focus_set]
    attached_pvs = {
        ((a.get("spec") or {}).get("source") or {}).get("persistentVolumeName") or ""
        for a in attachments
    }
    pvcs, pvs = _claims(cluster, reader, list(pods.values()), attached_pvs - {""})
    # and of the nodes pods are bound to that no longer exist: the node lifecycle controller's
    # RemovingNode event dates the deletion PodGC counts from (analysis/orphans.py)
    bound_gone = {
        node
        for pod in pods.values()
        for node in [(pod.get("spec") or {}).get("nodeName")]
        if isinstance(node, str) and node and node not in known
    }
    events += _node_events(cluster, reader, [*focus, *sorted(bound_gone)])
    automation_objects = _automation(cluster, reader, nodes, focus)
    events += _automation_events(cluster, reader, nodes, focus, automation_objects)
    # Read last, right before the snapshot's time: whether its leader renews is judged at that
    # time (analysis/leader.py), and the reads above may take longer than its 15 s.
    chief = reader.optional(LEADER_GAP, lambda: _leader_lease(cluster), [])
    leases += chief
    captured = clock()
    late = _late_leases(leases, focus)
    unread = [] if only_nodes else _silent(nodes, late, chief, version, captured, reader.gaps)
    if unread:
        # nothing marks them since they were looked at (the leader's Lease expired, or the
        # controller's time to mark them passed): their pods, stuck as a failed node's, unread
        expired = chief and leader_state(chief[0], captured) == "expired"
        reader.gaps.append(
            (f"{LEADER_GAP} expired during the read" if expired else MARKED_LATE_GAP)
            + f": the pods of {', '.join(unread)} (Ready, kubelet silent, "
            "nothing marks them) were not read; diagnose again"
        )
    return Snapshot(
        captured_at=captured,
        server_version=version,
        source=f"context {cluster.context}",
        nodes=nodes,
        leases=leases,
        pods=one_per_name(list(pods.values())),
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


def stderr_progress(message: str) -> None:
    print(f"... {message}", file=sys.stderr)
