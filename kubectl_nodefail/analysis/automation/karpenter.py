"""Karpenter (karpenter.sh NodeClaims, read by cluster/automation_read.py): whether its node
repair replaces a failed node of a NodePool, and when, under the repair policies and the feature
gate the API does not show (each time computed from them says it assumes them)."""

from __future__ import annotations

from datetime import datetime, timedelta

from kubectl_nodefail.analysis.automation.coverage import (
    ACTING,
    DUE,
    NOT_MATCHING,
    OVERDUE,
    OVERDUE_SECONDS,
    SCHEDULED,
    STOPPED,
    WATCHING,
    Coverage,
    _condition,
    _Match,
    _matches,
    _node_premises,
    _of,
    _taint,
    _when,
    in_flight,
    joined,
    scaled,
)
from kubectl_nodefail.analysis.claims import Claim, Premise, claim, fact, ref
from kubectl_nodefail.snapshot.model import Obj, Snapshot, format_time, parse_time

KARPENTER = "Karpenter"
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
# Its event while repair is blocked, and how long one counts as "blocked now": republished on
# the 5 min requeue once its 15 min deduplication has passed (health/controller.go, events.go).
KARPENTER_REPAIR_BLOCKED = "NodeRepairBlocked"
KARPENTER_BLOCKED_FRESH_SECONDS = 20 * 60


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
        state, at = in_flight(
            claims,
            deleting,
            now,
            [fact("NodeClaim", nodeclaim or {}, "metadata.deletionTimestamp")],
            f"Karpenter is replacing it: {what} is being deleted since {_when(deleting, now)}",
            lambda since, took: (
                f"{what} is being deleted since {since} and is still here: Karpenter began "
                f"replacing the node and has not finished in {took}, where with nothing holding "
                "it that takes minutes (it drains the node, waits for its volumes to detach, "
                "terminates the instance): something holds it (a PodDisruptionBudget or a "
                "karpenter.sh/do-not-disrupt pod in the drain, a volume still attached, the "
                "instance's termination: no limit unless the NodeClaim's "
                f"spec.terminationGracePeriod sets one); `kubectl describe nodeclaims.karpenter.sh "
                f"{(nodeclaim or {}).get('metadata', {}).get('name', '')}` says which"
            ),
        )
        return Coverage(KARPENTER, obj, state, at, joined(claims), claims)
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
