"""The storage parts kwok does not play, for the volume scenarios: a CSI PersistentVolume, the
CSI external-attacher (it marks VolumeAttachments attached and, when it holds its finalizer,
finishes a detach by removing it) and the kubelet's volume report (node.status.volumesInUse).
Everything else is the real attach-detach controller's doing."""

from __future__ import annotations

import json
from typing import Any

from tests.e2e.controlplane import ControlPlane

Obj = dict[str, Any]
DRIVER = "csi.e2e.nodefail"
ATTACHER_FINALIZER = f"external-attacher/{DRIVER.replace('.', '-')}"
MANAGED_ATTACH = "volumes.kubernetes.io/controller-managed-attach-detach=true"


def csi_pv(name: str, handle: str, namespace: str, claim: str) -> Obj:
    """A ReadWriteOnce CSI volume reserved for one claim."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "manual",
            "persistentVolumeReclaimPolicy": "Retain",
            "csi": {"driver": DRIVER, "volumeHandle": handle},
            "claimRef": {"namespace": namespace, "name": claim},
        },
    }


def pvc(namespace: str, name: str, pv: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "manual",
            "volumeName": pv,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }


def in_use_name(handle: str) -> str:
    """How a kubelet names a mounted CSI volume in node.status.volumesInUse."""
    return f"kubernetes.io/csi/{DRIVER}^{handle}"


def manage_attach(cp: ControlPlane, *nodes: str) -> None:
    """What a kubelet announces: the attach-detach controller attaches volumes for its pods."""
    for node in nodes:
        cp.kubectl("annotate", "node", node, "--overwrite", MANAGED_ATTACH)


def report_in_use(cp: ControlPlane, node: str, handles: list[str]) -> None:
    """The kubelet's report of the volumes it mounted (kwok writes none). Without it the
    controller thinks nothing is mounted there and detaches as soon as no pod uses a volume."""
    cp.kubectl(
        "patch",
        "node",
        node,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": {"volumesInUse": [in_use_name(h) for h in handles]}}),
    )


def attachments(cp: ControlPlane, pv: str) -> list[Obj]:
    data = cp.get("volumeattachments")
    return [
        v
        for v in (data or {}).get("items", [])
        if v["spec"]["source"].get("persistentVolumeName") == pv
    ]


def play_attacher(cp: ControlPlane, pv: str, finalizer: bool = False) -> list[Obj]:
    """One pass of the external-attacher over the PV's attachments: pending ones are marked
    attached (with its finalizer first when `finalizer`, as the real sidecar does, so that a
    detach leaves a deletionTimestamp behind). Returns the attachments as they were found."""
    found = attachments(cp, pv)
    for va in found:
        meta = va["metadata"]
        if (va.get("status") or {}).get("attached") or meta.get("deletionTimestamp"):
            continue
        if finalizer and ATTACHER_FINALIZER not in (meta.get("finalizers") or []):
            cp.kubectl(
                "patch",
                "volumeattachment",
                meta["name"],
                "--type=merge",
                "-p",
                json.dumps({"metadata": {"finalizers": [ATTACHER_FINALIZER]}}),
                check=False,
            )
        cp.kubectl(
            "patch",
            "volumeattachment",
            meta["name"],
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": {"attached": True}}),
            check=False,
        )
    return found


def finish_detach(cp: ControlPlane, va: Obj) -> None:
    """The external-attacher's end of a detach: its finalizer removed, the object goes."""
    cp.kubectl(
        "patch",
        "volumeattachment",
        va["metadata"]["name"],
        "--type=json",
        "-p",
        json.dumps([{"op": "remove", "path": "/metadata/finalizers"}]),
        check=False,
    )


def attached_to(cp: ControlPlane, pv: str, node: str, finalizer: bool = False) -> list[Obj]:
    """Play the attacher once, then the PV's attachments on `node` marked attached."""
    play_attacher(cp, pv, finalizer)
    return [
        v
        for v in attachments(cp, pv)
        if v["spec"]["nodeName"] == node and (v.get("status") or {}).get("attached")
    ]
