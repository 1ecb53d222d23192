"""Who else acts on a failed node: remediation automation found in the snapshot, per node.

Pure: the snapshot's objects and `now` in, one Coverage per automation that covers the node out,
each stated by claims (claims.py) whose premises premises.py re-reads from the raw dump. What
each automation does, its defaults and the fields read are cited in docs/automation.md; the
short citations here name the source file the fact comes from.

Covered (CRDs read by gather.py):
- Cluster API MachineHealthCheck (cluster.x-k8s.io/v1beta1). A Node is linked to its Machine by
  the annotations the Machine controller sets on it, `cluster.x-k8s.io/machine` and
  `cluster.x-k8s.io/cluster-namespace` (api/v1beta1/common_types.go), or by the Machine's
  `status.nodeRef.name`. A MachineHealthCheck covers a Machine of its namespace whose labels
  match `spec.selector` and whose `spec.clusterName` is its own. It finds the node unhealthy
  when one of `spec.unhealthyConditions` {type, status, timeout} has held for `timeout` since
  the node condition's lastTransitionTime; it then sets the Machine's `HealthCheckSucceeded`
  False and `OwnerRemediated` False (WaitingForRemediation), and the owning MachineSet deletes
  the Machine to replace it (api/v1beta1/condition_consts.go). It stops remediating while more
  than `maxUnhealthy` (default 100%, machinehealthcheck_webhook.go) are unhealthy, shown by
  its `RemediationAllowed` condition False, reason TooManyUnhealthy.
- Medik8s NodeHealthCheck (remediation.medik8s.io/v1alpha1, cluster-scoped). It covers the
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

import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from kubectl_nodefail.analysis.claims import Claim, Premise, claim, fact, ref
from kubectl_nodefail.snapshot.model import Obj, Snapshot, format_time, parse_time, shifted

CAPI_GROUP = "cluster.x-k8s.io"
NHC_GROUP = "remediation.medik8s.io"
MACHINE_ANNOTATION = "cluster.x-k8s.io/machine"
CLUSTER_NAMESPACE_ANNOTATION = "cluster.x-k8s.io/cluster-namespace"
CAPI_SKIP_REMEDIATION = "cluster.x-k8s.io/skip-remediation"
CAPI_PAUSED = "cluster.x-k8s.io/paused"
NHC_EXCLUDE_LABEL = "remediation.medik8s.io/exclude-from-remediation"
MHC = "Cluster API MachineHealthCheck"
NHC = "Medik8s NodeHealthCheck"
# The NodeHealthCheck CRD's default unhealthyConditions, used where a stored object has none.
NHC_DEFAULT_CONDITIONS = [
    {"type": "Ready", "status": "False", "duration": "300s"},
    {"type": "Ready", "status": "Unknown", "duration": "300s"},
]
KARPENTER = "Karpenter"
CLUSTER_AUTOSCALER = "cluster-autoscaler"
CLOUD_LIFECYCLE = "cloud node lifecycle controller"
KARPENTER_GROUP = "karpenter.sh"
NODEPOOL_LABEL = "karpenter.sh/nodepool"
KARPENTER_DISRUPTED = "karpenter.sh/disrupted"
KARPENTER_AWS_GROUP = "karpenter.k8s.aws"
# The AWS provider's repair policies, (condition type, status, toleration seconds)
# (aws/karpenter-provider-aws pkg/cloudprovider/cloudprovider.go RepairPolicies): compiled into
# the provider, not visible through the API, so every time computed from them says it assumes them.
KARPENTER_REPAIR_POLICIES = (
    ("Ready", "False", 1800),
    ("Ready", "Unknown", 1800),
    ("AcceleratedHardwareReady", "False", 600),
    ("StorageReady", "False", 1800),
    ("NetworkingReady", "False", 1800),
    ("KernelReady", "False", 1800),
    ("ContainerRuntimeReady", "False", 1800),
)
# The same policies as the premise checker's count terms (premises.py): a node matching any.
KARPENTER_UNHEALTHY_TERMS = " or ".join(
    f"status.conditions[type={t}].status={s}" for t, s, _ in KARPENTER_REPAIR_POLICIES
)
# Repair stops while more than this share of the NodePool's nodes is unhealthy, rounded up
# (pkg/controllers/node/health/controller.go allowedUnhealthyPercent).
KARPENTER_UNHEALTHY_PERCENT = 20
# How long past its due time an automation is still expected to act, for every one here: each
# acts at (or within seconds of) that time. Karpenter's health controller requeues the node at
# exactly its termination time (and every 5 min while blocked); a MachineHealthCheck or a
# NodeHealthCheck requeues it for the moment its condition will have lasted its timeout
# (Cluster API's reconciler: requeueAfter the earliest next check; Medik8s'
# checkNodeConditions -> updateRequeueAfter); cluster-autoscaler scans every --scan-interval
# (10 s by default). 6 min past due with nothing recorded means it did not act.
OVERDUE_SECONDS = 6 * 60
# Its event while repair is blocked, and how long one counts as "blocked now": republished on
# the 5 min requeue once its 15 min deduplication has passed (health/controller.go, events.go).
KARPENTER_REPAIR_BLOCKED = "NodeRepairBlocked"
KARPENTER_BLOCKED_FRESH_SECONDS = 20 * 60
# cluster-autoscaler's taints, their values the Unix second they were set
# (kubernetes/autoscaler cluster-autoscaler/utils/taints/taints.go)
CA_TO_BE_DELETED = "ToBeDeletedByClusterAutoscaler"
CA_DELETION_CANDIDATE = "DeletionCandidateOfClusterAutoscaler"
# --scale-down-unready-time's default (cluster-autoscaler/main.go): the flag is not visible
# through the API, so a claim using it says so.
CA_SCALE_DOWN_UNREADY_SECONDS = 20 * 60
KINDS = ("Machine", "MachineHealthCheck", "NodeHealthCheck", "NodeClaim")

# States, in the order they win when one automation says several things.
ACTING = "acting"  # remediation in flight now (requested, remediation CR created, Machine deleted)
DUE = "due"  # its timeout has passed and it records no remediation yet: it may act any moment
SCHEDULED = "scheduled"  # acts at `at` (its timeout) if the node stays as it is
STOPPED = "stopped"  # it will start no remediation now (short-circuit, paused, disabled)
NOT_MATCHING = "not-matching"  # none of its unhealthy conditions matches the node now
UNKNOWN = "unknown"  # linked to an automation object this snapshot does not hold
WATCHING = "watching"  # covers the node, acts on what the API does not show (no time known)
OVERDUE = "overdue"  # its time is long past and it has not acted: probably not running


@dataclass
class Coverage:
    """One automation covering one node: what it does next and when, as claims."""

    automation: str  # MHC | NHC | KARPENTER | CLUSTER_AUTOSCALER | CLOUD_LIFECYCLE
    object: str  # Kind/namespace/name of the automation object
    state: str  # ACTING | DUE | SCHEDULED | STOPPED | NOT_MATCHING | UNKNOWN | WATCHING | OVERDUE
    at: datetime | None  # when it acted (ACTING), is/was due (DUE, OVERDUE) or acts (SCHEDULED)
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


def covering(node: Obj, snap: Snapshot, now: datetime) -> list[Coverage]:
    """Every automation in the snapshot that covers `node`."""
    out = _machine_health_checks(node, snap, now)
    out += [_nhc(node, nhc, snap, now) for nhc in _of(snap, "NodeHealthCheck", NHC_GROUP)]
    out += [_karpenter(node, snap, now), _autoscaler(node, now), _cloud_lifecycle(node, now)]
    return [c for c in out if c is not None]


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


# --- Cluster API MachineHealthCheck -------------------------------------------------------------


def _machine_of(node: Obj, snap: Snapshot) -> tuple[Obj | None, list[Premise], str]:
    """The node's Machine, the premises linking them, and the Machine's ref when the node
    names one this snapshot does not hold ("" otherwise)."""
    meta = node["metadata"]
    annotations = meta.get("annotations") or {}
    name = annotations.get(MACHINE_ANNOTATION)
    machines = _of(snap, "Machine", CAPI_GROUP)
    if name:
        namespace = annotations.get(CLUSTER_NAMESPACE_ANNOTATION)
        for m in machines:
            mm = m["metadata"]
            if mm.get("name") == name and (namespace is None or mm.get("namespace") == namespace):
                linked = [fact("Node", node, f"metadata.annotations[{MACHINE_ANNOTATION}]")]
                return m, linked, ""
        where = f"{namespace}/{name}" if namespace else name
        return None, [fact("Node", node, f"metadata.annotations[{MACHINE_ANNOTATION}]")], where
    for m in machines:
        if ((m.get("status") or {}).get("nodeRef") or {}).get("name") == meta["name"]:
            return m, [fact("Machine", m, "status.nodeRef.name")], ""
    return None, [], ""


def _machine_health_checks(node: Obj, snap: Snapshot, now: datetime) -> list[Coverage | None]:
    machine, linked, missing = _machine_of(node, snap)
    if missing:
        text = (
            f"Cluster API manages this node (Machine {missing}), but that Machine is not in "
            "what was read (it lives in the management cluster, or could not be read): whether "
            "a MachineHealthCheck replaces it, and when, is unknown here"
        )
        cov = Coverage(MHC, f"Machine/{missing}", UNKNOWN, None, text)
        cov.claims = [claim("covered-by", "automation", text, *linked)]
        return [cov]
    if machine is None:
        return []
    mmeta = machine["metadata"]
    out: list[Coverage | None] = []
    for mhc in _of(snap, "MachineHealthCheck", CAPI_GROUP):
        spec = mhc.get("spec") or {}
        if mhc["metadata"].get("namespace") != mmeta.get("namespace"):
            continue
        if spec.get("clusterName") != (machine.get("spec") or {}).get("clusterName"):
            continue
        if not selects(spec.get("selector"), mmeta.get("labels") or {}):
            continue
        out.append(_mhc(node, machine, mhc, linked, now))
    return out


def _mhc(node: Obj, machine: Obj, mhc: Obj, linked: list[Premise], now: datetime) -> Coverage:
    who = f"MachineHealthCheck {mhc['metadata'].get('namespace')}/{mhc['metadata']['name']}"
    mref = f"{machine['metadata'].get('namespace')}/{machine['metadata']['name']}"
    covered = claim(
        "covered-by",
        "automation",
        f"covered by {who} (Cluster API): its Machine {mref} is replaced when the node is "
        "unhealthy by its rules",
        *linked,
        fact("Machine", machine, "spec.clusterName"),
        fact("MachineHealthCheck", mhc, "spec.clusterName"),
    )
    claims = [covered]
    state, at = _mhc_state(node, machine, mhc, now, claims, who)
    obj = ref("MachineHealthCheck", mhc)
    return Coverage(MHC, obj, state, at, joined(claims), claims)


def _mhc_state(
    node: Obj, machine: Obj, mhc: Obj, now: datetime, claims: list[Claim], who: str
) -> tuple[str, datetime | None]:
    deleting = parse_time(machine["metadata"].get("deletionTimestamp"))
    if deleting is not None:
        claims.append(
            claim(
                "automation-acting",
                "automation",
                f"the Machine is being deleted since {_when(deleting, now)}: Cluster API is "
                "replacing it (the Node goes with it)",
                fact("Machine", machine, "metadata.deletionTimestamp"),
            )
        )
        return ACTING, deleting
    owner = _condition(machine, "OwnerRemediated")
    if owner is not None and owner.get("status") == "False":
        since = parse_time(owner.get("lastTransitionTime"))
        claims.append(
            claim(
                "automation-acting",
                "automation",
                f"{who} found it unhealthy and asked for its replacement"
                + (f" at {_when(since, now)}" if since else "")
                + f" (Machine OwnerRemediated False, {owner.get('reason', '')}): its "
                "MachineSet deletes the Machine and creates a new one",
                fact("Machine", machine, "status.conditions[type=OwnerRemediated].status"),
                fact("Machine", machine, "status.conditions[type=OwnerRemediated].reason"),
            )
        )
        return ACTING, since
    skipped = _mhc_skips(machine, mhc, who)
    if skipped is not None:
        claims.append(skipped)
        return STOPPED, None
    allowed = _condition(mhc, "RemediationAllowed")
    if allowed is not None and allowed.get("status") == "False":
        status = mhc.get("status") or {}
        limit_path, limit_words = _mhc_limit(mhc)
        claims.append(
            claim(
                "automation-stopped",
                "automation",
                f"{who} has stopped remediating ({allowed.get('reason', '')}): {limit_words} "
                f"({status.get('currentHealthy')} of {status.get('expectedMachines')} "
                "healthy); it replaces nothing until that changes",
                fact(
                    "MachineHealthCheck", mhc, "status.conditions[type=RemediationAllowed].status"
                ),
                fact(
                    "MachineHealthCheck", mhc, "status.conditions[type=RemediationAllowed].reason"
                ),
                fact("MachineHealthCheck", mhc, limit_path),
                fact("MachineHealthCheck", mhc, "status.currentHealthy"),
                fact("MachineHealthCheck", mhc, "status.expectedMachines"),
            )
        )
        return STOPPED, None
    checked = _condition(machine, "HealthCheckSucceeded") or {}
    marked = checked.get("status") == "False"
    template, template_path = _mhc_template(mhc)
    if template and marked:
        return _mhc_external(machine, mhc, checked, now, claims, who, template, template_path)
    owner_remediated = fact("Machine", machine, "status.conditions[type=OwnerRemediated].status")
    if marked:  # it ran, marked the Machine unhealthy, and asked its owner for nothing
        claims.append(
            claim(
                "automation-stopped",
                "automation",
                f"{who} marked the Machine unhealthy (HealthCheckSucceeded False, "
                f"{checked.get('reason', '')}) but asked its owner for no replacement "
                "(OwnerRemediated not False): it is skipping the Machine (a paused Cluster, "
                "which is not read here, or a Machine whose owner is not a MachineSet or "
                "KubeadmControlPlane)",
                fact("Machine", machine, "status.conditions[type=HealthCheckSucceeded].status"),
                owner_remediated,
            )
        )
        return STOPPED, None
    rules, path, timeout_key = _mhc_rules(mhc)
    return _timed(
        node,
        mhc,
        "MachineHealthCheck",
        rules,
        timeout_key,
        now,
        claims,
        who,
        "marks the Machine for replacement",
        rules_path=path,
        unrecorded=(
            "the Machine records no remediation",
            [owner_remediated],
            "its controller is probably not running, or it is paused (a paused Cluster is not "
            "read here)",
        ),
    )


# The conditions on a Machine that say whether its external remediation request was created:
# v1beta2 `ExternallyRemediated`, v1beta1 `ExternalRemediationRequestAvailable`; False with a
# reason naming a missing template or a failed creation means no request exists.
EXTERNAL_REQUEST_CONDITIONS = ("ExternallyRemediated", "ExternalRemediationRequestAvailable")


def _mhc_external(
    machine: Obj,
    mhc: Obj,
    checked: Obj,
    now: datetime,
    claims: list[Claim],
    who: str,
    template: str,
    template_path: str,
) -> tuple[str, datetime | None]:
    """An MHC with a remediation template that marked the Machine unhealthy: it hands the
    Machine to an external remediator, whose own object and schedule are not read here. Stood
    back from while fresh (OVERDUE_SECONDS), not waited for after; a request that
    could not be created remediates nothing. `checked`: its HealthCheckSucceeded condition."""
    since = parse_time(checked.get("lastTransitionTime"))
    marked = [
        fact("Machine", machine, "status.conditions[type=HealthCheckSucceeded].status"),
        fact("Machine", machine, "status.conditions[type=HealthCheckSucceeded].reason"),
        fact("MachineHealthCheck", mhc, template_path),
    ]
    for ctype in EXTERNAL_REQUEST_CONDITIONS:
        cond = _condition(machine, ctype) or {}
        reason = str(cond.get("reason") or "")
        if cond.get("status") == "False" and reason.endswith(("NotFound", "Failed")):
            claims.append(
                claim(
                    "automation-stopped",
                    "automation",
                    f"{who} found it unhealthy but its remediation request from {template} "
                    f"could not be created ({ctype} False, {reason}): nothing remediates it "
                    "until that is fixed",
                    *marked,
                    fact("Machine", machine, f"status.conditions[type={ctype}].status"),
                    fact("Machine", machine, f"status.conditions[type={ctype}].reason"),
                )
            )
            return STOPPED, None
    head = (
        f"{who} found it unhealthy"
        + (f" at {_when(since, now)}" if since else "")
        + f" (Machine HealthCheckSucceeded False, {checked.get('reason', '')}) and hands its "
        f"remediation to {template}, an external remediator"
    )
    fresh = since is not None and (now - since).total_seconds() <= OVERDUE_SECONDS
    if fresh:
        claims.append(claim("automation-acting", "automation", f"{head}: it acts now", *marked))
        return ACTING, since
    claims.append(
        claim(
            "covered-by",
            "automation",
            f"{head}; what that remediator does, and when, is not read here: remediate does not "
            "wait for it",
            *marked,
        )
    )
    return WATCHING, None


def _mhc_skips(machine: Obj, mhc: Obj, who: str) -> Claim | None:
    """An MHC skips marking a Machine for remediation when the Machine carries
    `cluster.x-k8s.io/skip-remediation` or `cluster.x-k8s.io/paused`, or the MHC the latter
    (the Cluster API book, "Skipping Remediation"; a paused Cluster too, which is not read)."""
    for kind, obj, key in (
        ("Machine", machine, CAPI_SKIP_REMEDIATION),
        ("Machine", machine, CAPI_PAUSED),
        ("MachineHealthCheck", mhc, CAPI_PAUSED),
    ):
        if key in (obj["metadata"].get("annotations") or {}):
            return claim(
                "automation-stopped",
                "automation",
                f"{who} does not mark the Machine for remediation: the {kind} carries the "
                f"annotation {key}; it replaces nothing until that is removed",
                fact(kind, obj, f"metadata.annotations[{key}]"),
            )
    return None


def _mhc_template(mhc: Obj) -> tuple[str, str]:
    """The remediation template an MHC hands unhealthy Machines to ("" for none: their owner
    replaces them), and the field naming its kind: v1beta2 `spec.remediation.templateRef`,
    v1beta1 `spec.remediationTemplate`."""
    spec = mhc.get("spec") or {}
    remediation = spec.get("remediation")
    for path, ref_ in (
        (
            "spec.remediation.templateRef",
            (remediation or {}).get("templateRef") if isinstance(remediation, dict) else None,
        ),
        ("spec.remediationTemplate", spec.get("remediationTemplate")),
    ):
        if isinstance(ref_, dict) and ref_.get("kind"):
            return f"{ref_.get('kind')} {ref_.get('name', '')}".strip(), f"{path}.kind"
    return "", ""


def _mhc_rules(mhc: Obj) -> tuple[list[Obj], str, str]:
    """The MHC's unhealthy node conditions, where they are and its timeout's key: v1beta2
    (Cluster API v1.11+) `spec.checks.unhealthyNodeConditions[] {type, status, timeoutSeconds}`,
    v1beta1 `spec.unhealthyConditions[] {type, status, timeout}`. Told apart by the fields the
    object has, not its apiVersion label."""
    spec = mhc.get("spec") or {}
    checks = spec.get("checks")
    if isinstance(checks, dict):
        rules = checks.get("unhealthyNodeConditions") or []
        return rules, "spec.checks.unhealthyNodeConditions", "timeoutSeconds"
    return spec.get("unhealthyConditions") or [], "spec.unhealthyConditions", "timeout"


def _mhc_limit(mhc: Obj) -> tuple[str, str]:
    """The MHC's short-circuit setting, as (field path, words): v1beta2
    `spec.remediation.triggerIf.unhealthyInRange` (wins) or `.unhealthyLessThanOrEqualTo`,
    v1beta1 `spec.unhealthyRange` (wins) or `spec.maxUnhealthy`; the limit defaults to 100%
    (core/reconcilers/machinehealthcheck isAllowedRemediation, getMaxUnhealthy)."""
    spec = mhc.get("spec") or {}
    remediation = spec.get("remediation")
    if isinstance(remediation, dict):
        trigger = remediation.get("triggerIf") or {}
        base = "spec.remediation.triggerIf"
        if trigger.get("unhealthyInRange"):
            return f"{base}.unhealthyInRange", (
                f"the number of unhealthy machines is outside its triggerIf.unhealthyInRange "
                f"{trigger['unhealthyInRange']}"
            )
        limit = trigger.get("unhealthyLessThanOrEqualTo", "100%")
        return f"{base}.unhealthyLessThanOrEqualTo", (
            f"more machines are unhealthy than its triggerIf.unhealthyLessThanOrEqualTo {limit} "
            "allows"
        )
    if spec.get("unhealthyRange"):
        return "spec.unhealthyRange", (
            "the number of unhealthy machines is outside its unhealthyRange "
            f"{spec['unhealthyRange']}"
        )
    limit = spec.get("maxUnhealthy", "100%")
    return "spec.maxUnhealthy", f"more machines are unhealthy than its maxUnhealthy {limit} allows"


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


# --- Medik8s NodeHealthCheck ---------------------------------------------------------------------


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
        first = remediations[0]
        started = parse_time(first.get("started"))
        res = first.get("resource") or {}
        claims.append(
            claim(
                "automation-acting",
                "automation",
                f"{who} is remediating it: {res.get('kind', remedy)} "
                f"{res.get('namespace', '')}/{res.get('name', '')} created"
                + (f" at {_when(started, now)}" if started else "")
                + f" ({len(remediations)} remediation(s) so far)",
                fact("NodeHealthCheck", nhc, f"status.unhealthyNodes[name={name}].remediations"),
            )
        )
        return ACTING, started
    in_flight = (status.get("inFlightRemediations") or {}).get(name)
    if in_flight:
        started = parse_time(in_flight)
        claims.append(
            claim(
                "automation-acting",
                "automation",
                f"{who} is remediating it since {_when(started, now) if started else in_flight}",
                fact("NodeHealthCheck", nhc, f"status.inFlightRemediations[{name}]"),
            )
        )
        return ACTING, started
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


def timeline_objects(node: Obj, snap: Snapshot) -> list[tuple[str, str, str]]:
    """(kind, namespace, name) of the automation objects about `node`: their events belong in
    its timeline."""
    out: list[tuple[str, str, str]] = []
    machine, _, _ = _machine_of(node, snap)
    if machine is not None:
        out.append(
            ("Machine", machine["metadata"].get("namespace", ""), machine["metadata"]["name"])
        )
    for cov in covering(node, snap, snap.captured_at):
        if cov.object.startswith("Node/"):
            continue  # the node's own events are in the timeline already
        kind, _, rest = cov.object.partition("/")
        namespace, _, name = rest.rpartition("/")
        out.append((kind, namespace, name))
    return list(dict.fromkeys(out))


# --- Karpenter, cluster-autoscaler, the cloud node lifecycle controller ----------------------


def _taint(node: Obj, key: str) -> Obj | None:
    return next(
        (t for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") == key), None
    )


def _unix(value: Any) -> datetime | None:
    from datetime import timezone

    try:
        return datetime.fromtimestamp(int(str(value)), tz=timezone.utc)
    except (ValueError, OverflowError, OSError):
        return None


def _karpenter(node: Obj, snap: Snapshot, now: datetime) -> Coverage | None:
    """A Node of a Karpenter NodePool (label karpenter.sh/nodepool) and its NodeClaim. Karpenter
    finds a Node's NodeClaim by `status.providerID` == the Node's `spec.providerID`
    (pkg/utils/node/node.go NodeClaimForNode); repair (pkg/controllers/node/health) acts only
    through that link. `status.nodeName` alone links it for the in-flight signs, not for a
    repair time."""
    labels = node["metadata"].get("labels") or {}
    name = node["metadata"]["name"]
    provider_id = (node.get("spec") or {}).get("providerID")
    nodeclaims = _of(snap, "NodeClaim", KARPENTER_GROUP)
    by_provider = [
        c
        for c in nodeclaims
        if provider_id and (c.get("status") or {}).get("providerID") == provider_id
    ]
    by_name = [c for c in nodeclaims if (c.get("status") or {}).get("nodeName") == name]
    nodeclaim: Obj | None = next(iter(by_provider or by_name), None)
    pool = labels.get(NODEPOOL_LABEL)
    if not pool and nodeclaim is None:
        return None
    who = f"NodePool {pool}" if pool else "Karpenter"
    linked = [fact("Node", node, f"metadata.labels[{NODEPOOL_LABEL}]")] if pool else []
    if by_provider:
        linked += [
            fact("Node", node, "spec.providerID"),
            fact("NodeClaim", nodeclaim or {}, "status.providerID"),
        ]
    elif nodeclaim is not None:
        linked.append(fact("NodeClaim", nodeclaim, "status.nodeName"))
    what = f"NodeClaim {nodeclaim['metadata']['name']}" if nodeclaim else "its NodeClaim"
    claims = [
        claim(
            "covered-by",
            "automation",
            f"covered by Karpenter ({who}, {what}): if its node repair is enabled (the NodeRepair "
            "feature gate, off by default and not visible through the API) it deletes the "
            "NodeClaim, replacing the node, once a repair policy's condition has held for its "
            "toleration",
            *linked,
        )
    ]
    obj = ref("NodeClaim", nodeclaim) if nodeclaim else f"Node/{name}"
    deleting = parse_time((nodeclaim or {}).get("metadata", {}).get("deletionTimestamp"))
    disrupted = _taint(node, KARPENTER_DISRUPTED)
    if deleting is not None:
        claims.append(
            claim(
                "automation-acting",
                "automation",
                f"Karpenter is replacing it: {what} is being deleted since {_when(deleting, now)}",
                fact("NodeClaim", nodeclaim or {}, "metadata.deletionTimestamp"),
            )
        )
        return Coverage(KARPENTER, obj, ACTING, deleting, joined(claims), claims)
    if disrupted is not None:
        claims.append(
            claim(
                "automation-acting",
                "automation",
                f"Karpenter is disrupting it (taint {KARPENTER_DISRUPTED}): it drains and "
                "deletes the node",
                fact("Node", node, f"spec.taints[key={KARPENTER_DISRUPTED}].effect"),
            )
        )
        return Coverage(KARPENTER, obj, ACTING, None, joined(claims), claims)
    if nodeclaim is None or not by_provider:
        if nodeclaim is None:
            why = "its NodeClaim is not in what was read"
            because = linked
        else:
            why = (
                f"{what}'s status.providerID is not the Node's spec.providerID, the link "
                "Karpenter's repair finds it by"
            )
            because = [
                fact("Node", node, "spec.providerID"),
                fact("NodeClaim", nodeclaim, "status.providerID"),
            ]
        claims.append(
            claim("covered-by", "automation", f"{why}: no repair time is predicted", *because)
        )
        return Coverage(KARPENTER, obj, WATCHING, None, joined(claims), claims)
    state, at = _karpenter_repair(node, nodeclaim, snap, now, claims, what)
    return Coverage(KARPENTER, obj, state, at, joined(claims), claims, assumed=at is not None)


def _policy_matches(node: Obj) -> list[_Match]:
    """The assumed repair policies (KARPENTER_REPAIR_POLICIES) the node's conditions match now,
    earliest termination time first (health controller's findUnhealthyConditions)."""
    rules = [
        {"type": t, "status": s, "toleration": f"{sec}s"} for t, s, sec in KARPENTER_REPAIR_POLICIES
    ]
    return _matches(node, rules, "toleration")


def _karpenter_repair(
    node: Obj, nodeclaim: Obj, snap: Snapshot, now: datetime, claims: list[Claim], what: str
) -> tuple[str, datetime | None]:
    """SCHEDULED / DUE / OVERDUE / STOPPED / NOT_MATCHING for Karpenter's node repair, under
    the assumptions its sentence names (the gate is on; the AWS provider's policies)."""
    assumed = _assumed_policies(nodeclaim)
    found = _policy_matches(node)
    if not found:
        ready = _condition(node, "Ready") or {}
        claims.append(
            claim(
                "automation-not-matching",
                "automation",
                f"none of the repair policies' conditions matches the node now "
                f"(Ready={ready.get('status')}; {assumed}): Karpenter does not repair it as it is",
                fact("Node", node, "status.conditions[type=Ready].status"),
            )
        )
        return NOT_MATCHING, None
    blocked = _repair_blocked_event(node, snap, now) or _karpenter_blocked(nodeclaim, snap)
    if blocked is not None:
        claims.append(blocked)
        return STOPPED, None
    first = found[0]
    basis = (
        f"{first.type}={first.status} since {format_time(first.since)} plus the toleration "
        f"{timedelta(seconds=first.seconds)} ({assumed})"
    )
    premises = [
        *_node_premises(node, first),
        fact("NodeClaim", nodeclaim, "metadata.deletionTimestamp"),
    ]
    late = (now - first.at).total_seconds()
    if late < 0:
        text = (
            f"if node repair is enabled, Karpenter deletes {what} at {_when(first.at, now)}: "
            f"{basis}, unless the node recovers first or over 20% of its NodePool is unhealthy "
            "then"
        )
        claims.append(claim("automation-scheduled", "automation", text, *premises))
        return SCHEDULED, first.at
    if late <= OVERDUE_SECONDS:
        text = (
            f"repair was due at {_when(first.at, now)} ({basis}) and {what} is not being "
            "deleted yet: if node repair is enabled, Karpenter deletes it at its next check"
        )
        claims.append(claim("automation-due", "automation", text, *premises))
        return DUE, first.at
    head = (
        f"Karpenter's repair has not acted {timedelta(seconds=round(late))} after it was due at "
        f"{format_time(first.at)} ({basis}): {what} is not being deleted"
    )
    enabled = _latest_blocked_event(node, snap)
    if enabled is None:
        text = (
            f"{head}, so node repair is probably not enabled (or its provider tolerates the "
            "condition longer); remediate does not wait for it"
        )
    else:  # its own event proves repair is on: say so, and still do not wait on a silence
        when, field_name, ev = enabled
        text = (
            f"{head}, although node repair is enabled (it reported {KARPENTER_REPAIR_BLOCKED} "
            f"at {format_time(when)}, none in the last 20 min): why it has not acted is not "
            "visible here (its provider may tolerate the condition longer); remediate does not "
            "wait for it"
        )
        premises += [fact("Event", ev, "reason"), fact("Event", ev, field_name)]
    claims.append(claim("automation-overdue", "automation", text, *premises))
    return OVERDUE, first.at


def _latest_blocked_event(node: Obj, snap: Snapshot) -> tuple[datetime, str, Obj] | None:
    """The newest NodeRepairBlocked event about the Node: (when, the field read, the event)."""
    seen = []
    for ev in snap.events_about("Node", "", node["metadata"]["name"]):
        field_name = "lastTimestamp" if ev.get("lastTimestamp") else "eventTime"
        when = parse_time(ev.get(field_name))
        if ev.get("reason") == KARPENTER_REPAIR_BLOCKED and when is not None:
            seen.append((when, field_name, ev))
    return max(seen, key=lambda s: s[0]) if seen else None


def _repair_blocked_event(node: Obj, snap: Snapshot, now: datetime) -> Claim | None:
    """Karpenter's own word that repair is blocked: a NodeRepairBlocked Warning about the Node
    (pkg/controllers/node/health/events.go), republished while blocked (requeued every 5 min,
    deduplicated for 15 min), so one seen in the last KARPENTER_BLOCKED_FRESH_SECONDS means it
    is blocked now; it also proves node repair is enabled."""
    latest = _latest_blocked_event(node, snap)
    if latest is None:
        return None
    when, field_name, ev = latest
    if (now - when).total_seconds() > KARPENTER_BLOCKED_FRESH_SECONDS:
        return None
    return claim(
        "automation-stopped",
        "automation",
        f"Karpenter reported {KARPENTER_REPAIR_BLOCKED} for this node at {_when(when, now)} "
        f'("{ev.get("message", "")}"): node repair is enabled and repairs nothing in its '
        "pool until enough nodes recover; it re-checks every 5 min",
        fact("Event", ev, "reason"),
        fact("Event", ev, "involvedObject.name"),
        fact("Event", ev, field_name),
    )


def _assumed_policies(nodeclaim: Obj) -> str:
    """The assumption a Karpenter repair time rests on, said in its sentence."""
    group = (((nodeclaim.get("spec") or {}).get("nodeClassRef")) or {}).get("group")
    text = (
        "assumed: the AWS provider's repair policies, Ready False or Unknown tolerated 30 min; "
        "a provider's policies are compiled in, not visible through the API"
    )
    if group and group != KARPENTER_AWS_GROUP:
        text += f"; this NodeClaim's class is of {group}, whose policies may differ"
    return text


def _karpenter_blocked(nodeclaim: Obj, snap: Snapshot) -> Claim | None:
    """Repair's short-circuit: more than 20% (rounded up) of the NodePool's Nodes (of all Nodes
    for a NodeClaim without a NodePool) match a repair policy. The pool is the NodeClaim's
    label, as the health controller reads it (isNodePoolHealthy / isClusterHealthy)."""
    pool = (nodeclaim["metadata"].get("labels") or {}).get(NODEPOOL_LABEL)
    nodes = [
        n
        for n in snap.nodes
        if not pool or (n["metadata"].get("labels") or {}).get(NODEPOOL_LABEL) == pool
    ]
    unhealthy = sum(1 for n in nodes if _policy_matches_status(n))
    limit = scaled(f"{KARPENTER_UNHEALTHY_PERCENT}%", len(nodes), True)
    if limit is None or unhealthy <= limit:
        return None
    scope = f"NodePool {pool}" if pool else "the cluster (the NodeClaim has no NodePool)"
    group = f"Node[{NODEPOOL_LABEL}={pool}]" if pool else "Node[]"
    return claim(
        "automation-stopped",
        "automation",
        f"Karpenter repairs nothing in {scope} now: {unhealthy} of its {len(nodes)} nodes are "
        f"unhealthy by the repair policies, more than the {KARPENTER_UNHEALTHY_PERCENT}% "
        f"({limit}, rounded up) it tolerates; it re-checks every 5 min (event NodeRepairBlocked "
        "on the node, if repair is enabled)",
        *([fact("NodeClaim", nodeclaim, f"metadata.labels[{NODEPOOL_LABEL}]")] if pool else []),
        Premise(group, "count", len(nodes)),
        Premise(group, f"count({KARPENTER_UNHEALTHY_TERMS})", unhealthy),
    )


def _policy_matches_status(node: Obj) -> bool:
    """Whether a node counts as unhealthy for the short-circuit: a policy's condition type and
    status match, however long they have (areNodesHealthy counts without the toleration)."""
    return any(
        (_condition(node, ctype) or {}).get("status") == status
        for ctype, status, _ in KARPENTER_REPAIR_POLICIES
    )


def _autoscaler(node: Obj, now: datetime) -> Coverage | None:
    """cluster-autoscaler's own marks on the Node: ToBeDeletedByClusterAutoscaler (deleting it
    now) and DeletionCandidateOfClusterAutoscaler (unneeded since its value): an unready node
    unneeded for --scale-down-unready-time (20 min by default) is removed."""
    name = node["metadata"]["name"]
    deleting = _taint(node, CA_TO_BE_DELETED)
    if deleting is not None:
        since = _unix(deleting.get("value"))
        text = (
            f"cluster-autoscaler is removing the node (taint {CA_TO_BE_DELETED}"
            + (f" since {_when(since, now)}" if since else "")
            + "): it drains it and deletes the machine from its node group"
        )
        cov_claims = [
            claim(
                "automation-acting",
                "automation",
                text,
                fact("Node", node, f"spec.taints[key={CA_TO_BE_DELETED}].value"),
            )
        ]
        return Coverage(CLUSTER_AUTOSCALER, f"Node/{name}", ACTING, since, text, cov_claims)
    candidate = _taint(node, CA_DELETION_CANDIDATE)
    since = _unix((candidate or {}).get("value"))
    if candidate is None or since is None:
        return None
    at = shifted(since, CA_SCALE_DOWN_UNREADY_SECONDS)
    premise = fact("Node", node, f"spec.taints[key={CA_DELETION_CANDIDATE}].value")
    late = (now - at).total_seconds()
    if late > OVERDUE_SECONDS:
        text = (
            f"cluster-autoscaler has found the node unneeded since {format_time(since)} and has "
            f"not removed it {timedelta(seconds=round(late))} after the default "
            f"--scale-down-unready-time (20 min) ended at {format_time(at)}, where it scans "
            "every 10 s: it is probably not running, or runs with a longer "
            "--scale-down-unready-time (not visible through the API), or its node group "
            "cannot shrink; remediate does not wait for it"
        )
        absent = fact("Node", node, f"spec.taints[key={CA_TO_BE_DELETED}].value")
        cov_claims = [claim("automation-overdue", "automation", text, premise, absent)]
        return Coverage(CLUSTER_AUTOSCALER, f"Node/{name}", OVERDUE, at, text, cov_claims)
    if at <= now:
        state, text = (
            DUE,
            (
                f"cluster-autoscaler has found the node unneeded since {_when(since, now)}: with "
                "the default --scale-down-unready-time (20 min; the flag is not visible through "
                f"the API) an unready node is removed from {format_time(at)} on, at its next scan"
            ),
        )
        kind = "automation-due"
    else:
        state, text = (
            SCHEDULED,
            (
                f"cluster-autoscaler removes the node at {_when(at, now)}: unneeded since "
                f"{format_time(since)}, plus the default --scale-down-unready-time 20 min "
                "(the flag is not visible through the API), if it stays unneeded"
            ),
        )
        kind = "automation-scheduled"
    cov_claims = [claim(kind, "automation", text, premise)]
    return Coverage(CLUSTER_AUTOSCALER, f"Node/{name}", state, at, text, cov_claims)


def _cloud_lifecycle(node: Obj, now: datetime) -> Coverage | None:
    """The cloud node lifecycle controller (k8s.io/cloud-provider controllers/nodelifecycle,
    MonitorNodes), every --node-monitor-period (5 s by default): a Node not Ready whose instance
    no longer exists is deleted; one whose instance exists but is shut down gets (keeps) the
    node.cloudprovider.kubernetes.io/shutdown taint; a Ready one loses it. So a Node carrying the
    taint has an instance that existed at the last check: the controller replaces nothing and
    fences nothing, and deletes this Node only if someone else deletes the instance. remediate
    does not stand back (docs/automation.md: why that is safe)."""
    from kubectl_nodefail.analysis.facts import TAINT_CLOUD_SHUTDOWN

    taint = _taint(node, TAINT_CLOUD_SHUTDOWN)
    if taint is None:
        return None
    text = (
        f"the cloud node lifecycle controller reports the instance shut down (taint "
        f"{TAINT_CLOUD_SHUTDOWN}); it replaces nothing: it re-checks every 5 s (its default "
        "--node-monitor-period) and deletes the Node only once the instance no longer exists "
        "(deleted by someone else), or lifts the taint if the node is Ready again"
    )
    cov_claims = [
        claim(
            "covered-by",
            "automation",
            text,
            fact("Node", node, f"spec.taints[key={TAINT_CLOUD_SHUTDOWN}].effect"),
        )
    ]
    del now
    name = node["metadata"]["name"]
    return Coverage(CLOUD_LIFECYCLE, f"Node/{name}", WATCHING, None, text, cov_claims)
