"""The remediation automation that may cover a failed examined node (Cluster API
MachineHealthChecks and Machines, Karpenter NodeClaims, Medik8s NodeHealthChecks: read for
analysis/automation/), and the events about those objects.
"""

from __future__ import annotations

from datetime import datetime, timezone

from kubectl_nodefail.analysis import automation
from kubectl_nodefail.analysis.nodes import is_ready
from kubectl_nodefail.cluster import kube
from kubectl_nodefail.cluster.reads import _Reader
from kubectl_nodefail.common.errors import NotFound
from kubectl_nodefail.snapshot.model import Obj, Snapshot

# Remediation automation (analysis/automation/): collection paths (the newest API version
# first: Cluster API v1.11+ serves v1beta2 and still v1beta1; an older one only v1beta1), kind,
# and what a gap names. A 404 on every version (CRD not installed) is simply absent; a 403 a
# stated gap.
AUTOMATION_LISTS = (
    (
        (
            "/apis/cluster.x-k8s.io/v1beta2/machinehealthchecks",
            "/apis/cluster.x-k8s.io/v1beta1/machinehealthchecks",
        ),
        "MachineHealthCheck",
        "Cluster API machinehealthchecks",
    ),
    (
        ("/apis/cluster.x-k8s.io/v1beta2/machines", "/apis/cluster.x-k8s.io/v1beta1/machines"),
        "Machine",
        "Cluster API machines",
    ),
    (("/apis/karpenter.sh/v1/nodeclaims",), "NodeClaim", "Karpenter nodeclaims"),
    (
        ("/apis/remediation.medik8s.io/v1alpha1/nodehealthchecks",),
        "NodeHealthCheck",
        "Medik8s nodehealthchecks",
    ),
)


def _api_version(path: str) -> str:
    """`group/version` of a collection path /apis/GROUP/VERSION/RESOURCE."""
    return "/".join(path.split("/")[2:4])


def _automation(
    cluster: kube.Cluster, reader: _Reader, nodes: list[Obj], focus: list[str]
) -> list[Obj]:
    """The remediation automation objects that may cover a failed examined node (none read
    when no examined node failed). Machines are kept only for those nodes."""
    failed = {n["metadata"]["name"] for n in nodes if not is_ready(n)} & set(focus)
    if not failed:
        return []
    by_name = {n["metadata"]["name"]: n for n in nodes}
    machines = {
        ((by_name[n]["metadata"].get("annotations") or {}).get(automation.MACHINE_ANNOTATION))
        for n in failed
    } - {None}

    def keep_machine(obj: Obj) -> Obj | None:
        node_ref = ((obj.get("status") or {}).get("nodeRef") or {}).get("name")
        return obj if node_ref in failed or obj["metadata"].get("name") in machines else None

    # Karpenter links a NodeClaim to its Node by providerID (automation._karpenter)
    provider_ids = {(by_name[n].get("spec") or {}).get("providerID") for n in failed} - {None, ""}

    def keep_nodeclaim(obj: Obj) -> Obj | None:
        status = obj.get("status") or {}
        linked = status.get("nodeName") in failed or status.get("providerID") in provider_ids
        return obj if linked else None

    def newest(paths: tuple[str, ...], kind: str) -> list[Obj]:
        """The list from the first version served (list items carry no apiVersion: set it)."""
        keep = {"Machine": keep_machine, "NodeClaim": keep_nodeclaim}.get(kind)
        for path in paths:
            try:
                items = cluster.list_all(path, kind, keep=keep)
            except NotFound:
                continue
            for obj in items:
                obj.setdefault("apiVersion", _api_version(path))
            return list(items)
        raise NotFound(f"{kind}: no version served", status=404)

    def read(item: tuple[tuple[str, ...], str, str]) -> list[Obj]:
        paths, kind, what = item
        return list(reader.optional(what, lambda: newest(paths, kind), []))

    out: list[Obj] = []
    for batch in kube.parallel(read, list(AUTOMATION_LISTS)):
        out += batch
    return out


def _automation_events(
    cluster: kube.Cluster,
    reader: _Reader,
    nodes: list[Obj],
    focus: list[str],
    objects: list[Obj],
) -> list[Obj]:
    """Events about the automation objects that cover the failed examined nodes (few)."""
    if not objects:
        return []
    snap = Snapshot(captured_at=datetime.now(timezone.utc), nodes=nodes, automation=objects)
    wanted: set[tuple[str, str, str]] = set()
    for name in focus:
        node = snap.node(name)
        if node is not None and not is_ready(node):
            wanted.update(automation.timeline_objects(node, snap))

    def read(key: tuple[str, str, str]) -> list[Obj]:
        kind, _, name = key
        return list(
            reader.optional(
                "events",
                lambda: cluster.list_all(
                    "/api/v1/events",
                    "Event",
                    fieldSelector=f"involvedObject.kind={kind},involvedObject.name={name}",
                ),
                [],
            )
        )

    out: list[Obj] = []
    for batch in kube.parallel(read, sorted(wanted)):
        out += batch
    return out
