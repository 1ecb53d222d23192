"""The analysis benchmark's generated outages (bench/outage.py): a dump `--from-file` accepts
(the dump schema checks every object), in the shape the module says, diagnosed with the counts
its construction implies. No timing here: bench/analysis.py measures that."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from bench import outage
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.snapshot.model import load_dump

SHAPE = outage.Shape(failed=25)  # blocks 0-9 and 20-24 evicted; storage on nodes 0, 4, ... 24


def test_generated_dump_passes_the_dump_checks_and_gives_the_built_counts(
    tmp_path: Path,
) -> None:
    path = tmp_path / "outage.json"
    written = outage.write(SHAPE, path)
    snap = load_dump(str(path))  # dumpschema: exit 13 on any wrong field
    report = diagnose(snap, snap.captured_at)
    failed, web = SHAPE.failed, SHAPE.web_per_node
    evicted = sum(1 for i in range(failed) if SHAPE.evicted(i))
    storage = len(range(0, failed, SHAPE.storage_every))
    assert (evicted, storage) == (15, 7)
    assert report.nodes_not_ready_total == failed == written["nodesNotReady"]
    assert len(report.pods) == written["podsOnFailedNodes"] + written["waitingForNode"]
    assert Counter(p.controller for p in report.pods) == {
        "deployment": failed * (web + 1) + evicted,  # web copies, pinned, pinned's Pending
        "daemonset": 2 * failed,
        "statefulset": failed + storage,
        "job": 2 * failed,
        "cronjob": failed,
        "bare": failed,
        "other": failed,  # owned by a ConfigMap
    }
    on_failed = [p for p in report.pods if p.node_failed]
    terminating = Counter(p.controller for p in on_failed if p.deletion_timestamp)
    # evicted blocks: all but the DaemonSet pods deleted; the volume's pod everywhere
    assert terminating["deployment"] == evicted * (web + 1)
    assert terminating["statefulset"] == evicted + storage
    assert "daemonset" not in terminating
    assert sum(1 for p in report.pods if not p.node_failed) == evicted  # Pending replacements


def test_each_deployment_hit_has_its_replicas_mostly_running_elsewhere() -> None:
    snap = outage.outage(SHAPE)
    failed = {n["metadata"]["name"] for n in snap.nodes if "-down-" in n["metadata"]["name"]}
    sets = [
        o for o in snap.owners if o["kind"] == "ReplicaSet" and o["metadata"]["name"][:4] == "web-"
    ]
    owners_per_slot = -(-SHAPE.failed // SHAPE.stuck_per_owner)  # 13: the last has one node
    assert len(sets) == owners_per_slot * SHAPE.web_per_node
    for rs in sets:
        pods = snap.pods_owned_by(rs["metadata"]["uid"])
        where = Counter(p["spec"]["nodeName"] in failed for p in pods)
        stuck = where[True]
        assert stuck in (1, SHAPE.stuck_per_owner)  # the last owner may have one node only
        assert where[False] == SHAPE.replicas - SHAPE.stuck_per_owner
        assert all(
            p["status"]["phase"] == "Running" for p in pods if p["spec"]["nodeName"] not in failed
        )
    attached = {va["spec"]["nodeName"] for va in snap.volume_attachments}
    assert len(attached) == len(snap.volume_attachments) == len(snap.pvcs) == len(snap.pvs) == 7
    assert attached <= failed


def test_failed_for_is_the_smallest_shape_reaching_the_stuck_pods() -> None:
    shape = outage.failed_for(1000)
    assert outage.stuck_pods(shape) >= 1000
    assert outage.stuck_pods(outage.Shape(failed=shape.failed - 1)) < 1000
