"""The Node list under diagnose --watch (nodes_read.read_nodes with Kept): the Nodes the last
read had are taken again, those the watch of Nodes showed added, changed or deleted are listed
by name, one request each, while few enough; else the list. Whichever way, the Nodes returned
are the ones the server's list has now, in its order."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from kubectl_nodefail.cluster import kube
from kubectl_nodefail.cluster.nodes_read import read_nodes
from kubectl_nodefail.cluster.pods_read import Kept
from tests.support.fakeapi import json_answer, kubeconfig, serve


def _node(name: str, ready: str = "True") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1"},
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }


class Nodes:
    """The server's Nodes; answers the list and the list by name (a field selector)."""

    def __init__(self, count: int) -> None:
        self.by_name = {f"node-{i:02d}": _node(f"node-{i:02d}") for i in range(count)}

    def __call__(self, _n: int, method: str, path: str) -> Any:
        url = urlsplit(path)
        selector = parse_qs(url.query).get("fieldSelector", [""])[0]
        items = [self.by_name[n] for n in sorted(self.by_name)]
        if selector:
            name = selector.removeprefix("metadata.name=")
            items = [node for node in items if node["metadata"]["name"] == name]
        return json_answer(
            {"kind": "NodeList", "metadata": {"resourceVersion": "9"}, "items": items}
        )


def _selectors(requests: list[tuple[str, str]]) -> list[str]:
    return [
        parse_qs(urlsplit(p).query).get("fieldSelector", ["(the list)"])[0] for _, p in requests
    ]


def _names(nodes: list[dict[str, Any]]) -> list[str]:
    return [n["metadata"]["name"] for n in nodes]


@pytest.mark.parametrize(
    ("changed", "by_name"),
    [
        ({"node-03": "modified", "node-07": "deleted", "node-99": "added"}, True),
        ({}, True),  # nothing changed: nothing asked
        ({f"node-{i:02d}": "modified" for i in range(4)}, False),  # 4 of 40: the list
    ],
)
def test_the_nodes_a_watch_showed_changed_are_read_again_by_name_while_few(
    tmp_path: Path, changed: dict[str, str], by_name: bool
) -> None:
    server = Nodes(40)
    with serve(server) as api:
        cluster = kube.Cluster(kubeconfig(tmp_path, api.url), timeout=5)
        kept = Kept()
        first, reused = read_nodes(cluster, kept)
        assert reused == 0 and _selectors(api.requests) == ["(the list)"]
        assert kept.nodes is not None and list(kept.nodes) == _names(first)
        for name, how in changed.items():  # on the server, and seen by the watch of Nodes
            if how == "deleted":
                del server.by_name[name]
            else:
                server.by_name[name] = _node(name, ready="Unknown")
            kept.changed.add(name)
        asked = len(api.requests)
        nodes, reused = read_nodes(cluster, kept)
        again = _selectors(api.requests[asked:])
        fresh, _ = read_nodes(cluster, None)  # the list, as a plain diagnose reads it
    assert nodes == fresh and _names(nodes) == sorted(server.by_name)
    if by_name:
        assert sorted(again) == [f"metadata.name={n}" for n in sorted(changed)]  # in parallel
        assert reused == len(nodes) - sum(1 for n in changed if n in server.by_name)
    else:
        assert again == ["(the list)"] and reused == 0
    assert kept.nodes is not None and list(kept.nodes) == _names(nodes) and not kept.changed
