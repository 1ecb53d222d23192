"""The Terminating pods on nodes not examined, read whole one by one (pods_read._full_pods), and
under diagnose --watch kept for the next read while no change to them is seen (Kept.whole): a
kept one is not asked for again; one not kept is; only pods still being deleted and not read
with their node's pods come back, whichever way."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kubectl_nodefail.cluster import kube
from kubectl_nodefail.cluster.pods_read import _full_pods
from tests.support.fakeapi import json_answer, kubeconfig, serve


def _pod(ns: str, name: str, deleting: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"{ns}-{name}"}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-07T10:00:00Z"
    return {"kind": "Pod", "metadata": meta, "spec": {"nodeName": "healthy"}}


PODS = {("a", "held"): _pod("a", "held"), ("b", "stuck"): _pod("b", "stuck")}


def _script(_n: int, method: str, path: str) -> Any:
    url = urlsplit(path)
    name = parse_qs(url.query)["fieldSelector"][0].split(",")[0].split("=", 1)[1]
    found = [p for (ns, n), p in PODS.items() if n == name and f"/namespaces/{ns}/" in url.path]
    return json_answer({"kind": "PodList", "metadata": {}, "items": found})


def test_pods_being_deleted_elsewhere_are_kept_until_a_change_drops_them(tmp_path: Path) -> None:
    candidates = [("a", "held", "healthy"), ("b", "stuck", "healthy"), ("c", "failed", "down")]
    held: dict[tuple[str, str], Any] = {}
    with serve(_script) as api:
        cluster = kube.Cluster(kubeconfig(tmp_path, api.url), timeout=5)
        first = _full_pods(cluster, candidates, {"down"}, {}, held)
        asked = len(api.requests)
        again = _full_pods(cluster, candidates, {"down"}, {}, held)
        assert len(api.requests) == asked  # both kept: nothing asked
        held.pop(("b", "stuck"))  # a change to it seen (watch/follow.py _touch)
        third = _full_pods(cluster, candidates, {"down"}, {"a-held": {}}, held)
        after = [parse_qs(urlsplit(p).query)["fieldSelector"][0] for _, p in api.requests[asked:]]
    assert asked == 2  # the pod on the examined node "down" is read with its node's pods
    names = sorted(p["metadata"]["name"] for p in first)
    assert names == ["held", "stuck"] and again == first
    assert after == ["metadata.name=stuck,spec.nodeName=healthy"]
    # a kept pod now read with its node's pods (known) is not returned again
    assert [p["metadata"]["name"] for p in third] == ["stuck"]
    assert set(held) == {("b", "stuck")}
