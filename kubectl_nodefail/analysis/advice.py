"""The suggested fix for a node, with its risk and the exact commands, and the decision every
suggestion shares: what becomes of a pod on a failed node (`disposition`) and the finalizers
that hold it, the remediate command a suggestion shows (with the attestation), the brake
(`braked`) and what a suggestion rests on (`rests_on`). A pod's suggestion: pod_advice.py.
"""

from __future__ import annotations

from kubectl_nodefail.analysis import automation, brake, versions
from kubectl_nodefail.analysis.claims import Claim, Premise, once
from kubectl_nodefail.analysis.findings import Action, NodeFinding, PodFinding
from kubectl_nodefail.analysis.machine import kubelet_alive, machine_ran, out_of_service_overdue
from kubectl_nodefail.analysis.nodes import nothing_marks
from kubectl_nodefail.analysis.text import duration, plural
from kubectl_nodefail.common import attestation


def remediate_cmd(node: str, *extra: str) -> str:
    """A remediate command that only plans: the human adds --confirm, and types the
    attestation in place of its placeholder (attestation.flag())."""
    return " ".join(["kubectl nodefail remediate", node, *extra])


# Finalizers Kubernetes' own controllers add to pods, and who removes them.
KNOWN_FINALIZERS = {
    "batch.kubernetes.io/job-tracking": "the Job controller, once it has counted the pod",
}
REPLICA_KINDS = ("deployment", "replicaset", "replicationcontroller")
# The conditions the kubelet's eviction manager acts on (pkg/kubelet/eviction: memory, disk and
# PID signals); node-problem-detector's (KernelDeadlock, ...) make it evict nothing.
KUBELET_EVICTS_UNDER = ("MemoryPressure", "DiskPressure", "PIDPressure")


def finalizer_owner(finalizer: str) -> str:
    """Who has to remove a finalizer: a known in-tree controller, or the one named by its
    domain prefix (by convention a finalizer is named after the controller that sets it)."""
    if finalizer in KNOWN_FINALIZERS:
        return KNOWN_FINALIZERS[finalizer]
    domain = finalizer.split("/", 1)[0] if "/" in finalizer else finalizer
    return f"the controller that set it ({domain})"


def foreign_finalizers(finalizers: list[str]) -> list[str]:
    """Finalizers no Kubernetes controller removes on its own when a node fails."""
    return [f for f in finalizers if f not in KNOWN_FINALIZERS]


def finalizer_note(finalizers: list[str]) -> str:
    """Names every finalizer and who removes it; empty when there is none."""
    if not finalizers:
        return ""
    known = [f for f in finalizers if f in KNOWN_FINALIZERS]
    foreign = foreign_finalizers(finalizers)
    parts = []
    if foreign:
        who = "; ".join(f"{f}: removed by {finalizer_owner(f)}" for f in foreign)
        parts.append(
            f"finalizers keep the object until removed ({who}); neither a force delete nor the "
            "out-of-service taint removes them. Remove one by hand only if that controller is "
            "gone"
        )
    if known:
        parts.append("; ".join(f"finalizer {f} is removed by {finalizer_owner(f)}" for f in known))
    return ". ".join(parts)


JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
JOBS = ("job", "cronjob")


def default_strategy(server_minor: int | None) -> str:
    """What `remediate` does without --strategy: the out-of-service taint where the server
    has it, else force deletion."""
    return "out-of-service" if versions.out_of_service_usable(server_minor) else "force-delete"


def holding_finalizers(
    finalizers: list[str], terminating: bool, strategy: str, waits_for_failed: bool = False
) -> list[str]:
    """The finalizers that keep a pod's object after this strategy's (force) deletion.

    Every finalizer holds a force-deleted object until whoever added it removes it, with one
    exception: the Job controller's tracking finalizer. It goes once the Job counts the pod as
    failed: at its deletion under podReplacementPolicy TerminatingOrFailed (the default), so a
    pod still carrying it while Terminating belongs to a Job that waits for phase Failed, as
    does one whose Job has podReplacementPolicy Failed (`waits_for_failed`; audit 2038/140:
    force-deleted, it stayed until its node returned); PodGC (out-of-service, delete-node) sets
    phase Failed before force-deleting, which releases both.
    """
    releasing = strategy in ("out-of-service", "delete-node") or not (
        terminating or waits_for_failed
    )
    return [f for f in finalizers if not (f == JOB_TRACKING_FINALIZER and releasing)]


# What becomes of a pod on a failed node: the one decision diagnose advises on and remediate
# plans from (plan.py acts on it; for_pod words it).
RESUMES = "resumes"  # DaemonSet and static pods: never acted on, back with the node
RESUMING_KINDS = ("daemonset", "mirror")
COSMETIC = "cosmetic"  # nothing needs it: replaced, not wanted, or finished
FINALIZER_HELD = "finalizer-held"  # finalizers keep it whatever this tool does
REPLACEMENT_PROBLEM = (
    "replacement-problem"  # replaced by a pod that cannot run: freeing it won't help
)
RELEASE = (
    "release"  # only the kubelet, the out-of-service taint, a force delete or deleting the Node
)


def disposition(pod: PodFinding, strategy: str) -> tuple[str, list[str]]:
    """(what becomes of the pod, the finalizers that hold it under `strategy`)."""
    held = holding_finalizers(pod.finalizers, pod.terminating, strategy, pod.waits_for_failed)
    if pod.controller in RESUMING_KINDS:
        # back with its node, unless finalizers keep a deleted DaemonSet pod's object even then
        # (a static pod's object is its kubelet's mirror: no finalizer of its own holds it)
        held = held if pod.controller == "daemonset" else []
        return (FINALIZER_HELD, held) if held else (RESUMES, [])
    finished = pod.terminating and pod.phase in ("Succeeded", "Failed")
    if finished:
        return (FINALIZER_HELD, held) if held else (COSMETIC, [])
    state = pod.replacement.state
    if not pod.storage:
        if state == "not-wanted" or (pod.controller in REPLICA_KINDS and state == "running"):
            return COSMETIC, []
        if pod.controller in JOBS and state in ("running", "finished"):
            return COSMETIC, []
        if pod.controller in JOBS and pod.terminating and state == "not-yet":
            # its Job already replaces it; only its pod-failure backoff delays the new pod
            return COSMETIC, []
    if held:
        return FINALIZER_HELD, held
    if pod.bound_here:  # every pod its owner makes is bound to this failed node
        return REPLACEMENT_PROBLEM, []
    if (
        pod.terminating
        and not pod.storage
        and (pod.controller in REPLICA_KINDS or pod.controller in JOBS)
        and state in ("pending", "missing")
    ):
        return REPLACEMENT_PROBLEM, []
    return RELEASE, []


# How a suggestion offers to delete the Node object (by hand, or by remediate): PodGC then
# force-deletes every pod bound to it, so the brake's caveat comes first.
OFFERS_NODE_DELETE = "delete the Node"


def _destructive(action: Action) -> bool:
    """The suggestion takes or offers a step remediate counts as destructive: the
    out-of-service taint, a force delete, a Node delete (its command, or its words: "wait for
    the kubelet, or delete the Node object if the machine is gone for good"), or one that needs
    the shutdown attested."""
    return (
        action.code in ("out-of-service", "force-delete")
        or attestation.FLAG in action.remediate
        or "--strategy delete-node" in action.remediate
        or OFFERS_NODE_DELETE in action.summary
    )


def braked(action: Action, brake_claim: Claim | None, takes_step: bool = False) -> Action:
    """While the brake holds (analysis/brake.py) remediate refuses every destructive step, so a
    suggestion that takes one says that first. Its command stays as it was: pasted, it plans and
    shows the refusal; the override is for the human to type once the wide cause is ruled out,
    like the attestation. A waiting suggestion stays one. `takes_step`: the caller knows its
    command plans a destructive step (a pod remediate must release, whatever the command
    shows: on a node with shutdown evidence it carries no attestation)."""
    if brake_claim is None or not (takes_step or _destructive(action)):
        return action
    return Action(
        "wait" if action.code == "wait" else "investigate",
        f"{brake.advice(brake_claim)}. Then: {action.summary}",
        action.risk,
        kubectl=action.kubectl,
        remediate=action.remediate,
        until=action.until,
        if_still_running=action.if_still_running,
        because=[*action.because, *brake_claim.because],
    )


def _unlock(node: NodeFinding) -> tuple[str, ...]:
    """The attestation a suggested remediate command shows (with its placeholder), or none: not
    when the node has shutdown evidence already, nor when its state says the machine ran after
    the failure began (remediate refuses that attestation: machine.machine_ran), nor while its
    kubelet reports (a live kubelet posted the not-Ready status: the machine runs)."""
    if node.shutdown_evidence or machine_ran(node):
        return ()
    if kubelet_alive(node):  # it reports: the machine runs (a Ready=False the kubelet posted)
        return ()
    return (attestation.flag(),)


def for_node(
    node: NodeFinding,
    server_minor: int | None,
    pods: list[PodFinding] | None = None,
    brake_claim: Claim | None = None,
    volume_waiters: list[PodFinding] | None = None,
) -> Action:
    """The node's advice (`_for_node`), under the brake when it holds and the node failed (a
    Ready node's stale taint is not what the brake is about: plan.make_plan). `waiting`: pods
    elsewhere waiting for a volume still attached to it (PodFinding.held_by)."""
    action = _for_node(node, server_minor, pods, volume_waiters or [])
    action.because = _node_facts(node, action)
    return braked(action, brake_claim) if node.failed else action


CAUSE = "cause"  # in an action's rests_on: its node's cause (nodes[].cause, with its facts)


def _node_facts(node: NodeFinding, action: Action) -> list[Premise]:
    """What a node's suggestion rests on: the facts of its cause (Ready, the lease, the taints
    and annotations that say it is shut down or out of service, problem conditions) and its own
    (the claim of the automation it waits for); each once."""
    return once([*node.cause.because, *action.because])


def rests_on(action: Action, claims: list[Claim], node: NodeFinding | None = None) -> Action:
    """A pod's suggestion is decided from what its claims state (its status, owner, replacement,
    eviction time, volumes; `disposition` and the waits read nothing else) and from its node's
    cause (the kubelet alive, the shutdown evidence): it names them (`rests_on`: their kinds,
    `cause` for the node's) rather than copying their facts into every pod's answer; its own
    facts (the brake's) stay in `because`. What happens if the node returns decides nothing,
    so is left out."""
    kinds = [c.kind for c in claims if c.section != "returns"]
    if node is not None:
        kinds.append(CAUSE)
    action.rests_on = list(dict.fromkeys(kinds))
    return action


def _for_node(
    node: NodeFinding,
    server_minor: int | None,
    pods: list[PodFinding] | None = None,
    volume_waiters: list[PodFinding] | None = None,
) -> Action:
    """The node's advice. `pods`: its stuck pods; the out-of-service taint is suggested only
    where one of them needs releasing, or a pod elsewhere (`volume_waiters`) a volume attached
    here that it detaches at once (remediate plans it only then)."""
    strategy = default_strategy(server_minor)
    releasing = [p for p in pods or [] if disposition(p, strategy)[0] == RELEASE]
    releasing += volume_waiters or []
    if node.stale_out_of_service:
        return Action(
            "remove-out-of-service",
            "the node is Ready again: remove the out-of-service "
            "taint (Kubernetes never removes it by itself)",
            "low",
            remediate=remediate_cmd(node.name),
        )
    if node.cause.code == "no-controller-leader":
        return Action(
            "investigate",
            "bring kube-controller-manager back first (its pods or service on the control plane, "
            "its log): while it has no leader no controller runs, so no node is marked NotReady "
            "or tainted, no pod evicted or replaced, no volume force-detached; then check this "
            "machine, whose kubelet stopped renewing its lease",
            "none",
        )
    if node.cause.code == "lease-not-renewed" and nothing_marks(node.cause):
        return Action(
            "investigate",
            "check this machine, whose kubelet stopped renewing its lease: if it is gone, "
            "nothing marks the node NotReady, taints it or evicts its pods while the node "
            "lifecycle controller does not run (the cause says what shows it): start it "
            "(kube-controller-manager's --controllers)",
            "none",
        )
    if node.cause.code == "lease-not-renewed":
        return Action(
            "wait",
            "nothing to do yet: unless the kubelet renews its lease, the node lifecycle "
            "controller marks the node NotReady (Ready Unknown) as the cause says, taints it "
            "unreachable, and its pods are evicted after their tolerations (300 s by default); "
            "check the machine meanwhile",
            "none",
        )
    if node.cause.code == "lease-overdue":
        return Action(
            "investigate",
            "find out why the node lifecycle controller has not marked it (kube-controller-"
            "manager's --node-monitor-grace-period and --controllers, its log); check this "
            "machine, whose kubelet stopped renewing its lease",
            "none",
        )
    if node.cause.code == "healthy":
        return Action("wait", "the kubelet is reporting again", "none")
    if node.cause.code == "kubelet-returning":
        return Action(
            "wait",
            "the kubelet renews its lease again: wait for it to post node status (if Ready "
            "stays Unknown, the kubelet cannot update its Node: check its log)",
            "none",
        )
    if node.cause.code == "conditions":
        pressed = sorted(
            {c.type for c in node.conditions if c.problem and c.type in KUBELET_EVICTS_UNDER}
        )
        return Action(
            "investigate",
            (
                "the node is Ready but reports trouble: relieve the pressure "
                f"({', '.join(pressed)}: the kubelet evicts pods to relieve it) or fix what else "
                "its conditions report"
                if pressed
                else "the node is Ready but reports trouble: fix what its conditions report "
                "(node-problem-detector's; the kubelet evicts no pod for them)"
            ),
            "none",
            kubectl=f"kubectl describe node {node.name}",
        )
    if node.cause.code == "no-ready-condition":
        return Action(
            "investigate",
            "no kubelet has posted status for this node yet: if it was just created, wait "
            "(the node lifecycle controller marks it Ready=Unknown after "
            "--node-startup-grace-period, 1 minute by default); else check that its machine "
            "exists and its kubelet registers under this name; nothing to force",
            "none",
            kubectl=f"kubectl describe node {node.name}",
        )
    waiting = _automation_wait(node)
    if waiting is not None:
        return waiting
    oos_ok = versions.out_of_service_usable(server_minor)
    if node.out_of_service:
        late = out_of_service_overdue(node)
        # finalizers keep a force-deleted object: not PodGC's failure (each pod says so)
        left = [
            p
            for p in pods or []
            if p.terminating and not holding_finalizers(p.finalizers, True, "out-of-service")
        ]
        if late is not None and left:
            return Action(
                "investigate",
                f"out-of-service taint set {duration(late)} ago, past PodGC's time to "
                f"force-delete its Terminating pods, and {plural(len(left), 'pod')} not held by "
                "finalizers still here (an "
                "admission webhook or policy refused the deletes, or the podgc controller "
                "does not run: kube-controller-manager's log says which): see each pod's "
                "suggestion; remove the taint once the node is back",
                "none",
            )
        return Action(
            "wait",
            "out-of-service taint set: its pods are being force-deleted and volumes detached"
            + (
                " (the taint has no timeAdded: when it was added is not recorded; Terminating "
                "pods not held by finalizers still here a minute after it were not removed by "
                "PodGC: see each pod's suggestion)"
                if node.out_of_service_seconds is None
                else ""
            )
            + "; remove the taint once the node is back",
            "none",
        )
    if node.shutdown_evidence and oos_ok and pods is not None and not releasing:
        return Action(
            "wait",
            "the machine is shut down, but none of its pods needs the out-of-service taint "
            "(each is replaced, not wanted, finished, held by finalizers or resumes with the "
            "node): delete the Node object if the machine is gone for good",
            "low",
            remediate=remediate_cmd(node.name, "--strategy delete-node"),
        )
    if node.shutdown_evidence and oos_ok:
        return Action(
            "out-of-service",
            "machine is shut down: apply the out-of-service taint",
            "low",
            remediate=remediate_cmd(node.name),
        )
    if (
        node.cause.code in ("kubelet-stopped", "never-registered")
        and pods is not None
        and (not releasing)
    ):
        return Action(
            "investigate",
            "check the machine (console, power state). None of its pods needs forcing (each is "
            "replaced, not wanted, finished, held by finalizers, resumes with the node or waits "
            "for eviction with a replacement to come): wait for the kubelet, or delete the Node "
            "object if the machine is gone for good",
            "none",
        )
    ran = machine_ran(node)
    if node.cause.code in ("kubelet-stopped", "never-registered") and ran:
        return Action(
            "investigate",
            f"check the machine (console, power state): {ran}, so an attestation that it is "
            "shut down is refused; wait for the kubelet, or delete the Node object if the "
            "machine is gone for good",
            "none",
        )
    if node.cause.code in ("kubelet-stopped", "never-registered"):
        return Action(
            "investigate",
            "check the machine (console, power state): if it is powered off, "
            "attest it and let remediate apply the out-of-service taint; if it is gone for good, "
            "delete the Node object",
            "high",
            remediate=remediate_cmd(node.name, *_unlock(node)),
            if_still_running=attestation.IF_STILL_RUNNING,
        )
    return Action(
        "investigate",
        "the kubelet is alive and reports a problem: fix it on the node "
        "(runtime, CNI, disk); do not force anything",
        "none",
    )


def _automation_wait(node: NodeFinding) -> Action | None:
    """Waiting, when an automation remediates the node now or has a time to (a time known, not
    one resting on settings the API does not show): acting as well would race it (remediate
    stands back; analysis/automation/)."""
    acting = [
        c
        for c in node.automation
        if c.state in (automation.ACTING, automation.DUE)
        or (c.state == automation.SCHEDULED and not c.assumed)  # not on a guess
    ]
    if not node.failed or node.out_of_service or not acting:
        return None
    first = min(acting, key=lambda c: (c.state == automation.SCHEDULED, c.at is None))
    last = first.claims[-1].text if first.claims else first.summary
    return Action(
        "wait",
        f"{first.automation} covers it: {last}. Let it act: remediate stands back from a node "
        "its automation remediates now or soon; acting as well would race it",
        "none",
        until=first.at if first.state == automation.SCHEDULED else None,
        because=list(first.claims[-1].because) if first.claims else [],
    )
