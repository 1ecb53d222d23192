"""Judging a graceful node shutdown's pods (scenarios change `shutdown`, map row 24): the kubelet
set each Failed before the machine went off. The diagnosis does not list such a pod as stuck
(it had finished: diagnose._stuck_pod), which rests on the pod holding nothing up: its owner
replaces it (a StatefulSet deletes it at once, its phase being Failed, and creates the name
again; a DaemonSet, on that node once it is back). Both halves are judged here, from the
polls."""

from __future__ import annotations

from datetime import datetime

from tests.audit.observe import History, PodView, parse_time
from tests.audit.predictions import PodPrediction
from tests.audit.scenarios import KINDS, Scenario

# kinds whose owner makes a new pod for a Failed one (a bare pod has none; a Job another
# controller manages is that controller's business)
REPLACED_BY_OWNER = tuple(k for k in KINDS if k != "bare")


def judge_shutdown(
    scenario: Scenario, preds: list[PodPrediction], history: History
) -> list[tuple[str, str, str, str, bool | None]]:
    """(kind, pod, predicted, observed, ok) for each pod the scenario's shutdown wrote Failed."""
    out: list[tuple[str, str, str, str, bool | None]] = []
    if scenario.change != "shutdown":
        return out
    ever = history.ever()
    back = history.marks.get("return")
    for uid, when in sorted(history.shut_down.items()):
        view = ever.get(uid)
        if view is None or view.namespace != scenario.namespace:
            continue
        pod = f"{view.namespace}/{view.name}"
        listed = [p.moment for p in preds if p.uid == uid and not p.terminating]
        out.append(
            (
                "shutdown:not-stuck",
                pod,
                "not listed as stuck: Failed by the kubelet's shutdown before the node went off",
                f"listed by {', '.join(listed)}" if listed else "not listed",
                not listed,
            )
        )
        if scenario.kind not in REPLACED_BY_OWNER or back is None:
            continue
        blocked = [
            p.moment
            for p in preds
            if p.uid == uid and p.terminating and p.replacement_state == "blocked"
        ]
        if blocked:
            # deleted, and a finalizer keeps the object whose name its StatefulSet waits for
            # (2048/93): the diagnosis listed it as blocking, which replacement:blocked judges
            out.append(
                (
                    "shutdown:replaced",
                    pod,
                    f"listed by {', '.join(blocked)} as blocking its owner's replacement",
                    "not judged here: replacement:blocked judges it",
                    None,
                )
            )
            continue
        since = parse_time(when)
        if (
            scenario.kind == "sts-ordered"
            and since
            and _lower_not_ready(history, view, since, back)
        ):
            # OrderedReady makes ordinal N again only once every lower one runs Ready: one
            # pinned to the dead node never does (2046/155, 168, 198)
            out.append(
                (
                    "shutdown:replaced",
                    pod,
                    f"holds nothing up: its owner makes a new pod named {view.name}",
                    "not judged: OrderedReady waits for a lower ordinal not Ready",
                    None,
                )
            )
            continue
        # a DaemonSet makes no pod on a node that is not Ready (it does not tolerate the
        # unreachable and not-ready NoSchedule taints): its new pod there comes once the node
        # is back (2047/130, 171)
        daemon = scenario.kind == "daemonset"
        until = (history.marks.get("end") or back) if daemon else back
        new = [
            v
            for v in ever.values()
            if _same_owner(v, view)
            and v.uid != uid
            and (not daemon or v.node == view.node)
            and v.created is not None
            and since is not None
            and since <= v.created <= until
        ]
        if daemon:
            said, missing = "its DaemonSet makes a new pod on the node once it is back", "none"
        else:
            said = "its owner makes a new pod" + (
                f" named {view.name}" if scenario.kind.startswith("sts") else ""
            )
            missing = "none before the return"
        out.append(
            (
                "shutdown:replaced",
                pod,
                f"holds nothing up: {said}",
                f"{new[0].name} created at {new[0].created:%H:%M:%S}" if new else missing,
                bool(new),
            )
        )
    return out


def _same_owner(other: PodView, pod: PodView) -> bool:
    """A pod standing in for `pod`: of the same owner; a StatefulSet's, of the same name."""
    if not pod.owner_uid or other.owner_uid != pod.owner_uid:
        return False
    return other.name == pod.name if pod.owner_kind == "StatefulSet" else True


def _lower_not_ready(history: History, pod: PodView, since: datetime, back: datetime) -> bool:
    """A lower ordinal of the pod's StatefulSet was never Running, Ready and not being deleted
    between the shutdown and the return (the controller's OrderedReady waits for a Terminating
    one to go: 2057/17, its w-1 evicted, still Ready in the poll after the shutdown)."""
    base, _, tail = pod.name.rpartition("-")
    if not tail.isdigit():
        return False
    ready = {
        v.name
        for poll in history.polls
        if since <= poll.at <= back
        for v in poll.pods.values()
        if v.owner_uid == pod.owner_uid and v.ready and v.phase == "Running" and v.deletion is None
    }
    return any(f"{base}-{k}" not in ready for k in range(int(tail)))
