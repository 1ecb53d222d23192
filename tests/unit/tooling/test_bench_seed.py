"""The benchmark's `NxP+E` clusters add healthy pods without touching the failed set: every pod
on a node the benchmark can fail is the same object as in the `NxP` cluster, and the extra pods
sit only on nodes it never fails. (The doubling experiment of issue 12 is fair only if so.)"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from bench import cluster

CREATED = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _pods(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": o
        for o in objs
        if o["kind"] == "Pod"
    }


def test_size_parses_the_extra_healthy_pods() -> None:
    assert cluster.Size.parse("5000x60000+60000") == cluster.Size(5000, 60000, 60000)
    assert cluster.Size.parse("500x15000") == cluster.Size(500, 15000, 0)
    assert cluster.Size(5000, 60000, 60000).total == 120000
    assert cluster.Size(5000, 60000, 60000).key != cluster.Size(5000, 120000).key


def test_extra_pods_leave_the_failable_nodes_as_they_were() -> None:
    nodes = 260  # more than MAX_FAILED failable nodes, as at 5,000
    base = _pods(cluster.seed_objects(cluster.Size(nodes, 2600), CREATED))
    grown_objs = cluster.seed_objects(cluster.Size(nodes, 2600, 2600), CREATED)
    grown = _pods(grown_objs)
    failable = min(cluster.MAX_FAILED, nodes - cluster.reserve(nodes))

    def on_failable(pods: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        return {k: p for k, p in pods.items() if int(p["spec"]["nodeName"][5:]) < failable}

    assert on_failable(grown) == on_failable(base)
    assert len(on_failable(base)) >= 9 * failable
    assert len(grown) == len(base) + 2600
    added = grown.keys() - base.keys()
    assert all(int(grown[k]["spec"]["nodeName"][5:]) >= failable for k in added)
    assert len({cluster.etcd_key(o) for o in grown_objs}) == len(grown_objs)


def _owner(pod: dict[str, Any]) -> str:
    refs = pod["metadata"].get("ownerReferences") or [{"uid": pod["metadata"]["name"]}]
    return str(refs[0]["uid"])


def test_spread_parses_and_is_its_own_cluster() -> None:
    spread = cluster.Size.parse("5000x60000/spread")
    assert spread == cluster.Size(5000, 60000, 0, spread=True)
    assert spread.key != cluster.Size(5000, 60000).key
    assert "spread" in spread.label
    assert cluster.Size.parse("50x500+500/spread") == cluster.Size(50, 500, 500, True)


def test_spread_puts_a_failed_sets_pods_under_many_owners() -> None:
    """The shape of issue 19's second measurement: the pods of 20 failed nodes come from about
    as many owners as there are pods (the default shape shares owners between neighbours)."""
    nodes, failed = 500, 20

    def owners_on_failed(size: cluster.Size) -> tuple[int, int]:
        pods = [
            p
            for p in _pods(cluster.seed_objects(size, CREATED)).values()
            if int(p["spec"]["nodeName"][5:]) < failed
            and (p["metadata"].get("ownerReferences") or [{}])[0].get("kind") != "DaemonSet"
        ]
        return len(pods), len({_owner(p) for p in pods})

    pods, owners = owners_on_failed(cluster.Size(nodes, 6000, spread=True))
    assert pods >= 9 * failed and owners >= 0.9 * pods
    default_pods, default_owners = owners_on_failed(cluster.Size(nodes, 6000))
    assert default_owners < 0.6 * default_pods  # what the spread shape is for


def test_spread_keeps_every_node_loaded_alike() -> None:
    size = cluster.Size(500, 6000, spread=True)
    per_node: dict[str, int] = {}
    for p in _pods(cluster.seed_objects(size, CREATED)).values():
        per_node[p["spec"]["nodeName"]] = per_node.get(p["spec"]["nodeName"], 0) + 1
    assert len(per_node) == 500
    counts = sorted(per_node.values())
    assert counts[-1] - counts[len(counts) // 10] <= 3 + cluster.FINALIZER_HELD
