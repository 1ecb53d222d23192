"""Judging what a diagnosis says of the volumes its failed nodes hold (map row 25), against the
VolumeAttachments polled (History.volumes): per failed node, each `volumesAttached` note's
detach outlook (`volume:held`, `volume:detach-at-once`, `volume:force-detach`), and per pod,
"a replacement elsewhere waits for detach" and a pod waiting elsewhere for a volume "still
attached to N" (`volume:waits`). Pure: diagnoses + history in, verdict tuples out."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any, Optional

from tests.audit.attach import pod_of
from tests.audit.observe import Attached, History, parse_time

Obj = dict[str, Any]
Row = tuple[str, str, str, str, str, Optional[bool]]  # kind, moment, subject, said, seen, ok

FORCE_DETACH = timedelta(minutes=6)  # the attach-detach controller's maxWaitForUnmountDuration
EARLY = timedelta(seconds=2)  # times truncated to the second
# the reconciler's loop, the API writes, the polls, on a loaded 2-core machine (the tool's own
# FORCE_DETACH_SLACK_SECONDS is the same)
LATE = timedelta(seconds=60)
AT_ONCE = timedelta(seconds=30)
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service:"
TERMINAL = ("Succeeded", "Failed")
USERS = re.compile(r"([a-z0-9][a-z0-9.-]*/[a-z0-9][a-z0-9.-]*)")
WAITS = re.compile(r"-> PV (\S+) is still attached to (\S+) \(VolumeAttachment")
# "force-detached 6 minutes later[, and not before about T: (a new leader's wait)], since …",
# and with no pod object left there, "… 6 minutes after the last one using it there was gone
# (when, the snapshot does not show)[, and not before about T: …], since …"
FORCED = re.compile(
    r"force-detached 6 minutes (?:later|after the last one using it there was gone \(when, the "
    r"snapshot does not show\))(?:, and not before about (\S+Z):[^;]*?)?, since"
)
# "no pod object on N uses it: force-detached by about T (6 minutes after …), since …"
FORCED_BY = re.compile(r"force-detached by about (\S+Z) \(")


def judge(said: dict[str, Obj], history: History, nodes: list[str], prefix: str) -> list[Row]:
    out: list[Row] = []
    for moment, diagnosis in said.items():
        captured = _time(diagnosis.get("capturedAt"))
        if captured is None:
            continue
        for node in diagnosis.get("nodes") or []:
            if node.get("name") not in nodes:
                continue
            for note in node.get("volumesAttached") or []:
                pv, _, outlook = str(note).partition("; detach: ")
                pv = pv.split(" ", 1)[0]
                if pv.startswith(f"pv-{prefix}") and outlook:
                    out += _outlook(moment, captured, pv, node["name"], outlook, history)
        for pod in diagnosis.get("pods") or []:
            if not str(pod.get("namespace", "")).startswith(prefix):
                continue
            for claim in pod.get("claims") or []:
                found = WAITS.search(str(claim.get("text") or ""))
                if claim.get("kind") == "volume" and found:
                    out.append(_waits(moment, captured, found[1], found[2], history))
    return out


def _outlook(
    moment: str, captured: datetime, pv: str, node: str, outlook: str, history: History
) -> list[Row]:
    subject = f"{pv} on {node}"
    back = history.marks.get("return")
    if back is None:
        return []
    held = outlook.startswith("not detached while pod object")
    users = USERS.findall(outlook.split(" still ", 1)[0]) if held else []
    gone = users_gone(history, node, users, pv, back)
    removed = _removed(history, pv, node, captured, back)
    out: list[Row] = []
    if held:
        until = gone[1] if gone else back
        early = removed is not None and removed < until
        out.append(
            (
                "volume:held",
                moment,
                subject,
                f"not detached while {', '.join(users)} stand on {node}",
                f"detached at {removed:%H:%M:%S}, before they were gone ({until:%H:%M:%S})"
                if early
                else f"attached until they were gone or the node returned ({until:%H:%M:%S})",
                not early,
            )
        )
    if "detached at once" in outlook:
        out.append(_at_once(moment, subject, outlook, gone, removed))
    elif (forced := FORCED.search(outlook)) is not None:
        floor = _time(forced[1]) if forced[1] else None
        out.append(_force(moment, subject, gone, removed, back, history, node, floor))
    elif (by := FORCED_BY.search(outlook)) is not None:
        latest = _time(by[1])
        out.append(_force(moment, subject, gone, removed, back, history, node, latest=latest))
    elif not held:
        out.append(("volume:other", moment, subject, outlook, "not judged", None))
    return out


def _at_once(
    moment: str,
    subject: str,
    outlook: str,
    gone: tuple[datetime, datetime] | None,
    removed: datetime | None,
) -> Row:
    said = outlook.split("; ", 1)[-1] if outlook.startswith("not detached") else outlook
    if gone is None:
        return ("volume:detach-at-once", moment, subject, said, "its users stayed", None)
    ok = removed is not None and removed <= gone[1] + AT_ONCE
    seen = f"detached at {removed:%H:%M:%S}" if removed else "not detached before the return"
    return (
        "volume:detach-at-once",
        moment,
        subject,
        said,
        f"{seen}; users gone by {gone[1]:%H:%M:%S}",
        ok,
    )


def _force(
    moment: str,
    subject: str,
    gone: tuple[datetime, datetime] | None,
    removed: datetime | None,
    back: datetime,
    history: History,
    node: str,
    floor: datetime | None = None,
    latest: datetime | None = None,
) -> Row:
    """`floor`: "and not before about T" (a new leader started its wait then); `latest`: "by
    about T" (6 minutes after a time by which the last pod object there was gone)."""
    said = "force-detached 6 minutes after the last pod object there is gone" + (
        f", not before {floor:%H:%M:%S}" if floor else ""
    )
    if latest is not None:
        said = f"force-detached by about {latest:%H:%M:%S}"
    if gone is None:
        return ("volume:force-detach", moment, subject, said, "its users stayed", None)
    low, high = gone[0] + FORCE_DETACH - EARLY, gone[1] + FORCE_DETACH + LATE
    if floor is not None:
        low, high = max(low, floor - EARLY), max(high, floor + LATE)
    if latest is not None:  # the sentence's own bound, with the judge's slack
        high = min(high, latest + LATE)
    window = f"due {low + EARLY:%H:%M:%S}-{high - LATE:%H:%M:%S}"
    seen = f"detached at {removed:%H:%M:%S}" if removed else "not detached before the return"
    acted = history.marks.get("remediate") if history.remediated == node else None
    if acted is not None and acted < high:
        states = [t for _, t in history.node_changes(node, acted, back)]
        if any(t and any(x.startswith(OUT_OF_SERVICE) for x in t) for t in states):
            # the outlook's own alternative: "the out-of-service taint detaches it at once"
            ok = removed is not None and removed <= max(acted, gone[1]) + LATE
            return (
                "volume:force-detach",
                moment,
                subject,
                f"{said}; at once under the out-of-service taint",
                f"{seen}; remediate from {acted:%H:%M:%S}",
                ok,
            )
        if any(t is None for t in states):
            return (
                "volume:force-detach",
                moment,
                subject,
                said,
                f"{seen}; the Node was deleted from {acted:%H:%M:%S}, before the time said",
                None,
            )
    if removed is not None:
        return (
            "volume:force-detach",
            moment,
            subject,
            said,
            f"{seen}, {window}",
            low <= removed <= high,
        )
    if back < high:
        return (
            "volume:force-detach",
            moment,
            subject,
            said,
            f"{seen}, {window}: the node returned first",
            None,
        )
    return ("volume:force-detach", moment, subject, said, f"{seen}, {window}", False)


def _waits(moment: str, captured: datetime, pv: str, node: str, history: History) -> Row:
    """While the attachment on `node` stands, the controller attaches the volume nowhere else
    (ReadWriteOnce: Multi-Attach)."""
    said = f"{pv} attached nowhere else while attached to {node}"
    for at, states in history.volumes.get(pv, []):
        if at < captured - timedelta(seconds=1) and _stands(states, node):
            continue
        if _stands(states, node) and any(n != node and a for n, a, _ in states):
            other = next(n for n, a, _ in states if n != node and a)
            return (
                "volume:waits",
                moment,
                pv,
                said,
                f"also attached to {other} at {at:%H:%M:%S}",
                False,
            )
    return ("volume:waits", moment, pv, said, "never attached elsewhere meanwhile", True)


def _stands(states: tuple[Attached, ...], node: str) -> bool:
    return any(n == node and not deleting for n, _, deleting in states)


def _removed(
    history: History, pv: str, node: str, since: datetime, until: datetime
) -> datetime | None:
    """When the attachment on `node` was first polled gone or being deleted in (since, until]."""
    for at, states in history.volumes.get(pv, []):
        if since < at <= until and not _stands(states, node):
            return at
    return None


def users_gone(
    history: History, node: str, users: list[str], pv: str, until: datetime
) -> tuple[datetime, datetime] | None:
    """(last poll that saw a pod object using the volume on `node`, first poll after it that
    did not), the users being those named, else the StatefulSet pod the PV is bound for; None
    if one still stood at `until` or none was ever seen there. A pod Succeeded or Failed uses
    nothing, object or not (the attach-detach controller's IsPodTerminated: a graceful
    shutdown's pod, held by a finalizer, 2064/101)."""
    names = set(users)
    if not names:
        owner = pod_of(pv)
        names = {f"{owner[0]}/{owner[1]}"} if owner else set()
    seen: datetime | None = None
    gone: datetime | None = None
    for poll in history.polls:
        if poll.at > until:
            break
        if any(
            f"{v.namespace}/{v.name}" in names and v.node == node and v.phase not in TERMINAL
            for v in poll.pods.values()
        ):
            seen, gone = poll.at, None
        elif seen is not None and gone is None:
            gone = poll.at
    if seen is None or gone is None:
        return None
    return seen, gone


def _time(value: Any) -> datetime | None:
    return parse_time(value) if isinstance(value, str) else None
