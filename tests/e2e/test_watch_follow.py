"""`diagnose --watch` by watches (watch/follow.py, cluster/watchstream.py) on the real control
plane (issue 37): while two nodes fail and return at moments drawn at random, what the watch
shows is what a fresh `diagnose` shows at the same moment; with nothing changing it reads
nothing; its watches and reads are in the request budget (-v).

With NODEFAIL_RECORD=1 the first test also records the unit tests' watch streams and dumps
(tests/fixtures/watch/node-down.jsonl, watch-node-down-{before,during,evicted}.json)."""

from __future__ import annotations

import json
import os
import queue
import random
import re
import signal
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from kubectl_nodefail.cluster.kube import Cluster
from kubectl_nodefail.cluster.paging import METADATA_ONLY, TABLE
from kubectl_nodefail.cluster.watchstream import OBJECT_ROW, Change, Watcher
from kubectl_nodefail.watch import follow
from kubectl_nodefail.watch.interest import Interest
from tests.e2e import workloads as w
from tests.e2e.conftest import FIXTURES, Plugin
from tests.e2e.controlplane import ControlPlane, kubelet_event, wait_for
from tests.e2e.helpers import drop_finalizers, wait_node_ready, wait_running_on, watching

pytestmark = pytest.mark.e2e
NS = "scenario-follow"
NODES = ("follow-a", "follow-b")
CATCH_UP = 6.0  # a change, the watch's settle and its read of a small cluster, with room


def state(doc: dict[str, Any]) -> tuple[Any, ...]:
    """What a diagnosis says of the cluster, without the times (a moment apart they differ):
    every node's STATUS and taints, every pod listed with its node and status."""
    nodes = sorted(
        (n["name"], n["status"], tuple(sorted(t["key"] for t in n.get("taints") or [])))
        for n in doc["nodes"]
    )
    pods = sorted(
        (p["namespace"], p["name"], p["uid"], p["node"], p["kubectlStatus"], p["terminating"])
        for p in doc["pods"]
    )
    return tuple(nodes), tuple(pods)


class JsonWatch:
    """`diagnose --watch -o json -v` running: one JSON document per change on stdout, the
    budget on stderr after Ctrl-C."""

    def __init__(self, cp: ControlPlane, plugin: Plugin, *args: str) -> None:
        self.proc = watching(cp, plugin, "-o", "json", "-v", *args)
        self.docs: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._threads = [
            threading.Thread(target=self._read_out, daemon=True),
            threading.Thread(
                target=lambda: self.errors.extend(self.proc.stderr or []), daemon=True
            ),
        ]
        for t in self._threads:
            t.start()

    def _read_out(self) -> None:
        for line in self.proc.stdout or []:
            self.docs.append(json.loads(line))

    def end(self) -> dict[str, int]:
        """Ctrl-C; the requests per resource the budget says were sent."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(timeout=30)
        for t in self._threads:
            t.join(timeout=5)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()
        stderr = "".join(self.errors)
        assert code in (0, 3) and "Traceback" not in stderr, stderr
        sent = {}
        for line in self.errors:
            match = re.match(r"\s+(\w+ \S+)\s+(\d+)\s", line)
            if match:
                sent[match[1]] = int(match[2])
        return sent


def explained(doc: dict[str, Any]) -> tuple[Any, ...]:
    """`state`, and what each pod's owners decide: its controller and explanation (digits
    masked: they may be times)."""
    pods = sorted(
        (p["uid"], p["controller"], re.sub(r"[0-9]+", "#", p.get("explanation") or ""))
        for p in doc["pods"]
    )
    return state(doc), tuple(pods)


def _same_as_fresh(plugin: Plugin, watch: JsonWatch, view: Any = state) -> None:
    """The watch's last document against a fresh diagnose, as `view` sees them: the same, once
    the watch has caught up (CATCH_UP). The cluster may move meanwhile: then a fresh one is
    taken again, three times at most."""
    for _ in range(3):
        proc = plugin.run("diagnose", "-o", "json")
        assert proc.returncode in (0, 3), proc.stderr
        want = view(json.loads(proc.stdout))
        end = time.monotonic() + CATCH_UP
        while time.monotonic() < end:
            if watch.docs and view(watch.docs[-1]) == want:
                return
            time.sleep(0.2)
    shown = view(watch.docs[-1]) if watch.docs else None
    raise AssertionError(f"the watch shows\n{shown}\nwhere a fresh diagnose shows\n{want}")


def test_what_the_watch_shows_is_a_fresh_diagnosis_while_nodes_fail_and_return(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    cp = control_plane
    for node in NODES:
        cp.add_failable_node(node)
        wait_node_ready(cp, node)
    cp.apply(
        w.namespace(NS),
        w.deployment(NS, "web", prefer=NODES[0], toleration_seconds=8, grace=5, replicas=2),
        w.deployment(NS, "api", prefer=NODES[1], toleration_seconds=12, grace=5),
    )
    wait_running_on(cp, NS, "web", NODES[0])
    wait_running_on(cp, NS, "api", NODES[1])
    recorder = Recorder(cp, plugin) if os.environ.get("NODEFAIL_RECORD") == "1" else None
    watch = JsonWatch(cp, plugin)
    seed = random.randrange(1 << 30)
    print(f"[follow] moments drawn with seed {seed}")
    rng = random.Random(seed)
    try:
        wait_for("a first document", lambda: watch.docs, 30)
        time.sleep(3)
        assert len(watch.docs) == 1, "a document with nothing changed"
        _same_as_fresh(plugin, watch)
        if recorder:
            recorder.start()
        cp.stop_kubelet(NODES[0])
        time.sleep(rng.uniform(2, 8))
        cp.stop_kubelet(NODES[1])
        if recorder:
            recorder.dump_when_not_ready(NODES[0])
        for _ in range(3):  # not Ready, tainted, evicted, replaced: at moments drawn
            time.sleep(rng.uniform(3, 12))
            _same_as_fresh(plugin, watch)
        if recorder:
            recorder.dump("evicted")
        cp.start_kubelet(NODES[0])
        time.sleep(rng.uniform(0, 4))
        _same_as_fresh(plugin, watch)
        cp.start_kubelet(NODES[1])
        for node in NODES:
            wait_node_ready(cp, node)
        time.sleep(rng.uniform(1, 5))
        _same_as_fresh(plugin, watch)
        if recorder:
            recorder.save()
    finally:
        sent = watch.end()
        for node in NODES:
            cp.start_kubelet(node)
        cp.kubectl("delete", "namespace", NS, "--wait=false")
    # it followed the incident: the nodes NotReady, pods evicted (Terminating), all back
    assert any(n["status"] == "NotReady" for d in watch.docs for n in d["nodes"]), watch.docs
    assert any(p["terminating"] for d in watch.docs for p in d["pods"])
    assert not watch.docs[-1]["nodes"] or all(
        n["status"] == "Ready" for n in watch.docs[-1]["nodes"]
    )
    # reads for changes only: each read lists the nodes once (one more: the watches' start)
    reads = sent.get("list nodes", 0) - 1
    assert 2 <= reads <= len(watch.docs) + 12, (reads, len(watch.docs), sent)
    assert sent.get("watch nodes", 0) >= 1 and sent.get("watch pods", 0) >= 1, sent


def test_with_nothing_changing_the_watch_reads_nothing(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    """Ten seconds of a cluster where nothing changes (heartbeats only), watched with
    --interval 1: the one first read, and the watches; reading every second, it would have
    read ten times."""
    watch = JsonWatch(control_plane, plugin)
    try:
        wait_for("a first document", lambda: watch.docs, 30)
        time.sleep(10)
    finally:
        sent = watch.end()
    assert sent.get("list nodes") == 2, sent  # the watches' start, the read
    assert len(watch.docs) == 1
    assert {"watch nodes", "watch pods", "watch replicasets.apps"} <= set(sent), sent


def test_a_failed_nodes_pods_unchanged_since_the_last_read_are_not_listed_again(
    control_plane: ControlPlane, plugin: Plugin
) -> None:
    """The bulk of a read at scale, one pod list per examined node and the owners, kept by the
    watch: once a failed node's pods are quiet (not Ready, tolerating for 10 minutes), a second
    node failing reads its own pods and owners but not the first's again (-v says so), and the
    screen is still what a fresh diagnose shows; an owner changed (scaled to 0) is read again,
    and what the screen says of its pod is what a fresh diagnose says."""
    cp = control_plane
    ns, nodes = "scenario-keep", ("keep-a", "keep-b")
    for node in nodes:
        cp.add_failable_node(node)
        wait_node_ready(cp, node)
    cp.apply(
        w.namespace(ns),
        w.deployment(ns, "slow", prefer=nodes[0], toleration_seconds=600, grace=5),
        w.deployment(ns, "other", prefer=nodes[1], toleration_seconds=600, grace=5),
    )
    wait_running_on(cp, ns, "slow", nodes[0])
    wait_running_on(cp, ns, "other", nodes[1])
    watch = JsonWatch(cp, plugin)

    def shown(node: str) -> bool:
        return bool(watch.docs) and shown_in(watch.docs[-1], node)

    try:
        wait_for("a first document", lambda: watch.docs, 30)
        cp.stop_kubelet(nodes[0])
        wait_for(f"{nodes[0]} NotReady on the watch", lambda: shown(nodes[0]), 90)
        time.sleep(6)  # its pods marked not Ready and read again: then quiet
        _same_as_fresh(plugin, watch)
        before = len(watch.errors)
        cp.stop_kubelet(nodes[1])
        wait_for(f"{nodes[1]} NotReady on the watch", lambda: shown(nodes[1]), 90)
        time.sleep(2)
        _same_as_fresh(plugin, watch, explained)
        said = watch.errors[before:]
        # the owner wants fewer pods: its ReplicaSet scaled to 0 deletes the pod on the dead
        # node (stuck Terminating); the ReplicaSet kept from the read before is read again
        cp.kubectl("scale", "deployment", "-n", ns, "other", "--replicas=0")
        time.sleep(2)
        _same_as_fresh(plugin, watch, explained)
        # a pod deleted on a healthy node and held there by a finalizer: found among the pods
        # the watch keeps as being deleted (no scan), once its deletion is due
        cp.apply(w.finalizer_pod(ns, "held", "healthy-0"))
        wait_running_on(cp, ns, "held", "healthy-0")
        cp.kubectl("delete", "pod", "-n", ns, "held", "--wait=false")
        wait_for(
            "the held pod on the watch",
            lambda: any(p["name"] == "held" for p in watch.docs[-1]["pods"]),
            60,
        )
        _same_as_fresh(plugin, watch)
        said_after = watch.errors[before:]
    finally:
        watch.end()
        for node in nodes:
            cp.start_kubelet(node)
        drop_finalizers(cp, ns, "held")
        cp.kubectl("delete", "namespace", ns, "--wait=false")
    # the first read with both nodes examined: keep-b's pods never listed before (it was not
    # examined), so the one list kept is keep-a's
    first = next(i for i, line in enumerate(said) if ", 2 to examine," in line)
    pods_line = next(line for line in said[first:] if "pods on examined nodes" in line)
    assert "(1 of 2 nodes' lists unchanged since the last read)" in pods_line, "".join(said)
    owners_line = next(line for line in said[first:] if "owners read" in line)
    assert "unchanged since the last read, not read again" in owners_line, "".join(said)
    # and keep-a's owners' other pods (their lists found none but keep-a's, read with it)
    siblings_line = next(line for line in said[first:] if "other pods of those owners" in line)
    assert SIBLINGS_KEPT.search(siblings_line), "".join(said)
    scans_kept = [line for line in said_after if "as the watch of pods kept them" in line]
    assert scans_kept, "".join(said_after)
    # the Nodes too: read again by name only where the watch of Nodes showed a change
    nodes_kept = [line for line in said_after if NODES_KEPT.search(line)]
    assert nodes_kept, "".join(said_after)
    doc = next(d for d in reversed(watch.docs) if all(shown_in(d, n) for n in nodes))
    on_first = [p for p in doc["pods"] if p["node"] == nodes[0]]
    assert on_first and all(p["namespace"] == ns for p in on_first), doc["pods"]


# -v's line of a read that kept owners' other pods: "3 other pods of those owners (those of 2
# owners unchanged since the last read, not listed again); ..."
SIBLINGS_KEPT = re.compile(
    r"\(those of \d+ owners unchanged since the last read, not listed again\)"
)
# -v's line of a read that kept Nodes: "5 nodes (4 unchanged since the last read, ...), ..."
NODES_KEPT = re.compile(r"\b\d+ nodes \(\d+ unchanged since the last read, not read again\)")


def shown_in(doc: dict[str, Any], node: str) -> bool:
    """The diagnosis `doc` lists `node` NotReady."""
    return any(n["name"] == node and n["status"] == "NotReady" for n in doc["nodes"])


class Recorder:
    """NODEFAIL_RECORD=1: the raw streams of three watches (Nodes as Table rows, Pods as Table
    rows with metadata, ReplicaSets as metadata) and dumps at three moments, for the unit tests
    (tests/unit/watch/test_follow.py)."""

    SPECS = (
        ("nodes", "/api/v1/nodes", TABLE, {"includeObject": "None"}),
        ("pods", "/api/v1/pods", TABLE, {"includeObject": "Metadata"}),
        ("replicasets", "/apis/apps/v1/replicasets", OBJECT_ROW, {}),
    )

    def __init__(self, cp: ControlPlane, plugin: Plugin) -> None:
        self.cp, self.plugin = cp, plugin
        self.cluster = Cluster(str(cp.kubeconfig), None, 10, None)
        self.lines: list[dict[str, Any]] = []
        self.times: dict[str, float] = {}
        self.threads: list[threading.Thread] = []
        self.responses: list[Any] = []

    def dump(self, moment: str) -> None:
        self.times[moment] = round(time.time(), 3)
        self.plugin.record(f"watch-node-down-{moment}", "watch-node-down", moment)

    def start(self) -> None:
        self.dump("before")
        for name, path, accept, query in self.SPECS:
            page = self.cluster.get_json(path, {"limit": 1}, METADATA_ONLY)
            version = page["metadata"]["resourceVersion"]
            q = {**query, "resourceVersion": version, "allowWatchBookmarks": "true",
                 "timeoutSeconds": "300"}  # fmt: skip
            resp = self.cluster.open_watch(path, q, accept, 330)
            self.responses.append(resp)
            thread = threading.Thread(target=self._read, args=(name, resp), daemon=True)
            thread.start()
            self.threads.append(thread)
        self.times["kill"] = round(time.time(), 3)

    def _read(self, name: str, resp: Any) -> None:
        pending = b""
        try:
            for chunk in resp.stream(1 << 16):
                pending += chunk
                *whole, pending = pending.split(b"\n")
                at = round(time.time(), 3)
                self.lines += [
                    {"at": at, "resource": name, "line": x.decode()} for x in whole if x.strip()
                ]
        except Exception:  # the stream shut at the end of the recording
            return

    def dump_when_not_ready(self, node: str) -> None:
        wait_for(
            f"{node} NotReady",
            lambda: "NotReady" in self.cp.kubectl("get", "node", node, "--no-headers"),
            60,
        )
        time.sleep(3)
        self.dump("during")

    def save(self) -> None:
        for resp in self.responses:
            resp.shutdown()
        for thread in self.threads:
            thread.join(timeout=5)
        head = {
            "times": self.times,
            "recordedBy": "tests/e2e/test_watch_follow.py (make record)",
            "what": (
                "the raw watch streams of nodes (Table rows), pods (Table rows with metadata) "
                "and replicasets (metadata), from a node's kubelet killed until after its pods "
                "were evicted and replaced; the dumps watch-node-down-{before,during,evicted}"
                ".json taken at the times named"
            ),
        }
        target = Path(FIXTURES) / "watch"
        target.mkdir(parents=True, exist_ok=True)
        rows = sorted(self.lines, key=lambda r: r["at"])
        text = "".join(json.dumps(r) + "\n" for r in [head, *rows])
        (target / "node-down.jsonl").write_text(text)


def test_a_quiet_watch_of_events_compacted_away_says_what_changed_not_that_anything_may_have(
    control_plane: ControlPlane,
) -> None:
    """The API server keeps no watch cache for Events: their watches get no bookmarks, and a
    quiet one's resourceVersion is compacted away by etcd (every 5 minutes, to the revision of
    the tick before), so it reopens into a 410 Gone. Listed whole, the watch of Events says
    which of them changed meanwhile (one created, one gone), not `expired` (which reads the
    whole cluster again). Played here with
    the watch paused between its list and its stream, and etcd compacted in between."""
    cp = control_plane
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    old, new = (
        kubelet_event("healthy-0", "NodeReady", stamp),
        kubelet_event("healthy-1", "NodeNotReady", stamp),
    )
    cp.apply(old)
    resource = next(
        r for r in follow.resources(()) if r.query == {"fieldSelector": "involvedObject.kind=Node"}
    )
    out: queue.Queue[Change] = queue.Queue()
    watcher = Watcher(Cluster(str(cp.kubeconfig), None, 30), resource, out)
    watcher.prime()
    assert watcher.items is not None
    assert old["metadata"]["name"] in {r.name for r in watcher.items.values()}
    cp.apply(new)
    cp.kubectl("delete", "event", "-n", "default", old["metadata"]["name"])
    cp.compact_etcd()
    watcher.start()
    try:
        wait_for("the watch to list again", lambda: watcher.primes == 2, 30)
        time.sleep(1)
        got = []
        while not out.empty():
            got.append(out.get_nowait())
    finally:
        watcher.stop()
    seen = {(c.kind, c.row.name) for c in got}
    assert ("ADDED", new["metadata"]["name"]) in seen, got
    assert ("DELETED", old["metadata"]["name"]) in seen, got
    assert [c.kind for c in got if not c.row.name] == ["relisted"], got  # not `expired`
    # judged as the follower judges them, after a read that ended before the gap: an Event of
    # a node not examined reads nothing, the examined node's Event gone reads again
    interest = Interest(focus={"healthy-0"}, made=1.0)
    assert [interest.relevant(c) for c in got if c.row.name == new["metadata"]["name"]] == [None]
    assert interest.relevant(next(c for c in got if c.row.name == old["metadata"]["name"]))
    assert interest.relevant(next(c for c in got if c.kind == "relisted")) is None
