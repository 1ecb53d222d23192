"""kube-controller-manager stopped, and no leader (map row 2's other half; analysis/leader.py):
the control plane is the judge of what the diagnosis says while nothing runs the node lifecycle,
taint-eviction, PodGC and attach-detach controllers, and of remediate refusing what only they
would carry out.

One node fails while the leader runs (NotReady, tainted; a plan that allows the out-of-service
taint is saved then). The manager is stopped; a second node fails. Once its Lease is past its
duration and the clock slack:
- the second node stays Ready and untainted (cause `no-controller-leader`, advice: bring the
  manager back); the first node's pod outlives its tolerationSeconds, not evicted;
- `remediate --confirm` is refused (exit 4) for the named node and for the saved plan, and the
  API server's audit log shows no write from the plugin;
- a `diagnose --watch` running all along, as a user with the shipped read-only role, says so
  by itself within seconds of the Lease's expiry (no object changes when the leader goes: the
  watch keeps the Lease's deadline, moved by the renewals the role lets it watch);
- the manager started again, the new leader marks the second node Ready Unknown its grace after
  its own start, not after the kubelet's last renewal, as the diagnosis says (it gives the
  default 50 s; the test bed runs 16 s).

A control plane of its own runs the manager without its node lifecycle controller (a leader
renews its Lease): a node whose kubelet stops stays Ready past its time to be marked, and a
node whose live kubelet reports Ready=False is never tainted; what the diagnosis says of each
is judged against what that control plane does.
"""

from __future__ import annotations

import json
import re
import signal
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from kubectl_nodefail.analysis import facts
from kubectl_nodefail.analysis.leader import CLOCK_SLACK_SECONDS
from kubectl_nodefail.analysis.nodes import MARK_SLACK_SECONDS
from tests.e2e import components
from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import (
    NODE_MONITOR_GRACE_MS,
    ControlPlane,
    KubeletReportingProblem,
    wait_for,
)
from tests.e2e.helpers import (
    pods,
    ready,
    refused_without_a_write,
    service_account_kubeconfig,
    taint_keys,
    terminating,
    wait_node_ready,
    wait_node_unknown,
    wait_running_on,
    watching,
    writes_since,
)

pytestmark = pytest.mark.e2e
NS = "scenario-no-leader"
BEFORE, AFTER = "lost-l1", "lost-l2"  # failed while the leader ran / after it stopped
MANAGER = "kube-controller-manager"
UN = ("node.kubernetes.io/unreachable", "NoExecute")
TOLERATED = 30  # held-1's tolerationSeconds: run out while no leader runs

Obj = dict[str, Any]


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _lease(cp: ControlPlane) -> Obj:
    out = cp.kubectl("get", "lease", "-n", "kube-system", MANAGER, "-o", "json", check=False)
    return json.loads(out)["spec"] if out.strip().startswith("{") else {}


def _expired(cp: ControlPlane) -> bool:
    """Past its duration and the diagnosis's slack for clocks, as analysis/leader.py judges."""
    spec = _lease(cp)
    renewed = spec.get("renewTime")
    if not renewed:
        return False
    after = spec.get("leaseDurationSeconds", 15) + CLOCK_SLACK_SECONDS + 1
    return datetime.now(timezone.utc) > _time(renewed) + timedelta(seconds=after)


class Watched:
    """`diagnose --watch -o json` running: each document with the moment it arrived."""

    def __init__(self, cp: ControlPlane, plugin: Plugin, *args: str) -> None:
        self.proc = watching(cp, plugin, "-o", "json", *args)
        self.docs: list[tuple[datetime, Obj]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout or []:
            self.docs.append((datetime.now(timezone.utc), json.loads(line)))

    def first(self, text: str) -> datetime | None:
        """When the first document saying `text` (anywhere in it) arrived."""
        return next((at for at, doc in self.docs if text in json.dumps(doc)), None)

    def end(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=30)
        self._reader.join(timeout=5)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()


def test_without_a_leader_nothing_comes_and_remediate_writes_nothing(
    control_plane: ControlPlane, plugin: Plugin, tmp_path: Path
) -> None:
    cp = control_plane
    for node in (BEFORE, AFTER):
        cp.add_failable_node(node)
        wait_node_ready(cp, node)
    held = w.bare_pod(NS, "held-1", pin=BEFORE, toleration_seconds=TOLERATED, grace=5)
    lone = w.bare_pod(NS, "lone-1", pin=BEFORE, toleration_seconds=None, grace=5)
    lone["spec"]["tolerations"] = w.forever_tolerations()
    later = w.bare_pod(NS, "held-2", pin=AFTER, toleration_seconds=TOLERATED, grace=5)
    cp.apply(w.namespace(NS), held, lone, later)
    for name, node in (("held-1", BEFORE), ("lone-1", BEFORE), ("held-2", AFTER)):
        wait_running_on(cp, NS, name, node)

    # The first node fails while the leader runs: NotReady, tainted; a plan saved then allows
    # the out-of-service taint for the pod nothing else frees.
    cp.stop_kubelet(BEFORE)
    wait_node_unknown(cp, BEFORE)
    wait_for("the unreachable taint", lambda: UN in taint_keys(cp, BEFORE), 30)
    saved = tmp_path / "plan.json"
    made = plugin.run(
        "remediate", BEFORE, "--node-shutdown-confirmed", BEFORE, "--plan-out", str(saved)
    )
    assert made.returncode == 0, made.stdout + made.stderr
    steps = json.loads(saved.read_text())["steps"]
    assert any(s["action"] == "taint-out-of-service" and s["allowed"] for s in steps), steps

    # the watch runs as a user with the shipped read-only role: its watch of the leader's
    # Lease (by name) is allowed, or it would not see the leader go
    cp.kubectl("apply", "-f", "-", stdin=plugin.run("rbac", "diagnose").stdout)
    reader = service_account_kubeconfig(cp, tmp_path, "reader", ["kubectl-nodefail-diagnose"], NS)
    watch = Watched(cp, plugin, "--kubeconfig", str(reader))
    wait_for("the watch's first screen", lambda: watch.docs, 30)
    stopped = components.stop(cp.cluster_dir, MANAGER)
    leader = _lease(cp).get("holderIdentity")
    try:
        cp.stop_kubelet(AFTER)
        wait_for("the leader's Lease to expire", lambda: _expired(cp), 60)
        spec = _lease(cp)
        expiry = _time(spec["renewTime"]) + timedelta(
            seconds=spec["leaseDurationSeconds"] + CLOCK_SLACK_SECONDS
        )
        told = wait_for("the watch to say so", lambda: watch.first("has no leader"), 20)
        watch.end()
        assert told > expiry and (told - expiry).total_seconds() <= 5, (told, expiry)
        taint = next(
            _time(t["timeAdded"])
            for t in cp.get("node", BEFORE)["spec"]["taints"]
            if (t["key"], t["effect"]) == UN
        )
        due = taint + timedelta(seconds=TOLERATED + 3)
        time.sleep(max(0.0, (due - datetime.now(timezone.utc)).total_seconds()))
        _, data = plugin.diagnose_json()
        plugin.record(
            "no-leader",
            "kube-controller-manager stopped after one node failed; a second failed after it",
            "the leader's Lease expired; the first node's tolerationSeconds run out",
            nodes=(BEFORE, AFTER),
        )
        nodes = {n["name"]: n for n in data["nodes"]}
        rows = {p["name"]: p for p in data["pods"] if p["namespace"] == NS}

        # Nothing marks the second node: it is still Ready, with no taint, and the diagnosis
        # says why and what to do.
        assert ready(cp, AFTER)["status"] == "True"
        assert UN not in taint_keys(cp, AFTER)
        cause = nodes[AFTER]["cause"]
        assert cause["code"] == "no-controller-leader", cause
        assert "Ready Unknown" not in cause["summary"]
        assert "bring kube-controller-manager back" in nodes[AFTER]["action"]["summary"]
        shown = plugin.run("diagnose")
        assert shown.returncode == 3, shown.stdout + shown.stderr
        headline = shown.stdout.splitlines()[0]
        assert "kube-controller-manager has no leader" in headline, shown.stdout
        assert any(p["object"].startswith("Lease/kube-system/") for p in cause["because"])
        # Its pod is read and listed as stuck there, told apart, and sent to the leader first.
        unmarked = rows["held-2"]
        assert unmarked["category"] == "on-unmarked-node" and unmarked["node"] == AFTER, unmarked
        assert not unmarked["action"]["remediate"], unmarked["action"]
        assert f"marks {AFTER} NotReady" in unmarked["action"]["summary"]
        # The first node's pod outlived its tolerationSeconds, and nothing says it will go.
        pod = pods(cp, NS, "held-1")[0]
        assert not terminating(pod), pod["metadata"]
        assert rows["held-1"]["evictionAt"] is None, rows["held-1"]
        assert "has no leader" in rows["held-1"]["timeline"], rows["held-1"]["timeline"]
        assert rows["lone-1"]["explanation"].startswith("kube-controller-manager has no leader")
        for row in rows.values():
            assert row["action"]["summary"].startswith("first bring kube-controller-manager back")
        assert data["brake"]["text"].startswith("kube-controller-manager has no leader")

        # remediate refuses what only the stopped controllers would carry out, whatever it is
        # handed, and writes nothing.
        refused_without_a_write(cp, plugin, BEFORE, saved, "kube-controller-manager has no leader")
        assert not any(terminating(p) for p in pods(cp, NS, "lone-1"))
        # The node nothing marks: remediate takes no step on it, says why and what stays stuck
        # (exit 4, not "nothing to do"), and writes nothing.
        start = datetime.now(timezone.utc)
        on_unmarked = plugin.run("remediate", AFTER, "--confirm")
        assert on_unmarked.returncode == 4, on_unmarked.stdout + on_unmarked.stderr
        assert f"these stay stuck: {NS}/held-2" in " ".join(on_unmarked.stdout.split())
        assert writes_since(cp, start) == []
    finally:
        watch.end()
        stopped.start()

    # A leader again: the second node is marked when the diagnosis, made as it took over, says.
    def new_leader() -> Obj | None:
        spec = _lease(cp)
        return spec if spec.get("holderIdentity") not in (None, leader) else None

    lease = wait_for("a new kube-controller-manager leader", new_leader, 60)
    acquired = _time(lease["acquireTime"])
    _, data = plugin.diagnose_json()
    cause = next(n for n in data["nodes"] if n["name"] == AFTER)["cause"]
    assert cause["code"] == "lease-not-renewed", cause
    said = re.search(r"at about (\S+Z)", cause["summary"])
    assert said, cause["summary"]
    # The diagnosis counts the default grace from the leader's start, not from the renewal;
    # the test bed runs a shorter grace, so its moment is judged on the same start.
    assert _time(said[1]) == acquired.replace(microsecond=0) + timedelta(
        seconds=facts.NODE_MONITOR_GRACE_SECONDS
    ), (said[1], acquired)
    marked = _time(wait_node_unknown(cp, AFTER)["lastTransitionTime"])
    bed = timedelta(milliseconds=NODE_MONITOR_GRACE_MS)
    assert abs((marked - acquired - bed).total_seconds()) <= 3, (marked, acquired)
    for node in (BEFORE, AFTER):
        cp.start_kubelet(node)
        wait_node_ready(cp, node)


def _no_execute(cp: ControlPlane, node: str) -> set[tuple[str, str]]:
    return {(key, effect) for key, effect in taint_keys(cp, node) if effect == "NoExecute"}


OFF = "unmarked-o1"  # a node whose kubelet stops while the node lifecycle controller is off
NS_OFF = "scenario-lifecycle-off"


@pytest.fixture(scope="module")
def lifecycle_off() -> Iterator[ControlPlane]:
    """A control plane of its own whose kube-controller-manager runs every controller but the
    node lifecycle one (--controllers=*,-node-lifecycle-controller): a leader renews its Lease,
    and nothing marks a silent node NotReady or taints it."""
    from tests.e2e.conftest import without_controller

    yield from without_controller("node-lifecycle-controller", "no-leader-lifecycle-off")


def test_a_node_past_its_time_to_be_marked_holds_its_pods_and_remediate_writes_nothing(
    lifecycle_off: ControlPlane, tmp_path: Path
) -> None:
    """The leader runs; the node lifecycle controller does not. A node's kubelet stops: past the
    default grace (50 s) from the last word heard and the controller's next look, the node is
    still Ready and untainted. The diagnosis (`lease-overdue`) lists its pods as stuck there
    (`on-unmarked-node`), says no NoExecute taint comes until the node is marked, and sends the
    user to the controller; the control plane agrees for a while longer (no taint, no eviction,
    no replacement of the Deployment's pod); a `diagnose --watch` running all along says so by
    itself at the moment it is due (nothing on the Node changes); `remediate NODE --confirm`
    is refused (exit 4), naming what stays stuck, and writes nothing."""
    cp = lifecycle_off
    plugin = Plugin(cp)
    cp.add_failable_node(OFF)
    wait_node_ready(cp, OFF)
    web = w.deployment(NS_OFF, "web", pin=OFF)
    lone = w.bare_pod(NS_OFF, "lone-o1", pin=OFF, grace=5)
    for spec in (web["spec"]["template"]["spec"], lone["spec"]):
        # a node keeps the not-ready NoSchedule taint it registers with until the node
        # lifecycle controller, not running here, takes it off
        spec["tolerations"].append(
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}
        )
    cp.apply(w.namespace(NS_OFF), web, lone)
    wait_running_on(cp, NS_OFF, "web", OFF)
    wait_running_on(cp, NS_OFF, "lone-o1", OFF)
    _wait_for_the_sign(cp)  # read before the node's time too
    cp.stop_kubelet(OFF)
    time.sleep(3)  # anything in flight lands
    lease = cp.kubectl("get", "lease", "-n", "kube-node-lease", OFF, "-o", "json")
    spec = json.loads(lease)["spec"]
    renewed = _time(spec["renewTime"])
    heard = max(renewed, _time(ready(cp, OFF)["lastHeartbeatTime"]))
    due = heard + timedelta(seconds=facts.NODE_MONITOR_GRACE_SECONDS)
    past = due + timedelta(seconds=MARK_SLACK_SECONDS)
    # the watch's first read once the lease is late (missed two renewals): it has the lease
    late = renewed + timedelta(seconds=spec["leaseDurationSeconds"] / 2 + 2)
    time.sleep(max(0.0, (late - datetime.now(timezone.utc)).total_seconds()))
    watch = Watched(cp, plugin, "-n", NS_OFF)
    try:
        first, early = wait_for("the watch's first screen", lambda: watch.docs, 30)[0]
        assert first < past, (first, past)
        # before its time, too, nothing is said to mark it (the Ready nodes' kept taint)
        cause = next(n for n in early["nodes"] if n["name"] == OFF)["cause"]
        assert cause["code"] == "lease-not-renewed", cause
        assert "nothing marks the node NotReady" in cause["summary"], cause
        told = wait_for("the watch to list the pods", lambda: watch.first("on-unmarked-node"), 120)
        assert past < told <= past + timedelta(seconds=8), (told, past)
    finally:
        watch.end()

    _, data = plugin.diagnose_json("-n", NS_OFF)
    assert ready(cp, OFF)["status"] == "True" and not _no_execute(cp, OFF)
    node = next(n for n in data["nodes"] if n["name"] == OFF)
    assert node["cause"]["code"] == "lease-overdue", node["cause"]
    assert "it has not" in node["cause"]["summary"]
    rows = {p["name"]: p for p in data["pods"] if p["namespace"] == NS_OFF}
    web = [n for n in rows if n.startswith("web-")]
    assert len(web) == 1 and "lone-o1" in rows, sorted(rows)
    for row in rows.values():
        assert row["category"] == "on-unmarked-node" and row["node"] == OFF, row
        assert row["evictionAt"] is None
        assert "none comes until the node lifecycle controller marks the node" in row["timeline"]
        assert not row["action"]["remediate"] and "--controllers" in row["action"]["summary"]
        assert "no leader" not in row["explanation"]
    plugin.record(
        "lifecycle-off",
        "kube-controller-manager without its node lifecycle controller; a node's kubelet stopped",
        "past the default grace and the controller's next look: still Ready, untainted",
        nodes=(OFF,),
    )
    # the control plane agrees: nothing comes for the node or its pods
    time.sleep(15)
    assert ready(cp, OFF)["status"] == "True" and not _no_execute(cp, OFF)
    web_pods = pods(cp, NS_OFF, "web")
    assert [p["metadata"]["name"] for p in web_pods] == web, web_pods
    assert not any(terminating(p) for p in [*web_pods, *pods(cp, NS_OFF, "lone-o1")])

    start = datetime.now(timezone.utc)
    refused = plugin.run("remediate", OFF, "--confirm")
    assert refused.returncode == 4, refused.stdout + refused.stderr
    said = " ".join(refused.stdout.split())
    assert "find out first why the node lifecycle controller has not marked it" in said, said
    assert f"{NS_OFF}/lone-o1" in said and f"{NS_OFF}/{web[0]}" in said, said
    assert writes_since(cp, start) == []
    cp.start_kubelet(OFF)
    wait_node_ready(cp, OFF)


NOT_READY = "untainted-o2"  # a live kubelet reports it not ready; nothing taints it
NS_UNTAINTED = "scenario-lifecycle-off-not-ready"
CNI = (
    "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
    "message:Network plugin returns error: cni plugin not initialized"
)


def test_a_node_reported_not_ready_is_never_tainted_without_the_node_lifecycle_controller(
    lifecycle_off: ControlPlane,
) -> None:
    """The leader runs; the node lifecycle controller does not. A node's kubelet, alive,
    reports Ready=False (its network plugin broke). No NoExecute taint comes, so nothing is
    evicted or replaced: the diagnosis says so (the zone's line does not say tainting runs, the
    pods' timelines do not say a taint is coming, the advice is not to wait for one), from what
    shows the controller does not run (the Ready nodes keep the not-ready NoSchedule taint it
    takes off). The control plane agrees well past the default rate's time to taint one node
    (10 s). Then that sign taken away by hand: past the time the default rate takes, the node
    still untainted, the diagnosis says the controller is not tainting there, from the time
    alone."""
    cp = lifecycle_off
    plugin = Plugin(cp)
    cp.add_failable_node(NOT_READY)
    wait_node_ready(cp, NOT_READY)
    web = w.deployment(NS_UNTAINTED, "web", pin=NOT_READY)
    web["spec"]["template"]["spec"]["tolerations"].append(
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}
    )
    cp.apply(w.namespace(NS_UNTAINTED), web)
    wait_running_on(cp, NS_UNTAINTED, "web", NOT_READY)
    _wait_for_the_sign(cp)
    cp.stop_kubelet(NOT_READY)
    problem = [{"type": "Ready", "status": "False", "reason": "KubeletNotReady", "message": CNI}]
    try:
        with KubeletReportingProblem(cp, NOT_READY, problem):
            wait_for("Ready=False", lambda: ready(cp, NOT_READY)["status"] == "False", 30)
            since = time.monotonic()
            plugin.record(
                "lifecycle-off-not-ready",
                "kube-controller-manager without its node lifecycle controller; a live kubelet "
                "reports Ready=False",
                "NotReady, no NoExecute taint",
                nodes=(NOT_READY,),
            )
            _, data = plugin.diagnose_json("-n", NS_UNTAINTED)
            # the control plane: nothing taints the node, nothing is evicted or replaced
            wait_for(
                "the default rate's time to taint, twice", lambda: time.monotonic() > since + 20, 30
            )
            assert not _no_execute(cp, NOT_READY), taint_keys(cp, NOT_READY)
            web_pods = pods(cp, NS_UNTAINTED, "web")
            assert len(web_pods) == 1 and not terminating(web_pods[0]), web_pods
            late = _untainted_past_its_time(cp, plugin)
    finally:
        cp.start_kubelet(NOT_READY)
        wait_node_ready(cp, NOT_READY)
    # without the sign, past the time the default rate takes: "not tainting", from the time
    [zone] = [z for z in late["zones"] if z["notReady"]]
    assert zone["eviction"] == "stopped" and "it is not tainting here" in zone["explanation"]
    assert "by all signs" not in zone["explanation"] and "tainting runs" not in zone["explanation"]
    [row] = [p for p in late["pods"] if p["namespace"] == NS_UNTAINTED]
    assert "the node lifecycle controller is not tainting" in row["timeline"], row
    node = next(n for n in data["nodes"] if n["name"] == NOT_READY)
    assert node["cause"]["code"] == "network-plugin", node["cause"]
    [zone] = [z for z in data["zones"] if z["notReady"]]
    assert zone["eviction"] == "stopped", zone
    assert "tainting runs" not in zone["explanation"], zone
    assert "by all signs it does not run" in zone["explanation"], zone
    assert "it taints no node" in zone["explanation"], zone
    [row] = [p for p in data["pods"] if p["namespace"] == NS_UNTAINTED]
    assert row["evictionAt"] is None and row["action"]["code"] != "wait", row
    assert "none comes until the node lifecycle controller runs" in row["timeline"], row
    assert "is coming" not in row["action"]["summary"], row


def _untainted_past_its_time(cp: ControlPlane, plugin: Plugin) -> Obj:
    """The registration taint taken off the Ready nodes by hand (as a controller that runs
    would have), so that nothing says the controller does not run: past the time its default
    rate takes to taint the zone's not-Ready nodes (its look, 10 s a node, and the minute's
    slack), NOT_READY is still untainted, and the diagnosis of that moment."""
    nodes = json.loads(cp.kubectl("get", "nodes", "-o", "json"))["items"]
    for node in nodes:
        if ready(cp, node["metadata"]["name"])["status"] == "True":
            cp.kubectl("taint", "node", node["metadata"]["name"], f"{REGISTERED}-", check=False)
    down = [n for n in nodes if ready(cp, n["metadata"]["name"])["status"] != "True"]
    since = _time(ready(cp, NOT_READY)["lastTransitionTime"])
    due = since + timedelta(seconds=5 + 10 * len(down) + 60 + 2)
    wait_for("the zone's time to taint past", lambda: datetime.now(timezone.utc) > due, 120)
    _, data = plugin.diagnose_json("-n", NS_UNTAINTED)
    assert not _no_execute(cp, NOT_READY), taint_keys(cp, NOT_READY)  # the control plane agrees
    assert not any(terminating(p) for p in pods(cp, NS_UNTAINTED, "web"))
    return data


REGISTERED = "node.kubernetes.io/not-ready:NoSchedule"


def _wait_for_the_sign(cp: ControlPlane) -> None:
    """What shows the node lifecycle controller does not run: Ready nodes past its next look
    still carrying the not-ready NoSchedule taint it takes off (a control plane just started
    has nodes Ready for a second only)."""
    wait_for(
        "the Ready nodes past the controller's next look",
        lambda: _ready_for(cp) > MARK_SLACK_SECONDS + 1,
        60,
    )


def _ready_for(cp: ControlPlane) -> float:
    """Seconds since the last Ready node became Ready."""
    nodes = json.loads(cp.kubectl("get", "nodes", "-o", "json"))["items"]
    since = [
        _time(c["lastTransitionTime"])
        for n in nodes
        for c in n["status"].get("conditions") or []
        if c["type"] == "Ready" and c["status"] == "True"
    ]
    return (datetime.now(timezone.utc) - max(since)).total_seconds()
