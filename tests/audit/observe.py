"""What the control plane did: every pod of the audit's namespaces, polled while a batch plays
out, reduced to the few fields the judge compares predictions with."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

Obj = dict[str, Any]
Attached = tuple[str, bool, bool]  # a VolumeAttachment: (node, status.attached, being deleted)


def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    value = value.replace("Z", "+00:00")
    if "." in value:
        head, tail = value.split(".", 1)
        zone = tail[tail.find("+") :] if "+" in tail else ""
        digits = tail[: len(tail) - len(zone)][:6]
        value = f"{head}.{digits}{zone}"
    return datetime.fromisoformat(value)


@dataclass(frozen=True)
class PodView:
    namespace: str
    name: str
    uid: str
    owner_uid: str  # the controller reference's uid ("" for none)
    owner_kind: str
    node: str
    phase: str
    created: datetime | None
    deletion: datetime | None  # deletionTimestamp
    grace: int | None  # deletionGracePeriodSeconds
    disruption: datetime | None  # DisruptionTarget condition (reason DeletionByTaintManager)
    disruption_reason: str
    scheduled_message: str  # PodScheduled=False message (the scheduler's reason)
    node_selector_host: str
    finalizers: tuple[str, ...]
    # the Ready condition True (histories recorded before it was kept read as not Ready)
    ready: bool = False

    @property
    def deletion_requested(self) -> datetime | None:
        """When the deletion was asked for: the taint-eviction controller's condition when it
        wrote one, else deletionTimestamp minus the grace period it was set with."""
        if self.disruption is not None and self.disruption_reason == "DeletionByTaintManager":
            return self.disruption
        if self.deletion is None:
            return None
        from datetime import timedelta

        return self.deletion - timedelta(seconds=self.grace or 0)


def pod_view(pod: Obj) -> PodView:
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    ref: Obj = next((r for r in meta.get("ownerReferences") or [] if r.get("controller")), {})
    disruption, reason, message, ready = None, "", "", False
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready":
            ready = cond.get("status") == "True"
        if cond.get("type") == "DisruptionTarget" and cond.get("status") == "True":
            disruption, reason = parse_time(cond.get("lastTransitionTime")), cond.get("reason", "")
        if cond.get("type") == "PodScheduled" and cond.get("status") != "True":
            message = cond.get("message") or cond.get("reason") or ""
    return PodView(
        namespace=meta["namespace"],
        name=meta["name"],
        uid=meta["uid"],
        owner_uid=ref.get("uid", ""),
        owner_kind=ref.get("kind", ""),
        node=spec.get("nodeName") or "",
        phase=status.get("phase") or "",
        created=parse_time(meta.get("creationTimestamp")),
        deletion=parse_time(meta.get("deletionTimestamp")),
        grace=meta.get("deletionGracePeriodSeconds"),
        disruption=disruption,
        disruption_reason=reason,
        scheduled_message=message,
        node_selector_host=(spec.get("nodeSelector") or {}).get("kubernetes.io/hostname", ""),
        finalizers=tuple(meta.get("finalizers") or ()),
        ready=ready,
    )


@dataclass
class Poll:
    at: datetime
    pods: dict[str, PodView]  # uid -> view


@dataclass
class History:
    """Polls in time order; the judge reads it, nothing else."""

    polls: list[Poll] = field(default_factory=list)
    jobs: dict[str, list[tuple[datetime, Obj]]] = field(default_factory=dict)  # ns -> statuses
    marks: dict[str, datetime] = field(default_factory=dict)  # kill, d1, late, d2, return, end
    remediated: str = ""  # the node remediate --confirm ran on while down (marks remediate/-d)
    shut_down: dict[str, str] = field(default_factory=dict)  # uid -> when its status was written
    # a live CronJob's scheduled run (ns -> its minute), and the Jobs its runs made (ns -> name ->
    # first seen)
    cron_runs: dict[str, datetime] = field(default_factory=dict)
    runs: dict[str, dict[str, datetime]] = field(default_factory=dict)
    # when each poll read the Jobs (seconds after the poll's own time, its pods read first;
    # 2069/123: a Job deleted by the run at :00 read as gone in the poll stamped :58.9)
    job_reads: list[datetime] = field(default_factory=list)
    # the batch's nodes as polled, kept on each change: node -> [(at, its taints as
    # "key:effect", or None when the Node object is gone)]
    nodes: dict[str, list[tuple[datetime, tuple[str, ...] | None]]] = field(default_factory=dict)
    # the batch's volumes' VolumeAttachments as polled, kept on each change: PV -> [(at, its
    # attachments as (node, attached, being deleted), sorted)]; a PV never attached is absent
    volumes: dict[str, list[tuple[datetime, tuple[Attached, ...]]]] = field(default_factory=dict)

    def add(self, at: datetime, pods: list[Obj]) -> None:
        self.polls.append(Poll(at, {p["metadata"]["uid"]: pod_view(p) for p in pods}))

    def add_nodes(self, at: datetime, taints: dict[str, tuple[str, ...] | None]) -> None:
        """One poll of the batch's nodes (a name absent from `taints` was not polled)."""
        for name, now_ in taints.items():
            rows = self.nodes.setdefault(name, [])
            if not rows or rows[-1][1] != now_:
                rows.append((at, now_))

    def add_volumes(self, at: datetime, states: dict[str, tuple[Attached, ...]]) -> None:
        """One poll of the VolumeAttachments: `states` has every PV attached anywhere; a PV
        seen before and absent now has none left."""
        for pv in set(self.volumes) | set(states):
            now_ = tuple(sorted(states.get(pv, ())))
            rows = self.volumes.setdefault(pv, [])
            if not rows or rows[-1][1] != now_:
                rows.append((at, now_))

    def attachments(self, pv: str, when: datetime) -> tuple[Attached, ...]:
        """The PV's attachments as last polled at or before `when`."""
        seen: tuple[Attached, ...] = ()
        for at, states in self.volumes.get(pv, []):
            if at > when:
                break
            seen = states
        return seen

    def node_taints(self, name: str, when: datetime) -> tuple[str, ...] | None:
        """The node's taints as last polled at or before `when` (None: gone or not polled)."""
        seen: tuple[str, ...] | None = None
        for at, taints in self.nodes.get(name, []):
            if at > when:
                break
            seen = taints
        return seen

    def node_changes(
        self, name: str, start: datetime, end: datetime
    ) -> list[tuple[datetime, tuple[str, ...] | None]]:
        """The node's polled states that began in (start, end]."""
        return [(at, t) for at, t in self.nodes.get(name, []) if start < at <= end]

    def at(self, when: datetime) -> Poll:
        """The first poll at or after `when` (the last one if none)."""
        for poll in self.polls:
            if poll.at >= when:
                return poll
        return self.polls[-1]

    def before(self, when: datetime) -> Poll:
        """The last poll at or before `when` (the first one if none): what stood then."""
        seen = [poll for poll in self.polls if poll.at <= when]
        return seen[-1] if seen else self.polls[0]

    def between(self, start: datetime, end: datetime) -> list[Poll]:
        return [p for p in self.polls if start <= p.at <= end]

    def ever(self) -> dict[str, PodView]:
        """Every pod seen, in its last seen state but with the owner it was made by: an
        orphaning cascade removes a pod's owner reference later, and it was still that
        owner's pod (2060/51: a Job's replacements, orphaned by the late change)."""
        out: dict[str, PodView] = {}
        made_by: dict[str, PodView] = {}
        for poll in self.polls:
            for uid, view in poll.pods.items():
                if view.owner_uid and uid not in made_by:
                    made_by[uid] = view
            out.update(poll.pods)
        for uid, view in out.items():
            first = made_by.get(uid)
            if first is not None and not view.owner_uid:
                out[uid] = replace(view, owner_uid=first.owner_uid, owner_kind=first.owner_kind)
        return out

    def last_seen(self, uid: str) -> tuple[datetime, PodView] | None:
        for poll in reversed(self.polls):
            if uid in poll.pods:
                return poll.at, poll.pods[uid]
        return None

    def vanished(self, uid: str) -> tuple[datetime, datetime] | None:
        """(last poll that saw it, first poll that did not) for a pod whose object went away
        between two polls without one of them seeing its deletionTimestamp (grace period 0)."""
        seen_at = None
        for poll in self.polls:
            if uid in poll.pods:
                seen_at = poll.at
            elif seen_at is not None:
                return seen_at, poll.at
        return None

    def first_deletion(self, uid: str) -> PodView | None:
        """The pod as first seen with a deletionTimestamp."""
        for poll in self.polls:
            view = poll.pods.get(uid)
            if view is not None and view.deletion is not None:
                return view
        return None

    def job_status_since(self, ns: str, since: datetime) -> Obj | None:
        """The namespace's Job status last read at or after `since` (None: the Job was gone)."""
        rows = [status for at, status in self.jobs.get(ns, []) if at >= since]
        return rows[-1] if rows else None

    def job_failed(self, ns: str, when: datetime) -> int | None:
        """status.failed of the namespace's Job at the last reading before `when`."""
        seen = None
        for at, status in self.jobs.get(ns, []):
            if at <= when:
                seen = int(status.get("failed") or 0)
        return seen


def now() -> datetime:
    return datetime.now(timezone.utc)


def node_taints(kubectl_out: str, names: list[str]) -> dict[str, tuple[str, ...] | None]:
    """`kubectl get nodes -o json` as each named node's taints ("key:effect", sorted; None for
    a node not listed; nothing when the read failed)."""
    try:
        items = json.loads(kubectl_out)["items"]
    except (ValueError, KeyError, TypeError):
        return {}
    found = {
        n["metadata"]["name"]: tuple(
            sorted(
                f"{t.get('key')}:{t.get('effect')}"
                for t in (n.get("spec") or {}).get("taints") or []
            )
        )
        for n in items
    }
    return {name: found.get(name) for name in names}


def audit_pods(kubectl_out: str, prefix: str) -> list[Obj]:
    items = json.loads(kubectl_out or '{"items": []}')["items"]
    return [p for p in items if p["metadata"]["namespace"].startswith(prefix)]
