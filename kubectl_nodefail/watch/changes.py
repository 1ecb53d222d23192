"""What changed between two reads of the cluster, in words: `diagnose --watch`'s change log.

Only what the reads show, as the API server states it: a node going NotReady or Ready again (how
long it was not Ready, from its Ready condition's lastTransitionTime in both reads; see _after),
appearing, being deleted or re-registered (a new UID), tainted or cordoned; a pod becoming
Terminating, deleted (it was Terminating and is gone), replaced (same name, new UID: a
StatefulSet's pod), or bound to a node; kube-controller-manager's leader gone, back or new
(its Lease, analysis/leader.py). A pod that merely stops being listed (its node is
Ready again) is said by its node's line, never as "deleted".
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubectl_nodefail.analysis.leader import leader
from kubectl_nodefail.analysis.text import duration
from kubectl_nodefail.snapshot.model import Snapshot, format_time, parse_time

Obj = dict[str, Any]


def _ready(node: Obj) -> tuple[str, datetime | None]:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return str(cond.get("status") or ""), parse_time(cond.get("lastTransitionTime"))
    return "", None


def _taints(node: Obj) -> set[str]:
    return {
        f"{t.get('key', '')}:{t.get('effect', '')}"
        for t in (node.get("spec") or {}).get("taints") or []
    }


def _by_name(items: list[Obj], namespaced: bool) -> dict[str, Obj]:
    out = {}
    for item in items:
        meta = item.get("metadata") or {}
        name = meta.get("name", "")
        out[f"{meta.get('namespace', '')}/{name}" if namespaced else name] = item
    return out


def _uid(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


GROUP = 3  # more pods than this changing the same way in one read: one line for them


def between(before: Snapshot, after: Snapshot) -> list[str]:
    """The changes from `before` to `after`, nodes first, in a stable order; more than GROUP
    pods that became Terminating, or were deleted, in one read are one line."""
    return _leader(before, after) + _nodes(before, after) + _grouped(_pods(before, after))


def leader_state(snap: Snapshot) -> tuple[str, str]:
    """kube-controller-manager's leader as the watch compares it: when it took over, and
    whether it renewed when read (("", "") when its Lease was not read)."""
    chief = leader(snap)
    return ("", "") if chief is None else (format_time(chief.since), chief.state)


def _leader(before: Snapshot, after: Snapshot) -> list[str]:
    (was_since, was), (since, state) = leader_state(before), leader_state(after)
    if not since or (since, state) == (was_since, was):
        return []
    if state == "expired":
        return ["kube-controller-manager has no leader (its Lease not renewed in time)"]
    if was_since and since != was_since:
        return [f"kube-controller-manager has a new leader (since {since})"]
    if was == "expired" and state == "alive":
        return ["kube-controller-manager's leader renews its Lease again"]
    return []


def _grouped(lines: list[tuple[str, str]]) -> list[str]:
    by_verb: dict[str, list[str]] = {}
    for key, verb in lines:
        by_verb.setdefault(verb, []).append(key)
    out = []
    for key, verb in lines:
        keys = by_verb[verb]
        if len(keys) <= GROUP or verb not in ("Terminating", "deleted"):
            out.append(f"{key} {verb}")
        elif key == keys[0]:
            out.append(f"{len(keys)} pods {verb}: {', '.join(keys[:2])} and {len(keys) - 2} more")
    return out


def _nodes(before: Snapshot, after: Snapshot) -> list[str]:
    old, new = _by_name(before.nodes, False), _by_name(after.nodes, False)
    out: list[str] = []
    for name in sorted(set(old) | set(new)):
        if name not in new:
            out.append(f"node {name} deleted")
            continue
        if name not in old:
            out.append(f"node {name} added")
            continue
        was, now = old[name], new[name]
        if _uid(was) and _uid(now) and _uid(was) != _uid(now):
            out.append(f"node {name} re-registered (new UID)")
        (was_ready, was_since), (ready, since) = _ready(was), _ready(now)
        if was_ready == "True" and ready != "True":
            out.append(f"{name} NotReady")
        elif was_ready != "True" and ready == "True":
            out.append(f"{name} Ready again{_after(was_since, since, after.captured_at)}")
        added, removed = _taints(now) - _taints(was), _taints(was) - _taints(now)
        if added:
            out.append(f"{name} tainted {', '.join(sorted(added))}")
        if removed:
            out.append(f"{name} untainted {', '.join(sorted(removed))}")
        cordoned = bool((now.get("spec") or {}).get("unschedulable"))
        if cordoned != bool((was.get("spec") or {}).get("unschedulable")):
            out.append(f"{name} {'cordoned' if cordoned else 'uncordoned'}")
    return out


def _after(down: datetime | None, up: datetime | None, read: datetime) -> str:
    """How long a node was not Ready: between its Ready condition's two transitions; when the
    Ready one is not later (some kubelets, kwok among them, keep an old time), from the first
    to the read that saw it Ready ("about": within one --interval)."""
    if down is None:
        return ""
    if up is not None and up > down:
        return f" after {duration((up - down).total_seconds())}"
    if read > down:
        return f" after about {duration((read - down).total_seconds())}"
    return ""


def _terminating(pod: Obj) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def _node(pod: Obj) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _pods(before: Snapshot, after: Snapshot) -> list[tuple[str, str]]:
    """(namespace/name, what happened to it)."""
    old, new = _by_name(before.pods, True), _by_name(after.pods, True)
    out: list[tuple[str, str]] = []
    for key in sorted(set(old) | set(new)):
        was, now = old.get(key), new.get(key)
        if now is None:
            if was is not None and _terminating(was):
                out.append((key, "deleted"))  # Terminating pods are listed wherever they run
            continue
        if was is None:
            if _terminating(now):
                out.append((key, "Terminating"))
            continue
        if _uid(was) and _uid(now) and _uid(was) != _uid(now):
            where = f" (on {_node(now)})" if _node(now) else ""
            out.append((key, f"replaced{where}"))
            continue
        if _terminating(now) and not _terminating(was):
            out.append((key, "Terminating"))
        if _node(now) and _node(now) != _node(was):
            out.append((key, f"scheduled on {_node(now)}"))
    return out
