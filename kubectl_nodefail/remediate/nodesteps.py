"""One node's steps and their gates: from the diagnosis of a node and the Options (strategy,
attestations, bounds), the ordered steps on it, each allowed or refused with what would unlock
it. Pure planning: nothing here touches the cluster (plan.py makes a Plan of every node's steps).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace

from kubectl_nodefail.analysis import advice, automation, versions
from kubectl_nodefail.analysis import brake as brakes
from kubectl_nodefail.analysis.advice import JOB_TRACKING_FINALIZER
from kubectl_nodefail.analysis.claims import Premise, once
from kubectl_nodefail.analysis.findings import NodeFinding, PodFinding, Report
from kubectl_nodefail.analysis.machine import machine_ran, out_of_service_overdue
from kubectl_nodefail.common import attestation
from kubectl_nodefail.remediate.steps import Step
from kubectl_nodefail.snapshot.model import format_time


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


def _said(pod: PodFinding, *sections: str) -> list[Premise]:
    """The facts of what the diagnosis said of the pod in these sections (its claims'
    premises): what a step's words about the pod are worded from."""
    return [f for c in pod.claims if c.section in sections for f in c.because]


def _wait_step(node: NodeFinding, pod: PodFinding, why: str, *sections: str) -> Step:
    """A pod no step acts on, and why, worded from its claims in `sections`."""
    return Step(
        "wait",
        node.name,
        f"pod/{pod.namespace}/{pod.name}",
        why,
        True,
        "nothing to do",
        uid=pod.uid,
        because=once([*pod_facts(pod), *_said(pod, *sections)]),
    )


def _sweep(
    pods: list[PodFinding], strategy: str
) -> tuple[list[PodFinding], list[tuple[PodFinding, list[str]]]]:
    """Pods a node step removes though none needs releasing (DaemonSet and static pods, and
    under delete-node the harmless ones): (those it releases, those finalizers keep after its
    delete, with them; audit 2042/158, 170: cosmetic pods with a finalizer, said released by
    deleting the Node, stayed)."""
    released: list[PodFinding] = []
    kept: list[tuple[PodFinding, list[str]]] = []
    for pod in pods:
        held = advice.holding_finalizers(
            pod.finalizers, pod.terminating, strategy, pod.waits_for_failed
        )
        if held:
            kept.append((pod, held))
        else:
            released.append(pod)
    return released, kept


def _evicted_by_taint(pod: PodFinding) -> bool:
    """The out-of-service taint removes this pod: it does not tolerate the taint, or it is
    Terminating (PodGC force-deletes those on an out-of-service node)."""
    return pod.terminating or not pod.stays_under_out_of_service


def _resume_step(node: NodeFinding, pod: PodFinding, tainted: bool) -> Step:
    """A DaemonSet or static pod no step of this plan acts on. `tainted`: the node carries the
    out-of-service taint already."""
    kind = f"{pod.controller} pod"
    if tainted and _evicted_by_taint(pod):
        why = (
            f"{kind}: the out-of-service taint on the node removes it (evicted, then "
            "force-deleted by PodGC); nothing waits on it"
        )
    elif pod.terminating:
        why = (
            f"{kind}: its deletion was asked; nothing waits on it: the kubelet finishes it "
            "when the node returns"
        )
    elif tainted or pod.stays_under_out_of_service:
        why = (
            f"{kind}: tolerates the out-of-service taint, never acted on; it resumes with the node"
        )
    else:
        why = f"{kind}: never acted on; it resumes with the node"
    return _wait_step(node, pod, why, "why", "eviction")


def _cosmetic_why(pod: PodFinding) -> tuple[str, str]:
    """Why a stuck pod needs nothing, and the section of its claims that says so."""
    if pod.phase in ("Succeeded", "Failed"):
        return f"finished ({pod.phase}) before its deletion: nothing waits on it", "why"
    if pod.replacement.state == "not-wanted":
        return (
            f"not wanted by its owner ({pod.replacement.summary}); the stuck object is cosmetic",
            "replacement",
        )
    return "replaceable: the replacement already runs; the stuck object is cosmetic", "replacement"


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
        because=pod_facts(pod, held=True),
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
                because=list(node.cause.because),
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
    ran = machine_ran(node)
    attest = (
        f"{ran}, so an attestation that it is shut down would be refused: fix what keeps it "
        "from reporting Ready, or wait for it"
        if ran
        else "no evidence the machine is down (a silent kubelet may still run its pods). "
        f"Check the machine of {node.name} (console, power state, cloud instance state); only "
        f"if it is off, re-run with {attestation.flag()}, typing the node's name yourself"
    )
    # every lock at once: one lifted, the next is not a surprise on the following run
    unlock = (
        f"{refusal.rstrip('.')}. Also {attest}" if refusal and not evidence else refusal or attest
    )
    gate = "shutdown confirmed: " + "; ".join(evidence) if gate_ok else unlock
    if gate_ok and opts.despite_automation:  # said, never counted as evidence
        gate = "; ".join([gate, *_raced(node, report, opts)])
    blocked: list[PodFinding] = []  # what only a destructive step releases
    held_here: list[tuple[PodFinding, list[str]]] = []  # what no step releases: finalizers
    resumes: list[PodFinding] = []  # DaemonSet and static pods: worded once the steps are known
    harmless: list[PodFinding] = []  # nothing needs them released; a deleted Node removes them
    for pod in pods:
        what, held = advice.disposition(pod, strategy)
        if what == advice.RESUMES:
            resumes.append(pod)
        elif what == advice.COSMETIC:
            why, section = _cosmetic_why(pod)
            steps.append(_wait_step(node, pod, why, section))
            harmless.append(pod)
        elif what == advice.FINALIZER_HELD:
            steps.append(_finalizer_step(node, pod, held))
            held_here.append((pod, held))
        elif what == advice.REPLACEMENT_PROBLEM:
            why = (
                f"bound to this node by {pod.bound_here}'s template (spec.nodeName): freeing "
                "it only makes another pod here, which does not start while the node is down"
                if pod.bound_here
                else f"replaced, but {pod.replacement.summary}: freeing this pod does not help"
            )
            steps.append(_wait_step(node, pod, why, "replacement"))
            harmless.append(pod)
        elif not pod.terminating and pod.eviction_at is not None and not gate_ok:
            steps.append(
                _wait_step(
                    node,
                    pod,
                    f"eviction due {format_time(pod.eviction_at)}; then: {pod.replacement.summary}",
                    "eviction",
                    "replacement",
                )
            )
            blocked.append(pod)
        else:
            blocked.append(pod)
    # pods elsewhere waiting for a volume still attached here: the taint detaches it at once
    waiting = (
        [p for p in report.pods if node.name in p.held_by]
        if strategy == "out-of-service" and not node.out_of_service
        else []
    )
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
    if strategy == "delete-node":
        # PodGC deletes every pod bound to a Node that no longer exists, whatever it tolerates
        # or whoever owns it (DaemonSet and static pods too): the step is what was asked for,
        # also when none of them needs releasing. Refused, it names only what stays stuck.
        extra, kept = _sweep([*resumes, *harmless] if gate_ok else [], strategy)
        steps += [] if gate_ok else [_resume_step(node, p, node.out_of_service) for p in resumes]
        steps += [
            _finalizer_step(node, p, held)
            for p, held in kept
            if p.controller in advice.RESUMING_KINDS
        ]
        step = _taint_step(
            node, node_uid, [*blocked, *extra], [*held_here, *kept], gate_ok, gate, evidence, lease
        )
        names = ", ".join(step.releases) or "none of its stuck pods"
        return [
            *steps,
            replace(
                step,
                action="delete-node",
                why=f"the machine is gone for good: PodGC deletes every pod bound to it, which "
                f"releases {names}"
                + (
                    "; a DaemonSet or static pod comes back only if the node registers again"
                    if resumes and gate_ok
                    else ""
                ),
            ),
        ]
    # the out-of-service taint evicts a DaemonSet or static pod that does not tolerate it (and
    # PodGC force-deletes it once Terminating): a taint step planned now releases it too (a
    # refused one leaves it as it is)
    tainting = strategy == "out-of-service" and bool(blocked or waiting) and gate_ok
    tainting = tainting and not node.out_of_service
    swept, kept = _sweep([p for p in resumes if tainting and _evicted_by_taint(p)], strategy)
    held_here += kept
    steps += [_finalizer_step(node, p, held) for p, held in kept]
    acted = {id(p) for p in swept} | {id(p) for p, _ in kept}
    steps += [_resume_step(node, p, node.out_of_service) for p in resumes if id(p) not in acted]
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
                because=once([*node.cause.because, *[f for p in left for f in pod_facts(p)]]),
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
    if not blocked and not waiting:
        return steps
    if strategy == "out-of-service":
        # the taint also when it releases none of them: it detaches their volumes at once
        steps.append(
            _taint_step(
                node,
                node_uid,
                [*others, *swept],
                held_here,
                gate_ok,
                gate,
                evidence,
                lease,
                waiting,
            )
        )
        return steps + forced
    return steps + [
        _force_step(node, p, p.replacement.summary, gate_ok, gate, evidence, lease) for p in blocked
    ]


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
        # the pod as read, what its why is worded from, and what its gate rests on
        because=once(
            [
                *pod_facts(pod),
                *_said(pod, "replacement", "eviction"),
                *node.cause.because,
            ]
        ),
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
    waiting: list[PodFinding] | None = None,
) -> Step:
    """The out-of-service taint's step for these pods (a delete-node step is the same, with its
    own action and words), and for `waiting`: pods on other nodes waiting for a volume still
    attached here, which the taint detaches at once (they are not this node's: not in
    `releases`, which the executor watches go)."""
    released = [f"{p.namespace}/{p.name} ({p.controller})" for p in pods]
    waiting = waiting or []
    elsewhere = ", ".join(f"{p.namespace}/{p.name} (on {p.node})" for p in waiting)
    why = (
        f"releases {', '.join(released)}: PodGC force-deletes its Terminating pods, NoExecute "
        "evicts the rest (DaemonSet pods too, back when the taint is removed), volumes detach "
        "at once"
        if released
        else f"detaches at once the volumes attached here that {elsewhere} wait for"
        if waiting
        else "releases none of the pods below (each tolerates it), but their volumes detach at "
        "once once they are gone"
    )
    if released and waiting:
        why += f", those {elsewhere} wait for too"
    # a held pod that tolerates the taint keeps running, and its volumes attached (audit 2064);
    # a held pod the taint evicts, or one Terminating, PodGC marks Failed, and its volumes
    # detach (e2e test_storage)
    running = [p for p, _ in held_here if p.storage and p.stays_under_out_of_service]
    running = [p for p in running if not p.terminating]
    if running:
        names = ", ".join(f"{p.namespace}/{p.name}" for p in running)
        why += f"; the volumes of {names} stay attached: tolerating the taint, they keep running"
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
            *[f for p in running for f in _said(p, "eviction", "storage")],
            *[f for p in waiting for f in _said(p, "why")],  # the attachments they wait for
            *node.cause.because,  # what the gate rests on (the node's state, its shutdown)
        ],
    )
