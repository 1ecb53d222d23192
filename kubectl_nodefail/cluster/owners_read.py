"""The owners of the pods read, up the chain (Pod -> ReplicaSet -> Deployment, Pod -> Job ->
CronJob), each once and in as few requests as labels and namespaces allow; then their other pods
(siblings_read.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from kubectl_nodefail.cluster import kube
from kubectl_nodefail.cluster.paging import METADATA_ONLY
from kubectl_nodefail.cluster.pods_read import Found
from kubectl_nodefail.cluster.reads import (
    WIDE_FROM,
    Progress,
    _Reader,
    _selector_chunks,
    wide_pays,
)
from kubectl_nodefail.cluster.siblings_read import RowRules, siblings
from kubectl_nodefail.common.errors import (
    Forbidden,
    MalformedResponse,
    NodefailError,
    NotFound,
    ServerError,
)
from kubectl_nodefail.snapshot import kinds
from kubectl_nodefail.snapshot.model import Obj

# Owners of one kind wanted in many namespaces: a GET (or a list) per namespace, or one
# cluster-wide list, whichever the numbers favour (docs/scale.md, "Owners: narrow or wide";
# reads.wide_pays). Below WIDE_FROM narrow reads nothing is asked; from it, one metadata-only
# request of one item tells how many objects of the kind the cluster has
# (metadata.remainingItemCount).


def _count(cluster: kube.Cluster, path: str) -> int | None:
    """How many objects the collection holds, from one metadata-only item: None when the
    server does not say (no remainingItemCount while more remain)."""
    page = cluster.get_json(path, {"limit": 1}, METADATA_ONLY)
    meta = page.get("metadata") or {}
    items = page.get("items") or []
    remaining = meta.get("remainingItemCount")
    if isinstance(remaining, int) and not isinstance(remaining, bool) and remaining >= 0:
        return len(items) + remaining
    return None if meta.get("continue") else len(items)


def _wide(
    cluster: kube.Cluster,
    groups: dict[tuple[str, str], list[str]],
    keep: Callable[[Obj], Obj | None],
) -> list[Obj]:
    """The owners read by one cluster-wide list per kind where that pays (wide_pays); their
    groups are removed from `groups`. A refusal or a broken answer leaves them to the narrow
    reads."""
    found: list[Obj] = []
    for kind in sorted({k for k, _ in groups}):
        mine = [g for g in groups if g[0] == kind]
        path = kube.owners_path(kind)
        if path is None or len(mine) < WIDE_FROM:
            continue
        try:
            if not wide_pays(len(mine), _count(cluster, path)):
                continue
            found += cluster.list_all(path, kind, keep=keep)
        except (Forbidden, NotFound, ServerError, MalformedResponse):
            continue  # a namespaced role, no such list, a broken answer: narrow reads
        except NodefailError as exc:
            if not getattr(exc, "mid_list", False):
                raise
            continue
        for group in mine:
            del groups[group]
    return found


# An owner as the reads name it: (kind, namespace, name).
OwnerKey = tuple[str, str, str]


def owner_key(obj: Obj) -> OwnerKey:
    """An owner object's key (its kind is set by the read that brought it)."""
    return (obj.get("kind", ""), obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


def _owner_refs(obj: Obj) -> Iterable[OwnerKey]:
    """The owners to read: references to the built-in owner kinds (one of the same name from
    another group, OpenKruise's StatefulSet, is not at the built-in kind's path)."""
    ns = obj["metadata"].get("namespace", "")
    for ref in obj["metadata"].get("ownerReferences") or []:
        kind = ref.get("kind", "")
        if kinds.is_builtin(kind, ref.get("apiVersion")):
            yield (kind, ns, ref.get("name", ""))


def _collection(kind: str, namespace: str) -> str | None:
    """The namespaced collection path of an owner kind (its item path minus the name)."""
    path = kube.owner_path(kind, namespace, "x")
    return path[: -len("/x")] if path else None


def _read_owners(
    cluster: kube.Cluster,
    reader: _Reader,
    todo: set[OwnerKey],
    hashes: dict[OwnerKey, str],
    cluster_wide: bool,
) -> dict[OwnerKey, Obj]:
    """Each wanted owner once, in as few requests as the labels and namespaces allow:
    ReplicaSets by their pods' pod-template-hash across namespaces (when cluster_wide), then
    per kind and namespace one list where several are wanted, else one GET."""
    found: dict[OwnerKey, Obj] = {}

    def keep_wanted(obj: Obj) -> Obj | None:
        return obj if owner_key(obj) in todo else None

    hashed = sorted({h for key, h in hashes.items() if key in todo})
    if cluster_wide and hashed:
        try:
            for batch in kube.parallel(
                lambda selector: cluster.list_all(
                    "/apis/apps/v1/replicasets",
                    "ReplicaSet",
                    keep=keep_wanted,
                    labelSelector=selector,
                ),
                _selector_chunks("pod-template-hash", hashed),
            ):
                found.update((owner_key(obj), obj) for obj in batch)
        except (Forbidden, NotFound, ServerError, MalformedResponse):
            pass  # a namespaced role, no such list, a broken answer: per namespace below
        except NodefailError as exc:
            if not getattr(exc, "mid_list", False):  # the list broke twice: per namespace too
                raise
    groups: dict[tuple[str, str], list[str]] = {}
    for kind, ns, name in sorted(todo):
        if (kind, ns, name) not in found and kube.owner_path(kind, ns, name):
            groups.setdefault((kind, ns), []).append(name)
    if cluster_wide:
        found.update((owner_key(obj), obj) for obj in _wide(cluster, groups, keep_wanted))

    def read(group: tuple[tuple[str, str], list[str]]) -> list[Obj]:
        (kind, ns), names = group
        if len(names) == 1:
            path = kube.owner_path(kind, ns, names[0]) or ""
            obj = reader.optional(f"{kind} objects", lambda: cluster.get(path), None)
            if obj is None:
                return []
            obj.setdefault("kind", kind)
            return [kube.trim(obj)]
        path = _collection(kind, ns) or ""
        return list(
            reader.optional(
                f"{kind} objects", lambda: cluster.list_all(path, kind, keep=keep_wanted), []
            )
        )

    for batch in kube.parallel(read, sorted(groups.items())):
        found.update((owner_key(obj), obj) for obj in batch)
    for (kind, _, _), obj in found.items():  # list items carry none: the dump keeps the group
        obj.setdefault("apiVersion", kube.owner_api_version(kind))
    return found


def _owners_and_siblings(
    cluster: kube.Cluster,
    reader: _Reader,
    pods: list[Obj],
    rules: RowRules,
    progress: Progress,
    cluster_wide: bool = True,
    held: Mapping[OwnerKey, Obj] | None = None,
    held_siblings: Mapping[str, Found] | None = None,
) -> tuple[list[Obj], list[Obj], dict[str, Found]]:
    """Owner objects up the chain, the other pods of each owner (to find replacements), and
    what each owner's lists found (siblings_read.siblings). `held` (diagnose --watch:
    Kept.owners): owners as an earlier read had them, which the watches of owners show
    unchanged since; taken instead of read again. `held_siblings` (Kept.siblings): their pods
    as that read found them, taken for the owners taken."""
    held = held or {}
    owners: dict[OwnerKey, Obj] = {}
    wanted: set[OwnerKey] = set()
    hashes: dict[OwnerKey, str] = {}
    for pod in pods:
        for key in _owner_refs(pod):
            wanted.add(key)
            label = (pod["metadata"].get("labels") or {}).get("pod-template-hash")
            if key[0] == "ReplicaSet" and label:
                hashes[key] = label
    taken: list[Obj] = []
    for _ in range(3):  # Pod -> ReplicaSet -> Deployment, Pod -> Job -> CronJob
        todo = {k for k in wanted if k not in owners and kube.owner_path(*k)}
        if not todo:
            break
        have = {k: held[k] for k in todo if k in held}
        got = _read_owners(cluster, reader, todo - have.keys(), hashes, cluster_wide)
        got.update(have)
        taken += have.values()
        for key in todo:
            owners[key] = got.get(key) or {}
        for obj in got.values():
            wanted.update(_owner_refs(obj))
    found = [o for o in owners.values() if o]
    progress(
        f"{len(found)} owners read"
        + (f" ({len(taken)} unchanged since the last read, not read again)" if taken else "")
        + "; looking for replacements"
    )
    unchanged = {o["metadata"].get("uid") for o in taken}
    others, lists = siblings(
        cluster,
        reader,
        found,
        rules,
        cluster_wide,
        {u: f for u, f in (held_siblings or {}).items() if u in unchanged},
    )
    kept = sum(1 for u, f in lists.items() if (held_siblings or {}).get(u) is f)
    progress(
        f"{len(others)} other pods of those owners"
        + (
            f" (those of {kept} owners unchanged since the last read, not listed again)"
            if kept
            else ""
        )
        + "; reading volumes, events and automation"
    )
    return found, others, lists
