"""When the taint-eviction controller deletes a pod from a tainted node, if ever."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from kubectl_nodefail.analysis import facts
from kubectl_nodefail.analysis.claims import Claim, claim, fact
from kubectl_nodefail.analysis.findings import TaintView, ZoneFinding
from kubectl_nodefail.analysis.text import ago
from kubectl_nodefail.snapshot.model import Obj, parse_time, shifted


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


# The out-of-service taint as remediate applies it (remediate/mutations.py): a pod that
# tolerates it with no time limit stays under it, and PodGC force-deletes only Terminating pods
# there.
OUT_OF_SERVICE = TaintView(facts.TAINT_OUT_OF_SERVICE, "NoExecute", "nodeshutdown")


def stays_under_out_of_service(pod: Obj) -> bool:
    """The pod tolerates the out-of-service taint without a time limit (a blanket `operator:
    Exists`, or that key): the taint evicts it never, so it does not release it."""
    return any(
        tolerates(t, OUT_OF_SERVICE) and t.get("tolerationSeconds") is None
        for t in (pod.get("spec") or {}).get("tolerations") or []
    )


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


def arrived(pod: Obj) -> datetime | None:
    """When the pod was bound to its node, as the API records it: its PodScheduled condition's
    lastTransitionTime (the scheduler's binding, or the kubelet's first status for a pod created
    with spec.nodeName), else its creationTimestamp (spec.nodeName set at creation, no status
    posted since). The taint-eviction controller counts tolerationSeconds from when it first
    sees the pod on a tainted node: the later of this and the taint's timeAdded."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "True":
            when = parse_time(cond.get("lastTransitionTime"))
            if when is not None:
                return when
    return parse_time(pod["metadata"].get("creationTimestamp"))


def _seen(taint: TaintView, pod_arrived: datetime | None) -> tuple[datetime | None, bool]:
    """(when the controller first saw this pod under this taint, whether that was the pod's
    arrival rather than the taint's)."""
    if taint.time_added is None or pod_arrived is None or pod_arrived <= taint.time_added:
        return taint.time_added, False
    return pod_arrived, True


@dataclass
class EvictionTime:
    state: str  # evicted | scheduled | never | immediate | not-evicting | pending-taint | paused
    # | not-applicable
    at: datetime | None
    text: str


def as_claim(ev: EvictionTime, pod: Obj, node: Obj | None, zone: ZoneFinding | None) -> Claim:
    """The timeline's sentence as a claim, with the facts `eviction_time` computed it from: the
    deletion already asked, else the pod's tolerations, the node's taints, when the pod reached
    the node (for a count from its arrival), and, where no NoExecute taint is on the node yet,
    the zone counts that decide whether one comes."""
    because = [fact("Pod", pod, "metadata.deletionTimestamp")]
    if ev.state != "evicted":
        because.append(fact("Pod", pod, "spec.tolerations"))
        if node is not None:
            keys = [
                t.get("key")
                for t in (node.get("spec") or {}).get("taints") or []
                if isinstance(t, dict) and t.get("effect") == "NoExecute" and t.get("key")
            ]
            # each NoExecute taint by its time, or (none on the node yet) that there is none
            paths = [f"spec.taints[key={k},effect=NoExecute].timeAdded" for k in keys]
            because += [fact("Node", node, p) for p in paths or ["spec.taints[effect=NoExecute]"]]
    if ev.state in ("scheduled", "immediate", "not-evicting"):
        because += [
            fact("Pod", pod, "status.conditions[type=PodScheduled].lastTransitionTime"),
            fact("Pod", pod, "metadata.creationTimestamp"),
        ]
    if ev.state in ("paused", "pending-taint") and zone is not None and zone.claims:
        because += zone.claims[0].because
    return claim("eviction", "eviction", ev.text, *because)


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
    after_arrival = False  # the deadline counts from the pod's arrival, after the taint
    pod_arrived = arrived(pod)
    for taint in noexec:
        matching = [t for t in tolerations if tolerates(t, taint)]
        seen, by_arrival = _seen(taint, pod_arrived)
        if not matching:
            age = (now - seen).total_seconds() if seen else 0.0
            if age > EVICTION_LAG_SECONDS:
                return EvictionTime(
                    "not-evicting",
                    None,
                    f"does not tolerate {taint.key}:NoExecute, "
                    + (
                        f"bound to the tainted node {ago(age)}"
                        if by_arrival
                        else f"added {ago(age)}"
                    )
                    + ": the "
                    "taint-eviction controller deletes such a pod within moments, so "
                    f"{NOT_EVICTING} (disabled in kube-controller-manager --controllers, or the "
                    "manager is down or overloaded)",
                )
            return EvictionTime(
                "immediate",
                seen,
                f"does not tolerate {taint.key}:NoExecute: evicted as soon as the "
                "taint-eviction controller sees it",
            )
        seconds = [
            t["tolerationSeconds"] for t in matching if t.get("tolerationSeconds") is not None
        ]
        if not seconds:
            continue  # tolerated forever
        when = shifted(seen or now, max(min(seconds), 0))
        if deadline is None or when < deadline:
            deadline, after_arrival = when, by_arrival
    if deadline is not None:
        start = (
            "the pod's arrival on the tainted node (PodScheduled, else creationTimestamp: "
            "the controller counts from when it first sees the pod there)"
            if after_arrival
            else "taint timeAdded"
        )
        late = (now - deadline).total_seconds()
        if late > EVICTION_LAG_SECONDS:
            return EvictionTime(
                "not-evicting",
                None,
                f"eviction was due {ago(late)} ({start} + smallest tolerationSeconds) and it "
                f"has not happened: {NOT_EVICTING} (disabled, down or overloaded), or "
                "kube-controller-manager restarted since and counts its tolerations again from "
                "its start",
            )
        return EvictionTime(
            "scheduled",
            deadline,
            f"eviction due {ago(late)} ({start} + smallest tolerationSeconds)",
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
            f"{zone.state}: tainting is stopped, so {PAUSED} the zone stays in {zone.state} "
            "(pods on nodes tainted before the brake are evicted by their tolerations)",
        )
    return EvictionTime(
        "pending-taint",
        None,
        f"{PENDING} (rate-limited per zone"
        + (", slowed in this disrupted zone" if zone and zone.eviction == "slowed" else "")
        + "); eviction follows its tolerationSeconds after that",
    )
