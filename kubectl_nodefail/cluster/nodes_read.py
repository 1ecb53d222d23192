"""What gather.py reads for the examined nodes besides the node list: their leases (and those of
Ready nodes whose kubelet stopped renewing: NotReady is coming) and their events.
"""

from __future__ import annotations

from datetime import datetime

from kubectl_nodefail.analysis import facts
from kubectl_nodefail.analysis.nodes import is_ready, lease_late
from kubectl_nodefail.cluster import kube
from kubectl_nodefail.cluster.pods_read import Kept
from kubectl_nodefail.cluster.reads import _per_node, _Reader, pages, wide_cap
from kubectl_nodefail.snapshot import dumpschema
from kubectl_nodefail.snapshot.model import Obj, parse_time

NODE_LEASES = f"/apis/coordination.k8s.io/v1/namespaces/{facts.NODE_LEASE_NAMESPACE}/leases"
LEADER_LEASE = (
    f"/apis/coordination.k8s.io/v1/namespaces/{facts.CONTROLLER_LEASE_NAMESPACE}/leases/"
    f"{facts.CONTROLLER_LEASE_NAME}"
)


def read_nodes(cluster: kube.Cluster, kept: Kept | None = None) -> tuple[list[Obj], int]:
    """Every Node, in the list's order (by name), and how many of them were taken from `kept`
    (diagnose --watch: the last read's, unchanged since by the watch of Nodes) instead of read
    again: those it shows changed are listed by name, one request each, while that takes no
    more requests than the list's pages or brings a tenth of its objects (a request costs the
    API server about what encoding ten objects does); else, and without `kept`, the list. The
    Nodes read are left in `kept`."""
    held = kept.nodes if kept is not None else None
    seen = kept.changed if kept is not None else set()
    changed = sorted(seen)
    if held is not None and (
        len(changed) <= pages(len(held), kube.NODE_PAGE_SIZE) or len(held) > wide_cap(len(changed))
    ):
        by_name = {name: node for name, node in held.items() if name not in seen}
        for batch in kube.parallel(
            lambda name: cluster.list_all(
                kube.node_path(), "Node", fieldSelector=f"metadata.name={name}"
            ),
            changed,
        ):
            by_name.update((node["metadata"]["name"], node) for node in batch)
        nodes = [by_name[name] for name in sorted(by_name)]
        reused = len(nodes) - sum(1 for name in changed if name in by_name)
    else:
        nodes, reused = cluster.list_all(kube.node_path(), "Node", limit=kube.NODE_PAGE_SIZE), 0
    if kept is not None:
        kept.nodes, kept.changed = {n["metadata"]["name"]: n for n in nodes}, set()
    return nodes, reused


def node_leases(cluster: kube.Cluster, names: set[str] | None = None) -> list[Obj]:
    """Every node's Lease (of `names` only, when given), in pages as big as the Nodes' (one
    Lease a node; pages of 500 took 10 requests at 5,000 nodes, pages of 2,000 take 3)."""

    def named(obj: Obj) -> Obj | None:  # list_all trims each (no managedFields)
        return obj if obj["metadata"].get("name") in (names or ()) else None

    keep = None if names is None else named
    return cluster.list_all(NODE_LEASES, "Lease", keep=keep, limit=kube.NODE_PAGE_SIZE)


def _leader_lease(cluster: kube.Cluster) -> list[Obj]:
    """kube-controller-manager's leader election Lease: when its leader took over, and so the
    controllers' in-memory clocks started (analysis/leader.py). Without leader election there is
    none: NotFound, which the caller's optional read turns into nothing."""
    obj = cluster.get(LEADER_LEASE)
    obj.setdefault("kind", "Lease")
    kube.trim(obj)
    return dumpschema.take_live([obj])  # malformed: a gap (MalformedResponse), not the end


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
        if name in wanted or (name in ready and lease_is_late(lease, now)):
            out.append(lease)
    return out


def lease_is_late(lease: Obj, now: datetime) -> bool:
    """The kubelet missed two renewals of this Lease (nodes.lease_late)."""
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
        lambda wanted: node_leases(cluster, set(wanted)),
        lease,
    )


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
