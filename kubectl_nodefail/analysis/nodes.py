"""Node health as the node lifecycle controller and kubectl see it, and the likely cause."""

from __future__ import annotations

from datetime import datetime

from kubectl_nodefail.analysis import evictionclock, facts, storage
from kubectl_nodefail.analysis.claims import Premise, fact
from kubectl_nodefail.analysis.findings import Cause, ConditionView, NodeFinding, TaintView
from kubectl_nodefail.analysis.leader import Leader, leader
from kubectl_nodefail.analysis.text import ago
from kubectl_nodefail.analysis.text import duration as duration_text
from kubectl_nodefail.snapshot.model import Obj, Snapshot, format_time, parse_time, shifted


def conditions(node: Obj) -> dict[str, Obj]:
    return {c.get("type", ""): c for c in (node.get("status") or {}).get("conditions") or []}


def ready_condition(node: Obj) -> Obj | None:
    """The Ready condition (the last one listed, as `conditions` keeps it). Read for every
    node of the cluster several times a diagnosis: no dict built for it."""
    for cond in reversed((node.get("status") or {}).get("conditions") or []):
        if cond.get("type", "") == "Ready":
            return cond
    return None


def is_ready(node: Obj) -> bool:
    cond = ready_condition(node)
    return bool(cond and cond.get("status") == "True")


def has_problem_condition(node: Obj) -> bool:
    """A known trouble condition (pressure, NetworkUnavailable, node-problem-detector) is True."""
    return any(
        c.get("status") == "True"
        and (
            c.get("type") in facts.KUBELET_PROBLEM_CONDITIONS
            or c.get("type") in facts.NPD_PROBLEM_CONDITIONS
        )
        for c in conditions(node).values()
    )


def kubectl_status(node: Obj) -> str:
    """The STATUS column of `kubectl get nodes` (printNode)."""
    cond = ready_condition(node)
    if cond is None:
        words = ["Unknown"]
    else:
        words = ["Ready" if cond.get("status") == "True" else "NotReady"]
    if (node.get("spec") or {}).get("unschedulable"):
        words.append("SchedulingDisabled")
    return ",".join(words)


def zone_of(node: Obj) -> str:
    """The zone key the node lifecycle controller groups by (region and zone labels)."""
    labels = node["metadata"].get("labels") or {}
    region = labels.get(facts.LABEL_REGION) or labels.get(facts.LABEL_REGION_BETA) or ""
    zone = labels.get(facts.LABEL_ZONE) or labels.get(facts.LABEL_ZONE_BETA) or ""
    if region and zone:
        return f"{region}/{zone}"
    return zone or region or "(no zone)"


def taints(node: Obj) -> list[TaintView]:
    return [
        TaintView(
            key=t.get("key", ""),
            effect=t.get("effect", ""),
            value=t.get("value") or "",
            time_added=parse_time(t.get("timeAdded")),
        )
        for t in (node.get("spec") or {}).get("taints") or []
    ]


def _condition_view(cond: Obj) -> ConditionView:
    ctype, status = cond.get("type", ""), cond.get("status", "")
    if ctype == "Ready":
        problem = status != "True"
    elif ctype in facts.KUBELET_PROBLEM_CONDITIONS or ctype in facts.NPD_PROBLEM_CONDITIONS:
        problem = status == "True"
    else:
        problem = False  # an unknown custom condition is shown, never called a failure by name
    return ConditionView(
        type=ctype,
        status=status,
        reason=cond.get("reason") or "",
        message=cond.get("message") or "",
        last_heartbeat=parse_time(cond.get("lastHeartbeatTime")),
        last_transition=parse_time(cond.get("lastTransitionTime")),
        problem=problem,
    )


def lease_renew_time(snap: Snapshot, name: str) -> tuple[datetime | None, int | None]:
    lease = snap.lease(name)
    if not lease:
        return None, None
    spec = lease.get("spec") or {}
    return parse_time(spec.get("renewTime")), spec.get("leaseDurationSeconds")


def attestation(node: Obj) -> str | None:
    """Who marked the node out of service, and when: the out-of-service taint is a human's
    attestation that the machine is off, never an observation of it."""
    taint = next((t for t in taints(node) if t.key == facts.TAINT_OUT_OF_SERVICE), None)
    if taint is None:
        return None
    by = (node["metadata"].get("annotations") or {}).get(facts.ANNOTATION_TAINTED_BY)
    spelled = f"taint {taint.key}={taint.value}:{taint.effect}"
    if by:
        return f"attested by {by} through kubectl-nodefail remediate ({spelled})"
    when = f" at {format_time(taint.time_added)}" if taint.time_added else ""
    return f"attested by whoever applied the {spelled}{when} (who is not recorded)"


def shutdown_evidence(node: Obj) -> list[str]:
    """Signals that the machine itself is down (not just the kubelet or the network), each
    saying where it comes from: an observation (cloud provider, kubelet) or an attestation."""
    found = []
    for t in taints(node):
        if t.key == facts.TAINT_CLOUD_SHUTDOWN:
            found.append(f"cloud provider reports the instance shut down (taint {t.key})")
    attested = attestation(node)
    if attested:
        found.append(f"out of service: {attested}; not an observation of the machine")
    ready = ready_condition(node) or {}
    if "shutting down" in (ready.get("message") or "").lower():
        found.append(f"kubelet reported: {ready.get('message')}")
    return found


def _conditions_cause(
    code: str, lead: str, problems: list[ConditionView], evidence: list[str]
) -> Cause:
    names = ", ".join(f"{c.type}={c.status}" for c in problems)
    return Cause(
        code, f"{lead} {names}", "medium", evidence + [f"{c.type}: {c.message}" for c in problems]
    )


# What each cause's summary reads, besides the Ready condition's status and reason.
_LEASE_CAUSES = (
    "kubelet-stopped",
    "kubelet-returning",
    "lease-not-renewed",
    "lease-overdue",
    "no-controller-leader",
)
_MESSAGE_CAUSES = ("network-plugin", "runtime-down", "pleg-unhealthy")
_TAINT_CAUSES = ("machine-shutdown", "attested-shutdown", "shutdown-taint-on-ready-node")
_CONDITION_CAUSES = ("resource-pressure", "conditions")


def classify(node: Obj, snap: Snapshot, now: datetime) -> Cause:
    """The most likely reason the node is not Ready, with evidence, a confidence and the
    facts (premises) its summary rests on."""
    cause = _classify(node, snap, now)
    ready = "status.conditions[type=Ready]"
    because: list[Premise] = [fact("Node", node, f"{ready}.status")]
    if ready_condition(node) is not None:
        because.append(fact("Node", node, f"{ready}.reason"))
        if not is_ready(node):  # how long it has been not Ready (the OLDEST, the node's age)
            because.append(fact("Node", node, f"{ready}.lastTransitionTime"))
    lease = snap.lease(node["metadata"]["name"])
    if cause.code in _LEASE_CAUSES and lease is not None:
        because += [fact("Lease", lease, "spec.renewTime")]
        because += [fact("Lease", lease, "spec.leaseDurationSeconds")]
    if cause.code in ("lease-not-renewed", "lease-overdue"):  # when it last heard, too
        because.append(fact("Node", node, f"{ready}.lastHeartbeatTime"))
    chief = leader(snap)
    if cause.code in ("lease-not-renewed", "lease-overdue", "no-controller-leader") and chief:
        # when the controller's grace began, at the latest; whether a leader runs at all
        because += [
            chief.premise(),
            chief.premise("renewTime"),
            chief.premise("leaseDurationSeconds"),
        ]
    if cause.code in ("lease-overdue", "lease-not-renewed"):  # what says it does not run
        because += lifecycle_off(snap, now)[1]
    if cause.code in _MESSAGE_CAUSES or cause.code in _TAINT_CAUSES:
        because.append(fact("Node", node, f"{ready}.message"))
    if cause.code in _TAINT_CAUSES:
        for key in (facts.TAINT_CLOUD_SHUTDOWN, facts.TAINT_OUT_OF_SERVICE):
            because.append(fact("Node", node, f"spec.taints[key={key}].effect"))
        because.append(fact("Node", node, f"metadata.annotations[{facts.ANNOTATION_TAINTED_BY}]"))
    if cause.code in _CONDITION_CAUSES:
        for kind in conditions(node):
            if kind != "Ready":
                because.append(fact("Node", node, f"status.conditions[type={kind}].status"))
    cause.because = because
    return cause


def _classify(node: Obj, snap: Snapshot, now: datetime) -> Cause:
    ready = ready_condition(node)
    renew, lease_seconds = lease_renew_time(snap, node["metadata"]["name"])
    evidence: list[str] = []
    lease_note = ""
    lease_stale: bool | None = None
    if renew is not None:
        age = (now - renew).total_seconds()
        # A lease not renewed within its own duration has expired (kubelets renew at 1/4 of it).
        lease_stale = age > (lease_seconds or facts.DEFAULT_LEASE_SECONDS)
        lease_note = f"lease last renewed {ago(age)}"
        evidence.append(lease_note + (" (stale)" if lease_stale else " (fresh)"))
    elif "leases" not in " ".join(snap.gaps):
        evidence.append("no lease object in kube-node-lease")
    shutdown = shutdown_evidence(node)
    by_status = {c.type: c for c in map(_condition_view, conditions(node).values())}
    problem_conditions = [c for c in by_status.values() if c.problem and c.type != "Ready"]

    if ready is None:
        return Cause(
            "no-ready-condition",
            "node has never reported a Ready condition",
            "medium",
            [*evidence, "status.conditions has no Ready entry"],
        )
    status, reason = ready.get("status"), ready.get("reason") or ""
    message = ready.get("message") or ""
    if status == "Unknown":
        evidence.insert(0, f"Ready=Unknown, reason {reason}: {message}".rstrip(": "))
        if reason == facts.REASON_NODE_NEVER_UPDATED:
            return Cause(
                "never-registered",
                "kubelet registered the node but never posted status",
                "high",
                evidence,
            )
        if shutdown:
            return _shutdown_cause(node, "the machine is shut down", evidence + shutdown)
        if lease_stale is False:
            return Cause(
                "kubelet-returning",
                # The controller never sets Ready back itself: only the kubelet's next status
                # post does (proven: Ready stays Unknown under a lease renewed for minutes).
                "kubelet is renewing its lease again, but Ready stays Unknown until it posts "
                "node status",
                "medium",
                evidence,
            )
        return Cause(
            "kubelet-stopped",
            "kubelet stopped posting status: machine down, kubelet dead, or network partition "
            "(the API cannot tell these apart)",
            "high" if lease_stale else "medium",
            evidence,
        )
    if status == "False":
        evidence.insert(0, f"Ready=False, reason {reason}: {message}".rstrip(": "))
        low = message.lower()
        if shutdown:
            return _shutdown_cause(
                node, "the machine is shutting down or shut down", evidence + shutdown
            )
        if "networkready=false" in low or "network plugin" in low or "cni" in low:
            return Cause(
                "network-plugin",
                "kubelet is alive but the network plugin (CNI) is not ready",
                "high",
                evidence,
            )
        if "container runtime" in low:
            return Cause(
                "runtime-down",
                "kubelet is alive but the container runtime is down or not answering",
                "high",
                evidence,
            )
        if "pleg" in low:
            return Cause(
                "pleg-unhealthy",
                "kubelet is alive but its pod lifecycle event "
                "generator is unhealthy (runtime slow or hung)",
                "high",
                evidence,
            )
        if problem_conditions:
            return _conditions_cause(
                "resource-pressure", "kubelet reports trouble", problem_conditions, evidence
            )
        return Cause(
            "kubelet-not-ready",
            "kubelet is alive and reports the node not ready",
            "medium",
            evidence,
        )
    # Ready=True: only listed when its lease expired, tainted out-of-service / shut down, or
    # with problem conditions.
    if renew is not None and lease_late(now, renew, lease_seconds):
        grace = monitor_grace(snap.server_minor)
        waits = f"{grace}s" + (
            f" ({facts.NODE_MONITOR_GRACE_SECONDS_BEFORE_1_32}s before v1.32; this server's "
            "version was not read)"
            if snap.server_minor is None
            else ""
        )
        duration = lease_seconds or facts.DEFAULT_LEASE_SECONDS
        age = (now - renew).total_seconds()
        chief = leader(snap)
        if chief is not None and chief.expired():
            marks = (
                "nothing marks the node NotReady or taints it for that until a leader takes over"
            )
            return Cause(
                "no-controller-leader",
                f"the kubelet has not renewed its lease for {duration_text(age)} (the lease lasts "
                f"{duration}s"
                + (
                    f", so it has expired): Ready is still True, and {marks}: "
                    if age > duration
                    else f"): if it does not renew, {marks}: "
                )
                + chief.no_leader(now),
                "high" if age > duration else "medium",
                evidence,
            )
        due, heard, first_look = mark_due(node, renew, chief, grace)
        unread = any(g.startswith(LEADER_GAP) for g in snap.gaps)  # a new leader unseen
        expired = ", so it has expired" if age > duration else ""
        start = (
            f"its first look at the node by default (node-monitor-grace-period), at about "
            f"{format_time(due)}: {chief.words()}, after the last renewal, and the node "
            "lifecycle controller keeps when it last heard from each node in memory"
            if chief is not None and first_look
            else f"the last {'renewal' if heard == renew else 'Ready heartbeat'} by default "
            f"(node-monitor-grace-period), at {format_time(due)}"
        )
        if past_mark(due, now) and not unread:
            kept = lifecycle_off(snap, now)[0]
            return Cause(
                "lease-overdue",
                f"the kubelet has not renewed its lease for {duration_text(age)} (the lease "
                f"lasts {duration}s{expired}): Ready is still True, though the node lifecycle "
                f"controller sets Ready Unknown {waits} after {start}, "
                f"{duration_text((now - due).total_seconds())} ago; it has not, "
                + (
                    f"and by all signs it does not run: {kept} "
                    if kept
                    else "so here its grace period is longer or it does not run "
                )
                + "(kube-controller-manager's --controllers, its health)",
                "high" if kept else "medium",
                evidence,
            )
        late = (
            f"the kubelet has not renewed its lease for {duration_text(age)} (it renews every "
            f"{duration_text(duration / 4)}; the lease lasts {duration}s{expired}): Ready is "
        )
        off = lifecycle_off(snap, now)[0]
        if off:  # nothing will mark it: said before its time, not only past it
            return Cause(
                "lease-not-renewed",
                f"{late}still True, and unless the kubelet renews nothing marks the node NotReady"
                f": by all signs the node lifecycle controller does not run ({off}; kube-"
                "controller-manager's --controllers, its health)",
                "high" if age > duration else "medium",
                evidence,
            )
        return Cause(
            "lease-not-renewed",
            f"{late}still True only because the node lifecycle controller has not acted yet. "
            f"Unless the kubelet renews, it sets Ready Unknown {waits} after {start}"
            + (
                " (past: due at its next look, every 5s, unless its grace is longer here"
                + (
                    ", it does not run, or a new leader took over since: its Lease was not read)"
                    if unread
                    else " or it does not run)"
                )
                if due <= now
                else ""
            ),
            "high" if age > duration else "medium",
            evidence,
        )
    if shutdown:
        return Cause(
            "shutdown-taint-on-ready-node",
            "node is Ready but carries a shutdown / out-of-service taint",
            "high",
            evidence + shutdown,
        )
    if problem_conditions:
        return _conditions_cause(
            "conditions", "node is Ready but reports", problem_conditions, evidence
        )
    return Cause("healthy", "node is Ready", "high", evidence)


# Past the default grace, this much more before a Ready node with an expired lease is called
# overdue to be marked: the node lifecycle controller looks every 5 s (node-monitor-period), and
# the clocks may differ by a few seconds.
MARK_SLACK_SECONDS = 15
# how gather states that kube-controller-manager's leader Lease could not be read
LEADER_GAP = "kube-controller-manager's leader Lease"


def mark_due(
    node: Obj, renew: datetime, chief: Leader | None, grace: int
) -> tuple[datetime, datetime, bool]:
    """When the node lifecycle controller sets a Ready node's Ready Unknown unless its kubelet
    speaks: its grace after it last heard from the kubelet, a renewal of the lease or a Ready
    heartbeat (tryUpdateNodeHealth moves its probe time on either), or after a new leader's
    first look (it keeps that time in memory). (due, when it last heard, whether a new leader's
    first look is the start)."""
    beat = parse_time((ready_condition(node) or {}).get("lastHeartbeatTime"))
    heard = max(renew, beat) if beat is not None else renew
    first_look = chief is not None and chief.after(heard)
    return (
        shifted(chief.since if chief is not None and first_look else heard, grace),
        heard,
        first_look,
    )


def past_mark(due: datetime, now: datetime) -> bool:
    """Past the moment the node lifecycle controller was due to mark the node, by more than its
    next look and the clocks' difference: it has not, and is not about to."""
    return (now - due).total_seconds() > MARK_SLACK_SECONDS


def overdue(
    node: Obj, lease: Obj | None, chief: Leader | None, minor: int | None, now: datetime
) -> bool:
    """A Ready node whose kubelet's lease has expired and that the node lifecycle controller,
    with a leader that renews (or none read), was due to mark NotReady and has not
    (nodes.classify's `lease-overdue`): nothing marks it. The caller rules out a leader Lease
    it could not read (a new leader's later first look)."""
    after = unmarked_after(node, lease, chief, minor)
    return after is not None and now > after


def unmarked_after(
    node: Obj, lease: Obj | None, chief: Leader | None, minor: int | None
) -> datetime | None:
    """The moment after which the Ready node, its kubelet silent since the lease's last renewal
    and still not marked, is `overdue`: past both the lease's duration and the controller's
    time to mark it (with its next look). None: not Ready, no renewal read, or no leader."""
    spec = (lease or {}).get("spec") or {}
    renew = parse_time(spec.get("renewTime")) if isinstance(spec.get("renewTime"), str) else None
    if renew is None or not is_ready(node) or (chief is not None and chief.expired()):
        return None
    seconds = spec.get("leaseDurationSeconds")
    lasts = seconds if isinstance(seconds, int) and seconds > 0 else facts.DEFAULT_LEASE_SECONDS
    due, _, _ = mark_due(node, renew, chief, monitor_grace(minor))
    return max(shifted(renew, lasts), shifted(due, MARK_SLACK_SECONDS))


def registration_taint_kept(snap: Snapshot, now: datetime) -> list[Obj]:
    """Ready nodes, Ready for longer than the controller's next look, that still carry the
    not-ready NoSchedule taint a kubelet registers with: the node lifecycle controller takes it
    off a Ready node at once (doNoScheduleTaintingPass), so where it stays, that controller
    does not run. Once per snapshot and moment (every overdue node asks)."""
    return snap.memo(f"nodes.registration-taint/{now.isoformat()}", lambda s: _kept(s, now))


def lifecycle_off(snap: Snapshot, now: datetime) -> tuple[str, list[Premise]]:
    """What says the node lifecycle controller does not run (registration_taint_kept): words
    naming up to three such nodes, and each one's taint and Ready transition. ("", []): none.
    Once per snapshot and moment (every pod of a not-Ready node asks)."""
    return snap.memo(f"nodes.lifecycle-off/{now.isoformat()}", lambda s: _off(s, now))


def _off(snap: Snapshot, now: datetime) -> tuple[str, list[Premise]]:
    kept = registration_taint_kept(snap, now)
    names = [str(n["metadata"]["name"]) for n in kept[:4]]
    words = (
        f"Ready node(s) {', '.join(names[:3])}{' …' if len(names) > 3 else ''} still carry the "
        "not-ready NoSchedule taint it takes off a node once Ready"
    )
    since = "status.conditions[type=Ready].lastTransitionTime"
    chief = leader(snap)  # its start, from which the nodes were counted too
    because = [fact("Node", n, p) for n in kept[:3] for p in (KEPT, since)]
    if kept and chief is not None:
        because.append(chief.premise())
    return (words if kept else ""), because


KEPT = f"spec.taints[key={facts.TAINT_NOT_READY},effect=NoSchedule]"  # lifecycle_off's sign


def nothing_marks(cause: Cause) -> bool:
    """The cause rests on the sign that the node lifecycle controller does not run."""
    return any(p.field == KEPT for p in cause.because)


def _kept(snap: Snapshot, now: datetime) -> list[Obj]:
    out = []
    chief = leader(snap)  # a leader that just took over has not looked yet
    for node in snap.nodes:
        since = parse_time((ready_condition(node) or {}).get("lastTransitionTime"))
        if chief is not None and since is not None:
            since = max(since, chief.since)
        if not is_ready(node) or since is None or not past_mark(since, now):
            continue
        if any(t.key == facts.TAINT_NOT_READY and t.effect == "NoSchedule" for t in taints(node)):
            out.append(node)
    return out


def lease_late(now: datetime, renewed: datetime, duration: int | None) -> bool:
    """The kubelet missed at least two renewals (it renews every quarter of the duration): a
    Ready node that will turn NotReady unless it renews soon."""
    return (now - renewed).total_seconds() > (duration or facts.DEFAULT_LEASE_SECONDS) / 2


def monitor_grace(minor: int | None) -> int:
    """kube-controller-manager's default node-monitor-grace-period for this server."""
    if minor is not None and minor < facts.NODE_MONITOR_GRACE_50S_MINOR:
        return facts.NODE_MONITOR_GRACE_SECONDS_BEFORE_1_32
    return facts.NODE_MONITOR_GRACE_SECONDS


def _shutdown_cause(node: Obj, observed: str, evidence: list[str]) -> Cause:
    """A shutdown observed (cloud provider, kubelet) is high confidence; one only attested
    (the out-of-service taint) says who attested it."""
    taint_keys = {t.key for t in taints(node)}
    said = "shutting down" in ((ready_condition(node) or {}).get("message") or "").lower()
    if facts.TAINT_CLOUD_SHUTDOWN in taint_keys or said:
        return Cause("machine-shutdown", observed, "high", evidence)
    return Cause(
        "attested-shutdown",
        f"marked out of service: {attestation(node)}; the cluster itself has not observed the "
        "machine off",
        "attested",
        evidence,
    )


def analyse_node(node: Obj, snap: Snapshot, now: datetime) -> NodeFinding:
    name = node["metadata"]["name"]
    ready = ready_condition(node)
    ready_view = _condition_view(ready) if ready else None
    not_ready_for = None
    if ready_view and ready_view.status != "True" and ready_view.last_transition:
        since = ready_view.last_transition
        if ready_view.status == "Unknown":
            # NotReady before it went silent: the Ready condition keeps only its last change,
            # the kubelet's NodeNotReady event the first
            said = evictionclock.kubelet_not_ready(snap.events_about("Node", "", name), since)
            since = said[0] if said else since
        not_ready_for = (now - since).total_seconds()
    renew, lease_seconds = lease_renew_time(snap, name)
    lease_age = (now - renew).total_seconds() if renew else None
    views = [_condition_view(c) for c in conditions(node).values() if c.get("type") != "Ready"]
    tviews = taints(node)
    out_of_service = any(t.key == facts.TAINT_OUT_OF_SERVICE for t in tviews)
    cloud_shutdown = any(t.key == facts.TAINT_CLOUD_SHUTDOWN for t in tviews)
    ready_now = is_ready(node)
    return NodeFinding(
        name=name,
        status=kubectl_status(node),
        zone=zone_of(node),
        ready=ready_view,
        not_ready_seconds=not_ready_for,
        lease_renewed=renew,
        lease_age_seconds=lease_age,
        taints=tviews,
        conditions=views,
        cause=classify(node, snap, now),
        shutdown_evidence=shutdown_evidence(node),
        out_of_service=out_of_service,
        out_of_service_seconds=_taint_age(tviews, facts.TAINT_OUT_OF_SERVICE, now),
        # forgotten only if its kubelet renews: Ready alone may be a silent node not yet
        # marked (or never, with no controller leader), where the taint is still wanted
        stale_out_of_service=out_of_service
        and ready_now
        and not (renew is not None and lease_late(now, renew, lease_seconds)),
        kubelet_version=((node.get("status") or {}).get("nodeInfo") or {}).get(
            "kubeletVersion", ""
        ),
        failed=not ready_now,
        cloud_shutdown=cloud_shutdown,
        volumes_attached=storage.attached_volumes(snap, name, now, ready_now),
        lease_stale=(
            None
            if lease_age is None
            else lease_age > (lease_seconds or facts.DEFAULT_LEASE_SECONDS)
        ),
    )


def _taint_age(taints: list[TaintView], key: str, now: datetime) -> float | None:
    for taint in taints:
        if taint.key == key and taint.time_added is not None:
            return (now - taint.time_added).total_seconds()
    return None
