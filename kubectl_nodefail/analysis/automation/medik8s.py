"""Medik8s NodeHealthCheck: whether one creates a remediation for a failed node, and when.

Medik8s NodeHealthCheck (remediation.medik8s.io/v1alpha1, cluster-scoped). It covers the
Nodes its `spec.selector` matches; a node is unhealthy once one of `spec.unhealthyConditions`
{type, status, duration} has held for `duration` since lastTransitionTime (default Ready
False/Unknown 300s, api/v1alpha1/nodehealthcheck_types.go); it then creates a remediation CR
(SelfNodeRemediation, FenceAgentsRemediation, ...: `spec.remediationTemplate`) recorded in
`status.unhealthyNodes[].remediations[]` with its `started` time. New remediations stop while
`status.phase` is Disabled or Paused, or while fewer than minHealthy (or total - maxUnhealthy,
rounded up; internal/controller/nodehealthcheck_controller.go getMinHealthy) of the observed
nodes are healthy.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from kubectl_nodefail.analysis.automation.coverage import (
    OVERDUE_SECONDS,
    STALLED_SECONDS,
    STOPPED,
    Coverage,
    _condition,
    _timed,
    _when,
    go_duration,
    in_flight,
    joined,
    scaled,
    selects,
)
from kubectl_nodefail.analysis.claims import Claim, claim, fact, ref
from kubectl_nodefail.snapshot.model import Obj, Snapshot, format_time, parse_time

NHC_GROUP = "remediation.medik8s.io"
NHC_EXCLUDE_LABEL = "remediation.medik8s.io/exclude-from-remediation"
NHC = "Medik8s NodeHealthCheck"
# The NodeHealthCheck CRD's default unhealthyConditions, used where a stored object has none.
NHC_DEFAULT_CONDITIONS = [
    {"type": "Ready", "status": "False", "duration": "300s"},
    {"type": "Ready", "status": "Unknown", "duration": "300s"},
]


def _nhc(node: Obj, nhc: Obj, snap: Snapshot, now: datetime) -> Coverage | None:
    spec = nhc.get("spec") or {}
    labels = node["metadata"].get("labels") or {}
    if not selects(spec.get("selector"), labels):
        return None
    who = f"NodeHealthCheck {nhc['metadata']['name']}"
    template = spec.get("remediationTemplate") or {}
    kind = str(template.get("kind") or "")
    # a remediation CR is of its template's kind minus "Template" (SelfNodeRemediationTemplate
    # -> SelfNodeRemediation); escalatingRemediations list several templates instead
    remedy = f"a {kind.removesuffix('Template')}" if kind else "its first escalating remediation"
    claims = [
        claim(
            "covered-by",
            "automation",
            f"covered by {who} (Medik8s): when the node is unhealthy by its rules it creates "
            f"{remedy} for it",
            fact("NodeHealthCheck", nhc, "spec.selector"),
        )
    ]
    state, at = _nhc_state(node, nhc, snap, now, claims, who, remedy)
    obj = ref("NodeHealthCheck", nhc)
    return Coverage(NHC, obj, state, at, joined(claims), claims)


def _held(who: str, began: str, took: timedelta, timed_out: datetime | None = None) -> str:
    if timed_out is not None:  # the last of its escalating remediations, past its timeout
        return (
            f"{who} began remediating it ({began}) and its last remediation timed out at "
            f"{format_time(timed_out)}: it counts the remediation failed and starts no other"
        )
    return (
        f"{who} began remediating it ({began}) and {took} on still has it in flight, where "
        "fencing a node and releasing its pods takes minutes when nothing holds it (or the "
        "timeout its escalating remediations give it): what its remediator does, and what "
        "holds it, is not read here (its remediation object's status and events say)"
    )


def _current(remediations: list[Obj], spec: Obj) -> tuple[Obj, float]:
    """The remediation in flight (the newest not timed out; else the newest: every one
    timed out) and how long it is waited for: STALLED_SECONDS, or its escalating
    remediation's timeout (by the template's kind; the longest where none matches) and the
    slack NHC acts within, if longer."""

    def started(r: Obj) -> datetime:
        return parse_time(r.get("started")) or datetime.min.replace(tzinfo=timezone.utc)

    live = [r for r in remediations if not r.get("timedOut")]
    current = max(live or remediations, key=started)
    kind = str((current.get("resource") or {}).get("kind") or "")
    steps = [e for e in spec.get("escalatingRemediations") or [] if isinstance(e, dict)]
    timeouts = {
        str((e.get("remediationTemplate") or {}).get("kind") or ""): go_duration(e.get("timeout"))
        for e in steps
    }
    mine = timeouts.get(kind + "Template")
    known = [t for t in timeouts.values() if t is not None]
    longest = mine if mine is not None else max(known, default=None)
    bound = STALLED_SECONDS if longest is None else max(STALLED_SECONDS, longest + OVERDUE_SECONDS)
    return current, bound


def _nhc_state(
    node: Obj,
    nhc: Obj,
    snap: Snapshot,
    now: datetime,
    claims: list[Claim],
    who: str,
    remedy: str,
) -> tuple[str, datetime | None]:
    name = node["metadata"]["name"]
    status = nhc.get("status") or {}
    spec = nhc.get("spec") or {}
    entry = next((u for u in status.get("unhealthyNodes") or [] if u.get("name") == name), None)
    remediations = (entry or {}).get("remediations") or []
    if remediations:
        current, bound = _current(remediations, spec)
        started = parse_time(current.get("started"))
        res = current.get("resource") or {}
        made = f"{res.get('kind', remedy)} {res.get('namespace', '')}/{res.get('name', '')} created"
        timed_out = parse_time(current.get("timedOut"))
        return in_flight(
            claims,
            started,
            now,
            [fact("NodeHealthCheck", nhc, f"status.unhealthyNodes[name={name}].remediations")],
            f"{who} is remediating it: {made}"
            + (f" at {_when(started, now)}" if started else "")
            + f" ({len(remediations)} remediation(s) so far)",
            lambda since, took: _held(who, f"{made} at {since}", took, timed_out),
            0.0 if timed_out is not None else bound,
        )
    flying = (status.get("inFlightRemediations") or {}).get(name)
    if flying:
        started = parse_time(flying)
        return in_flight(
            claims,
            started,
            now,
            [fact("NodeHealthCheck", nhc, f"status.inFlightRemediations[{name}]")],
            f"{who} is remediating it since {_when(started, now) if started else flying}",
            lambda since, took: _held(who, f"its remediation started at {since}", took),
        )
    stopped = _nhc_stopped(nhc, who) or _nhc_excluded(node, who)
    if stopped is not None:
        claims.append(stopped)
        return STOPPED, None
    rules = spec.get("unhealthyConditions")
    default = not rules
    if entry is not None:  # it ran: it lists the node unhealthy, and started nothing for it
        claims.append(
            claim(
                "automation-stopped",
                "automation",
                f"{who} lists the node unhealthy (status.unhealthyNodes) but started no "
                "remediation for it: it is skipping the node for now (too few healthy nodes, "
                "another node's remediation first, a cluster upgrade: its Events, "
                "RemediationSkipped, say which)",
                fact("NodeHealthCheck", nhc, f"status.unhealthyNodes[name={name}].name"),
                fact("NodeHealthCheck", nhc, f"status.unhealthyNodes[name={name}].remediations"),
            )
        )
        return STOPPED, None
    return _timed(
        node,
        nhc,
        "NodeHealthCheck",
        rules or NHC_DEFAULT_CONDITIONS,
        "duration",
        now,
        claims,
        who,
        f"creates {remedy}",
        default_rules=default,
        unrecorded=(
            "no remediation of the node is recorded",
            [
                fact("NodeHealthCheck", nhc, f"status.unhealthyNodes[name={name}].remediations"),
                fact("NodeHealthCheck", nhc, f"status.inFlightRemediations[{name}]"),
            ],
            "its controller is probably not running, or it is paused",
        ),
    )


def _nhc_excluded(node: Obj, who: str) -> Claim | None:
    """A Node labelled remediation.medik8s.io/exclude-from-remediation=true (set for planned
    maintenance, e.g. by the Node Maintenance Operator) is skipped by NodeHealthCheck."""
    labels = node["metadata"].get("labels") or {}
    if labels.get(NHC_EXCLUDE_LABEL) != "true":
        return None
    return claim(
        "automation-stopped",
        "automation",
        f"{who} skips the node: it carries the label {NHC_EXCLUDE_LABEL}=true (planned "
        "maintenance); nothing remediates it until that is removed",
        fact("Node", node, f"metadata.labels[{NHC_EXCLUDE_LABEL}]"),
    )


def _nhc_stopped(nhc: Obj, who: str) -> Claim | None:
    status = nhc.get("status") or {}
    spec = nhc.get("spec") or {}
    phase = status.get("phase")
    if phase in ("Disabled", "Paused"):
        why = status.get("reason") or (
            f"pause requests: {', '.join(spec.get('pauseRequests') or [])}"
        )
        return claim(
            "automation-stopped",
            "automation",
            f"{who} starts no remediation: it is {phase} ({why})",
            fact("NodeHealthCheck", nhc, "status.phase"),
        )
    storm = _condition(nhc, "StormActive")
    if storm is not None and storm.get("status") == "True":
        return claim(
            "automation-stopped",
            "automation",
            f"{who} starts no remediation: storm recovery is active (too few healthy nodes)",
            fact("NodeHealthCheck", nhc, "status.conditions[type=StormActive].status"),
        )
    observed, healthy = status.get("observedNodes"), status.get("healthyNodes")
    if not isinstance(observed, int) or not isinstance(healthy, int):
        return None
    if spec.get("minHealthy") is not None:
        least = scaled(spec["minHealthy"], observed, True)
        field_name, setting = "spec.minHealthy", f"minHealthy {spec['minHealthy']}"
    elif spec.get("maxUnhealthy") is not None:
        most = scaled(spec["maxUnhealthy"], observed, True)
        least = None if most is None else observed - most
        field_name, setting = "spec.maxUnhealthy", f"maxUnhealthy {spec['maxUnhealthy']}"
        if most is not None and most > observed:  # getMinHealthy's error: nothing remediated
            return claim(
                "automation-stopped",
                "automation",
                f"{who} remediates nothing: its {setting} exceeds the {observed} nodes it "
                "observes, which its controller rejects as an error",
                fact("NodeHealthCheck", nhc, field_name),
                fact("NodeHealthCheck", nhc, "status.observedNodes"),
            )
    else:
        return None
    if least is None or healthy >= least:
        return None
    return claim(
        "automation-stopped",
        "automation",
        f"{who} has stopped remediating: {healthy} of {observed} nodes are healthy, fewer "
        f"than the {least} its {setting} requires; it starts nothing until enough recover",
        fact("NodeHealthCheck", nhc, field_name),
        fact("NodeHealthCheck", nhc, "status.observedNodes"),
        fact("NodeHealthCheck", nhc, "status.healthyNodes"),
    )
