"""The owners of pods spread over many namespaces, read from the real API server: one
cluster-wide list where the numbers favour it, a GET per namespace where they do not
(cluster/owners_read.py, wide_pays; docs/scale.md). The count the choice rests on is the
server's own: a one-item metadata list's remainingItemCount, which this checks it serves."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kubectl_nodefail.cluster import kube
from kubectl_nodefail.cluster.budget import Budget
from kubectl_nodefail.cluster.owners_read import ITEMS_PER_READ, _count, _read_owners
from kubectl_nodefail.cluster.reads import _Reader
from tests.e2e import workloads as w
from tests.e2e.controlplane import ControlPlane

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
