"""What the diagnosis on the screen was made from, as `diagnose --watch` compares each change
its watches bring with it (`Interest.relevant`: the rules listed in watch/follow.py), and the
moments no object marks that it keeps (a deleted pod due to be gone, the leader's Lease due to
expire, a silent kubelet's node due to be marked).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime, timezone

from kubectl_nodefail.analysis import facts, unmarked
from kubectl_nodefail.analysis.leader import expires, leader
from kubectl_nodefail.analysis.nodes import LEADER_GAP, kubectl_status, unmarked_after
from kubectl_nodefail.cluster.gather import MARKED_LATE_GAP, focus_nodes
from kubectl_nodefail.cluster.nodes_read import lease_is_late
from kubectl_nodefail.cluster.watchstream import Change, Row
from kubectl_nodefail.snapshot.model import Obj, Snapshot, format_time, parse_time, shifted

DUE_SLACK = 2.0  # seconds a deleted pod may stay past its deletion time before it is read


def _version(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


@dataclass
class Interest:
    """What the diagnosis on the screen was made from, as the watch compares changes with."""

    status: dict[str, str] = field(default_factory=dict)  # node -> kubectl's STATUS
    focus: set[str] = field(default_factory=set)  # the examined nodes
    nodes: dict[str, str] = field(default_factory=dict)  # node -> resourceVersion
    pods: dict[str, str] = field(default_factory=dict)  # uid -> resourceVersion
    owners: dict[str, str] = field(default_factory=dict)  # uid -> resourceVersion ("": unread)
    attachments: dict[str, str] = field(default_factory=dict)
    due: dict[str, tuple[datetime, str]] = field(default_factory=dict)  # uid -> (when, name)
    made: float = 0.0  # time.monotonic() when the read ended (its watches' changes judged after)
    # kube-controller-manager's leader as read: when it took over (None: no Lease read), whether
    # it was renewing, and when, unrenewed, it would be read as expired (moved by each renewal)
    leader_since: datetime | None = None
    leader_state: str = ""
    leader_renewed: datetime | None = None
    leader_due: datetime | None = None
    # each Ready node whose kubelet stopped renewing: when, still not marked, it is one nothing
    # marks (its pods read then: analysis/unmarked.py). Its Lease is not watched, and nothing
    # on the Node changes when the node lifecycle controller does not act
    unmarked_after: dict[str, datetime] = field(default_factory=dict)
    # Ready nodes whose late leases the read had -> the renewTime it read
    late: dict[str, str] = field(default_factory=dict)
    # a Ready node the node lifecycle controller did not mark in its time (or its pods left
    # unread for that, a gap): it marks no other either, so leases are read every interval
    unmarking: bool = False

    @classmethod
    def of(cls, snap: Snapshot, only_nodes: Collection[str] = ()) -> Interest:
        owners = {
            str(ref.get("uid")): ""
            for pod in snap.pods
            for ref in pod["metadata"].get("ownerReferences") or []
        }
        owners.update({str(o["metadata"].get("uid")): _version(o) for o in snap.owners})
        chief = leader(snap)
        renewed = chief.renewed() if chief is not None else None
        lasts = (chief.lease.get("spec") or {}).get("leaseDurationSeconds") if chief else None
        alive = chief is not None and chief.alive() and renewed is not None
        return cls(
            leader_since=chief.since if chief is not None else None,
            leader_state=chief.state if chief is not None else "",
            leader_renewed=renewed,
            leader_due=_expiry(renewed, lasts) if alive else None,
            unmarked_after=_unmarked_after(snap, only_nodes),
            late=_late_ready(snap),
            unmarking=not (chief is not None and chief.expired())
            and (
                bool(unmarked.read_for(snap, only_nodes))
                or any(g.startswith(MARKED_LATE_GAP) for g in snap.gaps)
            ),
            status={n["metadata"]["name"]: kubectl_status(n) for n in snap.nodes},
            focus=set(focus_nodes(snap.nodes, only_nodes)) | unmarked.read_for(snap, only_nodes),
            nodes={n["metadata"]["name"]: _version(n) for n in snap.nodes},
            pods={str(p["metadata"].get("uid")): _version(p) for p in snap.pods},
            owners=owners,
            attachments={a["metadata"]["name"]: _version(a) for a in snap.volume_attachments},
        )

    def carry(self, before: Interest) -> None:
        """The deleted pods awaited by the interest before, unless this read has them."""
        self.due = {uid: v for uid, v in before.due.items() if uid not in self.pods}

    def relevant(self, change: Change) -> str | None:
        """Why `change` may change the diagnosis (None: it cannot)."""
        if change.kind in ("expired", "broken"):
            why = "listed again" if change.kind == "expired" else "broken"
            return f"the watch of {change.resource} {why}"
        if change.kind == "relisted":  # its differences are judged one by one; the read made
            # while it held nothing whole may have seen one that came and went before its list
            if self.made > change.since:
                return f"the watch of {change.resource} listed again"
            return None
        row = change.row
        if not row.name:  # an object the watch could not read: no object to read again for
            return None
        if change.resource == "nodes":
            return self._node(change.kind, row)
        if change.resource == "pods":
            return self._pod(change.kind, row)
        if change.resource == "volumeattachments":
            known = self.attachments.get(row.name)
            if row.node in self.focus or (known is not None and known != row.version):
                return f"VolumeAttachment {row.name}"
            return None
        if change.resource == "events":
            kind, name = row.involved
            if kind != "Node" or name in self.focus:
                return f"Event {row.reason} of {name}"
            return None
        if change.resource == "leases":
            return self._leader(change.kind, row)
        known = self.owners.get(row.uid)  # an owner kind
        if known is not None and (not known or known != row.version):
            return f"{change.resource} {row.name}"
        return None

    def _node(self, kind: str, row: Row) -> str | None:
        if kind != "MODIFIED":
            return f"node {row.name} {kind.lower()}"
        if row.name not in self.status:
            return f"node {row.name} new"
        if row.status and row.status != self.status[row.name]:
            return f"node {row.name} {row.status}"
        if row.name in self.focus and self.nodes.get(row.name) != row.version:
            return f"node {row.name} changed"
        return None

    def _pod(self, kind: str, row: Row) -> str | None:
        named = f"pod {row.namespace}/{row.name}"
        if kind == "DELETED":
            self.due.pop(row.uid, None)
            return f"{named} gone" if row.uid in self.pods else None
        if row.uid in self.pods:
            return f"{named} changed" if self.pods[row.uid] != row.version else None
        if row.node in self.focus:
            return f"{named} on {row.node}"
        if any(uid in self.owners for uid in row.owners):
            return f"{named} of an owner read"
        deleted = parse_time(row.deletion) if row.deletion else None
        if deleted is not None and row.uid not in self.due:
            self.due[row.uid] = (shifted(deleted, DUE_SLACK), named)
        return None

    def _leader(self, kind: str, row: Row) -> str | None:
        """kube-controller-manager's Lease changed: read again for a new leader or one renewing
        again; a renewal of the leader read only moves the moment it would be read expired."""
        named = "kube-controller-manager's leader Lease"
        if kind == "DELETED":
            return f"{named} deleted" if self.leader_since is not None else None
        since, renewed = parse_time(row.acquired), parse_time(row.renewed)
        if since is None:
            return None
        if self.leader_since is None or since != self.leader_since:
            return f"kube-controller-manager has a new leader (since {format_time(since)})"
        if self.leader_state == "expired":
            # a renewal after the one read, that the read made now would find in time (a
            # clock far ahead of the control plane's finds none so: it is not read for)
            newer = renewed is not None and (
                self.leader_renewed is None or renewed > self.leader_renewed
            )
            if newer and row.lasts > 0:
                fresh = expires(renewed, row.lasts)
                if fresh is not None and fresh > _now():
                    self.leader_renewed = renewed  # said once
                    return f"{named} renewed again"
            return None
        if self.leader_state == "alive" and renewed is not None and row.lasts > 0:
            self.leader_due = _expiry(renewed, row.lasts)
        return None

    def overdue(self, now: datetime) -> str | None:
        """A deleted pod still there past its deletion time (one of them, said once), or the
        leader's Lease past its duration without a renewal (said once)."""
        if self.leader_due is not None and self.leader_due <= now:
            self.leader_due = None
            return "kube-controller-manager's leader Lease not renewed within its duration"
        for name, when in sorted(self.unmarked_after.items(), key=lambda item: item[1]):
            if when <= now:
                del self.unmarked_after[name]
                return f"node {name} past its time to be marked NotReady"
        for uid, (when, named) in list(self.due.items()):
            if when <= now:
                del self.due[uid]
                return f"{named} still there past its deletion time"
        return None

    def next_due(self) -> datetime | None:
        times = [when for when, _ in self.due.values()]
        if self.leader_due is not None:
            times.append(self.leader_due)
        times += self.unmarked_after.values()
        return min(times, default=None)


def renewal(lease: Obj) -> str:
    return str((lease.get("spec") or {}).get("renewTime"))


def _late_ready(snap: Snapshot) -> dict[str, str]:
    """The Ready nodes whose kubelets' leases the read found late, with the renewal it read."""
    return {
        str(x["metadata"].get("name")): renewal(x)
        for x in snap.leases
        if x["metadata"].get("namespace") == facts.NODE_LEASE_NAMESPACE
        and (node := snap.node(str(x["metadata"].get("name")))) is not None
        and kubectl_status(node).startswith("Ready")
        and lease_is_late(x, snap.captured_at)
    }


def _unmarked_after(snap: Snapshot, only_nodes: Collection[str]) -> dict[str, datetime]:
    """The Ready nodes whose late leases the read took, not yet ones nothing marks: when each,
    its kubelet still silent and the node still not marked, becomes one (a moment after)."""
    if only_nodes or any(g.startswith(LEADER_GAP) for g in snap.gaps):
        return {}
    chief, read = leader(snap), unmarked.read_for(snap)
    out = {}
    for lease in snap.leases:
        name = str(lease["metadata"].get("name"))
        node = snap.node(name)
        if lease["metadata"].get("namespace") != facts.NODE_LEASE_NAMESPACE or node is None:
            continue
        if not lease_is_late(lease, snap.captured_at):
            continue  # renewing: nothing is coming
        after = unmarked_after(node, lease, chief, snap.server_minor)
        if name not in read and after is not None and after > snap.captured_at:
            out[name] = shifted(after, DUE_SLACK)
    return out


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _expiry(renewed: datetime | None, lasts: object) -> datetime | None:
    """When the read made then finds a Lease renewed at `renewed` expired (leader.expires, and
    a moment more)."""
    until = expires(renewed, lasts)
    return None if until is None else shifted(until, DUE_SLACK / 2)
