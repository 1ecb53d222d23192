"""Judging a CronJob's next run (map row 19; scenario change `cron-run`): the claim
`scheduled-run` says at which minute the CronJob's run deletes the Job (concurrencyPolicy
Replace). Judged on the Job's own readings (History.jobs, the scenario's Job per poll): still
there at the last poll before that minute, gone within a few seconds after it; only for a run
while the node is still down, as the claim speaks of."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from tests.audit.observe import History
from tests.audit.predictions import PodPrediction

_AT = re.compile(r"\((?:(\d{4})-(\d\d)-(\d\d) )?(\d\d):(\d\d) UTC; ")
_JOB = re.compile(r"deletes Job (\S+) \(background")
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


def judge(pred: PodPrediction, history: History) -> tuple[str, str, bool | None] | None:
    """(predicted, observed, ok) for a prediction with a timed Replace run, else None."""
    said = predicted(pred)
    if said is None:
        return None
    job, when = said
    words = f"Job {job} deleted by the run at {when:%H:%M:%S}"
    # the claim speaks of the node left down: once it is back (or remediated), the Terminating
    # pod goes, the Job may finish and leave status.active, and the run deletes nothing
    # (2049/174 alone on its batch: back at 03:36:43, the run at 03:37)
    left = [history.marks.get(k) for k in ("return", "remediate")]
    until = min((t for t in left if t is not None), default=history.marks.get("end"))
    if until is None or when + LATE > until:
        return words, "not judged: the node came back (or was remediated) before the run", None
    seen = [at for at, _ in history.jobs.get(pred.namespace, [])]
    if not seen:
        return words, "not judged: the Job was never read", None
    last = max(seen)
    # there at the last poll before the run (polls are seconds apart: 2049's were at :57, :00.6)
    before = max((p.at for p in history.polls if p.at < when - EARLY), default=None)
    if before is not None and last < before:
        return words, f"last read {last:%H:%M:%S}, gone by {before:%H:%M:%S}", False
    if last > when + LATE:
        return words, f"still there at {last:%H:%M:%S}, after the run", False
    gone = next((p.at for p in history.polls if p.at > last), None)
    if gone is None:
        return words, "not judged: no poll after its last reading", None
    return words, f"last read {last:%H:%M:%S}, gone at {gone:%H:%M:%S}", gone <= when + LATE
