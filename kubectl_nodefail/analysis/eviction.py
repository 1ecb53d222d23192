"""When the taint-eviction controller deletes a pod from a tainted node, if ever."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from kubectl_nodefail.analysis import facts
from kubectl_nodefail.analysis.findings import TaintView, ZoneFinding
from kubectl_nodefail.analysis.text import ago
from kubectl_nodefail.snapshot import Obj, shifted


def tolerates(toleration: Obj, taint: TaintView) -> bool:
    """Toleration matching as in k8s.io/api core/v1 Toleration.ToleratesTaint."""
    if toleration.get("effect") and toleration["effect"] != taint.effect:
        return False
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if key and key != taint.key:
        return False
    if operator == "Exists":
        return True
    if not key:  # an empty key needs operator Exists
        return False
    return (toleration.get("value") or "") == taint.value


# Words the timeline carries for each outcome; the NEXT column and the invariants read them.
NEVER = "never evicted"
PAUSED = "no eviction while"
PENDING = "the NoExecute taint is not on the node yet"
NOT_EVICTING = "the taint-eviction controller is not evicting"

# The taint-eviction controller deletes a pod that does not tolerate a NoExecute taint as soon
# as it handles the node update: on the real control plane the deletion carries the taint's own
# second (tests/e2e/test_claims_rules.py). Such a pod without a deletionTimestamp is either that
# instant or a controller that does not run; past this many seconds, it is the latter.
EVICTION_LAG_SECONDS = 30


@dataclass
class EvictionTime:
    state: str  # evicted | scheduled | never | immediate | not-evicting | pending-taint | paused
    # | not-applicable
    at: datetime | None
    text: str


def eviction_time(
    pod: Obj,
    node_taints: list[TaintView],
    zone: ZoneFinding | None,
    master_disruption: bool,
    now: datetime,
) -> EvictionTime:
    if pod["metadata"].get("deletionTimestamp"):
        return EvictionTime(
            "evicted", None, "already being deleted (evicted or deleted by someone)"
        )
    noexec = [t for t in node_taints if t.effect == "NoExecute"]
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    deadline: datetime | None = None
    for taint in noexec:
        matching = [t for t in tolerations if tolerates(t, taint)]
        if not matching:
            age = (now - taint.time_added).total_seconds() if taint.time_added else 0.0
            if age > EVICTION_LAG_SECONDS:
                return EvictionTime(
                    "not-evicting",
                    None,
                    f"does not tolerate {taint.key}:NoExecute, added {ago(age)}: the "
                    "taint-eviction controller deletes such a pod within moments, so "
                    f"{NOT_EVICTING} (disabled in kube-controller-manager --controllers, or the "
                    "manager is down or overloaded)",
                )
            return EvictionTime(
                "immediate",
                taint.time_added,
                f"does not tolerate {taint.key}:NoExecute: evicted as soon as the "
                "taint-eviction controller sees it",
            )
        seconds = [
            t["tolerationSeconds"] for t in matching if t.get("tolerationSeconds") is not None
        ]
        if not seconds:
            continue  # tolerated forever
        when = shifted(taint.time_added or now, max(min(seconds), 0))
        deadline = when if deadline is None or when < deadline else deadline
    if deadline is not None:
        return EvictionTime(
            "scheduled",
            deadline,
            f"eviction due {ago((now - deadline).total_seconds())} "
            "(taint timeAdded + smallest tolerationSeconds)",
        )
    if noexec:
        return EvictionTime(
            "never", None, f"tolerates the NoExecute taints without a time limit: {NEVER}"
        )
    unreachable = [
        t for t in tolerations if tolerates(t, TaintView(facts.TAINT_UNREACHABLE, "NoExecute"))
    ]
    secs = [t.get("tolerationSeconds") for t in unreachable]
    if unreachable and all(s is None for s in secs):
        return EvictionTime(
            "never", None, f"tolerates unreachable/not-ready without a time limit: {NEVER}"
        )
    if master_disruption:
        return EvictionTime(
            "paused",
            None,
            "no NoExecute taint on its node: every zone is down, the controller is in master "
            f"disruption mode and taints no node: {PAUSED} every zone is down",
        )
    if zone and zone.eviction == "stopped":
        return EvictionTime(
            "paused",
            None,
            f"no NoExecute taint on its node and zone {zone.zone} is in "
            f"{zone.state}: tainting is stopped, so {PAUSED} the zone stays disrupted "
            "(pods on nodes tainted before the brake are evicted by their tolerations)",
        )
    return EvictionTime(
        "pending-taint",
        None,
        f"{PENDING} (rate-limited per zone"
        + (", slowed in this disrupted zone" if zone and zone.eviction == "slowed" else "")
        + "); eviction follows its tolerationSeconds after that",
    )
