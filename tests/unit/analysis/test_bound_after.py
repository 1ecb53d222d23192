"""Pods bound to a node after its kubelet stopped reporting (recorded: audit 2038/2, a
StatefulSet tolerating every taint, scaled up while its only allowed node was down): no kubelet
ever saw them, so their status is not "only the last report" of containers that may run."""

from __future__ import annotations

import json

from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.render import render
from kubectl_nodefail.snapshot.model import from_items, load_dump, parse_time
from tests.oracles import premises
from tests.unit.conftest import FIXTURES

PATH = FIXTURES / "bound-after-node-died.json"


def test_a_pod_bound_after_the_last_report_is_said_never_started() -> None:
    snap = load_dump(str(PATH))
    report = diagnose(snap, snap.captured_at)
    pods = {p.name: p for p in report.pods if p.namespace == "au-2038-2"}
    assert set(pods) == {"w-0", "w-1", "w-2"}
    for name in ("w-1", "w-2"):
        assert pods[name].kubectl_status == "Pending"
        assert "after its kubelet last reported" in pods[name].meaning
        assert "have not started here" in pods[name].meaning
        assert "may still be running" not in pods[name].meaning
    # each tolerates every taint: its replacement may land here again, as w-1 and w-2 did
    for pod in pods.values():
        assert "a pod with its tolerations is not kept off" in pod.explanation
    # the pod that ran before the node died: its last report is all the API has
    assert "only the last report" in pods["w-0"].meaning
    raw = json.loads(PATH.read_text())
    assert premises.check(raw, render.report_data(report)) == []


def test_a_pod_kept_off_by_a_taint_is_not_said_to_land_here() -> None:
    raw = json.loads(PATH.read_text())
    for item in raw["items"]:
        if item["kind"] == "Pod":  # the not-ready/unreachable NoExecute keys only
            item["spec"]["tolerations"] = [
                {"key": k, "operator": "Exists", "effect": "NoExecute"}
                for k in ("node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready")
            ]
    snap = from_items(raw["items"], parse_time(raw["capturedAt"]), server_version="v1.36.1")
    pods = diagnose(snap, snap.captured_at).pods
    assert pods and not any("is not kept off" in p.explanation for p in pods)


def test_a_pod_bound_before_the_last_report_is_not() -> None:
    raw = json.loads(PATH.read_text())
    lease = next(i for i in raw["items"] if i["kind"] == "Lease")
    lease["spec"]["renewTime"] = "2026-12-05T21:48:50.000000Z"  # after the binding
    snap = from_items(raw["items"], parse_time(raw["capturedAt"]), server_version="v1.36.1")
    pods = {p.name: p for p in diagnose(snap, snap.captured_at).pods}
    assert "after its kubelet last reported" not in pods["w-1"].meaning
