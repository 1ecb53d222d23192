"""The watch after an accepted out-of-service taint or Node delete (remediate/release.py): what
it waits for. Audit 2061 on the real control plane: a StatefulSet whose template sets
spec.nodeName made its w-0 again on the node after each release, and the watch, counting it,
ran to --wait-timeout and reported the taint unconfirmed (exit 7) though everything the taint
was to release had gone. Audit 2064: a StatefulSet's pods held by a finalizer kept their
volumes attached, as the attach-detach controller does while a pod object using one stands;
the taint step said "volumes detach at once", and its watch waited for those attachments."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.remediate.mutations import Mutations
from kubectl_nodefail.remediate.plan import Options, make_plan
from kubectl_nodefail.remediate.stop import Stop
from kubectl_nodefail.snapshot.model import format_time, load_dump
from tests.unit.conftest import FIXTURES

NODE = "flaky-r2"
SENT = datetime(2026, 12, 6, 12, 47, 40, 500000, tzinfo=timezone.utc)


def _pod(name: str, created: datetime) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ns", "name": name, "creationTimestamp": format_time(created)},
        "spec": {"nodeName": NODE, "tolerations": []},
    }


class _Cluster:
    """The node's pods: `old` (there before the request) gone after one read, `again` (made
    after it, as a template bound to the node does) there at every read."""

    def __init__(self) -> None:
        self.reads = 0

    def list_all(self, path: str, kind: str, **query: Any) -> list[Any]:
        if kind != "Pod":
            return []
        self.reads += 1
        again = _pod("w-0", SENT + timedelta(seconds=3))
        return [again] if self.reads > 1 else [_pod("old", SENT - timedelta(seconds=60)), again]


def _watch(since: datetime | None, wait_timeout: float = 3) -> tuple[bool, str]:
    executor = Mutations.__new__(Mutations)
    executor.cluster = _Cluster()  # type: ignore[assignment]
    executor.wait_timeout = wait_timeout
    executor.stop = Stop()
    executor.progress = lambda message: None  # type: ignore[method-assign]
    return executor._wait_released(NODE, False, since)


def test_a_pod_bound_to_the_node_after_the_request_is_named_not_waited_for() -> None:
    released, detail = _watch(SENT)
    assert released, detail
    assert (
        "bound to the node after the request (made again there), not waited for: ns/w-0" in detail
    )


@pytest.mark.parametrize("created_after", [0, 0.4])
def test_a_pod_made_in_the_requests_own_second_is_still_waited_for(created_after: float) -> None:
    """Stamped to the second: a pod made in the second the request was accepted may have been
    there before it, and is waited for (never said released without being seen gone)."""
    cluster = _Cluster()
    executor = Mutations.__new__(Mutations)
    executor.cluster = cluster  # type: ignore[assignment]
    executor.wait_timeout = 1
    executor.stop = Stop()
    executor.progress = lambda message: None  # type: ignore[method-assign]
    same = SENT.replace(microsecond=0) + timedelta(seconds=created_after)
    cluster.list_all = lambda path, kind, **q: [_pod("w-0", same)] if kind == "Pod" else []  # type: ignore[method-assign]
    released, detail = executor._wait_released(NODE, False, SENT)
    assert not released and "still 1 pods to be released (ns/w-0)" in detail


def test_without_the_requests_time_every_pod_on_the_node_is_waited_for() -> None:
    released, detail = _watch(None, wait_timeout=1)
    assert not released and "still 1 pods to be released (ns/w-0)" in detail


class _Volumes:
    """A node left with one pod a finalizer holds (its claim bound to pv-held) and two
    VolumeAttachments: pv-held's, and pv-freed's (the released pod's, gone already). The held
    pod tolerates every taint and runs on (`running`), or is Terminating."""

    def __init__(
        self,
        freed_detached: bool,
        claim_readable: bool = True,
        running: bool = True,
        attached: bool = True,
    ) -> None:
        self.freed_detached, self.claim_readable = freed_detached, claim_readable
        self.running, self.attached = running, attached
        self.volume_name: object = "pv-held"
        self.gets: list[str] = []

    def list_all(self, path: str, kind: str, **query: Any) -> list[Any]:
        if kind == "Pod":
            held = _pod("db-0", SENT - timedelta(seconds=60))
            held["metadata"]["finalizers"] = ["example.com/hold"]
            if self.running:
                held["spec"]["tolerations"] = [{"operator": "Exists"}]
            else:
                held["metadata"]["deletionTimestamp"] = format_time(SENT - timedelta(seconds=30))
            held["spec"]["volumes"] = [{"name": "d", "persistentVolumeClaim": {"claimName": "c"}}]
            return [held]
        pvs = ["pv-held"] + ([] if self.freed_detached else ["pv-freed"])
        pvs = pvs if self.attached else []
        return [
            {
                "metadata": {"name": f"va-{pv}"},
                "spec": {"nodeName": NODE, "source": {"persistentVolumeName": pv}},
            }
            for pv in pvs
        ]

    def get(self, path: str, **query: Any) -> Any:
        from kubectl_nodefail.common.errors import Forbidden

        self.gets.append(path)
        if not self.claim_readable:
            raise Forbidden("persistentvolumeclaims is forbidden")
        meta = {"name": "c", "namespace": "ns", "uid": "u-c", "resourceVersion": "7"}
        return {"metadata": meta, "spec": {"volumeName": self.volume_name}}


def _volume_watch(cluster: _Volumes) -> tuple[bool, str]:
    executor = Mutations.__new__(Mutations)
    executor.cluster = cluster  # type: ignore[assignment]
    executor.wait_timeout = 0  # one look
    executor.stop = Stop()
    executor._claims = {}
    executor.progress = lambda message: None  # type: ignore[method-assign]
    executor.attachments = lambda: cluster.list_all("", "VolumeAttachment")  # type: ignore[method-assign]
    return executor._wait_released(NODE, False, SENT)


def test_a_volume_a_pod_running_on_under_the_taint_uses_is_named_not_waited_for() -> None:
    """Audit 2064: StatefulSet pods tolerating every taint (held by a finalizer too) run on
    under the out-of-service taint and keep their volumes attached; the watch waited for those
    attachments to --wait-timeout (exit 7)."""
    cluster = _Volumes(freed_detached=True)
    released, detail = _volume_watch(cluster)
    assert released, detail
    assert "attached for the pods left there, not waited for: pv-held" in detail
    assert cluster.gets == ["/api/v1/namespaces/ns/persistentvolumeclaims/c"]  # read once


def test_a_released_pods_volume_still_attached_is_waited_for() -> None:
    released, detail = _volume_watch(_Volumes(freed_detached=False))
    assert not released and "and 1 volume attachments on the node" in detail


def test_a_held_terminating_pods_volume_is_waited_for() -> None:
    """PodGC marks a Terminating pod under the taint Failed, a finalizer keeping the object,
    and the controller detaches its volume (e2e test_storage): its attachment is waited for."""
    cluster = _Volumes(freed_detached=True, running=False)
    released, detail = _volume_watch(cluster)
    assert not released and "and 1 volume attachments on the node" in detail
    assert cluster.gets == []  # nothing left running there: no claim read


def test_no_claim_is_read_when_no_volume_is_attached_to_the_node() -> None:
    """The claims matter only to tell attachments apart: with none on the node, the watch
    sends no PersistentVolumeClaim GET at all."""
    cluster = _Volumes(freed_detached=True, attached=False)
    released, detail = _volume_watch(cluster)
    assert released and "no volume attached" in detail and "not waited for: pv" not in detail
    assert cluster.gets == []


def test_a_malformed_claim_is_a_malformed_answer() -> None:
    """The claim is held to the dump schema, as every object remediate reads (exit 14)."""
    from kubectl_nodefail.common.errors import MalformedResponse

    cluster = _Volumes(freed_detached=True)
    cluster.volume_name = ["pv-held"]
    with pytest.raises(MalformedResponse, match="PersistentVolumeClaim"):
        _volume_watch(cluster)


def test_a_claim_that_cannot_be_read_leaves_its_attachment_waited_for() -> None:
    released, detail = _volume_watch(_Volumes(freed_detached=True, claim_readable=False))
    assert not released and "and 1 volume attachments on the node" in detail


def test_the_taint_step_names_the_volumes_a_held_pod_keeps_attached() -> None:
    """Recorded by the audit (seed 2064, batch 1): au-2064-106's two pods, tolerating every
    taint and held by a finalizer on the node, each with its volume attached there;
    au-2064-112's pod, which the taint releases."""
    snap = load_dump(str(FIXTURES / "held-volumes-out-of-service.json"))
    report = diagnose(snap, snap.captured_at)
    plan = make_plan(report, Options(strategy="out-of-service", only_nodes=("au2064-b1-n0",)))
    taint = next(s for s in plan.steps if s.action == "taint-out-of-service")
    assert taint.releases == ["au-2064-112/w-0 (statefulset)"]
    assert taint.why.endswith(
        "volumes detach at once; the volumes of au-2064-106/w-0, au-2064-106/w-1 stay attached: "
        "tolerating the taint, they keep running"
    )
    held = {f.object for f in taint.because if f.field == "metadata.finalizers"}
    assert held == {"Pod/au-2064-106/w-0", "Pod/au-2064-106/w-1"}


class _DeletedNode(_Volumes):
    """The Node deleted: its pods gone (PodGC), pv-freed's attachment still there, its PV a CSI
    volume (`csi`: else another kind)."""

    def __init__(self, csi: bool = True) -> None:
        super().__init__(freed_detached=False)
        self.csi = csi

    def list_all(self, path: str, kind: str, **query: Any) -> list[Any]:
        if kind == "Pod":
            return []
        return [a for a in super().list_all(path, kind) if "pv-freed" in a["metadata"]["name"]]

    def get(self, path: str, **query: Any) -> Any:
        self.gets.append(path)
        spec = {"csi": {"driver": "csi.example.com", "volumeHandle": "h-1"}} if self.csi else {}
        return {
            "metadata": {"name": "pv-freed", "uid": "u-pv", "resourceVersion": "3"},
            "spec": spec,
        }


def _deleted_watch(cluster: _DeletedNode, in_use: list[str]) -> tuple[bool, str]:
    executor = Mutations.__new__(Mutations)
    executor.cluster = cluster  # type: ignore[assignment]
    executor.wait_timeout = 0  # one look
    executor.stop = Stop()
    executor._claims, executor._pvs = {}, {}
    executor.progress = lambda message: None  # type: ignore[method-assign]
    executor.attachments = lambda: cluster.list_all("", "VolumeAttachment")  # type: ignore[method-assign]
    return executor._wait_released(NODE, True, SENT, in_use)


def test_a_deleted_nodes_volume_it_reported_mounted_is_named_not_waited_for() -> None:
    """Audit 2072 (deleting the Node): 9 attachments were still on the deleted node at 120 s,
    every pod gone. The attach-detach controller cannot learn that a node it no longer has
    unmounted a volume it reported mounted (status.volumesInUse, read before the delete): it
    force-detaches it six minutes after its last pod went. The watch waited for them, said
    "unconfirmed" (exit 7) and blamed a refusal; they are now named, with when they go."""
    mounted = ["kubernetes.io/csi/csi.example.com^h-1"]
    released, detail = _deleted_watch(_DeletedNode(), mounted)
    assert released, detail
    assert "force-detached by the attach-detach controller 6 minutes after" in detail
    assert detail.endswith("not waited for: pv-freed")
    # not reported mounted: detached at once, so waited for; a PV not CSI: waited for too
    released, detail = _deleted_watch(_DeletedNode(), [])
    assert not released and "and 1 volume attachments on the node" in detail
    released, detail = _deleted_watch(_DeletedNode(csi=False), mounted)
    assert not released and "and 1 volume attachments on the node" in detail
