"""Placement facts outside the pod (issue 33 item 3): a StatefulSet pod whose claim is bound to a
PersistentVolume with node affinity to the dead node can only be recreated there. On neighbours
of the recorded rwo-volume-on-dead-node fixture (db-v1-0, Terminating on flaky-v1, claim
data-db-v1-0 -> pv-db-v1), with the PV's nodeAffinity drawn as the API allows it."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kubectl_nodefail.analysis import pv_affinity, storage
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.snapshot.model import Snapshot
from tests.unit.conftest import load

NODE, POD, PV = "flaky-v1", "db-v1-0", "pv-db-v1"


def _with_affinity(terms: list[dict[str, Any]]) -> Snapshot:
    snap = copy.deepcopy(load("rwo-volume-on-dead-node"))
    pv = snap.pv(PV)
    assert pv is not None
    pv["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": terms}}
    return snap


def _hostname_in(*values: str) -> dict[str, Any]:
    return {
        "matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": list(values)}
        ]
    }


def _row(snap: Snapshot) -> Any:
    report = diagnose(snap, snap.captured_at)
    return next(p for p in report.pods if p.name == POD)


def test_a_local_volume_on_the_dead_node_pins_the_recreated_pod_there() -> None:
    row = _row(_with_affinity([_hostname_in(NODE)]))
    assert "may land on this or another node" not in row.if_node_returns
    assert f"recreates {POD} on {NODE} again" in row.if_node_returns, row.if_node_returns
    assert f"allows only {NODE}" in row.if_node_returns
    assert f"then only on {NODE}" in row.replacement.summary, row.replacement.summary
    assert any("its node affinity allows only" in n for n in row.storage), row.storage
    premises = {(p.object, p.field) for c in row.claims for p in c.because}
    assert (f"PersistentVolume/{PV}", "spec.nodeAffinity.required") in premises


def test_a_volume_other_nodes_can_use_does_not_pin() -> None:
    for terms in (
        [_hostname_in(NODE, "healthy-0")],
        [_hostname_in(NODE), _hostname_in("healthy-0")],
        [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "Exists"}]}],
    ):
        row = _row(_with_affinity(terms))
        assert "may land on this or another node" in row.if_node_returns, (terms, row)
        assert "then only on" not in row.replacement.summary


@given(
    operator=st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bogus"]),
    values=st.lists(st.sampled_from([NODE, "healthy-0", "1", "x"]), max_size=3),
    by_field=st.booleans(),
)
def test_the_pin_is_said_only_when_no_other_node_can_match(
    operator: str, values: list[str], by_field: bool
) -> None:
    key = "metadata.name" if by_field else "kubernetes.io/hostname"
    group = "matchFields" if by_field else "matchExpressions"
    snap = _with_affinity([{group: [{"key": key, "operator": operator, "values": values}]}])
    pv = snap.pv(PV)
    assert pv is not None
    allowed = pv_affinity.volume_nodes(pv, snap.nodes)
    pinned = storage.pinning_volume_of(pv, snap, NODE)
    assert not pinned or (allowed == [NODE] and operator == "In" and values == [NODE])
    if operator == "In" and values == [NODE]:
        assert pinned
    row = _row(snap)
    assert (f"on {NODE} again" in row.if_node_returns) == pinned
