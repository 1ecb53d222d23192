"""What a Job's CronJob does about the Job while a pod of it is stuck, as the CronJob controller
decides it (pkg/controller/cronjob/cronjob_controllerv2.go syncCronJob): nothing while
suspended; at each scheduled run, Forbid skips the run while status.active lists any Job,
Replace deletes every Job status.active lists (background propagation: the garbage collector
then deletes its pods) and starts a new one, Allow starts one beside them. A Job made outside
the schedule (`kubectl create job --from`) is not listed: neither waited for nor deleted.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from kubectl_nodefail.analysis import cron
from kubectl_nodefail.analysis.claims import Premise
from kubectl_nodefail.analysis.controllers.context import Context
from kubectl_nodefail.analysis.leader import leader
from kubectl_nodefail.analysis.text import duration
from kubectl_nodefail.snapshot.model import Obj, parse_time


def _listed(ctx: Context, job_obj: Obj) -> tuple[Premise, Premise]:
    """The CronJob's spec.suspend, and the Job in its status.active (by name: the controller's
    Replace finds the Jobs it deletes by their references' names)."""
    name = job_obj["metadata"].get("name", "")
    return ctx.owner_fact(1, "spec.suspend"), ctx.owner_fact(1, f"status.active[name={name}].name")


# The CronJob controller starts a run at its sync right after the run's time; a run due this
# long ago, with a leader running since before it, was not started by it.
CRON_LAG_SECONDS = 120


def next_run(ctx: Context) -> tuple[datetime | None, str, list[Premise]]:
    """The CronJob's next run after the snapshot (None: not timed here), the words for it, and
    the facts they rest on. A run missed since its last one (status.lastScheduleTime, else its
    creation) and still within startingDeadlineSeconds starts as soon as the controller syncs
    (it may have been down): overdue, not timed."""
    cron_obj = ctx.owners[1]
    spec, status = cron_obj.get("spec") or {}, cron_obj.get("status") or {}
    schedule, zone = spec.get("schedule"), spec.get("timeZone")
    facts = [
        ctx.owner_fact(1, "spec.schedule"),
        ctx.owner_fact(1, "spec.timeZone"),
        ctx.owner_fact(1, "spec.startingDeadlineSeconds"),
        ctx.owner_fact(1, "status.lastScheduleTime"),
        ctx.owner_fact(1, "metadata.creationTimestamp"),
    ]
    where = f", timeZone {zone}" if isinstance(zone, str) else ""
    said = f"schedule {schedule!r}{where}"
    last = parse_time(
        status.get("lastScheduleTime") or cron_obj["metadata"].get("creationTimestamp")
    )
    missed = cron.next_run(schedule, zone, last) if last is not None else None
    deadline = spec.get("startingDeadlineSeconds")
    if missed is not None and missed <= ctx.now:
        late = isinstance(deadline, int) and missed + timedelta(seconds=deadline) < ctx.now
        if not late:
            ago = duration((ctx.now - missed).total_seconds())
            chief = leader(ctx.snap)
            waited = (ctx.now - max(missed, chief.since if chief else missed)).total_seconds()
            if chief is not None and chief.alive() and waited > CRON_LAG_SECONDS:
                # a leader that ran since the run's time would have started it at its sync
                return (
                    None,
                    f"its overdue run (due {ago} ago, {said}; not started, though the CronJob "
                    "controller starts a missed run as soon as it syncs, within seconds: it is "
                    "not acting on this CronJob, disabled, overloaded or failing: the CronJob's "
                    "events and kube-controller-manager's log say which), if it ever starts,",
                    [*facts, chief.premise(), chief.premise("renewTime")],
                )
            return None, f"its overdue run (due {ago} ago, {said}; not started yet)", facts
    when = cron.next_run(schedule, zone, ctx.now)
    if when is None:
        why = "the CronJob names no timeZone, so kube-controller-manager reads it in its own"
        if zone is not None or cron.parse(str(schedule), None) is None:
            why = "not read here"
        return None, f"its next scheduled run ({said}; not timed: {why})", facts
    seconds = (when - ctx.now).total_seconds()
    at = when.strftime("%H:%M" if seconds < 86400 else "%Y-%m-%d %H:%M")
    chief = leader(ctx.snap)
    if chief is not None and chief.expired():  # the CronJob controller runs in the leader
        # a leader taking over later starts a run it missed, unless startingDeadlineSeconds
        # has passed by then (cronjob_controllerv2 syncCronJob: mostRecentScheduleTime)
        within = (
            f", if within its startingDeadlineSeconds ({deadline}s)"
            if isinstance(deadline, int)
            else ""
        )
        return (
            when,
            f"its next run, due in {duration(seconds)} ({at} UTC; {said}; kube-controller-"
            f"manager has no leader now: with none by then, when one takes over{within})",
            [*facts, *chief.premises()],
        )
    return when, f"its next run, in {duration(seconds)} ({at} UTC; {said})", facts


def replaces(ctx: Context, job_obj: Obj) -> bool:
    """The CronJob's next run deletes this Job: Replace, not suspended nor being deleted (the
    controller then only updates its status), the Job listed, a schedule that runs, and runs
    not all skipped (startingDeadlineSeconds 0: the controller wakes after the scheduled time,
    always too late)."""
    if len(ctx.owners) < 2 or ctx.owner_kinds[1] != "CronJob":
        return False
    cron_obj = ctx.owners[1]
    spec = cron_obj.get("spec") or {}
    suspended, listed = _listed(ctx, job_obj)
    return (
        suspended.value is not True
        and listed.value is not None
        and spec.get("concurrencyPolicy") == "Replace"
        and spec.get("startingDeadlineSeconds") != 0
        and not cron_obj["metadata"].get("deletionTimestamp")
        and not cron.never_runs(spec.get("schedule"), spec.get("timeZone"), ctx.now)
    )


def policy(ctx: Context, job_obj: Obj) -> tuple[str, list[Premise], bool]:
    """What the CronJob does about this Job while it stays active: the words, their facts, and
    whether it starts runs again once the Job ends (after a Forbid that skipped them)."""
    cron_obj = ctx.owners[1]
    cron_name = cron_obj["metadata"]["name"]
    suspended, listed = _listed(ctx, job_obj)
    if suspended.value is True:
        return f" CronJob {cron_name} is suspended: it starts no run.", [suspended], False
    policy_fact = ctx.owner_fact(1, "spec.concurrencyPolicy")
    name = policy_fact.value or "Allow"
    facts = [suspended, listed, policy_fact]
    if listed.value is None:
        if name == "Allow":
            return "", facts, False
        return (
            f" Job {job_obj['metadata']['name']} is not in CronJob {cron_name}'s status.active "
            f"(made outside its schedule): its concurrencyPolicy {name} neither waits for it "
            "nor deletes it.",
            facts,
            False,
        )
    if name == "Forbid":
        return (
            f" CronJob {cron_name} has concurrencyPolicy Forbid: it starts no run while "
            "this Job is active, so every scheduled run is skipped until then.",
            facts,
            True,
        )
    if name == "Replace" and replaces(ctx, job_obj):
        _, words, timing = next_run(ctx)
        return (
            f" CronJob {cron_name} has concurrencyPolicy Replace: {words} deletes this Job "
            "(background propagation) and starts a new one; this pod stays Terminating.",
            [*facts, ctx.owner_fact(1, "metadata.deletionTimestamp"), *timing],
            False,
        )
    return "", facts, False
