"""Owners of one kind in many namespaces: narrow reads (a GET or a list per namespace) or one
cluster-wide list, by the numbers (cluster/owners_read.py, wide_pays). The choice itself is
pure; the fallbacks when the server does not give its count, or refuses the wide list, are
played on a local fake (a real server's count and lists: tests/e2e/test_request_budget.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubectl_nodefail.cluster import kube
from kubectl_nodefail.cluster.owners_read import _owners_and_siblings, _read_owners, owner_key
from kubectl_nodefail.cluster.reads import ITEMS_PER_READ, WIDE_FROM, _Reader, wide_pays
from kubectl_nodefail.cluster.siblings_read import RowRules
from tests.support.fakeapi import Answer, json_answer, kubeconfig, serve


@given(st.integers(0, 5000), st.one_of(st.none(), st.integers(0, 10**6)))
def test_the_wide_list_is_read_only_where_it_saves_requests_at_a_bounded_cost(
    narrow: int, total: int | None
) -> None:
    wide = wide_pays(narrow, total)
    if total is None or narrow < WIDE_FROM:
        assert not wide
    if wide:
        assert total is not None and total <= ITEMS_PER_READ * narrow
        assert -(-total // 500) + 1 < narrow  # its pages and the count: fewer requests


def test_the_audits_42_jobs_are_one_list_and_a_crowded_cluster_keeps_the_gets() -> None:
    assert wide_pays(42, 120)  # docs/connecting.md: 42 GETs of Jobs, one per namespace
    assert not wide_pays(42, 5000)  # 5,000 Jobs to find 42: the GETs
    assert not wide_pays(WIDE_FROM - 1, WIDE_FROM - 1)


def _job(ns: str, name: str) -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": name, "uid": f"{ns}-{name}"}, "spec": {}}


WANTED = {("Job", f"ns{i}", "j") for i in range(12)}
JOBS = [_job(ns, name) for _, ns, name in sorted(WANTED)] + [
    _job("other", f"x{i}") for i in range(8)
]


def _server(count: bool, refuse_list: bool) -> Any:
    def script(_n: int, method: str, path: str) -> Answer:
        url = urlsplit(path)
        query = parse_qs(url.query)
        if url.path == "/apis/batch/v1/jobs":
            if refuse_list and query.get("limit") != ["1"]:
                return json_answer({"kind": "Status", "code": 403, "reason": "Forbidden"}, 403)
            if query.get("limit") == ["1"]:
                meta: dict[str, Any] = {"continue": "more"}
                if count:
                    meta["remainingItemCount"] = len(JOBS) - 1
                return json_answer(
                    {"kind": "PartialObjectMetadataList", "metadata": meta, "items": JOBS[:1]}
                )
            return json_answer({"kind": "JobList", "metadata": {}, "items": JOBS})
        parts = url.path.split("/")
        if len(parts) == 8 and parts[6] == "jobs":
            return json_answer({"kind": "Job", **_job(parts[5], parts[7])})
        return json_answer({"kind": "Status", "code": 404, "reason": "NotFound"}, 404)

    return script


@pytest.mark.parametrize(
    ("count", "refuse_list", "gets"),
    [(True, False, 0), (False, False, 12), (True, True, 12)],
    ids=["counted: one list", "no count: the GETs", "list refused: the GETs"],
)
def test_every_wanted_owner_is_found_whichever_way_it_is_read(
    tmp_path: Path, count: bool, refuse_list: bool, gets: int
) -> None:
    with serve(_server(count, refuse_list)) as api:
        cluster = kube.Cluster(kubeconfig(tmp_path, api.url), timeout=5)
        cluster.sleep = lambda _: None
        found = _read_owners(cluster, _Reader(cluster), set(WANTED), {}, True)
    assert set(found) == WANTED
    assert all(obj["metadata"]["namespace"] == key[1] for key, obj in found.items())
    single = [p for m, p in api.requests if urlsplit(p).path.count("/") == 7]
    assert len(single) == gets
    # each as a GET gives it: its kind and group set (a list's items carry neither)
    assert {(o.get("kind"), o.get("apiVersion")) for o in found.values()} == {("Job", "batch/v1")}


def _pod(ns: str, kind: str, name: str) -> dict[str, Any]:
    ref = {"apiVersion": kube.owner_api_version(kind), "kind": kind, "name": name}
    return {
        "kind": "Pod",
        "metadata": {"namespace": ns, "name": f"p-{name}", "ownerReferences": [ref]},
    }


def _owned_by(kind: str, ns: str, name: str, owner: tuple[str, str] | None = None) -> Any:
    refs = [{"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1]}] if owner else []
    meta = {"namespace": ns, "name": name, "uid": f"{kind}-{ns}-{name}", "ownerReferences": refs}
    return {"kind": kind, "apiVersion": kube.owner_api_version(kind), "metadata": meta, "spec": {}}


def test_owners_an_earlier_read_holds_are_taken_and_only_the_rest_read(tmp_path: Path) -> None:
    """diagnose --watch (Kept.owners): an owner held is not asked for; one not held is, and so
    is an owner up the chain of a held one (a held ReplicaSet's Deployment); what is found is
    what reading them all finds."""
    rs = _owned_by("ReplicaSet", "a", "web-1", ("Deployment", "web"))
    served = {
        ("jobs", "a", "j1"): _owned_by("Job", "a", "j1"),
        ("jobs", "b", "j2"): _owned_by("Job", "b", "j2"),
        ("deployments", "a", "web"): _owned_by("Deployment", "a", "web"),
        ("replicasets", "a", "web-1"): rs,
    }

    def script(_n: int, method: str, path: str) -> Answer:
        parts = urlsplit(path).path.split("/")
        obj = served.get((parts[-2], parts[-3], parts[-1])) if len(parts) >= 3 else None
        if obj is None:
            return json_answer({"kind": "Status", "code": 404, "reason": "NotFound"}, 404)
        return json_answer(obj)

    pods = [_pod("a", "Job", "j1"), _pod("b", "Job", "j2"), _pod("a", "ReplicaSet", "web-1")]
    said: list[str] = []

    def read(held: Any) -> tuple[list[Any], list[str]]:
        with serve(script) as api:
            cluster = kube.Cluster(kubeconfig(tmp_path, api.url), timeout=5)
            cluster.sleep = lambda _: None
            owners, _, _ = _owners_and_siblings(
                cluster, _Reader(cluster), pods, RowRules(ready=()), said.append, False, held
            )
        return owners, [urlsplit(p).path for _, p in api.requests]

    everything, all_asked = read(None)
    assert {owner_key(o) for o in everything} == {
        ("Job", "a", "j1"),
        ("Job", "b", "j2"),
        ("ReplicaSet", "a", "web-1"),
        ("Deployment", "a", "web"),
    }
    held = {owner_key(o): o for o in everything if o["kind"] in ("Job", "ReplicaSet")}
    held.pop(("Job", "b", "j2"))
    again, asked = read(held)
    assert sorted(map(owner_key, again)) == sorted(map(owner_key, everything))
    assert all(o is held[owner_key(o)] for o in again if owner_key(o) in held)
    assert sorted(asked) == [
        "/apis/apps/v1/namespaces/a/deployments/web",  # up the chain of the held ReplicaSet
        "/apis/batch/v1/namespaces/b/jobs/j2",
    ]
    assert len(all_asked) == 4
    assert (
        said[-2] == "4 owners read (2 unchanged since the last read, not read again); "
        "looking for replacements"
    )
