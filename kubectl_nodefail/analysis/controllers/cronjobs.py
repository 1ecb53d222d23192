"""What a Job's CronJob does about the Job while a pod of it is stuck, as the CronJob controller
decides it (pkg/controller/cronjob/cronjob_controllerv2.go syncCronJob): nothing while
suspended; at each scheduled run, Forbid skips the run while status.active lists any Job,
Replace deletes every Job status.active lists (background propagation: the garbage collector
then deletes its pods) and starts a new one, Allow starts one beside them. A Job made outside
the schedule (`kubectl create job --from`) is not listed: neither waited for nor deleted.
"""

from __future__ import annotations

from datetime import datetime

from kubectl_nodefail.analysis import cron
from kubectl_nodefail.analysis.claims import Premise
from kubectl_nodefail.analysis.controllers.context import Context
from kubectl_nodefail.analysis.text import duration
from kubectl_nodefail.snapshot.model import Obj


def _listed(ctx: Context, job_obj: Obj) -> tuple[Premise, Premise]:
    uid = job_obj["metadata"].get("uid", "")
    return ctx.owner_fact(1, "spec.suspend"), ctx.owner_fact(1, f"status.active[uid={uid}].uid")


def next_run(ctx: Context) -> tuple[datetime | None, str, list[Premise]]:
    """The CronJob's next scheduled run after the snapshot (None: not timed here), the words
    for it, and the facts they rest on."""
    spec = ctx.owners[1].get("spec") or {}
    schedule, zone = spec.get("schedule"), spec.get("timeZone")
    facts = [ctx.owner_fact(1, "spec.schedule"), ctx.owner_fact(1, "spec.timeZone")]
    when = cron.next_run(schedule, zone, ctx.now)
    where = f", timeZone {zone}" if isinstance(zone, str) else ""
    if when is None:  # @every (counted from the last run), or a zone not in this tz database
        return None, f"its next scheduled run (schedule {schedule!r}{where}, not timed here)", facts
    seconds = (when - ctx.now).total_seconds()
    at = when.strftime("%H:%M")
    return (
        when,
        f"its next run, in {duration(seconds)} ({at} UTC; schedule {schedule!r}{where})",
        facts,
    )


def replaces(ctx: Context, job_obj: Obj) -> bool:
    """The CronJob's next run deletes this Job: Replace, not suspended nor being deleted (the
    controller then only updates its status), the Job listed, and a schedule that runs."""
    if len(ctx.owners) < 2 or ctx.owner_kinds[1] != "CronJob":
        return False
    cron_obj = ctx.owners[1]
    spec = cron_obj.get("spec") or {}
    suspended, listed = _listed(ctx, job_obj)
    return (
        suspended.value is not True
        and listed.value is not None
        and spec.get("concurrencyPolicy") == "Replace"
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
