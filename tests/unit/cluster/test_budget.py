"""The request budget -v prints (cluster/budget.py): every request the server saw is counted
once, under its resource and verb, with the bytes of its answer; a failed or retried one too.
The server is a local fake (tests/support/fakeapi.py): only what the client counts is tested."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from kubectl_nodefail.cli.main import main
from kubectl_nodefail.cluster import kube
from kubectl_nodefail.cluster.budget import Budget, resource_of
from kubectl_nodefail.common.errors import NotFound
from tests.support.fakeapi import Answer, json_answer, kubeconfig, serve
from tests.unit.conftest import FIXTURES


@pytest.mark.parametrize(
    ("method", "path", "named"),
    [
        ("GET", "/api/v1/pods?limit=500", "list pods"),
        ("GET", "/api/v1/namespaces/data/pods", "list pods"),
        ("GET", "/api/v1/namespaces/data/pods/db-0", "get pods"),
        ("GET", "/api/v1/nodes/n1", "get nodes"),
        ("GET", "/api/v1/namespaces/kube-system", "get namespaces"),
        ("GET", "/apis/apps/v1/namespaces/data/replicasets", "list replicasets.apps"),
        ("PATCH", "/api/v1/nodes/n1", "patch nodes"),
        ("DELETE", "/api/v1/namespaces/data/pods/db-0", "delete pods"),
        ("POST", "/apis/events.k8s.io/v1/namespaces/data/events", "create events.events.k8s.io"),
        ("POST", "/api/v1/namespaces/data/pods/db-0/eviction", "create pods/eviction"),
        (
            "GET",
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
            "list leases.coordination.k8s.io",
        ),
        ("GET", "/version", "get /version"),
        ("GET", "/apis/apps/v1", "get /apis/apps/v1"),
    ],
)
def test_a_request_is_named_by_its_verb_and_resource(method: str, path: str, named: str) -> None:
    assert resource_of(method, path) == named


@given(st.sampled_from(["GET", "POST", "PATCH", "DELETE", "PUT"]), st.text(max_size=80))
def test_any_path_gets_a_name(method: str, path: str) -> None:
    assert resource_of(method, path)


PODS = {"kind": "PodList", "metadata": {}, "items": [{"metadata": {"name": "a"}}]}
NODE = {"kind": "Node", "metadata": {"name": "n1", "uid": "u", "resourceVersion": "7"}}


def _script(n: int, method: str, path: str) -> Answer:
    if path.startswith("/api/v1/nodes/n1"):
        return json_answer(NODE)
    if path.startswith("/api/v1/pods"):
        # the first pods request is refused as the server is busy (retried), then answered
        return json_answer({"kind": "Status", "code": 503}, 503) if n == 1 else json_answer(PODS)
    return json_answer({"kind": "Status", "code": 404, "reason": "NotFound"}, 404)


def test_every_request_sent_is_counted_once_with_its_answers_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kube.Cluster, "budget", Budget())
    with serve(_script) as api:
        cluster = kube.Cluster(kubeconfig(tmp_path, api.url), timeout=5)
        cluster.sleep = lambda _: None
        cluster.get_object("/api/v1/nodes/n1")
        cluster.list_all("/api/v1/pods", "Pod")
        with pytest.raises(NotFound):
            cluster.get_object("/api/v1/nodes/gone")
    spent = kube.Cluster.budget.spent
    assert spent["get nodes"].requests == 2 and spent["get nodes"].absent == 1
    assert spent["list pods"].requests == 2 and spent["list pods"].failed == 1  # retried once
    total = kube.Cluster.budget.total()
    assert total.requests == len(api.requests) == 4
    answered = [len(json.dumps(NODE)), len(json.dumps(PODS))]
    assert spent["get nodes"].bytes >= answered[0] and spent["list pods"].bytes >= answered[1]
    lines = kube.Cluster.budget.lines()
    assert lines[0].startswith("requests: 4 (")
    assert lines[0].endswith(", 1 not found (404), 1 failed)")
    assert any(line.split()[:3] == ["list", "pods", "2"] for line in lines[1:])


def test_verbose_prints_the_budget_only_for_a_run_that_sent_requests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(kube.Cluster, "budget", Budget())
    dump = str(FIXTURES / "node-down-after-eviction.json")
    quiet = CliRunner().invoke(main, ["diagnose", "--from-file", dump])
    result = CliRunner().invoke(main, ["diagnose", "--from-file", dump, "-v"])
    assert result.exit_code == quiet.exit_code and "requests:" not in result.stderr
    kube.Cluster.budget.record("GET", "/api/v1/nodes", 2048, 0.5, 200)
    result = CliRunner().invoke(main, ["diagnose", "--from-file", dump, "-v"])
    assert "requests: 1 (2.0 KiB read" in result.stderr
    assert "list nodes" in result.stderr and result.exit_code == quiet.exit_code
    assert "requests:" not in CliRunner().invoke(main, ["diagnose", "--from-file", dump]).stderr


@pytest.mark.parametrize("names", [None, {"n-0001", "n-2400"}])
def test_node_leases_are_listed_in_pages_as_big_as_the_nodes(
    tmp_path: Path, names: set[str] | None
) -> None:
    """One Lease a node: 2,500 of them in two requests (pages of NODE_PAGE_SIZE), not five;
    asked for some names, only those kept."""
    from urllib.parse import parse_qs, urlparse

    from kubectl_nodefail.cluster.nodes_read import node_leases

    leases = [
        {"metadata": {"name": f"n-{i:04d}", "namespace": "kube-node-lease"}} for i in range(2500)
    ]

    def script(n: int, method: str, path: str) -> Answer:
        query = parse_qs(urlparse(path).query)
        start = int((query.get("continue") or ["0"])[0])
        end = start + int(query["limit"][0])
        more = {"continue": str(end)} if end < len(leases) else {}
        return json_answer({"kind": "LeaseList", "metadata": more, "items": leases[start:end]})

    with serve(script) as api:
        cluster = kube.Cluster(kubeconfig(tmp_path, api.url), None, 5.0, None)
        got = node_leases(cluster, names)
    assert len(api.requests) == 2 and all(
        f"limit={kube.NODE_PAGE_SIZE}" in p for _, p in api.requests
    )
    assert sorted(x["metadata"]["name"] for x in got) == sorted(
        names or (x["metadata"]["name"] for x in leases)
    )
