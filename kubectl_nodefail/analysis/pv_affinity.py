"""Which nodes a PersistentVolume's required node affinity allows (a local volume: one), as
k8s.io/component-helpers' nodeaffinity matches a NodeSelector against a node: storage.py reads
it to find a volume that pins a pod to its failed node.
"""

from __future__ import annotations

from typing import Any

from kubectl_nodefail.analysis import facts
from kubectl_nodefail.snapshot.model import Obj


def _requirement_holds(expr: Any, values_of: dict[str, str]) -> bool:
    """One NodeSelectorRequirement against a node's labels (or its fields), as
    k8s.io/component-helpers' nodeaffinity matches it; a shape it cannot read matches nothing."""
    if not isinstance(expr, dict):
        return False
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    if not isinstance(key, str) or not isinstance(values, list):
        return False
    has, value = key in values_of, values_of.get(key)
    if op == "In":
        return has and value in values
    if op == "NotIn":
        return not has or value not in values
    if op == "Exists":
        return has
    if op == "DoesNotExist":
        return not has
    if op in ("Gt", "Lt") and has and len(values) == 1:
        try:
            mine, theirs = int(str(value)), int(str(values[0]))
        except ValueError:
            return False
        return mine > theirs if op == "Gt" else mine < theirs
    return False


def _term_matches(term: Any, node: Obj) -> bool:
    """A NodeSelectorTerm: all its requirements hold; an empty term matches no node."""
    if not isinstance(term, dict):
        return False
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not isinstance(exprs, list) or not isinstance(fields, list) or not (exprs or fields):
        return False
    meta = node.get("metadata") or {}
    labels = {k: str(v) for k, v in (meta.get("labels") or {}).items()}
    return all(_requirement_holds(e, labels) for e in exprs) and all(
        _requirement_holds(f, {"metadata.name": str(meta.get("name") or "")}) for f in fields
    )


def volume_nodes(pv: Obj, nodes: list[Obj]) -> list[str] | None:
    """The nodes a PV's required node affinity allows (a local volume: one), of `nodes`, or
    None when it has none (any node can use it)."""
    required = (((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required")) or None
    if not isinstance(required, dict):
        return None
    terms = required.get("nodeSelectorTerms")
    if not isinstance(terms, list):
        return None
    return [str(n["metadata"]["name"]) for n in nodes if any(_term_matches(t, n) for t in terms)]


def names_only(term: Any, node: Obj) -> bool:
    """The term requires this node by name: `kubernetes.io/hostname In` or `metadata.name In`
    with this node's value only (so no node outside the snapshot can match it either)."""
    meta = node.get("metadata") or {}
    own = {
        facts.LABEL_HOSTNAME: str((meta.get("labels") or {}).get(facts.LABEL_HOSTNAME, "")),
        "metadata.name": str(meta.get("name") or ""),
    }
    wanted = [
        e
        for group in ("matchExpressions", "matchFields")
        for e in (term.get(group) or [] if isinstance(term, dict) else [])
        if isinstance(e, dict) and e.get("operator") == "In" and e.get("key") in own
    ]
    return any(e.get("values") == [own[str(e["key"])]] for e in wanted)
