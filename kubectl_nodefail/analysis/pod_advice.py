"""The suggested fix for a pod, with its risk and the exact commands: one on or from a failed
node (`for_pod`, wording advice.disposition), and one elsewhere waiting for a volume still
attached to a failed node (`for_waiting_pod`)."""

from __future__ import annotations

from datetime import datetime

from kubectl_nodefail.analysis.advice import (
    COSMETIC,
    FINALIZER_HELD,
    JOBS,
    RELEASE,
    REPLACEMENT_PROBLEM,
    REPLICA_KINDS,
    _unlock,
    braked,
    disposition,
    finalizer_note,
    finalizer_owner,
    remediate_cmd,
)
from kubectl_nodefail.analysis.claims import Claim
from kubectl_nodefail.analysis.eviction import EvictionTime
from kubectl_nodefail.analysis.findings import Action, NodeFinding, PodFinding, Replacement
from kubectl_nodefail.analysis.machine import kubelet_alive, out_of_service_overdue
from kubectl_nodefail.analysis.text import duration
from kubectl_nodefail.common import attestation
from kubectl_nodefail.snapshot.model import format_time

# An eviction further away than this is not waited for: the suggestion is to free the pod (once
# the machine is confirmed off), with the eviction's time said. The default toleration (300 s)
# is waited for.
LONG_WAIT_SECONDS = 900


def _with_finalizers(action: Action, finalizers: list[str]) -> Action:
    note = finalizer_note(finalizers)
    if note:
        action.summary = f"{action.summary}. Then: {note}"
    return action


def for_pod(
    pod: PodFinding,
    node: NodeFinding | None,
    eviction: EvictionTime | None,
    holds_rwo: bool,
    strategy: str,
    brake_claim: Claim | None = None,
    now: datetime | None = None,
) -> Action:
    """The pod's suggestion (`_for_pod`), under the brake when it holds: any command of it
    that plans for a pod on a failed node that only a destructive step releases is refused."""
    action = _for_pod(pod, node, eviction, holds_rwo, strategy, now)
    releases = bool(node and node.failed) and disposition(pod, strategy)[0] == RELEASE
    # (a wait, say for the eviction, stays what it is: waiting takes no step)
    takes_step = releases and bool(action.remediate) and action.code != "wait"
    return braked(action, brake_claim, takes_step=takes_step)


def _for_pod(
    pod: PodFinding,
    node: NodeFinding | None,
    eviction: EvictionTime | None,
    holds_rwo: bool,
    strategy: str,
    now: datetime | None = None,
) -> Action:
    kind, namespace, name = pod.controller, pod.namespace, pod.name
    terminating, replacement, finalizers = pod.terminating, pod.replacement, pod.finalizers
    if node is None or not node.failed:
        return _elsewhere(namespace, name, finalizers)
    if kind == "mirror":
        return Action(
            "none-possible",
            "nothing via the API: fix or power off the node; the kubelet owns this static pod",
            "none",
        )
    what, held = disposition(pod, strategy)
    if kind == "daemonset" and what != FINALIZER_HELD:
        return Action(
            "wait",
            (
                "nothing to do: its deletion was asked, and the kubelet finishes it when the "
                "node returns"
                if terminating
                else "nothing to do: it resumes when the node returns"
            )
            + " (delete the Node if the machine is gone for good)",
            "none",
            remediate=remediate_cmd(node.name),
        )
    if what == FINALIZER_HELD:
        who = "; ".join(f"{f}: removed by {finalizer_owner(f)}" for f in held)
        ask = "find out why that controller has not removed them"
        if not terminating:  # whoever set them removes them once the deletion is asked
            return Action(
                "finalizer-held",
                f"its finalizers ({who}) outlast any deletion: it is not being deleted yet, "
                "and once it is (evicted, the out-of-service taint, a force delete), the "
                "object stays until that controller removes them, so nothing remediate does "
                "releases it; check that the controller runs",
                "none",
            )
        if pod.phase not in ("Succeeded", "Failed"):
            tail = f"; {ask}"
        elif pod.replacement.state == "blocked":  # a StatefulSet's name, a foreground deletion
            tail = (
                f". It had finished ({pod.phase}), but its owner waits for the object to go; {ask}"
            )
        else:
            tail = f". It had finished ({pod.phase}): nothing waits on it"
        return Action(
            "finalizer-held",
            f"held by finalizers ({who}): neither the out-of-service taint nor a force delete "
            f"removes the object, so nothing remediate does releases it{tail}",
            "none",
        )
    if what == COSMETIC:
        if pod.phase in ("Succeeded", "Failed"):
            lead = f"it had finished ({pod.phase}): nothing waits on it"
        elif replacement.state == "not-wanted":
            lead = f"cosmetic: no replacement is wanted ({replacement.summary})"
        elif replacement.state == "not-yet":
            lead = f"cosmetic: the owner replaces it by itself ({replacement.summary})"
        else:
            lead = "cosmetic: the replacement already serves"
        return _with_finalizers(
            Action(
                "wait",
                f"{lead}. Clean up when the node returns, or delete the Node object if the "
                "machine is gone for good",
                "low",
                remediate=remediate_cmd(
                    node.name,
                    "--strategy delete-node",
                    *_unlock(node),
                ),
                if_still_running="" if node.shutdown_evidence else attestation.IF_STILL_RUNNING,
            ),
            finalizers,
        )
    if kubelet_alive(node) and not node.shutdown_evidence:
        return _with_finalizers(
            Action(
                "investigate",
                f"the kubelet is alive and reports the node not Ready ({node.cause.summary}): "
                "fix that on the node, and the kubelet finishes what is pending; do not force "
                "anything while the machine runs "
                + (
                    "(nothing recreates a bare pod: a forced one is lost)"
                    if kind == "bare"
                    else "(a second copy would start)"
                ),
                "none",
                kubectl=f"kubectl describe node {node.name}",
            ),
            finalizers,
        )
    if what == REPLACEMENT_PROBLEM and pod.bound_here:
        return Action(
            "investigate",
            f"every pod of {pod.bound_here} is bound to {node.name} by its template's "
            "spec.nodeName: freeing this one only makes another there, which does not start "
            "while the node is down. Bring the node back, or remove spec.nodeName from the "
            "template (the scheduler then places its pods); deleting pods will not help",
            "low",
            kubectl=f"kubectl get {pod.bound_here.lower()} -n {namespace} -o yaml",
        )
    if what == REPLACEMENT_PROBLEM:
        return _replacement_problem(namespace, name, replacement)
    if not terminating:
        action = _not_evicted(
            kind, node, replacement, eviction, holds_rwo, pod.stays_under_out_of_service, now
        )
    else:
        action = _terminating(kind, namespace, name, node, holds_rwo, bool(replacement.pods))
    return _with_finalizers(action, finalizers)


def _replacement_problem(namespace: str, name: str, replacement: Replacement) -> Action:
    """Replaced by a pod that does not run: freeing the stuck one changes nothing."""
    if replacement.state == "pending":
        if replacement.pending_reason.startswith("pinned"):
            return Action(
                "investigate",
                "the replacement is pinned to the failed node: bring the "
                "node back or relax the selector/affinity; deleting pods will not help",
                "low",
            )
        return Action(
            "investigate",
            f"the replacement is Pending ({replacement.pending_reason}): fix that; "
            "deleting this pod will not help",
            "low",
        )
    return Action(
        "investigate",
        f"no replacement serves ({replacement.summary}): check the owner's events",
        "low",
        kubectl=f"kubectl describe pod -n {namespace} {name}",
    )


def _elsewhere(namespace: str, name: str, finalizers: list[str]) -> Action:
    """A pod Terminating on a node that did not fail."""
    if finalizers:
        return Action(
            "investigate",
            f"{finalizer_note(finalizers)}: find out why that controller has not finished",
            "medium",
            kubectl=f"kubectl describe pod -n {namespace} {name}",
        )
    return Action(
        "investigate",
        "the node is Ready but its kubelet has not finished the "
        "deletion: check the kubelet and container runtime on that node "
        "(journalctl -u kubelet)",
        "low",
        kubectl=f"kubectl describe pod -n {namespace} {name}",
    )


def _not_evicted(
    kind: str,
    node: NodeFinding,
    replacement: Replacement,
    eviction: EvictionTime | None,
    holds_rwo: bool,
    stays: bool = False,
    now: datetime | None = None,
) -> Action:
    """A pod still counted as a live replica on a failed node: what frees it, if anything.
    `stays`: it tolerates the out-of-service taint, which then does not free it. An eviction
    more than LONG_WAIT_SECONDS away is not waited for: freeing it is suggested, its time said."""
    state = eviction.state if eviction else "not-applicable"
    at = eviction.at if eviction is not None else None
    left = (at - now).total_seconds() if at is not None and now is not None else None
    if at is not None and left is not None and left > LONG_WAIT_SECONDS:
        # a toleration of hours: waiting is not a plan at 3 a.m. (audit 2037: 15 min to a day)
        return _free_it(
            node,
            kind,
            holds_rwo,
            f"not evicted before {format_time(at)} (in {duration(left)}: its tolerations), so "
            "nothing replaces it until then; to have it replaced sooner, free it",
            terminating=False,
            stays=stays,
        )
    if eviction is not None and eviction.at is not None:
        return Action(
            "wait",
            "wait for eviction; " + _after_eviction(kind, replacement, holds_rwo),
            "none",
            until=eviction.at,
            remediate=remediate_cmd(node.name),
        )
    if state == "pending-taint":
        return Action(
            "wait",
            "the NoExecute taint is coming (rate-limited per zone); eviction follows",
            "none",
            remediate=remediate_cmd(node.name),
        )
    if state == "paused":
        return Action(
            "investigate",
            "evictions are stopped (zone disruption): nothing replaces it until they resume. "
            "A failure this wide is usually the network or the control plane: fix that; do "
            "not force pods",
            "none",
        )
    if state == "unknown":
        return _free_it(
            node,
            kind,
            holds_rwo,
            "its eviction time is not known from what the API records (see its timeline): "
            "free it rather than wait for it",
            terminating=False,
            stays=stays,
        )
    if state == "untainted":
        return _free_it(
            node,
            kind,
            holds_rwo,
            "nothing taints its node (the node lifecycle controller does not run or is not "
            "tainting: see its timeline), so nothing evicts or replaces it: find out why "
            "(kube-controller-manager's --controllers, its log), or free it",
            terminating=False,
            stays=stays,
        )
    if state == "not-evicting":
        return _free_it(
            node,
            kind,
            holds_rwo,
            "the taint-eviction controller is not evicting it (check kube-controller-manager's "
            "--controllers and health), so nothing replaces it: free it",
            terminating=False,
            stays=stays,
        )
    # Never evicted: nothing replaces it, nothing serves in its place.
    return _free_it(
        node,
        kind,
        holds_rwo,
        "never evicted (it tolerates the taint without a time limit), so "
        + (
            "nothing replaces it"
            if replacement.state in ("not-yet", "none", "blocked", "unknown")
            else f"its replacement is {replacement.state}"
        )
        + ": free it",
        terminating=False,
        stays=stays,
    )


def _after_eviction(kind: str, replacement: Replacement, holds_rwo: bool) -> str:
    """What eviction brings for this pod: a replacement, or a Terminating pod that needs the
    machine confirmed off before anything frees it."""
    if replacement.state == "not-wanted":
        return "nothing replaces it (none is wanted)"
    if kind == "bare":
        return "no controller recreates a bare pod: it is lost unless you re-create it"
    if kind == "statefulset" and replacement.state == "not-yet":
        return (
            "its grace period is 0, so the eviction removes the object at once and a second "
            "copy starts elsewhere while this one may still run (split brain): if the machine "
            "may be alive, fence it before then"
        )
    if kind == "statefulset" or holds_rwo:
        return (
            "it then stays Terminating and blocks its replacement (fixed name or a single-node "
            "volume) until the machine is confirmed off and it is freed"
        )
    if replacement.state == "blocked":
        return "it then stays Terminating: its owner waits for it to fail before replacing it"
    if (kind in REPLICA_KINDS or kind in JOBS) and replacement.state == "not-yet":
        # only where its owner's rule said the eviction brings one (a Job another controller
        # manages, an owner not read: not said)
        return "the controller then creates a replacement"
    return "what follows depends on its owner"


def _if_running(kind: str, confirmed: bool, replaced: bool = False) -> str:
    """What a destructive step risks if the machine still runs (nothing once its shutdown is
    observed): a second copy, except of a pod nothing recreates, or one already replaced."""
    if confirmed:
        return ""
    if replaced:
        return attestation.IF_STILL_RUNNING_REPLACED
    return attestation.IF_STILL_RUNNING_BARE if kind == "bare" else attestation.IF_STILL_RUNNING


def _when_unrecorded(node: NodeFinding) -> str:
    """What a wait under an out-of-service taint with no timeAdded (`kubectl taint` writes
    none; remediate does) cannot know: how long the taint has been there, so whether PodGC's
    time is long past (out_of_service_overdue needs it)."""
    if node.out_of_service_seconds is not None:
        return ""
    return (
        "; the taint has no timeAdded (added by hand), so when it was added is not recorded: "
        "still here a minute after that, PodGC is not removing it (an admission webhook or "
        "policy refused its delete, or the podgc controller does not run: kube-controller-"
        "manager's log says which)"
    )


def _free_it(
    node: NodeFinding,
    kind: str,
    holds_rwo: bool,
    lead: str,
    *,
    terminating: bool,
    stays: bool = False,
    replaced: bool = False,
) -> Action:
    """The out-of-service taint (after the machine is confirmed off), or deleting the Node; a
    force delete for a pod that is not Terminating and tolerates that taint (`stays`): the taint
    evicts it never, and PodGC force-deletes only Terminating pods under it. `replaced`: its
    replacement already exists, so freeing it starts no copy."""
    confirmed = bool(node.shutdown_evidence)
    unlock = _unlock(node)
    risk = "low" if confirmed else ("high" if kind == "statefulset" or holds_rwo else "medium")
    if_running = _if_running(kind, confirmed, replaced)
    overdue = out_of_service_overdue(node) if node.out_of_service else None
    if node.out_of_service and terminating and overdue is not None:
        return Action(
            "force-delete",
            f"the out-of-service taint was set {overdue:.0f}s ago and PodGC has not removed it "
            "(an admission webhook or policy refused its delete, or the podgc controller does "
            "not run: kube-controller-manager's log says which): force-delete it (remediate "
            "does)",
            risk,
            remediate=remediate_cmd(node.name, *unlock),
            if_still_running=if_running,
        )
    if node.out_of_service and terminating:
        return Action(
            "wait",
            "the out-of-service taint is set: PodGC force-deletes it on its next pass (every "
            f"20 s){_when_unrecorded(node)}",
            "none",
        )
    if node.out_of_service and (stays or overdue is not None):
        # PodGC force-deletes only Terminating pods there, and this one is not being evicted:
        # it tolerates the taint, or its eviction did not happen in PodGC's time
        head = f"{lead}: " if lead else ""
        why = (
            "PodGC force-deletes only Terminating pods and nothing evicts this one (it "
            "tolerates the taint)"
            if stays
            else f"it is still here {overdue:.0f}s after the taint (an admission webhook or "
            "policy refused its eviction, or the controller does not run)"
        )
        return Action(
            "force-delete",
            f"{head}the out-of-service taint is on {node.name}, but {why}: force-delete it "
            "(remediate does), or delete the Node object (PodGC then removes its pods) if the "
            "machine is gone for good",
            risk,
            remediate=remediate_cmd(node.name, *unlock),
            if_still_running=if_running,
        )
    if node.out_of_service:
        return Action(
            "wait",
            f"the out-of-service taint is on {node.name}: evicted, then force-deleted by "
            f"PodGC on its next pass (every 20 s){_when_unrecorded(node)}",
            "none",
        )
    why_unsafe = (
        ""
        if confirmed
        else ". Do it ONLY after confirming the machine is powered off: if it still runs, "
        + (
            "its containers keep running there, unseen by the API, beside any copy you "
            "re-create (nothing recreates a bare pod: the object goes, and it is lost)"
            if kind == "bare"
            else "its containers keep running there, unseen by the API, beside its replacement "
            "(freeing it starts no copy: the replacement already exists)"
            if replaced
            else "a second copy starts (split brain, data loss)"
        )
    )
    head = f"{lead}: " if lead else ""
    if stays and not terminating:
        return Action(
            "force-delete",
            f"{head}it tolerates the out-of-service taint with no time limit, so that taint "
            "does not evict it (PodGC force-deletes only Terminating pods under it): "
            "force-delete it (remediate does, beside the taint), or delete the Node object if "
            f"the machine is gone for good{why_unsafe}",
            risk,
            remediate=remediate_cmd(node.name, *unlock),
            if_still_running=if_running,
        )
    return Action(
        "out-of-service",
        f"{head}apply the out-of-service taint (pods force-deleted, volumes detached at "
        f"once), or delete the Node object if the machine is gone for good{why_unsafe}",
        risk,
        remediate=remediate_cmd(node.name, *unlock),
        if_still_running=if_running,
    )


def _terminating(
    kind: str,
    namespace: str,
    name: str,
    node: NodeFinding,
    holds_rwo: bool,
    replaced: bool = False,
) -> Action:
    """A pod evicted or deleted, held by a kubelet that never confirms, that only a destructive
    step frees (replaced and cosmetic pods are decided in `disposition`). `replaced`: its
    replacement exists already (a Job held open by it, its new pod done)."""
    if kind == "bare":
        return Action(
            "investigate",
            "nothing recreates a bare pod: re-create it from its manifest "
            "elsewhere if needed; removing the stuck object loses it",
            "medium",
            kubectl=f"kubectl get pod -n {namespace} {name} -o yaml",
            remediate=remediate_cmd(node.name, *_unlock(node)),
            if_still_running=_if_running(kind, bool(node.shutdown_evidence)),
        )
    # Forcing while the old process may still run: a StatefulSet gets two copies of one identity
    # (split brain, data loss); a Job or unknown owner may run its work twice.
    return _free_it(node, kind, holds_rwo, "", terminating=True, replaced=replaced)


def for_waiting_pod(
    holder: NodeFinding, outlook: str, users: list[str], *, all_terminating: bool
) -> Action:
    """A pod elsewhere waiting for a volume still attached to the failed node `holder`;
    `outlook` says when the controller detaches it, `users` are the pod objects on `holder`
    still using it (nothing removes them while the node is down)."""
    one = len(users) == 1
    if holder.out_of_service:
        if not users:
            then = ""
        elif all_terminating:
            then = f"PodGC force-deletes {', '.join(users)}, then "
        else:
            then = (
                f"once {', '.join(users)} {'is' if one else 'are'} evicted by the taint (never, "
                "for a pod that tolerates it) PodGC force-deletes the Terminating objects, then "
            )
        return Action(
            "wait",
            f"the out-of-service taint is on {holder.name}: {then}the volume is detached at once",
            "none",
        )
    if users:
        lead = (
            f"{', '.join(users)} still {'uses' if one else 'use'} the volume on "
            f"{holder.name}, and nothing removes {'it' if one else 'them'} while "
            "the node is down, so waiting does not detach it. To free it"
        )
    elif outlook.startswith("overdue"):
        lead = f"the force-detach is {outlook}. To free it"
    else:
        lead = f"wait: {outlook}. To detach now"
    return _free_it(holder, "statefulset", True, lead, terminating=False)
