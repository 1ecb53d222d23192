"""Cluster API MachineHealthCheck: whether one replaces a failed node's Machine, and when.

Cluster API MachineHealthCheck (cluster.x-k8s.io/v1beta1). A Node is linked to its Machine by
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
"""

from __future__ import annotations

from datetime import datetime

from kubectl_nodefail.analysis.automation.coverage import (
    ACTING,
    OVERDUE_SECONDS,
    STOPPED,
    UNKNOWN,
    WATCHING,
    Coverage,
    _condition,
    _of,
    _timed,
    _when,
    in_flight,
    joined,
    selects,
)
from kubectl_nodefail.analysis.claims import Claim, Premise, claim, fact, ref
from kubectl_nodefail.snapshot.model import Obj, Snapshot, parse_time

CAPI_GROUP = "cluster.x-k8s.io"
MACHINE_ANNOTATION = "cluster.x-k8s.io/machine"
CLUSTER_NAMESPACE_ANNOTATION = "cluster.x-k8s.io/cluster-namespace"
CAPI_SKIP_REMEDIATION = "cluster.x-k8s.io/skip-remediation"
CAPI_PAUSED = "cluster.x-k8s.io/paused"
MHC = "Cluster API MachineHealthCheck"


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
    mref = (
        f"machines.{CAPI_GROUP} -n {machine['metadata'].get('namespace')} "
        f"{machine['metadata']['name']}"
    )
    if deleting is not None:
        return in_flight(
            claims,
            deleting,
            now,
            [fact("Machine", machine, "metadata.deletionTimestamp")],
            f"the Machine is being deleted since {_when(deleting, now)}: Cluster API is "
            "replacing it (the Node goes with it)",
            lambda at, took: (
                f"the Machine is being deleted since {at} and is still here: Cluster API began "
                f"replacing it and has not finished in {took}, where for an unreachable node "
                "that takes minutes when nothing holds it (its drain passes over the node's "
                "pods; recent releases do not wait for its volumes): something holds it (a "
                "pre-drain or pre-terminate hook, a drain of a node not marked unreachable, its "
                "volumes in a release that waits for them, the infrastructure's deletion, a "
                f"finalizer); `kubectl describe {mref}` says which"
            ),
        )
    owner = _condition(machine, "OwnerRemediated")
    if owner is not None and owner.get("status") == "False":
        since = parse_time(owner.get("lastTransitionTime"))
        asked = f" (Machine OwnerRemediated False, {owner.get('reason', '')})"
        return in_flight(
            claims,
            since,
            now,
            [
                fact("Machine", machine, "status.conditions[type=OwnerRemediated].status"),
                fact("Machine", machine, "status.conditions[type=OwnerRemediated].reason"),
                *(
                    [
                        fact(
                            "Machine",
                            machine,
                            "status.conditions[type=OwnerRemediated].lastTransitionTime",
                        )
                    ]
                    if since
                    else []
                ),
            ],
            f"{who} found it unhealthy and asked for its replacement"
            + (f" at {_when(since, now)}" if since else "")
            + f"{asked}: its MachineSet deletes the Machine and creates a new one",
            lambda at, took: (
                f"{who} found it unhealthy and asked for its replacement at {at}{asked}, and in "
                f"{took} its owner has not deleted the Machine, where one remediation takes "
                "minutes when nothing holds it: its owner is holding it (a MachineDeployment's "
                "remediation maxInFlight, a control plane remediating one Machine at a time, a "
                "paused MachineSet or Cluster) or its controller does not run; "
                f"`kubectl describe {mref}` says which"
            ),
        )
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
