"""The pure analysis over snapshots recorded from the real control plane (scenarios 1-13)."""

from __future__ import annotations

from datetime import timedelta

from kubectl_nodefail.analysis import summary
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.findings import Report
from tests.unit.conftest import load, pod, report_of, stale_ready_node

DOWN, NS = "flaky-a", "scenario-down"


def _node(report: Report, name: str):  # type: ignore[no-untyped-def]
    return next(n for n in report.nodes if n.name == name)


def test_before_eviction_node_cause_is_a_silent_kubelet(before_eviction: Report) -> None:
    node = _node(before_eviction, DOWN)
    assert node.failed and node.status == "NotReady"
    assert node.cause.code == "kubelet-stopped" and node.cause.confidence == "high"
    assert node.ready is not None and node.ready.reason == "NodeStatusUnknown"
    assert any("(stale)" in e for e in node.cause.evidence)
    assert {(t.key, t.effect) for t in node.taints} == {
        ("node.kubernetes.io/unreachable", "NoSchedule"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
    }
    assert node.shutdown_evidence == []  # nothing proves the machine is off
    assert node.action is not None and node.action.code == "investigate"
    zone = next(z for z in before_eviction.zones if z.zone == node.zone)
    assert zone.state == "Normal" and zone.eviction == "proceeding" and zone.not_ready == 1


def test_before_eviction_running_pods_are_only_a_last_report(before_eviction: Report) -> None:
    web = pod(before_eviction, NS, "web")
    assert web.kubectl_status == "Running" and not web.terminating
    assert "only the last report" in web.meaning and "unknown" in web.meaning
    taint = next(t for t in _node(before_eviction, DOWN).taints if t.effect == "NoExecute")
    assert taint.time_added is not None
    assert web.eviction_at == taint.time_added + timedelta(seconds=20)  # tolerationSeconds 20
    assert web.action.code == "wait" and web.action.until == web.eviction_at
    assert web.replacement.state == "not-yet"
    agent = pod(before_eviction, NS, "agent")
    assert agent.controller == "daemonset" and agent.eviction_at is None
    assert "never evicted" in agent.timeline


def test_after_eviction_deployment_pod_is_cosmetic(after_eviction: Report) -> None:
    web = pod(after_eviction, NS, "web")
    assert web.kubectl_status == "Terminating" and web.category == "terminating-on-failed-node"
    assert [o.kind for o in web.owner_chain] == ["ReplicaSet", "Deployment"]
    assert web.controller == "deployment"
    assert web.replacement.state == "running" and f"on {DOWN}" not in web.replacement.summary
    assert web.stuck_seconds is not None and web.stuck_seconds > 0
    assert "evicted by the taint-eviction controller" in web.meaning
    assert web.action.code == "wait" and web.action.risk == "low"


def test_after_eviction_pinned_replacement_is_pending(after_eviction: Report) -> None:
    rows = [p for p in after_eviction.pods if p.namespace == NS and p.name.startswith("pinned-")]
    stuck = next(p for p in rows if p.node_failed)
    assert stuck.replacement.state == "pending"
    assert stuck.replacement.pending_reason.startswith("pinned: nodeSelector")
    assert stuck.action.code == "investigate"
    # The Pending replacement is a victim of the failure too: listed, counted, on no node.
    (waiting,) = [p for p in rows if not p.node_failed]
    assert waiting.name in stuck.replacement.pods
    assert waiting.category == "waiting-for-node" and waiting.node == ""
    assert "may run only on flaky-a (its nodeSelector)" in waiting.explanation
    assert summary.counts(after_eviction).waiting_for_node == 1


def test_after_eviction_statefulset_blocks_its_own_name(after_eviction: Report) -> None:
    db = pod(after_eviction, NS, "db-0")
    assert db.controller == "statefulset" and db.replacement.state == "blocked"
    assert "OrderedReady" in db.explanation and "at-most-one" in db.explanation
    assert db.action.code == "out-of-service" and db.action.risk == "high"
    assert db.action.remediate == (
        "kubectl nodefail remediate flaky-a --node-shutdown-confirmed "
        "<NODE-YOU-VERIFIED-IS-POWERED-OFF>"
    )
    assert db.action.if_still_running and not db.action.kubectl
    assert "recreates db-0" in db.if_node_returns


def test_after_eviction_jobs_follow_their_replacement_policy(after_eviction: Report) -> None:
    batch = pod(after_eviction, NS, "batch")
    assert batch.controller == "job"
    # replaced at once (TerminatingOrFailed), and the replacement succeeded: the Job is
    # SuccessCriteriaMet, but not Complete while this pod stays Terminating (recorded so from
    # v1.36), so it is not cosmetic; its replacement policy no longer matters and is not said
    assert batch.replacement.state == "blocked" and batch.replacement.pods
    assert "SuccessCriteriaMet=True but is not Complete" in batch.explanation
    assert batch.action.code == "out-of-service"
    pfp = pod(after_eviction, NS, "batch-pfp")
    assert "podReplacementPolicy Failed" in pfp.explanation
    assert "default when podFailurePolicy is set" in pfp.explanation
    assert pfp.replacement.state == "blocked"
    assert pfp.action.code == "out-of-service" and pfp.action.risk == "medium"


def test_after_eviction_bare_pod_is_lost(after_eviction: Report) -> None:
    lonely = pod(after_eviction, NS, "lonely")
    assert lonely.controller == "bare" and lonely.owner_chain == []
    assert lonely.replacement.state == "none"
    assert "gone for good" in lonely.if_node_returns


def test_recovered_cluster_has_no_problem() -> None:
    report = report_of("node-down-recovered")
    assert not report.problems and report.nodes == [] and report.pods == []


def test_three_nodes_down_is_flagged_as_likely_not_the_machines() -> None:
    report = report_of("three-nodes-down")
    assert sorted(n.name for n in report.nodes if n.failed) == ["flaky-b", "flaky-c", "flaky-d"]
    zone = next(z for z in report.zones if z.not_ready)
    assert zone.state == "Normal"  # 3 of 6: below the 55 % threshold, evictions proceed
    assert any("3 of 6 nodes are not Ready" in note for note in report.cluster)


def test_out_of_service_taint_is_an_attestation_not_an_observation() -> None:
    report = report_of("out-of-service-applied")
    node = _node(report, "flaky-d")
    # Someone attested the machine is off; the cluster did not observe it: say who, not "shut
    # down (confidence high)".
    assert node.out_of_service and node.cause.code == "attested-shutdown"
    assert node.cause.confidence == "attested" and "the machine is shut down" not in (
        node.cause.summary
    )
    assert "attested by" in node.cause.summary and "has not observed" in node.cause.summary
    assert any("not an observation" in e for e in node.shutdown_evidence)
    assert node.action is not None and node.action.code == "wait"


def test_stale_out_of_service_taint_on_ready_node() -> None:
    report = report_of("out-of-service-stale")
    node = _node(report, "flaky-d")
    assert not node.failed and node.stale_out_of_service
    assert node.action is not None and node.action.code == "remove-out-of-service"
    # the taint goes through remediate (lock, re-check that the node is Ready, trail)
    assert node.action.remediate == "kubectl nodefail remediate flaky-d" and not node.action.kubectl
    assert report.problems


def test_finalizer_pod_on_healthy_node_is_not_a_node_failure() -> None:
    report = report_of("finalizer-on-healthy-node", namespaces=["scenario-other"])
    held = pod(report, "scenario-other", "held")
    assert held.category == "terminating-elsewhere" and not held.node_failed
    assert held.action.code == "investigate" and "finalizer" in held.action.summary


def test_mirror_pod_cannot_be_moved() -> None:
    report = report_of("mirror-pod-node-down", namespaces=["scenario-other"])
    mirror = pod(report, "scenario-other", "static-web-flaky-m")
    assert mirror.controller == "mirror" and mirror.action.code == "none-possible"
    assert [o.kind for o in mirror.owner_chain] == ["Node"]
    assert "start time resets" in mirror.if_node_returns


def test_nodelost_era_shows_unknown_and_says_which_era() -> None:
    """Recorded on a real 1.26 control plane whose controller-manager ran with
    --enable-taint-manager=false (tests/e2e/test_versions.py): the node lifecycle controller
    set reason NodeLost on every pod of the lost node and deleted all but the DaemonSet's."""
    report = report_of("v1.26/nodelost-era")
    assert report.server_version == "v1.26.13"
    db = pod(report, "versions", "db-0")
    assert db.kubectl_status == "Unknown" and db.era == "nodelost" and db.terminating
    assert "NodeLost" in db.meaning
    assert db.controller == "statefulset" and db.replacement.state == "blocked"
    web = pod(report, "versions", "web")
    assert web.kubectl_status == "Unknown" and web.replacement.state == "running"
    # Not deleted (DaemonSet pods never are), so kubectl prints the bare reason.
    agent = pod(report, "versions", "agent")
    assert agent.kubectl_status == "NodeLost" and not agent.terminating
    assert any("NodeLost era" in note for note in report.cluster)


def test_only_named_nodes_and_namespaces() -> None:
    snap = load("three-nodes-down")
    report = diagnose(snap, snap.captured_at, only_nodes=["flaky-b"])
    assert [n.name for n in report.nodes] == ["flaky-b"]
    assert {p.node for p in report.pods} == {"flaky-b"}
    report = diagnose(snap, snap.captured_at, namespaces=["no-such-namespace"])
    assert report.pods == [] and len(report.nodes) == 3


def test_after_eviction_cronjob_chain_and_unknown_owner(after_eviction: Report) -> None:
    nightly = pod(after_eviction, NS, "nightly-manual")
    assert nightly.controller == "cronjob"
    assert [o.kind for o in nightly.owner_chain] == ["Job", "CronJob"]
    assert "(CronJob nightly)" in nightly.explanation
    operated = pod(after_eviction, NS, "operated")
    assert operated.controller == "other" and operated.replacement.state == "unknown"
    assert "depends on that controller" in operated.explanation
    assert operated.action.code == "out-of-service" and operated.action.risk == "medium"


def test_a_ready_node_whose_kubelet_stopped_renewing_is_not_all_clear() -> None:
    """Between the kubelet's death and the node lifecycle controller's grace period the node is
    still Ready, but its lease tells: the diagnosis says NotReady is coming, and when."""
    from datetime import timedelta

    from kubectl_nodefail.render import render
    from kubectl_nodefail.snapshot.model import format_time

    snap, name = stale_ready_node("node-down-recovered", 25)
    renewed = snap.captured_at - timedelta(seconds=25)
    report = diagnose(snap, snap.captured_at)
    found = next(n for n in report.nodes if n.name == name)
    assert not found.failed and found.cause.code == "lease-not-renewed"
    assert "has not renewed its lease for 25s" in found.cause.summary
    grace = 50 if (snap.server_minor or 36) >= 32 else 40
    assert format_time(renewed + timedelta(seconds=grace)) in found.cause.summary
    headline = render.headline(report)
    assert report.problems and "Nothing to do" not in headline
    assert "1 Ready node not renewing its lease" in headline
    # A lease renewed within half its duration is a working kubelet.
    snap.leases[-1]["spec"]["renewTime"] = format_time(snap.captured_at - timedelta(seconds=15))
    again = diagnose(snap, snap.captured_at)
    assert all(n.name != name for n in again.nodes)


def test_a_daemonset_pod_whose_deletion_was_asked_is_not_said_to_resume() -> None:
    """Recorded by the audit (seed 2037 index 21: a DaemonSet rolled out while its pod's node
    was down; the rollout deleted that pod, grace 3600 s): its action said "it resumes when the
    node returns" while its if-node-returns said the kubelet finishes deleting it. The action
    now says the deletion was asked; a plan without a node step says the same (no "resumes")."""
    from kubectl_nodefail.remediate.plan import Options, make_plan

    report = report_of("daemonset-deleted-on-failed-node")
    agent = pod(report, "au-2037-21", "w")
    assert agent.controller == "daemonset" and agent.terminating
    assert "resumes" not in agent.action.summary
    assert "deletion was asked" in agent.action.summary
    assert "finishes deleting it" in agent.if_node_returns
    plan = make_plan(report, Options(strategy="force-delete", server_minor=36))
    (step,) = [s for s in plan.steps if s.target == f"pod/au-2037-21/{agent.name}"]
    assert step.action == "wait" and "resumes" not in step.why and "deletion was asked" in step.why


def test_no_bare_pod_is_told_a_second_copy_starts() -> None:
    """Nothing recreates a bare pod: a destructive step while its machine still runs leaves its
    containers running there unseen, beside any copy re-created by hand, but starts no second
    copy by itself. Over every recorded snapshot (a new user read the old risk on the demo's
    `lonely` and no-leader's `held-1`)."""
    from tests.unit.conftest import FIXTURES

    seen = 0
    for path in sorted(FIXTURES.glob("*.json")):
        snap = load(path.stem)
        for row in diagnose(snap, snap.captured_at).pods:
            if row.controller != "bare":
                continue
            seen += 1
            said = f"{row.action.summary} {row.action.if_still_running}"
            assert "second copy" not in said and "two copies" not in said, (path.stem, said)
    assert seen >= 5
