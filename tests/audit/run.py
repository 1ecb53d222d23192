"""Plays a batch of scenarios out on a real control plane: their workloads on a few failable
nodes, one failure for all of them, two diagnoses, the nodes back; every pod polled throughout.

Phases of a batch (History.marks):
  kill    the failable nodes' kubelets stop (SIGKILL of their kwok processes)
  (the node lifecycle controller marks them Unknown and taints them; early changes are made)
  d1      first diagnosis: eviction times, replacement states, what happens on return
  late    the eviction window has passed (every finite toleration of the batch + margin);
          late changes are made
  d2      second diagnosis (pods now Terminating): replacement states, what happens on return
  remediate, remediated  (odd batches) `remediate NODE --node-shutdown-confirmed NODE
          --strategy out-of-service --confirm` (force-delete on even seeds from 2037; from
          2041 the taint, force deletion and deleting the Node in turn: scenarios.remedy) on
          the first failable node, still down: the harness killed its kubelet, so it is the
          human who knows the node is off. Its report (steps' results, releases, leavesStuck,
          the pods said to resume with the node, exit code) is judged against the polls; the
          taint is removed before the return.
  return  the kubelets start again (a deleted Node registered again first, as a kubelet does)
  end     last poll, 30 s after every node is Ready again
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml

from tests.audit import (
    attach,
    latetaint,
    limits,
    nodepath,
    restart,
    serving,
    volumes,
    zonebatch,
)
from tests.audit.judge import Verdict, judge, judge_remediation
from tests.audit.observe import History, PodView, audit_pods, node_taints, now, parse_time
from tests.audit.predictions import PodPrediction, node_predictions, pod_predictions
from tests.audit.scenarios import (
    LATE_TAINT,
    LIVE_CRON_POLICIES,
    LONG_TOLERATION,
    SHUTDOWN_MESSAGE,
    SHUTDOWN_REASON,
    Scenario,
    managed_pods,
    manifests,
    remedy,
)
from tests.audit.sentences import check_moment
from tests.e2e.controlplane import HEALTHY_ZONE, ControlPlane, KubeletReportingProblem
from tests.e2e.helpers import drop_finalizers, zone_state_logged

Obj = dict[str, Any]
POLL_SECONDS = 2.0
UNREACHABLE_NO_EXECUTE, NOT_READY_NO_EXECUTE = zonebatch.NOEXECUTE
AFTER_WINDOW = 10.0  # past the last predicted eviction
D2_WATCH = 20.0  # seconds of watching after the second diagnosis, node still down
AFTER_RETURN = 30.0
AFTER_REMEDIATE = 20.0  # watching after remediate --confirm returned, node still down
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
LATE_DELAY = 8.0  # seconds from the node's own NoExecute taints to another owner's (latetaint)
MAX_DETACH_WATCH = 420.0  # a force-detach's 6 minutes and the judge's slack


def log(msg: str) -> None:
    print(f"[audit {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def nodefail_bin() -> str:
    found = shutil.which("kubectl-nodefail", path=str(Path(sys.executable).parent))
    if not found:
        raise RuntimeError(
            "kubectl-nodefail is not installed next to this Python (pip install -e .)"
        )
    return found


@dataclass
class BatchResult:
    batch: int
    nodes: list[str]
    scenarios: list[Scenario]
    placed: dict[int, bool]
    predictions: list[PodPrediction]
    node_predictions: list[Obj]
    verdicts: list[Verdict]
    dumps: dict[str, str]
    seconds: float
    errors: list[str] = field(default_factory=list)
    remediation: Obj = field(default_factory=dict)  # node, exit, file: odd batches
    node_path: str = "silent"  # nodepath.py
    restart: Obj = field(default_factory=dict)  # restart.py: when, the new leader's acquireTime

    def as_dict(self) -> Obj:
        return {
            "batch": self.batch,
            "nodes": self.nodes,
            "nodePath": self.node_path,
            "restart": self.restart,
            "seconds": round(self.seconds, 1),
            "scenarios": [
                {**s.as_dict(), "placed": self.placed.get(s.index, False)} for s in self.scenarios
            ],
            "predictions": [p.as_dict() for p in self.predictions],
            "nodePredictions": self.node_predictions,
            "verdicts": [v.as_dict() for v in self.verdicts],
            "dumps": self.dumps,
            "errors": self.errors,
            "remediation": self.remediation,
        }


class Batch:
    def __init__(
        self,
        cp: ControlPlane,
        scenarios: list[Scenario],
        batch: int,
        slots: int,
        outdir: Path,
        remediate: bool = False,
        zone: bool = False,
    ) -> None:
        """`zone`: the batch is played in a zone of its own, its brake engaged
        (tests/audit/zonebatch.py; `slots` failable nodes and one healthy one there)."""
        self.cp, self.scenarios, self.batch = cp, scenarios, batch
        self.remediate_first = remediate
        self.remediation: Obj = {}
        self.remediate_report: Obj | None = None
        seed = scenarios[0].seed
        self.prefix = f"au-{seed}-"
        self.nodes = [f"au{seed}-b{batch}-n{k}" for k in range(slots)]
        self.zone = zonebatch.zone_name(seed, batch) if zone else HEALTHY_ZONE
        self.zone_healthy = [f"au{seed}-b{batch}-h"] if zone else []
        # how the nodes fail (nodepath.py); the zone batch's always silently
        self.node_path = ("silent", 0) if zone else nodepath.node_path(seed, batch)
        # a new kube-controller-manager leader after the taints (restart.py); never in the zone
        self.restart_after = None if zone else restart.restart_batch(seed, batch)
        self.restarted: Obj = {}
        # and a diagnosis with no leader before the start (restart.py, leaderless.py)
        self.leaderless = self.restart_after is not None and restart.leaderless(seed)
        self.leaderless_preds: list[PodPrediction] = []
        # another owner's NoExecute taint after the node's own (latetaint.py); never in the zone
        self.late_taint = not zone and latetaint.late_batch(seed, batch)
        self.said: dict[str, Obj] = {}  # d1, d2: the diagnoses, as JSON
        self.outdir = outdir
        self.history = History()
        self.env = {**cp.env, "KUBECONFIG": str(cp.kubeconfig)}
        self.errors: list[str] = []
        self.sentences: list[Verdict] = []  # sentences.check_moment's, per diagnosis
        self.serving: list[serving.Serving] = []  # SERVING said at d1 and d2
        # pods with volumes (scenarios `volume`): a node of their own beside the failable ones,
        # tainted for them alone, whose kubelet (like the failable ones') holds a pod until its
        # volume is attached (attach.py); what each live node reports mounted
        self.mounted = any(s.volume != "-" for s in scenarios)
        self.storage = [f"au{seed}-b{batch}-s"] if self.mounted else []
        self.reported: dict[str, tuple[str, ...]] = {}

    # --- the cluster ---

    def node_of(self, s: Scenario) -> str:
        return self.nodes[s.node_slot % len(self.nodes)]

    def poll(self) -> None:
        at = now()
        out = self.cp.kubectl("get", "pods", "-A", "-o", "json", check=False)
        pods = audit_pods(out, self.prefix)
        self.history.add(at, pods)
        if self.mounted:
            vas = self.cp.kubectl("get", "volumeattachments", "-o", "json", check=False)
            found = attach.attachments(vas, self.prefix)
            states: dict[str, list[tuple[str, bool, bool]]] = {}
            for _, va in found:
                states.setdefault(va.pv, []).append((va.node, va.attached, va.deleting))
            self.history.add_volumes(at, {pv: tuple(v) for pv, v in states.items()})
            live = {n for n in [*self.nodes, *self.storage] if n in self.cp.kwoks}
            attach.play(self.cp.kubectl, pods, found, live, self.reported)
        nodes = self.cp.kubectl("get", "nodes", "-o", "json", check=False)
        self.history.add_nodes(at, node_taints(nodes, self.nodes))
        at = now()  # the Jobs as read from now, not from the poll's start (2069/123)
        self.history.job_reads.append(at)
        jobs = json.loads(
            self.cp.kubectl("get", "jobs", "-A", "-o", "json", check=False) or '{"items":[]}'
        )
        for job in jobs["items"]:
            ns = job["metadata"]["namespace"]
            # the scenario's own Job (a CronJob's later runs make others: not read here)
            if not ns.startswith(self.prefix):
                continue
            if job["metadata"]["name"] in ("w", "w-manual"):
                self.history.jobs.setdefault(ns, []).append((at, job.get("status") or {}))
            else:  # a CronJob's run (a Forbid one must start none while its Job is active)
                self.history.runs.setdefault(ns, {}).setdefault(job["metadata"]["name"], at)

    def watch(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while True:
            self.poll()
            if time.monotonic() >= end:
                return
            time.sleep(POLL_SECONDS)

    def nodefail(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [nodefail_bin(), *args], capture_output=True, text=True, env=self.env, check=False
        )

    def diagnose(self, moment: str) -> Obj:
        path = self.outdir / f"batch{self.batch}-{moment}.dump.json"
        # whole objects (a throwaway cluster's): a wrong prediction's dump becomes a fixture
        dumped = self.nodefail("dump", "--no-redact", "-f", str(path))
        if dumped.returncode != 0:
            self.errors.append(f"dump {moment}: exit {dumped.returncode}: {dumped.stderr.strip()}")
        proc = self.nodefail("diagnose", "-o", "json")
        if proc.returncode not in (0, 3):
            raise RuntimeError(f"diagnose failed ({proc.returncode}): {proc.stderr.strip()}")
        data: Obj = json.loads(proc.stdout)
        (self.outdir / f"batch{self.batch}-{moment}.diagnosis.json").write_text(proc.stdout)
        if dumped.returncode == 0:  # every sentence, not only the predictions judged below
            seed = self.scenarios[0].seed
            self.sentences += check_moment(
                seed, f"b{self.batch}-{moment}", path, data, self.nodefail
            )
        return data

    def start_kubelet(self, node: str) -> None:
        self.cp.start_kubelet(node, kubelet_stages(self.cp))

    def record_plan(self) -> None:
        """What remediate would do now (its dry-run plan, not attested), kept with the batch's
        files for a reader; not judged here."""
        proc = self.nodefail("remediate", *self.nodes, "-o", "json")
        path = self.outdir / f"batch{self.batch}-d2.remediate-plan.json"
        path.write_text(proc.stdout or proc.stderr)

    def remediate(self, node: str) -> None:
        """The human's part, played by the harness that killed the kubelet: attest the node's
        shutdown and run remediate --confirm; then watch, and take the taint off again so the
        return is the ordinary one."""
        marks = self.history.marks
        marks["remediate"] = now()
        self.history.remediated = node
        proc = self.nodefail(
            "remediate",
            node,
            "--node-shutdown-confirmed",
            node,
            "--strategy",
            remedy(self.scenarios[0].seed),
            "--confirm",
            "-o",
            "json",
        )
        marks["remediated"] = now()
        path = self.outdir / f"batch{self.batch}-remediate.json"
        path.write_text(proc.stdout or "")
        try:
            doc: Obj | None = json.loads(proc.stdout)
        except ValueError:
            doc = None
            self.errors.append(f"remediate: exit {proc.returncode}: {proc.stderr.strip()}")
        self.remediation = {
            "node": node,
            "strategy": remedy(self.scenarios[0].seed),
            "exit": proc.returncode,
            "file": str(path),
        }
        self.remediate_report = doc
        log(f"batch {self.batch}: remediate --confirm on {node}: exit {proc.returncode}")
        self.watch(AFTER_REMEDIATE)
        self.cp.kubectl("taint", "node", node, f"{OUT_OF_SERVICE}-", check=False)

    def judge_remediation(self) -> list[Verdict]:
        """After the batch (the return marked): remediate's report against the polls."""
        if not self.remediation:
            return []
        return judge_remediation(
            self.remediate_report,
            int(self.remediation["exit"]),
            self.history,
            {s.namespace: s for s in self.scenarios},
            self.prefix,
        )

    def node_ready(self, node: str) -> str:
        obj = self.cp.get("node", node) or {}
        for cond in (obj.get("status") or {}).get("conditions") or []:
            if cond["type"] == "Ready":
                return str(cond["status"])
        return "?"

    def noexec_times(self) -> list[Any]:
        """When the node lifecycle controller's NoExecute taints were added (another owner's,
        latetaint.py, left out)."""
        times = []
        for node in self.nodes:
            obj = self.cp.get("node", node) or {}
            for taint in (obj.get("spec") or {}).get("taints") or []:
                own = str(taint.get("key", "")).startswith("node.kubernetes.io/")
                if own and taint.get("effect") == "NoExecute" and taint.get("timeAdded"):
                    times.append(parse_time(taint["timeAdded"]))
        return times

    def wait_until(self, what: str, probe: Any, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.poll()
            if probe():
                return True
            time.sleep(POLL_SECONDS)
        self.errors.append(f"timed out after {timeout:.0f}s waiting for {what}")
        log(f"timed out waiting for {what}")
        return False

    # --- phases ---

    def kill(self) -> None:
        """The kubelets stop. In the zone batch in three steps (zonebatch.py): two nodes, then
        the one that engages the brake, then the last one under it."""
        first = self.nodes[: zonebatch.FIRST] if self.zone_healthy else self.nodes
        for node in first:
            self.cp.stop_kubelet(node)
        if self.node_path[0] == "not-ready-first":
            self.report_not_ready(first, self.node_path[1])
        self.wait_until(
            "the nodes Unknown and tainted unreachable NoExecute",
            lambda: (
                all(self.node_ready(n) == "Unknown" for n in first)
                and all(
                    UNREACHABLE_NO_EXECUTE in (self.history.node_taints(n, now()) or ())
                    for n in first
                )
            ),
            120,
        )
        if not self.zone_healthy:
            return
        brake, late = self.nodes[zonebatch.FIRST : -1], self.nodes[-1]
        for node in brake:
            self.cp.stop_kubelet(node)
        self.wait_until(
            f"{', '.join(brake)} Unknown and {self.zone} in PartialDisruption",
            lambda: (
                all(self.node_ready(n) == "Unknown" for n in brake)
                and zone_state_logged(self.cp, self.zone, "PartialDisruption")
            ),
            120,
        )
        self.cp.stop_kubelet(late)
        self.wait_until(
            f"{late} Unknown and tainted NoSchedule (the controller has seen it)",
            lambda: (
                self.node_ready(late) == "Unknown"
                and zonebatch.UNREACHABLE_NO_SCHEDULE
                in (self.history.node_taints(late, now()) or ())
            ),
            120,
        )
        self.watch(3)
        tainted = [n for n in self.nodes if zonebatch.noexecute(self.history.node_taints(n, now()))]
        log(f"batch {self.batch}: zone {self.zone} braked; tainted before it: {tainted}")

    def leader(self) -> Obj:
        lease = self.cp.get("lease", "kube-controller-manager", "kube-system") or {}
        return lease.get("spec") or {}

    def restart_manager(self, delay: int) -> None:
        """restart.py: `delay` seconds after the NoExecute taints, a new kube-controller-manager
        leader; then wait for it to have put each failed node's taints back."""
        marks = self.history.marks
        tainted = max(self.noexec_times(), default=marks["kill"])
        self.watch(max((tainted + timedelta(seconds=delay) - now()).total_seconds(), 0))
        before = self.leader()
        marks["restart"] = now()
        stopped = restart.stop(self.cp.cluster_dir)
        if self.leaderless:
            self.diagnose_leaderless(self.leader())  # its last renewal, read once it stopped
        stopped.start()
        log(f"batch {self.batch}: kube-controller-manager restarted {delay}s after the taints")
        lease: Obj = {}

        def new_leader() -> bool:
            nonlocal lease
            lease = self.leader()
            return bool(lease.get("holderIdentity")) and lease.get("acquireTime") not in (
                None,
                before.get("acquireTime"),
            )

        self.wait_until("a new kube-controller-manager leader", new_leader, 120)
        acquired = parse_time(lease.get("acquireTime"))
        if acquired is not None:
            marks["leader"] = acquired
        self.wait_until(
            "the NoExecute taints put back",
            lambda: (
                len(self.noexec_times()) >= len(self.nodes)
                and all(t > marks["restart"] - timedelta(seconds=1) for t in self.noexec_times())
            ),
            120,
        )
        self.restarted = {
            "after": delay,
            "at": marks["restart"].isoformat(),
            "leader": lease.get("acquireTime"),
            "taints": [t.isoformat() for t in self.noexec_times()],
            "leaderless": "d0" in marks,  # a diagnosis made with no leader first
        }
        log(f"batch {self.batch}: new leader from {lease.get('acquireTime')}; taints put back")

    def diagnose_leaderless(self, lease: Obj) -> None:
        """The manager stopped: once its Lease has expired with room for the clocks
        (LEADERLESS_SLACK past its duration), the diagnosis `d0`, judged by
        leaderless.py against what happens until the new leader."""
        renewed = parse_time(lease.get("renewTime"))
        seconds = lease.get("leaseDurationSeconds")
        if renewed is None or not isinstance(seconds, int):
            self.errors.append(f"no leader Lease to wait out: {lease}")
            return
        expiry = renewed + timedelta(seconds=seconds + restart.LEADERLESS_SLACK)
        self.watch(max((expiry - now()).total_seconds(), 0))
        self.history.marks["d0"] = now()
        d0 = self.diagnose("d0")
        self.leaderless_preds = pod_predictions(d0, "d0", self.prefix)
        log(f"batch {self.batch}: d0 (no leader) lists {len(self.leaderless_preds)} pods")

    def add_late_taint(self) -> None:
        """latetaint.py: LATE_DELAY seconds after the node's own NoExecute taints, another
        owner's on each failed node; the diagnosis follows once the controller has seen it."""
        marks = self.history.marks
        tainted = max(self.noexec_times(), default=marks["kill"])
        self.watch(max((tainted + timedelta(seconds=LATE_DELAY) - now()).total_seconds(), 0))
        marks["late-taint"] = now()
        for node in self.nodes:
            latetaint.add(self.cp, node, marks["late-taint"])
        log(f"batch {self.batch}: {LATE_TAINT} NoExecute added to {', '.join(self.nodes)}")

    def report_not_ready(self, nodes: list[str], hold: int) -> None:
        """nodepath.py's `not-ready-first`: each kubelet reports Ready=False (and its
        NodeNotReady event) until the not-ready NoExecute taint is on every node and `hold`
        seconds have passed, then goes silent."""
        reporters = [
            KubeletReportingProblem(self.cp, n, nodepath.NOT_READY, announce=True) for n in nodes
        ]
        for reporter in reporters:
            reporter.__enter__()
        try:
            self.history.marks["not-ready"] = now()
            self.wait_until(
                "the nodes tainted not-ready NoExecute",
                lambda: all(
                    NOT_READY_NO_EXECUTE in (self.history.node_taints(n, now()) or ())
                    for n in nodes
                ),
                60,
            )
            self.watch(hold)
        finally:
            for reporter in reporters:
                reporter.__exit__(None, None, None)
        log(f"batch {self.batch}: kubelets NotReady for {hold}s, now silent")

    def bring_back(self) -> None:
        """The kubelets start again (a Node remediate deleted registered first, as a kubelet
        does); in the zone batch, in the order drawn for it (zonebatch.RETURN_ORDERS)."""
        order = "together"
        groups = [self.nodes]
        if self.zone_healthy:
            order = zonebatch.return_order(self.scenarios[0].seed, self.batch)
            if order == "untainted-first":
                polled = {n: self.history.node_taints(n, now()) for n in self.nodes}
                untainted = [n for n in self.nodes if not zonebatch.noexecute(polled[n])]
                groups = [untainted, [n for n in self.nodes if n not in untainted]]
        self.history.marks["return"] = now()
        log(f"batch {self.batch}: nodes back ({order})")
        for group in [g for g in groups if g]:
            for node in group:
                if self.cp.get("node", node) is None:  # deleted by remediate: registered again
                    self.cp.add_node(node, self.zone, managed_by=node)
                    if self.mounted:
                        attach.prepare_node(self.cp.kubectl, node)
                    self.reported.pop(node, None)
                self.start_kubelet(node)
            self.wait_until(
                "the nodes Ready again",
                lambda group=group: all(self.node_ready(n) == "True" for n in group),
                120,
            )

    def await_force_detach(self) -> None:
        """With a volume still attached to a failed node whose pods are gone, the node stays
        down until its force-detach is due (6 minutes after the last of them went, and the
        judge's slack; at most MAX_DETACH_WATCH more), so that `volume:force-detach` is judged
        on what the controller did, not cut short by the return."""
        latest = self.history.polls[-1].at
        dues = []
        for pv, rows in self.history.volumes.items():
            for node, _, deleting in rows[-1][1]:
                gone = volumes.users_gone(self.history, node, [], pv, latest)
                if node in self.nodes and not deleting and gone:
                    dues.append(gone[1] + volumes.FORCE_DETACH + volumes.LATE)
        if not dues:
            return
        wait = min((max(dues) - now()).total_seconds(), MAX_DETACH_WATCH)
        if wait > 0:
            log(f"batch {self.batch}: watching {wait:.0f}s more for force-detaches")
            self.watch(wait)

    def judge_zone(self) -> list[Verdict]:
        """The zone batch's own verdicts (zonebatch.py): the brake's lines at d1 and d2, and
        remediate's refused steps."""
        if not self.zone_healthy:
            return []
        seed = self.scenarios[0].seed
        out = []
        for moment, said in self.said.items():
            out += zonebatch.judge_brake(said, moment, self.history, self.nodes, seed, self.batch)
        if self.remediation:
            out += zonebatch.judge_refused(
                self.remediate_report, self.history, seed, self.batch, self.prefix
            )
        return out

    def setup(self) -> dict[int, bool]:
        for node in self.zone_healthy:
            self.cp.add_node(node, self.zone)
        for node in self.nodes:
            self.cp.add_node(node, self.zone, managed_by=node)
            self.start_kubelet(node)
        for node in self.storage:  # in the healthy zone: the zone batch's counts stay its own
            self.cp.add_node(node, HEALTHY_ZONE, managed_by=node)
            self.start_kubelet(node)
        if self.mounted:
            for node in [*self.nodes, *self.storage]:
                attach.prepare_node(self.cp.kubectl, node, storage=node in self.storage)
        every = [*self.nodes, *self.zone_healthy, *self.storage]
        self.wait_until(
            "the failable nodes Ready", lambda: all(self.node_ready(n) == "True" for n in every), 90
        )
        # a pod bound by hand after the taint is made with the early changes (change bind-late)
        objs = [
            o
            for s in self.scenarios
            for o in manifests(s, self.node_of(s))
            if not (s.change == "bind-late" and o["kind"] == "Pod")
        ]
        objs += [pv for s in self.scenarios for pv in attach.volumes(s)]
        namespaces = [o for o in objs if o["kind"] == "Namespace"]
        self.cp.apply(*namespaces)
        self.cp.apply(*[o for o in objs if o["kind"] != "Namespace"])
        managed = []
        for s in self.scenarios:
            if s.kind == "cronjob":
                self.cp.kubectl("create", "job", "w-manual", "--from=cronjob/w", "-n", s.namespace)
                if s.strategy in LIVE_CRON_POLICIES:  # listed, as a Job the controller made is
                    self.list_active(s)
            elif s.kind == "job-managed":  # the harness is the controller spec.managedBy names
                job = self.cp.get("job", s.app, namespace=s.namespace)
                managed += managed_pods(s, self.node_of(s), job["metadata"]["uid"])
        if managed:
            self.cp.apply(*managed)

        def placed() -> dict[int, bool]:
            poll = self.history.polls[-1]
            out = {}
            for s in self.scenarios:
                if s.change == "bind-late":
                    out[s.index] = True
                    continue
                running = [
                    v
                    for v in poll.pods.values()
                    if v.namespace == s.namespace and v.phase == "Running" and v.deletion is None
                ]
                on_node = [v for v in running if v.node == self.node_of(s)]
                want = 1 if s.kind in ("bare", "daemonset") else s.replicas
                out[s.index] = bool(on_node) and len(running) >= want
            return out

        self.wait_until("every scenario's pods Running", lambda: all(placed().values()), 150)
        result = placed()
        self.poll()  # the volumes mounted are reported before the kubelets stop
        # A scenario with a pod on its node counts, even if some replicas went elsewhere.
        poll = self.history.polls[-1]
        for s in self.scenarios:
            result[s.index] = s.change == "bind-late" or any(
                v.namespace == s.namespace and v.node == self.node_of(s) and v.phase == "Running"
                for v in poll.pods.values()
            )
        return result

    def list_active(self, s: Scenario) -> None:
        """The scenario's Job in its CronJob's status.active: what the CronJob controller writes
        when it makes a Job, and what concurrencyPolicy acts on."""
        job = self.cp.get("job", "w-manual", namespace=s.namespace)
        ref = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "w-manual",
            "namespace": s.namespace,
            "uid": job["metadata"]["uid"],
        }
        patch = json.dumps({"status": {"active": [ref]}})
        self.cp.kubectl(
            "patch",
            "cronjob",
            "w",
            "-n",
            s.namespace,
            "--subresource=status",
            "--type=merge",
            "-p",
            patch,
        )

    def run_cron(self, s: Scenario) -> None:
        """Resume the CronJob with its next run at the first minute at least a minute away."""
        run = (now() + timedelta(seconds=60)).replace(second=0, microsecond=0)
        run += timedelta(minutes=1)
        minute = run.minute
        self.history.cron_runs[s.namespace] = run
        # a zone named: without one the controller reads the schedule in its own zone, and
        # the diagnosis (rightly) does not time a run a half-hour zone would move
        spec = {"suspend": False, "schedule": f"{minute} * * * *", "timeZone": "Etc/UTC"}
        patch = {"spec": spec}
        self.cp.kubectl(
            "patch", "cronjob", "w", "-n", s.namespace, "--type=merge", "-p", json.dumps(patch)
        )

    def change(self, s: Scenario) -> None:
        ns, kind = (
            s.namespace,
            {"deployment": "deployment", "daemonset": "daemonset", "cronjob": "cronjob"}.get(
                s.kind, "statefulset" if s.kind.startswith("sts") else "job"
            ),
        )
        run = self.cp.kubectl
        if s.strategy == "paused":  # paused at the change, and with a rollout in the same patch
            spec: Obj = {"paused": True}
            if s.change == "rollout":
                spec["template"] = {"metadata": {"annotations": {"audit.nodefail/rollout": "1"}}}
            run("patch", kind, "w", "-n", ns, "--type=merge", "-p", json.dumps({"spec": spec}))
            if s.change == "rollout":
                return
        if s.change == "scale-up":
            run("scale", kind, "w", "-n", ns, f"--replicas={s.replicas + 2}")
        elif s.change == "scale-down":
            run("scale", kind, "w", "-n", ns, f"--replicas={max(s.replicas - 1, 0)}")
        elif s.change == "scale-zero":
            run("scale", kind, "w", "-n", ns, "--replicas=0")
        elif s.change == "rollout":
            template = {"metadata": {"annotations": {"audit.nodefail/rollout": "1"}}}
            patch = json.dumps({"spec": {"template": template}})
            run("patch", kind, "w", "-n", ns, "--type=merge", "-p", patch)
        elif s.change == "delete-owner":
            run("delete", kind, "w", "-n", ns, "--wait=false", f"--cascade={s.cascade}")
        elif s.change == "suspend":
            run("patch", "job", "w", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":true}}')
        elif s.change == "deadline":  # long past: the Job controller sets FailureTarget at once
            patch = '{"spec":{"activeDeadlineSeconds":1}}'
            run("patch", "job", "w", "-n", ns, "--type=merge", "-p", patch)
        elif s.change == "bind-late":  # its namespace was made with the others
            pod = manifests(s, self.node_of(s))[-1]
            pod["spec"]["nodeName"] = self.node_of(s)
            self.cp.apply(pod)
        elif s.change == "delete-pod":
            run("delete", "pod", "w", "-n", ns, "--wait=false")
        elif s.change == "shutdown":
            self.shut_down(s)
        elif s.change == "cron-run":
            self.run_cron(s)

    def shut_down(self, s: Scenario) -> None:
        """What a kubelet's graceful node shutdown writes to each of the scenario's pods on its
        node before the machine goes off (pkg/kubelet/nodeshutdown): phase Failed, reason
        Terminated, DisruptionTarget TerminationByKubelet; its containers terminated."""
        node = self.node_of(s)
        out = self.cp.kubectl("get", "pods", "-n", s.namespace, "-o", "json", check=False)
        when = now().strftime("%Y-%m-%dT%H:%M:%SZ")
        for pod in json.loads(out or '{"items":[]}')["items"]:
            meta, spec = pod["metadata"], pod.get("spec") or {}
            if spec.get("nodeName") != node or meta.get("deletionTimestamp"):
                continue
            cond = {"status": "False", "lastTransitionTime": when}
            status = {
                "phase": "Failed",
                "reason": "Terminated",
                "message": SHUTDOWN_MESSAGE,
                "conditions": [
                    {
                        "type": "DisruptionTarget",
                        "status": "True",
                        "reason": SHUTDOWN_REASON,
                        "message": SHUTDOWN_MESSAGE,
                        "lastTransitionTime": when,
                    },
                    {"type": "Ready", **cond},
                    {"type": "ContainersReady", **cond},
                ],
                "containerStatuses": [
                    {
                        "name": c["name"],
                        "image": c.get("image", ""),
                        "imageID": "",
                        "ready": False,
                        "restartCount": 0,
                        "started": False,
                        "state": {
                            "terminated": {
                                "exitCode": 143,
                                "reason": "Error",
                                "startedAt": when,
                                "finishedAt": when,
                            }
                        },
                    }
                    for c in spec.get("containers") or []
                ],
            }
            self.cp.kubectl(
                "patch",
                "pod",
                meta["name"],
                "-n",
                s.namespace,
                "--subresource=status",
                "--type=strategic",
                "-p",
                json.dumps({"status": status}),
            )
            self.history.shut_down[meta["uid"]] = when

    def changes(self, when: str, placed: dict[int, bool]) -> None:
        for s in self.scenarios:
            # a paused Deployment without a change is paused with the early ones
            at = "early" if s.strategy == "paused" and s.change == "none" else s.change_at
            if at == when and placed.get(s.index):
                try:
                    self.change(s)
                except subprocess.CalledProcessError as exc:
                    self.errors.append(f"{s.namespace}: change {s.change}: {exc}")

    def cleanup(self) -> None:
        # The namespaces go first: a Terminating namespace admits no new pod, so a StatefulSet
        # cannot recreate a pod with its template's finalizer after the strip below (2065: a
        # pod made between the strip and the delete kept its namespace Terminating for good).
        namespaces = sorted({s.namespace for s in self.scenarios})
        self.cp.kubectl("delete", "namespace", "--wait=false", *namespaces, check=False)
        for ns in namespaces:
            out = self.cp.kubectl("get", "pods", "-n", ns, "-o", "json", check=False)
            for pod in json.loads(out or '{"items":[]}')["items"]:
                if pod["metadata"].get("finalizers"):
                    drop_finalizers(self.cp, ns, pod["metadata"]["name"])
        for node in [*self.nodes, *self.storage]:
            self.cp.stop_kubelet(node)
        for node in [*self.nodes, *self.zone_healthy, *self.storage]:
            self.cp.kubectl("delete", "node", node, "--wait=false", check=False)
        if self.mounted:
            seed = self.scenarios[0].seed
            self.cp.kubectl(
                "delete", "pv", "-l", f"nodefail-audit={seed}", "--wait=false", check=False
            )

    def save_history(self) -> None:
        """Every poll of the batch, so the verdicts can be recomputed offline."""
        polls = [
            {"at": poll.at.isoformat(), "pods": [_view_json(v) for v in poll.pods.values()]}
            for poll in self.history.polls
        ]
        doc = {
            "marks": {k: v.isoformat() for k, v in self.history.marks.items()},
            "remediated": self.history.remediated,
            "shutDown": self.history.shut_down,
            "jobs": {
                ns: [(at.isoformat(), status) for at, status in rows]
                for ns, rows in self.history.jobs.items()
            },
            "cronRuns": {ns: at.isoformat() for ns, at in self.history.cron_runs.items()},
            "jobReads": [at.isoformat() for at in self.history.job_reads],
            "nodes": {
                name: [(at.isoformat(), list(t) if t is not None else None) for at, t in rows]
                for name, rows in self.history.nodes.items()
            },
            "runs": {
                ns: {name: at.isoformat() for name, at in seen.items()}
                for ns, seen in self.history.runs.items()
            },
            "volumes": {
                pv: [(at.isoformat(), [list(a) for a in states]) for at, states in rows]
                for pv, rows in self.history.volumes.items()
            },
            "polls": polls,
        }
        (self.outdir / f"batch{self.batch}-history.json").write_text(json.dumps(doc))

    def judge_nodes(self, predicted: list[Obj]) -> list[Verdict]:
        """The node's cause: its kubelet was killed, which the API shows as a kubelet that
        stopped posting status (a silent lease); the diagnosis must not name another cause."""
        seed = self.scenarios[0].seed
        return [
            Verdict(
                kind="node-cause",
                seed=seed,
                index=-1,
                moment=str(n["moment"]),
                pod=f"node/{n['node']}",
                predicted=str(n["cause"]),
                observed="kubelet killed (lease stale, Ready Unknown)",
                ok=n["cause"] == "kubelet-stopped",
                scenario=f"batch {self.batch}",
            )
            for n in predicted
        ]

    def judge_serving(self) -> list[Verdict]:
        """SERVING (the outage view's, JSON workloads[].ready) against the pods polled around
        each diagnosis (serving.py)."""
        return serving.verdicts(self.serving, self.history, set(self.nodes), self.scenarios)

    def run(self) -> BatchResult:
        started = time.monotonic()
        log(
            f"batch {self.batch}: {len(self.scenarios)} scenarios on {', '.join(self.nodes)}, "
            f"failing {self.node_path[0]}"
            + (
                f", kube-controller-manager restarted {self.restart_after}s after the taints"
                if self.restart_after is not None
                else ""
            )
        )
        placed = self.setup()
        log(
            f"batch {self.batch}: {sum(placed.values())}/{len(placed)} placed; killing the kubelets"
        )
        marks = self.history.marks
        marks["kill"] = now()
        self.kill()
        self.changes("early", placed)
        if self.restart_after is not None:
            self.restart_manager(self.restart_after)
        if self.late_taint:
            self.add_late_taint()
        self.watch(3)
        marks["d1"] = now()
        d1 = self.diagnose("d1")
        self.said["d1"] = d1
        preds = pod_predictions(d1, "d1", self.prefix)
        self.serving = serving.predictions(d1, "d1", self.prefix)
        nodes_pred = [{"moment": "d1", **n} for n in node_predictions(d1, set(self.nodes))]
        tainted = max(self.noexec_times(), default=marks["kill"])
        # a toleration of minutes to a day is not waited for (LONG_TOLERATION): its eviction
        # is judged as not happening before the window ends
        finite = [
            s.toleration_seconds
            for s in self.scenarios
            if s.toleration_seconds is not None and s.toleration != "long"
        ]
        horizon = tainted + timedelta(seconds=min(LONG_TOLERATION) - 60)
        due = max(
            [p.eviction_at for p in preds if p.eviction_at and p.eviction_at < horizon]
            + [tainted + timedelta(seconds=max(finite, default=0))]
        )
        wait = max((due - now()).total_seconds() + AFTER_WINDOW, AFTER_WINDOW)
        log(
            f"batch {self.batch}: d1 lists {len(preds)} pods; watching {wait:.0f}s "
            f"(evictions due until {due:%H:%M:%S})"
        )
        self.watch(wait)
        marks["late"] = now()
        self.changes("late", placed)
        self.watch(3)
        marks["d2"] = now()
        d2 = self.diagnose("d2")
        self.said["d2"] = d2
        self.record_plan()
        preds += pod_predictions(d2, "d2", self.prefix)
        self.serving += serving.predictions(d2, "d2", self.prefix)
        nodes_pred += [{"moment": "d2", **n} for n in node_predictions(d2, set(self.nodes))]
        self.watch(D2_WATCH)
        if self.remediate_first:
            # in the zone batch, the node failed last (the brake must refuse every destructive
            # step there)
            self.remediate(self.nodes[-1] if self.zone_healthy else self.nodes[0])
        self.await_force_detach()
        self.bring_back()
        self.watch(AFTER_RETURN)
        marks["end"] = now()
        verdicts: list[Verdict] = []
        by_ns = {s.namespace: s for s in self.scenarios}
        preds = [*self.leaderless_preds, *preds]  # d0, made with no leader (leaderless.py)
        for s in self.scenarios:
            if not placed.get(s.index):
                continue
            mine = [p for p in preds if p.namespace == s.namespace]
            verdicts += judge(s, mine, self.history, limits.known_limit)
        verdicts += self.sentences
        verdicts += self.judge_nodes(nodes_pred)
        verdicts += self.judge_serving()
        verdicts += self.judge_remediation()
        verdicts += self.judge_zone()
        verdicts += volume_verdicts(self.said, self.history, self.nodes, self.scenarios)
        stray = {p.namespace for p in preds} - set(by_ns)
        if stray:
            self.errors.append(f"predictions for namespaces not in the batch: {sorted(stray)}")
        self.cleanup()
        self.save_history()
        dumps = {m: str(self.outdir / f"batch{self.batch}-{m}.dump.json") for m in ("d1", "d2")}
        return BatchResult(
            self.batch,
            self.nodes,
            self.scenarios,
            placed,
            preds,
            nodes_pred,
            verdicts,
            dumps,
            time.monotonic() - started,
            self.errors,
            self.remediation,
            f"{self.node_path[0]} ({self.node_path[1]}s)"
            if self.node_path[1]
            else self.node_path[0],
            self.restarted,
        )


TERMINATE_STAGE = """\
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: audit-pod-terminate
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
    - key: '.status.phase'
      operator: 'In'
      values: ['Pending', 'Running']
  next:
    statusTemplate: |
      {{ $now := Now }}
      containerStatuses:
      {{ range $index, $item := .spec.containers }}
      - image: {{ $item.image | Quote }}
        name: {{ $item.name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 137
            finishedAt: {{ $now | Quote }}
            reason: Error
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: Failed
"""


def volume_verdicts(
    said: dict[str, Obj], history: History, nodes: list[str], scenarios: list[Scenario]
) -> list[Verdict]:
    """What the diagnoses said of the failed nodes' volumes (volumes.py), as verdicts of the
    scenario each volume belongs to."""
    if not scenarios:
        return []
    seed = scenarios[0].seed
    by_ns = {s.namespace: s for s in scenarios}
    out = []
    for kind, moment, subject, said_, seen, ok in volumes.judge(
        said, history, nodes, f"au-{seed}-"
    ):
        owner = attach.pod_of(subject.split(" ", 1)[0])
        s = by_ns.get(owner[0]) if owner else None
        out.append(
            Verdict(
                kind=kind,
                seed=seed,
                index=s.index if s else -1,
                moment=moment,
                pod=f"{owner[0]}/{owner[1]}" if owner else subject,
                predicted=said_,
                observed=f"{subject}: {seen}",
                ok=ok,
                scenario=s.describe() if s else "",
            )
        )
    return out


def kubelet_stages(cp: ControlPlane) -> Path:
    """The failable (and storage) nodes' kwok stages for the audit: the suite's
    (tests/e2e/controlplane.py), with a deleted pod first put in phase Failed, its containers
    killed, and only then removed — what a kubelet does since Kubernetes 1.27 (a pod being
    deleted reaches a terminal phase first). kwok's own pod-delete removes the object at once,
    so a Job with podReplacementPolicy Failed (or a podFailurePolicy) would never see the Failed
    phase it waits for. And a pod that mounts a volume starts once the harness has seen it
    attached (attach.gate_stages)."""
    path = cp.workdir / "kwok-audit.yaml"
    if path.exists():
        return path
    docs = attach.gate_stages(d for d in yaml.safe_load_all(cp.kubelet_config().read_text()) if d)
    for doc in docs:
        if doc["metadata"]["name"] == "pod-delete":
            doc["spec"]["selector"]["matchExpressions"].append(
                {"key": ".status.phase", "operator": "In", "values": ["Failed", "Succeeded"]}
            )
    path.write_text(yaml.safe_dump_all([*docs, yaml.safe_load(TERMINATE_STAGE)]))
    return path


def _view_json(view: PodView) -> Obj:
    out: Obj = {}
    for key, value in view.__dict__.items():
        out[key] = value.isoformat() if hasattr(value, "isoformat") else value
    return out


def summarize(verdicts: list[Verdict]) -> dict[str, dict[str, Any]]:
    """Per claim kind: checked (judged true or false), wrong, known limits, not judgeable, and
    the (seed, index) of each wrong one."""
    out: dict[str, dict[str, Any]] = {}
    for v in verdicts:
        row = out.setdefault(
            v.kind, {"checked": 0, "wrong": 0, "knownLimit": 0, "unjudged": 0, "wrongAt": []}
        )
        if v.ok is None:
            row["unjudged"] += 1
            continue
        row["checked"] += 1
        if v.ok is False and v.known_limit:
            row["knownLimit"] += 1
        elif v.ok is False:
            row["wrong"] += 1
            row["wrongAt"].append(f"{v.seed}/{v.index}")
    return dict(sorted(out.items()))


def table(summary: dict[str, dict[str, Any]]) -> str:
    lines = [
        f"{'CLAIM KIND':38} {'CHECKED':>7} {'WRONG':>5} {'LIMIT':>5} {'UNJUDGED':>8}"
        "  WRONG AT (seed/index)"
    ]
    for kind, row in summary.items():
        at = " ".join(sorted(set(row["wrongAt"]), key=lambda x: int(x.split("/")[1])))
        lines.append(
            f"{kind:38} {row['checked']:7} {row['wrong']:5} {row['knownLimit']:5} "
            f"{row['unjudged']:8}  {at}"
        )
    return "\n".join(lines)


def write_results(path: Path, meta: Obj, batches: list[BatchResult]) -> Obj:
    verdicts = [v for b in batches for v in b.verdicts]
    doc = {
        **meta,
        "summary": summarize(verdicts),
        "wrong": [v.as_dict() for v in verdicts if v.ok is False and not v.known_limit],
        "knownLimits": [v.as_dict() for v in verdicts if v.ok is False and v.known_limit],
        "batches": [b.as_dict() for b in batches],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return doc


def env_flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")
