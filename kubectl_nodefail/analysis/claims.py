"""Claims: what the diagnosis states about a pod, each with the snapshot facts that make it true.

A claim is one statement (its `text` is what the user reads) of a stable `kind`, and `because`
lists its premises: for each, the object (`Kind/namespace/name`, or `Kind/name` for cluster
objects), a field path in that object as it is stored, and the value the analysis read there.
The analysis builds its sentences only from claims (a section of the pod's report is the claims
of that section, joined), so a sentence cannot be printed without the facts it rests on.

premises.py re-reads every premise from the raw snapshot, without this package's code: a claim
whose premise does not hold there is a defect, found on every fixture and every e2e diagnosis.

A premise about a set of objects names the set instead of one object: `Node[LABEL=VALUE]` (the
Nodes with that label), `Node[]` (all Nodes) or `Pod[owner:UID]` (the Pods whose
ownerReferences name that UID), with the field `count` (how many) or
`count(PATH=V1|V2 or PATH=V3 ...)` (how many have one of those values at one of those paths).

Field paths: dot-separated keys; `conditions[type=Ready]` picks the list element whose `type` is
`Ready` (`taints[key=K,effect=NoExecute]`: the one with both); a key containing dots is written
in brackets, `labels[kubernetes.io/hostname]`. A value of None means the field is absent (or
null).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from kubectl_nodefail.snapshot.model import Obj

# Where a claim's text goes in a pod's report (the sentence fields of PodFinding).
# A node's, zone's or the cluster's claim goes to the node's action, the zone line, or the
# cluster-wide notes (the headline's warnings).
SECTIONS = (
    *("meaning", "why", "replacement", "returns", "action", "automation"),
    *("eviction", "storage"),
    *("node", "zone", "cluster"),
    "workload",  # an owner's line in the outage view (analysis/outage.py)
    "versions",  # which behaviour of the server's minor the analysis applied (-o json only)
)

# The kinds of claim, and what each states. README/docs list them with their proofs.
KINDS = {
    "status-meaning": "what the pod's status really means: who asked for the deletion, what "
    "keeps the object, what the node's Ready condition and lease say about its containers",
    "finished": "the pod had run to completion (phase Succeeded or Failed) before it was deleted",
    "held-by-finalizers": "finalizers keep the object; only whoever set them releases it",
    "kubelet-hold": "the object waits for a kubelet that does not confirm (dead or silent node)",
    "released-by": "what ends the wait for the kubelet, and what it does not release",
    "owner-wants": "the owner's current desired state, and whether it wants this pod replaced",
    "counts-as": "how the owner counts the pod now (live replica, gone, failed, succeeded)",
    "replacement": "what stands in for the pod: a pod found, its phase and node, or none",
    "blocked-by": "why a replacement does not schedule: the scheduler's own message",
    "blocks": "what the stuck pod blocks in its owner (ordinals, rollouts)",
    "if-node-returns": "what the kubelet and the owner do if the node comes back",
    "scheduled-run": "what the Job's CronJob does at its next scheduled run (concurrencyPolicy "
    "Replace deletes the Job, and so its pods)",
    "no-owner": "no controller owns the pod",
    "static-pod": "the kubelet runs the pod from a manifest on the node",
    "one-per-node": "a DaemonSet pod, never evicted for not-ready/unreachable",
    "unknown-owner": "an owner whose behaviour this tool does not model",
    "placement": "the pod tolerates its failed node's NoSchedule taints: a pod with its "
    "tolerations (its replacement) may be bound there again; or its owner's template binds "
    "every pod to that node (spec.nodeName)",
    # the pod's timeline and volumes (analysis/eviction.py, analysis/storage.py)
    "eviction": "when the taint-eviction controller deletes the pod, if ever: the node's "
    "NoExecute taints, the pod's tolerations and when it reached the node",
    "deletion": "the deletion already asked: when its grace period ends and what keeps the object",
    "volume": "a volume that keeps the pod or its replacement from starting: its claim, its "
    "volume's node affinity, its attachment and when that detaches",
    # a node's remediation automation (analysis/automation/, docs/automation.md)
    "covered-by": "an automation that replaces or fences the node covers it",
    "automation-acting": "the automation is remediating the node now",
    "automation-due": "its timeout has passed and it records no remediation yet",
    "automation-scheduled": "when the automation acts if the node stays as it is",
    "automation-stopped": "the automation starts no remediation now (short-circuit, paused)",
    "automation-not-matching": "none of its unhealthy conditions matches the node now",
    "automation-overdue": "its time passed long ago and it has not acted: not waited for",
    "automation-stalled": "it began remediating long ago and has not finished: not waited for",
    # the cluster's and zones' state (analysis/zones.py, analysis/brake.py)
    "zone-state": "a zone's disruption state as the node lifecycle controller computes it, and "
    "what it does to tainting and eviction there",
    "brake": "the failure is too wide to trust the machines' deaths (a zone in disruption, or "
    "most nodes not Ready at once): remediate refuses destructive steps",
    "serving": "how many of an owner's pods are Ready on Ready nodes, and how many it wants "
    "(the outage view's SERVING column)",
    "headline": "how many of the cluster's nodes are not Ready (the first line's counts)",
    "server-behaviour": "which behaviour of the server's Kubernetes minor the analysis applied "
    "(JSON serverBehaviourClaims; the texts are serverBehaviour)",
    "no-leader": "kube-controller-manager has no leader (its Lease expired when read): none of "
    "its controllers acts on the pod, its owner or its volumes until one takes over",
    "unmarked-node": "the pod's node is Ready only because nothing marks it: its kubelet's lease "
    "expired while kube-controller-manager has no leader, or the node lifecycle controller is "
    "past its time to mark it (analysis/unmarked.py)",
    "cluster-note": "a cluster-wide conclusion (master disruption mode, a mass failure, the "
    "NodeLost era)",
    # a node's or pod's suggested action (analysis/advice.py)
    "advice": "what to do, and why it is safe: the facts the suggestion rests on",
}


@dataclass(frozen=True)
class Premise:
    """One fact of the snapshot: `object`'s `field` had `value`."""

    object: str
    field: str
    value: Any


@dataclass
class Claim:
    kind: str
    section: str
    text: str
    because: list[Premise] = field(default_factory=list)


# The dump's own envelope as a premise's object: its `serverVersion` (what /version said).
DUMP_OBJECT = "Dump"


def ref(kind: str, obj: Obj) -> str:
    """`Kind/namespace/name`, or `Kind/name` for an object without a namespace."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{kind}/{namespace}/{meta.get('name')}" if namespace else f"{kind}/{meta.get('name')}"


_STEP = re.compile(r"([^.\[]+)|\[([^\]=]+)=([^\]]*)\]|\[([^\]]+)\]")


@functools.lru_cache(maxsize=1024)
def _steps(path: str) -> tuple[tuple[Any, ...], ...]:
    """A path's steps, parsed once: the analysis reads the same few paths from every pod."""
    return tuple(m.groups() for m in _STEP.finditer(path))


@functools.lru_cache(maxsize=256)
def _selector(key: str, value: str) -> tuple[tuple[str, str], ...]:
    """`[k=v]`, or `[k=v,k2=v2]` (every pair must match: a taint by key and effect)."""
    first, *more = value.split(",")
    pairs = [(key, first)]
    for term in more:
        k, eq, v = term.partition("=")
        if eq:
            pairs.append((k, v))
    return tuple(pairs)


def read(obj: Obj, path: str) -> Any:
    """The value at `path` in `obj` (None where absent): the analysis' own reader. premises.py
    has its own, so that a wrong reader here cannot vouch for itself."""
    value: Any = obj
    for name, wanted in _compiled(path):
        if value is None:
            return None
        if wanted is None:
            value = value.get(name) if isinstance(value, dict) else None
            continue
        found = None
        if isinstance(value, (list, tuple)):
            for e in value:
                if not isinstance(e, dict):
                    continue
                for k, v in wanted:
                    if e.get(k) != v:
                        break
                else:  # every pair matched
                    found = e
                    break
        value = found
    return value


@functools.lru_cache(maxsize=1024)
def _compiled(path: str) -> tuple[tuple[Any, Any], ...]:
    """A path's steps as `read` takes them: (key, None), or (None, the selector's pairs)."""
    return tuple(
        (key if key is not None else bracket, None)
        if sel_key is None
        else (None, _selector(sel_key, sel_value))
        for key, sel_key, sel_value, bracket in _steps(path)
    )


def _canonical(value: Any) -> Any:
    """A value with its mappings' keys in order: a premise reads the same whatever order the
    API server, a dump or a cut snapshot gave the keys of an object in a list (taints)."""
    if isinstance(value, dict):
        return {k: _canonical(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def fact(kind: str, obj: Obj, path: str) -> Premise:
    """A premise read from `obj` now: the value the analysis bases a claim on."""
    return Premise(ref(kind, obj), path, _canonical(read(obj, path)))


def claim(kind: str, section: str, text: str, *because: Premise) -> Claim:
    assert kind in KINDS and section in SECTIONS, (kind, section)
    return Claim(kind, section, text, list(because))


def once(premises: list[Premise]) -> list[Premise]:
    """Each premise once, in order (values may be lists: keyed by their text)."""
    seen: dict[tuple[str, str, str], Premise] = {}
    for premise in premises:
        seen.setdefault((premise.object, premise.field, repr(premise.value)), premise)
    return list(seen.values())


def text_of(claims: list[Claim], section: str) -> str:
    """A section's sentence(s): its claims' texts in order."""
    return " ".join(c.text for c in claims if c.section == section and c.text)
