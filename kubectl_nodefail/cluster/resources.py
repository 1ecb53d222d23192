"""Where objects live in the API server and how a read object is trimmed: the paths of nodes,
pods and the built-in owner kinds, and `trim`, which drops what no analysis reads.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

Obj = dict[str, Any]

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MANAGED_KEPT = ("manager", "operation", "subresource", "time")


def trim(obj: Obj) -> Obj:
    """Drop what no analysis reads and what weighs most: managedFields' field lists (often half
    an object's JSON; a pod keeps who wrote it when, evictionclock.spec_written, other kinds
    nothing of them), kubectl's last-applied copy of the object, and a node's image list.
    Trimmed objects stay valid Kubernetes JSON."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        managed = meta.pop("managedFields", None)
        if obj.get("kind") == "Pod" and isinstance(managed, list):
            meta["managedFields"] = [
                {k: v for k, v in entry.items() if k in MANAGED_KEPT}
                for entry in managed
                if isinstance(entry, dict)
            ]
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            annotations.pop(LAST_APPLIED, None)
    status = obj.get("status")
    if isinstance(status, dict) and obj.get("kind") == "Node":
        status.pop("images", None)
    return obj


def pod_path(namespace: str, name: str = "") -> str:
    base = f"/api/v1/namespaces/{quote(namespace)}/pods"
    return f"{base}/{quote(name)}" if name else base


def node_path(name: str = "") -> str:
    return f"/api/v1/nodes/{quote(name)}" if name else "/api/v1/nodes"


OWNER_PATHS = {
    "ReplicaSet": "/apis/apps/v1/namespaces/{ns}/replicasets/{name}",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments/{name}",
    "StatefulSet": "/apis/apps/v1/namespaces/{ns}/statefulsets/{name}",
    "DaemonSet": "/apis/apps/v1/namespaces/{ns}/daemonsets/{name}",
    "Job": "/apis/batch/v1/namespaces/{ns}/jobs/{name}",
    "CronJob": "/apis/batch/v1/namespaces/{ns}/cronjobs/{name}",
    "ReplicationController": "/api/v1/namespaces/{ns}/replicationcontrollers/{name}",
}


def owner_api_version(kind: str) -> str:
    """The apiVersion an owner kind is read at: "apps/v1", "v1" (the core group)."""
    path = OWNER_PATHS[kind]
    return "v1" if path.startswith("/api/v1/") else "/".join(path.split("/")[2:4])


def owner_path(kind: str, namespace: str, name: str) -> str | None:
    template = OWNER_PATHS.get(kind)
    return template.format(ns=quote(namespace), name=quote(name)) if template else None


def owners_path(kind: str) -> str | None:
    """The cluster-wide collection of an owner kind ("/apis/batch/v1/jobs")."""
    template = OWNER_PATHS.get(kind)
    return template.replace("/namespaces/{ns}", "").rsplit("/", 1)[0] if template else None
