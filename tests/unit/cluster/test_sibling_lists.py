"""The other pods of owners whose selectors share their keys in many namespaces (a StatefulSet's
`app=NAME` in a namespace each: siblings_read.py, Merge): one list across the namespaces where
a probe shows it matches few enough pods, else a list per namespace as before; either way the
same pods. A local server plays the label selectors; the real control plane lists them in
tests/e2e (every diagnosis of a StatefulSet)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from kubectl_nodefail.cluster import gather, kube
from kubectl_nodefail.cluster.reads import ITEMS_PER_READ, SELECTOR_CHUNK, WIDE_FROM
from kubectl_nodefail.cluster.siblings_read import _sibling_lists
from tests.support.fakeapi import json_answer, kubeconfig, serve

SPACES = [f"team-{i:02d}" for i in range(WIDE_FROM + 1)]


def _sts(ns: str) -> dict[str, Any]:
    return {
        "kind": "StatefulSet",
        "metadata": {"name": f"db-{ns}", "namespace": ns, "uid": f"sts-{ns}"},
        "spec": {"selector": {"matchLabels": {"app": f"db-{ns}"}}},
    }


def _pod(ns: str, name: str, app: str, owner: str) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"{ns}-{name}",
            "labels": {"app": app},
            "ownerReferences": [{"uid": owner, "kind": "StatefulSet", "name": app}],
        },
        "spec": {"nodeName": "n1"},
    }


# each StatefulSet's two pods, and a pod in another namespace that carries one of their labels
# but another owner (a wide list matches it; the owners' filter drops it)
PODS = [_pod(ns, f"db-{i}", f"db-{ns}", f"sts-{ns}") for ns in SPACES for i in range(2)] + [
    _pod("elsewhere", "impostor", f"db-{SPACES[0]}", "other-owner")
]


def _matches(selector: str, pod: dict[str, Any]) -> bool:
    labels = pod["metadata"]["labels"]
    for key, values in re.findall(r"([\w./-]+) in \(([^)]*)\)", selector):
        if labels.get(key) not in values.split(","):
            return False
    return True


def _server(crowd: int) -> Any:
    """Pods as listed by label selector, per namespace or across them; `crowd` more pods match
    any selector across namespaces (a busy cluster's same labels)."""

    def script(_n: int, method: str, path: str) -> Any:
        url = urlsplit(path)
        query = parse_qs(url.query)
        selector = query["labelSelector"][0]
        parts = url.path.split("/")
        ns = parts[4] if len(parts) == 6 else None
        found = [
            p for p in PODS if _matches(selector, p) and ns in (None, p["metadata"]["namespace"])
        ]
        if ns is None:
            found += [_pod("crowd", f"c{i}", "x", "crowd") for i in range(crowd)]
        limit = int(query.get("limit", ["500"])[0])
        meta = {"continue": "more"} if len(found) > limit else {}
        if query.get("includeObject") == ["None"]:
            rows = [{"cells": [p["metadata"]["name"]]} for p in found[:limit]]
            return json_answer({"kind": "Table", "metadata": meta, "rows": rows})
        return json_answer({"kind": "PodList", "metadata": meta, "items": found[:limit]})

    return script


@pytest.mark.parametrize(
    ("crowd", "wide"),
    [(0, True), (ITEMS_PER_READ * len(SPACES), False)],
    ids=["few pods match: one list", "too many match: a list per namespace"],
)
def test_many_namespaces_lists_of_the_same_keys_find_the_same_pods_either_way(
    tmp_path: Path, crowd: int, wide: bool
) -> None:
    with serve(_server(crowd)) as api:
        cluster = kube.Cluster(kubeconfig(tmp_path, api.url), timeout=5)
        rules = gather.RowRules({"n1"})
        pods = gather._siblings(
            cluster, gather._Reader(cluster), [_sts(ns) for ns in SPACES], rules
        )
    assert sorted(p["metadata"]["uid"] for p in pods) == sorted(
        p["metadata"]["uid"] for p in PODS if p["metadata"]["name"] != "impostor"
    )
    paths = [urlsplit(p).path for _, p in api.requests]
    probes = [p for _, p in api.requests if "includeObject=None" in p]
    assert len(probes) == 1
    if wide:
        assert paths.count("/api/v1/pods") == 2  # the probe and the list
        assert len(paths) == 2
    else:
        assert len(paths) == 1 + len(SPACES)  # the probe, then a list per namespace


def test_few_namespaces_keep_their_own_lists_and_merges_keep_urls_short() -> None:
    plain, merges = _sibling_lists([_sts(ns) for ns in SPACES[: WIDE_FROM - 1]])
    assert not merges and len(plain) == WIDE_FROM - 1
    plain, merges = _sibling_lists([_sts(ns) for ns in SPACES], cluster_wide=False)
    assert not merges and len(plain) == len(SPACES)  # -n: no list across namespaces
    many = [_sts(f"ns-{i:03d}") for i in range(SELECTOR_CHUNK + 5)]
    plain, merges = _sibling_lists(many)
    assert not plain and [len(m.narrow) for m in merges] == [SELECTOR_CHUNK, 5]
    assert all(m.selector.count(",") < SELECTOR_CHUNK for m in merges)


def test_a_list_across_namespaces_that_fails_falls_back_to_a_list_each(tmp_path: Path) -> None:
    """The probe said yes, the list across namespaces then fails (503): the pods come from the
    lists it stood for, each alone, and no gap is said for it."""
    script = _server(0)

    def failing(n: int, method: str, path: str) -> Any:
        url = urlsplit(path)
        if url.path == "/api/v1/pods" and "includeObject" not in url.query:
            return json_answer({"kind": "Status", "code": 503, "reason": "ServiceUnavailable"}, 503)
        return script(n, method, path)

    pods, gaps, per_namespace = _siblings_of_all(tmp_path, failing)
    assert sorted(p["metadata"]["uid"] for p in pods) == sorted(
        p["metadata"]["uid"] for p in PODS if p["metadata"]["name"] != "impostor"
    )
    assert gaps == [] and per_namespace == len(SPACES)


@pytest.mark.parametrize(
    "probe",
    [
        json_answer({"kind": "Status", "code": 500, "reason": "InternalError"}, 500),
        json_answer({"kind": "Table", "metadata": {}, "rows": "not a list"}),
    ],
    ids=["probe fails", "probe malformed"],
)
def test_a_probe_that_fails_or_says_nothing_leaves_the_lists_per_namespace(
    tmp_path: Path, probe: Any
) -> None:
    script = _server(0)

    def answer(n: int, method: str, path: str) -> Any:
        return probe if "includeObject=None" in path else script(n, method, path)

    pods, gaps, per_namespace = _siblings_of_all(tmp_path, answer)
    assert len(pods) == 2 * len(SPACES) and gaps == [] and per_namespace == len(SPACES)


def _siblings_of_all(tmp_path: Path, script: Any) -> tuple[list[Any], list[str], int]:
    """The StatefulSets' pods read from `script`: the pods, the gaps said, the lists per
    namespace asked for."""
    with serve(script) as api:
        cluster = kube.Cluster(kubeconfig(tmp_path, api.url), timeout=5)
        cluster.sleep = lambda _: None
        reader = gather._Reader(cluster)
        owners = [_sts(ns) for ns in SPACES]
        pods = gather._siblings(cluster, reader, owners, gather.RowRules(set()))
    return pods, reader.gaps, sum(1 for _, p in api.requests if "/namespaces/" in p)


def test_the_probe_allows_the_pods_the_owners_want_besides_ten_a_list() -> None:
    owners = [_sts(ns) for ns in SPACES]
    for owner in owners:
        owner["spec"]["replicas"] = 30
    _, (merge,) = _sibling_lists(owners)
    assert merge.expected == 30 * len(SPACES)
    owners[0]["spec"]["replicas"] = "many"  # not a number: counted as one
    _, (merge,) = _sibling_lists(owners)
    assert merge.expected == 30 * (len(SPACES) - 1) + 1
