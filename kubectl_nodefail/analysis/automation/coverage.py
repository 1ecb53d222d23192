"""What one remediation automation does next for one node (Coverage, its states,
`stands_back`), and the readers every automation module shares: Go durations, int-or-percent
values, label selectors, the node conditions matching an automation's unhealthy conditions and
the scheduled / due / overdue claim they give (`_timed`)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Callable

from kubectl_nodefail.analysis.claims import Claim, Premise, claim, fact
from kubectl_nodefail.snapshot.model import Obj, Snapshot, format_time, parse_time, shifted

# How long past its due time an automation is still expected to act, for every one here: each
# acts at (or within seconds of) that time. Karpenter's health controller requeues the node at
# exactly its termination time (and every 5 min while blocked); a MachineHealthCheck or a
# NodeHealthCheck requeues it for the moment its condition will have lasted its timeout
# (Cluster API's reconciler: requeueAfter the earliest next check; Medik8s'
# checkNodeConditions -> updateRequeueAfter); cluster-autoscaler scans every --scan-interval
# (10 s by default). 6 min past due with nothing recorded means it did not act.
OVERDUE_SECONDS = 6 * 60

# States, in the order they win when one automation says several things.
ACTING = "acting"  # remediation in flight now (requested, remediation CR created, Machine deleted)
DUE = "due"  # its timeout has passed and it records no remediation yet: it may act any moment
SCHEDULED = "scheduled"  # acts at `at` (its timeout) if the node stays as it is
STOPPED = "stopped"  # it will start no remediation now (short-circuit, paused, disabled)
NOT_MATCHING = "not-matching"  # none of its unhealthy conditions matches the node now
UNKNOWN = "unknown"  # linked to an automation object this snapshot does not hold
WATCHING = "watching"  # covers the node, acts on what the API does not show (no time known)
OVERDUE = "overdue"  # its time is long past and it has not acted: probably not running
STALLED = "stalled"  # it began remediating long ago and has not finished: held, not waited for

# How long a remediation in flight is waited for. With nothing holding it each one here takes
# minutes: Cluster API's drain passes over an unreachable node's pods (after 5 min in older
# releases' drainer, SkipWaitForDeleteTimeoutSeconds; at once in recent ones) and recent
# releases skip the wait for an unreachable node's volumes (shouldWaitForNodeVolumes), then
# it deletes the instance and the Node; cluster-autoscaler gives pods at most
# --max-graceful-termination-sec (600 s) and a cloud deletion
# --max-cloud-provider-node-deletion-time (5 min), and takes its taint off when a deletion
# fails; Karpenter drains, waits for volumes and terminates the instance; a Medik8s
# remediator fences the node and releases its pods. What holds one longer has no limit by
# default (a Machine's drain and volume-detach timeouts unset, a NodeClaim without
# terminationGracePeriod): a hook, a drain a PodDisruptionBudget blocks, a volume a pod not
# yet deleted keeps attached, a finalizer. 30 min on (or an escalating Medik8s remediation's
# own timeout, if longer), it is held: waiting for it is waiting for whatever holds it. The
# drain and termination timeouts a Machine or NodeClaim may set are not read: a deletion
# held by a slow drain is said held, which it is.
STALLED_SECONDS = 30 * 60


@dataclass
class Coverage:
    """One automation covering one node: what it does next and when, as claims."""

    automation: str  # MHC | NHC | KARPENTER | CLUSTER_AUTOSCALER | CLOUD_LIFECYCLE
    object: str  # Kind/namespace/name of the automation object
    # ACTING | DUE | SCHEDULED | STOPPED | NOT_MATCHING | UNKNOWN | WATCHING | OVERDUE | STALLED
    state: str
    # when it acted (ACTING, STALLED), is/was due (DUE, OVERDUE) or acts (SCHEDULED)
    at: datetime | None
    summary: str  # the claims' texts joined: what the user reads
    claims: list[Claim] = field(default_factory=list)
    # `at` rests on settings the API does not show (Karpenter's gate and policies): the advice
    # does not wait for it while it is only scheduled (remediate still stands back near it)
    assumed: bool = False


def joined(claims: list[Claim]) -> str:
    """The claims' texts as the summary the user reads."""
    return "; ".join(c.text for c in claims)


def stands_back(cov: Coverage, now: datetime, horizon_seconds: float) -> bool:
    """Whether remediate must not act on the node: the automation acts now (or is due), or
    will act within `horizon_seconds` of `now` (the time a plan takes to run)."""
    if cov.state in (ACTING, DUE):
        return True
    return cov.state == SCHEDULED and cov.at is not None and cov.at <= shifted(now, horizon_seconds)


def in_flight(
    claims: list[Claim],
    since: datetime | None,
    now: datetime,
    premises: list[Premise],
    acting: str,
    held: Callable[[str, timedelta], str],
    bound: float = STALLED_SECONDS,
) -> tuple[str, datetime | None]:
    """ACTING with the `acting` sentence, or STALLED with the sentence `held(since, took)`
    once `since` (when the remediation began) is `bound` seconds (STALLED_SECONDS, or a
    longer time its automation gives it) behind `now`: it has not finished where it takes
    minutes, and remediate does not wait for it."""
    took = None if since is None else (now - since).total_seconds()
    if since is None or took is None or took <= bound:
        claims.append(claim("automation-acting", "automation", acting, *premises))
        return ACTING, since
    text = held(format_time(since), timedelta(seconds=round(took)))
    claims.append(
        claim(
            "automation-stalled",
            "automation",
            f"{text}; remediate does not wait for it",
            *premises,
        )
    )
    return STALLED, since


# --- reading helpers ---------------------------------------------------------------------------


def _of(snap: Snapshot, kind: str, group: str) -> list[Obj]:
    return [
        o
        for o in snap.automation
        if o.get("kind") == kind and str(o.get("apiVersion", "")).startswith(group + "/")
    ]


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def go_duration(text: Any) -> float | None:
    """Seconds of a Go duration string ("300s", "5m0s", "1h2m3.5s"); None if it is not one."""
    if not isinstance(text, str) or not text:
        return None
    if text == "0":
        return 0.0
    sign = -1.0 if text.startswith("-") else 1.0
    body = text.lstrip("+-")
    parts = _DURATION.findall(body)
    if not parts or "".join(n + u for n, u in parts) != body:
        return None
    return sign * sum(float(n) * _UNIT[u] for n, u in parts)


def scaled(value: Any, total: int, round_up: bool) -> int | None:
    """An int-or-percent against `total`, as apimachinery's GetScaledValueFromIntOrPercent."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\d+%", value):
        exact = int(value[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def selects(selector: Any, labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector against labels; an empty selector selects everything."""
    if not isinstance(selector, dict):
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False  # an operator the API rejects: select nothing rather than guess
    return True


def _condition(obj: Obj, ctype: str) -> Obj | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return cond
    return None


@dataclass
class _Match:
    """A node condition matching one of an automation's unhealthy conditions."""

    index: int  # in the automation's list
    type: str
    status: str
    seconds: float
    since: datetime
    at: datetime


def _matches(node: Obj, rules: list[Obj], timeout_key: str) -> list[_Match]:
    out = []
    for i, rule in enumerate(rules):
        cond = _condition(node, str(rule.get("type")))
        seconds = _seconds(rule.get(timeout_key))
        if cond is None or seconds is None or cond.get("status") != rule.get("status"):
            continue
        since = parse_time(cond.get("lastTransitionTime"))
        if since is None:
            continue
        out.append(_Match(i, cond["type"], cond["status"], seconds, since, shifted(since, seconds)))
    return sorted(out, key=lambda m: m.at)


def _seconds(value: Any) -> float | None:
    """A timeout as written: a Go duration string (v1beta1 `timeout`, NHC `duration`) or whole
    seconds (Cluster API v1beta2 `timeoutSeconds`)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return go_duration(value)


def _rules_fact(kind: str, obj: Obj, path: str = "spec.unhealthyConditions") -> Premise:
    """The automation's unhealthy conditions as a premise, each entry's keys sorted (the value
    compares equal whatever order the server wrote them in; the JSON reads the same)."""
    read = fact(kind, obj, path)
    rules = [dict(sorted(r.items())) if isinstance(r, dict) else r for r in read.value or []]
    return Premise(read.object, read.field, rules if read.value is not None else None)


def _node_premises(node: Obj, match: _Match) -> list[Premise]:
    path = f"status.conditions[type={match.type}]"
    return [
        fact("Node", node, f"{path}.status"),
        fact("Node", node, f"{path}.lastTransitionTime"),
    ]


def _when(at: datetime, now: datetime) -> str:
    seconds = round((at - now).total_seconds())
    if seconds >= 0:
        return f"{format_time(at)} (in {timedelta(seconds=seconds)})"
    return f"{format_time(at)} ({timedelta(seconds=-seconds)} ago)"


def _taint(node: Obj, key: str) -> Obj | None:
    return next(
        (t for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") == key), None
    )


def _timed(
    node: Obj,
    auto: Obj,
    kind: str,
    rules: list[Obj],
    timeout_key: str,
    now: datetime,
    claims: list[Claim],
    who: str,
    deed: str,
    unrecorded: tuple[str, list[Premise], str],
    default_rules: bool = False,
    rules_path: str = "spec.unhealthyConditions",
) -> tuple[str, datetime | None]:
    """The SCHEDULED / DUE / OVERDUE / NOT_MATCHING claim from an automation's unhealthy
    conditions. `unrecorded`: for the OVERDUE sentence, the words and facts saying that no
    remediation is recorded, and what that says of the automation."""
    found = _matches(node, rules, timeout_key)
    if not found:
        watched = ", ".join(f"{r.get('type')}={r.get('status')}" for r in rules) or "nothing"
        ready = _condition(node, "Ready") or {}
        claims.append(
            claim(
                "automation-not-matching",
                "automation",
                f"none of {who}'s unhealthy conditions ({watched}) matches the node now "
                f"(Ready={ready.get('status')}): it does not act on it as it is",
                fact("Node", node, "status.conditions[type=Ready].status"),
                *([] if default_rules else [_rules_fact(kind, auto, rules_path)]),
            )
        )
        return NOT_MATCHING, None
    first = found[0]
    rule_premises = [] if default_rules else [_rules_fact(kind, auto, rules_path)]
    default_note = " (the CRD's default conditions)" if default_rules else ""
    late = (now - first.at).total_seconds()
    if late > OVERDUE_SECONDS:
        none_words, none_facts, why = unrecorded
        text = (
            f"{who} has not acted {timedelta(seconds=round(late))} after its timeout "
            f"({first.type}={first.status} for {timedelta(seconds=first.seconds)}"
            f"{default_note}) passed at {format_time(first.at)}: "
            f"{none_words}, where its controller acts at the moment the timeout ends; {why}; "
            "remediate does not wait for it"
        )
        claims.append(
            claim(
                "automation-overdue",
                "automation",
                text,
                *_node_premises(node, first),
                *rule_premises,
                *none_facts,
            )
        )
        return OVERDUE, first.at
    if first.at <= now:
        text = (
            f"its timeout ({first.type}={first.status} for {timedelta(seconds=first.seconds)}"
            f"{default_note}) passed at {_when(first.at, now)}, and {who} records no "
            f"remediation yet: it {deed} at its next check"
        )
        claims.append(
            claim(
                "automation-due", "automation", text, *_node_premises(node, first), *rule_premises
            )
        )
        return DUE, first.at
    text = (
        f"{who} {deed} at {_when(first.at, now)}: {first.type}={first.status} since "
        f"{format_time(first.since)} plus its timeout {timedelta(seconds=first.seconds)}"
        f"{default_note}, unless the node recovers first"
    )
    claims.append(
        claim(
            "automation-scheduled", "automation", text, *_node_premises(node, first), *rule_premises
        )
    )
    return SCHEDULED, first.at
