"""A snapshot holds one pod per namespace and name: reads made moments apart can hold a pod and
the one its StatefulSet made again under that name (audit 2050/180), and only the newer exists."""

from __future__ import annotations

import copy
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_nodefail.snapshot.model import from_items, one_per_name, parse_time
from tests.oracles import premises
from tests.unit.conftest import FIXTURES


def _pod(name: str, uid: str, rv: str, node: str | None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "uid": uid, "resourceVersion": rv},
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": "Running" if node else "Pending"},
    }


@settings(max_examples=60, deadline=None)
@given(order=st.permutations([0, 1, 2]))
def test_the_newer_of_two_pods_of_one_name_is_kept_whatever_the_read_order(order: list) -> None:
    old = _pod("w-0", "old", "9740", "dead")
    new = _pod("w-0", "new", "10553", None)
    other = _pod("w-1", "w1", "9513", "dead")
    pods = [[old, new, other][i] for i in order]
    kept = one_per_name(pods)
    assert {p["metadata"]["uid"] for p in kept} == {"new", "w1"}
    captured = parse_time("2026-12-06T04:07:25Z")
    assert captured is not None
    snap = from_items(copy.deepcopy(pods), captured)
    assert [p["metadata"]["uid"] for p in snap.pods if p["metadata"]["name"] == "w-0"] == ["new"]
    # the premise checker, on its own, reads the same object under that name
    doc = {"items": pods}
    said = {
        "pods": [
            {
                "claims": [
                    {
                        "kind": "k",
                        "because": [
                            {"object": "Pod/ns/w-0", "field": "metadata.uid", "value": "new"}
                        ],
                    }
                ]
            }
        ]
    }
    assert premises.check(doc, said) == []


def test_a_recorded_snapshot_has_no_pod_twice() -> None:
    doc = json.loads((FIXTURES / "node-down-after-eviction.json").read_text())
    pods = [i for i in doc["items"] if i.get("kind") == "Pod"]
    assert one_per_name(pods) is pods  # nothing to drop: the same list back
