"""Big outage snapshots made from a recorded one: hundreds to thousands of failed nodes, each with
the pods the recorded failed node had, spread over many owners with several replicas each.

The template is tests/fixtures/node-down-after-eviction.json (recorded from the real control
plane): its failed node flaky-a holds, after eviction, a StatefulSet pod, Deployment pods (one
replaced and Running elsewhere, one whose replacement is Pending), Job pods, DaemonSet pods, a
bare pod and a pod owned by a ConfigMap. Every failed node here is a renamed copy of flaky-a with
renamed copies of its pods; every owner is copied once per group of `replicas` nodes (the
DaemonSets are shared, as they are in a cluster); the replacements Running or Pending elsewhere
are copied with the pods they replace. Zones: the failed nodes are spread over three zones, one
mostly down (PartialDisruption, evictions slowed), one mostly up, one fully down.

    python -m tests.support.outage_snapshot 1000 /tmp/outage-1000.json
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any

from kubectl_nodefail.analysis import facts
from kubectl_nodefail.snapshot.model import Obj, Snapshot, from_items
from tests.unit.conftest import load

TEMPLATE = "node-down-after-eviction"
FAILED_NODE = "flaky-a"
HEALTHY_NODE = "healthy-0"
STATEFULSET = "StatefulSet"


@dataclass(frozen=True)
class Shape:
    failed: int  # failed nodes
    replicas: int = 10  # failed nodes per copy of an owner (its pods there: one per node)
    extra: int = 2  # more copies of the Deployment pod per node, each of another owner
    sts_every: int = 10  # a StatefulSet pod on every n-th failed node only
    sts_replicas: int = 3
    shutdown_every: int = 10  # every n-th failed node of zone-b carries the cloud shutdown taint


class _Clone:
    """Copies of template objects, each parsed anew from its JSON text (faster than deepcopy)."""

    def __init__(self, objs: list[Obj]) -> None:
        self.text = {id(o): json.dumps(o) for o in objs}

    def __call__(self, obj: Obj) -> Obj:
        copy: Obj = json.loads(self.text[id(obj)])
        return copy


def _zones(failed: int) -> list[tuple[str, int, int]]:
    """(zone, failed, healthy): zone-a 60% of the failed nodes and half as many healthy ones
    (PartialDisruption, tainting slowed), zone-b 30% among twice as many healthy nodes (Normal),
    zone-c the rest with no healthy node (FullDisruption)."""
    a = failed * 6 // 10
    b = failed * 3 // 10
    return [("zone-a", a, a // 2), ("zone-b", b, 2 * failed), ("zone-c", failed - a - b, 0)]


def _suffix(ref_or_obj: Obj, tag: str) -> None:
    meta = ref_or_obj.get("metadata", ref_or_obj)
    meta["name"] = f"{meta['name']}-{tag}"
    meta["uid"] = f"{meta.get('uid', '')}-{tag}"


def _rename_refs(obj: Obj, tag: str) -> None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("kind") != "DaemonSet":
            ref["name"] = f"{ref['name']}-{tag}"
            ref["uid"] = f"{ref.get('uid', '')}-{tag}"


def _owner_tag(pod: Obj, i: int, copy: int, shape: Shape) -> str | None:
    """The owner copy a pod of failed node i belongs to; None: not on this node."""
    refs = pod["metadata"].get("ownerReferences") or []
    if any(r.get("kind") == STATEFULSET for r in refs):
        if i % shape.sts_every:
            return None
        return f"s{i // shape.sts_every // shape.sts_replicas}"
    return f"g{i // shape.replicas}" + (f"e{copy}" if copy else "")


def outage_snapshot(shape: Shape) -> Snapshot:
    base = load(TEMPLATE)
    clone = _Clone(
        [*base.nodes, *base.leases, *base.pods, *base.owners]  # templates only
    )
    failed_node = base.node(FAILED_NODE)
    healthy_node = base.node(HEALTHY_NODE)
    lease = base.lease(FAILED_NODE)
    assert failed_node is not None and healthy_node is not None and lease is not None
    on_failed = [p for p in base.pods if p["spec"].get("nodeName") == FAILED_NODE]
    # Pods elsewhere of an owner that has a pod on the failed node: its replacements.
    owners_hit = {
        r.get("uid") for p in on_failed for r in p["metadata"].get("ownerReferences") or []
    }
    replacements = [
        p
        for p in base.pods
        if p["spec"].get("nodeName") != FAILED_NODE
        and any(r.get("uid") in owners_hit for r in p["metadata"].get("ownerReferences") or [])
        and not any(r.get("kind") == "DaemonSet" for r in p["metadata"]["ownerReferences"])
    ]
    nodes = [n for n in base.nodes if n["metadata"]["name"] != FAILED_NODE]
    leases = [x for x in base.leases if x["metadata"]["name"] != FAILED_NODE]
    pods = [p for p in base.pods if p not in on_failed and p not in replacements]
    tags: set[str] = set()
    i = 0
    for zone, failed, healthy in _zones(shape.failed):
        for k in range(healthy):
            node = clone(healthy_node)
            _node_named(node, f"{zone}-ok-{k:04d}", zone)
            nodes.append(node)
        for k in range(failed):
            name = f"{zone}-down-{k:04d}"
            node = clone(failed_node)
            _node_named(node, name, zone)
            if zone == "zone-b" and k % shape.shutdown_every == 0:
                node["spec"]["taints"].append(
                    {"key": facts.TAINT_CLOUD_SHUTDOWN, "effect": "NoSchedule"}
                )
            nodes.append(node)
            renewed = clone(lease)
            renewed["metadata"]["name"] = name
            leases.append(renewed)
            for template in on_failed:
                for copy in range(1 + (shape.extra if _is_web(template) else 0)):
                    tag = _owner_tag(template, i, copy, shape)
                    if tag is None:
                        continue
                    tags.add(tag)
                    pods.append(_pod_copy(clone(template), tag, name, i, copy, shape))
            for template in replacements:
                for copy in range(1 + (shape.extra if _is_web(template) else 0)):
                    tag = f"g{i // shape.replicas}" + (f"e{copy}" if copy else "")
                    pods.append(_pod_copy(clone(template), tag, "", i, copy, shape))
            i += 1
    owners = [o for o in base.owners if o.get("kind") == "DaemonSet"]
    for template in base.owners:
        if template.get("kind") == "DaemonSet":
            continue
        sts = template.get("kind") == STATEFULSET
        for tag in sorted(t for t in tags if t.startswith("s") == sts):
            owner = clone(template)
            _suffix(owner, tag)
            _rename_refs(owner, tag)
            if "replicas" in (owner.get("spec") or {}):
                owner["spec"]["replicas"] = shape.sts_replicas if sts else shape.replicas
            owners.append(owner)
    snap = from_items([], base.captured_at, server_version=base.server_version)
    snap.source = f"generated outage: {shape.failed} failed nodes from {TEMPLATE}"
    snap.nodes, snap.leases, snap.pods, snap.owners = nodes, leases, pods, owners
    snap.events = list(base.events)
    return snap


def _is_web(pod: Obj) -> bool:
    return str(pod["metadata"]["name"]).startswith("web-")


def _node_named(node: Obj, name: str, zone: str) -> None:
    node["metadata"]["name"] = name
    node["metadata"]["uid"] = f"uid-{name}"
    labels = node["metadata"].setdefault("labels", {})
    labels[facts.LABEL_HOSTNAME] = name
    labels[facts.LABEL_ZONE] = zone


def _pod_copy(pod: Obj, tag: str, node: str, i: int, copy: int, shape: Shape) -> Obj:
    meta = pod["metadata"]
    sts = any(r.get("kind") == STATEFULSET for r in meta.get("ownerReferences") or [])
    if sts:
        ordinal = i // shape.sts_every % shape.sts_replicas
        set_name = f"{meta['ownerReferences'][0]['name']}-{tag}"
        meta["name"] = f"{set_name}-{ordinal}"
        pod["spec"]["hostname"] = meta["name"]
        meta.setdefault("labels", {})["statefulset.kubernetes.io/pod-name"] = meta["name"]
    else:
        meta["name"] = f"{meta['name']}-{i:05d}" + (f"-{copy}" if copy else "")
    meta["uid"] = f"{meta.get('uid', '')}-{i}-{copy}"
    _rename_refs(pod, tag)
    if node:
        pod["spec"]["nodeName"] = node
    return pod


def dump(shape: Shape) -> dict[str, Any]:
    return outage_snapshot(shape).to_dump()


if __name__ == "__main__":
    count, path = int(sys.argv[1]), sys.argv[2]
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(dump(Shape(failed=count)), fh)
