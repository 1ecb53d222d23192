"""An owner's other pods kept from one `diagnose --watch` read to the next (Kept.siblings,
siblings_read.siblings): taken instead of listed again only while what the lists found would be
found again (no pod of the owner changed: Kept.drop_siblings; listed the same way; a row still
stands for its pod under the read's rules; a pod left out as read elsewhere still is), and what
is taken is what listing again gives. The watch against a fresh diagnose on the real control
plane: tests/e2e/test_watch_follow.py.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

from kubectl_nodefail.cluster import kube
from kubectl_nodefail.cluster.owners_read import _owners_and_siblings, owner_key
from kubectl_nodefail.cluster.pods_read import Found, Kept
from kubectl_nodefail.cluster.reads import _Reader
from kubectl_nodefail.cluster.siblings_read import RowRules, siblings
from kubectl_nodefail.snapshot import dumpschema
from tests.support.fakeapi import answering, json_answer, kubeconfig, serve, table

COLUMNS = ["Name", "Ready", "Status", "Node", "Readiness Gates"]
REF = {"uid": "rs-1", "kind": "ReplicaSet", "name": "web-1", "controller": True}
OWNER = {
    "kind": "ReplicaSet",
    "metadata": {"name": "web-1", "namespace": "ns", "uid": "rs-1"},
    "spec": {"selector": {"matchLabels": {"pod-template-hash": "h1"}}},
}


def _meta(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": "ns",
        "uid": f"uid-{name}",
        "creationTimestamp": "2026-12-01T10:00:00Z",
        "ownerReferences": [REF],
    }


# the owner's pods: two Running and Ready on n1 (rows stand for them), one Pending (read
# whole), one already read whole elsewhere in the read (RowRules.known: left out)
ROWS = [
    (["a", "1/1", "Running", "n1", "<none>"], _meta("a")),
    (["b", "1/1", "Running", "n1", "<none>"], _meta("b")),
    (["c", "0/1", "Pending", "<none>", "<none>"], _meta("c")),
    (["d", "1/1", "Running", "n2", "<none>"], _meta("d")),
]
KNOWN = {"uid-d"}


def _answer(path: str, query: dict[str, list[str]]) -> dict[str, Any]:
    if path.endswith("/replicasets/web-1"):
        return OWNER
    if path.endswith("/pods/c"):
        return {"kind": "Pod", "metadata": _meta("c"), "spec": {}, "status": {"phase": "Pending"}}
    if "Table" in str(query) or query.get("includeObject"):
        return dict(table(COLUMNS, ROWS))
    return {
        "kind": "PodList",
        "metadata": {},
        "items": [
            {"metadata": m, "spec": {"nodeName": c[3]}, "status": {"phase": c[2]}} for c, m in ROWS
        ],
    }


def _read(
    tmp_path: Path,
    rules: RowRules,
    held: dict[str, Found] | None = None,
    refused: str = "",
    owners: tuple[dict[str, Any], ...] = (OWNER,),
) -> tuple[list[dict[str, Any]], dict[str, Found], list[str]]:
    """The owners' other pods read from a server that answers 500 to requests whose path and
    query contain `refused` (nothing when empty)."""

    def script(n: int, method: str, path: str) -> Any:
        if refused and refused in unquote_plus(path):
            return json_answer({"kind": "Status", "code": 500}, 500)
        return answering(_answer)(n, method, path)

    with serve(script) as api:
        cluster = kube.Cluster(kubeconfig(tmp_path, api.url), timeout=5)
        cluster.sleep = lambda _: None
        cluster.shape["Pod"] = dumpschema.cut_live
        reader = _Reader(cluster)
        pods, found = siblings(cluster, reader, list(owners), rules, True, held)
        assert not refused or reader.gaps, "a read refused is a stated gap"
        return pods, found, [p for _, p in api.requests]


def _rules(**changes: Any) -> RowRules:
    return RowRules(**{"ready": {"n1", "n2"}, "known": KNOWN, **changes})


def _names(pods: list[dict[str, Any]]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in pods)


def test_an_owners_pods_found_once_are_taken_again_as_listing_again_gives_them(
    tmp_path: Path,
) -> None:
    first, found, asked = _read(tmp_path, _rules())
    assert _names(first) == ["a", "b", "c"] and asked  # d: read elsewhere
    assert found["rs-1"].elsewhere == {"uid-d"} and found["rs-1"].by_rows
    again, kept, asked_again = _read(tmp_path, _rules(), found)
    assert asked_again == [] and kept["rs-1"] is found["rs-1"]
    assert again == first  # the same pods, as the lists gave them


def test_an_owners_pods_are_listed_again_where_the_rules_no_longer_let_a_row_stand(
    tmp_path: Path,
) -> None:
    """Each rule a row stands under, changed: the lists are read again, and what they give is
    what a read with nothing held gives."""
    _, found, _ = _read(tmp_path, _rules())
    created = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
    for rules in (
        _rules(ready={"n2"}),  # n1 no longer Ready: its pods' rows stand for nothing
        _rules(since=created),  # a node failed since they were created: replacements
        _rules(known=set()),  # d is no longer read elsewhere: the lists must give it
        _rules(whole_nodes={"n1"}),  # a timeline takes every pod of its controllers
        _rules(whole_owners={"rs-1"}),  # its pods mount claims: listed whole
    ):
        pods, kept, asked = _read(tmp_path, rules, found)
        fresh, _, _ = _read(tmp_path, rules)
        assert asked and kept["rs-1"] is not found["rs-1"], rules
        assert _names(pods) == _names(fresh), rules


def test_a_list_that_fails_keeps_nothing_for_the_next_read(tmp_path: Path) -> None:
    pods, found, asked = _read(tmp_path, _rules(), refused="/pods")
    assert pods == [] and found == {} and asked


def test_a_pod_a_row_cannot_stand_for_that_is_not_read_keeps_nothing(tmp_path: Path) -> None:
    """c (Pending) is read one by one; a 500 for it leaves it out of this read (a stated gap)
    and keeps nothing: the next read lists again and finds it."""
    pods, found, _ = _read(tmp_path, _rules(), refused="/pods/c")
    assert _names(pods) == ["a", "b"] and found == {}
    again, _, asked = _read(tmp_path, _rules(), found)
    assert asked and _names(again) == ["a", "b", "c"]


def test_one_list_failing_among_others_keeps_nothing(tmp_path: Path) -> None:
    """A StatefulSet's pods (a list of whole pods) refused, the ReplicaSet's listed: the read
    goes on with a gap, and keeps neither for the next."""
    sts = {
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "ns", "uid": "sts-1"},
        "spec": {"selector": {"matchLabels": {"app": "db"}}},
    }
    pods, found, _ = _read(tmp_path, _rules(), refused="app in (db)", owners=(OWNER, sts))
    assert _names(pods) == ["a", "b", "c"] and found == {}


def test_the_lists_are_for_the_owners_not_taken(tmp_path: Path) -> None:
    """rs-1 taken, rs-2 listed: what rs-2's list matches of rs-1's pods is not kept from it
    (each pod once, as rs-1's kept pods)."""
    _, found, _ = _read(tmp_path, _rules())
    rs2 = {
        "kind": "ReplicaSet",
        "metadata": {"name": "web-2", "namespace": "ns", "uid": "rs-2"},
        "spec": {"selector": {"matchLabels": {"pod-template-hash": "h2"}}},
    }
    pods, kept, asked = _read(tmp_path, _rules(), found, owners=(OWNER, rs2))
    assert asked  # rs-2's list (the server answers every list with rs-1's pods)
    assert [id(p) for p in pods] == [id(p) for p in found["rs-1"].pods]
    assert kept["rs-1"] is found["rs-1"] and kept["rs-2"].pods == ()


def test_an_owner_changed_since_is_listed_again_whatever_was_kept(tmp_path: Path) -> None:
    """_owners_and_siblings takes an owner's kept pods only for an owner taken unchanged."""
    _, found, _ = _read(tmp_path, _rules())
    pod = {"metadata": {**_meta("d"), "labels": {"pod-template-hash": "h1"}}}
    said: list[str] = []

    def read(held_owners: dict[Any, Any]) -> tuple[dict[str, Found], list[str]]:
        with serve(answering(_answer)) as api:
            cluster = kube.Cluster(kubeconfig(tmp_path, api.url), timeout=5)
            cluster.shape["Pod"] = dumpschema.cut_live
            _, _, lists = _owners_and_siblings(
                cluster,
                _Reader(cluster),
                [pod],
                _rules(),
                said.append,
                True,
                held_owners,
                found,
            )
        return lists, [p for _, p in api.requests]

    lists, asked = read({owner_key(OWNER): OWNER})  # unchanged: taken, nothing asked
    assert lists["rs-1"] is found["rs-1"] and asked == [], asked
    assert "(those of 1 owners unchanged since the last read, not listed again)" in said[-1]
    lists, asked = read({})  # changed (dropped from Kept.owners): read, and its pods listed
    assert lists["rs-1"] is not found["rs-1"] and any("/pods" in p for p in asked), asked


def test_a_pod_change_drops_the_owners_it_names_and_those_whose_lists_had_it() -> None:
    kept = Kept()
    held = Found(({"metadata": _meta("a")},), True, frozenset({"uid-d"}))
    other = Found((), True)
    kept.keep_siblings({"rs-1": held, "rs-2": other})
    kept.drop_siblings("uid-new", ())  # a pod of no owner held, naming none
    assert kept.siblings == {"rs-1": held, "rs-2": other}
    kept.drop_siblings("uid-a", ())  # a's owner reference removed: the owner it left
    assert kept.siblings == {"rs-2": other}
    kept.keep_siblings({"rs-1": held, "rs-2": other})
    kept.drop_siblings("uid-d", ())  # read elsewhere, changed
    assert "rs-1" not in kept.siblings
    kept.drop_siblings("uid-new", ("rs-2",))  # a new pod of rs-2
    assert kept.siblings == {}
