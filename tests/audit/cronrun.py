"""Judging a CronJob's next run (map row 19; scenario change `cron-run`).

Replace: the claim `scheduled-run` says at which minute the CronJob's run deletes the Job.
Judged on the Job's own readings (History.jobs, the scenario's Job per poll): still there at the
last poll before that minute, gone within a few seconds after it; only for a run while the node
is still down, as the claim speaks of.

Forbid: the `blocks` claim says the CronJob starts no run while the Job is active. Judged on the
run the harness scheduled (History.cron_runs): no Job of a run (History.runs) seen from then
until the node came back or was remediated; only when that run fell while the node was down."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from tests.audit.observe import History
from tests.audit.predictions import PodPrediction

_AT = re.compile(r"\((?:(\d{4})-(\d\d)-(\d\d) )?(\d\d):(\d\d) UTC; ")
_JOB = re.compile(r"deletes Job (\S+) \(background")
_FORBID = "has concurrencyPolicy Forbid: it starts no run while this Job is active"
# the CronJob controller wakes 100 ms after the minute; its Job delete and the next poll follow
LATE = timedelta(seconds=12)
EARLY = timedelta(seconds=1)


def predicted(pred: PodPrediction) -> tuple[str, datetime] | None:
    """The Job and the minute a prediction's `scheduled-run` claim names (None: no timed one)."""
    for claim in pred.claims:
        if claim.get("kind") != "scheduled-run":
            continue
        text = str(claim.get("text") or "")
        at, job = _AT.search(text), _JOB.search(text)
        if at is None or job is None:
            return None
        year, month, day, hour, minute = at.groups()
        when = pred.at.replace(hour=int(hour), minute=int(minute), second=0, microsecond=0)
        if year:  # a run a day or more away names its date
            when = when.replace(year=int(year), month=int(month), day=int(day))
        while when <= pred.at:
            when += timedelta(days=1)
        return job.group(1), when
    return None


def _until(history: History) -> datetime | None:
    """When the claims stop speaking: the node back or remediated (the Terminating pod then
    goes, the Job may finish and leave status.active: 2049/174, back at 03:36:43, the run at
    03:37), else the batch's end."""
    left = [history.marks.get(k) for k in ("return", "remediate")]
    return min((t for t in left if t is not None), default=history.marks.get("end"))


def judge_forbid(pred: PodPrediction, history: History) -> tuple[str, str, bool | None] | None:
    """(predicted, observed, ok) for a prediction saying a Forbid CronJob skips its runs while
    the Job is active, else None."""
    if not any(_FORBID in str(c.get("text") or "") for c in pred.claims):
        return None
    when = history.cron_runs.get(pred.namespace)
    if when is None:
        return None  # no run scheduled in the batch: nothing plays the claim out
    words = f"the run at {when:%H:%M} skipped (no new Job while the node is down)"
    until = _until(history)
    if until is None or when + LATE > until:
        return words, "not judged: the node came back (or was remediated) before the run", None
    made = {name: at for name, at in history.runs.get(pred.namespace, {}).items() if at <= until}
    if made:
        name, at = min(made.items(), key=lambda kv: kv[1])
        return words, f"Job {name} made, seen at {at:%H:%M:%S}", False
    after = [p.at for p in history.polls if when + LATE <= p.at <= until]
    if not after:
        return words, "not judged: no poll after the run", None
    return words, f"no Job made by {max(after):%H:%M:%S}", True


def judge(pred: PodPrediction, history: History) -> tuple[str, str, bool | None] | None:
    """(predicted, observed, ok) for a prediction with a timed Replace run, else None."""
    said = predicted(pred)
    if said is None:
        return None
    job, when = said
    words = f"Job {job} deleted by the run at {when:%H:%M:%S}"
    until = _until(history)
    if until is None or when + LATE > until:
        return words, "not judged: the node came back (or was remediated) before the run", None
    seen = [at for at, _ in history.jobs.get(pred.namespace, [])]
    if not seen:
        return words, "not judged: the Job was never read", None
    last = max(seen)
    # when the Jobs were read (the polls' own times in runs that did not record it)
    reads = history.job_reads or [p.at for p in history.polls]
    # there at the last poll before the run (polls are seconds apart: 2049's were at :57, :00.6)
    before = max((at for at in reads if at < when - EARLY), default=None)
    if before is not None and last < before:
        return words, f"last read {last:%H:%M:%S}, gone by {before:%H:%M:%S}", False
    if last > when + LATE:
        return words, f"still there at {last:%H:%M:%S}, after the run", False
    gone = next((at for at in reads if at > last), None)
    if gone is None:
        return words, "not judged: no poll after its last reading", None
    return words, f"last read {last:%H:%M:%S}, gone at {gone:%H:%M:%S}", gone <= when + LATE
