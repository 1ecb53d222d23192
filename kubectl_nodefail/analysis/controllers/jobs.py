"""The Job rule (also for a CronJob's Jobs): its podReplacementPolicy, a finished or suspended
Job, the pod-failure backoff before the next pod, and a Job held open (not Complete or Failed)
while its Terminating pod exists.
"""

from __future__ import annotations

from kubectl_nodefail.analysis.claims import Claim, claim, fact
from kubectl_nodefail.analysis.controllers import cronjobs
from kubectl_nodefail.analysis.controllers.context import (
    JOB_TRACKING,
    Context,
    Explained,
    _node_ready,
    _until_kubelet,
)
from kubectl_nodefail.analysis.controllers.replacement import _found, _replacements
from kubectl_nodefail.analysis.controllers.simple import owner_decides
from kubectl_nodefail.analysis.findings import Replacement
from kubectl_nodefail.analysis.leader import leader
from kubectl_nodefail.analysis.podstatus import TERMINAL_PHASES
from kubectl_nodefail.analysis.text import duration
from kubectl_nodefail.snapshot.model import Obj, parse_time, shifted


def _job_finished(job: Obj) -> str | None:
    """Complete or Failed when the Job carries that condition True."""
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return None


# A Job that met its success or failure criteria carries SuccessCriteriaMet or FailureTarget
# first, and Complete or Failed only once none of its pods is Terminating any more
# (pkg/controller/job/job_controller.go: delayTerminalCondition, enactJobFinished waits for
# terminating == 0; CountTerminatingPods counts a deleted pod not yet in a terminal phase).
FINISHING = {"SuccessCriteriaMet": "Complete", "FailureTarget": "Failed"}


def _job_finishing(job: Obj) -> str | None:
    """SuccessCriteriaMet or FailureTarget, when the Job carries it True and is not finished."""
    if _job_finished(job) is not None:
        return None
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in FINISHING and cond.get("status") == "True":
            return str(cond["type"])
    return None


def _job_held_open(ctx: Context, job_obj: Obj, name: str, rep: Replacement) -> Explained | None:
    """A Terminating pod (not finished) of a Job that has met its criteria: the Job is not
    Complete (or Failed) while the pod object exists, and a CronJob with concurrencyPolicy
    Forbid starts no run while that Job is active (cronjob_controllerv2.go: a Job leaves
    status.active only once finished). The stuck pod blocks its owner: not cosmetic."""
    finishing = _job_finishing(job_obj)
    if finishing is None or not ctx.terminating or ctx.finished:
        return None
    target = FINISHING[finishing]
    because = [
        ctx.pod_fact("metadata.deletionTimestamp"),
        ctx.pod_fact("status.phase"),
        ctx.owner_fact(0, f"status.conditions[type={finishing}].status"),
        ctx.owner_fact(0, f"status.conditions[type={target}].status"),
        *_node_ready(ctx),
    ]
    text = (
        f"Job {name} has {finishing}=True but is not {target}: the Job controller marks it "
        f"{target} only once none of its pods is Terminating, and this one stays {ctx.phase} "
        f"{_until_kubelet(ctx, short=True)}. Whatever waits for the Job to finish (a pipeline, "
        "ttlSecondsAfterFinished, kubectl wait) waits on this pod."
    )
    cron = ctx.owners[1] if len(ctx.owners) > 1 and ctx.owner_kinds[1] == "CronJob" else None
    runs_again = False
    if cron is not None:
        said, facts, runs_again = cronjobs.policy(ctx, job_obj)
        text += said
        because += facts
    # the Job controller counts a pod Terminating while it is deleted and not Failed or
    # Succeeded (IsPodTerminating): one PodGC marks Failed no longer holds it, its object kept
    # by a finalizer or not (audit 2079/124's sibling)
    while_it = "while this pod is Terminating and neither Failed nor Succeeded"
    says = (
        f"Job {name} is {target} once PodGC marks this pod Failed as it deletes it (its node is "
        f"gone); not before: it cannot be {target} {while_it}"
        if ctx.gone
        else f"Job {name} cannot be {target} {while_it}"
    )
    held = Replacement(
        "not-yet" if ctx.gone else "blocked",
        f"{rep.summary}; but {says}" if rep.pods else says,
        list(rep.pods),
    )
    returns = (
        f"kubelet ends the old pod (Failed or Succeeded; its finalizers keep the object); then "
        f"Job {name} is {target}"
        if ctx.foreign_finalizers
        else f"kubelet removes the old pod; then Job {name} is {target}"
    ) + (
        f", and CronJob {cron['metadata']['name']}, whose Forbid skipped its runs while the Job "
        "was active, starts runs again."
        if runs_again and cron is not None
        else "."
    )
    return Explained(
        [
            claim("blocks", "why", text, *because),
            claim("replacement", "replacement", held.summary, *because),
            claim("if-node-returns", "returns", returns, *because),
        ],
        held,
        on_phase=True,
    )


# spec.managedBy (JobManagedBy: beta and on by default from 1.32, GA in 1.35): the built-in Job
# controller syncs only Jobs whose field is absent or this value (job_controller.go
# isJobManagedByJobController); any other names a controller of its own, which alone creates,
# counts and finishes the Job's pods. Servers where the gate is off drop the field.
JOB_CONTROLLER = "kubernetes.io/job-controller"


def managed_by(job_obj: Obj | None) -> str | None:
    """The controller a Job names in spec.managedBy, when it is not the built-in one."""
    value = ((job_obj or {}).get("spec") or {}).get("managedBy")
    return str(value) if value and value != JOB_CONTROLLER else None


def replaces_only_failed(job_obj: Obj | None) -> bool:
    """The built-in Job controller, running this Job, replaces a pod (and removes its tracking
    finalizer) only once the pod is Failed: podReplacementPolicy Failed, set or implied by a
    podFailurePolicy. A finished Job or one managed elsewhere: not said."""
    if job_obj is None or managed_by(job_obj) is not None or _job_finished(job_obj):
        return False
    return _replacement_policy(job_obj.get("spec") or {}) == "Failed"


def _replacement_policy(spec: Obj) -> str:
    """podReplacementPolicy as the Job controller applies it: the field, else Failed when a
    podFailurePolicy is set, else TerminatingOrFailed."""
    return str(
        spec.get("podReplacementPolicy")
        or ("Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed")
    )


def _managed_elsewhere(ctx: Context, job_obj: Obj, by: str, cron: str) -> Explained:
    """A Job another controller manages: the built-in Job controller does nothing for it (no
    replacement, no failure count, no backoff, no terminal condition), so none of that is said;
    a pod of it that exists is still named as what it is."""
    name = job_obj["metadata"]["name"]
    managed = ctx.owner_fact(0, "spec.managedBy")
    found = (
        _replacements(ctx, job_obj["metadata"]["uid"], finished_too=True) if ctx.terminating else []
    )
    if found:
        rep, rep_claim = _found(found, ctx.node, "replacement")
    else:
        rep = Replacement(
            "unknown",
            f"up to {by}: Job {name} is not managed by the built-in Job controller",
        )
        rep_claim = claim("replacement", "replacement", rep.summary, managed)
    return owner_decides(
        ctx,
        f"Job {name}{cron} is managed by {by} (spec.managedBy), not by the built-in Job "
        "controller, which leaves it alone: whether and when this pod is replaced, counted as "
        f"failed or waited for is up to {by}.",
        rep,
        rep_claim,
        f"kubelet removes the old pod; what Job {name} does then is up to {by}.",
        managed,
    )


def _failure_rule(spec: Obj, pod: Obj) -> str | None:
    """What the Job's podFailurePolicy does with this pod once it is Failed: the action of the
    first rule that matches (pod_failure_policy.go matchPodFailurePolicy: rules in order, an
    onPodConditions pattern matching a condition of that type and status, True by default),
    "exit-codes" when an onExitCodes rule comes first (the exit codes are not known until its
    kubelet reports them), None when no rule matches (it counts toward backoffLimit)."""
    conditions = {
        (c.get("type"), c.get("status"))
        for c in (pod.get("status") or {}).get("conditions") or []
        if isinstance(c, dict)
    }
    for rule in (spec.get("podFailurePolicy") or {}).get("rules") or []:
        if not isinstance(rule, dict):
            continue
        if rule.get("onExitCodes"):
            return "exit-codes"
        patterns = rule.get("onPodConditions") or []
        if any((p.get("type"), p.get("status") or "True") in conditions for p in patterns):
            return str(rule.get("action") or "")
    return None


# The Job controller's pod-failure backoff (pkg/controller/job/job_controller.go
# DefaultJobPodFailureBackOff, MaxJobPodFailureBackOff; backoff_utils.go): 10 s after a failure,
# doubled for each further failure since the last success, at most 10 min.
JOB_BACKOFF_BASE = 10
JOB_BACKOFF_MAX = 600
# Past its backoff from the latest deletion among its pods, this much more (the controller's
# sync, the clocks) before a Job that has made no pod is said to be failing to make one.
JOB_CREATE_SLACK = 30


def job_wants(job_obj: Obj) -> int:
    """How many pods a running Job keeps active: min(parallelism, completions - succeeded); with
    no completions (a work queue), parallelism until the first success, then none new."""
    spec, status = job_obj.get("spec") or {}, job_obj.get("status") or {}
    parallelism = spec.get("parallelism")
    parallelism = 1 if parallelism is None else parallelism
    succeeded = status.get("succeeded") or 0
    completions = spec.get("completions")
    if completions is None:
        return parallelism if succeeded == 0 else 0
    return max(0, min(parallelism, completions - succeeded))


def job_backoff_bound(job_obj: Obj, uncounted: int = 1) -> int:
    """Seconds within which the Job's backoff has run out: failures since the last success are at
    most status.failed plus its deleted pods not counted in it yet (at least this one; each is a
    failure to the controller; 2051/95: three evicted at once, a backoff of 40 s, not 10)."""
    failed = ((job_obj.get("status") or {}).get("failed") or 0) + max(uncounted, 1)
    return int(min(JOB_BACKOFF_MAX, JOB_BACKOFF_BASE * 2 ** min(failed - 1, 10)))


def _job_next_pod(ctx: Context, job_obj: Obj, name: str) -> tuple[Replacement, Claim]:
    """A Terminating pod of a live Job (not finished, not suspended) whose owner may replace it
    at once (TerminatingOrFailed) and has not yet: either the Job wants no more pods, or its
    pod-failure backoff delays the next one."""
    counts = [
        ctx.owner_fact(0, "spec.parallelism"),
        ctx.owner_fact(0, "spec.completions"),
        ctx.owner_fact(0, "status.succeeded"),
        ctx.owner_fact(0, "status.active"),
    ]
    wants = job_wants(job_obj)
    active = (job_obj.get("status") or {}).get("active") or 0
    # The Job controller counts a pod with a deletionTimestamp as no longer active; a status
    # written before this pod's deletion still counts it (2046/165: read the second of its
    # eviction, "wants 1 and has 1", and the Job made the replacement 9 s later). The Job's own
    # pods say what its next sync counts.
    pods = ctx.snap.pods_owned_by(job_obj["metadata"].get("uid", ""))
    live = [
        p
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
        and (p.get("status") or {}).get("phase") not in TERMINAL_PHASES
    ]
    if len(live) < active:
        active = len(live)
        counts += [
            ctx.pod_fact("metadata.deletionTimestamp"),
            ctx.owner_fact(0, "status.terminating"),
        ]
    if active >= wants:
        rep = Replacement(
            "not-wanted",
            f"none needed: Job {name} wants {wants} active pod(s) and has {active}",
        )
        return rep, claim("owner-wants", "replacement", rep.summary, *counts)
    # the controller removes its tracking finalizer from a pod once status counts it
    uncounted = [
        p
        for p in pods
        if p["metadata"].get("deletionTimestamp")
        and (p.get("status") or {}).get("phase") != "Succeeded"
        and JOB_TRACKING in (p["metadata"].get("finalizers") or [])
    ]
    counts += [
        premise
        for p in uncounted
        for premise in (
            fact("Pod", p, "metadata.deletionTimestamp"),
            fact("Pod", p, "metadata.finalizers"),
        )
    ]
    bound = job_backoff_bound(job_obj, len(uncounted))
    chief = leader(ctx.snap)
    if chief is not None and chief.expired():  # the Job controller runs in the leader
        counts += chief.premises()
        rep = Replacement(
            "not-yet",
            f"none yet: Job {name} has {active} of {wants} wanted active pod(s); it creates the "
            f"next after its pod-failure backoff, within {bound} s of a leader taking over",
        )
    else:
        # the backoff counts from a failure, at the latest its pod's deletion (the newest one),
        # and a new leader's Job controller syncs from its start
        deleted = [
            (at, p) for p in pods if (at := parse_time(p["metadata"].get("deletionTimestamp")))
        ]
        since, last = max(deleted, key=lambda d: d[0], default=(None, None))
        began = max(since, chief.since) if since is not None and chief is not None else since
        due = shifted(began, bound + JOB_CREATE_SLACK) if began is not None else None
        if last is not None and due is not None and ctx.now > due:
            counts.append(fact("Pod", last, "metadata.deletionTimestamp"))
            counts += [chief.premise()] if chief is not None else []
            after = (
                "its controller leader's start"
                if began != since
                else f"its latest pod deletion, {last['metadata']['name']}'s"
            )
            rep = Replacement(
                "missing",
                f"{active}/{wants} wanted active pod(s) of Job {name}, and none made in the "
                f"{duration((ctx.now - due).total_seconds())} since its pod-failure backoff ran "
                f"out (at most {bound} s after {after}): making one fails (quota, admission, or "
                "the Job controller does not run: check the Job's events)",
            )
        else:
            rep = Replacement(
                "not-yet",
                f"none yet: Job {name} has {active} of {wants} wanted active pod(s); it creates "
                f"the next after its pod-failure backoff, within {bound} s",
                expected_by=shifted(ctx.now, bound),
            )
    return rep, claim(
        "replacement", "replacement", rep.summary, *counts, ctx.owner_fact(0, "status.failed")
    )


def _replaced_by_cron(
    ctx: Context, job_obj: Obj, name: str, rep: Replacement, rep_claim: Claim
) -> tuple[Claim, Replacement, Claim]:
    """A Job its CronJob replaces at its next run (concurrencyPolicy Replace): that run deletes
    the Job, and the garbage collector its pods. The claim, and the replacement that stands with
    it: `rep` as it was, or told as a race when the run may come before the pod `rep` expects."""
    cron_name = ctx.owners[1]["metadata"]["name"]
    when, words, timing = cronjobs.next_run(ctx)
    because = [
        ctx.owner_fact(1, "spec.concurrencyPolicy"),
        ctx.owner_fact(1, "spec.suspend"),
        ctx.owner_fact(1, f"status.active[name={name}].name"),
        ctx.owner_fact(1, "metadata.deletionTimestamp"),
        *timing,
        ctx.pod_fact("metadata.deletionTimestamp"),
    ]
    fate = (
        "this pod, already deleted, stays Terminating until its kubelet confirms"
        if ctx.terminating
        else "the garbage collector then deletes this pod, which stays Terminating until its "
        "kubelet confirms"
    )
    text = (
        f"CronJob {cron_name} has concurrencyPolicy Replace: {words} deletes Job {name} "
        f"(background propagation) and starts a new Job; {fate}, and Job {name} makes no "
        "pod after that."
    )
    said = claim("scheduled-run", "why", text, *because)
    after = when is not None and rep.expected_by is not None and when >= rep.expected_by
    if rep.state != "not-yet" or not ctx.terminating or after:
        return said, rep, rep_claim
    # The Job makes its next pod at some moment up to the backoff's bound, and the run may come
    # first: a race (2050/83: the run due before the bound, the pods came at once). Neither is
    # promised, so no bound is given.
    instead = Replacement(
        "not-yet",
        f"{rep.summary}, unless CronJob {cron_name}'s next run deletes Job {name} first "
        "(then none from it)",
        list(rep.pods),
    )
    return said, instead, claim("replacement", "replacement", instead.summary, *because)


def job(ctx: Context) -> Explained:
    job_obj = ctx.owners[0] if ctx.owners else None
    spec = (job_obj or {}).get("spec") or {}
    policy = _replacement_policy(spec)
    name = ctx.owner_name()
    cron = f" (CronJob {ctx.owners[1]['metadata']['name']})" if len(ctx.owners) > 1 else ""
    by = managed_by(job_obj)
    if job_obj is not None and by is not None:
        return _managed_elsewhere(ctx, job_obj, by, cron)
    policy_facts = (
        [ctx.owner_fact(0, "spec.podReplacementPolicy"), ctx.owner_fact(0, "spec.podFailurePolicy")]
        if job_obj is not None
        else []
    )
    done = _job_finished(job_obj) if job_obj is not None else None
    suspended = bool(spec.get("suspend"))
    rule = _failure_rule(spec, ctx.pod)
    ignored = rule == "Ignore"
    if suspended:
        policy_facts.append(ctx.owner_fact(0, "spec.suspend"))
    if rule is not None:
        policy_facts.append(ctx.pod_fact("status.conditions[type=DisruptionTarget].status"))
    found = (
        _replacements(ctx, job_obj["metadata"]["uid"], finished_too=True)
        if job_obj is not None and ctx.terminating
        else []
    )
    if done is not None and not found:
        cond = ctx.owner_fact(0, f"status.conditions[type={done}].status")
        rep = Replacement("not-wanted", f"none wanted: Job {name} is {done}")
        return Explained(
            [
                claim(
                    "owner-wants",
                    "why",
                    f"Job {name}{cron} has finished ({done}=True): it creates no more pods, so "
                    "nothing replaces this one and nothing waits on it.",
                    cond,
                ),
                claim("owner-wants", "replacement", rep.summary, cond),
                claim(
                    "if-node-returns",
                    "returns",
                    "kubelet stops the old containers and removes the object; the Job, already "
                    f"{done}, does not change.",
                    cond,
                    ctx.pod_fact("metadata.deletionTimestamp"),
                ),
            ],
            rep,
        )
    if policy == "Failed":
        text = (
            f"Job {name}{cron} has podReplacementPolicy Failed"
            + (
                " (the default when podFailurePolicy is set, as here)"
                if spec.get("podFailurePolicy")
                else ""
            )
            + ": it creates a replacement only once the old pod reaches phase Failed, which a "
            "pod Terminating on a dead node never does. The pod blocks its own replacement."
        )
    elif job_obj is not None and "podReplacementPolicy" not in spec:
        # Servers before 1.29 (the field's beta) store no such field: same behaviour, no name.
        text = (
            f"Job {name}{cron} has no podReplacementPolicy (this server predates it) and no "
            "podFailurePolicy: a replacement is created as soon as the pod is Terminating."
        )
    else:
        text = (
            f"Job {name}{cron} has podReplacementPolicy TerminatingOrFailed (the default): a "
            "replacement is created as soon as the pod is Terminating."
        )
    if not ctx.terminating:
        text += " The pod is not evicted yet, so it still counts as active."
    out = [
        claim("counts-as", "why", text, ctx.pod_fact("metadata.deletionTimestamp"), *policy_facts)
    ]
    if not ctx.terminating and policy == "Failed" and job_obj is not None:
        # evicted, it stays Terminating and this policy waits for phase Failed: no replacement
        # comes with the eviction either
        rep = Replacement(
            "not-yet" if ctx.gone else "blocked",
            "none yet: the pod still counts as active; PodGC marks it Failed as it deletes it, "
            "which podReplacementPolicy Failed waits for"
            if ctx.gone
            else "none yet: the pod still counts as active; once evicted, podReplacementPolicy "
            "Failed waits for it to fail",
        )
        rep_claim = claim(
            "replacement",
            "replacement",
            rep.summary,
            ctx.pod_fact("metadata.deletionTimestamp"),
            *policy_facts,
        )
    elif not ctx.terminating:
        rep = Replacement("not-yet", "none yet: the pod still counts as active")
        rep_claim = claim(
            "replacement", "replacement", rep.summary, ctx.pod_fact("metadata.deletionTimestamp")
        )
    elif job_obj is None:
        rep = Replacement("unknown", "owner not read: cannot look for the replacement")
        rep_claim = claim("replacement", "replacement", rep.summary)
    elif found:
        rep, rep_claim = _found(found, ctx.node, "replacement")
    elif policy == "Failed":
        rep = (
            Replacement(
                "not-yet",
                "none yet: podReplacementPolicy Failed waits for this pod to fail: PodGC marks "
                "it Failed as it deletes it (its node is gone)",
            )
            if ctx.gone
            else Replacement(
                "blocked", "blocked: podReplacementPolicy Failed waits for this pod to fail"
            )
        )
        rep_claim = claim("replacement", "replacement", rep.summary, *policy_facts)
    elif suspended:
        rep = Replacement("not-wanted", f"none while Job {name} is suspended (spec.suspend)")
        rep_claim = claim(
            "owner-wants", "replacement", rep.summary, ctx.owner_fact(0, "spec.suspend")
        )
    else:
        rep, rep_claim = _job_next_pod(ctx, job_obj, name)
    held_open = _job_held_open(ctx, job_obj, name, rep) if job_obj is not None else None
    if held_open is not None:  # its replacement policy no longer matters: it wants no pod
        return held_open
    if job_obj is not None and done is None and cronjobs.replaces(ctx, job_obj):
        said, rep, rep_claim = _replaced_by_cron(ctx, job_obj, name, rep, rep_claim)
        out.append(said)
    out.append(rep_claim)
    counted = (
        "the Job does not count it as failed (its podFailurePolicy ignores DisruptionTarget)"
        if ignored
        else "the Job counts it as failed"
    )
    if ctx.terminating and done is not None:
        returns = f"kubelet removes the old pod; the Job, already {done}, does not change."
    elif ctx.terminating and suspended:
        # Whether a suspended Job counts the pod it deleted as failed is not said: KEP-2232
        # says it does, the v1.36 control plane did not (audit 2026/153).
        returns = "kubelet removes the old pod; the Job, suspended, creates no replacement."
    elif ctx.terminating and rule in ("FailJob", "FailIndex", "exit-codes"):
        returns = (
            "kubelet stops it and sets it Failed; "
            + {
                "FailJob": f"a FailJob rule of its podFailurePolicy matches, so Job {name} fails "
                "(its other pods are deleted) and nothing replaces it.",
                "FailIndex": "a FailIndex rule of its podFailurePolicy matches, so its index fails "
                "and is not run again.",
                "exit-codes": f"what Job {name} does then depends on the containers' exit codes "
                "(its podFailurePolicy has an onExitCodes rule first).",
            }[rule]
        )
    elif ctx.terminating:
        returns = f"kubelet removes the old pod; {counted}" + (
            " and then creates the replacement." if policy == "Failed" else "."
        )
    elif suspended:
        returns = (
            f"Job {name} is suspended: it deletes this pod, then the kubelet stops it and "
            "removes the object; no replacement while suspended."
        )
    else:
        returns = "the pod carries on and may complete."
    out.append(
        claim(
            "if-node-returns",
            "returns",
            returns,
            ctx.pod_fact("metadata.deletionTimestamp"),
            ctx.pod_fact("status.phase"),
            *policy_facts,
            *([ctx.owner_fact(0, f"status.conditions[type={done}].status")] if done else []),
        )
    )
    return Explained(out, rep)
