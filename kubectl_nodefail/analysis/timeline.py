"""The incident timeline of one node: what happened, in order, with times, from what the API
already holds. Pure: a Snapshot and `now` in, entries out.

Sources, each entry naming its own (`source`; its fields and values, which the premise checker
re-reads, in `because`):
  Lease spec.renewTime                      the kubelet's last heartbeat
  Node Ready condition                      lastHeartbeatTime (last status posted) and
                                            lastTransitionTime (became Unknown/False, or back)
  Node spec.taints[].timeAdded              NoExecute / NoSchedule / out-of-service taints
  Node annotation kubectl-nodefail.io/out-of-service-by   who applied the taint with remediate
  Pod DisruptionTarget condition            eviction decided (taint manager, PodGC, ...)
  Pod deletionTimestamp - grace period      deletion requested; deletionTimestamp: grace ends
  Pod Ready condition on the failed node    marked not ready by the node lifecycle controller
  sibling pods (same controller) elsewhere  replacement created, scheduled, ready
  VolumeAttachment                          attach (creationTimestamp), detach requested
  Events about the node and these pods      e.g. NodeNotReady, Multi-Attach error, attached
  Remediation automation (automation/)      remediation started or due; its objects' events

The API keeps no history: a transition overwritten (a node that flapped twice) shows only its
last occurrence; events expire (1 h by default). The timeline says what the objects record.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubectl_nodefail.analysis import automation
from kubectl_nodefail.analysis.claims import Premise, fact, read
from kubectl_nodefail.analysis.facts import TAINT_OUT_OF_SERVICE
from kubectl_nodefail.snapshot.model import Snapshot, format_time, parse_time, shifted

Obj = dict[str, Any]
OUT_OF_SERVICE_BY = "kubectl-nodefail.io/out-of-service-by"

# Order of entries that share a second: cause before effect.
ORDER = [
    "lease-renewed",
    "status-posted",
    "node-not-ready",
    "pod-not-ready",
    "taint-added",
    "event",
    "automation",
    "pod-evicted",
    "pod-deletion-requested",
    "replacement-created",
    "replacement-scheduled",
    "replacement-pending",
    "replacement-ready",
    "pod-grace-ended",
    "pod-grace-ends",
    "volume-detach-requested",
    "volume-attach-requested",
    "node-back",
]


@dataclass(frozen=True)
class Entry:
    time: datetime
    kind: str  # one of ORDER
    summary: str
    object: str  # "node/NAME", "pod/NS/NAME", "volumeattachment/NAME"
    source: str  # the field or event the time comes from
    # A moment still to come when the snapshot was read (a deadline the API set), worded as
    # such; every other entry is a moment past (invariants: timeline-time-as-time).
    due: bool = False
    # the fields its time (and words) are read from, as the premise checker re-reads them
    because: tuple[Premise, ...] = ()


def _condition(obj: Obj, ctype: str) -> Obj | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return dict(cond)
    return None


def _pod_ref(pod: Obj) -> str:
    meta = pod["metadata"]
    return f"pod/{meta.get('namespace', '')}/{meta['name']}"


def _controller_uid(pod: Obj) -> str | None:
    for ref in pod["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid"))
    refs = pod["metadata"].get("ownerReferences") or []
    return str(refs[0].get("uid")) if refs else None


def _controller_kind(pod: Obj) -> str:
    refs = pod["metadata"].get("ownerReferences") or []
    ref = next((r for r in refs if r.get("controller")), refs[0] if refs else {})
    return str(ref.get("kind") or "")


# Controllers whose new pod elsewhere never stands in for one on the failed node: a DaemonSet's
# pod belongs to its own node, a static pod's mirror (owned by its Node) to its.
NEVER_REPLACED_ELSEWHERE = ("DaemonSet", "Node")


def _pods_by_controller(snap: Snapshot) -> dict[str, tuple[list[datetime], list[int]]]:
    """For each controller (by its UID, as `_controller_uid` names it): its pods' creation
    times, ascending, and their positions in the snapshot (same order). A pod without a
    creation time is left out: it is never shown as a replacement."""
    table: dict[str, list[tuple[datetime, int]]] = {}
    for i, pod in enumerate(snap.pods):
        owner = _controller_uid(pod)
        created = parse_time(pod["metadata"].get("creationTimestamp"))
        if owner and created:
            table.setdefault(owner, []).append((created, i))
    out = {}
    for owner, pods in table.items():
        pods.sort()
        out[owner] = ([c for c, _ in pods], [i for _, i in pods])
    return out


def _created_since(snap: Snapshot, owners: Iterable[str], since: datetime | None) -> list[int]:
    """Positions of the pods of these controllers created at `since` or later (all of them
    when None), in the snapshot's order: a bisection per controller, never a scan of every
    pod (a DaemonSet has one on each failed node)."""
    by_controller = snap.memo("timeline.by-controller", _pods_by_controller)
    found: list[int] = []
    for owner in owners:
        times, positions = by_controller.get(owner, ([], []))
        found += positions[bisect_left(times, since) if since is not None else 0 :]
    return sorted(found)


def _node_entries(node: Obj, snap: Snapshot) -> list[Entry]:
    name = node["metadata"]["name"]
    ref = f"node/{name}"
    out: list[Entry] = []
    lease = snap.lease(name)
    renewed = parse_time(((lease or {}).get("spec") or {}).get("renewTime"))
    ready = _condition(node, "Ready") or {}
    status = ready.get("status")
    if renewed:
        note = "" if status == "True" else " (none since)"
        out.append(
            Entry(
                renewed,
                "lease-renewed",
                f"kubelet renewed its lease for the last time{note}",
                ref,
                f"Lease kube-node-lease/{name} spec.renewTime",
                because=(fact("Lease", lease or {}, "spec.renewTime"),),
            )
        )
    heartbeat = parse_time(ready.get("lastHeartbeatTime"))
    if heartbeat and status != "True":
        out.append(
            Entry(
                heartbeat,
                "status-posted",
                "kubelet posted node status for the last time",
                ref,
                "Node Ready condition lastHeartbeatTime",
                because=_ready(node, "lastHeartbeatTime"),
            )
        )
    transition = parse_time(ready.get("lastTransitionTime"))
    if transition:
        why = ": ".join(x for x in (ready.get("reason"), ready.get("message")) if x)
        if status == "True":
            out.append(
                Entry(
                    transition,
                    "node-back",
                    f"Ready became True{f' ({why})' if why else ''}",  # not "again": registering
                    ref,
                    "Node Ready condition lastTransitionTime",
                    because=_ready(node, "lastTransitionTime"),
                )
            )
        else:
            out.append(
                Entry(
                    transition,
                    "node-not-ready",
                    f"Ready became {status}{f' ({why})' if why else ''}",
                    ref,
                    "Node Ready condition lastTransitionTime",
                    because=_ready(node, "lastTransitionTime"),
                )
            )
    for taint in (node.get("spec") or {}).get("taints") or []:
        added, source = _taint_time(node, taint)
        if not added:
            continue
        summary = f"taint {_taint_name(taint)} added"
        if taint["key"] == TAINT_OUT_OF_SERVICE:
            by = (node["metadata"].get("annotations") or {}).get(OUT_OF_SERVICE_BY)
            summary += f" (by {by.split(' at ')[0]})" if by else ""
        out.append(
            Entry(added, "taint-added", summary, ref, source, because=_taint_facts(node, taint))
        )
    return out


def _ready(node: Obj, time_field: str) -> tuple[Premise, ...]:
    """The Node's Ready condition: the time read and its status."""
    return (
        fact("Node", node, f"status.conditions[type=Ready].{time_field}"),
        fact("Node", node, "status.conditions[type=Ready].status"),
    )


def _taint_facts(node: Obj, taint: Obj) -> tuple[Premise, ...]:
    """Where a taint's time is read: its timeAdded, else remediate's annotation."""
    if taint.get("timeAdded"):
        return (
            fact(
                "Node", node, f"spec.taints[key={taint['key']},effect={taint['effect']}].timeAdded"
            ),
        )
    return (fact("Node", node, f"metadata.annotations[{OUT_OF_SERVICE_BY}]"),)


def _taint_name(taint: Obj) -> str:
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint['key']}{value}:{taint['effect']}"


def _taint_time(node: Obj, taint: Obj) -> tuple[datetime | None, str]:
    """When a taint was added: its timeAdded (the node lifecycle controller writes it; a taint
    added with kubectl has none, as recorded on 1.36), else, for the out-of-service taint
    that remediate applied, the time in remediate's annotation."""
    added = parse_time(taint.get("timeAdded"))
    if added:
        return added, "Node spec.taints[].timeAdded"
    if taint["key"] == TAINT_OUT_OF_SERVICE:
        by = (node["metadata"].get("annotations") or {}).get(OUT_OF_SERVICE_BY) or ""
        if " at " in by:
            when = parse_time(by.split(" at ", 1)[1].split(" ", 1)[0])
            if when:
                return when, f"Node annotation {OUT_OF_SERVICE_BY}"
    return None, ""


def untimed_taints(snap: Snapshot, node_name: str) -> list[str]:
    """Taints on the node whose time nothing records (not placed in the timeline)."""
    node = snap.node(node_name)
    if node is None:
        return []
    return [
        _taint_name(t)
        for t in (node.get("spec") or {}).get("taints") or []
        if _taint_time(node, t)[0] is None
    ]


def _cond(pod: Obj, ctype: str) -> tuple[Premise, ...]:
    """A pod condition's time and status."""
    return (
        fact("Pod", pod, f"status.conditions[type={ctype}].lastTransitionTime"),
        fact("Pod", pod, f"status.conditions[type={ctype}].status"),
    )


def _pod_entries(pod: Obj, since: datetime | None, now: datetime | None) -> list[Entry]:
    ref = _pod_ref(pod)
    out: list[Entry] = []
    ready = _condition(pod, "Ready") or {}
    not_ready = parse_time(ready.get("lastTransitionTime"))
    if ready.get("status") == "False" and not_ready and (since is None or not_ready >= since):
        out.append(
            Entry(
                not_ready,
                "pod-not-ready",
                "marked not ready (its node is not Ready)",
                ref,
                "Pod Ready condition",
                because=_cond(pod, "Ready"),
            )
        )
    target = _condition(pod, "DisruptionTarget") or {}
    evicted = parse_time(target.get("lastTransitionTime"))
    if target.get("status") == "True" and evicted:
        why = target.get("reason") or "unknown reason"
        out.append(
            Entry(
                evicted,
                "pod-evicted",
                f"evicted: {why}",
                ref,
                "Pod DisruptionTarget condition",
                because=(
                    *_cond(pod, "DisruptionTarget"),
                    fact("Pod", pod, "status.conditions[type=DisruptionTarget].reason"),
                ),
            )
        )
    meta = pod["metadata"]
    deadline = parse_time(meta.get("deletionTimestamp"))
    if deadline:
        grace = int(meta.get("deletionGracePeriodSeconds") or 0)
        deletion = (
            fact("Pod", pod, "metadata.deletionTimestamp"),
            fact("Pod", pod, "metadata.deletionGracePeriodSeconds"),
        )
        out.append(
            Entry(
                shifted(deadline, -grace),
                "pod-deletion-requested",
                f"deletion requested (grace period {grace}s)",
                ref,
                "Pod deletionTimestamp - deletionGracePeriodSeconds",
                because=deletion,
            )
        )
        if grace and now is not None and deadline > now:  # a grace of minutes or hours
            out.append(
                Entry(
                    deadline,
                    "pod-grace-ends",
                    "grace period ends: the object then stays until its kubelet confirms",
                    ref,
                    "Pod deletionTimestamp",
                    due=True,
                    because=deletion[:1],
                )
            )
        elif grace:
            out.append(
                Entry(
                    deadline,
                    "pod-grace-ended",
                    "grace period over: the object stays until its kubelet confirms",
                    ref,
                    "Pod deletionTimestamp",
                    because=deletion[:1],
                )
            )
    return out


def _replaced(pod: Obj, on_node: list[Obj]) -> tuple[str, tuple[Premise, ...]]:
    """The pod here a new pod of its controller stands in for (by name, the only one, or one of
    N), and the facts that make them its controller's pods on this node."""
    same = [p for p in on_node if p["metadata"]["name"] == pod["metadata"]["name"]] or on_node
    owned = f"metadata.ownerReferences[uid={_controller_uid(pod)}].name"
    facts = [f for p in same for f in (fact("Pod", p, "spec.nodeName"), fact("Pod", p, owned))]
    many = f"one of the {len(on_node)} pods its controller has on this node"
    return (_pod_ref(same[0]) if len(same) == 1 else many), (fact("Pod", pod, owned), *facts)


def _replacement_entries(pod: Obj, replaced: tuple[str, tuple[Premise, ...]]) -> list[Entry]:
    ref = _pod_ref(pod)
    out: list[Entry] = []
    created = parse_time(pod["metadata"].get("creationTimestamp"))
    if created:
        out.append(
            Entry(
                created,
                "replacement-created",
                f"replacement created (for {replaced[0]})",
                ref,
                "Pod metadata.creationTimestamp",
                because=(fact("Pod", pod, "metadata.creationTimestamp"), *replaced[1]),
            )
        )
    scheduled = _condition(pod, "PodScheduled") or {}
    when = parse_time(scheduled.get("lastTransitionTime"))
    if when and scheduled.get("status") == "True":
        node = (pod.get("spec") or {}).get("nodeName") or "?"
        out.append(
            Entry(
                when,
                "replacement-scheduled",
                f"replacement scheduled on {node}",
                ref,
                "Pod PodScheduled condition",
                because=(*_cond(pod, "PodScheduled"), fact("Pod", pod, "spec.nodeName")),
            )
        )
    elif when:
        why = ": ".join(x for x in (scheduled.get("reason"), scheduled.get("message")) if x)
        out.append(
            Entry(
                when,
                "replacement-pending",
                f"replacement cannot be scheduled{f' ({why})' if why else ''}",
                ref,
                "Pod PodScheduled condition",
                because=_cond(pod, "PodScheduled"),
            )
        )
    ready = _condition(pod, "Ready") or {}
    ready_at = parse_time(ready.get("lastTransitionTime"))
    if ready_at and ready.get("status") == "True":
        out.append(
            Entry(
                ready_at,
                "replacement-ready",
                "replacement ready",
                ref,
                "Pod Ready condition",
                because=_cond(pod, "Ready"),
            )
        )
    return out


def _volume_entries(snap: Snapshot, node_name: str, pv_names: set[str]) -> list[Entry]:
    out: list[Entry] = []
    for va in snap.attachments(nodes=[node_name], pvs=pv_names):
        spec = va.get("spec") or {}
        pv = (spec.get("source") or {}).get("persistentVolumeName") or ""
        on_node = spec.get("nodeName") == node_name
        if not on_node and pv not in pv_names:
            continue
        ref = f"volumeattachment/{va['metadata']['name']}"
        gone = parse_time(va["metadata"].get("deletionTimestamp"))
        if on_node and gone:
            out.append(
                Entry(
                    gone,
                    "volume-detach-requested",
                    f"detach of {pv or 'a volume'} from {node_name} requested",
                    ref,
                    "VolumeAttachment deletionTimestamp",
                    because=(fact("VolumeAttachment", va, "metadata.deletionTimestamp"),),
                )
            )
        created = parse_time(va["metadata"].get("creationTimestamp"))
        if not on_node and created:
            attached = (va.get("status") or {}).get("attached")
            state = "attached" if attached else "not attached yet"
            out.append(
                Entry(
                    created,
                    "volume-attach-requested",
                    f"attach of {pv} to {spec.get('nodeName')} requested ({state})",
                    ref,
                    "VolumeAttachment creationTimestamp",
                    because=(
                        fact("VolumeAttachment", va, "metadata.creationTimestamp"),
                        fact("VolumeAttachment", va, "status.attached"),
                    ),
                )
            )
    return out


def _event_key(ev: Obj) -> tuple[str, str, str]:
    inv = ev.get("involvedObject") or ev.get("regarding") or {}
    return (inv.get("kind", ""), inv.get("namespace", "") or "", inv.get("name", ""))


def _events_by_object(snap: Snapshot) -> dict[tuple[str, str, str], list[int]]:
    """Positions of the events about each object (core/v1 or events.k8s.io fields)."""
    table: dict[tuple[str, str, str], list[int]] = {}
    for i, ev in enumerate(snap.events):
        table.setdefault(_event_key(ev), []).append(i)
    return table


# where an event's time is read, first found first (core/v1, then events.k8s.io)
EVENT_TIMES = (
    "lastTimestamp",
    "eventTime",
    "series.lastObservedTime",
    "metadata.creationTimestamp",
)


def _event_entries(snap: Snapshot, refs: dict[tuple[str, str, str], str]) -> list[Entry]:
    out: list[Entry] = []
    index = snap.memo("timeline.events", _events_by_object)
    for at in sorted(i for key in refs for i in index.get(key, [])):
        ev = snap.events[at]
        key = _event_key(ev)
        path = next((p for p in EVENT_TIMES if read(ev, p)), EVENT_TIMES[0])
        when = parse_time(read(ev, path))
        if not when:
            continue
        count = int(ev.get("count") or (ev.get("series") or {}).get("count") or 1)
        times = f" ({count} times)" if count > 1 else ""
        message = " ".join(str(ev.get("message") or ev.get("note") or "").split())
        out.append(
            Entry(
                when,
                "event",
                f"event {ev.get('reason', '')}: {message}{times}",
                refs[key],
                f"Event {ev['metadata'].get('name', '')} ({ev.get('type', 'Normal')})",
                because=(fact("Event", ev, path), fact("Event", ev, "reason")),
            )
        )
    return out


def _automation_entries(
    node: Obj, snap: Snapshot, coverage: list[automation.Coverage] | None
) -> list[Entry]:
    """When the node's automation started remediating it (stalled: not finished since), or when
    its timeout fell due (overdue: passed without it acting). `coverage`: as found (or here)."""
    words_of = {
        automation.ACTING: "remediation started",
        automation.DUE: "timeout passed",
        automation.OVERDUE: "timeout passed; it has not acted since",
        automation.STALLED: "remediation started; not finished since",
    }
    out = []
    found = automation.covering(node, snap, snap.captured_at) if coverage is None else coverage
    for cov in found:
        words = words_of.get(cov.state)
        if cov.at is None or words is None:
            continue
        last = cov.claims[-1]
        source = ", ".join(f"{p.object} {p.field}" for p in last.because[:1])
        out.append(
            Entry(
                cov.at,
                "automation",
                f"{cov.automation}: {words}",
                cov.object,
                source,
                because=tuple(last.because[:1]),
            )
        )
    return out


def node_timeline(
    snap: Snapshot, node_name: str, coverage: list[automation.Coverage] | None = None
) -> list[Entry]:
    """Everything the snapshot records about the failure of `node_name`, oldest first.
    Empty when the snapshot has no such node. `coverage`: the node's automation as the
    diagnosis found it at the snapshot's time (None: found here)."""
    node = snap.node(node_name)
    if node is None:
        return []
    entries = _node_entries(node, snap)
    failed_at = next((e.time for e in entries if e.kind == "node-not-ready"), None)
    on_node = snap.pods_on(node_name)
    refs: dict[tuple[str, str, str], str] = {("Node", "", node_name): f"node/{node_name}"}
    pv_names: set[str] = set()
    mine: dict[str, list[Obj]] = {}  # a controller -> its pods on the node
    for pod in on_node:
        entries += _pod_entries(pod, failed_at, snap.captured_at)
        meta = pod["metadata"]
        refs[("Pod", meta.get("namespace", ""), meta["name"])] = _pod_ref(pod)
        owner = _controller_uid(pod)
        if owner and _controller_kind(pod) not in NEVER_REPLACED_ELSEWHERE:
            mine.setdefault(owner, []).append(pod)
        for vol in (pod.get("spec") or {}).get("volumes") or []:
            claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
            pvc = snap.pvc(meta.get("namespace", ""), claim) if claim else None
            if pvc and (pvc.get("spec") or {}).get("volumeName"):
                pv_names.add(pvc["spec"]["volumeName"])
    # replacements: pods of the same controllers, elsewhere, created since the node failed
    on_node_uids = {p["metadata"].get("uid") for p in on_node}
    for at in _created_since(snap, mine, failed_at):
        pod = snap.pods[at]
        meta = pod["metadata"]
        if meta.get("uid") in on_node_uids:
            continue
        if _controller_kind(pod) == "StatefulSet" and not any(
            p["metadata"]["name"] == meta["name"] for p in on_node
        ):
            continue  # a StatefulSet replaces a pod only under its own name (a new ordinal is not)
        entries += _replacement_entries(pod, _replaced(pod, mine[str(_controller_uid(pod))]))
        refs[("Pod", meta.get("namespace", ""), meta["name"])] = _pod_ref(pod)
    entries += _volume_entries(snap, node_name, pv_names)
    for kind, namespace, name in automation.timeline_objects(node, snap):
        refs[(kind, namespace, name)] = "/".join(x for x in (kind.lower(), namespace, name) if x)
    entries += _automation_entries(node, snap, coverage)
    entries += _event_entries(snap, refs)
    rank = {kind: i for i, kind in enumerate(ORDER)}
    return sorted(
        entries,
        key=lambda e: (e.time, rank.get(e.kind, len(ORDER)), e.object),
    )


def to_data(entries: list[Entry], now: datetime) -> list[Obj]:
    """JSON-ready entries: times in RFC 3339 (UTC) and seconds before `now`."""
    return [
        {
            "time": format_time(e.time),
            "secondsAgo": round((now - e.time).total_seconds()),
            "kind": e.kind,
            "summary": e.summary,
            "object": e.object,
            "source": e.source,
            **({"due": True} if e.due else {}),
            "because": [
                {"object": p.object, "field": p.field, "value": p.value} for p in e.because
            ],
        }
        for e in entries
    ]
