"""The parts of storage kwok does not play, for the scenarios whose pods mount a volume (scenarios
`volume`, map row 25). Played at each poll of a batch (Batch.poll), as their API effects:

- the CSI external-attacher: a VolumeAttachment of the batch's volumes is marked attached
  (no finalizer: a detach the attach-detach controller asks for removes it at once);
- the kubelet's volume manager: a pod is held (WAIT_ATTACH, which the kwok stages of the nodes
  labelled ATTACH_LABEL wait for) until its volume is attached to its node, and a live node
  reports the volumes its pods mounted in status.volumesInUse; a node whose kubelet is stopped
  writes nothing, so it keeps reporting what it had mounted.

Everything else, attaching, Multi-Attach, the detach and its force-detach timer, is the real
attach-detach controller's doing."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tests.audit.scenarios import (
    ATTACH_LABEL,
    SPARE_VOLUMES,
    STORAGE_TAINT,
    VOLUME_CLASS,
    WAIT_ATTACH,
    Scenario,
)
from tests.e2e.csi import DRIVER, MANAGED_ATTACH, in_use_name

Obj = dict[str, Any]
Kubectl = Callable[..., str]
TERMINAL = ("Succeeded", "Failed")


def pv_name(namespace: str, ordinal: int) -> str:
    return f"pv-{namespace}-{ordinal}"


def handle(namespace: str, ordinal: int) -> str:
    return f"{namespace}-{ordinal}"


def pod_of(pv: str) -> tuple[str, str] | None:
    """(namespace, pod name) of the StatefulSet pod whose claim a PV of `volumes` is bound to."""
    if not pv.startswith("pv-"):
        return None
    namespace, _, ordinal = pv[3:].rpartition("-")
    return (namespace, f"w-{ordinal}") if ordinal.isdigit() and namespace else None


def volumes(s: Scenario) -> list[Obj]:
    """One PV per ordinal the scenario may make (a scale-up's too), each bound ahead to the
    claim the StatefulSet makes for it (data-w-N): the PV controller binds them, no
    provisioner involved."""
    if s.volume == "-":
        return []
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": pv_name(s.namespace, i),
                "labels": {"nodefail-audit": str(s.seed)},
            },
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": VOLUME_CLASS,
                "persistentVolumeReclaimPolicy": "Retain",
                "csi": {"driver": DRIVER, "volumeHandle": handle(s.namespace, i)},
                "claimRef": {"namespace": s.namespace, "name": f"data-w-{i}"},
            },
        }
        for i in range(s.replicas + SPARE_VOLUMES)
    ]


def prepare_node(kubectl: Kubectl, node: str, storage: bool = False) -> None:
    """What the node's kubelet announces (the attach-detach controller attaches for its pods)
    and the audit's marks: ATTACH_LABEL; on the storage node, the taint only volume pods
    tolerate."""
    kubectl("annotate", "node", node, "--overwrite", MANAGED_ATTACH, check=False)
    kubectl("label", "node", node, "--overwrite", f"{ATTACH_LABEL}=true", check=False)
    if storage:
        kubectl("taint", "node", node, "--overwrite", f"{STORAGE_TAINT}=x:NoSchedule", check=False)


def gate_stages(docs: Iterable[Obj]) -> list[Obj]:
    """kwok stages with the pod-ready stage waiting for WAIT_ATTACH to be gone (the kubelet's
    volume manager: no container starts before the pod's volumes are attached and mounted)."""
    out = []
    for doc in docs:
        if doc["metadata"]["name"] == "pod-ready":
            doc["spec"]["selector"]["matchExpressions"].append(
                {"key": f'.metadata.annotations["{WAIT_ATTACH}"]', "operator": "DoesNotExist"}
            )
        out.append(doc)
    return out


@dataclass(frozen=True)
class Attachment:
    pv: str
    node: str
    attached: bool
    deleting: bool


def attachments(kubectl_out: str, prefix: str) -> list[tuple[str, Attachment]]:
    """(VolumeAttachment name, state) for the batch's volumes (PVs named pv-<prefix>...)."""
    try:
        items = json.loads(kubectl_out or '{"items": []}')["items"]
    except (ValueError, KeyError, TypeError):
        return []
    out = []
    for va in items:
        spec = va.get("spec") or {}
        pv = (spec.get("source") or {}).get("persistentVolumeName") or ""
        if not pv.startswith(f"pv-{prefix}"):
            continue
        state = Attachment(
            pv,
            spec.get("nodeName") or "",
            bool((va.get("status") or {}).get("attached")),
            bool(va["metadata"].get("deletionTimestamp")),
        )
        out.append((va["metadata"]["name"], state))
    return out


def play(
    kubectl: Kubectl,
    pods: list[Obj],
    found: list[tuple[str, Attachment]],
    live: set[str],
    reported: dict[str, tuple[str, ...]],
) -> None:
    """One pass of the attacher and of the live kubelets' volume managers (module doc).
    `reported`: what each live node's status.volumesInUse was last set to (kept up to date)."""
    for name, va in found:
        if not va.attached and not va.deleting:
            patch = json.dumps({"status": {"attached": True}})
            kubectl(
                "patch",
                "volumeattachment",
                name,
                "--subresource=status",
                "--type=merge",
                "-p",
                patch,
                check=False,
            )
    attached = {(va.pv, va.node) for _, va in found if va.attached and not va.deleting}
    mounted: dict[str, set[str]] = {node: set() for node in live}
    for pod in pods:
        meta, spec = pod["metadata"], pod.get("spec") or {}
        node = spec.get("nodeName") or ""
        ordinal = meta["name"].rpartition("-")[2]
        if node not in live or not ordinal.isdigit() or not _mounts(spec):
            continue
        pv = pv_name(meta["namespace"], int(ordinal))
        if WAIT_ATTACH in (meta.get("annotations") or {}):
            if (pv, node) in attached and not meta.get("deletionTimestamp"):
                kubectl(
                    "annotate",
                    "pod",
                    meta["name"],
                    "-n",
                    meta["namespace"],
                    f"{WAIT_ATTACH}-",
                    check=False,
                )
        elif (pod.get("status") or {}).get("phase") not in TERMINAL:
            mounted[node].add(in_use_name(handle(meta["namespace"], int(ordinal))))
    for node, names in mounted.items():
        now = tuple(sorted(names))
        if reported.get(node) == now:
            continue
        patch = json.dumps({"status": {"volumesInUse": list(now)}})
        kubectl(
            "patch", "node", node, "--subresource=status", "--type=merge", "-p", patch, check=False
        )
        reported[node] = now


def _mounts(spec: Obj) -> bool:
    return any(
        (v.get("persistentVolumeClaim") or {}).get("claimName", "").startswith("data-w-")
        for v in spec.get("volumes") or []
    )
