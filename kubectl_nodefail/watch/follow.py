"""What `diagnose --watch` watches between its reads of the cluster, and when it reads again.

The watch reads the cluster as `diagnose` does (cluster/gather.py), then, instead of reading
it all again every --interval, keeps watches open (cluster/watchstream.py) and reads again only
when one of them shows a change the diagnosis on the screen could depend on (`Interest`):
- a Node added or deleted, a Node whose STATUS (Ready, NotReady, SchedulingDisabled) is no
  longer the one read, any change to an examined Node (a taint, a condition);
- a Pod read for the diagnosis changed or gone; a new Pod on an examined Node, or owned by an
  owner read (a replacement, a rollout's new pod); a Pod deleted elsewhere still there once
  its deletion is due (stuck Terminating: a normal deletion that ends in time reads nothing);
- an owner read changed (scaled, deleted, rolled out, suspended);
- a VolumeAttachment of an examined Node; a FailedAttachVolume Event; an Event of an examined
  Node;
- kube-controller-manager's leader Lease (analysis/leader.py): a new leader (another
  acquireTime), a leader renewing again after the read found it expired, or, with no event, the
  Lease read past its leaseDurationSeconds and the clock slack without a renewal (no leader:
  a change no object makes, so the watch keeps its own deadline, moved by each renewal);
- a watch that had to list again or cannot reach the server (events may have been missed);
  the watches of Events list them whole, and listing again they say which changed meanwhile,
  judged as above (their quiet watches go stale every 5-10 minutes: cluster/watchstream.py).
Nothing else is watched: the nodes' Leases (a stale lease shows as the Node's Ready going
Unknown; a kubelet that returns posts its status at once), remediation automation, claims and
volumes are read again with the rest at the next read. Without a controller leader nothing turns
a stale lease into the Node's Ready: the cluster is then read every interval until one returns.

A read made for a change reads everything again, so the screen is what a fresh `diagnose`
shows at that moment; the changes that arrive while it reads are judged against it afterwards.
Except the bulk of a read at scale, kept from the last read (`kept`, cluster/pods_read.Kept)
while the watch of pods has run without a gap since (not broken, down or started over):
- an examined node's pods as the last read listed them, while the watch shows no change to a
  pod of that node since that list was asked for (such a change also reads again, and that
  read lists the node anew);
- the pods being deleted, in place of the two scans of every pod that find them, kept from the
  pods the last read had: a pod in by a change that carries a deletionTimestamp, out only once
  gone (a change may be older than the read);
- with those, the nodes pods are bound to without a Node (deleted), listed as examined nodes
  are; a Node deleted (or a gap in the watch of Nodes: one may have gone unseen) drops the
  kept pods being deleted, so the read after it scans for its pods. (A pod created bound to
  a node that never existed is found at the next read that scans.)
- those pods being deleted on nodes not examined, read whole by the last read, each while no
  change to it has been seen;
- the owners the last read found (623 owners, ~215 requests a read at 200 failed nodes of the
  benchmark), each while the watch of its kind shows no change to it and has run without a gap
  since (a change to an owner read, which also reads again, drops it; a watch of its kind that
  started over, is down or was left out, every owner of that kind). An owner the last read did
  not find is asked for again.
- the Nodes the last read had, while the watch of Nodes has run without a gap since: those it
  shows added, changed or deleted are listed again by name, while few enough
  (nodes_read.read_nodes: at 5,000 nodes, fewer than 500; a healthy kubelet reports every 5
  minutes, so reads within about half a minute of the last, as in an outage's bursts); else
  the Node list again (25 MiB at 5,000 nodes).
- each kept owner's other pods as the last read's lists found them (0.38 s of a read at 200
  failed nodes of the benchmark), while no pod it owns, or owned then, has changed since and
  they hold under the read's rules (cluster/siblings_read.siblings).
"""

from __future__ import annotations

import queue
import time
from collections import deque
from collections.abc import Collection
from datetime import datetime, timezone
from urllib.parse import quote

from kubectl_nodefail.analysis import facts
from kubectl_nodefail.cluster.kube import Cluster, parallel
from kubectl_nodefail.cluster.nodes_read import lease_is_late, node_leases
from kubectl_nodefail.cluster.pods_read import Kept
from kubectl_nodefail.cluster.resources import OWNER_PATHS, node_path, owners_path
from kubectl_nodefail.cluster.watchstream import Change, Resource, Watcher, metadata, table
from kubectl_nodefail.common.errors import Forbidden, NodefailError, NotFound
from kubectl_nodefail.snapshot.model import Snapshot
from kubectl_nodefail.watch.interest import Interest, renewal

SETTLE_SECONDS = 0.25  # after a change, what else comes with it (a node's pods) is awaited
# With nothing heard for this long, one small request (GET /version) asks whether the server
# still answers: a connection cut without a word (a VPN dropped, a load balancer's idle cut)
# leaves a watch waiting for events that never come. Failing, every stream is opened again and
# the cluster read again (which says what fails, as the banner).
PROBE_SECONDS = 30.0
# Node leases are not watched (5,000 kubelets renew every 10 s); a kubelet going silent shows as
# its Node's Ready going Unknown, unless nothing marks it (no node lifecycle controller, or a
# grace longer than the default): this often, one list of the node leases (one request, ~350
# bytes a node) looks for a Ready node's kubelet that stopped renewing since the read.
SWEEP_SECONDS = 300.0
CLOSE_SECONDS = 1.0  # what the end of the watch waits for its streams to end (and be counted)
REQUIRED = ("nodes", "pods")  # without these the watch cannot follow the incident
# the watches of owners by the name they carry ("replicasets", ...): the kind each watches
OWNER_WATCHES = {(owners_path(kind) or "").rsplit("/", 1)[-1]: kind for kind in OWNER_PATHS}


def resources(namespaces: Collection[str]) -> list[Resource]:
    """What the watch keeps watched: Nodes, Pods and the owner kinds (per namespace given with
    -n, else cluster-wide), VolumeAttachments, and the two kinds of Events the diagnosis reads."""
    spaces = list(namespaces) or [""]

    def within(path: str, ns: str) -> str:
        if not ns:
            return path
        head, _, tail = path.rpartition("/")
        return f"{head}/namespaces/{quote(ns, safe='')}/{tail}"

    out = [table("nodes", node_path(), "None")]
    for ns in spaces:
        out.append(table("pods", within("/api/v1/pods", ns), "Metadata"))
        for kind in OWNER_PATHS:
            path = owners_path(kind) or ""
            out.append(metadata(path.rsplit("/", 1)[-1], within(path, ns)))
    out += [
        Resource("volumeattachments", "/apis/storage.k8s.io/v1/volumeattachments"),
        Resource(
            "events",
            "/api/v1/events",
            query={"fieldSelector": "reason=FailedAttachVolume"},
            whole=True,
        ),
        Resource(
            "events",
            "/api/v1/events",
            query={"fieldSelector": "involvedObject.kind=Node"},
            whole=True,
        ),
        Resource(
            "leases",
            f"/apis/coordination.k8s.io/v1/namespaces/{facts.CONTROLLER_LEASE_NAMESPACE}/leases",
            query={"fieldSelector": f"metadata.name={facts.CONTROLLER_LEASE_NAME}"},
        ),
    ]
    return out


class Follower:
    """The watches of one `diagnose --watch`: started before its first read (so that nothing
    after the read is missed), compared with each read's snapshot (`rebase`)."""

    def __init__(
        self, cluster: Cluster, namespaces: Collection[str], only_nodes: Collection[str]
    ) -> None:
        self.cluster = cluster
        self.only_nodes = tuple(only_nodes)
        self.changes: queue.Queue[Change] = queue.Queue()
        self.watchers: list[Watcher] = []
        self.interest = Interest()
        self.skipped: list[str] = []  # optional watches RBAC does not allow
        self.primed = False
        self.heard = time.monotonic()  # when a watch last said anything (or the probe answered)
        self.swept = time.monotonic()  # when node leases were last read (a read, or the sweep)
        self.off = ""  # why the cluster is read every --interval instead (no watch of pods)
        self._wanted = resources(namespaces)
        # what the last read had, as the changes since leave it true; valid while the watches
        # of pods (of an owner kind: its owners) are those of `kept_since` (by name, how many
        # times each had to start over when the read began)
        self.kept = Kept()
        self.kept_since: dict[str, tuple[int, ...] | None] = {}
        self.backlog: deque[Change] = deque()  # taken off the queue before a read, judged after

    def kept_reads(self) -> Kept | None:
        """Before a read: what it may take instead of reading again (gather leaves its own
        there); None when the watches cannot tell (no watch of pods, or one down or started
        over since the last read). Owners of a kind are kept only while every watch of that
        kind has run so too."""
        self._drain()
        pods = [w for w in self.watchers if w.resource.name == "pods"]
        now = {name: self._unbroken(name) for name in ("pods", "nodes", *OWNER_WATCHES)}
        if self.off or now["pods"] is None:
            self.kept, self.kept_since = Kept(), {}
            return None
        if any(w.ident is None for w in pods):  # not started: no read succeeded yet
            # the first read that succeeds starts them, from the version primed before it:
            # what it keeps, every change after holds to (its next read drains them). A new
            # one each time: what a read that failed kept, no watch has held since.
            self.kept, self.kept_since = Kept(), now
            return self.kept
        if now["pods"] != self.kept_since.get("pods"):
            self.kept = Kept()
        if now["nodes"] is None or now["nodes"] != self.kept_since.get("nodes"):
            # a Node deleted meanwhile may be unseen: its pods, bound to none, found by the scan
            self.kept.nodes, self.kept.deleting = None, None
        for name, kind in OWNER_WATCHES.items():
            if now[name] is None or now[name] != self.kept_since.get(name):
                self._forget(kind)
        self.kept_since = now
        return self.kept

    def _unbroken(self, name: str) -> tuple[int, ...] | None:
        """How many times each watch of `name` started over, if they all go on without a gap
        (watching, or primed and to start with the next read: not stopped, not down listing
        again); None if one does not, one was left out (refused), or there is none."""
        mine = [w for w in self.watchers if w.resource.name == name]
        if name in self.skipped:  # one of its watches left out (-n: in one namespace)
            return None
        if not mine or not all(
            w.version and not w.stopping.is_set() and (w.is_alive() or w.ident is None)
            for w in mine
        ):
            return None
        return tuple(w.primes for w in mine)

    def _forget(self, kind: str) -> None:
        """The owners of `kind` kept: dropped (its watch may have missed a change)."""
        self.kept.owners = {k: o for k, o in self.kept.owners.items() if k[0] != kind}

    def _drain(self) -> None:
        """Every change queued so far taken now (each pod change drops its node's kept list)
        and kept for the next `wait` to judge."""
        while True:
            try:
                change = self.changes.get_nowait()
            except queue.Empty:
                return
            self._touch(change)
            self.backlog.append(change)

    def _touch(self, change: Change) -> None:
        """A pod change drops its node's kept list and its owners' other pods (those it names,
        and those whose lists had it) and updates the pods being deleted; one that
        names no node, namespace or uid (a row without them, a watch of pods broken or started
        over) drops all that is kept; a Node changed is read again (one the watch cannot name:
        every Node), and one deleted, or a gap in the watch of Nodes (one may have gone
        unseen), drops the pods being deleted (its pods are then bound to none: the scan finds
        them). A change may be older than the read (the
        watch starts before it, and may lag): so a pod leaves the pods being deleted only when
        gone (a uid gone is gone for good), never for a change without a deletionTimestamp,
        which may be older than the one the read saw (reading it whole then costs one
        request)."""
        kind = OWNER_WATCHES.get(change.resource)
        if kind is not None:  # an owner changed drops it; a gap in the watch, its whole kind
            if change.kind in ("ADDED", "MODIFIED", "DELETED") and change.row.name:
                self.kept.owners.pop((kind, change.row.namespace, change.row.name), None)
            else:
                self._forget(kind)
            return
        if change.resource == "nodes":  # read again; a gap in the watch: every Node
            if change.kind in ("ADDED", "MODIFIED", "DELETED") and change.row.name:
                self.kept.changed.add(change.row.name)
            else:
                self.kept.nodes = None
            if change.kind not in ("ADDED", "MODIFIED"):  # deleted, or may have been
                # its pods are bound to no Node now: the next read scans for them (each
                # examined node's list is kept: a pod change drops it as ever)
                self.kept.deleting = None
            return
        if change.resource != "pods":
            return
        row = change.row
        if not row.node or not row.namespace or not row.name or not row.uid:
            self.kept = Kept()
            return
        self.kept.pods_on.pop(row.node, None)
        self.kept.whole.pop((row.namespace, row.name), None)
        self.kept.drop_siblings(row.uid, row.owners)
        deleting = self.kept.deleting
        if deleting is None:
            return
        if change.kind == "DELETED":
            deleting.pop(row.uid, None)
        elif row.deletion:
            deleting[row.uid] = (row.namespace, row.name, "" if row.node == "<none>" else row.node)

    def _next(self) -> Change | None:
        """A change not yet judged: those taken before the read first."""
        if self.backlog:
            return self.backlog.popleft()
        try:
            change = self.changes.get_nowait()
        except queue.Empty:
            return None
        self._touch(change)
        return change

    def prime(self) -> None:
        """Each watch's starting resourceVersion, read now (before the first read of the
        cluster). An optional one RBAC does not let us list is left out, one whose list fails
        otherwise starts unprimed (running, it lists and says `expired`); forbidden or failing
        for Nodes or Pods, the read fails too: raised, and tried again at the next read. A
        collection the server does not have (404: a -n value that is no namespace name) turns
        every watch off: the cluster is read every --interval, as a plain diagnose reads it."""

        def primed(watcher: Watcher) -> NodefailError | None:
            try:
                watcher.prime()
            except NodefailError as exc:
                return exc
            return None

        made = [Watcher(self.cluster, resource, self.changes) for resource in self._wanted]
        # all at once: the first screen waits one round trip for them, not one per watch
        failed = list(parallel(primed, made))
        watchers = []
        for watcher, exc in zip(made, failed):
            name = watcher.resource.name
            if isinstance(exc, NotFound):  # a -n value the server has no collection for
                if name in REQUIRED:
                    self.off, self.primed = f"no watch of {name} ({exc.message})", True
                    return
                self.skipped.append(name)
                continue
            if exc is not None and name in REQUIRED:  # the read fails the same way
                raise exc
            if isinstance(exc, Forbidden):
                self.skipped.append(name)
                continue
            # an optional one whose list failed otherwise (a 5xx, a timeout; a list of every
            # Event may be long) fails no read: started, it lists again and says `expired`,
            # which reads the cluster again then
            watchers.append(watcher)
        self.watchers, self.primed = watchers, True

    def rebase(self, snap: Snapshot) -> None:
        """A new read of the cluster: the changes still to come are judged against it; the
        watches start with the first."""
        interest = Interest.of(snap, self.only_nodes)
        interest.carry(self.interest)
        interest.made = time.monotonic()
        self.swept = time.monotonic()
        if not any(w.resource.name == "leases" and not w.stopping.is_set() for w in self.watchers):
            interest.leader_due = None  # no renewal would move it: not a deadline
        self.interest = interest
        for watcher in self.watchers:
            if not watcher.is_alive() and not watcher.stopping.is_set():
                watcher.start()

    def wait(self, seconds: float) -> list[str]:
        """Wait up to `seconds` for changes; the reasons to read again (empty: none came).
        After the first, those arriving within SETTLE_SECONDS come with it."""
        end = time.monotonic() + seconds
        reasons: list[str] = []
        if time.monotonic() - self.heard > PROBE_SECONDS:
            reasons += self._probe()
        if time.monotonic() - self.swept > SWEEP_SECONDS and not self.off:
            reasons += self._sweep()
        # what came during the read first: a renewal queued then moves a deadline due now
        while True:
            came = self._next()
            if came is None:
                break
            self.heard = time.monotonic()
            reasons += self._refused(came) if came.kind == "refused" else []
            why = None if came.kind == "refused" else self.interest.relevant(came)
            if why:
                reasons.append(why)
        if reasons:
            end = min(end, time.monotonic() + SETTLE_SECONDS)
        while True:
            now = datetime.now(timezone.utc)
            late = self.interest.overdue(now)
            if late:
                reasons.append(late)
                end = min(end, time.monotonic() + SETTLE_SECONDS)
            left = end - time.monotonic()
            due = self.interest.next_due()
            if due is not None:
                left = min(left, max((due - now).total_seconds(), 0.0))
            try:
                change = self.changes.get(timeout=max(left, 0.0)) if left > 0 else None
            except queue.Empty:
                change = None
            if change is not None:
                self.heard = time.monotonic()
                self._touch(change)
            if change is not None and change.kind == "refused":
                reasons += self._refused(change)
                continue
            if change is not None:
                why = self.interest.relevant(change)
                if why:
                    reasons.append(why)
                    end = min(end, time.monotonic() + SETTLE_SECONDS)
                continue
            if time.monotonic() >= end:
                return reasons or self._leaderless()

    def _leaderless(self) -> list[str]:
        """With no controller leader, or a node lifecycle controller that did not mark a silent
        node in its time, a kubelet going silent or coming back changes only its node's Lease,
        which is not watched (nothing turns it into the Node's Ready): the cluster is read again
        every interval until a leader returns, or no node is left unmarked."""
        if self.interest.leader_state == "expired":
            return ["kube-controller-manager has no leader: node leases read again every interval"]
        if self.interest.unmarking:
            return ["a node not marked NotReady in its time: node leases read again every interval"]
        return []

    def _sweep(self) -> list[str]:
        """One list of the node leases: a Ready node whose kubelet stopped renewing since the
        read is a reason to read again (the read then keeps its moment to be marked). Refused
        or failing: nothing, tried again a SWEEP_SECONDS later."""
        self.swept = time.monotonic()
        try:
            leases = node_leases(self.cluster)
        except NodefailError:
            return []
        now = datetime.now(timezone.utc)
        ready = {
            name for name, status in self.interest.status.items() if status.startswith("Ready")
        }
        if self.only_nodes:
            ready &= set(self.only_nodes)
        known = self.interest.late  # late at the read: the same renewal is nothing new
        silent = sorted(
            str(x["metadata"].get("name"))
            for x in leases
            if x["metadata"].get("name") in ready
            and lease_is_late(x, now)
            and known.get(str(x["metadata"].get("name"))) != renewal(x)
        )
        return [f"node {name}'s kubelet missed two renewals of its lease" for name in silent[:1]]

    def _probe(self) -> list[str]:
        """Whether the server still answers (after PROBE_SECONDS of silence): if not, every
        stream is cut (each lists and watches again once it can) and the cluster read again."""
        self.heard = time.monotonic()
        try:
            self.cluster.get("/version")
            return []
        except NodefailError as exc:
            for watcher in self.watchers:
                watcher.cut()
            return [f"the API server did not answer ({exc.message})"]

    def _refused(self, change: Change) -> list[str]:
        """A watch the server refuses: left out; of Nodes or Pods, every watch is (`off`: the
        cluster is read every --interval from now on) and the cluster read again now."""
        why = change.error.message if change.error is not None else "refused"
        if change.resource not in REQUIRED:
            self.skipped.append(change.resource)
            if change.resource == "leases":
                self.interest.leader_due = None  # no renewal will move it now
            return []
        self.off = f"no watch of {change.resource} ({why})"
        for watcher in self.watchers:
            watcher.stop()
        return [self.off]

    def close(self) -> None:
        """Every stream ended (each counted in the request budget as it ends)."""
        for watcher in self.watchers:
            watcher.stop()
        end = time.monotonic() + CLOSE_SECONDS  # one still waiting for a server's first byte
        for watcher in self.watchers:  # cannot be cut: left behind (a daemon thread)
            if watcher.is_alive():
                watcher.join(timeout=max(end - time.monotonic(), 0.0))
        self.cluster.close()
