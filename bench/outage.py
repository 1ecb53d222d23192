"""Outage dumps for the analysis benchmark (bench/analysis.py): F failed nodes whose pods belong
to many owners with ~10 replicas each, made from snapshots recorded on the real control plane.

Templates (tests/fixtures, recorded by `make record`):
- node-down-after-eviction: flaky-a failed, its pods evicted (Terminating), replacements
  created: a Deployment's Running Ready elsewhere, a pinned Deployment's Pending (its
  nodeSelector names flaky-a), a Job's Succeeded and Running pods on healthy nodes.
- node-down-before-eviction: the same objects 40 s earlier: flaky-a not Ready and tainted, its
  pods not yet evicted.
- rwo-volume-on-dead-node: a StatefulSet pod on the failed flaky-v1 with a ReadWriteOnce PVC,
  its PV and the VolumeAttachment still on flaky-v1.
Each template's times are moved by the difference of capture times, so every copy shows the
moment its recording showed, seen from one capture time.

What a failed node i gets, in blocks of 10 nodes that share one moment (every `evicted_every`-th
block evicted, the others not yet):
- the template's 10 pods of flaky-a: two DaemonSet pods (of two shared DaemonSets, all their
  pods created when the first recording's were, whatever the block's moment), a
  StatefulSet pod (ordinal i % 5 of a StatefulSet of 5 replicas spanning 5 failed nodes), a
  Deployment pod, a pinned Deployment pod (evicted blocks: with its Pending replacement), three
  Job pods (each Job spanning the block's 10 nodes, with its siblings on healthy nodes), a bare
  pod, a pod owned by a ConfigMap;
- `web_per_node` - 1 more Deployment pods, each of another Deployment: a Deployment has
  `replicas` pods, `stuck_per_owner` of them on failed nodes (consecutive ones), the others
  Running and Ready on healthy nodes (copies of the recorded replacement);
- every `storage_every`-th node: a StatefulSet pod (a StatefulSet of its own) whose RWO volume
  is still attached there (PVC, PV, VolumeAttachment), Terminating;
- its Lease and the Events recorded about flaky-a.
Zones: 60% of the failed nodes in zone-a with half as many healthy nodes (PartialDisruption),
30% in zone-b among twice as many healthy ones, the rest in zone-c with none (FullDisruption).

    python -m bench.outage 1000 /tmp/outage.json     # 1,000 failed nodes (~12,500 stuck pods)
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from kubectl_nodefail.analysis import facts
from kubectl_nodefail.cluster.dumpfile import write_dump
from kubectl_nodefail.snapshot.model import Obj, Snapshot, format_time, parse_time

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
AFTER, BEFORE, STORAGE = (
    "node-down-after-eviction",
    "node-down-before-eviction",
    "rwo-volume-on-dead-node",
)
FAILED_NODE, STORAGE_NODE, HEALTHY_NODE = "flaky-a", "flaky-v1", "healthy-0"
BLOCK = 10  # failed nodes that share one moment (evicted or not) and one copy of each Job
STS_REPLICAS = 5  # the template StatefulSet's copies: 5 ordinals on 5 failed nodes
TEMPLATE_PODS = 10  # pods of flaky-a in both node-down templates
STATEFULSET, DAEMONSET = "StatefulSet", "DaemonSet"
WEB, PINNED = "web-", "pinned-"
JOB_OWNERS = ("Job", "CronJob")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")


@dataclass(frozen=True)
class Shape:
    failed: int  # failed nodes
    replicas: int = 10  # replicas of each Deployment with a pod on a failed node
    stuck_per_owner: int = 2  # of them on failed nodes; the others Running on healthy nodes
    web_per_node: int = 3  # Deployments with a pod on each failed node (one each)
    storage_every: int = 4  # an RWO StatefulSet pod, its volume attached, on every n-th node
    evicted_every: int = 2  # every n-th block of 10 failed nodes evicted, the others not yet

    def evicted(self, i: int) -> bool:
        return (i // BLOCK) % self.evicted_every == 0

    def expected(self) -> dict[str, int]:
        """What a diagnosis must find, counted from the construction (not from the analysis):
        every pod of a failed node is stuck; each pinned replacement (evicted blocks) is
        Pending for a failed node only."""
        storage = len(range(0, self.failed, self.storage_every))
        evicted = sum(1 for i in range(self.failed) if self.evicted(i))
        return {
            "nodesNotReady": self.failed,
            "podsOnFailedNodes": self.failed * (TEMPLATE_PODS + self.web_per_node - 1) + storage,
            "waitingForNode": evicted,
        }


def stuck_pods(shape: Shape) -> int:
    e = shape.expected()
    return e["podsOnFailedNodes"] + e["waitingForNode"]


def failed_for(stuck: int, base: Shape | None = None) -> Shape:
    """The smallest shape (default proportions) with at least `stuck` stuck pods."""
    shape = base or Shape(failed=1)
    lo, hi = 1, max(1, stuck)
    while lo < hi:
        mid = (lo + hi) // 2
        if stuck_pods(_with(shape, mid)) >= stuck:
            hi = mid
        else:
            lo = mid + 1
    return _with(shape, lo)


def _with(shape: Shape, failed: int) -> Shape:
    return dataclasses.replace(shape, failed=failed)


def _shift_times(value: Any, by: timedelta) -> Any:
    """Every RFC 3339 time in a JSON value moved by `by` (whole seconds; the format kept)."""
    if isinstance(value, dict):
        return {k: _shift_times(v, by) for k, v in value.items()}
    if isinstance(value, list):
        return [_shift_times(v, by) for v in value]
    if isinstance(value, str) and _TIME.fullmatch(value):
        when = parse_time(value)
        if when is not None:
            moved = when + by
            if "." in value:
                return moved.isoformat().replace("+00:00", "Z")
            return format_time(moved)
    return value


class _Template:
    """One recorded dump, its times moved to `captured`; copies parsed anew from JSON text
    with `flaky-a`-style node names replaced (nodeName, nodeSelector, affinity, events)."""

    def __init__(self, name: str, captured: datetime | None = None) -> None:
        doc = json.loads((FIXTURES / f"{name}.json").read_text())
        self.captured = parse_time(doc["capturedAt"])
        assert self.captured is not None
        self.server_version = doc.get("serverVersion")
        items = doc["items"]
        if captured is not None:
            items = _shift_times(
                items, timedelta(seconds=round((captured - self.captured).total_seconds()))
            )
        self.items: list[Obj] = items
        self._text: dict[int, str] = {id(o): json.dumps(o) for o in items}

    def of(self, kind: str, pred: Callable[[Obj], bool] = lambda o: True) -> list[Obj]:
        return [o for o in self.items if o.get("kind") == kind and pred(o)]

    def one(self, kind: str, name: str) -> Obj:
        (found,) = self.of(kind, lambda o: o["metadata"]["name"] == name)
        return found

    def copy(self, obj: Obj, node: str = "", was: str = FAILED_NODE) -> Obj:
        text = self._text[id(obj)]
        return json.loads(text.replace(was, node) if node else text)  # type: ignore[no-any-return]


def _on(node: str) -> Callable[[Obj], bool]:
    return lambda p: (p.get("spec") or {}).get("nodeName") == node


def _refs(obj: Obj) -> list[Obj]:
    return obj["metadata"].get("ownerReferences") or []


def _kind_of(pod: Obj) -> str:
    refs = _refs(pod)
    return refs[0].get("kind", "") if refs else ""


def _rename(obj: Obj, name: str, tag: str) -> Obj:
    meta = obj["metadata"]
    meta["name"] = name
    meta["uid"] = f"{meta.get('uid', '')}-{tag}"
    return obj


def _retag_refs(obj: Obj, tag: str) -> None:
    """Point the owner references (but a DaemonSet's: shared) to the copies tagged `tag`."""
    for ref in _refs(obj):
        if ref.get("kind") != DAEMONSET:
            ref["name"] = f"{ref['name']}-{tag}"
            ref["uid"] = f"{ref.get('uid', '')}-{tag}"


def _zones(failed: int) -> list[tuple[str, int, int]]:
    """(zone, failed, healthy) as in the module docstring."""
    a, b = failed * 6 // 10, failed * 3 // 10
    return [("zone-a", a, max(1, a // 2)), ("zone-b", b, 2 * failed), ("zone-c", failed - a - b, 0)]


def _node(template: _Template, obj: Obj, name: str, zone: str, was: str) -> Obj:
    node = template.copy(obj, name, was)
    node["metadata"]["uid"] = f"uid-{name}"
    labels = node["metadata"].setdefault("labels", {})
    labels[facts.LABEL_HOSTNAME] = name
    labels[facts.LABEL_ZONE] = zone
    return node


class _Builder:
    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        self.after = _Template(AFTER)
        captured = self.after.captured
        self.before = _Template(BEFORE, captured)
        self.storage = _Template(STORAGE, captured)
        self.snap = Snapshot(captured_at=captured, server_version=self.after.server_version)
        self.snap.source = f"generated outage: {shape.failed} failed nodes ({AFTER} and others)"
        self.healthy: list[str] = []
        self._next_healthy = 0
        self.owner_tags: set[tuple[str, str]] = set()  # (owner template name, tag)

    def healthy_node(self) -> str:
        """Healthy nodes in turn, for the pods Running elsewhere."""
        name = self.healthy[self._next_healthy % len(self.healthy)]
        self._next_healthy += 1
        return name

    def build(self) -> Snapshot:
        failed_names: list[tuple[str, str]] = []
        healthy_obj = self.after.one("Node", HEALTHY_NODE)
        for zone, failed, healthy in _zones(self.shape.failed):
            for k in range(healthy):
                name = f"{zone}-ok-{k:05d}"
                self.snap.nodes.append(_node(self.after, healthy_obj, name, zone, HEALTHY_NODE))
                self.healthy.append(name)
            failed_names += [(zone, f"{zone}-down-{k:05d}") for k in range(failed)]
        self.snap.owners += self.after.of(DAEMONSET)
        for i, (zone, name) in enumerate(failed_names):
            self.failed_node(i, zone, name)
        self.owners()
        return self.snap

    def failed_node(self, i: int, zone: str, name: str) -> None:
        shape = self.shape
        t = self.after if shape.evicted(i) else self.before
        self.snap.nodes.append(_node(t, t.one("Node", FAILED_NODE), name, zone, FAILED_NODE))
        self.snap.leases.append(_rename(t.copy(t.one("Lease", FAILED_NODE), name), name, name))
        for ev in t.of("Event", lambda e: e["involvedObject"].get("name") == FAILED_NODE):
            copy = t.copy(ev, name)
            self.snap.events.append(_rename(copy, copy["metadata"]["name"], name))
        for pod in t.of("Pod", _on(FAILED_NODE)):
            if str(pod["metadata"]["name"]).startswith(WEB):
                for extra in range(shape.web_per_node):
                    self.web(t, pod, i, extra, name)
            elif _kind_of(pod) == DAEMONSET:  # one DaemonSet: its pods all created at once
                (same,) = self.after.of(
                    "Pod", lambda p, n=pod["metadata"]["name"]: p["metadata"]["name"] == n
                )
                self.snap.pods.append(self.stuck_copy(self.after, same, i, name))
            else:
                self.snap.pods.append(self.stuck_copy(t, pod, i, name))
        if shape.evicted(i):
            for pod in t.of("Pod", lambda p: str(p["metadata"]["name"]).startswith(PINNED)):
                if (pod.get("spec") or {}).get("nodeName") != FAILED_NODE:  # its replacement
                    copy = _rename(t.copy(pod, name), f"{pod['metadata']['name']}-{i:05d}", f"{i}")
                    _retag_refs(copy, f"p{i}")
                    self.snap.pods.append(copy)
            if i % BLOCK == 0:  # the Jobs' pods elsewhere, once per Job copy
                for pod in t.of("Pod", lambda p: _kind_of(p) == "Job" and not _on(FAILED_NODE)(p)):
                    self.elsewhere(t, pod, f"j{i // BLOCK}", f"{i}")
        if i % shape.storage_every == 0:
            self.volume(i, name)

    def tag(self, pod: Obj, i: int, extra: int = 0) -> str:
        kind = _kind_of(pod)
        if kind == STATEFULSET:
            return f"s{i // STS_REPLICAS}"
        if kind == "Job":
            return f"j{i // BLOCK}"
        if str(pod["metadata"]["name"]).startswith(WEB):
            return f"w{extra}x{i // self.shape.stuck_per_owner}"
        return f"p{i}"  # pinned, the ConfigMap's pod: an owner per node

    def stuck_copy(self, t: _Template, pod: Obj, i: int, node: str, extra: int = 0) -> Obj:
        tag = self.tag(pod, i, extra)
        copy = t.copy(pod, node)
        meta = copy["metadata"]
        if _kind_of(pod) == STATEFULSET:
            name = f"{_refs(pod)[0]['name']}-{tag}-{i % STS_REPLICAS}"
            copy["spec"]["hostname"] = name
            meta.setdefault("labels", {})["statefulset.kubernetes.io/pod-name"] = name
        else:
            name = f"{meta['name']}-{i:05d}" + (f"-{extra}" if extra else "")
        _rename(copy, name, f"{i}-{extra}")
        _retag_refs(copy, tag)
        if _refs(pod) and _kind_of(pod) != DAEMONSET:
            self.owner_tags.add((_refs(pod)[0]["name"], tag))
        return copy

    def web(self, t: _Template, pod: Obj, i: int, extra: int, node: str) -> None:
        """A Deployment's pod on failed node i; with the owner's first pod, its replicas
        Running elsewhere (copies of the recorded Running replacement)."""
        shape = self.shape
        self.snap.pods.append(self.stuck_copy(t, pod, i, node, extra))
        if i % shape.stuck_per_owner:
            return
        tag = self.tag(pod, i, extra)
        running = self.after.one("Pod", "web-7f776b487b-jxzws")
        for k in range(shape.replicas - shape.stuck_per_owner):
            self.elsewhere(self.after, running, tag, f"{i}-{extra}-{k}", node)

    def elsewhere(self, t: _Template, pod: Obj, tag: str, suffix: str, failed: str = "") -> None:
        copy = t.copy(pod, failed) if failed else t.copy(pod)
        _rename(copy, f"{pod['metadata']['name']}-{suffix}", suffix)
        _retag_refs(copy, tag)
        copy["spec"]["nodeName"] = self.healthy_node()
        self.snap.pods.append(copy)

    def volume(self, i: int, node: str) -> None:
        """A StatefulSet of one replica on node i whose RWO volume is still attached there."""
        t, tag = self.storage, f"v{i}"
        (pod,) = t.of("Pod", lambda p: p["metadata"]["name"] == "db-v1-0")
        sts = t.one(STATEFULSET, "db-v1")
        pvc = t.of("PersistentVolumeClaim")[0]
        pv, va = t.of("PersistentVolume")[0], t.of("VolumeAttachment")[0]
        sts_name, pvc_name, pv_name = f"db-v1-{tag}", f"data-db-v1-{tag}-0", f"pv-db-v1-{tag}"
        copy = _rename(t.copy(pod, node, STORAGE_NODE), f"{sts_name}-0", tag)
        copy["spec"]["hostname"] = f"{sts_name}-0"
        copy["metadata"].setdefault("labels", {})["statefulset.kubernetes.io/pod-name"] = (
            f"{sts_name}-0"
        )
        _retag_refs(copy, tag)
        for vol in copy["spec"].get("volumes") or []:
            if vol.get("persistentVolumeClaim"):
                vol["persistentVolumeClaim"]["claimName"] = pvc_name
        claim = _rename(t.copy(pvc), pvc_name, tag)
        claim["spec"]["volumeName"] = pv_name
        volume = _rename(t.copy(pv), pv_name, tag)
        ref = volume["spec"].get("claimRef") or {}
        ref.update(name=pvc_name, uid=claim["metadata"]["uid"])
        csi = volume["spec"].get("csi") or {}
        if csi.get("volumeHandle"):
            csi["volumeHandle"] = f"{csi['volumeHandle']}-{tag}"
        attachment = _rename(t.copy(va, node, STORAGE_NODE), f"{va['metadata']['name']}-{tag}", tag)
        attachment["spec"]["source"]["persistentVolumeName"] = pv_name
        self.snap.pods.append(copy)
        self.snap.owners.append(_rename(t.copy(sts), sts_name, tag))
        self.snap.pvcs.append(claim)
        self.snap.pvs.append(volume)
        self.snap.volume_attachments.append(attachment)

    def owners(self) -> None:
        """A copy of each owner template per tag its pods used, with its chain (ReplicaSet ->
        Deployment, Job -> CronJob) and spec.replicas the shape gives."""
        by_name = {
            o["metadata"]["name"]: o for o in self.after.items if o.get("kind") not in _NOT_OWNERS
        }
        done: set[tuple[str, str]] = set()
        todo = sorted(self.owner_tags)
        while todo:
            name, tag = todo.pop(0)
            if (name, tag) in done or name not in by_name:
                continue  # a ConfigMap owner is not read in the recording either
            done.add((name, tag))
            template = by_name[name]
            owner = _rename(self.after.copy(template), f"{name}-{tag}", tag)
            _retag_refs(owner, tag)
            spec = owner.get("spec") or {}
            if "replicas" in spec:
                web = tag.startswith("w")
                spec["replicas"] = (
                    self.shape.replicas if web else STS_REPLICAS if tag.startswith("s") else 1
                )
            self.snap.owners.append(owner)
            todo += [(r["name"], tag) for r in _refs(template) if r.get("kind") != DAEMONSET]


_NOT_OWNERS = {
    "Node",
    "Lease",
    "Pod",
    "Event",
    "VolumeAttachment",
    "PersistentVolumeClaim",
    "PersistentVolume",
}


def outage(shape: Shape) -> Snapshot:
    return _Builder(shape).build()


def write(shape: Shape, path: Path) -> dict[str, Any]:
    """Write the dump (the format `kubectl nodefail dump` writes); what it holds."""
    snap = outage(shape)
    with open(path, "w", encoding="utf-8") as fh:
        items = write_dump(snap, fh)
    return {"items": items, "pods": len(snap.pods), "nodes": len(snap.nodes), **shape.expected()}


if __name__ == "__main__":
    count, out = int(sys.argv[1]), Path(sys.argv[2])
    print(json.dumps(write(Shape(failed=count), out)))
