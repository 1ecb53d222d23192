"""The audit's volume dimension (map row 25): the scenario draw, the harness's play of the CSI
attacher and the kubelet's volume manager (attach.py), and the judge of what a diagnosis says
of a failed node's attachments (volumes.py), each against a hand-made history."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from tests.audit import attach, volumes
from tests.audit.observe import History, Poll
from tests.audit.scenarios import (
    ATTACH_LABEL,
    VOLUME_SEED,
    WAIT_ATTACH,
    generate,
    manifests,
)
from tests.unit.tooling.auditkit import pod_view

T0 = datetime(2026, 12, 6, 3, 0, 0, tzinfo=timezone.utc)
NS = "au-2063-7"
PV = f"pv-{NS}-0"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def history(pod_until: float, va_until: float | None, end: float = 900, **marks: Any) -> History:
    """w-0 on "dead" until `pod_until`, its volume attached there until `va_until` (None:
    throughout), polled every 2 s up to `end`; the node back at `end`."""
    h = History()
    h.marks = {"return": at(end), **{k: at(v) for k, v in marks.items()}}
    view = pod_view(namespace=NS, name="w-0", uid="u0", node="dead")
    t = 0.0
    while t <= end:
        h.polls.append(Poll(at(t), {"u0": view} if t < pod_until else {}))
        attached = va_until is None or t < va_until
        h.add_volumes(at(t), {PV: (("dead", True, False),)} if attached else {})
        t += 2
    return h


def said(outlook: str, captured: float = 10, pods: list[Any] | None = None) -> dict[str, Any]:
    note = f"{PV} (VolumeAttachment csi-1, attached=True); detach: {outlook}"
    return {
        "d1": {
            "capturedAt": at(captured).isoformat(),
            "nodes": [{"name": "dead", "volumesAttached": [note]}],
            "pods": pods or [],
        }
    }


HELD = (
    f"not detached while pod object {NS}/w-0 (Terminating) still uses it on dead; once it is "
    "gone, force-detached 6 minutes later, since dead last reported it mounted "
    "(status.volumesInUse), unless kube-controller-manager runs with "
    "--disable-force-detach-on-timeout; the out-of-service taint detaches it at once"
)


# what analysis/storage.detach_outlook says once no pod object there uses the volume and no
# fact dates the going
NONE_LEFT = HELD.split("; once it is gone, ", 1)[1].replace(
    "6 minutes later,",
    "6 minutes after the last one using it there was gone (when, the snapshot does not show),",
)


def verdicts(h: History, words: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    return {row[0]: row for row in volumes.judge(words, h, ["dead"], "au-2063-")}


@pytest.mark.parametrize(
    ("detached", "ok"),
    [(100 + 360, True), (100 + 360 + 50, True), (100 + 300, False), (100 + 360 + 90, False)],
)
def test_the_force_detach_is_judged_six_minutes_after_the_last_user_went(
    detached: float, ok: bool
) -> None:
    got = verdicts(history(pod_until=100, va_until=detached), said(HELD))
    assert got["volume:force-detach"][5] is ok
    assert got["volume:held"][5] is (detached > 100)


def test_a_volume_detached_while_its_pod_object_stands_breaks_held() -> None:
    got = verdicts(history(pod_until=200, va_until=150), said(HELD))
    assert got["volume:held"][5] is False
    assert got["volume:force-detach"][5] is False  # 150 is before 200 + 6 min


def test_a_pod_failed_by_a_shutdown_uses_nothing_though_a_finalizer_keeps_it() -> None:
    h = history(pod_until=900, va_until=100 + 361)
    failed = pod_view(namespace=NS, name="w-0", uid="u0", node="dead", phase="Failed")
    for poll in h.polls:
        if poll.at >= at(100):
            poll.pods["u0"] = failed
    words = said(f"no pod object on dead uses it; {NONE_LEFT}", 200)
    assert verdicts(h, words)["volume:force-detach"][5] is True


def test_a_return_before_the_time_said_leaves_the_force_detach_unjudged() -> None:
    got = verdicts(history(pod_until=100, va_until=None, end=300), said(HELD))
    assert got["volume:force-detach"][5] is None
    assert got["volume:held"][5] is True


def test_a_force_detach_that_never_came_is_wrong() -> None:
    got = verdicts(history(pod_until=100, va_until=None, end=900), said(HELD))
    assert got["volume:force-detach"][5] is False


def test_the_out_of_service_taint_is_judged_as_the_outlook_says_at_once() -> None:
    h = history(pod_until=300, va_until=320, end=600, remediate=290)
    h.remediated = "dead"
    h.add_nodes(at(291), {"dead": ("node.kubernetes.io/out-of-service:NoExecute",)})
    got = verdicts(h, said(HELD))
    assert got["volume:force-detach"][5] is True
    late = history(pod_until=300, va_until=500, end=600, remediate=290)
    late.remediated = "dead"
    late.add_nodes(at(291), {"dead": ("node.kubernetes.io/out-of-service:NoExecute",)})
    assert verdicts(late, said(HELD))["volume:force-detach"][5] is False


def test_a_deleted_node_leaves_the_force_detach_unjudged() -> None:
    h = history(pod_until=300, va_until=330, end=600, remediate=290)
    h.remediated = "dead"
    h.add_nodes(at(0), {"dead": ()})
    h.add_nodes(at(292), {"dead": None})
    assert verdicts(h, said(HELD))["volume:force-detach"][5] is None


def test_with_its_pod_gone_the_timer_counts_from_when_it_went() -> None:
    got = verdicts(
        history(pod_until=100, va_until=461),
        said(f"no pod object on dead uses it; {NONE_LEFT}", 200),
    )
    assert got["volume:force-detach"][5] is True
    assert "volume:held" not in got


UNLESS = (
    "since dead last reported it mounted (status.volumesInUse), unless kube-controller-manager "
    "runs with --disable-force-detach-on-timeout; the out-of-service taint detaches it at once"
)


@pytest.mark.parametrize(("detached", "ok"), [(461, True), (400, False), (100 + 360 + 90, False)])
def test_with_no_pod_object_left_an_undated_timer_is_judged_from_when_it_went(
    detached: float, ok: bool
) -> None:
    """ "no pod object on N uses it; force-detached 6 minutes after the last one using it there
    was gone (when, the snapshot does not show)" (analysis/storage.py): judged as "once no pod
    object uses it"."""
    outlook = (
        "no pod object on dead uses it; force-detached 6 minutes after the last one using it "
        f"there was gone (when, the snapshot does not show), {UNLESS}"
    )
    got = verdicts(history(pod_until=100, va_until=detached), said(outlook, 200))
    assert got["volume:force-detach"][5] is ok


@pytest.mark.parametrize(
    ("latest", "detached", "ok"),
    [(460, 461, True), (460, 400, False), (460, 560, False), (430, 481, True), (430, 495, False)],
)
def test_a_dated_force_detach_is_judged_by_its_time_too(
    latest: float, detached: float, ok: bool
) -> None:
    """ "force-detached by about T (6 minutes after …)": not before six minutes after the
    last user went, nor later than T and the judge's slack."""
    outlook = (
        f"no pod object on dead uses it; force-detached by about "
        f"{at(latest):%Y-%m-%dT%H:%M:%SZ} (6 minutes after {at(latest - 360):%Y-%m-%dT%H:%M:%SZ}"
        f", by when the last pod object using it on dead was gone), {UNLESS}"
    )
    got = verdicts(history(pod_until=100, va_until=detached), said(outlook, 200))
    assert got["volume:force-detach"][3].startswith("force-detached by about")
    assert got["volume:force-detach"][5] is ok


@pytest.mark.parametrize(("detached", "ok"), [(461, False), (400 + 361, True), (400 + 420, True)])
def test_a_new_leaders_floor_moves_the_force_detach_window(detached: float, ok: bool) -> None:
    """ "and not before about T" (analysis/storage.py: a new kube-controller-manager leader
    started its wait then): the window is from T, not six minutes after the pod went."""
    outlook = NONE_LEFT.replace(
        "does not show),",
        f"does not show), and not before about {at(400 + 360):%Y-%m-%dT%H:%M:%SZ}: "
        "kube-controller-manager's current leader took over at "
        f"{at(400):%Y-%m-%dT%H:%M:%SZ} (its Lease kube-system/kube-controller-manager, "
        "acquireTime), and the attach-detach controller's wait lives in its memory, so it "
        "started no earlier,",
    )
    got = verdicts(
        history(pod_until=100, va_until=detached, end=1200),
        said(f"no pod object on dead uses it; {outlook}", 410),
    )
    assert "not before" in got["volume:force-detach"][3]
    assert got["volume:force-detach"][5] is ok


def test_detached_at_once_is_judged_against_the_users_going() -> None:
    outlook = (
        f"not detached while pod object {NS}/w-0 still uses it on dead; once it is gone, "
        "detached at once: the out-of-service taint is on dead"
    )
    assert verdicts(history(100, 110), said(outlook))["volume:detach-at-once"][5] is True
    assert verdicts(history(100, 200), said(outlook))["volume:detach-at-once"][5] is False


def test_attached_elsewhere_while_attached_to_the_dead_node_breaks_waits() -> None:
    claim = {
        "kind": "volume",
        "text": f"PVC data-w-0 (ReadWriteOnce) -> PV {PV} is still attached to dead "
        "(VolumeAttachment csi-1, attached=True): a replacement elsewhere waits for detach",
    }
    pods = [{"namespace": NS, "name": "w-0", "claims": [claim]}]
    h = history(pod_until=100, va_until=None, end=60)
    assert verdicts(h, said(HELD, pods=pods))["volume:waits"][5] is True
    h.add_volumes(at(61), {PV: (("dead", True, False), ("healthy", True, False))})
    assert verdicts(h, said(HELD, pods=pods))["volume:waits"][5] is False


def test_a_volume_scenario_mounts_a_claim_per_pod_and_holds_it_for_its_attachment() -> None:
    mounted = [generate(VOLUME_SEED, i) for i in range(200)]
    mounted = [s for s in mounted if s.volume != "-"]
    assert mounted and all(s.kind.startswith("sts") for s in mounted)
    assert all(s.volume == "-" for s in (generate(VOLUME_SEED - 1, i) for i in range(200)))
    s = mounted[0]
    sts = manifests(s, "n0")[1]["spec"]
    assert sts["volumeClaimTemplates"][0]["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert sts["template"]["metadata"]["annotations"] == {WAIT_ATTACH: "true"}
    terms = sts["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert all(
        {"key": ATTACH_LABEL, "operator": "In", "values": ["true"]} in t["matchExpressions"]
        for t in terms
    )
    pvs = attach.volumes(s)
    assert [p["spec"]["claimRef"]["name"] for p in pvs] == [
        f"data-w-{i}" for i in range(s.replicas + 2)
    ]
    assert attach.pod_of(pvs[0]["metadata"]["name"]) == (s.namespace, "w-0")


def test_the_harness_attaches_releases_a_held_pod_and_reports_what_is_mounted() -> None:
    calls: list[tuple[str, ...]] = []

    def kubectl(*args: str, check: bool = True) -> str:
        calls.append(args)
        return ""

    vas = {
        "items": [
            {
                "metadata": {"name": "va-new"},
                "spec": {"nodeName": "n0", "source": {"persistentVolumeName": PV}},
            },
            {
                "metadata": {"name": "va-ok"},
                "spec": {"nodeName": "n0", "source": {"persistentVolumeName": f"pv-{NS}-1"}},
                "status": {"attached": True},
            },
            {  # another run's volume: not the batch's business
                "metadata": {"name": "va-other"},
                "spec": {"nodeName": "n0", "source": {"persistentVolumeName": "pv-x"}},
            },
        ]
    }
    found = attach.attachments(json.dumps(vas), "au-2063-")
    assert [name for name, _ in found] == ["va-new", "va-ok"]

    def pod(name: str, held: bool) -> dict[str, Any]:
        return {
            "metadata": {
                "name": name,
                "namespace": NS,
                "annotations": {WAIT_ATTACH: "true"} if held else {},
            },
            "spec": {
                "nodeName": "n0",
                "volumes": [
                    {"name": "data", "persistentVolumeClaim": {"claimName": f"data-{name}"}}
                ],
            },
            "status": {"phase": "Pending" if held else "Running"},
        }

    reported: dict[str, tuple[str, ...]] = {}
    attach.play(kubectl, [pod("w-0", True), pod("w-1", True)], found, {"n0"}, reported)
    assert calls[0][:3] == ("patch", "volumeattachment", "va-new")
    released = [c for c in calls if c[0] == "annotate"]
    assert released == [("annotate", "pod", "w-1", "-n", NS, f"{WAIT_ATTACH}-")]
    assert reported == {"n0": ()}  # nothing mounted yet: w-1 starts only now
    calls.clear()
    attach.play(kubectl, [pod("w-1", False)], found, {"n0", "dead"} - {"dead"}, reported)
    assert reported["n0"] == (f"kubernetes.io/csi/csi.e2e.nodefail^{NS}-1",)
    assert calls[-1][:2] == ("patch", "node")
    calls.clear()
    attach.play(kubectl, [pod("w-1", False)], found, {"n0"}, reported)
    assert not [c for c in calls if c[:2] == ("patch", "node")]  # unchanged: not written again


def test_the_gate_is_added_to_the_pod_ready_stage_only() -> None:
    docs = [
        {"metadata": {"name": "pod-ready"}, "spec": {"selector": {"matchExpressions": []}}},
        {"metadata": {"name": "pod-delete"}, "spec": {"selector": {"matchExpressions": []}}},
    ]
    gated = attach.gate_stages(docs)
    assert gated[0]["spec"]["selector"]["matchExpressions"] == [
        {"key": f'.metadata.annotations["{WAIT_ATTACH}"]', "operator": "DoesNotExist"}
    ]
    assert gated[1]["spec"]["selector"]["matchExpressions"] == []
