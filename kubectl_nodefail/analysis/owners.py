"""Owner chains: Pod -> ReplicaSet -> Deployment, Pod -> Job -> CronJob, StatefulSet, ..."""

from __future__ import annotations

from kubectl_nodefail.analysis import facts
from kubectl_nodefail.analysis.findings import OwnerLink
from kubectl_nodefail.snapshot import kinds
from kubectl_nodefail.snapshot.model import Obj, Snapshot

KNOWN = {
    "ReplicaSet": "replicaset",
    "Deployment": "deployment",
    "StatefulSet": "statefulset",
    "DaemonSet": "daemonset",
    "Job": "job",
    "CronJob": "cronjob",
    "ReplicationController": "replicationcontroller",
}


def controller_ref(obj: Obj) -> Obj | None:
    refs = obj["metadata"].get("ownerReferences") or []
    for ref in refs:
        if ref.get("controller"):
            return ref
    return refs[0] if refs else None


def is_mirror(pod: Obj) -> bool:
    return facts.ANNOTATION_MIRROR in (pod["metadata"].get("annotations") or {})


def chain(pod: Obj, snap: Snapshot) -> tuple[list[OwnerLink], list[Obj]]:
    """The owner chain from the pod upwards, and the owner objects found in the snapshot."""
    links: list[OwnerLink] = []
    objs: list[Obj] = []
    namespace = pod["metadata"].get("namespace", "")
    current = pod
    for _ in range(5):  # chains are short; the bound guards against cycles in bad data
        ref = controller_ref(current)
        if ref is None:
            break
        # a kind of a built-in name from another group is named Kind.group: no rule of the
        # built-in kind applies to it (OpenKruise's StatefulSet is not the apps/v1 one)
        kind = kinds.owner_key(ref.get("kind", ""), ref.get("apiVersion"))
        name = ref.get("name", "")
        owner = None if kind == "Node" else snap.owner(kind, namespace, name, ref.get("apiVersion"))
        links.append(OwnerLink(kind=kind, name=name, found=owner is not None or kind == "Node"))
        if owner is None:
            break
        objs.append(owner)
        current = owner
    return links, objs


def controller_type(pod: Obj, links: list[OwnerLink]) -> str:
    """deployment | replicaset | replicationcontroller | statefulset | daemonset | job | cronjob
    | mirror | bare | other."""
    if is_mirror(pod) or (links and links[0].kind == "Node"):
        return "mirror"
    if not links:
        return "bare"
    kinds = [link.kind for link in links]
    if kinds[0] == "ReplicaSet" and "Deployment" in kinds:
        return "deployment"
    if kinds[0] == "Job" and "CronJob" in kinds:
        return "cronjob"
    return KNOWN.get(kinds[0], "other")


def describe(links: list[OwnerLink]) -> str:
    if not links:
        return "none"
    return " -> ".join(
        f"{link.kind}/{link.name}" + ("" if link.found else " (not read)") for link in links
    )


def template_node(owner: Obj) -> str:
    """The node its pod template binds every pod to (spec.template.spec.nodeName), or ""."""
    template = (owner.get("spec") or {}).get("template") or {}
    return str((template.get("spec") or {}).get("nodeName") or "")
