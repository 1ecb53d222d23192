"""Volumes that keep a replacement from starting: RWO attachments still on the dead node."""

from __future__ import annotations

from datetime import datetime

from kubectl_nodefail.analysis import claims as said
from kubectl_nodefail.analysis import facts
from kubectl_nodefail.analysis.claims import Claim, Premise, fact
from kubectl_nodefail.analysis.leader import leader
from kubectl_nodefail.analysis.pv_affinity import names_only, volume_nodes
from kubectl_nodefail.analysis.text import duration
from kubectl_nodefail.snapshot.model import Obj, Snapshot, format_time, parse_time, shifted

SINGLE_NODE_MODES = {"ReadWriteOnce", "ReadWriteOncePod"}
# After the force-detach timeout: the reconciler's 100 ms loop, the detach call and the API
# write of the VolumeAttachment's deletion, with room for a loaded controller-manager.
FORCE_DETACH_SLACK_SECONDS = 60


def claim_names(pod: Obj) -> list[str]:
    """The PVC names the pod's volumes use: persistentVolumeClaim ones, and the claim a generic
    ephemeral volume gets (POD-VOLUME, made by the ephemeral volume controller)."""
    out = []
    for vol in (pod.get("spec") or {}).get("volumes") or []:
        claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
        if claim:
            out.append(claim)
        elif vol.get("ephemeral") is not None and vol.get("name"):
            out.append(f"{pod['metadata']['name']}-{vol['name']}")
    return out


def claimed_volumes(pod: Obj, snap: Snapshot) -> list[tuple[str, Obj | None, Obj | None]]:
    """(claim name, PVC, PV) for every claimed volume of the pod (PVC/PV None when not read)."""
    out = []
    namespace = pod["metadata"].get("namespace", "")
    for claim in claim_names(pod):
        pvc = snap.pvc(namespace, claim)
        pv_name = ((pvc or {}).get("spec") or {}).get("volumeName")
        out.append((claim, pvc, snap.pv(pv_name) if pv_name else None))
    return out


def attachment_on(snap: Snapshot, pv_name: str, node: str) -> Obj | None:
    for va in snap.attachments(pvs=[pv_name]):
        spec = va.get("spec") or {}
        if (
            spec.get("nodeName") == node
            and (spec.get("source") or {}).get("persistentVolumeName") == pv_name
        ):
            return va
    return None


def held_by_failed_node(
    pod: Obj, snap: Snapshot, failed_nodes: set[str]
) -> list[tuple[str, str, Obj]]:
    """(claim, PV, VolumeAttachment) for each volume of a pod waiting to start elsewhere whose
    attachment is still on a failed node: the pod cannot start until it detaches."""
    if (pod.get("status") or {}).get("phase") != "Pending" or pod["metadata"].get(
        "deletionTimestamp"
    ):
        return []
    own = (pod.get("spec") or {}).get("nodeName") or ""
    out = []
    for claim, pvc, pv in claimed_volumes(pod, snap):
        pv_name = ((pvc or {}).get("spec") or {}).get("volumeName") or ""
        modes = set(((pv or pvc or {}).get("spec") or {}).get("accessModes") or [])
        if not pv_name or not (modes & SINGLE_NODE_MODES):
            continue
        for va in snap.attachments(pvs=[pv_name]):
            spec = va.get("spec") or {}
            node = spec.get("nodeName") or ""
            if (
                node != own
                and node in failed_nodes
                and (spec.get("source") or {}).get("persistentVolumeName") == pv_name
            ):
                out.append((claim, pv_name, va))
    return out


def _running(statuses: list[Obj]) -> bool:
    """Some container with neither a waiting nor a terminated state (what the attach-detach
    controller calls running: an empty state counts, an empty `waiting: {}` does not)."""
    return any(
        (st.get("state") or {}).get("waiting") is None
        and (st.get("state") or {}).get("terminated") is None
        for st in statuses
    )


def _terminated(pod: Obj) -> bool:
    """The attach-detach controller's test (volume util IsPodTerminated): Succeeded or Failed,
    or deleted with no container running. A Terminating pod of a dead node still reports its
    containers running, so it keeps its volumes attached there."""
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return True
    return bool(pod["metadata"].get("deletionTimestamp")) and not any(
        _running(status.get(key) or [])
        for key in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses")
    )


def users_of(snap: Snapshot, node: str, pv_name: str) -> list[Obj]:
    """Pod objects on `node` that use the PV and are not terminated: while one exists, the
    volume stays in the controller's desired state for that node and is never detached."""
    out = []
    for pod in snap.pods_on(node):
        if _terminated(pod):
            continue
        if any(
            (pv or {}).get("metadata", {}).get("name") == pv_name
            or (((pvc or {}).get("spec") or {}).get("volumeName") == pv_name)
            for _, pvc, pv in claimed_volumes(pod, snap)
        ):
            out.append(pod)
    return out


def reported_mounted(snap: Snapshot, node: str, pv_name: str) -> bool | None:
    """Whether the node's last status lists the CSI volume in status.volumesInUse (as
    kubernetes.io/csi/DRIVER^HANDLE); None when the node or the PV's CSI source is unknown."""
    unique = in_use_name(snap.pv(pv_name) or {})
    node_obj = snap.node(node)
    if unique is None or node_obj is None:
        return None
    return unique in ((node_obj.get("status") or {}).get("volumesInUse") or [])


def in_use_name(pv: Obj) -> str | None:
    """A CSI PersistentVolume's name as a node reports it in status.volumesInUse
    (kubernetes.io/csi/DRIVER^HANDLE); None when it is not CSI or lacks either."""
    csi = (pv.get("spec") or {}).get("csi") or {}
    driver, handle = csi.get("driver"), csi.get("volumeHandle")
    if not isinstance(driver, str) or not isinstance(handle, str) or not driver or not handle:
        return None
    return f"kubernetes.io/csi/{driver}^{handle}"


def pod_name(pod: Obj) -> str:
    """NAMESPACE/NAME."""
    return f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"


def _last_user_gone_by(
    snap: Snapshot, node: str, pv_name: str, attached: datetime | None = None
) -> tuple[datetime, Premise] | None:
    """A time by which no pod object on `node` used the PV any more, and the fact that shows
    it: the creation of a StatefulSet pod elsewhere that uses it (the StatefulSet makes a pod of
    that name only once the old object is gone, and a claim of its template belongs to that one
    pod), or the first Multi-Attach error saying the volume is "already exclusively attached"
    (the attach-detach controller words it so only when no pod of its desired state uses the
    volume on the other node: reconciler.reportMultiAttachError), whichever is earlier; an error
    from before `attached` (the attachment's creation) tells of an earlier one, not this."""
    found: list[tuple[datetime, Premise]] = []
    for p in _pods_claiming(snap, pv_name):
        created = parse_time(p["metadata"].get("creationTimestamp"))
        if (
            created is not None
            and (p.get("spec") or {}).get("nodeName") != node
            and any(
                ref.get("controller") and ref.get("kind") == "StatefulSet"
                for ref in p["metadata"].get("ownerReferences") or []
            )
            and any(
                ((pvc or {}).get("spec") or {}).get("volumeName") == pv_name
                for _, pvc, _ in claimed_volumes(p, snap)
            )
        ):
            found.append((created, fact("Pod", p, "metadata.creationTimestamp")))
    for event in snap.memo("storage.failed-attach", _failed_attach_events):
        message = event.get("message") or ""
        if f'"{pv_name}"' in message and EXCLUSIVE in message:
            stamp = "firstTimestamp" if event.get("firstTimestamp") else "eventTime"
            seen = parse_time(event.get(stamp))
            if seen is not None and (attached is None or seen >= attached):
                found.append((seen, fact("Event", event, stamp)))
    return min(found, key=lambda f: f[0], default=None)


# The attach-detach controller's Multi-Attach words when no pod on the other node wants the
# volume (pkg/controller/volume/attachdetach/reconciler reportMultiAttachError)
EXCLUSIVE = "already exclusively attached to one node"


def _pods_claiming(snap: Snapshot, pv_name: str) -> list[Obj]:
    """The pods with a claim that the snapshot's PVC of that name binds to the PV (each once,
    in the snapshot's order): where `claimed_volumes` would find the PV."""
    by_pv = snap.memo("storage.pods-by-pv", _pods_by_pv)
    return [snap.pods[i] for i in by_pv.get(pv_name, [])]


def _pods_by_pv(snap: Snapshot) -> dict[str | None, list[int]]:
    table: dict[str | None, list[int]] = {}
    for i, pod in enumerate(snap.pods):
        for pv in dict.fromkeys(
            ((pvc or {}).get("spec") or {}).get("volumeName")
            for _, pvc, _ in claimed_volumes(pod, snap)
        ):
            table.setdefault(pv, []).append(i)
    return table


def _names(pods: list[Obj]) -> str:
    return ", ".join(
        pod_name(p) + (" (Terminating)" if p["metadata"].get("deletionTimestamp") else "")
        for p in pods
    )


def _ready(node: Obj | None) -> bool:
    """The node's Ready condition is True (nodes.is_ready, which imports this module)."""
    conditions = ((node or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def detach_outlook(
    va: Obj,
    snap: Snapshot,
    now: datetime,
    *,
    node_ready: bool | None = None,
) -> str:
    """When the attach-detach controller detaches this attachment from its node, by its
    reconciler's rules (v1.36 pkg/controller/volume/attachdetach/reconciler): never while a
    pod object there is not terminated; at once with the out-of-service taint; else at once if
    the node does not report the volume mounted (status.volumesInUse); else, on a node not
    Ready, after the force-detach timeout, and on a Ready node once its kubelet unmounts it.
    A force-detach more than the timeout past `_last_user_gone_by` is overdue. `node_ready`:
    as the node's Ready condition says, unless given (a Ready node its kubelet left, with a
    leader running, is Ready to the controller too: no force-detach there)."""
    spec = va.get("spec") or {}
    node = spec.get("nodeName") or ""
    if node_ready is None:
        node_ready = _ready(snap.node(node))
    pv = (spec.get("source") or {}).get("persistentVolumeName") or ""
    requested = parse_time(va["metadata"].get("deletionTimestamp"))
    if requested:
        return (
            f"detach requested {duration((now - requested).total_seconds())} ago: the "
            "VolumeAttachment goes once the CSI driver's attacher has detached the volume"
        )
    users = users_of(snap, node, pv) if pv else []
    if users:
        one = len(users) == 1
        when = (
            f"not detached while pod object{'' if one else 's'} {_names(users)} still "
            f"{'uses' if one else 'use'} it on {node}; once {'it is' if one else 'they are'} gone, "
        )
    else:  # none uses it now (what follows is from then on)
        when = f"no pod object on {node} uses it; "
    chief = leader(snap)
    if chief is not None and chief.expired():
        held = (
            f", nor while pod object{'' if len(users) == 1 else 's'} {_names(users)} still "
            f"{'uses' if len(users) == 1 else 'use'} it on {node}"
            if users
            else ""
        )
        return (
            f"not detached while {chief.no_leader(now)}{held}; once a leader runs"
            + (" and no pod object uses it there" if users else "")
            + ", its attach-detach controller detaches it (at once under the out-of-service "
            "taint or if the node does not report it mounted, else after its force-detach wait, "
            "counted from its start)"
        )
    taints = ((snap.node(node) or {}).get("spec") or {}).get("taints") or []
    if any(t.get("key") == facts.TAINT_OUT_OF_SERVICE for t in taints):
        return f"{when}detached at once: the out-of-service taint is on {node}"
    mounted = reported_mounted(snap, node, pv) if pv else None
    if mounted is False:
        return (
            f"{when}detached at once, since {node} does not report it mounted (status.volumesInUse)"
        )
    if node_ready:
        return (
            f"{when}detached after {node}'s kubelet unmounts it and drops it from "
            f"status.volumesInUse ({node} is Ready: no force-detach)"
        )
    minutes = facts.FORCE_DETACH_SECONDS // 60
    minor = snap.server_minor
    flag = minor is None or minor >= facts.DISABLE_FORCE_DETACH_FLAG_MINOR
    disabled = "kube-controller-manager runs with --disable-force-detach-on-timeout"
    unless = (
        f"unless {disabled}; " if flag else ""
    ) + "the out-of-service taint detaches it at once"
    made = parse_time(va["metadata"].get("creationTimestamp"))
    gone = None if users else _last_user_gone_by(snap, node, pv, made)
    gone_by = gone[0] if gone is not None else None
    # The wait lives in the controller's memory: a new leader starts it again at its start.
    started = (
        chief.since
        if chief is not None and gone_by is not None and chief.after(gone_by)
        else gone_by
    )
    restarted = (
        chief is not None
        and not users
        and (now - chief.since).total_seconds() < facts.FORCE_DETACH_SECONDS
        and (gone_by is None or chief.after(gone_by))
    )
    if mounted and started is not None and gone_by is not None:
        waited = (now - started).total_seconds()
        if waited > facts.FORCE_DETACH_SECONDS + FORCE_DETACH_SLACK_SECONDS:
            why = (
                "its attach-detach controller is down or restarted (the timer lives in its "
                "memory and starts again)"
                if chief is None
                else "its attach-detach controller is disabled (--controllers) or overloaded"
                if chief.alive()
                else "its attach-detach controller is disabled (--controllers), down or overloaded"
            )
            since = (
                f"kube-controller-manager's current leader took over {duration(waited)} ago, "
                f"after the last pod object using it on {node} was gone"
                if started != gone_by
                else f"the last pod object using it on {node} was gone over {duration(waited)} ago"
            )
            return (
                f"overdue: {since}, {minutes} minutes is the force-detach timeout, and "
                "no detach was requested: "
                + (f"{disabled}, or " if flag else "")
                + f"{why}; the out-of-service taint detaches it at once"
            )
    again = (
        f", and not before about {format_time(shifted(chief.since, facts.FORCE_DETACH_SECONDS))}"
        f": {chief.words()}, and the attach-detach controller's wait lives in its memory, so "
        "it started no earlier"
        if restarted and chief is not None
        else ""
    )
    after = (
        f"{minutes} minutes later{again}"  # than the last user's going, said before
        if users
        # none left: the controller's wait has begun; when, as far as the facts say
        else f"by about {format_time(shifted(started, facts.FORCE_DETACH_SECONDS))} ({minutes} "
        + (
            "minutes after kube-controller-manager's current leader took over, after the last "
            f"pod object using it on {node} was gone)"
            if started != gone_by
            else f"minutes after {format_time(gone_by)}, by when the last pod object using it "
            f"on {node} was gone)"
        )
        if started is not None and gone_by is not None
        else f"{minutes} minutes after the last one using it there was gone (when, the snapshot "
        f"does not show){again}"
    )
    if mounted:
        return (
            f"{when}force-detached {after}, since {node} last reported it mounted "
            f"(status.volumesInUse), {unless}"
        )
    return (
        f"{when}force-detached {after} if {node} last reported it mounted "
        f"(status.volumesInUse), at once if not; {unless}"
    )


def multi_attach_claims(pod: Obj, snap: Snapshot, now: datetime, label: str) -> list[Claim]:
    """The pod's Multi-Attach error events, newest time shown, each resting on its event."""
    out = []
    for event in snap.events_about(
        "Pod", pod["metadata"].get("namespace", ""), pod["metadata"]["name"]
    ):
        if event.get("reason") == "FailedAttachVolume" and "Multi-Attach" in (
            event.get("message") or ""
        ):
            seen = parse_time(event.get("lastTimestamp") or event.get("eventTime"))
            since = f" (last {duration((now - seen).total_seconds())} ago)" if seen else ""
            out.append(
                said.claim(
                    "volume",
                    "storage",
                    f"{label}Multi-Attach error{since}: {event.get('message')}",
                    fact("Event", event, "reason"),
                    fact("Event", event, "message"),
                    fact("Event", event, "involvedObject.name"),
                )
            )
    return out


def multi_attach_notes(pod: Obj, snap: Snapshot, now: datetime, label: str) -> list[str]:
    """The texts of `multi_attach_claims`."""
    return [c.text for c in multi_attach_claims(pod, snap, now, label)]


def detach_facts(va: Obj, snap: Snapshot) -> list[Premise]:
    """What `detach_outlook` reads: the attachment, the pod objects there that still use it,
    and its node's taints, mounted volumes and readiness."""
    spec = va.get("spec") or {}
    name = spec.get("nodeName") or ""
    node = snap.node(name)
    pv = (spec.get("source") or {}).get("persistentVolumeName") or ""
    out = [
        fact("VolumeAttachment", va, "spec.nodeName"),
        fact("VolumeAttachment", va, "metadata.deletionTimestamp"),
    ]
    users = users_of(snap, name, pv) if pv else []
    out += [fact("Pod", p, "spec.nodeName") for p in users]
    made = parse_time(va["metadata"].get("creationTimestamp"))
    gone = None if users or not pv else _last_user_gone_by(snap, name, pv, made)
    if gone is not None:  # when the last pod object there was gone, at the latest
        out += [gone[1], fact("VolumeAttachment", va, "metadata.creationTimestamp")]
    if node is not None:
        out += [fact("Node", node, "spec.taints"), fact("Node", node, "status.volumesInUse")]
        out.append(fact("Node", node, "status.conditions[type=Ready].status"))  # force-detach?
    chief = leader(snap)
    if chief is not None:  # when the controller's wait started, at the latest; if it runs
        out += [
            chief.premise(),
            chief.premise("renewTime"),
            chief.premise("leaseDurationSeconds"),
        ]
    return out


def holds_single_node_volume(pod: Obj, snap: Snapshot) -> bool:
    for _, pvc, pv in claimed_volumes(pod, snap):
        modes = set(((pv or pvc or {}).get("spec") or {}).get("accessModes") or [])
        if modes & SINGLE_NODE_MODES or (pvc is not None and not modes):
            return True
    return False


def blockers(
    pod: Obj, node: str, replacement_pods: list[Obj], snap: Snapshot, now: datetime
) -> list[Claim]:
    """What of the pod's volumes keeps it or its replacement from running elsewhere."""
    out: list[Claim] = []
    volumes = fact("Pod", pod, "spec.volumes")
    for claim_name, pvc, pv in claimed_volumes(pod, snap):
        if pvc is None:
            out.append(
                said.claim(
                    "volume",
                    "storage",
                    f"PVC {claim_name}: not read (cannot tell whether it blocks a replacement)",
                    volumes,
                )
            )
            continue
        modes = set((pvc.get("spec") or {}).get("accessModes") or [])
        pv_name = (pvc.get("spec") or {}).get("volumeName") or ""
        rwo = bool(modes & SINGLE_NODE_MODES)
        va = attachment_on(snap, pv_name, node) if pv_name else None
        local = bool(((pv or {}).get("spec") or {}).get("local")) or bool(
            ((pv or {}).get("spec") or {}).get("hostPath")
        )
        pinned = pv is not None and pinning_volume_of(pv, snap, node)
        bound = fact("PersistentVolumeClaim", pvc, "spec.volumeName")
        if pv is not None and (local or pinned):
            why = f"its node affinity allows only {node}" if pinned else f"on {node}"
            out.append(
                said.claim(
                    "volume",
                    "storage",
                    f"PVC {claim_name} -> PV {pv_name} is a local volume ({why}): its data is "
                    "only on that machine; a replacement can only run there",
                    bound,
                    fact("PersistentVolume", pv, "spec.nodeAffinity"),
                    fact("PersistentVolume", pv, "spec.local"),
                    fact("PersistentVolume", pv, "spec.hostPath"),
                )
            )
        if va is not None and rwo:
            attached = (va.get("status") or {}).get("attached")
            held = [
                bound,
                fact("PersistentVolumeClaim", pvc, "spec.accessModes"),
                fact("VolumeAttachment", va, "spec.nodeName"),
                fact("VolumeAttachment", va, "status.attached"),
            ]
            out.append(
                said.claim(
                    "volume",
                    "storage",
                    f"PVC {claim_name} ({'/'.join(sorted(modes))}) -> PV {pv_name} is still "
                    f"attached to {node} (VolumeAttachment {va['metadata']['name']}, "
                    f"attached={attached}): a replacement elsewhere waits for detach",
                    *held,
                )
            )
            outlook = detach_outlook(va, snap, now)
            out.append(
                said.claim("volume", "storage", f"detach: {outlook}", *detach_facts(va, snap))
            )
        elif rwo and not pv_name:
            out.append(said.claim("volume", "storage", f"PVC {claim_name} is not bound", bound))
    for rep in replacement_pods:
        out += multi_attach_claims(rep, snap, now, f"replacement {rep['metadata']['name']}: ")
    return out


def pinning_volume_of(pv: Obj, snap: Snapshot, node: str) -> bool:
    """The PV allows no node but `node` (a local volume on it): a pod using it, recreated, can
    only run there. Only when every term of its node affinity names that node (the snapshot
    may hold only some of the nodes)."""
    here = snap.node(node)
    if here is None or volume_nodes(pv, snap.nodes) != [node]:
        return False
    terms = ((pv["spec"].get("nodeAffinity") or {}).get("required") or {}).get("nodeSelectorTerms")
    return all(names_only(t, here) for t in terms or [])


def pinning_volume(pod: Obj, snap: Snapshot, node: str) -> tuple[str, Obj, Obj] | None:
    """(claim name, PVC, PV) of the first claimed volume pinned to `node` (pinning_volume_of)."""
    for claim, pvc, pv in claimed_volumes(pod, snap):
        if pvc is not None and pv is not None and pinning_volume_of(pv, snap, node):
            return claim, pvc, pv
    return None


def _failed_attach_events(snap: Snapshot) -> list[Obj]:
    return [e for e in snap.events if e.get("reason") == "FailedAttachVolume"]


def attached_volumes(snap: Snapshot, name: str, now: datetime, ready: bool) -> list[str]:
    """VolumeAttachments that still bind volumes to this node, with Multi-Attach complaints
    and when the attach-detach controller detaches them."""
    out = []
    failed_attach = snap.memo("storage.failed-attach", _failed_attach_events)
    for va in snap.attachments(nodes=[name]):
        spec = va.get("spec") or {}
        pv = (spec.get("source") or {}).get("persistentVolumeName") or "(inline volume)"
        attached = (va.get("status") or {}).get("attached")
        complaints = [e for e in failed_attach if f'"{pv}"' in (e.get("message") or "")]
        note = f"{pv} (VolumeAttachment {va['metadata']['name']}, attached={attached})"
        if complaints:
            pods = sorted({(e.get("involvedObject") or {}).get("name", "?") for e in complaints})
            note += f": Multi-Attach errors on {', '.join(pods)} waiting for it"
        outlook = detach_outlook(va, snap, now, node_ready=ready)
        out.append(f"{note}; detach: {outlook}")
    return out
