"""The judge: each prediction of a diagnosis against what the control plane then did (a History
of polls). Pure: predictions + history + scenario in, verdicts out; no cluster, no clock.

A verdict's `ok` is True (the control plane did what was said), False (it did not: a wrong
prediction), or None (not judgeable here, with the reason: counted, never hidden).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from tests.audit import cronrun, leaderless
from tests.audit.observe import History, PodView
from tests.audit.predictions import PodPrediction
from tests.audit.scenarios import Scenario
from tests.audit.shutdown import judge_shutdown

Obj = dict[str, Any]

# Eviction time tolerance. Early: the taint's timeAdded and the condition's lastTransitionTime
# are both truncated to the second (up to 1 s each way). Late: the taint-eviction controller
# handles its timed queue on a 2-core machine shared with other control planes, with up to a
# few hundred pods due in the same seconds; measured lag stays under 3 s, 5 s leaves room.
EARLY = timedelta(seconds=2)
LATE = timedelta(seconds=5)
# A ReplicaSet creates the replacement within moments of the eviction; a diagnosis' "missing"
# is judged against what existed this long after it was captured.
SETTLE = timedelta(seconds=15)
TERMINAL = ("Succeeded", "Failed")
ACTIVE_READ = timedelta(seconds=6)  # a Job's status read this soon after a diagnosis
FAILED_NODE_TAINTS = {"node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready"}


@dataclass
class Verdict:
    kind: str
    seed: int
    index: int
    moment: str
    pod: str
    predicted: str
    observed: str
    ok: bool | None
    known_limit: str = ""
    scenario: str = ""

    def as_dict(self) -> Obj:
        return dict(self.__dict__)


@dataclass
class Marks:
    """When each phase of a batch happened (from History.marks)."""

    kill: datetime
    d1: datetime
    late: datetime  # late changes applied (end of the eviction window)
    d2: datetime
    back: datetime  # kubelets started again
    end: datetime  # last poll
    remediate: datetime | None = None  # remediate --confirm started on `remediated`
    remediated: str = ""  # the node remediated while down, if any

    @classmethod
    def of(cls, history: History) -> Marks:
        m = history.marks
        return cls(
            m["kill"],
            m["d1"],
            m["late"],
            m["d2"],
            m["return"],
            m["end"],
            m.get("remediate"),
            history.remediated,
        )

    def remediated_before_return(self, node: str) -> datetime | None:
        return self.remediate if self.remediated and node == self.remediated else None


@dataclass
class Ctx:
    scenario: Scenario
    pred: PodPrediction
    history: History
    marks: Marks
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def until(self) -> datetime:
        """Predictions of the first diagnosis hold until the late change; the second's until
        the node returns. The late change's objects are stamped to the second: one made in the
        second of the late mark may be the change's (2045/101, 2059/105: a scale-up's pod
        stamped the second the change began), so the first diagnosis' window ends before it."""
        if self.pred.moment == "d1":
            return self.marks.late.replace(microsecond=0) - timedelta(microseconds=1)
        # A node remediated while down: the second diagnosis spoke of the node left alone.
        return self.marks.remediated_before_return(self.pred.node) or self.marks.back

    def view(self) -> PodView | None:
        seen = self.history.last_seen(self.pred.uid)
        return seen[1] if seen else None

    def add(
        self, kind: str, predicted: str, observed: str, ok: bool | None, limit: str = ""
    ) -> None:
        s = self.scenario
        self.verdicts.append(
            Verdict(
                kind=kind,
                seed=s.seed,
                index=s.index,
                moment=self.pred.moment,
                pod=f"{self.pred.namespace}/{self.pred.name}",
                predicted=predicted,
                observed=observed,
                ok=ok,
                known_limit=limit,
                scenario=s.describe(),
            )
        )


def _fmt(t: datetime | None) -> str:
    return t.strftime("%H:%M:%S") if t else "-"


def _owner_uid(ctx: Ctx) -> str:
    """The predicted pod's owner: the one it was made by, even once orphaned (History.ever)."""
    view = ctx.history.ever().get(ctx.pred.uid)
    return view.owner_uid if view else ""


def _new_pods(ctx: Ctx, start: datetime, end: datetime, same_name: bool = False) -> list[PodView]:
    """Pods created in [start, end] by the same owner (or, same_name, with the same name),
    other than the predicted pod."""
    owner = _owner_uid(ctx)
    out = []
    for view in ctx.history.ever().values():
        if view.uid == ctx.pred.uid or view.namespace != ctx.pred.namespace:
            continue
        if same_name and view.name != ctx.pred.name:
            continue
        if not same_name and (not owner or view.owner_uid != owner):
            continue
        if view.created is not None and start - timedelta(seconds=1) <= view.created <= end:
            out.append(view)
    return out


def _namespace_pods(ctx: Ctx, start: datetime, end: datetime) -> list[PodView]:
    """Pods of the predicted pod's namespace created in [start, end], other than it."""
    return [
        v
        for v in ctx.history.ever().values()
        if v.uid != ctx.pred.uid
        and v.namespace == ctx.pred.namespace
        and v.created is not None
        and start - timedelta(seconds=1) <= v.created <= end
    ]


# --- eviction and NEXT ---


def judge_eviction(ctx: Ctx) -> None:
    p = ctx.pred
    if p.terminating or p.moment != "d1":
        return
    first = ctx.history.first_deletion(p.uid)
    actual = first.deletion_requested if first else None
    by_taint = bool(first and first.disruption_reason == "DeletionByTaintManager")
    window_end = ctx.marks.late
    by_remediate = actual is not None and _after_remediate(ctx, actual)
    if actual is not None and actual > window_end and (not by_taint or by_remediate):
        # deleted by a late change, on the return, or evicted by the out-of-service taint
        # remediate applied (2039/142, 186): not the eviction predicted
        first, actual = None, None
    gone = ctx.history.vanished(p.uid) if first is None else None
    if gone is not None and gone[1] > window_end:
        gone = None  # went away after the window (late change, return): not an eviction
    for kind, when in (("eviction-time", p.eviction_at), ("next-time", p.action_until)):
        if when is None:
            continue
        if kind == "next-time" and p.action_code != "wait":
            continue
        predicted = f"evicted at {_fmt(when)}"
        if first is not None and not by_taint and actual is not None and actual < when - EARLY:
            ctx.add(kind, predicted, f"deleted by another actor at {_fmt(actual)} first", None)
        elif actual is None and gone is not None:
            seen, missed = gone
            if ctx.scenario.change_at == "early":
                ctx.add(kind, predicted, "object gone; an early change may have deleted it", None)
            else:
                ok = missed >= when - EARLY and seen <= when + LATE
                ctx.add(
                    kind, predicted, f"object deleted between {_fmt(seen)} and {_fmt(missed)}", ok
                )
        elif actual is None:
            if when + LATE < window_end:
                ctx.add(kind, predicted, f"not evicted by {_fmt(window_end)}", False)
            elif kind == "eviction-time" and window_end < when - EARLY:
                # a toleration of minutes to hours: the window ends long before; what is judged
                # is the half of the prediction it covers (no eviction before that time)
                ctx.add(
                    "eviction-not-before",
                    f"not evicted before {_fmt(when)}",
                    f"not evicted by {_fmt(window_end)}",
                    True,
                )
            else:
                ctx.add(kind, predicted, "window ended before the predicted time", None)
        else:
            ok = when - EARLY <= actual <= when + LATE
            delta = (actual - when).total_seconds()
            ctx.add(kind, predicted, f"evicted at {_fmt(actual)} ({delta:+.0f}s)", ok)
    if p.never_evicted:
        if gone is not None and ctx.scenario.change_at != "early":
            ctx.add("never-evicted", "never evicted", f"object deleted by {_fmt(gone[1])}", False)
            return
        remediated = ctx.marks.remediated_before_return(p.node)
        if by_taint and remediated is not None and by_remediate:
            # the out-of-service taint remediate applied evicts it, not the not-ready /
            # unreachable taints "never evicted" speaks of (2029/112, 150)
            observed = f"not evicted before remediate ({_fmt(remediated)}); its taint evicted it"
            ctx.add("never-evicted", "never evicted", observed, True)
            return
        ok = not by_taint
        observed = f"evicted at {_fmt(actual)}" if by_taint else f"not evicted in {_window(ctx)}"
        ctx.add("never-evicted", "never evicted", observed, ok)


# the eviction text of a pod on a not-Ready node without the NoExecute taint while its zone's
# tainting is stopped (PartialDisruption) or every zone is down (analysis/eviction.py PAUSED)
PAUSED = "no eviction while"


def judge_paused(ctx: Ctx) -> None:
    """ "No eviction while the zone stays in PartialDisruption": the taint-eviction controller
    deletes the pod at no time from the diagnosis to the return (when the harness starts the
    kubelets again and the zone leaves the disruption); another actor's deletion is not an
    eviction."""
    p = ctx.pred
    if p.terminating or p.eviction_at is not None or PAUSED not in p.eviction_text:
        return
    back = ctx.marks.back
    first = ctx.history.first_deletion(p.uid)
    if first is not None and first.disruption_reason == "DeletionByTaintManager":
        when = first.deletion_requested
        ok = when is None or when >= back
        observed = f"evicted at {_fmt(when)}" + ("" if ok else " (before the return)")
    else:
        observed = "not evicted before the return"
        ok = True
    ctx.add(
        "eviction-paused", "no eviction while the zone stays in PartialDisruption", observed, ok
    )


def _after_remediate(ctx: Ctx, when: datetime) -> bool:
    """`when` is at or after remediate started on the pod's node, to the second the API keeps
    (a condition's time is truncated: 22:43:12 for a taint applied at 22:43:12.09; 2039/118)."""
    started = ctx.marks.remediated_before_return(ctx.pred.node)
    return started is not None and when >= started - timedelta(seconds=1)


def _window(ctx: Ctx) -> str:
    return f"{(ctx.marks.late - ctx.marks.kill).total_seconds():.0f}s down"


# --- replacement state ---


def judge_replacement(ctx: Ctx) -> None:
    p = ctx.pred
    state = p.replacement_state
    kind = f"replacement:{state}"
    handler = {
        "running": _running,
        "pending": _pending,
        "finished": _finished,
        "blocked": _blocked,
        "none": _none,
        "not-needed": _not_needed,
        "not-yet": _not_yet,
        "missing": _missing,
        "not-wanted": _not_wanted,
    }.get(state)
    if handler is None:
        ctx.add(kind, state, "not judgeable: the prediction names no outcome", None)
        return
    handler(ctx, kind)


def _listed(ctx: Ctx) -> list[tuple[str, PodView | None]]:
    poll = ctx.history.at(ctx.pred.at)
    by_name = {v.name: v for v in poll.pods.values() if v.namespace == ctx.pred.namespace}
    return [(name, by_name.get(name)) for name in ctx.pred.replacement_pods]


def _running(ctx: Ctx, kind: str) -> None:
    listed = _listed(ctx)
    bad = [n for n, v in listed if v is None or v.phase != "Running" or v.deletion is not None]
    seen = ", ".join(f"{n}:{v.phase if v else 'absent'}" for n, v in listed) or "no pod listed"
    ok = bool(listed) and not bad
    ctx.add(kind, f"running {ctx.pred.replacement_pods}", seen, ok)


def _finished(ctx: Ctx, kind: str) -> None:
    listed = _listed(ctx)
    ok = bool(listed) and all(v is not None and v.phase in TERMINAL for _, v in listed)
    seen = ", ".join(f"{n}:{v.phase if v else 'absent'}" for n, v in listed) or "no pod listed"
    ctx.add(kind, f"finished {ctx.pred.replacement_pods}", seen, ok)


def _pending(ctx: Ctx, kind: str) -> None:
    listed = _listed(ctx)
    ok = bool(listed) and all(
        v is not None and v.phase == "Pending" and not v.node for _, v in listed
    )
    seen = ", ".join(
        f"{n}:{(v.phase + ' on ' + (v.node or '(unscheduled)')) if v else 'absent'}"
        for n, v in listed
    )
    ctx.add(kind, f"pending {ctx.pred.replacement_pods}", seen or "no pod listed", ok)
    for _name, view in listed:
        if view is not None:
            judge_pending_reason(ctx, view)


FOUND_NO_NODE = "the scheduler found no node: "
ONCE_READY = "once the set's other pods are Running and Ready"
# An OrderedReady StatefulSet's rolling update waits until every pod of the set is Running and
# Ready (stateful_set_control.go); kwok does not set Ready again on a pod the node lifecycle
# controller marked not Ready (its pod-ready stage matches only pods without a podIP), so the
# judge checks that condition before the prediction that follows it.
ONCE_ALL_READY = "is Running and Ready, the rolling update replaces it"
# An OrderedReady StatefulSet creates a missing ordinal only once every lower one is Running
# and Ready (one pod at a time): the recreation is judged only where the polls saw the lower
# ordinals so, long enough before the end for the controller to act (audit 2078/43).
ONCE_LOWER_READY = "Running and Ready (OrderedReady creates one pod at a time"
LOWER_READY_LEAD = timedelta(seconds=5)


def judge_pending_reason(ctx: Ctx, view: PodView) -> None:
    """The reason given for a Pending replacement must be the scheduler's or the pod's own."""
    reason = ctx.pred.pending_reason
    kind = "pending-reason"
    if not reason:
        ctx.add(kind, "(none given)", view.scheduled_message or "(no message)", None)
        return
    if reason.startswith("pinned: nodeSelector"):
        ok = view.node_selector_host == ctx.pred.node
        ctx.add(kind, reason, f"nodeSelector hostname={view.node_selector_host or '-'}", ok)
        return
    message = view.scheduled_message
    if reason.startswith(FOUND_NO_NODE):
        # "the scheduler found no node: A; B": each reason is in the message, and the message
        # gives no per-node reason left out (counted as the scheduler writes them: "N node(s)")
        listed = reason[len(FOUND_NO_NODE) :].split("; ")
        head = re.split(r"\.(?:\s|$)", message.split("nodes are available:", 1)[-1], maxsplit=1)[0]
        given = re.findall(r"\d+ node\(s\) ", head)
        ok = all(part in message for part in listed) and len(given) == len(listed)
        ctx.add(kind, reason, message or "(no message)", ok)
        return
    quoted = re.search(r"\((.*)\)\s*$", reason)
    if "taints it does not tolerate" in reason:
        # Premise: a healthy node carries an untolerated taint (the message must say so for a
        # node other than the failed ones, which carry unreachable/not-ready).
        keys = set(re.findall(r"untolerated taint[^{]*\{([^:}]+)", message))
        ok = bool(keys - FAILED_NODE_TAINTS)
        ctx.add(kind, reason, message or "(no message)", ok)
        return
    if quoted:
        ok = quoted.group(1).strip() == message.strip()
        if ok and "affinity" in reason:
            ok = "affinity/selector" in message or "affinity" in message
        ctx.add(kind, reason, message or "(no message)", ok)
        return
    ctx.add(kind, reason, message or "(no message)", reason.strip() == message.strip() or None)


def _blocked(ctx: Ctx, kind: str) -> None:
    p, s = ctx.pred, ctx.scenario
    if p.controller == "statefulset" or s.kind.startswith("sts"):
        # creationTimestamp is cut to the second: a twin stamped in the second the kubelet came
        # back may have been made after it (kwok removes the old pod at once). Only a twin
        # stamped a whole second before the return was certainly made while the node was down.
        new = _new_pods(ctx, p.at, ctx.until - timedelta(seconds=1), same_name=True)
        ok = not new
        observed = (
            f"{p.name} recreated (uid {new[0].uid[:8]}) at {_fmt(new[0].created)}, node still down"
            if new
            else f"no second {p.name} while the node was down"
        )
        ctx.add(kind, "blocked: same name not recreated while the node is down", observed, ok)
        return
    if p.controller in ("deployment", "replicaset"):
        # a Recreate rollout waiting on the old pod: no pod of another ReplicaSet of the
        # Deployment (the namespace holds only it) while this pod is neither Failed nor
        # Succeeded, it stands and the node is down (a pod stamped in the second the node came
        # back may be made after it: 2049/171). PodGC marks a pod Failed whose object a
        # finalizer keeps (2079/124: on no node, and under the out-of-service taint)
        seen = ctx.history.last_seen(p.uid)
        until = ctx.until - timedelta(seconds=1)
        end = min(until, seen[0]) if seen else until
        ended = _terminal_at(ctx)
        end = min(end, ended) if ended is not None else end
        new = [v for v in _namespace_pods(ctx, p.at, end) if v.owner_uid != _owner_uid(ctx)]
        observed = (
            f"{new[0].name} of another ReplicaSet created at {_fmt(new[0].created)}"
            if new
            else "no pod of the new template while it stood"
        )
        ctx.add(
            kind,
            "blocked: the rollout creates no new pod while it stands, not Failed",
            observed,
            not new,
        )
        return
    if p.controller in ("job", "cronjob") and HELD_OPEN.search(p.replacement_summary):
        _job_held_open(ctx, kind)
        return
    if OWNER_DELETED.search(p.replacement_summary):
        # an owner being deleted makes no pod (map row 22): none created after the diagnosis.
        # A pod it made before (2069/34: a Job's replacement in the second of the foreground
        # delete, itself deleted at once and held by a finalizer) is not one the claim denies.
        said = p.at.replace(microsecond=0)
        new = [v for v in _new_pods(ctx, p.at, ctx.until) if v.created and v.created > said]
        observed = (
            f"{new[0].name} created at {_fmt(new[0].created)}"
            if new
            else "no pod of the owner made after the diagnosis"
        )
        ctx.add(kind, "blocked: its owner is being deleted and makes no pod", observed, not new)
        return
    if p.controller in ("job", "cronjob"):
        over = _job_over_parallelism(ctx)
        ctx.add(
            kind,
            "blocked: no replacement until this pod is Failed",
            over or "no pod beyond parallelism while the node was down",
            not over,
        )
        return
    new = _new_pods(ctx, p.at, ctx.until)
    ctx.add(kind, "blocked", f"{len(new)} new pod(s) of the owner", not new)


# "Job J cannot be Failed while this pod exists" (map row 16): the Job is past its success or
# failure (SuccessCriteriaMet, FailureTarget: a deadline, a backoff limit, a FailJob rule) and is
# held open by the Terminating pod; it makes no new pod (2046/113: judged by the parallelism
# rule, it counted the pods its deadline had just deleted).
HELD_OPEN = re.compile(
    r"cannot be (Complete|Failed) while this pod "
    r"(exists|is Terminating and neither Failed nor Succeeded)"
)
# "none wanted: Job J is being deleted and waits for this pod" (analysis: the owner's
# deletionTimestamp; its controller makes no pod for it)
OWNER_DELETED = re.compile(r"^none wanted: .* (is|are) being deleted")


def _terminal_at(ctx: Ctx) -> datetime | None:
    """Where what a Recreate rollout and a Job wait on may have ended (recreate.go
    oldPodsRunning, controller_utils IsPodTerminating): the pod Failed or Succeeded (PodGC marks
    a pod Failed whose object a finalizer keeps). The last poll that saw it not ended, a second
    before (creation times are cut to the second: a pod made after the mark, before the poll
    that saw it, is not one the claim denies); None if no poll saw it end."""
    p = ctx.pred
    live = p.at
    for poll in ctx.history.polls:
        view = poll.pods.get(p.uid)
        if poll.at < p.at or view is None:
            continue
        if view.phase in ("Failed", "Succeeded"):
            return live - timedelta(seconds=1)
        live = poll.at
    return None


def _job_held_open(ctx: Ctx, kind: str) -> None:
    """The Job records no Complete or Failed condition while the pod stands (to the end of the
    prediction's window) and makes no new pod meanwhile."""
    p = ctx.pred
    seen = ctx.history.last_seen(p.uid)
    end = min(ctx.until, seen[0]) if seen else ctx.until
    terminal = _terminal_at(ctx)  # Failed, its object kept: the Job no longer counts it
    end = min(end, terminal) if terminal is not None else end
    ended = [
        at
        for at, status in ctx.history.jobs.get(p.namespace, [])
        if p.at <= at <= end
        and any(
            c.get("status") == "True" and c.get("type") in ("Complete", "Failed")
            for c in status.get("conditions") or []
        )
    ]
    new = [v for v in _new_pods(ctx, p.at, end) if v.created and v.created > p.at]
    observed = (
        f"the Job finished at {_fmt(ended[0])} while the pod stood"
        if ended
        else f"{new[0].name} created at {_fmt(new[0].created)}"
        if new
        else "the Job held open, no new pod, while the pod stood"
    )
    ctx.add(
        kind,
        "blocked: the Job cannot finish while this pod stands, not ended",
        observed,
        not ended and not new,
    )


def _job_over_parallelism(ctx: Ctx) -> str:
    """Under podReplacementPolicy Failed a Terminating pod still holds its slot: unfinished pods
    (Terminating ones included) never exceed parallelism. A poll where they do shows a
    replacement made for a pod still Terminating."""
    owner = _owner_uid(ctx)
    limit = ctx.scenario.replicas
    for poll in ctx.history.between(ctx.pred.at, ctx.until):
        alive = [
            v
            for v in poll.pods.values()
            if v.owner_uid == owner and owner and v.phase not in TERMINAL
        ]
        if len(alive) > limit:
            names = ", ".join(sorted(v.name for v in alive))
            return f"{len(alive)} unfinished pods > parallelism {limit} at {_fmt(poll.at)}: {names}"
    return ""


def _none(ctx: Ctx, kind: str) -> None:
    p = ctx.pred
    same_name = p.controller in ("bare", "statefulset")
    late = ctx.pred.moment == "d1" and ctx.scenario.change_at == "late"
    # "never replaced" speaks of the node left alone: judged up to remediate on its node (its
    # out-of-service taint evicts even a pod that tolerates not-ready/unreachable forever;
    # audit 2032/198), else through the node's return
    end = ctx.marks.remediated_before_return(p.node) or ctx.marks.end
    new = _new_pods(ctx, p.at, ctx.until if late else end, same_name=same_name)
    # once the node is back, a new pod of the owner beside this one still there (not deleted,
    # not finished) is the owner's own change (a rollout going on: audit 2047/58), not this
    # pod's replacement
    new = [v for v in new if v.created is None or v.created <= ctx.marks.back or _gone(ctx, v)]
    observed = (
        f"new pod {new[0].name} at {_fmt(new[0].created)}"
        if new
        else "no new pod, node back included"
    )
    ctx.add(kind, "none: no replacement ever", observed, not new)


def _gone(ctx: Ctx, new: PodView) -> bool:
    """The predicted pod deleted, finished or no longer there when `new` was first seen."""
    first = next((poll for poll in ctx.history.polls if new.uid in poll.pods), None)
    view = first.pods.get(ctx.pred.uid) if first is not None else None
    return view is None or view.deletion is not None or view.phase in TERMINAL


def _not_wanted(ctx: Ctx, kind: str) -> None:
    """ "no replacement is wanted" (the owner wants fewer pods or none, is suspended, finished
    or gone): no pod of its owner (a bare pod: of its name) is created while the prediction
    holds. Judged up to remediate on its node, as `none`: the release it plans is what makes
    an owner that wants pods create one."""
    p = ctx.pred
    end = min(ctx.until, ctx.marks.remediated_before_return(p.node) or ctx.until)
    if end == ctx.marks.back:
        # creation times are cut to the second: a pod stamped in the second the node came back
        # may have been made after it (2080/125: a StatefulSet's lower ordinals, recreated the
        # moment the kubelet removed their old objects)
        end = end.replace(microsecond=0) - timedelta(microseconds=1)
    # a StatefulSet's pod is one name: a pod of another ordinal is not made for it (2080/125)
    by_name = p.controller in ("bare", "statefulset")
    new = _new_pods(ctx, p.at, end, same_name=by_name)
    # A new pod may replace ANOTHER pod of the owner that stopped counting in the window (the
    # owner's other pod on the node, evicted later: audit 2036/140); it is not this one's.
    # One of the same name is this one's.
    freed = [] if by_name else _others_gone(ctx, p.at, end)
    observed = (
        f"{len(new)} new pod(s) of the owner (first {new[0].name} at {_fmt(new[0].created)}), "
        f"{len(freed)} other pod(s) of it deleted or gone meanwhile"
        if new
        else f"no new pod of the owner until {_fmt(end)}"
    )
    ctx.add(kind, "not wanted: the owner creates none for it", observed, len(new) <= len(freed))


def _others_gone(ctx: Ctx, start: datetime, end: datetime) -> list[PodView]:
    """The owner's other pods, live (not deleted) at `start` (the last poll before it: a pod
    gone by the next one stood when the diagnosis read, 2057/63), deleted or gone by `end`."""
    owner = _owner_uid(ctx)
    if not owner:
        return []
    at_start = ctx.history.before(start).pods
    at_end = ctx.history.at(end).pods
    return [
        v
        for uid, v in at_start.items()
        if uid != ctx.pred.uid
        and v.owner_uid == owner
        and v.deletion is None
        and (uid not in at_end or at_end[uid].deletion is not None)
    ]


def _not_needed(ctx: Ctx, kind: str) -> None:
    if ctx.pred.controller != "daemonset":
        _runs_itself(ctx, kind)
        return
    new = [v for v in _new_pods(ctx, ctx.pred.at, ctx.until) if v.node != ctx.pred.node]
    observed = f"new pod {new[0].name} on {new[0].node}" if new else "no pod elsewhere"
    ctx.add(kind, "none by design", observed, not new)


def _runs_itself(ctx: Ctx, kind: str) -> None:
    """A pod waiting on the failed node (pinned to it, or for a volume still attached there):
    "none needed: this pod runs once its node returns / the volume is detached". The same pod
    (uid) is Running by the end; not judged when it was deleted before (a change, a scale-down)."""
    seen = [
        (poll.at, poll.pods[ctx.pred.uid])
        for poll in ctx.history.polls
        if ctx.pred.uid in poll.pods
    ]
    running = [at for at, view in seen if at >= ctx.pred.at and view.phase == "Running"]
    last = seen[-1] if seen else None
    if running:
        ctx.add(kind, "none needed: the pod itself runs", f"Running at {_fmt(running[0])}", True)
    elif last is None or last[0] < ctx.marks.end or last[1].deletion is not None:
        ctx.add(kind, "none needed: the pod itself runs", "deleted before it ran", None)
    else:
        ctx.add(
            kind, "none needed: the pod itself runs", f"still {last[1].phase} at the end", False
        )


def _not_yet(ctx: Ctx, kind: str) -> None:
    p = ctx.pred
    if p.controller in ("job", "cronjob") and p.expected_by is not None:
        # "the Job creates the next pod within its backoff": any new pod of the Job is that.
        end = p.expected_by + SETTLE
        new = _new_pods(ctx, p.at, min(end, ctx.until))
        observed = (
            f"{new[0].name} created {(new[0].created - p.at).total_seconds():+.0f}s after the "
            "diagnosis"
            if new and new[0].created
            else f"no pod of the Job created by {_fmt(min(end, ctx.until))}"
        )
        ok: bool | None = bool(new) if new or ctx.until >= end else None
        ctx.add(kind, f"created by {_fmt(p.expected_by)} (the Job's backoff)", observed, ok)
        return
    if p.controller in ("job", "cronjob") and not p.terminating:
        _counts_as_active(ctx, kind)
        return
    if p.controller not in ("deployment", "replicaset", "replicationcontroller"):
        ctx.add(
            kind,
            "none yet",
            "not judged: a Job's next pods are not told apart from replacements",
            None,
        )
        return
    first = ctx.history.first_deletion(p.uid)
    by_taint = first is not None and first.disruption_reason == "DeletionByTaintManager"
    evicted = first.deletion_requested if first and by_taint else None
    if evicted is None and p.never_evicted:
        # "created when the pod is evicted" beside "never evicted": nothing ever comes.
        new = _new_pods(ctx, p.at, ctx.until)
        ctx.add(
            kind,
            "replacement created when the pod is evicted (and: never evicted)",
            f"never evicted; {len(new)} pod(s) of the owner created while the node was down",
            bool(new),
        )
        return
    if evicted is None or evicted > ctx.until:
        # "nothing replaces it until it is evicted": judged while it stood undeleted in the
        # window (a grace-0 eviction removes it between two polls: up to the last that saw it,
        # less the poll's own slack)
        end = ctx.until
        asked = first.deletion_requested if first is not None else None
        vanished = ctx.history.vanished(p.uid)
        for stop in (asked, vanished[0] if vanished else None):
            if stop is not None and stop - EARLY < end:
                end = stop - EARLY  # a poll's time is when it started: the read comes later
        # a pod the change at `until` made is stamped to the second: one created in that
        # second may be the change's (2045/101: scaled up 4 ms after the late mark)
        end = min(end, ctx.until.replace(microsecond=0) - timedelta(microseconds=1))
        # a new pod of the owner may replace a sibling deleted meanwhile (its own eviction)
        new = _new_pods(ctx, p.at, end)
        freed = _others_gone(ctx, p.at, end)
        observed = (
            f"{len(new)} pod(s) of the owner created while it stood undeleted (to {_fmt(end)}), "
            f"{len(freed)} of its others deleted meanwhile"
        )
        ok = len(new) <= len(freed)
        ctx.add(kind, "nothing replaces it until it is evicted", observed, ok)
        return
    new = _new_pods(ctx, evicted - timedelta(seconds=2), evicted + SETTLE)
    observed = (
        f"{new[0].name} created {(new[0].created - evicted).total_seconds():+.0f}s after eviction"
        if new and new[0].created
        else f"no pod of the owner created within {SETTLE.seconds}s of the eviction"
    )
    ctx.add(kind, "replacement created when the pod is evicted", observed, bool(new))


def _counts_as_active(ctx: Ctx, kind: str) -> None:
    """A Job's pod not evicted yet, "none yet: the pod still counts as active": the Job's
    status.active read right after the diagnosis counts every pod of the Job not deleted and
    not finished at that moment, this one among them."""
    p = ctx.pred
    owner = _owner_uid(ctx)
    read = [
        (at, status)
        for at, status in ctx.history.jobs.get(p.namespace, [])
        if p.at <= at <= p.at + ACTIVE_READ
    ]
    poll = ctx.history.at(p.at)
    live = [
        v
        for v in poll.pods.values()
        if owner and v.owner_uid == owner and v.deletion is None and v.phase not in TERMINAL
    ]
    if not read or p.uid not in {v.uid for v in live}:
        ctx.add(kind, "counts as active", "no Job status read with the pod live", None)
        return
    at, status = read[0]
    active = int(status.get("active") or 0)
    ctx.add(
        kind,
        "counts as active (no replacement while it does)",
        f"status.active {active} at {_fmt(at)}, {len(live)} live pod(s) of the Job",
        active >= len(live),
    )


def _missing(ctx: Ctx, kind: str) -> None:
    p = ctx.pred
    first = ctx.history.first_deletion(p.uid)
    since = first.deletion_requested if first and first.deletion_requested else p.at
    poll = ctx.history.at(p.at + SETTLE)
    owner = _owner_uid(ctx)
    found = [
        v
        for v in poll.pods.values()
        if owner
        and v.owner_uid == owner
        and v.uid != p.uid
        and v.created is not None
        and v.created >= since - timedelta(seconds=5)
        and v.deletion is None
    ]
    observed = f"replacement {found[0].name} exists" if found else "no replacement"
    ctx.add(kind, "missing: no replacement", observed, not found)


# --- if the node returns ---

RETURN_PHRASES = (
    ("keeps-running", re.compile(r"replacement keeps running")),
    ("carries-on", re.compile(r"carries on|back to running in place")),
    ("recreated", re.compile(r"(?<!nothing )recreates (?!it\b)(\S+)")),
    ("job-counts-failed", re.compile(r"counts it as failed")),
    ("job-creates-replacement", re.compile(r"then creates the replacement")),
    ("gone-for-good", re.compile(r"gone for good")),
    ("ds-new-on-node", re.compile(r"creates a new one on the node")),
    ("job-finishes", re.compile(r"then job \S+ is (complete|failed)")),
    ("rollout-goes-on", re.compile(r"scales its new replicaset up")),
    (
        "old-removed",
        re.compile(
            r"removes the (object|old pod)|finishes deleting it|finishes the deletion|"
            r"kills it and removes"
        ),
    ),
)


HELD = re.compile(r"object stays until its finalizers are removed")
THEN = "only then does what follows happen:"


def _set_ready_after_return(ctx: Ctx) -> bool:
    """Whether a poll after the node's return saw every pod of the predicted pod's owner (not
    being deleted) Ready."""
    h, p = ctx.history, ctx.pred
    seen = h.last_seen(p.uid)
    owner = seen[1].owner_uid if seen else ""
    back = ctx.marks.back
    if not owner or back is None:
        return False
    for poll in h.polls:
        if poll.at < back:
            continue
        pods = [v for v in poll.pods.values() if v.owner_uid == owner and v.deletion is None]
        if pods and all(v.ready for v in pods):
            return True
    return False


def _lower_ready(ctx: Ctx) -> bool:
    """Whether a poll after the node's return, LOWER_READY_LEAD or more before the end, saw every
    ordinal below the predicted StatefulSet pod's (same owner, not being deleted) Ready. The
    audit's sets start at ordinal 0 and have no minReadySeconds (scenarios.py): neither is
    read here."""
    h, p = ctx.history, ctx.pred
    base, _, number = p.name.rpartition("-")
    seen = h.last_seen(p.uid)
    owner = seen[1].owner_uid if seen else ""
    back = ctx.marks.back
    if not owner or back is None or not number.isdigit():
        return False
    lower = {f"{base}-{i}" for i in range(int(number))}
    for poll in h.polls:
        if poll.at < back or poll.at > ctx.marks.end - LOWER_READY_LEAD:
            continue
        ready = {
            v.name
            for v in poll.pods.values()
            if v.owner_uid == owner and v.deletion is None and v.ready
        }
        if lower <= ready:
            return True
    return False


def judge_return(ctx: Ctx) -> None:
    text = ctx.pred.if_node_returns.lower()
    matched = False
    if HELD.search(text):
        # "...stays until its finalizers are removed ... Only then does what follows happen:
        # X": the object must still be there; X is conditional on a removal the audit never
        # makes, so it is not judged.
        matched = True
        _return_check(ctx, "finalizer-holds")
        text, _, then = text.partition(THEN)
        if then.strip():
            ctx.add(
                "if-node-returns:after-finalizer",
                then.strip(),
                "not judged: conditional on the finalizer's removal",
                None,
            )
    for name, pattern in RETURN_PHRASES:
        if pattern.search(text):
            matched = True
            _return_check(ctx, name)
    if not matched and text:
        ctx.add("if-node-returns:unparsed", ctx.pred.if_node_returns, "no rule for this text", None)


def _return_check(ctx: Ctx, name: str) -> None:
    p, h, m = ctx.pred, ctx.history, ctx.marks
    kind = f"if-node-returns:{name}"
    end = h.polls[-1]
    old = end.pods.get(p.uid)
    same_name = [v for v in end.pods.values() if v.namespace == p.namespace and v.name == p.name]
    if name == "keeps-running":
        listed = [
            next((v for v in end.pods.values() if v.namespace == p.namespace and v.name == n), None)
            for n in p.replacement_pods
        ]
        ok = bool(listed) and all(
            v is not None and v.deletion is None and v.phase in ("Running", "Succeeded")
            for v in listed
        )
        seen = (
            ", ".join(
                f"{n}:{v.phase if v else 'gone'}"
                for n, v in zip(p.replacement_pods, listed, strict=True)
            )
            or "no replacement existed"
        )
        ctx.add(kind, "the replacement keeps running", seen, ok)
    elif name == "carries-on":
        ok = old is not None and old.deletion is None and old.phase == "Running"
        seen = "gone" if old is None else f"{old.phase}{' Terminating' if old.deletion else ''}"
        ctx.add(kind, "the pod carries on in place", seen, ok)
    elif name == "finalizer-holds":
        seen = (
            "gone"
            if old is None
            else f"still there ({old.phase}, finalizers {list(old.finalizers)})"
        )
        ctx.add(kind, "the object stays until its finalizers are removed", seen, old is not None)
    elif name == "old-removed":
        seen = (
            "gone"
            if old is None
            else f"still there ({old.phase}, finalizers {list(old.finalizers)})"
        )
        if old is not None and ONCE_READY in p.if_node_returns:
            # removal waits for the set's other pods to be Ready, which the polls do not record
            ctx.add(kind, "removed once the other pods are Ready", seen + " (not judged)", None)
        else:
            ctx.add(kind, "the old pod object is removed", seen, old is None)
    elif name == "recreated":
        new = [v for v in same_name if v.uid != p.uid]
        seen = f"{p.name} recreated" if new else f"no new {p.name}"
        if not new and ONCE_ALL_READY in p.if_node_returns and not _set_ready_after_return(ctx):
            seen += ": the set's pods were never all Ready after the return (not judged)"
            ctx.add(kind, f"{p.name} recreated once the set is Ready", seen, None)
        elif not new and ONCE_LOWER_READY in p.if_node_returns and not _lower_ready(ctx):
            seen += ": its lower ordinals were not all Ready in time after the return (not judged)"
            ctx.add(kind, f"{p.name} recreated once its lower ordinals are Ready", seen, None)
        else:
            ctx.add(kind, f"{p.name} recreated", seen, bool(new))
        again = re.search(rf"recreates {re.escape(p.name)} on (\S+) again", p.if_node_returns)
        if again and new:
            # "on N again": its template, selector, affinity or local volume allow only N
            where = {v.node for v in new if v.node}
            ctx.add(
                "if-node-returns:same-node",
                f"{p.name} recreated on {again.group(1)}",
                f"recreated on {', '.join(sorted(where)) or 'no node yet'}",
                where == {again.group(1)} if where else None,
            )
    elif name == "gone-for-good":
        new = [v for v in same_name if v.uid != p.uid]
        ok = old is None and not new
        seen = "gone" if ok else ("still there" if old else "recreated")
        ctx.add(kind, "gone for good", seen, ok)
    elif name == "job-counts-failed":
        # Counted at any time from the pod's deletion on (the Job controller may count a
        # Terminating pod at once): status.failed at the end exceeds its value before that.
        first = h.first_deletion(p.uid)
        since = first.deletion_requested if first and first.deletion_requested else p.at
        before = h.job_failed(p.namespace, since - timedelta(seconds=1))
        after = h.job_failed(p.namespace, m.end)
        if h.job_status_since(p.namespace, m.back) is None:
            ctx.add(kind, "the Job counts it as failed", "the Job was deleted", None)
        elif before is None or after is None:
            ctx.add(kind, "the Job counts it as failed", "the Job is gone", None)
        else:
            ctx.add(
                kind,
                "the Job counts it as failed",
                f"status.failed {before} -> {after}",
                after > before,
            )
    elif name == "job-creates-replacement":
        new = _new_pods(ctx, m.back, m.end)
        status = h.job_status_since(p.namespace, m.back)
        ended = _job_ended(status)
        if new:
            ctx.add(kind, "the Job creates the replacement", f"{len(new)} new pod(s)", True)
        elif ended:
            ctx.add(kind, "the Job creates the replacement", f"none: the Job is {ended}", False)
        else:
            # The Job controller delays a pod after failures (10 s, doubled per failure):
            # beyond the watch after the return, not a contradiction.
            ctx.add(
                kind,
                "the Job creates the replacement",
                "none yet within the watch; the Job is live (pod failure backoff)",
                None,
            )
    elif name == "job-finishes":
        target = "Failed" if "is failed" in p.if_node_returns.lower() else "Complete"
        status = h.job_status_since(p.namespace, m.back)
        if status is None:
            ctx.add(kind, f"the Job is {target}", "the Job was deleted", None)
        else:
            conds = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
            seen = ", ".join(f"{t}={v}" for t, v in conds.items()) or "no condition"
            ctx.add(kind, f"the Job is {target}", seen, conds.get(target) == "True")
    elif name == "rollout-goes-on":
        new = [v for v in _namespace_pods(ctx, m.back, m.end) if v.owner_uid != _owner_uid(ctx)]
        seen = f"{len(new)} pod(s) of the new template" if new else "no pod of the new template"
        ctx.add(kind, "the Recreate rollout creates the new template's pods", seen, bool(new))
    elif name == "ds-new-on-node":
        new = [v for v in _new_pods(ctx, m.back, m.end) if v.node == p.node]
        ctx.add(kind, "a new DaemonSet pod on the node", f"{len(new)} new pod(s) on it", bool(new))


def _deleted_before(ctx: Ctx, when: datetime) -> bool:
    first = ctx.history.first_deletion(ctx.pred.uid)
    if first is not None and first.deletion_requested and first.deletion_requested < when:
        return True
    gone = ctx.history.vanished(ctx.pred.uid)
    return gone is not None and gone[1] <= when


def _deleted_by_remediate(ctx: Ctx) -> bool:
    """The pod's deletion was first asked while remediate ran on its node (before the return)."""
    started = ctx.marks.remediated_before_return(ctx.pred.node)
    first = ctx.history.first_deletion(ctx.pred.uid)
    asked = first.deletion_requested if first is not None else None
    return started is not None and asked is not None and started - EARLY <= asked <= ctx.marks.back


def _gone_before(ctx: Ctx, when: datetime) -> bool:
    """The pod's object was gone (no poll saw it) before `when`."""
    seen = ctx.history.last_seen(ctx.pred.uid)
    later = [poll for poll in ctx.history.polls if seen and seen[0] < poll.at < when]
    return seen is not None and bool(later)


def _job_ended(status: Obj | None) -> str:
    """Why a Job will create no pod any more ("" when it still may)."""
    if status is None:
        return "deleted"
    for cond in status.get("conditions") or []:
        if cond.get("status") == "True" and cond.get("type") in (
            "Complete",
            "Failed",
            "Suspended",
            "SuccessCriteriaMet",
            "FailureTarget",
        ):
            return str(cond["type"])
    return ""


def judge_claims(ctx: Ctx) -> None:
    """Typed claims (pods[].claims) when the JSON has them: counted per kind; those whose
    meaning the audit knows are judged by the rules above, the rest recorded as unjudged."""
    for claim in ctx.pred.claims:
        kind = str(claim.get("kind") or "?")
        ctx.add(
            f"claim:{kind}",
            str(claim.get("text") or claim),
            "recorded (judged through the fields it renders)",
            None,
        )


def judge(
    scenario: Scenario, preds: list[PodPrediction], history: History, limits: Any = None
) -> list[Verdict]:
    """Every verdict for one scenario. The second diagnosis' if-node-returns supersedes the
    first's for a pod both list (only the latest word before the return is judged)."""
    marks = Marks.of(history)
    latest: dict[str, PodPrediction] = {}
    verdicts: list[Verdict] = []
    for pred in [p for p in preds if p.moment == "d0"]:  # no leader (leaderless.py)
        ctx = Ctx(scenario, pred, history, marks)
        for row in leaderless.judge(pred, history):
            ctx.add(*row)
        verdicts += ctx.verdicts
    preds = [p for p in preds if p.moment != "d0"]
    for pred in preds:
        ctx = Ctx(scenario, pred, history, marks)
        judge_eviction(ctx)
        judge_paused(ctx)
        judge_replacement(ctx)
        judge_claims(ctx)
        verdicts += ctx.verdicts
        latest[pred.uid] = pred
    for pred in latest.values():
        ctx = Ctx(scenario, pred, history, marks)
        why = ""
        if pred.moment == "d1" and scenario.change_at == "late":
            why = "a late change came after this prediction"
        elif marks.remediated_before_return(pred.node) and _gone_before(ctx, marks.back):
            why = "remediate released it before the node returned"
        elif _deleted_by_remediate(ctx):
            # its delete was sent, and a finalizer kept the object until the return: what the
            # prediction spoke of (the node left alone) did not happen (audit 2038/140)
            why = "remediate deleted it before the node returned"
        elif not pred.terminating and _deleted_before(ctx, marks.back):
            # "If the node returns" spoke of a return before the eviction; the node came back
            # after it (the pod was deleted since, and no later diagnosis listed it). The
            # second diagnosis too: a pod a late rollout made is evicted its tolerationSeconds
            # later, after d2 and before the return (2075/147).
            why = "the pod was deleted before the node returned"
        if why:
            ctx.add("if-node-returns:superseded", pred.if_node_returns, f"not judged: {why}", None)
            verdicts += ctx.verdicts
            continue
        judge_return(ctx)
        verdicts += ctx.verdicts
    for pred in preds:
        run = cronrun.judge(pred, history)
        if run is not None:
            ctx = Ctx(scenario, pred, history, marks)
            ctx.add("cron:replace", *run)
            verdicts += ctx.verdicts
        skip = cronrun.judge_forbid(pred, history)
        if skip is not None:
            ctx = Ctx(scenario, pred, history, marks)
            ctx.add("cron:forbid", *skip)
            verdicts += ctx.verdicts
    for kind, pod, predicted, observed, ok in judge_shutdown(scenario, preds, history):
        verdicts.append(
            Verdict(
                kind=kind,
                seed=scenario.seed,
                index=scenario.index,
                moment="d1",
                pod=pod,
                predicted=predicted,
                observed=observed,
                ok=ok,
                scenario=scenario.describe(),
            )
        )
    if limits is not None:
        for v in verdicts:
            if v.ok is False:
                v.known_limit = limits(v)
    return verdicts


# --- remediate --confirm: what it reported against what the control plane did ---

DESTRUCTIVE = ("taint-out-of-service", "force-delete-pod", "delete-node")  # plan.ACTIONS


def _ordinal_of(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else -1


def _uid_before(history: History, namespace: str, name: str, before: datetime) -> str:
    """The uid the pod namespace/name had when remediate started."""
    for poll in reversed(history.polls):
        if poll.at > before:
            continue
        for view in poll.pods.values():
            if view.namespace == namespace and view.name == name:
                return view.uid
    return ""


def _step_pods(
    entries: Any, history: History, prefix: str, started: datetime
) -> list[tuple[str, str, str, str, str]]:
    """A step's `releases` / `leavesStuck` entries ("NS/NAME (controller)") of the audit's
    pods, with the uid each had when remediate started."""
    out = []
    for entry in entries or []:
        pod = str(entry).split(" ", 1)[0]
        if not pod.startswith(prefix):
            continue
        ns, name = pod.split("/", 1)
        uid = _uid_before(history, ns, name, started)
        if uid:
            out.append((str(entry), pod, ns, name, uid))
    return out


def _present_after(history: History, uid: str, after: datetime) -> list[datetime]:
    return [poll.at for poll in history.polls if poll.at > after and uid in poll.pods]


def judge_remediation(
    doc: Obj | None,
    exit_code: int,
    history: History,
    scenarios: dict[str, Scenario],
    prefix: str,
) -> list[Verdict]:
    """`remediate NODE --node-shutdown-confirmed NODE --confirm -o json`, run while the node was
    down (marks remediate / remediated): each destructive step's `releases` are gone after a
    `done` (and a StatefulSet's pod of that name comes back), still there after an
    `unconfirmed`; its `leavesStuck` stay; exit 0 only when every released pod went."""
    started, ended = history.marks["remediate"], history.marks["remediated"]
    back = history.marks["return"]  # judged once the batch is over
    out: list[Verdict] = []

    def add(kind: str, pod: str, predicted: str, observed: str, ok: bool | None) -> None:
        ns = pod.split("/", 1)[0]
        s = scenarios.get(ns)
        out.append(
            Verdict(
                kind=kind,
                seed=s.seed if s else -1,
                index=s.index if s else -1,
                moment="remediate",
                pod=pod,
                predicted=predicted,
                observed=observed,
                ok=ok,
                scenario=s.describe() if s else "",
            )
        )

    steps = (doc or {}).get("steps") or []
    stayed: list[str] = []
    released_ordinals: dict[str, list[int]] = {}
    for step in steps:
        for entry in step.get("releases") or []:
            pod = str(entry).split(" ", 1)[0]
            if "(statefulset)" in str(entry) and "/" in pod:
                ns, name = pod.split("/", 1)
                released_ordinals.setdefault(ns, []).append(_ordinal_of(name))
    for step in steps:
        if step.get("action") not in DESTRUCTIVE or not step.get("allowed"):
            continue
        result = str(step.get("result") or "")
        for entry, pod, ns, name, uid in _step_pods(step.get("releases"), history, prefix, started):
            seen = _present_after(history, uid, ended)
            if seen:
                stayed.append(pod)
            if result == "done":
                add(
                    "remediate:released",
                    pod,
                    f"{step['action']} done: released",
                    f"old pod still there at {_fmt(seen[0])}" if seen else "gone",
                    not seen,
                )
            elif result == "unconfirmed":
                add(
                    "remediate:released",
                    pod,
                    f"{step['action']} unconfirmed: not seen released",
                    f"still there at {_fmt(seen[0])}" if seen else "gone right after",
                    True if seen else None,
                )
            s = scenarios.get(ns)
            lower = [other for other in released_ordinals.get(ns, []) if other < _ordinal_of(name)]
            if (
                "(statefulset)" in str(entry)
                and result == "done"
                and s
                and s.change == "none"
                and s.kind == "sts-ordered"
                and lower
            ):
                # OrderedReady creates an ordinal only once the lower ones are Running and
                # Ready; a lower one released too may itself be waiting (audit 2028/164)
                add(
                    "remediate:recreated",
                    pod,
                    "released: the StatefulSet creates the pod of that name again",
                    "OrderedReady: waits for the lower ordinals (not judged)",
                    None,
                )
            elif "(statefulset)" in str(entry) and result == "done" and s and s.change == "none":
                twin = [
                    v
                    for v in history.ever().values()
                    if v.namespace == ns
                    and v.name == name
                    and v.uid != uid
                    and v.created is not None
                    and v.created >= started - timedelta(seconds=1)
                    and v.created <= back
                ]
                add(
                    "remediate:recreated",
                    pod,
                    "released: the StatefulSet creates the pod of that name again",
                    f"{name} recreated at {_fmt(twin[0].created)}" if twin else "not recreated",
                    bool(twin),
                )
        for _entry, pod, _ns, _name, uid in _step_pods(
            step.get("leavesStuck"), history, prefix, started
        ):
            last = [at for at in _present_after(history, uid, ended) if at <= back]
            add(
                "remediate:leaves-stuck",
                pod,
                f"{step['action']} leaves it stuck (finalizers)",
                f"still there at {_fmt(last[-1])}" if last else "gone",
                bool(last),
            )
    # a pod no step acts on, said to resume with the node (a DaemonSet's or static pod under a
    # force-delete plan, or one tolerating the taint): the same object stays until the return
    for step in steps:
        target = str(step.get("target") or "")
        if step.get("action") != "wait" or "resumes with the node" not in str(step.get("why")):
            continue
        for _entry, pod, _ns, _name, uid in _step_pods(
            [target.removeprefix("pod/")], history, prefix, started
        ):
            polls = [poll for poll in history.polls if ended < poll.at <= back]
            missing = [poll.at for poll in polls if uid not in poll.pods]
            add(
                "remediate:resumes",
                pod,
                "never acted on; it resumes with the node",
                f"gone at {_fmt(missing[0])}" if missing else "still there at the return",
                not missing if polls else None,
            )
    # exit 4: some step refused, skipped, failed or blocked (a finalizer nothing here removes)
    not_done = [
        str(step.get("target"))
        for step in steps
        if step.get("result") in ("refused", "skipped", "failed", "blocked")
    ]
    seed = next(iter(scenarios.values())).seed if scenarios else -1
    out.append(
        Verdict(
            kind="remediate:exit",
            seed=seed,
            index=-1,
            moment="remediate",
            pod=f"{prefix}*",
            predicted=f"exit {exit_code}",
            observed=(
                f"{len(stayed)} released pod(s) still there: {', '.join(stayed[:3])}"
                if stayed
                else "every released pod gone"
            )
            + (
                f"; {len(not_done)} step(s) not done: {', '.join(not_done[:3])}" if not_done else ""
            ),
            ok=(not stayed)
            if exit_code == 0
            else bool(stayed)
            if exit_code == 7
            else bool(not_done)
            if exit_code == 4
            else None,
        )
    )
    return out
