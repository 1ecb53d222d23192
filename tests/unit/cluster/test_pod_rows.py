"""Sibling pods read as Table rows (podrows.py, gather._sibling_rows): a row stands for its pod
only when its columns decide every field the compact pod carries; anything else is read whole.

Whether the columns mean what podrows says is judged on the real control plane
(tests/e2e/test_pod_rows.py: generated pod states, the API server's own printer, the full
objects compared). Here: any row at all (hypothesis) gives a pod only under those conditions
and never raises; and what the reading does with answers a real API server does not give on
cue (a plain list instead of a Table, rows without objects, a pod gone between the list and its
GET) — a tiny local server plays those.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_nodefail.cluster import gather, kube, podrows
from kubectl_nodefail.common.errors import MalformedResponse
from kubectl_nodefail.snapshot import dumpschema
from tests.support.fakeapi import answering, json_answer, kubeconfig, serve, table

COLUMNS = [
    "Name",
    "Ready",
    "Status",
    "Restarts",
    "Age",
    "IP",
    "Node",
    "Nominated Node",
    "Readiness Gates",
]
OWNER = {"uid": "rs-1", "kind": "ReplicaSet", "name": "web-1", "controller": True}
OWNER_RS = {
    "kind": "ReplicaSet",
    "metadata": {"name": "web-1", "namespace": "ns", "uid": "rs-1"},
    "spec": {"selector": {"matchLabels": {"pod-template-hash": "h1"}}},
}


def meta(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": "ns",
        "uid": f"uid-{name}",
        "creationTimestamp": "2026-12-01T10:00:00Z",
        "ownerReferences": [OWNER],
        **extra,
    }


def cells(name: str, ready: str = "2/2", status: str = "Running", node: str = "n1") -> list[Any]:
    return [name, ready, status, "0", "5m", "10.0.0.1", node, "<none>", "<none>"]


cell = st.one_of(
    st.sampled_from(
        ["Running", "Pending", "Terminating", "1/1", "0/1", "2/2", "1/2", "<none>", "", "n1"]
    ),
    st.text(max_size=6),
    st.integers(-2, 3),
    st.none(),
    st.booleans(),
)


# a row that stands for its pod, with up to two cells replaced by anything
near_valid = st.builds(
    lambda changes: [dict(changes).get(i, c) for i, c in enumerate(cells("p"))],
    st.lists(st.tuples(st.integers(0, len(COLUMNS) - 1), cell), max_size=2),
)


@settings(max_examples=400)
@given(
    row=st.one_of(st.lists(cell, min_size=0, max_size=11), near_valid),
    columns=st.one_of(st.just(COLUMNS), st.permutations(COLUMNS), st.lists(st.text(max_size=8))),
    deleting=st.booleans(),
    with_meta=st.booleans(),
)
def test_a_row_stands_for_a_pod_only_when_its_columns_decide_it(
    row: list[Any], columns: list[str], deleting: bool, with_meta: bool
) -> None:
    name = row[0] if row and isinstance(row[0], str) else "p"
    m = meta(name, **({"deletionTimestamp": "2026-12-01T10:05:00Z"} if deleting else {}))
    pod = podrows.from_row(columns, row, m if with_meta else None)
    if pod is None:
        return
    cell_of = dict(zip(columns, row))
    ready, total = cell_of["Ready"].split("/")
    assert len(row) == len(columns) and with_meta and not deleting
    assert cell_of["Status"] == "Running" and ready == total and int(total) >= 1
    assert (
        cell_of["Readiness Gates"] == "<none>"
        or len(set(cell_of["Readiness Gates"].split("/"))) == 1
    )
    assert cell_of["Node"] not in ("", "<none>") and cell_of["Name"] == m["name"]
    assert pod["metadata"] is m and pod["spec"] == {"nodeName": cell_of["Node"]}
    assert pod["status"]["phase"] == "Running"
    # what a live read keeps of it is what it says, and a dump holding it loads
    assert dumpschema.cut_live(dict(pod)) == pod


def test_rows_that_do_not_decide_are_not_taken() -> None:
    m = meta("a")
    assert podrows.from_row(COLUMNS, cells("a"), m) is not None
    for row in (
        cells("a", ready="1/2"),  # a container not ready
        cells("a", ready="0/0"),
        cells("a", status="Completed"),
        cells("a", status="Terminating"),
        cells("a", node="<none>"),
        cells("b"),  # not the row of this object
        cells("a")[:-1],
        [*cells("a")[:-1], "0/1"],  # a readiness gate not True
    ):
        assert podrows.from_row(COLUMNS, row, m) is None, row
    assert podrows.from_row(COLUMNS, [*cells("a")[:-1], "1/1"], m) is not None
    assert podrows.from_row(COLUMNS[:-1], cells("a")[:-1], m) is None  # no gates column


def _table(rows: list[tuple[list[Any], dict[str, Any] | None]]) -> dict[str, Any]:
    return dict(table(COLUMNS, rows))


def _full(name: str, phase: str = "Running") -> dict[str, Any]:
    return {"metadata": meta(name), "spec": {"nodeName": "n1"}, "status": {"phase": phase}}


def _read(tmp_path: Path, answer: Any) -> tuple[list[dict[str, Any]], list[str]]:
    with serve(answering(answer)) as api:
        cluster = kube.Cluster(kubeconfig(tmp_path, api.url), timeout=5)
        cluster.shape["Pod"] = dumpschema.cut_live
        reader = gather._Reader(cluster)
        rules = gather.RowRules(ready={"n1"}, known={"uid-known"})
        pods = gather._siblings(cluster, reader, [OWNER_RS], rules)
        return pods, [p for _, p in api.requests]


def test_rows_stand_for_running_ready_pods_and_the_others_are_read_whole(tmp_path: Path) -> None:
    def answer(path: str, query: dict[str, list[str]]) -> Any:
        if path == "/api/v1/pods":
            assert query["includeObject"] == ["Metadata"]
            return _table(
                [
                    (cells("a"), meta("a")),
                    (cells("b", status="Pending", node="<none>"), meta("b")),
                    (cells("c", node="n-down"), meta("c")),  # a node not Ready: read whole
                    (cells("known"), meta("known", uid="uid-known")),  # read already: left out
                    (cells("d"), meta("d")),
                ]
            )
        name = path.rsplit("/", 1)[1]
        return _full(name, "Pending" if name == "b" else "Running")

    pods, paths = _read(tmp_path, answer)
    assert [p["metadata"]["name"] for p in pods] == ["a", "b", "c", "d"]  # the list's order
    assert [podrows.READ_FROM in p for p in pods] == [True, False, False, True]
    assert sorted(p.split("?")[0] for p in paths[1:]) == [
        "/api/v1/namespaces/ns/pods/b",
        "/api/v1/namespaces/ns/pods/c",
    ]


def test_a_plain_list_instead_of_a_table_is_taken_whole(tmp_path: Path) -> None:
    def answer(path: str, query: dict[str, list[str]]) -> Any:
        return {"kind": "PodList", "metadata": {}, "items": [_full("a"), _full("b", "Pending")]}

    pods, paths = _read(tmp_path, answer)
    assert [p["metadata"]["name"] for p in pods] == ["a", "b"] and len(paths) == 1
    assert not any(podrows.READ_FROM in p for p in pods)


def test_rows_without_their_objects_make_the_list_read_again_whole(tmp_path: Path) -> None:
    def answer(path: str, query: dict[str, list[str]]) -> Any:
        if "includeObject" in query:
            return _table([(cells("a"), meta("a")), (cells("b"), None)])
        return {"kind": "PodList", "metadata": {}, "items": [_full("a"), _full("b")]}

    pods, paths = _read(tmp_path, answer)
    assert [p["metadata"]["name"] for p in pods] == ["a", "b"] and len(paths) == 2
    assert "includeObject" not in paths[1]


def test_many_rows_to_read_whole_make_one_list_not_many_gets(tmp_path: Path) -> None:
    n = gather.ROWS_READ_ONE_BY_ONE + 1
    names = [f"p{i:02d}" for i in range(n)]

    def answer(path: str, query: dict[str, list[str]]) -> Any:
        if "includeObject" in query:
            return _table([(cells(x, status="Completed", ready="0/2"), meta(x)) for x in names])
        return {"kind": "PodList", "metadata": {}, "items": [_full(x, "Succeeded") for x in names]}

    pods, paths = _read(tmp_path, answer)
    assert [p["metadata"]["name"] for p in pods] == names and len(paths) == 2


def test_a_pod_gone_between_the_list_and_its_get_is_absent(tmp_path: Path) -> None:
    def script(n: int, method: str, path: str) -> Any:
        if "includeObject" in path:
            return json_answer(
                _table([(cells("a", ready="1/2"), meta("a")), (cells("b"), meta("b"))])
            )
        return json_answer({"kind": "Status", "code": 404, "reason": "NotFound"}, 404)

    with serve(script) as api:
        cluster = kube.Cluster(kubeconfig(tmp_path, api.url), timeout=5)
        reader = gather._Reader(cluster)
        pods = gather._siblings(cluster, reader, [OWNER_RS], gather.RowRules({"n1"}))
    assert [p["metadata"]["name"] for p in pods] == ["b"] and not reader.gaps
    assert json.dumps(pods)  # plain JSON, as a dump writes it


def test_pods_of_owners_whose_pods_mount_claims_are_read_whole(tmp_path: Path) -> None:
    """The storage analysis reads their volumes, which a row does not have: a StatefulSet's
    pods, and an owner one of whose pods read already mounts a claim."""
    sts = {
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "ns", "uid": "sts-1"},
        "spec": {"selector": {"matchLabels": {"app": "db"}}},
    }

    def script(n: int, method: str, path: str) -> Any:
        assert "includeObject" not in path, path
        owner, name = ({**OWNER, "uid": "sts-1"}, "y") if "app" in path else (OWNER, "x")
        item = {"metadata": {**meta(name), "ownerReferences": [owner]}, "spec": {"nodeName": "n1"}}
        return json_answer({"kind": "PodList", "metadata": {}, "items": [item]})

    with serve(script) as api:
        cluster = kube.Cluster(kubeconfig(tmp_path, api.url), timeout=5)
        rules = gather.RowRules({"n1"}, whole_owners={"rs-1"})
        pods = gather._siblings(cluster, gather._Reader(cluster), [OWNER_RS, sts], rules)
    assert len(pods) == 2 and not any(podrows.READ_FROM in p for p in pods)
    assert len(api.requests) == 2


def test_owners_read_whole_mount_claims_or_have_a_pod_on_a_node_without_a_failure_time() -> None:
    def pod(uid: str, *volumes: dict[str, Any], node: str = "n1") -> dict[str, Any]:
        return {
            "metadata": {"name": uid, "ownerReferences": [{"uid": uid}]},
            "spec": {"volumes": list(volumes), "nodeName": node},
        }

    pods = [
        pod("a", {"name": "d", "persistentVolumeClaim": {"claimName": "c"}}),
        pod("b", {"name": "e", "ephemeral": {}}),
        pod("c", {"name": "f", "emptyDir": {}}),
        pod("d"),
        pod("e", node="ready-but-examined"),
    ]
    assert gather._whole_owners(pods, {"ready-but-examined"}) == {"a", "b", "e"}


def _node(name: str, status: str, since: str | None) -> dict[str, Any]:
    cond = {"type": "Ready", "status": status, **({"lastTransitionTime": since} if since else {})}
    return {"metadata": {"name": name}, "status": {"conditions": [cond]}}


def test_replacements_are_looked_for_from_the_earliest_failure_as_the_timeline_does() -> None:
    since, whole = gather._replacements_since(
        [
            _node("late", "Unknown", "2026-12-01T10:05:00Z"),
            _node("early", "False", "2026-12-01T10:01:00Z"),
            _node("up", "True", "2026-12-01T09:00:00Z"),  # its timeline takes every pod
            _node("no-time", "Unknown", None),
        ]
    )
    assert since is not None and since.isoformat() == "2026-12-01T10:01:00+00:00"
    assert whole == {"up", "no-time"}
    assert gather._replacements_since([]) == (None, frozenset())


def test_a_row_created_since_the_failure_is_read_whole() -> None:
    """It is a replacement in the failed node's timeline, which reads when it was scheduled and
    became Ready: a row has neither."""
    since, _ = gather._replacements_since([_node("down", "Unknown", "2026-12-01T10:01:00Z")])
    rules = gather.RowRules({"n1"}, since=since)
    before = podrows.from_row(COLUMNS, cells("a"), meta("a"))
    after = podrows.from_row(
        COLUMNS, cells("b"), meta("b", creationTimestamp="2026-12-01T10:01:00Z")
    )
    no_time = podrows.from_row(COLUMNS, cells("c"), {**meta("c"), "creationTimestamp": None})
    assert rules.stands_for(before) and not rules.stands_for(after)
    assert not rules.stands_for(no_time) and not rules.stands_for(None)
    assert not gather.RowRules({"n2"}).stands_for(before)  # not on a Ready node


def test_a_malformed_owner_reference_is_a_stated_gap_not_a_traceback(tmp_path: Path) -> None:
    bad = {**meta("a"), "ownerReferences": ["x"]}
    for answer in (
        _table([(cells("a"), bad)]),
        {"kind": "PodList", "metadata": {}, "items": [{"metadata": bad}]},
        _table([(cells("a"), {**meta("a"), "uid": ["not", "a", "string"]})]),
    ):

        def script(n: int, method: str, path: str, answer: Any = answer) -> Any:
            return json_answer(answer)

        with serve(script) as api:
            cluster = kube.Cluster(kubeconfig(tmp_path, api.url), timeout=5)
            reader = gather._Reader(cluster)
            pods = gather._siblings(cluster, reader, [OWNER_RS], gather.RowRules({"n1"}))
        assert pods == [] and len(reader.gaps) == 1, reader.gaps
        assert "malformed" in reader.gaps[0]


def test_a_row_whose_cells_are_not_a_list_is_read_whole(tmp_path: Path) -> None:
    def script(n: int, method: str, path: str) -> Any:
        if "includeObject" in path:
            table = _table([(cells("a"), meta("a"))])
            table["rows"][0]["cells"] = "garbage"
            return json_answer(table)
        return json_answer(_full("a"))

    with serve(script) as api:
        cluster = kube.Cluster(kubeconfig(tmp_path, api.url), timeout=5)
        pods = gather._siblings(
            cluster, gather._Reader(cluster), [OWNER_RS], gather.RowRules({"n1"})
        )
    assert [p["metadata"]["name"] for p in pods] == ["a"] and podrows.READ_FROM not in pods[0]
    assert api.requests[1][1] == "/api/v1/namespaces/ns/pods/a"


def test_an_owner_with_a_pod_on_a_node_listed_without_a_failure_time_is_read_whole(
    tmp_path: Path,
) -> None:
    """A Ready node listed for its lease (or an examined node with no Ready transition): its
    timeline takes every pod of its pods' controllers as replacements, with their scheduled and
    ready times, so none of that owner's rows stands for its pod; an unhashable node cell from a
    bad server is no traceback."""

    def script(n: int, method: str, path: str) -> Any:
        if "includeObject" in path:
            return json_answer(
                _table(
                    [
                        (cells("a"), meta("a")),
                        (cells("b", node="late"), meta("b")),
                        ([*cells("c")[:6], ["x"], *cells("c")[7:]], meta("c")),
                    ]
                )
            )
        return json_answer(_full(path.rsplit("/", 1)[1]))

    with serve(script) as api:
        cluster = kube.Cluster(kubeconfig(tmp_path, api.url), timeout=5)
        rules = gather.RowRules({"n1"}, whole_nodes={"late"})
        pods = gather._siblings(cluster, gather._Reader(cluster), [OWNER_RS], rules)
    assert [p["metadata"]["name"] for p in pods] == ["a", "b", "c"]
    assert not any(podrows.READ_FROM in p for p in pods)


def test_a_pod_one_of_whose_owners_is_read_whole_is_read_whole(tmp_path: Path) -> None:
    other = {"uid": "other", "kind": "ReplicaSet", "name": "x"}

    def script(n: int, method: str, path: str) -> Any:
        if "includeObject" in path:
            shared = {**meta("b"), "ownerReferences": [OWNER, other]}
            return json_answer(_table([(cells("a"), meta("a")), (cells("b"), shared)]))
        return json_answer(_full(path.rsplit("/", 1)[1]))

    with serve(script) as api:
        cluster = kube.Cluster(kubeconfig(tmp_path, api.url), timeout=5)
        rules = gather.RowRules({"n1"}, whole_owners={"other"})
        pods = gather._siblings(cluster, gather._Reader(cluster), [OWNER_RS], rules)
    assert [podrows.READ_FROM in p for p in pods] == [True, False]


def test_times_of_the_wrong_type_from_a_server_read_whole_not_a_traceback() -> None:
    rules = gather.RowRules({"n1"})
    for bad in (12, ["2026"], {"a": 1}, "yesterday"):
        pod = podrows.from_row(COLUMNS, cells("a"), {**meta("a"), "creationTimestamp": bad})
        assert not rules.stands_for(pod)
        node = {
            "kind": "Node",
            "metadata": {"name": "n"},
            "status": {
                "conditions": [{"type": "Ready", "status": "Unknown", "lastTransitionTime": bad}]
            },
        }
        # such a node never reaches _replacements_since: refused as its page arrives
        # (cli.gathered shapes nodes with cut_live; test_bad_servers checks it end to end)
        with pytest.raises(MalformedResponse):
            dumpschema.cut_live(node)
    for conditions in ("x", [1, "y"], {"type": "Ready"}):
        node = {"kind": "Node", "metadata": {"name": "n"}, "status": {"conditions": conditions}}
        with pytest.raises(MalformedResponse):
            dumpschema.cut_live(node)
    # a checked node without a transition time: every pod of its controllers whole
    node = {"metadata": {"name": "n"}, "status": {"conditions": [{"type": "Ready"}]}}
    assert gather._replacements_since([node]) == (None, {"n"})
