"""Node signals, zone states and volumes, over snapshots recorded from the real control plane."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from kubectl_nodefail.analysis import storage
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.nodes import classify, is_ready
from kubectl_nodefail.snapshot.model import Snapshot
from tests.unit.conftest import load, pod, report_of


def test_kubelet_alive_reporting_cni_down() -> None:
    report = report_of("kubelet-reports-not-ready")
    node = next(n for n in report.nodes if n.name == "flaky-s1")
    assert node.failed and node.ready is not None and node.ready.status == "False"
    assert node.cause.code == "network-plugin" and node.cause.confidence == "high"
    assert any("(fresh)" in e for e in node.cause.evidence)  # the kubelet still renews its lease
    assert ("node.kubernetes.io/not-ready", "NoExecute") in {(t.key, t.effect) for t in node.taints}
    by_type = {c.type: c for c in node.conditions}
    assert by_type["KernelDeadlock"].problem  # a known node-problem-detector condition
    assert not by_type["KernelReady"].problem  # unknown custom condition: shown, not judged
    assert node.action is not None and node.action.code == "investigate"
    assert "do not force" in node.action.summary


def test_cloud_shutdown_taint_is_shutdown_evidence() -> None:
    report = report_of("cloud-shutdown")
    node = next(n for n in report.nodes if n.name == "flaky-s2")
    assert node.cloud_shutdown and node.cause.code == "machine-shutdown"
    assert any("cloud provider" in e for e in node.shutdown_evidence)
    db = pod(report, "scenario-signals", "db-s2-0")
    assert db.action.code == "out-of-service" and db.action.risk == "low"
    assert "--node-shutdown-confirmed" not in db.action.remediate


def test_zone_partial_disruption_stops_evictions() -> None:
    report = report_of("zone-partial-disruption")
    zone = next(z for z in report.zones if z.zone.endswith("zone-z"))
    assert (zone.state, zone.eviction, zone.nodes, zone.not_ready) == (
        "PartialDisruption",
        "stopped",
        5,
        4,
    )
    assert "network or the control plane" in zone.explanation
    others = [z for z in report.zones if not z.zone.endswith("zone-z")]
    assert others and all(z.state == "Normal" for z in others)


def test_rwo_volume_still_attached_to_the_dead_node() -> None:
    report = report_of("rwo-volume-on-dead-node", namespaces=["scenario-storage"])
    db = pod(report, "scenario-storage", "db-v1-0")
    assert any(
        "still attached to flaky-v1" in note and "ReadWriteOnce" in note for note in db.storage
    )
    assert any("force-detached 6 minutes later" in note for note in db.storage)
    assert db.action.risk == "high"
    node = next(n for n in report.nodes if n.name == "flaky-v1")
    assert node.volumes_attached and node.volumes_attached[0].startswith("pv-db-v1")


def test_multi_attach_error_names_the_waiting_replacement() -> None:
    report = report_of("multi-attach")
    node = next(n for n in report.nodes if n.name == "flaky-v1")
    assert any("Multi-Attach errors on db-v1-0" in v for v in node.volumes_attached)


def test_disk_pressure_on_a_ready_node_is_listed_but_not_failed() -> None:
    report = report_of("disk-pressure-on-ready-node")
    node = next(n for n in report.nodes if n.name == "flaky-s3")
    assert not node.failed and node.cause.code == "conditions"
    assert node.action is not None and node.action.code == "investigate"
    assert report.problems


@pytest.mark.parametrize(
    ("message", "code"),
    [
        # The kubelet's own wording for other Ready=False causes. EDITED STATE: the recorded
        # CNI-down node with only its Ready message replaced.
        ("container runtime is down", "runtime-down"),
        ("container runtime status check may not have completed yet", "runtime-down"),
        (
            "PLEG is not healthy: pleg was last seen active 3m0s ago; threshold is 3m0s",
            "pleg-unhealthy",
        ),
        ("node is shutting down", "machine-shutdown"),
        ("something else entirely", "resource-pressure"),  # KernelDeadlock=True is also reported
    ],
)
def test_ready_false_causes_from_the_kubelet_message(message: str, code: str) -> None:
    snap = load("kubelet-reports-not-ready")
    node = copy.deepcopy(next(n for n in snap.nodes if n["metadata"]["name"] == "flaky-s1"))
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    ready["message"] = message
    assert classify(node, snap, snap.captured_at).code == code


# --- when the attach-detach controller detaches (its reconciler's rules, v1.36) -------------
# EDITED STATES of the recorded rwo-volume fixture: the StatefulSet pod db-v1-0 Terminating on
# the dead flaky-v1, its CSI volume attached there and listed in the node's volumesInUse.


def _outlook(snap: Snapshot) -> str:
    va = next(v for v in snap.volume_attachments if v["spec"]["nodeName"] == "flaky-v1")
    node = next(n for n in snap.nodes if n["metadata"]["name"] == "flaky-v1")
    return storage.detach_outlook(va, snap, snap.captured_at, node_ready=is_ready(node))


def _edited(edit: Callable[[Snapshot], None]) -> Snapshot:
    snap = load("rwo-volume-on-dead-node")
    edit(snap)
    return dataclasses.replace(snap)  # fresh look-up indexes over the edited lists


def _db(snap: Snapshot) -> dict[str, Any]:
    return next(p for p in snap.pods if p["metadata"]["name"] == "db-v1-0")


def _not_running(snap: Snapshot) -> None:
    for status in _db(snap)["status"]["containerStatuses"]:
        status["state"] = {"terminated": {"reason": "Completed", "exitCode": 0}}


def _waiting_but_empty(snap: Snapshot) -> None:
    for status in _db(snap)["status"]["containerStatuses"]:
        status["state"] = {"waiting": {}}  # non-nil in Go: not running


def _ephemeral(snap: Snapshot) -> None:
    """db-v1-0's claim as a generic ephemeral volume (its PVC is then POD-VOLUME)."""
    _db(snap)["spec"]["volumes"] = [{"name": "data", "ephemeral": {"volumeClaimTemplate": {}}}]
    next(c for c in snap.pvcs if c["metadata"]["name"] == "data-db-v1-0")["metadata"]["name"] = (
        "db-v1-0-data"
    )


def _node_ready(snap: Snapshot) -> None:
    node = next(n for n in snap.nodes if n["metadata"]["name"] == "flaky-v1")
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    ready["status"] = "True"
    snap.pods.remove(_db(snap))


def _forget_mount(snap: Snapshot) -> None:
    snap.pods.remove(_db(snap))
    node = next(n for n in snap.nodes if n["metadata"]["name"] == "flaky-v1")
    node["status"]["volumesInUse"] = []


def test_detach_outlooks_on_the_recorded_force_detach_scenario() -> None:
    """Recorded by test_force_detach once `timer` and `quick` were force-deleted and `quick`
    detached at once: `timer` waits for the 6-minute timer, `held` for its pod object."""
    report = report_of("force-detach-timer-running")
    node = next(n for n in report.nodes if n.name == "flaky-fd")
    lines = {v.split(" ")[0]: v for v in node.volumes_attached}
    assert set(lines) == {"pv-fd-timer", "pv-fd-held"}, lines
    assert (
        "detach: no pod object on flaky-fd uses it; force-detached 6 minutes after the last one "
        "using it there was gone (when, the snapshot does not show), since flaky-fd last "
        "reported it mounted (status.volumesInUse)"
    ) in lines["pv-fd-timer"]
    assert (
        "detach: not detached while pod object scenario-force-detach/held (Terminating) still "
        "uses it on flaky-fd"
    ) in lines["pv-fd-held"]
    held = pod(report, "scenario-force-detach", "held")
    assert any(note.startswith("detach: not detached while") for note in held.storage)


def test_a_terminating_pod_object_keeps_the_volume_attached() -> None:
    text = _outlook(load("rwo-volume-on-dead-node"))
    assert text.startswith(
        "not detached while pod object scenario-storage/db-v1-0 (Terminating) still uses it on "
        "flaky-v1; once it is gone, force-detached 6 minutes later, since flaky-v1 last "
        "reported it mounted (status.volumesInUse)"
    ), text


# with no pod object left there and nothing dating its going, the controller's wait is undated
UNDATED = (
    "no pod object on flaky-v1 uses it; force-detached 6 minutes after the last one using it "
    "there was gone"
)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        # deleted and no container running: terminated for the controller, no longer a user
        (_not_running, UNDATED),
        (_waiting_but_empty, UNDATED),
        (lambda s: s.pods.remove(_db(s)), UNDATED + " (when, the snapshot does not show), since"),
        (
            _ephemeral,
            "not detached while pod object scenario-storage/db-v1-0 (Terminating) still uses it "
            "on flaky-v1; once it is gone, force-detached 6 minutes later",
        ),
        (
            _node_ready,
            "detached after flaky-v1's kubelet unmounts it and drops it from status.volumesInUse "
            "(flaky-v1 is Ready: no force-detach)",
        ),
        (_forget_mount, "detached at once, since flaky-v1 does not report it mounted"),
        (
            lambda s: s.pvs.clear(),  # the CSI source unknown: both cases said
            "6 minutes later if flaky-v1 last reported it mounted (status.volumesInUse), at once "
            "if not",
        ),
        (
            lambda s: next(n for n in s.nodes if n["metadata"]["name"] == "flaky-v1")["spec"][
                "taints"
            ].append({"key": "node.kubernetes.io/out-of-service", "effect": "NoExecute"}),
            "once it is gone, detached at once: the out-of-service taint is on flaky-v1",
        ),
        (
            lambda s: s.volume_attachments[0]["metadata"].update(
                deletionTimestamp="2026-11-30T09:52:04Z"
            ),
            "detach requested 60s ago: the VolumeAttachment goes once the CSI driver",
        ),
    ],
)
def test_detach_outlook_follows_the_controller(
    edit: Callable[[Snapshot], None], expected: str
) -> None:
    text = _outlook(_edited(edit))
    assert expected in text, text
    assert ("6 minutes" in text) == ("6 minutes" in expected), text


def test_the_flag_is_named_only_where_kube_controller_manager_has_it() -> None:
    """--disable-force-detach-on-timeout came with 1.30 (absent from 1.29's sources)."""
    on_136 = _outlook(load("rwo-volume-on-dead-node"))
    on_126 = _outlook(_edited(lambda s: setattr(s, "server_version", "v1.26.15")))
    assert "--disable-force-detach-on-timeout" in on_136
    assert "--disable-force-detach-on-timeout" not in on_126
    assert "force-detached 6 minutes later" in on_126


def test_an_overdue_force_detach_is_told_apart_from_a_pending_one() -> None:
    """The recorded StatefulSet replacement waiting for the dead node's volume, read an hour
    later: the replacement exists, so the old pod object was gone an hour ago; 6 minutes have
    long passed and no detach was requested."""
    snap = load("volume-held-by-dead-node")
    later = snap.captured_at + timedelta(hours=1)
    mine = pod(diagnose(snap, later), "scenario-volume-wait", "db-v2-0")
    assert "overdue: the last pod object using it on flaky-v2 was gone over 1h" in mine.timeline
    assert mine.action.summary.startswith("the force-detach is overdue"), mine.action.summary
    assert "--disable-force-detach-on-timeout" in mine.action.summary
    assert mine.action.code == "out-of-service"
    node = next(n for n in diagnose(snap, later).nodes if n.name == "flaky-v2")
    assert any("detach: overdue" in v for v in node.volumes_attached), node.volumes_attached
    fresh = pod(diagnose(snap, snap.captured_at), "scenario-volume-wait", "db-v2-0")
    assert "overdue" not in fresh.timeline


def test_a_multi_attach_error_dates_the_last_user_gone_for_any_owner() -> None:
    """EDITED STATE of the same recording: the waiting pod made by a ReplicaSet, not the
    StatefulSet (a Deployment's RWO volume, say), so its creation says nothing of the old
    object. Its Multi-Attach error is worded "already exclusively attached to one node", which
    the attach-detach controller writes only when no pod on the other node wants the volume:
    an hour after the first one, the force-detach is overdue, resting on that event's time."""
    snap = load("volume-held-by-dead-node")
    waiting = next(p for p in snap.pods if p["metadata"]["name"] == "db-v2-0")
    for ref in waiting["metadata"]["ownerReferences"]:
        ref.update(kind="ReplicaSet", apiVersion="apps/v1", name="db-v2-6b7f")
    [event] = [e for e in snap.events if e.get("reason") == "FailedAttachVolume"]
    assert storage.EXCLUSIVE in event["message"] and event.get("firstTimestamp")
    later = snap.captured_at + timedelta(hours=1)
    report = diagnose(dataclasses.replace(snap), later)
    mine = pod(report, "scenario-volume-wait", "db-v2-0")
    assert "overdue: the last pod object using it on flaky-v2 was gone over 1h" in mine.timeline
    said = next(c for c in mine.claims if "overdue" in c.text)
    assert ("firstTimestamp", event["firstTimestamp"]) in {
        (p.field, p.value) for p in said.because if p.object.startswith("Event/")
    }, said.because
    assert (
        "overdue"
        not in pod(
            diagnose(dataclasses.replace(snap), snap.captured_at), "scenario-volume-wait", "db-v2-0"
        ).timeline
    )
    earlier = copy.deepcopy(snap)  # an error from before this attachment: another episode
    [va] = [v for v in earlier.volume_attachments if v["spec"]["nodeName"] == "flaky-v2"]
    for e in earlier.events:
        if e.get("reason") == "FailedAttachVolume":
            e["firstTimestamp"] = "2026-11-29T00:00:00Z"
    assert va["metadata"]["creationTimestamp"] > "2026-11-29T00:00:00Z"
    mine = pod(diagnose(dataclasses.replace(earlier), later), "scenario-volume-wait", "db-v2-0")
    assert "overdue" not in mine.timeline, mine.timeline
    other = copy.deepcopy(snap)  # the other wording: a pod there still wants it
    for e in other.events:
        if e.get("reason") == "FailedAttachVolume":
            e["message"] = (
                'Multi-Attach error for volume "pv-db-v2" Volume is already used by pod(s) x'
            )
    mine = pod(diagnose(dataclasses.replace(other), later), "scenario-volume-wait", "db-v2-0")
    assert "overdue" not in mine.timeline, mine.timeline


def test_waiting_pod_whose_volume_a_terminating_pod_still_holds_is_told_to_free_it() -> None:
    """EDITED STATE of the recorded volume-held-by-dead-node fixture: a second, Terminating pod
    object on the dead node still uses the volume the replacement waits for."""
    snap = load("volume-held-by-dead-node")
    waiting = next(p for p in snap.pods if p["metadata"]["name"] == "db-v2-0")
    old = copy.deepcopy(waiting)
    old["metadata"].update(
        name="db-v2-old", uid="old-uid", deletionTimestamp="2026-11-30T00:00:00Z"
    )
    old["spec"]["nodeName"] = "flaky-v2"
    old["status"] = {
        "phase": "Running",
        "containerStatuses": [{"name": "main", "state": {"running": {}}}],
    }
    snap.pods.append(old)
    report = diagnose(dataclasses.replace(snap), snap.captured_at)
    mine = pod(report, "scenario-volume-wait", "db-v2-0")
    assert mine.category == "waiting-for-volume"
    assert mine.action.summary.startswith(
        "scenario-volume-wait/db-v2-old still uses the volume on flaky-v2, and nothing removes "
        "it while the node is down, so waiting does not detach it"
    ), mine.action.summary
    assert "not detached while pod object scenario-volume-wait/db-v2-old (Terminating)" in (
        mine.timeline
    )
    plain = diagnose(load("volume-held-by-dead-node"), snap.captured_at)
    assert pod(plain, "scenario-volume-wait", "db-v2-0").action.summary.startswith(
        "wait: no pod object on flaky-v2 uses it; force-detached by about 2026-11-30T21:04:31Z"
    )


def test_a_pod_nothing_evicts_on_an_out_of_service_node_is_not_promised_to_podgc() -> None:
    """EDITED STATE of the recorded out-of-service-applied fixture: the StatefulSet pod on the
    out-of-service node is not Terminating and tolerates every taint (a blanket toleration), so
    neither the taint-eviction controller nor PodGC (which force-deletes only Terminating pods
    there) ever removes it."""
    snap = load("out-of-service-applied")
    db = next(p for p in snap.pods if p["metadata"]["name"] == "db-flaky-d-0")
    db["metadata"].pop("deletionTimestamp")
    db["metadata"].pop("deletionGracePeriodSeconds", None)
    db["spec"]["tolerations"] = [{"operator": "Exists"}]
    report = diagnose(dataclasses.replace(snap), snap.captured_at)
    mine = pod(report, "scenario-cleanup", "db-flaky-d-0")
    assert not mine.terminating
    assert "PodGC force-deletes it" not in mine.action.summary
    assert "PodGC force-deletes only Terminating pods" in mine.action.summary, mine.action.summary
    # a force delete releases it, and the default plan carries one (test_reaching_the_node)
    assert mine.action.code == "force-delete" and "--strategy" not in mine.action.remediate
    recorded = pod(report_of("out-of-service-applied"), "scenario-cleanup", "db-flaky-d-0")
    assert recorded.action.summary.startswith(
        "the out-of-service taint is set: PodGC force-deletes it on its next pass (every 20 s)"
    )
