"""The owners of pods spread over many namespaces, and their pods, read from the real API
server: one cluster-wide list where the numbers favour it, a read per namespace where they do
not (cluster/owners_read.py, siblings_read.py, reads.wide_pays; docs/scale.md). The count the
owners' choice rests on is the server's own: a one-item metadata list's remainingItemCount,
which this checks it serves; the pods' is a probe of Table rows."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kubectl_nodefail.cluster import kube, siblings_read
from kubectl_nodefail.cluster.budget import Budget
from kubectl_nodefail.cluster.owners_read import _count, _read_owners
from kubectl_nodefail.cluster.reads import ITEMS_PER_READ, _Reader
from kubectl_nodefail.cluster.siblings_read import RowRules, _siblings
from tests.e2e import workloads as w
from tests.e2e.controlplane import ControlPlane, wait_for

pytestmark = pytest.mark.e2e
SPREAD = [f"budget-{i}" for i in range(12)]
CROWD = "budget-crowd"


def _suspended(ns: str, name: str) -> w.Obj:
    job = w.job(ns, name)
    job["spec"]["suspend"] = True
    return job


@pytest.fixture(scope="module")
def cluster(control_plane: ControlPlane) -> Iterator[kube.Cluster]:
    cp = control_plane
    cp.apply(*[w.namespace(ns) for ns in [*SPREAD, CROWD]])
    cp.apply(*[_suspended(ns, "j") for ns in SPREAD])
    client = kube.Cluster(str(cp.kubeconfig), None, timeout=30)
    yield client
    client.close()


def _jobs(cp: ControlPlane) -> int:
    return len(cp.get("jobs")["items"])


def _read(cluster: kube.Cluster, monkeypatch: pytest.MonkeyPatch) -> tuple[int, Budget]:
    budget = Budget()
    monkeypatch.setattr(kube.Cluster, "budget", budget)
    wanted = {("Job", ns, "j") for ns in SPREAD}
    found = _read_owners(cluster, _Reader(cluster), set(wanted), {}, True)
    assert set(found) == wanted and all(o["metadata"]["name"] == "j" for o in found.values())
    return len(found), budget


def test_few_jobs_in_the_cluster_are_one_list_not_a_get_per_namespace(
    control_plane: ControlPlane, cluster: kube.Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    total = _jobs(control_plane)
    assert _count(cluster, "/apis/batch/v1/jobs") == total  # the server's own count
    _, budget = _read(cluster, monkeypatch)
    assert budget.spent["list jobs.batch"].requests == 2  # the count, then the list
    assert "get jobs.batch" not in budget.spent


def test_a_cluster_crowded_with_jobs_keeps_the_gets(
    control_plane: ControlPlane, cluster: kube.Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    crowd = ITEMS_PER_READ * len(SPREAD) + 1
    control_plane.apply(*[_suspended(CROWD, f"c{i}") for i in range(crowd)])
    total = _jobs(control_plane)
    assert total > ITEMS_PER_READ * len(SPREAD)
    assert _count(cluster, "/apis/batch/v1/jobs") == total
    _, budget = _read(cluster, monkeypatch)
    assert budget.spent["list jobs.batch"].requests == 1  # the count only
    assert budget.spent["get jobs.batch"].requests == len(SPREAD)


def test_owners_pods_in_many_namespaces_are_one_list_where_few_match(
    control_plane: ControlPlane, cluster: kube.Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A StatefulSet in each of 12 namespaces (`app=db-NS`, pods read whole): their pods in one
    list across namespaces after a probe of its selector (Table rows, no objects: the real
    server's answer carries `rows` and a continue token past its limit), and the same pods as
    a list per namespace finds."""
    cp = control_plane
    cp.apply(*[w.statefulset(ns, f"db-{ns}") for ns in SPREAD])
    wait_for(
        "a pod of each StatefulSet",
        lambda: len(cp.get("pods", selector="app")["items"]) >= len(SPREAD),
        120,
    )
    owners = [o for o in cp.get("statefulsets")["items"] if o["metadata"]["namespace"] in SPREAD]
    for owner in owners:
        owner["kind"] = "StatefulSet"
    assert len(owners) == len(SPREAD)

    def read() -> tuple[set[str], Budget]:
        budget = Budget()
        monkeypatch.setattr(kube.Cluster, "budget", budget)
        pods = _siblings(cluster, _Reader(cluster), owners, RowRules(ready=()))
        return {p["metadata"]["uid"] for p in pods}, budget

    wide, budget = read()
    assert len(wide) == len(SPREAD)
    assert budget.spent["list pods"].requests == 2  # the probe, then the one list
    monkeypatch.setattr(siblings_read, "WIDE_FROM", len(SPREAD) + 1)
    narrow, budget = read()
    assert narrow == wide
    assert budget.spent["list pods"].requests == len(SPREAD)
