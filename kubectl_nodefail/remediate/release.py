"""What a taint or a node delete was for, observed: the node's pods it releases and its volume
attachments gone, watched up to --wait-timeout or a stop (NotConfirmed otherwise); in a zone
run the watch is deferred (Deferred, Pending) and done for every node at once (zonerun.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from kubectl_nodefail.analysis import eviction
from kubectl_nodefail.analysis.advice import holding_finalizers
from kubectl_nodefail.analysis.storage import claim_names, in_use_name
from kubectl_nodefail.common.errors import Forbidden, NotFound
from kubectl_nodefail.remediate.execbase import ExecutorBase, _now
from kubectl_nodefail.remediate.steps import Step
from kubectl_nodefail.snapshot import dumpschema
from kubectl_nodefail.snapshot.model import Obj, parse_time


class NotConfirmed(Exception):
    """A request the server accepted whose effect was not observed: the pods it was to release
    still there at --wait-timeout (or when a signal stopped the watch). `interrupted`: the
    watch was stopped, not timed out."""

    def __init__(self, detail: str, interrupted: bool = False) -> None:
        super().__init__(detail)
        self.detail = detail
        self.interrupted = interrupted


class Deferred(Exception):
    """A taint or node delete accepted by the server while the executor defers the watch for
    its effect (a zone run watches all its nodes at once: zonerun.py)."""

    def __init__(self, sent: str, by: str, every_pod: bool, since: datetime) -> None:
        super().__init__(sent)
        self.sent, self.by, self.every_pod, self.since = sent, by, every_pod, since


@dataclass
class Pending:
    """A step whose request was accepted and whose effect is still to be observed: its result,
    trail line and Event are written by Executor.finish."""

    step: Step
    node: Obj
    note: str  # where the starting Event went, if not on the object
    sent: str
    by: str
    every_pod: bool
    since: datetime | None = None  # when the request was accepted (release_check)


class Release(ExecutorBase):
    """The Executor's watch for the effect of an accepted taint or node delete."""

    def _released(
        self, node: str, by: str, sent: str, every_pod: bool = False, in_use: Sequence[str] = ()
    ) -> str:
        """What the step was for, observed: the node's Terminating pods (`every_pod`: all its
        pods, for a deleted Node) and volume attachments gone. Otherwise NotConfirmed, naming
        what is still there. `sent`: what the accepted request did. In a zone run (deferred),
        Deferred: the watch comes later, for every node of the run at once."""
        since = _now()
        if self.defer_release:
            raise Deferred(sent, by, every_pod, since)
        released, detail = self._wait_released(node, every_pod, since, in_use)
        return self._released_text(released, detail, sent, by)

    def _released_text(self, released: bool, detail: str, sent: str, by: str) -> str:
        if released:
            return f"{sent}; {detail}"
        if self.stop.is_set():
            raise NotConfirmed(f"{sent}; {detail}", interrupted=True)
        raise NotConfirmed(
            f"{sent}, but not its effect: {detail}. What {by} should have caused (PodGC's "
            "force delete, the detach) did not happen; look for a refusal in "
            "kube-controller-manager's log (an admission policy or webhook), then re-run"
        )

    def _wait_released(
        self,
        node: str,
        every_pod: bool = False,
        since: datetime | None = None,
        in_use: Sequence[str] = (),
    ) -> tuple[bool, str]:
        """Watch the node's pods and VolumeAttachments go, up to the timeout or a stop.

        Pods held by a finalizer the taint does not release are named, never waited for."""
        deadline = _now() + timedelta(seconds=self.wait_timeout)
        while True:
            done, detail, stuck, vas = self.release_check(
                node, every_pod, since=since, in_use=in_use
            )
            if done:
                return True, detail
            left = (deadline - _now()).total_seconds()
            self.progress(
                f"waiting for {stuck} Terminating pods and {vas} volume attachments "
                f"on node {node} to go ({max(left, 0):.0f}s left; Ctrl-C stops waiting)"
            )
            if _now() > deadline or self.stop.is_set():
                why = "stopped watching (interrupted)" if self.stop.is_set() else "after"
                waited = f"{why} {self.wait_timeout:.0f}s" if why == "after" else why
                return False, f"{waited}: {detail}"
            self.stop.wait(2)

    def release_check(
        self,
        node: str,
        every_pod: bool = False,
        attachments: list[Obj] | None = None,
        since: datetime | None = None,
        in_use: Sequence[str] = (),
    ) -> tuple[bool, str, int, int]:
        """One look at what a taint or node delete was to release on `node`: (released, what
        is left or what was seen, pods still to go, volume attachments still on the node).
        `attachments`: the cluster's VolumeAttachments read once for many nodes (zone run).
        `since`: when the request was accepted; a pod bound to the node after it (its owner's
        template sets spec.nodeName: made again there as each is released) is not what it was
        to release, and is named, not waited for (audit 2061: a StatefulSet's w-0, made again
        on the node every few seconds, held the watch to its timeout). A volume a pod that keeps
        running there uses (tolerating the taint, not Terminating; or bound after) stays
        attached: its attachment is named, not waited for (audit 2064: a StatefulSet's pods
        tolerating every taint, held by a finalizer, kept theirs, and the watch ran to its
        timeout). A held pod's that is Terminating is waited for: PodGC marks it Failed, and
        the controller detaches what no running pod uses (e2e test_storage). `in_use`: a deleted
        Node's last status.volumesInUse: a volume it reported mounted is force-detached by the
        attach-detach controller only six minutes after its last pod went (it cannot learn
        the node unmounted it: audit 2072, 9 attachments left at 120 s): named, not waited
        for."""
        listed = self.cluster.list_all("/api/v1/pods", "Pod", fieldSelector=f"spec.nodeName={node}")
        later = [p for p in listed if since is not None and _arrived_after(p, since)]
        pods = [p for p in listed if p not in later]
        held = [p for p in pods if _holders(p)]
        stuck = [
            p
            for p in pods
            if not _holders(p)
            and (
                every_pod
                or p["metadata"].get("deletionTimestamp")
                or not eviction.stays_under_out_of_service(p)
            )
        ]
        if attachments is None:
            attachments = self.attachments()
        running = [
            p
            for p in pods
            if not every_pod
            and not p["metadata"].get("deletionTimestamp")
            and eviction.stays_under_out_of_service(p)
        ]
        on_node = [v for v in attachments if (v.get("spec") or {}).get("nodeName") == node]
        kept = self._volumes_of([*running, *later]) if on_node else set()
        vas = [v for v in on_node if _volume(v) not in kept]
        staying = sorted({_volume(v) for v in on_node if _volume(v) in kept})
        mounted = set(in_use)
        timed = sorted({_volume(v) for v in vas if mounted and self._unique(_volume(v)) in mounted})
        vas = [v for v in vas if _volume(v) not in timed]
        not_waited = (
            (
                "; held by finalizers, not waited for: "
                + ", ".join(
                    f"{p['metadata'].get('namespace')}/{p['metadata']['name']} "
                    f"({', '.join(_holders(p))})"
                    for p in held
                )
                if held
                else ""
            )
            + (
                "; bound to the node after the request (made again there), not waited for: "
                + ", ".join(
                    f"{p['metadata'].get('namespace')}/{p['metadata']['name']}" for p in later
                )
                if later
                else ""
            )
            + (
                "; attached for the pods left there, not waited for: " + ", ".join(staying)
                if staying
                else ""
            )
            + (
                "; reported mounted by the node when it was deleted, so force-detached by the "
                "attach-detach controller 6 minutes after their last pod went, not waited for: "
                + ", ".join(timed)
                if timed
                else ""
            )
        )
        if not stuck and not vas:
            return (
                True,
                (
                    f"{len(pods)} pods left on the node (held by finalizers), no other pod "
                    f"left, no volume attached{not_waited}"
                    if every_pod
                    else f"{len(pods)} pods left on the node (tolerating the taint or held), no "
                    f"Terminating pod released by the taint left, no volume attached{not_waited}"
                ),
                0,
                0,
            )
        names = ", ".join(
            f"{p['metadata'].get('namespace')}/{p['metadata']['name']}" for p in stuck[:5]
        ) + (", ..." if len(stuck) > 5 else "")
        return (
            False,
            f"still {len(stuck)} pods to be released"
            + (f" ({names})" if stuck else "")
            + f" and {len(vas)} volume attachments on the node{not_waited}",
            len(stuck),
            len(vas),
        )

    def _volumes_of(self, pods: list[Obj]) -> set[str]:
        """The PVs these pods' claims are bound to (a claim that cannot be read, or is gone,
        names none: its attachment is waited for, as before)."""
        out = set()
        for pod in pods:
            namespace = pod["metadata"].get("namespace") or ""
            for claim in claim_names(pod):
                key = (namespace, claim)
                if key not in self._claims:
                    path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{claim}"
                    try:  # held to the dump schema (malformed: MalformedResponse, exit 14)
                        got = self.cluster.get(path)
                        pvc = dumpschema.take_live([{**got, "kind": "PersistentVolumeClaim"}])[0]
                    except (Forbidden, NotFound):
                        pvc = {}
                    name = (pvc.get("spec") or {}).get("volumeName")
                    self._claims[key] = name if isinstance(name, str) else ""
                if self._claims[key]:
                    out.add(self._claims[key])
        return out

    def _unique(self, pv_name: str) -> str:
        """The PV's name as a node reports it in status.volumesInUse (CSI:
        kubernetes.io/csi/DRIVER^HANDLE); "" when it cannot be read or is not CSI (its
        attachment is then waited for, as before)."""
        if pv_name and pv_name not in self._pvs:
            try:  # held to the dump schema (malformed: MalformedResponse, exit 14)
                got = self.cluster.get(f"/api/v1/persistentvolumes/{pv_name}")
                pv = dumpschema.take_live([{**got, "kind": "PersistentVolume"}])[0]
            except (Forbidden, NotFound):
                pv = {}
            self._pvs[pv_name] = in_use_name(pv) or ""
        return self._pvs.get(pv_name, "")

    def attachments(self) -> list[Obj]:
        """Every VolumeAttachment ([] when they may not be read), held to the dump schema as
        the diagnosis's are (a malformed one: MalformedResponse, exit 14)."""
        try:
            return dumpschema.take_live(
                self.cluster.list_all(
                    "/apis/storage.k8s.io/v1/volumeattachments", "VolumeAttachment"
                )
            )
        except Forbidden:
            return []


def in_use(node: Obj) -> list[str]:
    """A Node's status.volumesInUse (the volumes its kubelet last reported mounted)."""
    got = (node.get("status") or {}).get("volumesInUse")
    return [v for v in got if isinstance(v, str)] if isinstance(got, list) else []


def _volume(va: Obj) -> str:
    """The PV a VolumeAttachment attaches ("" for an inline volume)."""
    source = (va.get("spec") or {}).get("source") or {}
    return str(source.get("persistentVolumeName") or "")


def _holders(pod: Obj) -> list[str]:
    """Finalizers that keep this pod after the out-of-service taint (see holding_finalizers)."""
    meta = pod.get("metadata") or {}
    return holding_finalizers(list(meta.get("finalizers") or []), True, "out-of-service")


def _arrived_after(pod: Obj, since: datetime) -> bool:
    """Created after `since` (to the second the API stamps it): bound to the node after the
    request was accepted."""
    created = parse_time(pod["metadata"].get("creationTimestamp"))
    return created is not None and created > since.replace(microsecond=0)
