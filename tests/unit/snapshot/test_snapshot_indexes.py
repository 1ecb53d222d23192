"""The snapshot's indexes (built once, so the analysis is linear in stuck pods) give exactly
what a scan of the snapshot's lists gives, in the same order, on every recorded dump and a
generated outage; and a list given a new value is indexed anew."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from bench import outage
from kubectl_nodefail.snapshot.model import Obj, Snapshot, load_dump

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
DUMPS = sorted(FIXTURES.glob("*.json"))


def _snapshots() -> list[tuple[str, Snapshot]]:
    out = [(p.name, load_dump(str(p))) for p in DUMPS]
    return [*out, ("generated", outage.outage(outage.Shape(failed=12)))]


def _node_of(obj: Obj) -> object:
    return (obj.get("spec") or {}).get("nodeName")


def _pv_of(va: Obj) -> object:
    return ((va.get("spec") or {}).get("source") or {}).get("persistentVolumeName")


@pytest.mark.parametrize(
    ("name", "snap"), _snapshots(), ids=lambda x: x if isinstance(x, str) else ""
)
def test_indexes_equal_scans(name: str, snap: Snapshot) -> None:
    nodes = {n["metadata"]["name"] for n in snap.nodes} | {str(_node_of(p)) for p in snap.pods}
    for node in sorted(nodes):
        assert snap.pods_on(node) == [p for p in snap.pods if _node_of(p) == node]
    pvs = sorted({str(_pv_of(va)) for va in snap.volume_attachments} | {"pv-unknown"})
    for node in sorted(nodes):
        for pv in pvs:
            assert snap.attachments(nodes=[node], pvs=[pv]) == [
                va for va in snap.volume_attachments if _node_of(va) == node or _pv_of(va) == pv
            ]
    for ev in snap.events:
        inv = ev.get("involvedObject") or {}
        key = (inv.get("kind", ""), inv.get("namespace", ""), inv.get("name", ""))
        assert snap.events_about(*key) == [
            e
            for e in snap.events
            if (e.get("involvedObject") or {}).get("kind") == key[0]
            and (e.get("involvedObject") or {}).get("name") == key[2]
            and (e.get("involvedObject") or {}).get("namespace", "") == key[1]
        ]
    assert snap.events_about("Pod", "no-such-namespace", "no-such-pod") == []


def test_a_new_list_is_indexed_anew() -> None:
    snap = load_dump(str(FIXTURES / "node-down-after-eviction.json"))
    node = "flaky-a"
    before = snap.pods_on(node)
    assert before and snap.memo("count", lambda s: len(s.pods)) == len(snap.pods)
    snap.pods = list(reversed(snap.pods))
    assert snap.pods_on(node) == list(reversed(before))
    assert snap.memo("count", lambda s: -1) == -1  # the old memo was dropped with the old list


def test_a_copy_has_indexes_of_its_own() -> None:
    snap = load_dump(str(FIXTURES / "node-down-after-eviction.json"))
    assert snap.memo("count", lambda s: len(s.pods)) == len(snap.pods)
    assert snap.pods_on("flaky-a")
    other = copy.copy(snap)
    other.pods = []
    assert other.pods_on("flaky-a") == [] and other.memo("count", lambda s: len(s.pods)) == 0
    assert snap.pods_on("flaky-a") and snap.memo("count", lambda s: -1) == len(snap.pods)
