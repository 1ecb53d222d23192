"""The other pods of the owners read (replacements), found in few label-selector lists and
kept only where an owner of interest owns them, read as Table rows with metadata where a row may
stand for the pod (RowRules, podrows.py) and whole otherwise. Lists of the same selector keys in
many namespaces (a StatefulSet's `app=NAME` in each) are one list across them where a probe
shows that pays (Merge).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from kubectl_nodefail.analysis.nodes import is_ready, ready_condition
from kubectl_nodefail.analysis.outage import SIBLINGS_GAP
from kubectl_nodefail.cluster import kube, podrows
from kubectl_nodefail.cluster.paging import TABLE
from kubectl_nodefail.cluster.pods_read import Found
from kubectl_nodefail.cluster.reads import (
    SELECTOR_CHUNK,
    WIDE_FROM,
    _Reader,
    _selector_chunks,
    wide_cap,
    wide_pays,
)
from kubectl_nodefail.common.errors import ApiError, MalformedResponse, NodefailError, NotFound
from kubectl_nodefail.snapshot.model import Obj, parse_time

# Owner kinds whose pods the analysis looks through for replacements (a DaemonSet has one pod
# per node: other nodes' pods are not replacements).
SIBLING_KINDS = ("ReplicaSet", "StatefulSet", "Job", "ReplicationController")
# Pod labels naming their owner uniquely across the cluster (set by the controllers), so one
# label-selector list finds the pods (and ReplicaSets) of many owners in every namespace.
UNIQUE_LABELS = ("pod-template-hash", "batch.kubernetes.io/controller-uid", "controller-uid")


def _label_selector(selector: Obj | None) -> str | None:
    """matchLabels/matchExpressions -> the query string form."""
    if not selector:
        return None
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts) or None


def _row_rules(
    nodes: list[Obj], focus: Collection[str], leases: list[Obj], pods: list[Obj]
) -> RowRules:
    """Which owners' other pods a Table row may stand for (RowRules), from the nodes, the
    leases read and the pods read whole."""
    # Every failed node, not only the examined ones: a dump of some nodes may be diagnosed for
    # all of them, and each listed node's timeline looks for its own replacements.
    since, whole_nodes = _replacements_since(
        [n for n in nodes if n["metadata"]["name"] in focus or not is_ready(n)]
    )
    # Ready nodes listed for a lease their kubelet stopped renewing: their timelines too take
    # every pod of their pods' controllers (no failure time yet).
    whole_nodes |= {
        name
        for lease in leases
        if isinstance(name := (lease.get("metadata") or {}).get("name"), str)
    } - set(focus)
    return RowRules(
        ready={n["metadata"]["name"] for n in nodes if is_ready(n)} - whole_nodes,
        since=since,
        whole_nodes=whole_nodes,
        whole_owners=_whole_owners(pods, whole_nodes),
        known={p["metadata"].get("uid") for p in pods},
    )


def _replacements_since(examined: list[Obj]) -> tuple[datetime | None, set[str]]:
    """Where the examined nodes' timelines look for replacements (analysis/timeline.py: pods of
    the same controllers created since the node's Ready condition turned): the earliest such
    time, and the nodes without one (a Ready node, or no transition time: their timelines take
    every pod of the controllers)."""
    times: list[datetime] = []
    without: set[str] = set()
    for node in examined:
        ready = ready_condition(node) or {}
        at = parse_time(ready.get("lastTransitionTime")) if ready.get("status") != "True" else None
        if at is None:
            without.add(node["metadata"]["name"])
        else:
            times.append(at)
    return min(times, default=None), without


def _whole_owners(pods: list[Obj], whole_nodes: Collection[str]) -> frozenset[str]:
    """UIDs of the owners whose other pods are read whole: owners of a pod that mounts a claim
    (persistentVolumeClaim or ephemeral: the storage analysis reads their volumes), and owners
    of a pod on a node whose timeline takes every pod of its controllers."""
    return frozenset(
        ref.get("uid", "")
        for pod in pods
        if (
            isinstance(node := (pod.get("spec") or {}).get("nodeName"), str) and node in whole_nodes
        )
        or any(
            "persistentVolumeClaim" in v or "ephemeral" in v
            for v in (pod.get("spec") or {}).get("volumes") or []
        )
        for ref in pod["metadata"].get("ownerReferences") or []
    )


@dataclass(frozen=True)
class RowRules:
    """Which sibling pods a Table row may stand for: on a `ready` node (the node lifecycle
    controller rewrites a not-Ready node's pods' Ready condition, which the row cannot show);
    created before `since` (a pod created since is a replacement in a failed node's timeline,
    which reads when it was scheduled and became Ready: not in a row); not of `whole_owners`
    (see `_whole_owners`), nor of an owner with a pod on one of `whole_nodes` (the nodes whose
    timelines take every pod of their pods' controllers: examined without a failure time, or
    Ready and listed for a lease their kubelet stopped renewing); not already read whole
    (`known` UIDs: left out)."""

    ready: Collection[str]
    since: datetime | None = None
    whole_nodes: Collection[str] = frozenset()
    whole_owners: Collection[str] = frozenset()
    known: Collection[str | None] = frozenset()

    def stands_for(self, pod: Obj | None) -> bool:
        """Whether a pod built from a row (podrows.from_row) may stand for the pod."""
        if pod is None or pod["spec"]["nodeName"] not in self.ready:
            return False
        created = _time(pod["metadata"].get("creationTimestamp"))
        return created is not None and (self.since is None or created < self.since)


def _time(value: Any) -> datetime | None:
    """An RFC 3339 time read before the object is held to the dump schema (None for anything
    else: the pod is then read whole, or the node taken as having no failure time)."""
    return parse_time(value) if isinstance(value, str) else None


# Owners whose pods are always read whole: a StatefulSet's pods each mount their own claims.
WHOLE_PODS_KINDS = ("StatefulSet",)
# Rows of one sibling list that a row cannot stand for (Pending, finished, Terminating, not
# Ready) are read one by one up to this many; past it, the list is read again as full objects.
ROWS_READ_ONE_BY_ONE = 30
_UNREAD = object()  # a pod read one by one that the server would not give


def _siblings(
    cluster: kube.Cluster,
    reader: _Reader,
    owners: list[Obj],
    rules: RowRules,
    cluster_wide: bool = True,
) -> list[Obj]:
    """The pods of the given owners (`siblings`, nothing held)."""
    return siblings(cluster, reader, owners, rules, cluster_wide)[0]


def siblings(
    cluster: kube.Cluster,
    reader: _Reader,
    owners: list[Obj],
    rules: RowRules,
    cluster_wide: bool = True,
    held: Mapping[str, Found] | None = None,
) -> tuple[list[Obj], dict[str, Found]]:
    """The pods of the given owners, in few lists (see `_sibling_lists`); only pods an owner of
    interest owns are kept. Where the owner's pods mount no claim, a list is read as Table rows
    with metadata (a third of the bytes) and a row stands for a pod Running and Ready on a Ready
    node (podrows.py); the other rows are read whole, except pods already read, which are left
    out (`RowRules`). `held` (diagnose --watch: Kept.siblings, by owner uid): an owner's pods
    as an earlier read found them, for owners unchanged since whose pods did not change
    either, taken instead of listed again where they hold under these rules (`_still`).
    Also returned: what each owner's lists found (none when a list failed)."""

    def whole(owner: Obj) -> bool:
        return (
            owner.get("kind") in WHOLE_PODS_KINDS
            or owner["metadata"].get("uid") in rules.whole_owners
        )

    held = held or {}
    on_whole = _on_whole_nodes(held.values(), rules)
    taken = {
        uid: held[uid]
        for owner in owners
        if (uid := owner["metadata"].get("uid")) in held
        and _still(held[uid], not whole(owner), rules, on_whole)
    }
    owners = [o for o in owners if o["metadata"].get("uid") not in taken]
    uids = {o["metadata"].get("uid") for o in owners}  # the lists are for these only

    def owned(meta: Obj) -> bool:
        return any(uid in uids for uid in _owner_uids(meta))

    # pods the lists matched that the read has whole elsewhere: uid -> their owners' uids
    elsewhere: dict[str, list[str]] = {}
    failed: list[bool] = []  # a list, or a pod a row could not stand for, not read

    # (path, selector), read as rows, and the lists it stands for (a list across namespaces)
    lists: list[tuple[tuple[str, str], bool, list[tuple[str, str]]]] = []
    planned = [
        _sibling_lists([o for o in owners if whole(o) != r], cluster_wide) for r in (False, True)
    ]
    merges = [m for _, merged in planned for m in merged]
    # lists of the same keys in many namespaces: one list across them where that pays
    wide = dict(zip(map(id, merges), kube.parallel(lambda m: _wide(cluster, m), merges)))
    for by_rows, (plain, merged) in zip((False, True), planned):  # whole pods first, as before
        lists += [(item, by_rows, []) for item in plain]
        for merge in merged:
            if wide[id(merge)]:
                lists.append((("/api/v1/pods", merge.selector), by_rows, merge.narrow))
            else:
                lists += [(item, by_rows, []) for item in merge.narrow]

    def fetch(path: str, selector: str, by_rows: bool) -> list[Obj]:
        if by_rows:
            return _sibling_rows(
                cluster, reader, path, selector, owned, rules, elsewhere, failed
            )
        return cluster.list_all(
            path, "Pod", keep=lambda p: p if owned(p["metadata"]) else None, labelSelector=selector
        )

    def optional(path: str, selector: str, by_rows: bool) -> list[Obj]:
        found = reader.optional(SIBLINGS_GAP, partial(fetch, path, selector, by_rows), None)
        if found is None:
            failed.append(True)
        return list(found or [])

    def read(spec: tuple[tuple[str, str], bool, list[tuple[str, str]]]) -> list[Obj]:
        (path, selector), by_rows, narrow = spec
        if narrow:  # a list across namespaces that fails: the lists it stands for, each alone
            try:
                return list(fetch(path, selector, by_rows))
            except NodefailError as exc:
                if not isinstance(exc, ApiError) and not getattr(exc, "mid_list", False):
                    raise
            return [pod for p, s in narrow for pod in optional(p, s, by_rows)]
        return optional(path, selector, by_rows)

    out: list[Obj] = []
    for batch in kube.parallel(read, lists):
        for pod in batch:
            uid = pod["metadata"].get("uid")
            if uid in rules.known:  # a whole list's: the read has it already
                elsewhere[uid] = _owner_uids(pod["metadata"])
            else:
                out.append(pod)
    found = {} if failed else _found(owners, out, elsewhere, whole)
    for uid, kept in taken.items():
        out += [p for p in kept.pods if p["metadata"].get("uid") not in rules.known]
        found[uid] = kept
    return _whole_first(out), found


def _whole_first(pods: list[Obj]) -> list[Obj]:
    """Each pod once (a pod of two owners, in two lists), its whole object over a row's."""
    one: dict[Any, Obj] = {}
    for pod in pods:
        uid = pod["metadata"].get("uid")
        if uid not in one or (podrows.READ_FROM in one[uid] and podrows.READ_FROM not in pod):
            one[uid] = pod
    return list(one.values())


def _found(
    owners: list[Obj],
    pods: list[Obj],
    elsewhere: Mapping[str, list[str]],
    whole: Callable[[Obj], bool],
) -> dict[str, Found]:
    """What the lists found for each owner they were for."""
    mine: dict[str, list[Obj]] = {}
    for pod in pods:
        for uid in _owner_uids(pod["metadata"]):
            mine.setdefault(uid, []).append(pod)
    away: dict[str, set[str]] = {}
    for pod_uid, of in elsewhere.items():
        for uid in of:
            away.setdefault(uid, set()).add(pod_uid)
    return {
        uid: Found(tuple(mine.get(uid, ())), not whole(o), frozenset(away.get(uid, ())))
        for o in owners
        if o.get("kind") in SIBLING_KINDS and isinstance(uid := o["metadata"].get("uid"), str)
    }


def _on_whole_nodes(held: Iterable[Found], rules: RowRules) -> set[str]:
    """Owners with a pod on a node whose timeline takes every pod of its controllers (their
    rows stand for none of their pods), as the pods held say, and those RowRules names."""
    return set(rules.whole_owners) | {
        uid
        for found in held
        for pod in found.pods
        if (pod.get("spec") or {}).get("nodeName") in rules.whole_nodes
        for uid in _owner_uids(pod["metadata"])
    }


def _still(found: Found, by_rows: bool, rules: RowRules, on_whole: Collection[str]) -> bool:
    """Whether an owner's pods as an earlier read's lists found them are what its lists would
    find now (no pod of it changed since: Kept.drop_siblings): listed the same way; every pod
    they left out as read elsewhere is read elsewhere again; every row still stands for its pod
    under these rules (a Ready node, created before the failures, no owner whose pods are read
    whole). A list now of fewer owners may give as a row a pod the old list gave whole (past
    ROWS_READ_ONE_BY_ONE, it reads the list again whole): either stands for the pod, as in
    any read, whose lists' make-up depends on the owners it has."""
    if found.by_rows != by_rows or not found.elsewhere <= set(rules.known):
        return False
    return all(
        podrows.READ_FROM not in pod
        or (
            rules.stands_for(pod)
            and not any(uid in on_whole for uid in _owner_uids(pod["metadata"]))
        )
        for pod in found.pods
    )


def _sibling_rows(
    cluster: kube.Cluster,
    reader: _Reader,
    path: str,
    selector: str,
    owned: Callable[[Obj], bool],
    rules: RowRules,
    elsewhere: dict[str, list[str]] | None = None,
    failed: list[bool] | None = None,
) -> list[Obj]:
    """One sibling list as Table rows: the pods rows stand for, and the others read whole (one
    by one, or the list again past ROWS_READ_ONE_BY_ONE or when a row lacks its metadata), in the
    list's order; rows of pods already read are left out (and said in `elsewhere`: uid -> its
    owners' uids). A pod read one by one that the server would not give (not a 404: a stated
    gap) is said in `failed`."""

    def keep(meta: Obj) -> bool:
        if not owned(meta):
            return False
        uid = _uid(meta)
        if uid not in rules.known:
            return True
        if elsewhere is not None and uid:
            elsewhere[uid] = _owner_uids(meta)
        return False

    columns, rows, items = cluster.list_rows(path, "Pod", keep=keep, labelSelector=selector)
    if items or not rows:
        return items
    shape = cluster.shape.get("Pod")
    # an owner with a pod on a node whose timeline takes all its pods: every row of it whole
    at = columns.index("Node") if "Node" in columns else None
    on_whole_nodes = {
        uid
        for cells, meta in rows
        if meta is not None
        and at is not None
        and len(cells) == len(columns)
        and isinstance(node := cells[at], str)
        and node in rules.whole_nodes
        for uid in _owner_uids(meta)
    }

    def standing(cells: list[Any], meta: Obj | None) -> Obj | None:
        pod = podrows.from_row(columns, cells, meta)
        if pod is None or not rules.stands_for(pod):
            return None
        uids = _owner_uids(pod["metadata"])
        return None if any(u in rules.whole_owners or u in on_whole_nodes for u in uids) else pod

    pods = [standing(cells, meta) for cells, meta in rows]
    todo = [i for i, pod in enumerate(pods) if pod is None]
    if len(todo) > ROWS_READ_ONE_BY_ONE or any(
        not isinstance(ns := (rows[i][1] or {}).get("namespace"), str) or not ns for i in todo
    ):
        return cluster.list_all(
            path, "Pod", keep=lambda p: p if owned(p["metadata"]) else None, labelSelector=selector
        )

    def whole(i: int) -> Obj | None:
        meta = rows[i][1] or {}
        at = kube.pod_path(meta.get("namespace", ""), meta.get("name", ""))

        def get() -> Obj | None:
            try:
                return cluster.get(at)
            except NotFound:
                return None  # gone since the list

        pod = reader.optional(SIBLINGS_GAP, get, _UNREAD)
        if pod is _UNREAD:
            if failed is not None:
                failed.append(True)
            return None
        if pod is None or not owned(pod.get("metadata") or {}):
            return None  # gone since the list, or no longer owned
        pod.setdefault("kind", "Pod")
        return kube.trim(pod)

    for i, pod in zip(todo, kube.parallel(whole, todo)):
        pods[i] = pod
    return [shape(p) if shape else p for p in pods if p is not None]


def _owner_uids(meta: Obj) -> list[str]:
    """The owners' UIDs a pod's metadata names, read before the pod is held to the dump schema:
    MalformedResponse (a stated gap for an optional read) where they are not what the API
    sends, never a traceback."""
    refs = meta.get("ownerReferences") or []
    if not isinstance(refs, list) or not all(
        isinstance(r, dict) and isinstance(r.get("uid", ""), str) for r in refs
    ):
        raise MalformedResponse(
            f"pod {meta.get('name')!r}: metadata.ownerReferences is not a list of owner references"
        )
    return [r.get("uid", "") for r in refs]


def _uid(meta: Obj) -> str | None:
    uid = meta.get("uid")
    if uid is not None and not isinstance(uid, str):
        raise MalformedResponse(f"pod {meta.get('name')!r}: metadata.uid is not a string")
    return uid


@dataclass(frozen=True)
class Merge:
    """Lists of one set of selector keys in several namespaces (`narrow`, a list each), and
    the one list across namespaces that finds all their pods (`selector`: each key in the
    values of every namespace: it matches every pod a narrow list matches, and may match
    more, which the owners' filter drops)."""

    selector: str
    narrow: list[tuple[str, str]]
    expected: int = 0  # the pods their owners want (spec.replicas, a Job's parallelism; else 1)


def _wide(cluster: kube.Cluster, merge: Merge) -> bool:
    """Whether the list across namespaces pays: from WIDE_FROM narrow lists, when it takes
    fewer requests and matches at most ITEMS_PER_READ pods per narrow list more than the pods
    their owners want (reads.wide_pays, as for owners). A probe of its selector as Table rows
    without objects (~150 bytes a pod), one page of at most that many, tells how many it
    matches (a label selector gets no remainingItemCount). A probe that fails leaves the
    narrow lists, which meet the same server as before."""
    narrow = len(merge.narrow)
    if narrow < WIDE_FROM:
        return False
    query = {"labelSelector": merge.selector, "limit": wide_cap(narrow, merge.expected)}
    try:
        page = cluster.get_json("/api/v1/pods", {**query, "includeObject": "None"}, TABLE)
    except NodefailError:
        return False
    found = page.get("rows") if page.get("kind") == "Table" else page.get("items")
    if not isinstance(found, list) or (page.get("metadata") or {}).get("continue"):
        return False  # malformed, or more than that many pods
    return wide_pays(narrow, len(found), merge.expected)


def _sibling_lists(
    owners: list[Obj], cluster_wide: bool = True
) -> tuple[list[tuple[str, str]], list[Merge]]:
    """(path, label selector) lists that find the pods of the given owners: owners whose
    selectors share a label that names them uniquely (pod-template-hash, a Job's controller-uid)
    in one list across namespaces (per namespace when only some namespaces are read); the rest
    grouped by namespace and selector keys into one `key in (...)` list each, and where the
    same keys recur in WIDE_FROM namespaces or more (cluster-wide reads: a StatefulSet's
    `app=NAME` in a namespace each), those lists as Merges, to be read across namespaces where
    that pays (`_wide`). Such a list may match more than asked: the caller keeps only pods an
    owner of interest owns."""
    unique: dict[tuple[str, str], set[str]] = {}  # (label, namespace or "" for all): values
    grouped: dict[tuple[str, tuple[str, ...]], dict[str, set[str]]] = {}
    single: list[tuple[str, str]] = []  # selectors with expressions: one list each
    wants: dict[tuple[str, tuple[str, ...]], int] = {}  # the pods a group's owners want
    for owner in owners:
        kind = owner.get("kind")
        if kind not in SIBLING_KINDS:
            continue
        sel = (owner.get("spec") or {}).get("selector")
        if kind == "ReplicationController":
            sel = {"matchLabels": sel} if sel else None
        if not isinstance(sel, dict):
            continue
        labels = sel.get("matchLabels") or {}
        ns = owner["metadata"].get("namespace", "")
        key = next((k for k in UNIQUE_LABELS if k in labels), None)
        if key is not None:
            unique.setdefault((key, "" if cluster_wide else ns), set()).add(str(labels[key]))
        elif labels and not sel.get("matchExpressions"):
            at = (ns, tuple(sorted(labels)))
            group = grouped.setdefault(at, {})
            for k, v in labels.items():
                group.setdefault(k, set()).add(str(v))
            wants[at] = wants.get(at, 0) + _wanted(owner)
        else:
            selector = _label_selector(sel)
            if selector:
                single.append((kube.pod_path(ns), selector))
    lists: list[tuple[str, str]] = []
    for (label, ns), values in sorted(unique.items()):
        path = kube.pod_path(ns) if ns else "/api/v1/pods"
        lists += [(path, chunk) for chunk in _selector_chunks(label, values)]
    merges: list[Merge] = []
    spread: dict[tuple[str, ...], list[str]] = {}  # selector keys: the namespaces they are in
    for ns, keys in sorted(grouped):
        spread.setdefault(keys, []).append(ns)
    for (ns, keys), by_key in sorted(grouped.items()):
        if cluster_wide and len(spread[keys]) >= WIDE_FROM:
            continue  # merged below
        lists.append((kube.pod_path(ns), _in(keys, by_key)))
    for keys, spaces in sorted(spread.items()):
        if cluster_wide and len(spaces) >= WIDE_FROM:
            merges += _merges(keys, [(ns, grouped[(ns, keys)], wants[(ns, keys)]) for ns in spaces])
    return lists + single, merges


def _in(keys: tuple[str, ...], by_key: dict[str, set[str]]) -> str:
    """`key in (values)` for each key, values sorted."""
    return ",".join(f"{k} in ({','.join(sorted(by_key[k]))})" for k in keys)


def _merges(
    keys: tuple[str, ...], spaces: list[tuple[str, dict[str, set[str]], int]]
) -> list[Merge]:
    """The namespaces' lists of the same keys (with the pods their owners want), in Merges of
    at most SELECTOR_CHUNK values a key (short URLs), in namespace order."""
    out: list[Merge] = []
    narrow: list[tuple[str, str]] = []
    union: dict[str, set[str]] = {k: set() for k in keys}
    expected = 0
    for ns, by_key, wanted in spaces:
        if narrow and any(len(union[k] | by_key[k]) > SELECTOR_CHUNK for k in keys):
            out.append(Merge(_in(keys, union), narrow, expected))
            narrow, union, expected = [], {k: set() for k in keys}, 0
        narrow.append((kube.pod_path(ns), _in(keys, by_key)))
        expected += wanted
        for k in keys:
            union[k] |= by_key[k]
    if narrow:
        out.append(Merge(_in(keys, union), narrow, expected))
    return out


def _wanted(owner: Obj) -> int:
    """How many pods an owner wants, for the cost of a list only: spec.replicas (a Job's
    parallelism), else 1; never less than 0 nor more than 10,000."""
    spec = owner.get("spec") or {}
    count = spec.get("replicas", spec.get("parallelism"))
    if not isinstance(count, int) or isinstance(count, bool):
        return 1
    return min(max(count, 0), 10_000)
