"""The incident timeline (analysis/timeline.py) on snapshots recorded from the real control
plane, and its views: --explain NODE, nodes[].timeline in JSON, -o markdown."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_nodefail.analysis.timeline import (
    ORDER,
    OUT_OF_SERVICE_BY,
    node_timeline,
    to_data,
    untimed_taints,
)
from kubectl_nodefail.cli.main import main
from kubectl_nodefail.render.timeline_view import grouped, text
from kubectl_nodefail.snapshot.model import load_dump, parse_time
from tests.unit.conftest import FIXTURES

AFTER = FIXTURES / "node-down-after-eviction.json"
NODE = "flaky-a"


def _kinds(entries: list, obj: str | None = None) -> list[str]:  # type: ignore[type-arg]
    return [e.kind for e in entries if obj is None or e.object == obj]


def test_node_down_after_eviction_in_order_with_the_recorded_times() -> None:
    snap = load_dump(str(AFTER))
    entries = node_timeline(snap, NODE)
    times = [e.time for e in entries]
    assert times == sorted(times)
    first = {}
    for e in entries:
        first.setdefault(e.kind, e)
    # the kubelet's last signs of life, then the node lifecycle controller's verdict
    assert first["lease-renewed"].time == parse_time("2026-11-30T09:46:29.260201Z")
    assert first["node-not-ready"].time == parse_time("2026-11-30T09:46:46Z")
    assert "NodeStatusUnknown" in first["node-not-ready"].summary
    taints = [e.summary for e in entries if e.kind == "taint-added"]
    assert taints == [
        "taint node.kubernetes.io/unreachable:NoSchedule added",
        "taint node.kubernetes.io/unreachable:NoExecute added",
    ]
    # evicted by the taint manager 20 s after the NoExecute taint (tolerationSeconds 20)
    evicted = [e for e in entries if e.kind == "pod-evicted"]
    assert len(evicted) == 8 and {e.summary for e in evicted} == {"evicted: DeletionByTaintManager"}
    assert evicted[0].time - first["node-not-ready"].time == timedelta(seconds=20)
    assert "pod/scenario-down/db-0" in {e.object for e in evicted}
    # DaemonSet pods are never evicted: marked not ready only
    agent = "pod/scenario-down/agent-m5czk"
    assert _kinds(entries, agent) == ["pod-not-ready"]
    # replacements: created, scheduled (or not), ready, for the pod they replace
    web_new = "pod/scenario-down/web-7f776b487b-jxzws"
    assert _kinds(entries, web_new) == [
        "replacement-created",
        "replacement-scheduled",
        "replacement-ready",
    ]
    scheduled = next(
        e for e in entries if e.object == web_new and e.kind == "replacement-scheduled"
    )
    assert scheduled.summary == "replacement scheduled on flaky-b"
    pinned = [e for e in entries if e.object == "pod/scenario-down/pinned-5c7db6df59-zkklx"]
    assert [e.kind for e in pinned] == ["replacement-created", "replacement-pending"]
    assert "Unschedulable" in pinned[1].summary
    # the StatefulSet pod has no replacement: its name is still taken
    assert not any(e.kind.startswith("replacement") and "/db-" in e.object for e in entries)
    # every cause comes before its effect
    assert first["node-not-ready"].time <= first["taint-added"].time <= evicted[0].time
    assert evicted[0].time <= first["replacement-created"].time


def test_recovered_node_shows_it_came_back() -> None:
    snap = load_dump(str(FIXTURES / "node-down-recovered.json"))
    entries = node_timeline(snap, NODE)
    assert _kinds(entries)[-1] == "node-back"
    assert "status-posted" not in _kinds(entries)  # a Ready node posts status all the time


def test_out_of_service_taint_and_volume_attachment() -> None:
    snap = load_dump(str(FIXTURES / "out-of-service-applied.json"))
    tainted = [
        n["metadata"]["name"]
        for n in snap.nodes
        if any(
            t["key"] == "node.kubernetes.io/out-of-service" for t in n["spec"].get("taints") or []
        )
    ]
    assert tainted
    # recorded after `kubectl taint`: the API server left timeAdded empty, so the timeline
    # cannot place it and says so
    entries = node_timeline(snap, tainted[0])
    assert not [e for e in entries if "out-of-service" in e.summary]
    oos = "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute"
    assert untimed_taints(snap, tainted[0]) == [oos]
    # applied by remediate: its annotation dates it (edited copy of the recording)
    node = next(n for n in snap.nodes if n["metadata"]["name"] == tainted[0])
    node["metadata"].setdefault("annotations", {})[OUT_OF_SERVICE_BY] = (
        "alice at 2026-11-30T09:45:30Z (kubectl-nodefail 0.1.0)"
    )
    entries = node_timeline(snap, tainted[0])
    placed = [e for e in entries if "out-of-service" in e.summary]
    assert [(e.time, e.summary) for e in placed] == [
        (parse_time("2026-11-30T09:45:30Z"), f"taint {oos} added (by alice)")
    ]
    assert untimed_taints(snap, tainted[0]) == []
    snap = load_dump(str(FIXTURES / "rwo-volume-on-dead-node.json"))
    failed = [
        n["metadata"]["name"]
        for n in snap.nodes
        if any(c["type"] == "Ready" and c["status"] != "True" for c in n["status"]["conditions"])
    ]
    kinds = {k for name in failed for k in _kinds(node_timeline(snap, name))}
    assert "node-not-ready" in kinds


def test_unknown_node_has_no_timeline() -> None:
    assert node_timeline(load_dump(str(AFTER)), "no-such-node") == []


def test_json_entries_have_times_ages_and_sources() -> None:
    snap = load_dump(str(AFTER))
    data = to_data(node_timeline(snap, NODE), snap.captured_at)
    assert all(
        set(d) == {"time", "secondsAgo", "kind", "summary", "object", "source", "because"}
        for d in data
    )
    assert all(d["because"] for d in data)  # each names the fields its time is read from
    assert all(d["kind"] in ORDER for d in data)
    assert data[0]["secondsAgo"] >= data[-1]["secondsAgo"] >= 0


@settings(max_examples=40, deadline=None)
@given(st.permutations(list(range(20))))
def test_order_does_not_depend_on_the_order_objects_were_listed(perm: list[int]) -> None:
    snap = load_dump(str(AFTER))
    expected = node_timeline(snap, NODE)
    pods = list(snap.pods)
    order = [i for i in perm if i < len(pods)] + list(range(20, len(pods)))
    snap.pods = [pods[i] for i in order]
    snap.events = list(reversed(snap.events))
    assert node_timeline(snap, NODE) == expected


def test_text_view_groups_a_burst_into_one_line() -> None:
    snap = load_dump(str(AFTER))
    entries = node_timeline(snap, NODE)
    view = text(entries, snap.captured_at)
    assert len(grouped(entries)) < len(entries)
    line = next(x for x in view.splitlines() if "evicted: DeletionByTaintManager" in x)
    assert "8 pods (" in line and "and 4 more" in line and "09:47:06" in line and "21s ago" in line


def test_explain_node_shows_the_timeline_and_json_carries_it() -> None:
    result = CliRunner().invoke(main, ["diagnose", "--from-file", str(AFTER), "--explain", NODE])
    assert result.exit_code == 3
    assert "Timeline (from what the API still records; times UTC):" in result.stdout
    result = CliRunner().invoke(
        main, ["diagnose", "--from-file", str(AFTER), "--explain", NODE, "-o", "json"]
    )
    data = json.loads(result.stdout)
    assert result.exit_code == 3 and data["kind"] == "NodeExplanation" and data["name"] == NODE
    assert data["timeline"][0]["kind"] in ("status-posted", "lease-renewed")
    result = CliRunner().invoke(main, ["diagnose", "--from-file", str(AFTER), "-o", "json"])
    assert json.loads(result.stdout)["nodes"][0]["timeline"]
    result = CliRunner().invoke(
        main,
        ["diagnose", "--from-file", str(AFTER), "--explain", "scenario-down/db-0", "-o", "json"],
    )
    pod = json.loads(result.stdout)
    assert pod["kind"] == "PodExplanation" and pod["controller"] == "statefulset"


def test_markdown_for_an_incident_channel() -> None:
    result = CliRunner().invoke(main, ["diagnose", "--from-file", str(AFTER), "-o", "markdown"])
    assert result.exit_code == 3
    md = result.stdout
    assert md.startswith("## Node failure: flaky-a\n")
    assert "### Timeline of `flaky-a`" in md and "### Stuck pods" in md
    assert "| `scenario-down/db-0` | Terminating | flaky-a | StatefulSet/db |" in md
    assert (
        "```sh\nkubectl nodefail remediate flaky-a --node-shutdown-confirmed "
        "<NODE-YOU-VERIFIED-IS-POWERED-OFF>\n```"
    ) in md
    # every table row has as many cells as its header
    for block in md.split("\n\n"):
        rows = [r for r in block.splitlines() if r.startswith("|")]
        if rows:
            widths = {r.replace("\\|", "").count("|") for r in rows}
            assert len(widths) == 1, block
    healthy = CliRunner().invoke(
        main,
        ["diagnose", "--from-file", str(FIXTURES / "node-down-recovered.json"), "-o", "markdown"],
    )
    assert healthy.exit_code == 0 and "Nothing to do." in healthy.stdout
    bad = CliRunner().invoke(
        main, ["diagnose", "--from-file", str(AFTER), "-o", "markdown", "--explain", NODE]
    )
    assert bad.exit_code == 2


def test_a_new_pod_elsewhere_is_a_replacement_only_where_one_can_be(tmp_path: Path) -> None:
    """Pods created elsewhere after the failure by the controllers of the failed node's pods: a
    ReplicaSet's is listed as a replacement; a DaemonSet's (its own node's pod) and a
    StatefulSet's new ordinal (not the stuck pod's name) are not."""
    doc = json.loads((FIXTURES / "node-down-after-eviction.json").read_text())
    pods = {i["metadata"]["name"]: i for i in doc["items"] if i["kind"] == "Pod"}
    for name, new_name in (("agent-zq2wb", "agent-new01"), ("db-0", "db-1")):
        twin = json.loads(json.dumps(pods[name]))
        twin["metadata"].update(
            name=new_name, uid=f"uid-{new_name}", creationTimestamp="2026-11-30T09:47:10Z"
        )
        twin["metadata"].pop("deletionTimestamp", None)
        twin["spec"]["nodeName"] = "healthy-0"
        doc["items"].append(twin)
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(doc))
    created = [
        e.object
        for e in node_timeline(load_dump(str(path)), NODE)
        if e.kind == "replacement-created"
    ]
    assert any(o.endswith("web-7f776b487b-jxzws") for o in created), created
    assert not any("agent-new01" in o or "db-1" in o for o in created), created


GRACE_900 = FIXTURES / "deployment-grace-900-evicted.json"  # recorded: audit 2037/144


def test_a_grace_period_of_minutes_is_told_as_still_to_come() -> None:
    """Issue 33 item 1 on the real control plane: three pods evicted with a grace period of
    900 s, diagnosed 5 minutes later. Their grace period ends in the future and is said so, in
    the node's timeline (due, negative age), the pods' own timelines and the STUCK column."""
    snap = load_dump(str(GRACE_900))
    node = "au2037-b1-n0"
    data = to_data(node_timeline(snap, node), snap.captured_at)
    ends = [d for d in data if d["kind"] == "pod-grace-ends"]
    assert len(ends) == 3 and not [d for d in data if d["kind"] == "pod-grace-ended"]
    for entry in ends:
        assert entry["secondsAgo"] < 0 and entry["summary"].startswith("grace period ends")
        assert parse_time(entry["time"]) == parse_time(
            "2026-12-05T21:47:04Z"
        )  # the deletionTimestamp
    assert all(d["secondsAgo"] >= 0 for d in data if d not in ends)
    result = CliRunner().invoke(main, ["diagnose", "--from-file", str(GRACE_900), "-o", "json"])
    pods = json.loads(result.stdout)["pods"]
    assert len(pods) == 3
    assert all("grace period ends in 9m54s" in p["timeline"] for p in pods)
    table = CliRunner().invoke(main, ["diagnose", "--from-file", str(GRACE_900)]).stdout
    assert table.count("in grace") == 3


def test_a_replacement_is_said_to_stand_in_for_a_pod_only_when_it_does() -> None:
    """Three pods of one ReplicaSet on the node, three new ones elsewhere: a ReplicaSet replaces
    a count, so no new pod is said to be for one of them in particular."""
    snap = load_dump(str(GRACE_900))
    created = [e for e in node_timeline(snap, "au2037-b1-n0") if e.kind == "replacement-created"]
    assert len(created) == 3
    assert {e.summary for e in created} == {
        "replacement created (for one of the 3 pods its controller has on this node)"
    }
    alone = load_dump(str(AFTER))
    said = [e.summary for e in node_timeline(alone, NODE) if e.kind == "replacement-created"]
    assert said and all("(for pod/" in s for s in said)
    # "the 3 pods its controller has on this node": each of them, and the new pod, rests on
    # the controller's reference and (the three) on the node, which the premise checker re-reads
    for entry in created:
        on_node = {p.object for p in entry.because if p.field == "spec.nodeName"}
        owned = {p.object for p in entry.because if p.field.startswith("metadata.ownerReferences")}
        assert len(on_node) == 3 and on_node < owned and len(owned) == 4
