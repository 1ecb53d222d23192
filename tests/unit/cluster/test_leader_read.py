"""kube-controller-manager's leader Lease as gather reads it (cluster/nodes_read.py): one GET,
held to the dump schema; refused, malformed or failing, a stated gap, never the end of the
diagnosis; absent (no leader election), nothing. The server is a local fake
(tests/support/fakeapi.py): what a real one cannot be made to send."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubectl_nodefail.cluster import kube
from kubectl_nodefail.cluster.nodes_read import LEADER_LEASE, _leader_lease
from kubectl_nodefail.cluster.reads import _Reader
from tests.support.fakeapi import Answer, json_answer, kubeconfig, serve

LEASE = {
    "kind": "Lease",
    "apiVersion": "coordination.k8s.io/v1",
    "metadata": {
        "name": "kube-controller-manager",
        "namespace": "kube-system",
        "uid": "u-1",
        "resourceVersion": "9",
        "managedFields": [{"manager": "kube-controller-manager", "fieldsV1": {"f:spec": {}}}],
    },
    "spec": {
        "holderIdentity": "cp-1_4a0f",
        "acquireTime": "2026-12-06T03:00:01.123456Z",
        "renewTime": "2026-12-06T03:10:00.000001Z",
        "leaseDurationSeconds": 15,
        "leaseTransitions": 2,
    },
}
WHAT = "kube-controller-manager's leader Lease"


def _read(tmp_path: Path, answer: Answer) -> tuple[list[Any], list[str], list[str]]:
    def script(n: int, method: str, path: str) -> Answer:
        return answer if path == LEADER_LEASE else json_answer({"code": 404}, 404)

    with serve(script) as api:
        cluster = kube.Cluster(kubeconfig(tmp_path, api.url), timeout=5)
        cluster.sleep = lambda _: None
        reader = _Reader(cluster)
        got = reader.optional(WHAT, lambda: _leader_lease(cluster), [])
    return got, reader.gaps, [path for _, path in api.requests]


def test_the_lease_is_read_once_and_kept_without_its_managed_fields(tmp_path: Path) -> None:
    got, gaps, paths = _read(tmp_path, json_answer(LEASE))
    assert gaps == [] and paths == [LEADER_LEASE]
    assert len(got) == 1 and got[0]["spec"]["acquireTime"] == LEASE["spec"]["acquireTime"]
    assert "managedFields" not in got[0]["metadata"]
    assert "holderIdentity" not in got[0]["spec"]  # a control-plane host's name, never read


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (json_answer({"kind": "Status", "code": 403, "reason": "Forbidden"}, 403), "forbidden"),
        (json_answer({**LEASE, "spec": {"acquireTime": 5}}), "malformed"),
        (json_answer({**LEASE, "spec": {"renewTime": "yesterday"}}), "malformed"),
        (json_answer({"kind": "Status", "code": 500}, 500), "answered 500"),
    ],
)
def test_a_lease_that_cannot_be_read_is_a_stated_gap(
    tmp_path: Path, answer: Answer, said: str
) -> None:
    got, gaps, _ = _read(tmp_path, answer)
    assert got == []
    assert len(gaps) == 1 and gaps[0].startswith(WHAT) and said in gaps[0]


def test_no_lease_is_no_gap(tmp_path: Path) -> None:
    """Without leader election there is no Lease: nothing to say of it."""
    got, gaps, _ = _read(tmp_path, json_answer({"kind": "Status", "code": 404}, 404))
    assert got == [] and gaps == []


def test_gather_reads_the_lease_last_so_it_is_judged_as_read(tmp_path: Path) -> None:
    """Whether the leader renews is judged at the snapshot's time (analysis/leader.py): the
    Lease is the last request of a diagnosis's read, after everything a slow server may take
    longer than its 15 s over."""
    from kubectl_nodefail.cluster.gather import gather

    empty = {"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": []}

    def script(n: int, method: str, path: str) -> Answer:
        if path.startswith("/version"):
            return json_answer({"major": "1", "minor": "36", "gitVersion": "v1.36.1"})
        if path == LEADER_LEASE:
            return json_answer(LEASE)
        return json_answer(empty)

    with serve(script) as api:
        cluster = kube.Cluster(kubeconfig(tmp_path, api.url), timeout=5)
        cluster.sleep = lambda _: None
        snap = gather(cluster)
    paths = [path.split("?")[0] for _, path in api.requests]
    assert paths[-1] == LEADER_LEASE and paths.count(LEADER_LEASE) == 1, paths
    assert [x["metadata"]["name"] for x in snap.leases] == ["kube-controller-manager"]


def _unmarked_cluster(
    tmp_path: Path,
    renewed: str | list[str],
    node_renewed: str = "2026-12-06T03:00:00.000000Z",
    clock: list[Any] | None = None,
) -> tuple[Any, list[str]]:
    """A Ready node whose kubelet last renewed its lease at `node_renewed` (its last Ready
    heartbeat at 02:59), read at 03:10 (or at each of `clock`'s times in turn, the last
    repeated) with the controller leader's Lease last renewed at `renewed`; one pod on that
    node."""
    from datetime import datetime, timezone

    from kubectl_nodefail.cluster.gather import gather

    def listing(*items: Any) -> Answer:
        return json_answer(
            {
                "kind": "List",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": "1"},
                "items": list(items),
            }
        )

    node = {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": "n1", "uid": "n-1", "resourceVersion": "5"},
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "lastHeartbeatTime": "2026-12-06T02:59:00Z",
                    "lastTransitionTime": "2026-12-06T02:00:00Z",
                }
            ]
        },
    }
    node_lease = {
        "kind": "Lease",
        "apiVersion": "coordination.k8s.io/v1",
        "metadata": {
            "name": "n1",
            "namespace": "kube-node-lease",
            "uid": "l-1",
            "resourceVersion": "6",
        },
        "spec": {"renewTime": node_renewed, "leaseDurationSeconds": 40},
    }
    pod = {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": "p",
            "namespace": "d",
            "uid": "p-1",
            "resourceVersion": "7",
            "creationTimestamp": "2026-12-06T02:10:00Z",
        },
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
        "status": {"phase": "Running"},
    }
    # one renewTime per read of the leader's Lease (the last one repeated)
    times = [renewed] if isinstance(renewed, str) else list(renewed)
    lease_reads: list[int] = []

    def lease() -> dict[str, Any]:
        at = times[min(len(lease_reads), len(times) - 1)]
        lease_reads.append(1)
        return {**LEASE, "spec": {**LEASE["spec"], "renewTime": at}}

    def script(n: int, method: str, path: str) -> Answer:
        if path.startswith("/version"):
            return json_answer({"major": "1", "minor": "36", "gitVersion": "v1.36.1"})
        if path == LEADER_LEASE:
            return json_answer(lease())
        if path.startswith("/api/v1/nodes"):
            return listing(node)
        if path.startswith("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"):
            return listing(node_lease)
        if path.startswith("/api/v1/pods") and "spec.nodeName%3Dn1" in path:
            return listing(pod)
        return listing()

    moments = clock or [datetime(2026, 12, 6, 3, 10, tzinfo=timezone.utc)]
    asked: list[int] = []

    def now() -> Any:
        asked.append(1)
        return moments[min(len(asked), len(moments)) - 1]

    with serve(script) as api:
        cluster = kube.Cluster(kubeconfig(tmp_path, api.url), timeout=5)
        cluster.sleep = lambda _: None
        snap = gather(cluster, now=now)
    return snap, [path for _, path in api.requests]


def test_a_ready_node_nothing_marks_has_its_pods_read_and_listed(tmp_path: Path) -> None:
    """No leader since 03:00:30: the Ready node whose kubelet went silent at 03:00 is never
    marked, so its pods are read (one list on the node) and listed as stuck on it; with a
    leader renewing and the kubelet silent for 30 s, that node is about to be marked, and its
    pods are not read."""
    from datetime import datetime, timezone

    from kubectl_nodefail.analysis.diagnose import diagnose

    snap, paths = _unmarked_cluster(tmp_path, "2026-12-06T03:00:30.000000Z")
    on_node = [p for p in paths if "spec.nodeName%3Dn1" in p]
    assert len(on_node) == 1 and paths[-1] == LEADER_LEASE, paths
    report = diagnose(snap, datetime(2026, 12, 6, 3, 10, tzinfo=timezone.utc))
    assert [(p.name, p.category) for p in report.pods] == [("p", "on-unmarked-node")]
    assert report.nodes_not_ready_total == 0

    snap, paths = _unmarked_cluster(
        tmp_path, "2026-12-06T03:09:58.000000Z", node_renewed="2026-12-06T03:09:30.000000Z"
    )
    assert not [p for p in paths if "spec.nodeName%3Dn1" in p] and snap.pods == []
    assert paths.count(LEADER_LEASE) == 2  # whether it is marked, then the snapshot's own


def test_a_ready_node_past_its_time_to_be_marked_has_its_pods_read_and_listed(
    tmp_path: Path,
) -> None:
    """The leader renews, the kubelet went silent at 03:00 and the node is still Ready at
    03:10, nine minutes past the default grace: the node lifecycle controller does not mark it
    (it does not run, or its grace is longer), so nothing taints it and its pods are as stuck
    as a failed node's: read, listed, told why, sent to the controller, never to remediate."""
    from datetime import datetime, timezone

    from kubectl_nodefail.analysis import summary
    from kubectl_nodefail.analysis.diagnose import diagnose

    snap, paths = _unmarked_cluster(tmp_path, "2026-12-06T03:09:58.000000Z")
    assert len([p for p in paths if "spec.nodeName%3Dn1" in p]) == 1, paths
    now = datetime(2026, 12, 6, 3, 10, tzinfo=timezone.utc)
    report = diagnose(snap, now)
    assert [n.cause.code for n in report.nodes] == ["lease-overdue"]
    [pod] = report.pods
    assert pod.category == "on-unmarked-node" and pod.node_failed
    assert [c.kind for c in pod.claims[:1]] == ["unmarked-node"]
    assert "the node lifecycle controller has not marked it NotReady" in pod.claims[0].text
    assert "no leader" not in pod.explanation
    assert "none comes until the node lifecycle controller marks the node" in pod.timeline
    assert summary.next_step(pod, now) == "not evicted (controller)"
    assert pod.action.code == "investigate" and not pod.action.remediate
    assert "--node-monitor-grace-period" in pod.action.summary


def test_a_node_past_its_time_during_the_read_leaves_a_gap_not_a_node_without_pods(
    tmp_path: Path,
) -> None:
    """The kubelet silent since 03:09: at 03:10:00, when its pods would be read, the node is
    within the controller's next look after its grace (due 03:09:50); at 03:10:10, when the
    read ends, past it: analysed as a node nothing marks, its pods unread, a gap says so."""
    from datetime import datetime, timezone

    first = datetime(2026, 12, 6, 3, 10, tzinfo=timezone.utc)
    last = datetime(2026, 12, 6, 3, 10, 10, tzinfo=timezone.utc)
    snap, paths = _unmarked_cluster(
        tmp_path,
        "2026-12-06T03:10:08.000000Z",
        node_renewed="2026-12-06T03:09:00.000000Z",
        clock=[first, first, last],
    )
    assert not [p for p in paths if "spec.nodeName%3Dn1" in p]
    assert snap.gaps and snap.gaps[-1].startswith(
        "nodes past their time to be marked NotReady during the read: the pods of n1 "
    ), snap.gaps


def test_a_leader_lost_during_the_read_leaves_a_gap_not_a_node_without_pods(
    tmp_path: Path,
) -> None:
    """The Lease renewing when read for the silent node, expired when read last: the node is
    analysed as one nothing marks, but its pods were not read: a stated gap says so."""
    snap, paths = _unmarked_cluster(
        tmp_path,
        ["2026-12-06T03:09:58.000000Z", "2026-12-06T03:00:30.000000Z"],
        node_renewed="2026-12-06T03:09:30.000000Z",
    )
    assert not [p for p in paths if "spec.nodeName%3Dn1" in p]
    assert any(
        g.startswith("kube-controller-manager's leader Lease expired during") for g in snap.gaps
    )
    assert "n1" in snap.gaps[-1]
