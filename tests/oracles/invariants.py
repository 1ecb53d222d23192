"""Consistency invariants: every way a Report could contradict itself, checked in one place.

`check(report)` returns each self-contradiction found (an empty list for a consistent report).
It is pure, so it runs on every recorded fixture, on every diagnosis the end-to-end tests make
(`check_data` on the JSON output) and on generated reports. A check here never decides whether
an explanation of Kubernetes is right (the real control plane does that); it decides whether the
report's sentences agree with the report's own fields.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kubectl_nodefail.analysis import eviction, summary
from kubectl_nodefail.analysis.findings import NodeFinding, PodFinding, Report, ZoneFinding
from kubectl_nodefail.analysis.machine import kubelet_alive
from kubectl_nodefail.common import attestation
from kubectl_nodefail.snapshot.model import parse_time


@dataclass(frozen=True)
class Violation:
    code: str  # which invariant
    subject: str  # node/NAME, pod/NS/NAME, zone/NAME or report
    detail: str

    def __str__(self) -> str:
        return f"{self.code} [{self.subject}]: {self.detail}"


@dataclass
class _View:
    """The report with its look-ups built once."""

    report: Report
    nodes: dict[str, NodeFinding]
    zones: dict[str, ZoneFinding]

    def node_of(self, pod: PodFinding) -> NodeFinding | None:
        return self.nodes.get(pod.node)

    def zone_of(self, pod: PodFinding) -> ZoneFinding | None:
        node = self.node_of(pod)
        return self.zones.get(node.zone) if node else None


def _pod(p: PodFinding) -> str:
    return f"pod/{p.namespace}/{p.name}"


def _has_noexecute(node: NodeFinding) -> bool:
    return any(t.effect == "NoExecute" for t in node.taints)


Check = Callable[[_View], Iterator[Violation]]
CHECKS: dict[str, Check] = {}


def _check(code: str) -> Callable[[Check], Check]:
    def register(fn: Check) -> Check:
        CHECKS[code] = fn
        return fn

    return register


@_check("advice-claims-replacement-serves")
def _replacement_serves(v: _View) -> Iterator[Violation]:
    """An action saying a replacement serves (or the pod is cosmetic because of it) while no
    replacement is running or finished."""
    for p in v.report.pods:
        text = p.action.summary.lower()
        if ("replacement already serves" in text or "replacement already runs" in text) and (
            p.replacement.state not in ("running", "finished")
        ):
            yield Violation(
                "advice-claims-replacement-serves",
                _pod(p),
                f"action says the replacement serves; replacement.state is {p.replacement.state!r}",
            )


@_check("stale-lease-claim-on-fresh-lease")
def _stale_lease(v: _View) -> Iterator[Violation]:
    """A pod's text saying its node's lease went stale while that lease is fresh."""
    for p in v.report.pods:
        node = v.node_of(p)
        if node is None:
            continue
        for field in ("meaning", "timeline", "explanation"):
            if "lease went stale" in getattr(p, field) and node.lease_stale is not True:
                yield Violation(
                    "stale-lease-claim-on-fresh-lease",
                    _pod(p),
                    f"{field} says the lease went stale; node {node.name} lease_stale="
                    f"{node.lease_stale}",
                )


@_check("unknown-state-on-live-kubelet")
def _unknown_on_live(v: _View) -> Iterator[Violation]:
    """A pod's state called unknown on a node whose kubelet is alive and reporting."""
    for p in v.report.pods:
        node = v.node_of(p)
        if node is not None and kubelet_alive(node) and "state is unknown" in p.meaning:
            yield Violation(
                "unknown-state-on-live-kubelet",
                _pod(p),
                f"meaning says the state is unknown; node {node.name} is Ready=False with a "
                "live kubelet",
            )


@_check("eviction-pending-while-stopped")
def _pending_while_stopped(v: _View) -> Iterator[Violation]:
    """NEXT says an eviction is pending while the pod's node has no NoExecute taint and its
    zone's evictions are stopped; or NEXT contradicts the pod's own timeline."""
    now = v.report.captured_at
    for p in v.report.pods:
        words = summary.next_step(p, now)
        node, zone = v.node_of(p), v.zone_of(p)
        if (
            words == "eviction pending"
            and node is not None
            and not _has_noexecute(node)
            and zone is not None
            and zone.eviction == "stopped"
        ):
            yield Violation(
                "eviction-pending-while-stopped",
                _pod(p),
                f"NEXT 'eviction pending' but node {node.name} has no NoExecute taint and "
                f"zone {zone.zone} evictions are stopped",
            )
        if words in ("eviction pending", "never evicted") and (
            eviction.PAUSED in p.timeline
            or (words == "eviction pending" and eviction.NEVER in p.timeline)
        ):
            yield Violation(
                "eviction-pending-while-stopped",
                _pod(p),
                f"NEXT {words!r} contradicts the timeline: {p.timeline}",
            )
        if words == "never evicted" and p.eviction_at is not None:
            yield Violation(
                "eviction-pending-while-stopped",
                _pod(p),
                "NEXT 'never evicted' while an eviction time is set",
            )


@_check("zone-text-contradicts-taints")
def _zone_text(v: _View) -> Iterator[Violation]:
    """A zone line saying its pods are not evicted while one of its failed nodes carries a
    NoExecute taint (its pods are evicted by their tolerations)."""
    for zone in v.report.zones:
        text = zone.explanation
        if "pods are not evicted" not in text and "evicts nothing" not in text:
            continue
        tainted = [
            n.name for n in v.report.nodes if n.zone == zone.zone and n.failed and _has_noexecute(n)
        ]
        if tainted:
            yield Violation(
                "zone-text-contradicts-taints",
                f"zone/{zone.zone}",
                f"says pods are not evicted; NoExecute-tainted nodes: {', '.join(tainted)}",
            )


def _forces(p: PodFinding) -> bool:
    """The action force-deletes this pod (a pod waiting for a volume is not touched by the
    out-of-service taint suggested for the node that holds the volume)."""
    a = p.action
    attested = attestation.FLAG in a.remediate  # the step the attestation unlocks releases it
    if p.category == summary.WAITING_FOR_VOLUME:
        return "--force" in a.kubectl
    return "--force" in a.kubectl or attested or a.code in ("force-delete", "out-of-service")


@_check("force-ignores-finalizers")
def _force_finalizers(v: _View) -> Iterator[Violation]:
    """A force-delete / out-of-service suggestion for a pod with finalizers that does not name
    every one of them (they survive both)."""
    for p in v.report.pods:
        if p.finalizers and _forces(p):
            missing = [f for f in p.finalizers if f not in p.action.summary]
            if missing:
                yield Violation(
                    "force-ignores-finalizers",
                    _pod(p),
                    f"action {p.action.code} does not name finalizers {', '.join(missing)}",
                )
        if p.finalizers and p.node_failed and "removes the object" in p.if_node_returns:
            unnamed = [f for f in p.finalizers if f not in p.if_node_returns]
            if unnamed:
                yield Violation(
                    "force-ignores-finalizers",
                    _pod(p),
                    "if-the-node-returns text says the kubelet removes the object; "
                    f"finalizers {', '.join(unnamed)} keep it",
                )


@_check("power-off-advice-on-live-kubelet")
def _power_off_on_live(v: _View) -> Iterator[Violation]:
    """Advice to confirm the machine is powered off and force, for a node whose kubelet is
    alive and reporting (the machine runs)."""
    for p in v.report.pods:
        node = v.node_of(p)
        if (
            node is not None
            and kubelet_alive(node)
            and not node.shutdown_evidence
            and (
                "powered off" in p.action.summary
                or "--force" in p.action.kubectl
                or attestation.FLAG in p.action.remediate
            )
        ):
            yield Violation(
                "power-off-advice-on-live-kubelet",
                _pod(p),
                f"action {p.action.code} asks for a powered-off machine; node {node.name}'s "
                "kubelet is alive",
            )


@_check("node-returns-on-healthy-node")
def _returns_on_healthy(v: _View) -> Iterator[Violation]:
    """An 'if the node returns' text for a pod whose node never failed."""
    for p in v.report.pods:
        if p.if_node_returns and not p.node_failed:
            yield Violation(
                "node-returns-on-healthy-node",
                _pod(p),
                f"if-the-node-returns text on a pod of a node that did not fail: "
                f"{p.if_node_returns}",
            )


@_check("rows-disagree")
def _rows(v: _View) -> Iterator[Violation]:
    """Headline counts that disagree with the rows, and rows that disagree with their node."""
    c = summary.counts(v.report)
    not_ready = {n.name for n in v.report.nodes if n.failed}
    # a Ready node whose kubelet went silent while nothing marks it (no controller leader, or
    # the node lifecycle controller past its time) holds its pods as a failed one does (listed,
    # counted with the failed nodes' pods)
    unmarked = {
        n.name
        for n in v.report.nodes
        if n.cause.code in ("no-controller-leader", "lease-overdue") and n.lease_stale
    }
    failed_nodes = not_ready | unmarked
    scoped = bool(v.report.scope_nodes)
    by_hand = {
        # A node filter lists only the named nodes; the count is the whole cluster's.
        "nodes_not_ready": v.report.nodes_not_ready_total if scoped else len(not_ready),
        "on_failed_nodes": sum(1 for p in v.report.pods if p.node in failed_nodes),
        "waiting_for_volume": sum(
            1 for p in v.report.pods if p.category == summary.WAITING_FOR_VOLUME
        ),
        "waiting_for_node": sum(1 for p in v.report.pods if p.category == summary.WAITING_FOR_NODE),
        "elsewhere": sum(
            1
            for p in v.report.pods
            if p.node not in failed_nodes
            and p.category
            not in (summary.WAITING_FOR_VOLUME, summary.WAITING_FOR_NODE, summary.ON_DELETED)
        ),
    }
    for key, value in by_hand.items():
        if getattr(c, key) != value:
            yield Violation(
                "rows-disagree", "report", f"{key}: headline {getattr(c, key)}, rows {value}"
            )
    if c.node_failure + c.elsewhere != len(v.report.pods):
        yield Violation(
            "rows-disagree",
            "report",
            f"headline counts {c.node_failure}+{c.elsewhere} pods, rows {len(v.report.pods)}",
        )
    for p in v.report.pods:
        on_failed = p.node in failed_nodes
        if p.node_failed != on_failed or (p.category in summary.ON_FAILED) != on_failed:
            yield Violation(
                "rows-disagree",
                _pod(p),
                f"category {p.category}, node_failed {p.node_failed}, but node {p.node} "
                f"{'failed' if on_failed else 'did not fail'}",
            )
        if (p.category == "on-unmarked-node") != (p.node in unmarked):
            yield Violation("rows-disagree", _pod(p), f"category {p.category} on node {p.node}")
        node = v.node_of(p)
        if p.node_failed and node is not None and node.pod_count < 1:
            yield Violation("rows-disagree", _pod(p), f"node {node.name} counts no pod")


@_check("volume-wait-without-holder")
def _volume_wait(v: _View) -> Iterator[Violation]:
    """A pod said to wait for a failed node's volume names a failed node holding it (or a
    Ready one nothing marks: its kubelet's lease expired with no controller leader)."""
    failed_nodes = {
        n.name
        for n in v.report.nodes
        if n.failed or (n.cause.code == "no-controller-leader" and n.lease_stale)
    }
    for p in v.report.pods:
        if p.category != summary.WAITING_FOR_VOLUME:
            continue
        named = set(re.findall(r"attached to (\S+) \(VolumeAttachment", " ".join(p.storage)))
        if not named or not named <= failed_nodes:
            yield Violation(
                "volume-wait-without-holder",
                _pod(p),
                f"waits for a volume on {sorted(named) or 'no node'}; failed nodes "
                f"{sorted(failed_nodes)}",
            )


@_check("wait-for-detach-that-cannot-come")
def _wait_for_detach(v: _View) -> Iterator[Violation]:
    """A pod waiting for a volume is told to wait for the detach while its own timeline says a
    pod object on the failed node keeps the volume attached (nothing removes that object while
    the node is down, unless the out-of-service taint is on it)."""
    for p in v.report.pods:
        if p.category != summary.WAITING_FOR_VOLUME:
            continue
        held = re.search(r"not detached while pod objects? (\S+)", p.timeline or "")
        if held and p.action.summary.startswith("wait:"):
            yield Violation(
                "wait-for-detach-that-cannot-come",
                _pod(p),
                f"told to wait, but {held.group(1)} keeps the volume attached",
            )


@_check("podgc-promised-for-a-pod-not-terminating")
def _podgc_promise(v: _View) -> Iterator[Violation]:
    """PodGC force-deletes only Terminating pods on an out-of-service node: promising it for a
    pod nothing evicts is false."""
    for p in v.report.pods:
        if "PodGC force-deletes it" in p.action.summary and not p.terminating:
            yield Violation(
                "podgc-promised-for-a-pod-not-terminating",
                _pod(p),
                "the action promises PodGC's force delete, but the pod is not Terminating",
            )


def check(report: Report) -> list[Violation]:
    """Every self-contradiction of the report (empty when consistent)."""
    view = _View(
        report,
        {n.name: n for n in report.nodes},
        {z.zone: z for z in report.zones},
    )
    found: list[Violation] = []
    for fn in CHECKS.values():
        found.extend(fn(view))
    return found


# --- the incident timeline (nodes[].timeline of the JSON output) against the report ---
#
# The checks take the report and each node's timeline entries as the JSON carries them
# (nodes[].timeline: Report.timelines, placed by render/data.py).

Timelines = dict[str, list[dict[str, Any]]]
TimelineCheck = Callable[[_View, Timelines], Iterator[Violation]]
TIMELINE_CHECKS: dict[str, TimelineCheck] = {}
# NEXT words that say no eviction has happened to the pod
NOT_EVICTED = (
    "never evicted",
    "not evicted (zone)",
    "not evicted (controller)",
    "eviction pending",
)


def _timeline_check(code: str) -> Callable[[TimelineCheck], TimelineCheck]:
    def register(fn: TimelineCheck) -> TimelineCheck:
        TIMELINE_CHECKS[code] = fn
        return fn

    return register


@_timeline_check("timeline-out-of-order")
def _out_of_order(v: _View, timelines: Timelines) -> Iterator[Violation]:
    """Entries oldest first, each with a time."""
    for name, entries in timelines.items():
        last = None
        for e in entries:
            when = parse_time(e.get("time"))
            if when is None:
                yield Violation("timeline-out-of-order", f"node/{name}", f"no time: {e}")
                continue
            if last is not None and when < last:
                yield Violation(
                    "timeline-out-of-order",
                    f"node/{name}",
                    f"{e.get('kind')} at {e.get('time')} listed after an entry at {last}",
                )
            last = when


def _taint_label(t: Any) -> str:
    value = f"={t.value}" if t.value else ""
    return f"{t.key}{value}:{t.effect}"


@_timeline_check("timeline-taint-not-on-node")
def _taint_not_on_node(v: _View, timelines: Timelines) -> Iterator[Violation]:
    """A taint-added entry names a taint the node carries, at that taint's timeAdded."""
    for name, entries in timelines.items():
        node = v.nodes.get(name)
        if node is None:
            continue
        carried = {_taint_label(t): t.time_added for t in node.taints}
        for e in entries:
            if e.get("kind") != "taint-added":
                continue
            label = str(e.get("summary", "")).removeprefix("taint ").split(" added")[0]
            if label not in carried:
                yield Violation(
                    "timeline-taint-not-on-node",
                    f"node/{name}",
                    f"timeline: {e.get('summary')!r}; node taints {sorted(carried)}",
                )
            elif carried[label] is not None and carried[label] != parse_time(e.get("time")):
                yield Violation(
                    "timeline-taint-not-on-node",
                    f"node/{name}",
                    f"timeline dates {label} {e.get('time')}; its timeAdded is {carried[label]}",
                )


@_timeline_check("timeline-ready-contradicts-node")
def _ready_contradicts(v: _View, timelines: Timelines) -> Iterator[Violation]:
    """The Ready transition in the timeline is the node's Ready condition: "Ready became True"
    (`node-back`) only on a node that is Ready and not failed, "Ready became S" only while
    Ready is S; and the last lease renewal is the node's."""
    for name, entries in timelines.items():
        node = v.nodes.get(name)
        if node is None:
            continue
        status = node.ready.status if node.ready else None
        for e in entries:
            kind, text = e.get("kind"), str(e.get("summary", ""))
            if kind == "node-back" and (status != "True" or node.failed):
                yield Violation(
                    "timeline-ready-contradicts-node",
                    f"node/{name}",
                    f"timeline says {text!r}; node Ready={status}, failed={node.failed}",
                )
            if kind == "node-not-ready" and not text.startswith(f"Ready became {status}"):
                yield Violation(
                    "timeline-ready-contradicts-node",
                    f"node/{name}",
                    f"timeline says {text!r}; node Ready={status}",
                )
            if (
                kind == "lease-renewed"
                and node.lease_renewed is not None
                and parse_time(e.get("time")) != node.lease_renewed
            ):
                yield Violation(
                    "timeline-ready-contradicts-node",
                    f"node/{name}",
                    f"timeline lease renewal {e.get('time')}; node lease renewed "
                    f"{node.lease_renewed}",
                )


@_timeline_check("timeline-eviction-contradicts-pod")
def _eviction_contradicts(v: _View, timelines: Timelines) -> Iterator[Violation]:
    """A pod the timeline shows deleted is Terminating in its row; a pod the timeline shows
    evicted has no NEXT saying it was not, or not yet (never evicted, not evicted, eviction
    pending, evicted in …)."""
    rows = {_pod(p): p for p in v.report.pods}
    now = v.report.captured_at
    for name, entries in timelines.items():
        for e in entries:
            row = rows.get(str(e.get("object", "")))
            if row is None or row.node != name:
                continue
            kind = e.get("kind")
            if kind == "pod-deletion-requested" and not row.terminating:
                yield Violation(
                    "timeline-eviction-contradicts-pod",
                    _pod(row),
                    f"timeline: {e.get('summary')!r} at {e.get('time')}; the row is not "
                    "Terminating",
                )
            if kind == "pod-evicted" and not row.terminating:
                words = summary.next_step(row, now)
                if words in NOT_EVICTED or words.startswith("evicted in "):
                    yield Violation(
                        "timeline-eviction-contradicts-pod",
                        _pod(row),
                        f"timeline: {e.get('summary')!r} at {e.get('time')}; NEXT says {words!r}",
                    )


# How far a recorded moment may sit after the read and still be a moment past: the cluster's
# components and this machine do not share a clock.
SKEW_SECONDS = 5


@_timeline_check("timeline-time-as-time")
def _time_as_time(v: _View, timelines: Timelines) -> Iterator[Violation]:
    """No moment after the read told as past, none before it as still to come: an entry
    marked due (a deadline) lies after capturedAt, every other one before it (within the
    clocks' skew)."""
    for name, entries in timelines.items():
        for e in entries:
            ago = e.get("secondsAgo")
            if not isinstance(ago, (int, float)):
                continue
            if e.get("due") and ago > 0:
                yield Violation(
                    "timeline-time-as-time",
                    f"node/{name}",
                    f"{e.get('kind')} at {e.get('time')}, {ago}s before the read, is told as "
                    f"still to come: {e.get('summary')}",
                )
            elif not e.get("due") and ago < -SKEW_SECONDS:
                yield Violation(
                    "timeline-time-as-time",
                    f"node/{name}",
                    f"{e.get('kind')} at {e.get('time')}, {-ago}s after the read, is told as "
                    f"past: {e.get('summary')}",
                )


def check_timelines(report: Report, timelines: Timelines) -> list[Violation]:
    """Every contradiction between the nodes' incident timelines and the report."""
    view = _View(report, {n.name: n for n in report.nodes}, {z.zone: z for z in report.zones})
    found: list[Violation] = []
    for fn in TIMELINE_CHECKS.values():
        found.extend(fn(view, timelines))
    return found


# --- the JSON output back into a Report, so the checks run on what the CLI printed ---


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _decode(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, getattr(types, "UnionType", typing.Union)):  # 3.10+: X | Y
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        return _decode(inner[0], value)
    if origin is list:
        (item,) = typing.get_args(tp)
        return [_decode(item, v) for v in value]
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        hints = typing.get_type_hints(tp)
        return tp(
            **{
                f.name: _decode(hints[f.name], value[_camel(f.name)])
                for f in dataclasses.fields(tp)
                if _camel(f.name) in value
            }
        )
    if getattr(tp, "__name__", "") == "datetime":
        return parse_time(value)
    return value


def report_from_data(data: dict[str, Any]) -> Report:
    """A Report from `diagnose -o json` output (the inverse of render.report_data)."""
    return typing.cast(Report, _decode(Report, data))


def check_data(data: dict[str, Any]) -> list[Violation]:
    """check() on JSON output; also checks the JSON summary against the rows and each node's
    incident timeline (nodes[].timeline, when the output carries it) against the report."""
    report = report_from_data(data)
    found = check(report)
    timelines = {
        str(n.get("name")): list(n["timeline"])
        for n in data.get("nodes") or []
        if isinstance(n.get("timeline"), list)
    }
    found += check_timelines(report, timelines)
    c = summary.counts(report)
    expected = {
        "nodesNotReady": c.nodes_not_ready,
        "stuckPods": len(report.pods),
        "podsOnFailedNodes": c.on_failed_nodes,
        "waitingForVolume": c.waiting_for_volume,
        "waitingForNode": c.waiting_for_node,
        "terminatingElsewhere": c.elsewhere,
        "heldByFinalizers": c.held_by_finalizers,
        "onDeletedNodes": c.on_deleted_nodes,
    }
    for key, value in expected.items():
        shown = (data.get("summary") or {}).get(key)
        if shown != value:
            found.append(
                Violation("rows-disagree", "summary", f"{key}: summary {shown}, rows {value}")
            )
    return found
