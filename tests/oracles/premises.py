"""The premise checker: every claim's premises re-read from the raw snapshot, independently.

A diagnosis (the JSON of `diagnose -o json`) states claims, each with the facts it rests on:
`{object, field, value}`. This module reads the raw dump (the JSON file as written, not the
snapshot the analysis loaded, nor the analysis' own field reader) and reports every premise whose
object is missing or whose field holds another value. It imports nothing of the analysis, so a
bug there cannot vouch for itself. It runs on every recorded fixture, on every e2e recording, and
on generated snapshots.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]


@dataclass(frozen=True)
class FalsePremise:
    pod: str  # namespace/name of the pod the claim is about, or "node NAME"
    kind: str  # the claim's kind
    object: str
    field: str
    claimed: Any
    actual: Any
    found: bool  # the object is in the snapshot

    def __str__(self) -> str:
        if not self.found:
            return f"[{self.pod}] {self.kind}: {self.object} is not in the snapshot"
        return (
            f"[{self.pod}] {self.kind}: {self.object} {self.field} is {self.actual!r}, "
            f"the claim says {self.claimed!r}"
        )


# The dump's envelope as a premise's object (the server's version is read from there).
DUMP = "Dump"


def _key(item: Obj) -> str:
    meta = item.get("metadata") or {}
    namespace = meta.get("namespace")
    kind = item.get("kind") or ""
    name = meta.get("name")
    return f"{kind}/{namespace}/{name}" if namespace else f"{kind}/{name}"


def _latest(items: list[Obj]) -> dict[str, Obj]:
    """Each object by its key; of two under one key (a pod and the one made again under its
    name, read moments apart), the one written last: the higher resourceVersion."""
    out: dict[str, Obj] = {}
    for item in items:
        key = _key(item)
        rv = str((item.get("metadata") or {}).get("resourceVersion") or "")
        held = str((out.get(key, {}).get("metadata") or {}).get("resourceVersion") or "")
        if key not in out or not (rv.isdigit() and held.isdigit() and int(rv) < int(held)):
            out[key] = item
    return out


def _steps(path: str) -> list[tuple[str, str | None]]:
    """'a.b[type=X].c[d.e/f]' -> [(a, None), (b, None), (type, X), (c, None), (d.e/f, None)]"""
    out: list[tuple[str, str | None]] = []
    i, word = 0, ""
    while i < len(path):
        ch = path[i]
        if ch == ".":
            if word:
                out.append((word, None))
            word = ""
        elif ch == "[":
            if word:
                out.append((word, None))
            word = ""
            end = path.index("]", i)
            inner = path[i + 1 : end]
            if "=" in inner:
                key, _, value = inner.partition("=")
                out.append((key, value))
            else:
                out.append((inner, None))
            i = end
        else:
            word += ch
        i += 1
    if word:
        out.append((word, None))
    return out


def value_at(obj: Obj, path: str) -> Any:
    current: Any = obj
    for key, selector in _steps(path):
        if selector is not None:
            if not isinstance(current, list):
                return None
            # [k=v] or [k=v,k2=v2]: every pair must match
            pairs = [(key, selector.split(",")[0])]
            for term in selector.split(",")[1:]:
                k, eq, v = term.partition("=")
                if eq:
                    pairs.append((k, v))
            current = next(
                (
                    e
                    for e in current
                    if isinstance(e, dict) and all(e.get(k) == v for k, v in pairs)
                ),
                None,
            )
        elif isinstance(current, dict):
            current = current.get(key)
        else:
            return None
        if current is None:
            return None
    return current


def _members(items: list[Obj], selector: str) -> list[Obj] | None:
    """The set a premise's object names: `Kind[]` (all of that kind) or `Kind[TERM,...]`, each
    term `LABEL=VALUE` (the label has that value), `!LABEL` (the label is absent) or `owner:UID`
    (an ownerReference names that UID); None if the object is not a set."""
    if not selector.endswith("]") or "[" not in selector or "/" in selector.partition("[")[0]:
        return None
    kind, _, inside = selector[:-1].partition("[")
    out = [i for i in items if i.get("kind") == kind]
    for term in inside.split(",") if inside else []:
        if term.startswith("owner:"):  # a colon is in no label key: the objects owned by a UID
            out = [
                i
                for i in out
                if any(
                    isinstance(r, dict) and r.get("uid") == term[len("owner:") :]
                    for r in (i.get("metadata") or {}).get("ownerReferences") or []
                )
            ]
            continue
        if term.startswith("!"):
            out = [
                i for i in out if term[1:] not in ((i.get("metadata") or {}).get("labels") or {})
            ]
            continue
        label, _, wanted = term.partition("=")
        out = [
            i for i in out if ((i.get("metadata") or {}).get("labels") or {}).get(label) == wanted
        ]
    return out


def _count(members: list[Obj], field: str) -> Any:
    """`count`, or `count(PATH=V1|V2 or PATH=V3)`: members with any listed value at its path."""
    if field == "count":
        return len(members)
    if not (field.startswith("count(") and field.endswith(")")):
        return None
    terms = []
    for term in field[len("count(") : -1].split(" or "):
        path, _, values = term.rpartition("=")
        terms.append((path, values.split("|")))
    return sum(1 for m in members if any(value_at(m, path) in values for path, values in terms))


def _action_claim(action: Obj | None) -> Obj:
    """A suggested action's own premises, as a claim of kind `advice`."""
    return {"kind": "advice", "because": (action or {}).get("because") or []}


def check(dump: Obj, diagnosis: Obj) -> list[FalsePremise]:
    """Every premise of every claim in `diagnosis` that the raw `dump` does not bear out."""
    items = [item for item in dump.get("items") or [] if isinstance(item, dict)]
    objects = _latest(items)
    objects[DUMP] = {k: v for k, v in dump.items() if k != "items"}  # its serverVersion
    stated = [
        (f"{pod.get('namespace')}/{pod.get('name')}", pod.get("claims") or [])
        for pod in diagnosis.get("pods") or []
    ] + [
        # a node's cause is one claim: kind cause:CODE
        (
            f"node/{node.get('name')}",
            [
                {
                    **(node.get("cause") or {}),
                    "kind": f"cause:{(node.get('cause') or {}).get('code')}",
                }
            ],
        )
        for node in diagnosis.get("nodes") or []
    ]
    for node in diagnosis.get("nodes") or []:  # a node's automation claims, its action's facts
        for coverage in node.get("automation") or []:
            stated.append((f"node {node.get('name')}", coverage.get("claims") or []))
        stated.append((f"node {node.get('name')}", [_action_claim(node.get("action"))]))
    for pod in diagnosis.get("pods") or []:  # a pod's action's own facts (the brake's)
        stated.append(
            (f"{pod.get('namespace')}/{pod.get('name')}", [_action_claim(pod.get("action"))])
        )
    for node in diagnosis.get("nodes") or []:  # each timeline entry: where its time is read
        for entry in node.get("timeline") or []:
            stated.append(
                (f"node {node.get('name')}", [{**entry, "kind": f"timeline:{entry.get('kind')}"}])
            )
    for zone in diagnosis.get("zones") or []:
        stated.append((f"zone {zone.get('zone')}", zone.get("claims") or []))
    stated.append(("cluster", diagnosis.get("clusterClaims") or []))
    stated.append(("held elsewhere", diagnosis.get("heldClaims") or []))
    for workload in diagnosis.get("workloads") or []:  # the outage view's SERVING
        if workload.get("serving"):
            who = f"workload {workload.get('namespace')}/{workload.get('owner')}"
            stated.append((who, [workload["serving"]]))
    stated.append(("server", diagnosis.get("serverBehaviourClaims") or []))
    for key in ("brake", "headline"):
        if diagnosis.get(key):
            stated.append(("cluster", [diagnosis[key]]))
    return _unheld(items, objects, stated)


def check_plan(dump: Obj, plan: Obj) -> list[FalsePremise]:
    """Every fact a remediation plan's or result's steps state about the pods they release or
    leave stuck (`steps[].because`) that the raw `dump` does not bear out."""
    items = [item for item in dump.get("items") or [] if isinstance(item, dict)]
    objects = _latest(items)
    stated = [
        (f"step {step.get('action')} {step.get('target')}", [{"kind": "step", **step}])
        for step in plan.get("steps") or []
    ]
    return _unheld(items, objects, stated)


def _unheld(
    items: list[Obj], objects: dict[str, Obj], stated: list[tuple[str, list[Obj]]]
) -> list[FalsePremise]:
    wrong = []
    for who, claims in stated:
        for claim in claims:
            for premise in claim.get("because") or []:
                members = _members(items, premise["object"])
                if members is not None:  # a set of objects: a count over them
                    obj: Obj | None = {}
                    actual = _count(members, premise["field"])
                else:
                    obj = objects.get(premise["object"])
                    actual = value_at(obj, premise["field"]) if obj is not None else None
                if obj is None or actual != premise["value"]:
                    wrong.append(
                        FalsePremise(
                            who,
                            claim.get("kind", "?"),
                            premise["object"],
                            premise["field"],
                            premise["value"],
                            actual,
                            obj is not None,
                        )
                    )
    return wrong
