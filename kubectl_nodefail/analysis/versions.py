"""What changes with the server's Kubernetes minor, in one table, and the sentences that say
which behaviour the analysis applied for a given server (in `-o json`: `serverBehaviour`).

Every row is a behaviour the diagnosis or the plan depends on; the e2e matrix
(tests/e2e/test_versions.py) checks the rows it can observe on a real control plane of each
tested minor. The feature stages are those of Kubernetes' own feature-gate tables.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_nodefail.analysis import facts
from kubectl_nodefail.analysis.claims import DUMP_OBJECT, Claim, Premise, claim

OLDEST_TESTED_MINOR = 26
NEWEST_TESTED_MINOR = 36


@dataclass(frozen=True)
class Behaviour:
    """The behaviours of one minor that the analysis relies on."""

    minor: int
    # --enable-taint-manager still exists (removed in 1.27): with it false, the node lifecycle
    # controller deletes pods itself and first sets their reason NodeLost (kubectl: Unknown).
    node_lost_possible: bool
    node_monitor_grace_seconds: int  # kube-controller-manager default
    out_of_service: str  # stage of NodeOutOfServiceVolumeDetach: ga | beta | alpha | none
    out_of_service_on_by_default: bool
    disruption_target: str  # PodDisruptionConditions: ga | beta | alpha | none
    pod_replacement_policy: str  # JobPodReplacementPolicy: ga | beta | alpha | none


def _stage(minor: int, alpha: int, beta: int, ga: int) -> str:
    if minor >= ga:
        return "ga"
    if minor >= beta:
        return "beta"
    return "alpha" if minor >= alpha else "none"


def behaviour(minor: int) -> Behaviour:
    out_of_service = _stage(
        minor, 24, facts.OUT_OF_SERVICE_BETA_MINOR, facts.OUT_OF_SERVICE_GA_MINOR
    )
    return Behaviour(
        minor=minor,
        node_lost_possible=minor < facts.NODE_LOST_REMOVED_MINOR,
        node_monitor_grace_seconds=(
            facts.NODE_MONITOR_GRACE_SECONDS
            if minor >= facts.NODE_MONITOR_GRACE_50S_MINOR
            else facts.NODE_MONITOR_GRACE_SECONDS_BEFORE_1_32
        ),
        out_of_service=out_of_service,
        out_of_service_on_by_default=out_of_service in ("beta", "ga"),
        disruption_target=_stage(minor, 25, 26, 31),
        pod_replacement_policy=_stage(minor, 28, 29, 34),
    )


def out_of_service_usable(minor: int | None) -> bool:
    """Whether the out-of-service taint force-deletes pods with the server's default feature
    gates (beta and on by default from 1.26, GA from 1.28). Unknown server: assume current."""
    return minor is None or behaviour(minor).out_of_service_on_by_default


def applied(minor: int | None) -> list[str]:
    """One sentence per version-dependent behaviour, saying which one this diagnosis applied."""
    if minor is None:
        return [
            "server version unknown: the behaviour of the newest tested minor "
            f"(1.{NEWEST_TESTED_MINOR}) is assumed"
        ]
    b = behaviour(minor)
    notes = []
    if minor < OLDEST_TESTED_MINOR or minor > NEWEST_TESTED_MINOR:
        notes.append(
            f"1.{minor} is outside the tested minors (1.{OLDEST_TESTED_MINOR}-"
            f"1.{NEWEST_TESTED_MINOR}): the nearest tested minor's behaviour is assumed"
        )
    if b.node_lost_possible:
        notes.append(
            f"1.{minor}: pods on an unreachable node are evicted by the taint manager (the "
            "default: Running, then Terminating) or, when the controller-manager runs with "
            "--enable-taint-manager=false, deleted by the node lifecycle controller with reason "
            "NodeLost (kubectl: Unknown); both are recognised"
        )
    else:
        notes.append(
            f"1.{minor}: pods on an unreachable node stay Running until the taint manager "
            "evicts them, then show Terminating (NodeLost left with 1.27)"
        )
    notes.append(
        f"1.{minor}: node-monitor-grace-period default {b.node_monitor_grace_seconds}s "
        "(40s before 1.32, 50s from 1.32)"
    )
    if b.out_of_service_on_by_default:
        notes.append(
            f"1.{minor}: out-of-service taint {b.out_of_service.upper()} "
            + ("" if b.out_of_service == "ga" else "(on by default) ")
            + "- remediate's default strategy is out-of-service"
        )
    else:
        notes.append(
            f"1.{minor}: out-of-service taint {b.out_of_service} (off by default) - "
            "remediate's default strategy is force-delete"
        )
    if b.pod_replacement_policy in ("none", "alpha"):
        notes.append(
            f"1.{minor}: Jobs have no podReplacementPolicy; a Terminating pod is replaced at "
            "once unless the Job has a podFailurePolicy (then only once it has failed)"
        )
    else:
        notes.append(
            f"1.{minor}: Job podReplacementPolicy {b.pod_replacement_policy} "
            "(default TerminatingOrFailed; Failed with a podFailurePolicy)"
        )
    notes.append(
        f"1.{minor}: DisruptionTarget pod condition "
        + (
            b.disruption_target.upper()
            if b.disruption_target == "ga"
            else f"{b.disruption_target} (on by default from 1.26)"
        )
    )
    return notes


def applied_claims(server_version: str | None, minor: int | None) -> list[Claim]:
    """`applied` as claims: each rests on the server's version as it was read (/version, or a
    dump's serverVersion), which alone picks the behaviour."""
    read = Premise(DUMP_OBJECT, "serverVersion", server_version)
    return [claim("server-behaviour", "versions", text, read) for text in applied(minor)]
