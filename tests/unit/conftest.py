"""Fixtures recorded from the real control plane (make record), loaded for the pure analysis."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.findings import PodFinding, Report
from kubectl_nodefail.snapshot import Snapshot, load_dump

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def load(name: str) -> Snapshot:
    return load_dump(str(FIXTURES / f"{name}.json"))


def report_of(name: str, **kwargs: object) -> Report:
    snap = load(name)
    return diagnose(snap, snap.captured_at, **kwargs)  # type: ignore[arg-type]


def pod(report: Report, namespace: str, prefix: str) -> PodFinding:
    """The one pod whose name is `prefix` or `prefix-<suffix>` (controllers add suffixes)."""
    pattern = re.compile(rf"^{re.escape(prefix)}(-[a-z0-9]{{5}}|-[a-z0-9]{{6,10}}-[a-z0-9]{{5}})?$")
    found = [p for p in report.pods if p.namespace == namespace and pattern.match(p.name)]
    assert len(found) == 1, f"{namespace}/{prefix}: {[p.name for p in report.pods]}"
    return found[0]


def nodelost_era(snap: Snapshot, node: str) -> Snapshot:
    """EDITED STATE: what a <= 1.26 node controller would have written on the same moment.

    No current cluster can produce it (the NodeLost reason left the controller in 1.27), so the
    recorded snapshot is edited in exactly two ways and labelled: the server version, and the
    reason/message the old controller set on the pods it deleted from the lost node.
    """
    old = copy.deepcopy(snap)
    old.server_version = "v1.26.15"
    old.notes = {
        **old.notes,
        "edited": "NodeLost era: serverVersion and pod status.reason edited from a 1.36 recording",
    }
    for p in old.pods:
        if p["spec"].get("nodeName") == node and p["metadata"].get("deletionTimestamp"):
            p["status"]["reason"] = "NodeLost"
            p["status"]["message"] = (
                f"Node {node} which was running pod {p['metadata']['name']} is unresponsive"
            )
    return old


@pytest.fixture(scope="session")
def after_eviction() -> Report:
    return report_of("node-down-after-eviction")


@pytest.fixture(scope="session")
def before_eviction() -> Report:
    return report_of("node-down-before-eviction")
