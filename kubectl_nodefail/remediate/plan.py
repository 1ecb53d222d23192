"""Pure planning: a diagnosis plus the user's attestations -> ordered, gated steps.

Nothing here touches the cluster. Each step says what it would do, why, on what evidence, and
which gate it passed or failed; refused steps say what would unlock them. actions.py executes
only the allowed steps, re-checking each one right before acting.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace

from kubectl_nodefail.analysis import advice, automation, versions
from kubectl_nodefail.analysis import brake as brakes
from kubectl_nodefail.analysis.advice import JOB_TRACKING_FINALIZER
from kubectl_nodefail.analysis.claims import Premise
from kubectl_nodefail.analysis.findings import NodeFinding, PodFinding, Report
from kubectl_nodefail.analysis.nodes import analyse_node, machine_ran, out_of_service_overdue
from kubectl_nodefail.common import attestation
from kubectl_nodefail.common.errors import AttestationContradicted, Exit
from kubectl_nodefail.snapshot.model import Snapshot, format_time

STRATEGIES = ("auto", "out-of-service", "force-delete", "delete-node")
REPLACEABLE = {"deployment", "replicaset", "replicationcontroller"}
JOBS = {"job", "cronjob"}
ACTIONS = (
    "wait",
    "finalizer-held",
    "taint-out-of-service",
    "remove-out-of-service",
    "force-delete-pod",
    "delete-node",
)
MUTATING = frozenset(ACTIONS[2:])
NODE_ACTIONS = frozenset({"taint-out-of-service", "remove-out-of-service", "delete-node"})
POD_ACTIONS = frozenset({"finalizer-held", "force-delete-pod"})


def _cosmetic(pod: PodFinding) -> bool:
    """Stuck but harmless: nothing needs it (replaced, not wanted, finished); the same decision
    diagnose words as its advice (advice.disposition)."""
    return advice.disposition(pod, "out-of-service")[0] == advice.COSMETIC


def finalizer_owner(finalizer: str, namespace: str, name: str) -> str:
    """Who removes this finalizer, in one sentence."""
    if finalizer == JOB_TRACKING_FINALIZER:
        return (
            f"{finalizer}: this Job waits for the pod's phase Failed (podReplacementPolicy "
            "Failed) before the Job controller removes it, and on a dead node only PodGC sets "
            "that phase: use strategy out-of-service or delete-node"
        )
    if finalizer in ("foregroundDeletion", "orphan"):
        return f"{finalizer}: the garbage collector removes it once the dependents are handled"
    domain = finalizer.split("/", 1)[0] if "/" in finalizer else "its controller"
    return (
        f"{finalizer}: the controller that added it ({domain}) must remove it; only if that "
        f"controller is gone for good, remove that entry of metadata.finalizers of pod "
        f"{namespace}/{name} by hand"
    )


@dataclass
class Step:
    action: str  # one of ACTIONS
    node: str
    target: str  # "node/NAME" or "pod/NAMESPACE/NAME"
    why: str
    allowed: bool
    gate: str  # the gate passed, or why it was refused and what would unlock it
    evidence: list[str] = field(default_factory=list)
    uid: str = ""
    resource_version: str = ""
    lease_renewed: str = ""  # the node's lease renewTime when planned: must not move before acting
    releases: list[str] = field(default_factory=list)  # stuck pods it frees: NS/NAME (controller)
    leaves_stuck: list[str] = field(default_factory=list)  # pods on its node it does not free
    # what `releases` and `leaves_stuck` rest on: each pod named is that object (UID), bound to
    # the step's node, as read (resourceVersion; its finalizers where they hold it); from the
    # live state of the plan, or of the re-read before the result speaks (actions.restate)
    because: list[Premise] = field(default_factory=list)
    # filled in by actions.py: done (its effect observed) | unconfirmed (sent and accepted, the
    # effect not observed) | skipped | failed | refused | waited | blocked | not started
    # | interrupted
    result: str = ""
    detail: str = ""


@dataclass
class Binding:
    """The cluster a plan was computed from. A saved plan is replayed only against the same
    context, server and cluster (the kube-system namespace's UID: a rebuilt cluster behind the
    same name and address has another) and the same node objects (a node recreated under the
    same name has another UID)."""

    context: str = ""
    server: str = ""
    cluster_uid: str = ""  # metadata.uid of namespace kube-system
    captured_at: str = ""  # when the state the plan was computed from was read (RFC 3339)
    source: str = ""  # the dump file a plan was computed from; "" for a live cluster
    node_uids: dict[str, str] = field(default_factory=dict)  # every node the plan has steps on


@dataclass
class Attestation:
    """The operator's statement that a node's machine is shut down, as recorded in a plan."""

    node: str
    node_uid: str
    by: str  # the user the API server says made the plan
    at: str  # when (RFC 3339)


@dataclass
class Plan:
    strategy: str
    steps: list[Step]
    refusals: list[str]  # plan-wide refusals (zone disruption, node bound)
    attested: list[str]  # the nodes whose attestation counts in this plan
    bound_to: Binding = field(default_factory=Binding)
    attestations: list[Attestation] = field(default_factory=list)  # who attested, when

    @property
    def mutating(self) -> list[Step]:
        return [s for s in self.steps if s.allowed and s.action in MUTATING]

    def result_code(self, interrupted: bool = False) -> Exit:
        """After --confirm: interrupted (6: a signal stopped the run, even in its last step's
        wait), a step's effect not observed (7), all done (0), some refused/skipped/failed/
        blocked (4), nothing done (5)."""
        if interrupted or any(s.result in ("not started", "interrupted") for s in self.steps):
            return Exit.INTERRUPTED
        if any(s.result == "unconfirmed" for s in self.steps):
            return Exit.UNCONFIRMED
        if self.refusals or any(
            s.result in ("skipped", "failed", "refused", "blocked") for s in self.steps
        ):
            return Exit.PARTIAL
        return Exit.OK if any(s.result == "done" for s in self.steps) else Exit.NOTHING_TO_DO

    def exit_code(self) -> Exit:
        """For a plan: runnable (0), some refused (4), nothing to do (5)."""
        if any(not s.allowed for s in self.steps) or self.refusals:
            return Exit.PARTIAL
        return Exit.OK if self.mutating else Exit.NOTHING_TO_DO


@dataclass
class Options:
    strategy: str = "auto"
    attested: Collection[str] = ()
    only_nodes: Collection[str] = ()
    max_nodes: int = 1
    allow_disruption: bool = False
    server_minor: int | None = None
    node_uids: Mapping[str, str] = field(default_factory=dict)  # node name -> metadata.uid
    attested_by: str = "unknown user"  # who typed the attestations (SelfSubjectReview)
    # Act even on a node whose remediation automation acts now or within the horizon (the
    # seconds a confirmed run may take: --wait-timeout). It unlocks nothing else.
    despite_automation: bool = False
    automation_horizon: float = 120.0


def _shutdown_evidence(node: NodeFinding, opts: Options) -> list[str]:
    evidence = list(node.shutdown_evidence)
    if node.name in opts.attested:
        evidence.append(f"the operator attested that the machine of {node.name} is shut down")
    return evidence


def _strategy(opts: Options) -> str:
    if opts.strategy != "auto":
        return opts.strategy
    if not versions.out_of_service_usable(opts.server_minor):
        return "force-delete"
    return "out-of-service"


def _cluster_refusal(report: Report, opts: Options) -> str | None:
    """The brake (analysis/brake.py), computed by the diagnosis over every node of the cluster,
    whatever this plan's scope: naming one node does not step around it."""
    if report.brake is None or opts.allow_disruption:
        return None
    return brakes.refusal(report.brake)


def _pods_on(report: Report, node: str) -> list[PodFinding]:
    return [p for p in report.pods if p.node == node and p.node_failed]


def _wait_step(node: NodeFinding, pod: PodFinding, why: str) -> Step:
    return Step(
        "wait",
        node.name,
        f"pod/{pod.namespace}/{pod.name}",
        why,
        True,
        "nothing to do",
        uid=pod.uid,
    )


def _cosmetic_why(pod: PodFinding) -> str:
    if pod.phase in ("Succeeded", "Failed"):
        return f"finished ({pod.phase}) before its deletion: nothing waits on it"
    if pod.replacement.state == "not-wanted":
        return f"not wanted by its owner ({pod.replacement.summary}); the stuck object is cosmetic"
    return "replaceable: the replacement already runs; the stuck object is cosmetic"


def _finalizer_step(node: NodeFinding, pod: PodFinding, holders: list[str]) -> Step:
    """A pod no step of this tool releases: its finalizers keep the object, whatever we do."""
    owners = "; ".join(finalizer_owner(f, pod.namespace, pod.name) for f in holders)
    return Step(
        "finalizer-held",
        node.name,
        f"pod/{pod.namespace}/{pod.name}",
        f"held by finalizer {', '.join(holders)}: neither the out-of-service taint nor a force "
        "delete removes the object while it stands",
        False,
        f"nothing this tool does releases it: {owners}",
        evidence=[f"finalizers: {', '.join(pod.finalizers)}"],
        uid=pod.uid,
        resource_version=pod.resource_version,
    )


def _racing(node: NodeFinding, report: Report, opts: Options) -> list[automation.Coverage]:
    return [
        c
        for c in node.automation
        if automation.stands_back(c, report.captured_at, opts.automation_horizon)
    ]


def _automation_refusal(node: NodeFinding, report: Report, opts: Options) -> str | None:
    """Why remediate stands back from this node: its automation remediates it now, or will
    within the time this plan takes; None when nothing races it or the operator overrides."""
    racing = _racing(node, report, opts)
    if not racing or opts.despite_automation:
        return None
    said = "; ".join(f"{c.automation}: {c.claims[-1].text}" for c in racing if c.claims)
    return (
        f"stands back: {said}. Acting now would race it. Wait for it, or stop it first; "
        "only to act anyway, re-run with --despite-automation"
    )


def _raced(node: NodeFinding, report: Report, opts: Options) -> list[str]:
    return [
        f"proceeding despite {c.automation} ({c.object}, {c.state}): --despite-automation"
        for c in _racing(node, report, opts)
    ]


def _node_steps(
    node: NodeFinding, report: Report, opts: Options, refusal: str | None
) -> list[Step]:
    lease = format_time(node.lease_renewed) if node.lease_renewed else ""
    node_uid = opts.node_uids.get(node.name, "")
    if node.stale_out_of_service:
        return [
            Step(
                "remove-out-of-service",
                node.name,
                f"node/{node.name}",
                "the node is Ready again and still carries the out-of-service taint, which "
                "Kubernetes never removes by itself",
                True,
                "node is Ready (the only action taken on a Ready node)",
                evidence=[f"node {node.status}"],
                uid=node_uid,
                lease_renewed=lease,
            )
        ]
    if not node.failed:
        return []
    evidence = _shutdown_evidence(node, opts)
    refusal = refusal or _automation_refusal(node, report, opts)
    strategy = _strategy(opts)
    steps: list[Step] = []
    pods = _pods_on(report, node.name)
    gate_ok = bool(evidence) and refusal is None
    unlock = (
        refusal
        if refusal
        else "no evidence the machine is down (a silent kubelet may still run its pods). "
        f"Check the machine of {node.name} (console, power state, cloud instance state); only "
        f"if it is off, re-run with {attestation.flag()}, typing the node's name yourself"
    )
    gate = "shutdown confirmed: " + "; ".join(evidence) if gate_ok else unlock
    if gate_ok and opts.despite_automation:  # said, never counted as evidence
        gate = "; ".join([gate, *_raced(node, report, opts)])
    blocked: list[PodFinding] = []  # what only a destructive step releases
    held_here: list[tuple[PodFinding, list[str]]] = []  # what no step releases: finalizers
    for pod in pods:
        what, held = advice.disposition(pod, strategy)
        if what == advice.RESUMES:
            steps.append(
                _wait_step(
                    node, pod, f"{pod.controller} pod: never acted on; it resumes with the node"
                )
            )
        elif what == advice.COSMETIC:
            steps.append(_wait_step(node, pod, _cosmetic_why(pod)))
        elif what == advice.FINALIZER_HELD:
            steps.append(_finalizer_step(node, pod, held))
            held_here.append((pod, held))
        elif what == advice.REPLACEMENT_PROBLEM:
            steps.append(
                _wait_step(
                    node,
                    pod,
                    f"replaced, but {pod.replacement.summary}: freeing this pod does not help",
                )
            )
        elif not pod.terminating and pod.eviction_at is not None and not gate_ok:
            steps.append(
                _wait_step(
                    node,
                    pod,
                    f"eviction due {format_time(pod.eviction_at)}; then: {pod.replacement.summary}",
                )
            )
            blocked.append(pod)
        else:
            blocked.append(pod)
    # a pod that tolerates the out-of-service taint and is not Terminating stays under it (the
    # taint evicts it never, PodGC force-deletes only Terminating pods): force-deleted instead
    staying = [p for p in blocked if p.stays_under_out_of_service and not p.terminating]
    others = [p for p in blocked if not (p.stays_under_out_of_service and not p.terminating)]
    forced = [
        _force_step(
            node,
            p,
            "tolerates the out-of-service taint with no time limit, so the taint does not "
            f"evict it (PodGC force-deletes only Terminating pods): {p.replacement.summary}",
            gate_ok,
            gate,
            evidence,
            lease,
        )
        for p in staying
    ]
    if node.out_of_service:
        overdue = out_of_service_overdue(node)
        # past PodGC's time every pod the taint was for should be gone (Terminating ones
        # force-deleted, the others evicted first): those still here are force-deleted
        left = others if overdue is not None else []
        steps.append(
            Step(
                "wait",
                node.name,
                f"node/{node.name}",
                f"out-of-service taint set {overdue:.0f}s ago, and {len(left)} of the pods it "
                "was for are still here (an admission webhook or policy refused the eviction or "
                "PodGC's delete, or those controllers do not run: kube-controller-manager's log "
                "says which): force-deleted below"
                if left
                else "out-of-service taint already set: PodGC force-deletes the Terminating "
                "pods, NoExecute evicts the others that do not tolerate it, and volumes detach",
                True,
                "nothing to do",
                uid=node_uid,
                lease_renewed=lease,
            )
        )
        forced += [
            _force_step(
                node,
                p,
                "still here under the out-of-service taint past PodGC's time: "
                f"{p.replacement.summary}",
                gate_ok,
                gate,
                evidence,
                lease,
            )
            for p in left
        ]
        return steps + forced
    if not blocked:
        return steps
    if strategy == "out-of-service":
        # the taint also when it releases none of them: it detaches their volumes at once
        steps.append(_taint_step(node, node_uid, others, held_here, gate_ok, gate, evidence, lease))
        return steps + forced
    if strategy == "delete-node":
        step = _taint_step(node, node_uid, blocked, held_here, gate_ok, gate, evidence, lease)
        names = ", ".join(step.releases)
        steps.append(
            replace(
                step,
                action="delete-node",
                why=f"the machine is gone for good: PodGC removes every pod bound to it ({names})",
            )
        )
    else:
        steps += [
            _force_step(node, p, p.replacement.summary, gate_ok, gate, evidence, lease)
            for p in blocked
        ]
    return steps


def pod_facts(pod: PodFinding, held: bool = False) -> list[Premise]:
    """What a step's word about `pod` rests on: that object (UID), bound to the node, as it was
    read (its resourceVersion: every fact the diagnosis read of it is of that version)."""
    ref = f"Pod/{pod.namespace}/{pod.name}"
    out = [
        Premise(ref, "metadata.uid", pod.uid),
        Premise(ref, "spec.nodeName", pod.node),
        Premise(ref, "metadata.resourceVersion", pod.resource_version),
    ]
    return out + ([Premise(ref, "metadata.finalizers", list(pod.finalizers))] if held else [])


def _force_step(
    node: NodeFinding,
    pod: PodFinding,
    why: str,
    gate_ok: bool,
    gate: str,
    evidence: list[str],
    lease: str,
) -> Step:
    return Step(
        "force-delete-pod",
        node.name,
        f"pod/{pod.namespace}/{pod.name}",
        f"{pod.controller}: {why}",
        gate_ok,
        gate,
        evidence,
        uid=pod.uid,
        resource_version=pod.resource_version,
        lease_renewed=lease,
        releases=[f"{pod.namespace}/{pod.name} ({pod.controller})"],
        because=pod_facts(pod),
    )


def _taint_step(
    node: NodeFinding,
    node_uid: str,
    pods: list[PodFinding],
    held_here: list[tuple[PodFinding, list[str]]],
    gate_ok: bool,
    gate: str,
    evidence: list[str],
    lease: str,
) -> Step:
    """The out-of-service taint's step for these pods (a delete-node step is the same, with its
    own action and words)."""
    released = [f"{p.namespace}/{p.name} ({p.controller})" for p in pods]
    why = (
        f"releases {', '.join(released)}: PodGC force-deletes its Terminating pods, NoExecute "
        "evicts the rest (DaemonSet pods too, back when the taint is removed), volumes detach "
        "at once"
        if released
        else "releases none of the pods below (each tolerates it), but their volumes detach at "
        "once once they are gone"
    )
    return Step(
        "taint-out-of-service",
        node.name,
        f"node/{node.name}",
        why,
        gate_ok,
        gate,
        evidence,
        uid=node_uid,
        lease_renewed=lease,
        releases=released,
        leaves_stuck=[f"{p.namespace}/{p.name} ({', '.join(held)})" for p, held in held_here],
        because=[
            *[f for p in pods for f in pod_facts(p)],
            *[f for p, _ in held_here for f in pod_facts(p, held=True)],
        ],
    )


def check_attestations(snap: Snapshot, attested: Collection[str]) -> None:
    """Refuse the whole run (AttestationContradicted) if the state of a node contradicts an
    attestation typed for it: before any plan is made, whatever else the plan holds. Each
    attested node of the snapshot is judged, whether the plan's scope or report lists it or not
    (a Ready node is in no report); a name the snapshot lacks is the caller's to refuse."""
    by_name = {n["metadata"]["name"]: n for n in snap.nodes if n["metadata"]["name"] in attested}
    for name in sorted(attested):
        node = by_name.get(name)
        said = machine_ran(analyse_node(node, snap, snap.captured_at)) if node is not None else None
        if said:
            raise AttestationContradicted(
                f"{attestation.FLAG} {name}: refused, {said}",
                hint="check that machine again (console, power state, cloud instance state); "
                "nothing was done",
            )


def make_plan(report: Report, opts: Options) -> Plan:
    refusals: list[str] = []
    candidates = [n for n in report.nodes if not opts.only_nodes or n.name in opts.only_nodes]
    acting = [n for n in candidates if n.failed]
    # a plan-wide refusal only where it refuses something: a failed node in scope (removing a
    # stale out-of-service taint from a Ready node is not what a zone brake is about)
    refusal = _cluster_refusal(report, opts) if acting else None
    if refusal:
        refusals.append(refusal)
    if len(acting) > opts.max_nodes:
        refusals.append(
            f"{len(acting)} failed nodes in scope but at most {opts.max_nodes} per run "
            "(--max-nodes): name the nodes to act on, or raise the bound"
        )
        refusal = refusal or refusals[-1]
    steps: list[Step] = []
    for node in candidates:
        steps += _node_steps(node, report, opts, refusal)
    at = format_time(report.captured_at)
    return Plan(
        strategy=_strategy(opts),
        steps=steps,
        refusals=refusals,
        attested=sorted(opts.attested),
        attestations=[
            Attestation(node, opts.node_uids.get(node, ""), opts.attested_by, at)
            for node in sorted(opts.attested)
        ],
    )


def step_key(step: Step) -> tuple[str, str, str, str]:
    """What identifies a step across plans: the same action on the same object of one node."""
    return (step.action, step.target, step.node, step.uid)


def _missing(old: Step, fresh: Plan) -> str:
    """Why the live plan has no step matching a saved one."""
    same = [s for s in fresh.steps if s.target == old.target]
    if any(s.action == old.action and s.node == old.node for s in same):
        uid = next(s.uid for s in same if s.action == old.action)
        return f"{old.target} is another object now: UID {uid}, the saved plan's {old.uid}"
    if same:
        return f"the live plan has {same[0].action} on node {same[0].node} for {old.target}"
    return (
        f"the live plan has no {old.action} for {old.target} on node {old.node}: the object "
        "is gone, recreated or moved, or the node is Ready again"
    )


def _live_words(old: Step, fresh: Plan) -> Step:
    """What a saved step not in the live plan may still say of pods: only those the live plan
    finds stuck (the same entry in one of its steps), with the live plan's facts about them.
    A saved file's words about pods are never shown as they were written."""
    said = {r: s for s in fresh.steps for r in s.releases}
    held = {r: s for s in fresh.steps for r in s.leaves_stuck}
    releases = [r for r in old.releases if r in said]
    leaves = [r for r in old.leaves_stuck if r in held]
    refs = {"Pod/" + r.split(" ", 1)[0] for r in releases + leaves}
    facts = {(p.object, p.field): p for s in fresh.steps for p in s.because if p.object in refs}
    return replace(old, releases=releases, leaves_stuck=leaves, because=list(facts.values()))


def narrow(saved: Plan, fresh: Plan) -> Plan:
    """A saved plan checked against a plan computed from the live cluster now.

    A saved step runs only if the saved plan allowed it AND the fresh plan holds the same step
    (action, target, node, UID) and allows it now; it then carries the fresh plan's values
    (resourceVersion, lease renewal), so every gate is live state. Anything else is refused with
    the reason. Steps only the fresh plan has are not added: a saved plan narrows, never widens.
    """
    now = {step_key(s): s for s in fresh.steps}
    # a refused saved step names only the pods the live plan still finds stuck (a pod
    # recreated elsewhere, or on a node back, is not left stuck by it): _live_words
    steps: list[Step] = []
    for old in saved.steps:
        live = now.get(step_key(old))
        if not old.allowed:
            steps.append(
                _live_words(replace(old, gate=f"refused in the saved plan: {old.gate}"), fresh)
            )
        elif live is None and old.action not in MUTATING:
            steps.append(replace(old, why=f"{old.why} (no such step in the live plan now)"))
        elif live is None:
            steps.append(
                _live_words(
                    replace(old, allowed=False, gate=f"not allowed now ({_missing(old, fresh)})"),
                    fresh,
                )
            )
        elif not live.allowed and old.node in set(saved.attested) - set(fresh.attested):
            steps.append(
                replace(
                    old,
                    allowed=False,
                    gate=_not_retyped(saved, old.node),
                    releases=list(live.releases),
                    leaves_stuck=list(live.leaves_stuck),
                    because=list(live.because),
                )
            )
        elif not live.allowed:
            steps.append(
                replace(
                    old,
                    allowed=False,
                    gate=f"not allowed now ({live.gate})",
                    releases=list(live.releases),
                    leaves_stuck=list(live.leaves_stuck),
                    because=list(live.because),
                )
            )
        else:
            steps.append(replace(live))
    return Plan(
        strategy=saved.strategy,
        steps=steps,
        refusals=list(fresh.refusals),
        attested=list(fresh.attested),
        bound_to=fresh.bound_to,
        attestations=list(saved.attestations),
    )


def attestation_line(plan: Plan, record: Attestation) -> str:
    """How a recorded attestation is shown at replay, and whether it counts now."""
    counts = (
        "typed for this run: it counts"
        if record.node in plan.attested
        else f"NOT typed again for this run: its steps are refused ({attestation.flag()} "
        "once you have checked the machine is still off)"
    )
    return (
        f"This plan carries an attestation by {record.by} at {record.at} that {record.node} "
        f"is shut down; {counts}"
    )


def _not_retyped(saved: Plan, node: str) -> str:
    record = next((a for a in saved.attestations if a.node == node), None)
    who = f" by {record.by} at {record.at}" if record else ""
    return (
        f"the plan's attestation{who} that {node} is shut down was not typed again for this "
        f"run: check the machine is still off, then add {attestation.flag()}"
    )


def binding_problem(saved: Plan, live: Binding) -> str | None:
    """Why a saved plan must not run against this cluster (one line), or None: another
    context or server, another cluster behind them, a node recreated since, or no cluster."""
    was = saved.bound_to
    if was.source or not was.cluster_uid:
        origin = f"from the dump {was.source}" if was.source else "without a cluster identity"
        return f"it was computed {origin}, so it is bound to no cluster: plan against the cluster"
    if (was.context, was.server) != (live.context, live.server):
        return (
            f"it was made for context {was.context!r} (server {was.server}), and this is "
            f"context {live.context!r} (server {live.server})"
        )
    if was.cluster_uid != live.cluster_uid:
        return (
            f"it was made for another cluster behind this context and server: namespace "
            f"kube-system has UID {live.cluster_uid or '(unread)'} here, {was.cluster_uid} in "
            "the plan"
        )
    planned = dict(was.node_uids)
    planned.update({a.node: a.node_uid for a in saved.attestations})
    for node, uid in sorted(planned.items()):
        now = live.node_uids.get(node)
        if uid and now and now != uid:
            return (
                f"node {node} is another object now (UID {now}, the plan's {uid}): it was "
                "deleted and recreated since the plan, which (with any attestation in it) was "
                "about the old one"
            )
    return None
