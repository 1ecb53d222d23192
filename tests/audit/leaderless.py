"""The diagnosis made while kube-controller-manager has no leader (`d0`, restart.py), judged
against what the control plane does until a new leader takes over (its Lease's acquireTime,
history mark `leader`).

With no leader none of its controllers runs: the taint-eviction controller evicts nothing, no
owner's controller makes a pod, PodGC removes nothing. So, for every pod d0 lists:
- `no-leader:said`: its report opens with the missing leader (its first claim `no-leader`);
- `no-leader:eviction`: a pod not deleted at d0 is told "not evicted" until a leader (no
  evictionAt), and the taint-eviction controller deletes it at no time before the new leader
  took over; any evictionAt is wrong (no controller keeps it, and a new leader counts afresh);
- `no-leader:replacement`: no pod of its owner is made from d0 until the new leader.
Read from the diagnosis' JSON and the polls only, like every judge of the audit.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Optional

from tests.audit.observe import History
from tests.audit.predictions import PodPrediction

Row = tuple[str, str, str, Optional[bool]]  # kind, predicted, observed, ok

# a deletion stamped in the second the new leader took over may be its own (the API server's
# timestamps are to the second)
SECOND = timedelta(seconds=1)


def _fmt(t: datetime | None) -> str:
    return t.strftime("%H:%M:%S") if t else "-"


def judge(pred: PodPrediction, history: History) -> list[Row]:
    """The rows for one pod d0 listed; none when the batch had no new leader to judge by."""
    leader = history.marks.get("leader")
    d0 = history.marks.get("d0")
    if pred.moment != "d0" or leader is None or d0 is None:
        return []
    rows: list[Row] = []
    first = pred.claims[0].get("kind") if pred.claims else None
    rows.append(
        (
            "no-leader:said",
            "the report opens with the missing leader",
            str(first),
            first == "no-leader",
        )
    )
    if not pred.terminating:
        deleted = history.first_deletion(pred.uid)
        by_taint = deleted is not None and deleted.disruption_reason == "DeletionByTaintManager"
        when = deleted.deletion_requested if deleted is not None and by_taint else None
        early = when is not None and when < leader.replace(microsecond=0)
        seen = (
            f"evicted at {_fmt(when)}, before the new leader ({_fmt(leader)})"
            if early
            else f"not evicted before the new leader took over at {_fmt(leader)}"
        )
        if pred.eviction_at is None:
            rows.append(("no-leader:eviction", "not evicted until a leader", seen, not early))
        else:  # a time set with no controller to keep it: the new leader counts afresh
            rows.append(("no-leader:eviction", f"evicted at {_fmt(pred.eviction_at)}", seen, False))
    owner = _owner(pred, history)
    if owner:
        made = [
            v
            for v in history.ever().values()
            if v.owner_uid == owner
            and v.uid != pred.uid
            and v.created is not None
            and d0 - SECOND <= v.created < leader.replace(microsecond=0)
        ]
        seen = (
            f"{made[0].name} made at {_fmt(made[0].created)}"
            if made
            else f"none made from d0 until the new leader ({_fmt(leader)})"
        )
        rows.append(("no-leader:replacement", "nothing made until a leader", seen, not made))
    return rows


def _owner(pred: PodPrediction, history: History) -> str:
    view = history.ever().get(pred.uid)
    return view.owner_uid if view else ""
