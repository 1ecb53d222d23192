"""When the attach-detach controller detaches a volume from a dead node, proven on its real
reconciler (the 6-minute force-detach timer included):

- a pod object still on the node (Terminating, its containers reported running) keeps its
  volume attached, however long the node stays down;
- once no pod object uses it, a volume the node reported mounted (status.volumesInUse) is
  force-detached 6 minutes later (with none left, dated "by about T" where the snapshot dates
  the going, here by the Multi-Attach error of the pod elsewhere, and judged: detached by then);
- a volume the node did not report mounted is detached at once.

Three bare pods on one node, each with its own ReadWriteOnce CSI volume: `timer` (reported
mounted, force-deleted), `quick` (not reported mounted, force-deleted) and `held` (reported
mounted, left Terminating). The test plays the CSI external-attacher, holding its finalizer
so that the controller's detach leaves the VolumeAttachment's deletionTimestamp behind: the
API server's own time of the detach.

The timer costs the suite little: the scenario runs on a control plane of its own and its
module is scheduled first (the `session_start` mark, see tests/conftest.py). In a parallel run
(`make test`) it then occupies one worker for its 6 minutes while the others run the rest; in a
serial run its last test (`session_end`) is checked after every other test. Run alone, the last
test waits out the rest of the 6 minutes.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest

from kubectl_nodefail.snapshot.model import parse_time
from tests.e2e import csi, helpers
from tests.e2e import workloads as w
from tests.e2e.conftest import HEALTHY_NODES, Plugin, running_control_plane
from tests.e2e.controlplane import ControlPlane, requested_version, wait_for

pytestmark = pytest.mark.e2e
NS = "scenario-force-detach"
NODE = "flaky-fd"
TIMER, QUICK, HELD = "timer", "quick", "held"
AGAIN = "timer-elsewhere"  # wants `timer`'s volume on a healthy node once `timer` is gone
SIX_MINUTES = 360


def _pv(pod: str) -> str:
    return f"pv-fd-{pod}"


@dataclass
class Started:
    cp: ControlPlane
    plugin: Plugin
    deleted_at: float  # wall-clock time just before `timer` and `quick` were force-deleted
    held_since: str  # the held pod's deletionTimestamp (evicted: Terminating since then)
    at_start: Any  # the diagnosis taken before the deletions
    after_quick: Any  # the diagnosis taken once `quick` was detached


def _va_on_node(cp: ControlPlane, pod: str) -> Any:
    found = [v for v in csi.attachments(cp, _pv(pod)) if v["spec"]["nodeName"] == NODE]
    return found[0] if found else None


def _dated(line: str) -> datetime | None:
    """T of "force-detached by about T (...)" (analysis/storage.detach_outlook)."""
    found = re.search(r"force-detached by about (\S+Z) \(", line)
    return parse_time(found[1]) if found else None


def _volumes_line(d: Any, pod: str) -> str:
    node = next(n for n in d["nodes"] if n["name"] == NODE)
    found = [v for v in node["volumesAttached"] if v.startswith(f"{_pv(pod)} ")]
    assert found, f"{_pv(pod)} not among {node['volumesAttached']}"
    return str(found[0])


def _start(cp: ControlPlane) -> Started:
    plugin = Plugin(cp)
    cp.add_failable_node(NODE)
    helpers.wait_node_ready(cp, NODE)
    csi.manage_attach(cp, NODE)
    objects: list[Any] = [w.namespace(NS)]
    for pod in (TIMER, QUICK, HELD):
        claim = f"data-{pod}"
        objects += [csi.csi_pv(_pv(pod), f"vol-{pod}", NS, claim), csi.pvc(NS, claim, _pv(pod))]
        manifest = w.bare_pod(NS, pod, pin=NODE, toleration_seconds=5, grace=5)
        manifest["spec"]["volumes"] = [
            {"name": "data", "persistentVolumeClaim": {"claimName": claim}}
        ]
        manifest["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
        objects.append(manifest)
    cp.apply(*objects)
    for pod in (TIMER, QUICK, HELD):
        helpers.wait_running_on(cp, NS, pod, NODE)
        wait_for(
            f"{_pv(pod)} attached to {NODE}",
            lambda pod=pod: csi.attached_to(cp, _pv(pod), NODE, finalizer=True),
            60,
        )
    cp.stop_kubelet(NODE)
    helpers.wait_node_unknown(cp, NODE)
    # What the kubelet had reported before it died: it mounted `timer` and `held`, and had
    # not (yet) mounted `quick`.
    csi.report_in_use(cp, NODE, [f"vol-{TIMER}", f"vol-{HELD}"])
    held = None
    for pod in (TIMER, QUICK, HELD):
        found = helpers.wait_terminating_on(cp, NS, pod, NODE, timeout=60)
        held = found if pod == HELD else held
    assert held is not None
    time.sleep(3)  # the controller's node informer takes in the volumesInUse report
    _, at_start = plugin.diagnose_json("-n", NS)
    deleted_at = time.time()
    for pod in (TIMER, QUICK):
        cp.kubectl("delete", "pod", "-n", NS, pod, "--grace-period=0", "--force")
    # a pod elsewhere wanting `timer`'s volume: its Multi-Attach error, worded for a volume no
    # pod on the dead node wants any more, dates the last one gone (storage._last_user_gone_by)
    csi.manage_attach(cp, HEALTHY_NODES[0])  # its kubelet's word: the controller attaches there
    again = w.bare_pod(NS, AGAIN, pin=HEALTHY_NODES[0])
    again["spec"]["volumes"] = [
        {"name": "data", "persistentVolumeClaim": {"claimName": f"data-{TIMER}"}}
    ]
    cp.apply(again)
    requested = wait_for(
        "the unmounted volume detached at once",
        lambda: (va := _va_on_node(cp, QUICK)) and va["metadata"].get("deletionTimestamp") and va,
        30,
    )
    assert _va_on_node(cp, TIMER)["metadata"].get("deletionTimestamp") is None
    csi.finish_detach(cp, requested)
    wait_for("the quick volume's attachment gone", lambda: _va_on_node(cp, QUICK) is None, 30)
    plugin.record(
        "force-detach-timer-running",
        "three RWO volumes on a dead node; two pods force-deleted",
        "unmounted volume detached at once, mounted one waiting for the 6-minute timer",
    )
    _, after_quick = plugin.diagnose_json("-n", NS)
    return Started(
        cp, plugin, deleted_at, held["metadata"]["deletionTimestamp"], at_start, after_quick
    )


@pytest.fixture(scope="session")
def force_detach() -> Iterator[Started]:
    """The scenario on a control plane of its own, kept until the session ends: session-scoped
    so that, in a serial run, its `session_start` and `session_end` tests share it while other
    modules run in between."""
    with running_control_plane(requested_version(), label="force-detach") as cp:
        yield _start(cp)


@pytest.mark.session_start
def test_diagnosis_before_and_after_the_force_deletions(force_detach: Started) -> None:
    before = force_detach.at_start
    for pod in (TIMER, HELD):
        line = _volumes_line(before, pod)
        assert f"not detached while pod object {NS}/{pod} (Terminating) still uses it" in line
        assert "force-detached 6 minutes later, since flaky-fd last reported it mounted" in line
    assert "detached at once, since flaky-fd does not report it mounted" in _volumes_line(
        before, QUICK
    )
    held = next(p for p in before["pods"] if p["name"] == HELD)
    assert any("not detached while pod object" in note for note in held["storage"]), held
    after = force_detach.after_quick
    # no pod object there uses it: dated by the Multi-Attach error of the pod elsewhere (the
    # session's last test judges the date)
    assert _volumes_line(after, TIMER).startswith(f"{_pv(TIMER)} ")
    assert "no pod object on flaky-fd uses it; force-detached by about " in _volumes_line(
        after, TIMER
    )
    assert _dated(_volumes_line(after, TIMER)) is not None
    assert "still uses it" in _volumes_line(after, HELD)
    node = next(n for n in after["nodes"] if n["name"] == NODE)
    assert not any(v.startswith(f"{_pv(QUICK)} ") for v in node["volumesAttached"])


@pytest.mark.session_end
def test_mounted_volume_force_detached_six_minutes_later_held_one_never(
    force_detach: Started,
) -> None:
    cp, plugin = force_detach.cp, force_detach.plugin
    left = force_detach.deleted_at + SIX_MINUTES + 60 - time.time()
    requested = wait_for(
        "the mounted volume force-detached",
        lambda: (va := _va_on_node(cp, TIMER)) and va["metadata"].get("deletionTimestamp") and va,
        max(left, 5),
    )
    detached_at = parse_time(requested["metadata"]["deletionTimestamp"])
    assert detached_at is not None
    after = detached_at.timestamp() - force_detach.deleted_at
    # deletionTimestamp has whole seconds; the reconciler loops every 100 ms.
    print(f"\n[force-detach] detach requested {after:.1f} s after the force delete")
    assert SIX_MINUTES - 1 <= after <= SIX_MINUTES + 30, after
    # the Multi-Attach error of the pod elsewhere: first written after `timer` was gone, in the
    # words for a volume no pod there wants; the detach came within the timeout of it (what an
    # "overdue" past that time rests on)
    [event] = [
        e
        for e in cp.get("events", namespace=NS)["items"]
        if e.get("reason") == "FailedAttachVolume"
        and (e.get("involvedObject") or {}).get("name") == AGAIN
    ]
    assert "already exclusively attached to one node" in event["message"], event
    first = parse_time(event.get("firstTimestamp") or event.get("eventTime"))
    assert first is not None and first.timestamp() >= int(force_detach.deleted_at), first
    assert detached_at.timestamp() <= first.timestamp() + SIX_MINUTES + 30, (detached_at, first)
    # what the diagnosis said once `timer` was gone: "force-detached by about T"
    said = _dated(_volumes_line(force_detach.after_quick, TIMER))
    assert said is not None and detached_at.timestamp() <= said.timestamp() + 30, (
        detached_at,
        said,
    )
    _, d = plugin.diagnose_json("-n", NS)
    assert "detach requested" in _volumes_line(d, TIMER)
    csi.finish_detach(cp, requested)
    wait_for("the timer volume's attachment gone", lambda: _va_on_node(cp, TIMER) is None, 30)
    # The held pod has been Terminating for longer than the timer: still attached, no detach.
    held_since = parse_time(force_detach.held_since)
    assert held_since is not None and time.time() - held_since.timestamp() > SIX_MINUTES
    va = _va_on_node(cp, HELD)
    assert va is not None and not va["metadata"].get("deletionTimestamp")
    pod = cp.get("pod", HELD, namespace=NS)
    assert helpers.terminating(pod)
    assert "still uses it" in _volumes_line(d, HELD)
