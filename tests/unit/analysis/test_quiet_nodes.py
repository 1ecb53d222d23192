"""A plainly healthy node's finding is made only when one of its pods is stuck
(diagnose._quiet): the same report as making every node's finding, on every recording and at
later moments, and a node called quiet is one whose full finding no view lists."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kubectl_nodefail.analysis import diagnose as diagnosis
from kubectl_nodefail.analysis import facts, nodes, unmarked
from kubectl_nodefail.render import render
from kubectl_nodefail.snapshot.model import Snapshot, format_time, from_items
from tests.unit.conftest import FIXTURES, load_dump

RECORDINGS = sorted(FIXTURES.glob("*.json")) + sorted((FIXTURES / "audit").glob("*.json"))
LATER = (0, 30, 300, 3 * 3600)  # seconds after the read: leases late, evictions due, hours


def _data(snap: Snapshot, seconds: int) -> dict[str, Any]:
    report = diagnosis.diagnose(snap, snap.captured_at + timedelta(seconds=seconds), timelines=True)
    return dict(json.loads(render.as_json(render.report_data(report))))


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the nodes whose finding diagnose makes from now on, one per finding."""
    made: list[str] = []
    analyse = diagnosis.analyse_node

    def counted(node: Any, *args: Any) -> Any:
        made.append(node["metadata"]["name"])
        return analyse(node, *args)

    monkeypatch.setattr(diagnosis, "analyse_node", counted)
    return made


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.stem)
def test_the_report_is_the_one_made_with_every_nodes_finding(
    path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = load_dump(str(path))
    light = [_data(snap, s) for s in LATER]
    made = _counted(monkeypatch)
    monkeypatch.setattr(diagnosis, "_quiet", lambda *args: False)
    assert [_data(snap, s) for s in LATER] == light
    assert len(made) == len(snap.nodes) * len(LATER)


def test_only_the_listed_nodes_findings_are_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above is between two paths: here the light one skips the Ready nodes."""
    snap = load_dump(str(FIXTURES / "node-down-after-eviction.json"))
    made = _counted(monkeypatch)
    report = diagnosis.diagnose(snap, snap.captured_at)
    ready = [n["metadata"]["name"] for n in snap.nodes if nodes.is_ready(n)]
    assert ready and report.nodes
    assert sorted(made) == sorted(f.name for f in report.nodes)


CONDITION_TYPES = [
    "Ready",
    "MemoryPressure",
    "DiskPressure",
    "NetworkUnavailable",
    "KernelDeadlock",
    "Custom",
]
TAINT_KEYS = [
    facts.TAINT_OUT_OF_SERVICE,
    facts.TAINT_CLOUD_SHUTDOWN,
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/not-ready",
    "example.com/custom",
]

conditions = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(CONDITION_TYPES),
            "status": st.sampled_from(["True", "False", "Unknown"]),
            "reason": st.sampled_from(["", "KubeletReady", "NodeStatusUnknown"]),
            "message": st.sampled_from(["", "container runtime is down", "node is shutting down"]),
        }
    ),
    max_size=5,
)
taints = st.lists(
    st.builds(
        lambda key, effect: {"key": key, "effect": effect},
        st.sampled_from(TAINT_KEYS),
        st.sampled_from(["NoSchedule", "NoExecute"]),
    ),
    max_size=3,
)
lease_age = st.one_of(st.none(), st.integers(min_value=-5, max_value=20_000))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example([{"type": "Ready", "status": "True", "reason": "", "message": ""}], [], 5, 40, None)
@example([{"type": "Ready", "status": "True", "reason": "", "message": ""}], [], None, None, 30)
@given(
    conditions,
    taints,
    lease_age,
    st.sampled_from([None, 10, 40]),
    st.one_of(st.none(), st.integers(min_value=0, max_value=600)),
)
def test_a_quiet_node_is_one_no_view_lists(
    conds: list[dict[str, str]],
    node_taints: list[dict[str, str]],
    age: int | None,
    duration: int | None,
    leader_age: int | None,
) -> None:
    snap = from_items([], captured_at=load_dump(str(RECORDINGS[0])).captured_at)
    now = snap.captured_at
    node = {
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {}},
        "spec": {"taints": node_taints},
        "status": {"conditions": [{**c, "lastHeartbeatTime": format_time(now)} for c in conds]},
    }
    snap.nodes.append(node)
    if age is not None:
        spec: dict[str, Any] = {"renewTime": format_time(now - timedelta(seconds=age))}
        if duration is not None:
            spec["leaseDurationSeconds"] = duration
        meta = {"name": "n1", "namespace": "kube-node-lease"}
        snap.leases.append({"kind": "Lease", "metadata": meta, "spec": spec})
    if leader_age is not None:
        snap.leases.append(
            {
                "kind": "Lease",
                "metadata": {"name": "kube-controller-manager", "namespace": "kube-system"},
                "spec": {
                    "holderIdentity": "cm-1",
                    "renewTime": format_time(now - timedelta(seconds=leader_age)),
                    "acquireTime": format_time(now - timedelta(seconds=leader_age + 3600)),
                    "leaseDurationSeconds": 15,
                },
            }
        )
    if not diagnosis._quiet(node, snap, now):  # (the examples above are quiet ones)
        return
    finding = nodes.analyse_node(node, snap, now)
    assert not finding.failed
    assert not diagnosis._listed(finding)
    assert not unmarked.of(finding)
