"""cluster-autoscaler and the cloud node lifecycle controller: what their own marks on a
failed Node (cluster-autoscaler's taints, the cloud provider's shutdown taint) say they do
to it, and when."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from kubectl_nodefail.analysis.automation.coverage import (
    DUE,
    OVERDUE,
    OVERDUE_SECONDS,
    SCHEDULED,
    WATCHING,
    Coverage,
    _taint,
    _when,
    in_flight,
)
from kubectl_nodefail.analysis.claims import Claim, claim, fact
from kubectl_nodefail.analysis.facts import TAINT_CLOUD_SHUTDOWN
from kubectl_nodefail.snapshot.model import Obj, format_time, shifted

CLUSTER_AUTOSCALER = "cluster-autoscaler"
CLOUD_LIFECYCLE = "cloud node lifecycle controller"
# cluster-autoscaler's taints, their values the Unix second they were set
# (kubernetes/autoscaler cluster-autoscaler/utils/taints/taints.go)
CA_TO_BE_DELETED = "ToBeDeletedByClusterAutoscaler"
CA_DELETION_CANDIDATE = "DeletionCandidateOfClusterAutoscaler"
# --scale-down-unready-time's default (cluster-autoscaler/main.go): the flag is not visible
# through the API, so a claim using it says so.
CA_SCALE_DOWN_UNREADY_SECONDS = 20 * 60


def _unix(value: Any) -> datetime | None:
    try:
        return datetime.fromtimestamp(int(str(value)), tz=timezone.utc)
    except (ValueError, OverflowError, OSError):
        return None


def _autoscaler(node: Obj, now: datetime) -> Coverage | None:
    """cluster-autoscaler's own marks on the Node: ToBeDeletedByClusterAutoscaler (deleting it
    now) and DeletionCandidateOfClusterAutoscaler (unneeded since its value): an unready node
    unneeded for --scale-down-unready-time (20 min by default) is removed."""
    name = node["metadata"]["name"]
    deleting = _taint(node, CA_TO_BE_DELETED)
    if deleting is not None:
        since = _unix(deleting.get("value"))
        cov_claims: list[Claim] = []
        state, at = in_flight(
            cov_claims,
            since,
            now,
            [fact("Node", node, f"spec.taints[key={CA_TO_BE_DELETED}].value")],
            f"cluster-autoscaler is removing the node (taint {CA_TO_BE_DELETED}"
            + (f" since {_when(since, now)}" if since else "")
            + "): it drains it and deletes the machine from its node group",
            lambda at, took: (
                f"cluster-autoscaler began removing the node at {at} (taint {CA_TO_BE_DELETED}) "
                f"and it is still here {took} on, where that takes minutes (pods get at most "
                "--max-graceful-termination-sec, 600 s by default, then the cloud deletes the "
                "machine; a deletion that fails takes the taint off, and so does "
                "cluster-autoscaler starting): cluster-autoscaler probably does not run, or its "
                "node group's deletion hangs"
            ),
        )
        text = cov_claims[-1].text
        return Coverage(CLUSTER_AUTOSCALER, f"Node/{name}", state, at, text, cov_claims)
    candidate = _taint(node, CA_DELETION_CANDIDATE)
    since = _unix((candidate or {}).get("value"))
    if candidate is None or since is None:
        return None
    at = shifted(since, CA_SCALE_DOWN_UNREADY_SECONDS)
    premise = fact("Node", node, f"spec.taints[key={CA_DELETION_CANDIDATE}].value")
    late = (now - at).total_seconds()
    if late > OVERDUE_SECONDS:
        text = (
            f"cluster-autoscaler has found the node unneeded since {format_time(since)} and has "
            f"not removed it {timedelta(seconds=round(late))} after the default "
            f"--scale-down-unready-time (20 min) ended at {format_time(at)}, where it scans "
            "every 10 s: it is probably not running, or runs with a longer "
            "--scale-down-unready-time (not visible through the API), or its node group "
            "cannot shrink; remediate does not wait for it"
        )
        absent = fact("Node", node, f"spec.taints[key={CA_TO_BE_DELETED}].value")
        cov_claims = [claim("automation-overdue", "automation", text, premise, absent)]
        return Coverage(CLUSTER_AUTOSCALER, f"Node/{name}", OVERDUE, at, text, cov_claims)
    if at <= now:
        state, text = (
            DUE,
            (
                f"cluster-autoscaler has found the node unneeded since {_when(since, now)}: with "
                "the default --scale-down-unready-time (20 min; the flag is not visible through "
                f"the API) an unready node is removed from {format_time(at)} on, at its next scan"
            ),
        )
        kind = "automation-due"
    else:
        state, text = (
            SCHEDULED,
            (
                f"cluster-autoscaler removes the node at {_when(at, now)}: unneeded since "
                f"{format_time(since)}, plus the default --scale-down-unready-time 20 min "
                "(the flag is not visible through the API), if it stays unneeded"
            ),
        )
        kind = "automation-scheduled"
    cov_claims = [claim(kind, "automation", text, premise)]
    return Coverage(CLUSTER_AUTOSCALER, f"Node/{name}", state, at, text, cov_claims)


def _cloud_lifecycle(node: Obj, now: datetime) -> Coverage | None:
    """The cloud node lifecycle controller (k8s.io/cloud-provider controllers/nodelifecycle,
    MonitorNodes), every --node-monitor-period (5 s by default): a Node not Ready whose instance
    no longer exists is deleted; one whose instance exists but is shut down gets (keeps) the
    node.cloudprovider.kubernetes.io/shutdown taint; a Ready one loses it. So a Node carrying the
    taint has an instance that existed at the last check: the controller replaces nothing and
    fences nothing, and deletes this Node only if someone else deletes the instance. remediate
    does not stand back (docs/automation.md: why that is safe)."""
    taint = _taint(node, TAINT_CLOUD_SHUTDOWN)
    if taint is None:
        return None
    text = (
        f"the cloud node lifecycle controller reports the instance shut down (taint "
        f"{TAINT_CLOUD_SHUTDOWN}); it replaces nothing: it re-checks every 5 s (its default "
        "--node-monitor-period) and deletes the Node only once the instance no longer exists "
        "(deleted by someone else), or lifts the taint if the node is Ready again"
    )
    cov_claims = [
        claim(
            "covered-by",
            "automation",
            text,
            fact("Node", node, f"spec.taints[key={TAINT_CLOUD_SHUTDOWN}].effect"),
        )
    ]
    del now
    name = node["metadata"]["name"]
    return Coverage(CLOUD_LIFECYCLE, f"Node/{name}", WATCHING, None, text, cov_claims)
