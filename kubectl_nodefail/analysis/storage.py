"""Volumes that keep a replacement from starting: RWO attachments still on the dead node."""

from __future__ import annotations

from datetime import datetime

from kubectl_nodefail.analysis import facts
from kubectl_nodefail.analysis.text import duration
from kubectl_nodefail.snapshot import Obj, Snapshot, parse_time

SINGLE_NODE_MODES = {"ReadWriteOnce", "ReadWriteOncePod"}


def claimed_volumes(pod: Obj, snap: Snapshot) -> list[tuple[str, Obj | None, Obj | None]]:
    """(claim name, PVC, PV) for every PVC volume of the pod (PVC/PV None when not read)."""
    out = []
    namespace = pod["metadata"].get("namespace", "")
    for vol in (pod.get("spec") or {}).get("volumes") or []:
        claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
        if not claim:
            continue
        pvc = snap.pvc(namespace, claim)
        pv_name = ((pvc or {}).get("spec") or {}).get("volumeName")
        out.append((claim, pvc, snap.pv(pv_name) if pv_name else None))
    return out


def attachment_on(snap: Snapshot, pv_name: str, node: str) -> Obj | None:
    for va in snap.volume_attachments:
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
        for va in snap.volume_attachments:
            spec = va.get("spec") or {}
            node = spec.get("nodeName") or ""
            if (
                node != own
                and node in failed_nodes
                and (spec.get("source") or {}).get("persistentVolumeName") == pv_name
            ):
                out.append((claim, pv_name, va))
    return out


def multi_attach_notes(pod: Obj, snap: Snapshot, now: datetime, label: str) -> list[str]:
    """The pod's Multi-Attach error events, newest time shown."""
    notes = []
    for event in snap.events_about(
        "Pod", pod["metadata"].get("namespace", ""), pod["metadata"]["name"]
    ):
        if event.get("reason") == "FailedAttachVolume" and "Multi-Attach" in (
            event.get("message") or ""
        ):
            seen = parse_time(event.get("lastTimestamp") or event.get("eventTime"))
            since = f" (last {duration((now - seen).total_seconds())} ago)" if seen else ""
            notes.append(f"{label}Multi-Attach error{since}: {event.get('message')}")
    return notes


def holds_single_node_volume(pod: Obj, snap: Snapshot) -> bool:
    for _, pvc, pv in claimed_volumes(pod, snap):
        modes = set(((pv or pvc or {}).get("spec") or {}).get("accessModes") or [])
        if modes & SINGLE_NODE_MODES or (pvc is not None and not modes):
            return True
    return False


def blockers(
    pod: Obj, node: str, replacement_pods: list[Obj], snap: Snapshot, now: datetime
) -> list[str]:
    notes: list[str] = []
    for claim, pvc, pv in claimed_volumes(pod, snap):
        if pvc is None:
            notes.append(f"PVC {claim}: not read (cannot tell whether it blocks a replacement)")
            continue
        modes = set((pvc.get("spec") or {}).get("accessModes") or [])
        pv_name = (pvc.get("spec") or {}).get("volumeName") or ""
        rwo = bool(modes & SINGLE_NODE_MODES)
        va = attachment_on(snap, pv_name, node) if pv_name else None
        local = bool(((pv or {}).get("spec") or {}).get("local")) or bool(
            ((pv or {}).get("spec") or {}).get("hostPath")
        )
        if local:
            notes.append(
                f"PVC {claim} -> PV {pv_name} is a local volume on {node}: its data "
                "is only on that machine; a replacement can only run there"
            )
        if va is not None and rwo:
            attached = (va.get("status") or {}).get("attached")
            notes.append(
                f"PVC {claim} ({'/'.join(sorted(modes))}) -> PV {pv_name} is still attached to "
                f"{node} (VolumeAttachment {va['metadata']['name']}, attached={attached}): "
                "a replacement elsewhere waits for detach"
            )
            deleted = pod["metadata"].get("deletionTimestamp")
            if deleted:
                notes.append(
                    f"force-detach: the attach-detach controller detaches after "
                    f"{facts.FORCE_DETACH_SECONDS // 60} minutes only "
                    "once the pod object is gone or terminated; this Terminating pod keeps it "
                    "waiting (never, if kube-controller-manager runs with "
                    "--disable-force-detach-on-timeout). The out-of-service taint detaches at once"
                )
            else:
                notes.append(
                    "force-detach timer has not started: the pod still exists and is not terminated"
                )
        elif rwo and not pv_name:
            notes.append(f"PVC {claim} is not bound")
    for rep in replacement_pods:
        notes += multi_attach_notes(rep, snap, now, f"replacement {rep['metadata']['name']}: ")
    return notes
