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
