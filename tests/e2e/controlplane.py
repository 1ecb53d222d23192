"""A real Kubernetes control plane for the end-to-end tests.

etcd, kube-apiserver, kube-controller-manager and kube-scheduler (built by
hack/build-control-plane.sh) run under kwokctl's binary runtime on 127.0.0.1. kwok simulates the
kubelets: kwokctl's own kwok-controller manages the healthy nodes (annotation
kwok.x-k8s.io/node=fake), and each "failable" node gets its own kwok process (annotation
kwok.x-k8s.io/node=<node name>) that a test can stop and restart. Stopping it is a kubelet that
stops: the lease goes stale and the real node lifecycle controller does the rest.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar

import urllib3
import yaml

from bench import reaper

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "hack" / "build-control-plane.sh"
CLUSTER_NAME = "nodefail-e2e"

# Shortened timers: the controller notices a silent kubelet in ~16 s instead of 50 s.
NODE_MONITOR_PERIOD_MS = 1000
NODE_MONITOR_GRACE_MS = 16000
LEASE_SECONDS = 10
HEALTHY_ZONE = "zone-a"
# Only zones of more than 50 nodes in PartialDisruption use it (default 0.01/s, one node per
# 100 s): one node per 5 s, so a test sees "slowed, not stopped" in seconds.
SECONDARY_EVICTION_RATE = 0.2


class KubectlError(subprocess.CalledProcessError):
    """A failed kubectl call whose message carries kubectl's own error text."""

    def __str__(self) -> str:
        return f"{super().__str__()}: {str(self.stderr).strip()}"


class WaitTimeout(AssertionError):
    """A condition did not hold in time; the message says what was last seen."""


def wait_for(
    what: str, probe: Callable[[], Any], timeout: float = 90.0, interval: float = 0.5
) -> Any:
    """Poll probe() until it returns something truthy; fail with the last value seen."""
    deadline = time.monotonic() + timeout
    seen: Any = None
    while True:
        try:
            result = probe()
            seen = result
        except subprocess.CalledProcessError as exc:
            result, seen = None, f"command failed: {exc.stderr or exc}"
        if result:
            return result
        if time.monotonic() > deadline:
            raise WaitTimeout(
                f"timed out after {timeout:.0f}s waiting for {what}; last seen: {str(seen)[:1500]}"
            )
        time.sleep(interval)


def requested_version() -> str | None:
    """The Kubernetes minor the suite runs on: $NODEFAIL_K8S_VERSION (e.g. 1.26), else the
    build script's default (the newest supported minor)."""
    return os.environ.get("NODEFAIL_K8S_VERSION") or None


def matrix_minors() -> list[str]:
    """The older minors tests/e2e/test_versions.py runs on too: $NODEFAIL_MATRIX, e.g.
    "1.26 1.31" (`make test` sets it; unset: none, so a run never builds a minor by surprise)."""
    return os.environ.get("NODEFAIL_MATRIX", "").replace(",", " ").split()


def build_binaries(version: str | None = None) -> Path:
    """Run the idempotent build of one Kubernetes minor (None: the default, the newest);
    return the folder holding every binary. Fails loudly. $NODEFAIL_CONTROLPLANE_BIN names an
    already built folder instead (no build step: no wait on another checkout's build lock)."""
    prebuilt = os.environ.get("NODEFAIL_CONTROLPLANE_BIN")
    if prebuilt:
        if not (Path(prebuilt) / "kube-apiserver").is_file():
            raise RuntimeError(f"NODEFAIL_CONTROLPLANE_BIN={prebuilt} holds no kube-apiserver")
        return Path(prebuilt)
    proc = subprocess.run(
        ["bash", str(BUILD_SCRIPT), *([version] if version else [])],
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"building the control plane {version or '(default)'} failed "
            f"(exit {proc.returncode}); see the output above"
        )
    return Path(proc.stdout.strip().splitlines()[-1])


# Components' ports: below Linux's default ephemeral range (32768-60999), see _ports_yaml.
PORT_RANGE = (20000, 32768)
_RANDOM = random.Random()  # seeded from the OS: two processes never share a sequence


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


SHARED_NODE = "(every module)"  # node_modules value of the nodes every module may use


@dataclass
class ControlPlane:
    bindir: Path
    workdir: Path
    kubeconfig: Path = field(init=False)
    kwoks: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    # Extra kube-controller-manager flags (name -> value), e.g. a pre-1.27 cluster run with
    # enable-taint-manager=false to reproduce the NodeLost-era eviction path.
    controller_manager_args: dict[str, str] = field(default_factory=dict)
    # Node name -> the test module that created it. Each module has a control plane of its own
    # (tests/e2e/conftest.py); should one ever be shared, two modules using one node name would
    # fail each other's nodes, and node_manifest refuses that.
    node_modules: dict[str, str] = field(default_factory=dict)
    # How long a restarted kwok has to act on the pods deleted while it was away.
    RESUME_SECONDS: ClassVar[float] = 20.0
    # How often a kwok that exits by itself is started again (_watch_death).
    KWOK_REVIVALS: ClassVar[int] = 3

    def __post_init__(self) -> None:
        self.cluster_dir = self.workdir / "clusters" / CLUSTER_NAME
        self.kubeconfig = self.cluster_dir / "kubeconfig.yaml"
        self.logdir = self.workdir / "logs"
        self._api_pool: urllib3.PoolManager | None = None
        self._pool_lock = threading.Lock()
        self._kwok_lock = threading.Lock()
        self._kwok_configs: dict[str, Path] = {}  # every kwok ever started here: its stages
        self._revivals: dict[str, int] = {}  # node -> kwoks started again after they died
        self._server = ""
        self._reaper: subprocess.Popen[bytes] | None = None
        self.env = {
            **os.environ,
            "KWOK_WORKDIR": str(self.workdir),
            "PATH": f"{self.bindir}{os.pathsep}{os.environ.get('PATH', '')}",
        }

    # --- life cycle ---

    def config_yaml(self) -> str:
        b = self.bindir
        return f"""\
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokctlConfiguration
options:
  runtime: binary
  bindAddress: 127.0.0.1
{self._ports_yaml()}  kubeApiserverBinary: {b}/kube-apiserver
  kubeControllerManagerBinary: {b}/kube-controller-manager
  kubeSchedulerBinary: {b}/kube-scheduler
  kubectlBinary: {b}/kubectl
  etcdBinary: {b}/etcd
  etcdctlBinary: {b}/etcdctl
  etcdutlBinary: {b}/etcdutl
  kwokControllerBinary: {b}/kwok
  heartbeatFactor: 1
  nodeLeaseDurationSeconds: {LEASE_SECONDS}
  kubeControllerManagerNodeMonitorPeriodMilliseconds: {NODE_MONITOR_PERIOD_MS}
  kubeControllerManagerNodeMonitorGracePeriodMilliseconds: {NODE_MONITOR_GRACE_MS}
  kubeAuditPolicy: {self.workdir}/audit-policy.yaml
componentsPatches:
- name: kwok-controller
  extraArgs:
  - key: manage-all-nodes
    value: "false"
    override: true
  - key: manage-nodes-with-annotation-selector
    value: kwok.x-k8s.io/node=fake
- name: kube-controller-manager
  extraArgs:
  - key: node-eviction-rate
    value: "10"
  - key: secondary-node-eviction-rate
    value: "{SECONDARY_EVICTION_RATE}"
{self._extra_args_yaml(self.controller_manager_args)}- name: kube-apiserver
  extraArgs:
  - key: advertise-address
    value: 127.0.0.1
"""

    @staticmethod
    def _ports_yaml() -> str:
        """Every component's port: random ones below the kernel's ephemeral range, each seen
        free. kwokctl's own choice scans down from 32767 and checks each port is free only when
        the cluster is created, so two clusters created at once on this machine (parallel
        workers, other checkouts' suites) got the same ports, and a component then failed to
        bind (seen: the kwok-controller, leaving every healthy node NotReady). Ports the OS
        hands out (bind to 0) come from the ephemeral range, where any outgoing connection (the
        suite makes thousands) may take one between this check and the component's bind; below
        it only another listener can, and start() tries again with new ports if one did."""
        names = (
            "kubeApiserverPort",
            "etcdPort",
            "etcdPeerPort",
            "kubeControllerManagerPort",
            "kubeSchedulerPort",
            "kwokControllerPort",
        )
        chosen: list[int] = []
        while len(chosen) < len(names):
            port = _RANDOM.randrange(*PORT_RANGE)
            if port not in chosen and _port_free(port):
                chosen.append(port)
        return "".join(f"  {name}: {port}\n" for name, port in zip(names, chosen, strict=True))

    @staticmethod
    def _extra_args_yaml(args: dict[str, str]) -> str:
        return "".join(
            f"  - key: {key}\n    value: {json.dumps(value)}\n" for key, value in args.items()
        )

    def server_version(self) -> str:
        """The API server's gitVersion, e.g. v1.26.13 (what the analysis reads too)."""
        return str(json.loads(self.kubectl("get", "--raw", "/version"))["gitVersion"])

    def server_minor(self) -> int:
        return int(self.server_version().split(".")[1])

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self._reaper is None:  # stops all this if this process dies before `stop`
            self._reaper = reaper.start(self._reaper_order())
        (self.workdir / "audit-policy.yaml").write_text(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n"
            "- level: Metadata\n  verbs: [create, update, patch, delete, deletecollection]\n"
            "- level: None\n"
        )
        cfg = self.workdir / "kwokctl.yaml"
        failures = []
        for attempt in range(3):
            cfg.write_text(self.config_yaml())  # new ports each time
            try:
                self._create(cfg)
                self._wait_components_serving()
                return
            except (RuntimeError, WaitTimeout) as exc:
                # With other control planes starting on the machine at once, a component may
                # lose its port to another's between the choice and the bind. Start again.
                failures.append(f"attempt {attempt + 1}: {str(exc)[:2000]}")
                print(f"[e2e] control plane did not start ({exc!s:.300}); recreating")
                self._delete_cluster()
                shutil.rmtree(self.cluster_dir, ignore_errors=True)  # its logs: a clean slate
        raise RuntimeError(
            "the control plane did not start in three attempts:\n" + "\n".join(failures)
        )

    def _wait_components_serving(self) -> None:
        """Wait until kwok-controller serves; fail if any component lost its port."""
        logs = self.cluster_dir / "logs"
        kwok_log = logs / "kwok-controller.log"

        def clashed() -> list[str]:
            return [
                log.name
                for log in sorted(logs.glob("*.log"))
                if log.name != "audit.log" and "bind: address already in use" in log.read_text()
            ]

        def outcome() -> str:
            if clashed():
                return "clash"
            text = kwok_log.read_text() if kwok_log.exists() else ""
            started = "Starting HTTP server" in text and "Starting HTTPS server" in text
            return "started" if started else ""

        wait_for("kwok-controller to serve", outcome, 120)
        time.sleep(1)  # a bind failure is logged right after the start lines
        if clashed():
            raise RuntimeError(f"a component lost its port: {', '.join(clashed())}")

    def _create(self, cfg: Path) -> None:
        self._run_kwokctl(
            "create",
            "cluster",
            "--name",
            CLUSTER_NAME,
            "--config",
            str(cfg),
            "--kubeconfig",
            "",
            "--wait",
            "120s",
            "--timeout",
            "300s",
        )
        wait_for(
            "the API server to answer",
            lambda: self.kubectl("get", "--raw", "/readyz", check=False) == "ok",
            120,
        )
        wait_for(
            "the default service account",
            lambda: self.kubectl(
                "get", "serviceaccount", "default", "-o", "name", check=False
            ).strip(),
            60,
        )

    def restart(self, down_seconds: float = 5) -> None:
        """Stop every control-plane component (etcd, kube-apiserver, controller-manager,
        scheduler, kwok-controller), wait, and start them again on the same ports, as a
        control-plane restart or upgrade does; the failable nodes' kwok kubelets keep running
        and reconnect."""
        self._run_kwokctl("stop", "cluster", "--name", CLUSTER_NAME)
        time.sleep(down_seconds)
        self._run_kwokctl("start", "cluster", "--name", CLUSTER_NAME, "--timeout", "300s")
        wait_for(
            "the API server to answer again",
            lambda: self.kubectl("get", "--raw", "/readyz", check=False) == "ok",
            120,
        )

    def stop(self, keep_logs_to: Path | None = None) -> None:
        for name in list(self.kwoks):
            self.stop_kubelet(name)
        if keep_logs_to is not None and (self.cluster_dir / "logs").exists():
            shutil.copytree(self.cluster_dir / "logs", keep_logs_to, dirs_exist_ok=True)
            if self.logdir.exists():
                shutil.copytree(self.logdir, keep_logs_to, dirs_exist_ok=True)
        self._delete_cluster()
        if self._reaper is not None:
            reaper.stand_down(self._reaper)
            self._reaper = None

    _DELETE = ("delete", "cluster", "--name", CLUSTER_NAME, "--kubeconfig")

    def _delete_cluster(self) -> None:
        """kwokctl's delete of this cluster (it must not touch a kubeconfig: none is given)."""
        self._run_kwokctl(*self._DELETE, str(self.workdir / "no-kubeconfig"), check=False)

    def _reaper_order(self) -> dict[str, Any]:
        """What bench/reaper.py does if this process dies before `stop`: delete the
        cluster, kill what names the folder, keep the logs (the death failed a test)."""
        logs = Path(os.environ.get("NODEFAIL_E2E_LOGS", REPO / ".e2e-logs"))
        return {
            "delete": [
                str(self.bindir / "kwokctl"),
                *self._DELETE,
                str(self.workdir / "no-kubeconfig"),
            ],
            "env": self.env,
            "workdir": str(self.workdir),
            "keep_logs_from": [str(self.cluster_dir / "logs"), str(self.logdir)],
            "keep_logs_to": str(logs / f"{self.workdir.name}-owner-died"),
        }

    def _run_kwokctl(self, *args: str, check: bool = True) -> None:
        proc = subprocess.run(
            [str(self.bindir / "kwokctl"), *args],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        if check and proc.returncode != 0:
            raise RuntimeError(
                f"kwokctl {' '.join(args)} failed ({proc.returncode}):\n"
                f"{proc.stdout}\n{proc.stderr}"
            )

    # --- kubectl ---

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> str:
        proc = subprocess.run(
            [str(self.bindir / "kubectl"), "--kubeconfig", str(self.kubeconfig), *args],
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
            env=self.env,
        )
        if check and proc.returncode != 0:
            raise KubectlError(proc.returncode, ["kubectl", *args], proc.stdout, proc.stderr)
        return proc.stdout.strip() if proc.returncode == 0 else ""

    def api_patch(self, path: str, body: dict[str, Any], content_type: str) -> int:
        """PATCH one object through a kept-open connection (no kubectl start): for loops that
        stand in for a kubelet and must keep its pace on a loaded machine. Returns the HTTP
        status, 0 when no answer came (left to the next round, as a kubelet would)."""
        try:
            answer = self._pool().request(
                "PATCH",
                self._server + path,
                body=json.dumps(body).encode(),
                headers={"Content-Type": content_type},
                timeout=urllib3.Timeout(connect=2, read=5),
                retries=False,
            )
        except urllib3.exceptions.HTTPError:
            return 0
        return int(answer.status)

    def _pool(self) -> urllib3.PoolManager:
        with self._pool_lock:
            if self._api_pool is None:
                config = yaml.safe_load(self.kubeconfig.read_text())
                cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
                self._server = cluster["server"]
                self._api_pool = urllib3.PoolManager(
                    maxsize=4,
                    ca_certs=cluster["certificate-authority"],
                    cert_file=user["client-certificate"],
                    key_file=user["client-key"],
                )
            return self._api_pool

    def get_kubeconfig(self) -> dict[str, Any]:
        """The admin kubeconfig with certificates inlined."""
        return dict(json.loads(self.kubectl("config", "view", "--raw", "--flatten", "-o", "json")))

    def compact_etcd(self) -> int:
        """etcd's history compacted up to its current revision, as the API server's own
        compaction does every 5 minutes (--etcd-compaction-interval): a watch asked to start
        from an older resourceVersion then gets 410 Gone. The revision compacted to."""
        port = re.search(r"^  etcdPort: (\d+)$", (self.workdir / "kwokctl.yaml").read_text(), re.M)
        assert port, "no etcd port in kwokctl.yaml"
        etcdctl = [str(self.bindir / "etcdctl"), f"--endpoints=http://127.0.0.1:{port[1]}"]
        status = subprocess.run(
            [*etcdctl, "endpoint", "status", "-w", "json"],
            capture_output=True,
            text=True,
            check=True,
            env=self.env,
        )
        revision = int(json.loads(status.stdout)[0]["Status"]["header"]["revision"])
        subprocess.run(
            [*etcdctl, "compact", str(revision)],
            capture_output=True,
            text=True,
            check=True,
            env=self.env,
        )
        return revision

    def apply(self, *objs: dict[str, Any]) -> None:
        self.kubectl(
            "apply",
            "-f",
            "-",
            stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objs)}),
        )

    def get(
        self, kind: str, name: str = "", namespace: str | None = None, selector: str | None = None
    ) -> Any:
        args = ["get", kind] + ([name] if name else []) + ["-o", "json"]
        if namespace:
            args += ["-n", namespace]
        elif not name:
            args += ["-A"]
        if selector:
            args += ["-l", selector]
        out = self.kubectl(*args, check=False)
        return json.loads(out) if out else None

    # --- nodes and kubelets ---

    def add_node(
        self,
        name: str,
        zone: str,
        managed_by: str = "fake",
        taints: list[dict[str, Any]] | None = None,
    ) -> None:
        """A Node object kwok will manage (annotation selects which kwok process)."""
        self.apply(self.node_manifest(name, zone, managed_by, taints))

    def add_node_group(
        self, names: list[str], zone: str, group: str, taints: list[dict[str, Any]] | None = None
    ) -> None:
        """Nodes whose kubelets one kwok process plays (annotation value `group`): stop it and
        they all fail at once. Start it with start_kubelet(group)."""
        self.apply(*[self.node_manifest(n, zone, group, taints) for n in names])
        self.start_kubelet(group)

    def node_manifest(
        self, name: str, zone: str, managed_by: str, taints: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        module = os.environ.get("PYTEST_CURRENT_TEST", "").split("::")[0]
        owner = self.node_modules.setdefault(name, module)
        assert owner in (module, SHARED_NODE), (
            f"node {name!r} is already used by {owner}: each test module needs node names of "
            "its own on a control plane they share"
        )
        node: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "annotations": {
                    "kwok.x-k8s.io/node": managed_by,
                    "node.alpha.kubernetes.io/ttl": "0",
                },
                "labels": {
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "type": "kwok",
                    "topology.kubernetes.io/region": "e2e",
                    "topology.kubernetes.io/zone": zone,
                },
            },
            "status": {
                "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"},
                "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
            },
        }
        if taints:
            node["spec"] = {"taints": taints}
        return node

    def add_failable_node(self, name: str, zone: str = HEALTHY_ZONE) -> None:
        self.add_node(name, zone, managed_by=name)
        self.start_kubelet(name)

    def kubelet_config(self) -> Path:
        """Stages for the failable nodes' kwok processes: kwokctl's own defaults, read from the
        cluster it created, minus pod-complete, so that Job pods keep running on those nodes
        (a real batch job takes a while; kwok would complete it at once)."""
        path = self.workdir / "kwok-failable.yaml"
        if not path.exists():
            docs = list(yaml.safe_load_all((self.cluster_dir / "kwok.yaml").read_text()))
            stages = [
                d
                for d in docs
                if d and d.get("kind") == "Stage" and d["metadata"]["name"] != "pod-complete"
            ]
            if not stages:
                raise RuntimeError(f"no kwok stages found in {self.cluster_dir / 'kwok.yaml'}")
            path.write_text(yaml.safe_dump_all(stages))
        return path

    def start_kubelet(self, name: str, config: Path | None = None) -> None:
        """Start the kwok process that plays this node's kubelet (its stages: `config`, by
        default kubelet_config()). A kubelet that comes back (a second start) is watched: see
        _watch_return."""
        with self._kwok_lock:
            if name in self.kwoks:
                return
            returning = name in self._kwok_configs
            self._kwok_configs[name] = config or self.kubelet_config()
            proc = self._spawn_kwok(name)
        if returning:
            threading.Thread(target=self._watch_return, args=(name, proc), daemon=True).start()

    def _spawn_kwok(self, name: str) -> subprocess.Popen[bytes]:
        self.logdir.mkdir(parents=True, exist_ok=True)
        log = open(self.logdir / f"kwok-{name}.log", "ab")  # noqa: SIM115 (owned by the process)
        self.kwoks[name] = subprocess.Popen(
            [
                str(self.bindir / "kwok"),
                "--kubeconfig",
                str(self.kubeconfig),
                "--config",
                str(self._kwok_configs[name]),
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node={name}",
                f"--node-lease-duration-seconds={LEASE_SECONDS}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
            start_new_session=True,
        )
        log.close()
        proc = self.kwoks[name]
        threading.Thread(target=self._watch_death, args=(name, proc), daemon=True).start()
        return proc

    def _watch_death(self, name: str, proc: subprocess.Popen[bytes]) -> None:
        """kwok v0.8.0 can die at start of its own race ("fatal error: concurrent map writes"
        in the CEL environment its stages build, run p2 of 2026-12-02: a restarted node stayed
        NotReady and the test timed out). A kubelet the test did not stop is started again,
        up to KWOK_REVIVALS times per node, and it is said on stdout, not hidden."""
        code = proc.wait()
        with self._kwok_lock:
            if self.kwoks.get(name) is not proc:
                return  # stopped or replaced by the test (or by _watch_return)
            self._revivals[name] = self._revivals.get(name, 0) + 1
            if self._revivals[name] > self.KWOK_REVIVALS:
                print(f"[e2e] kwok for {name} exited by itself (code {code}) once too often")
                del self.kwoks[name]  # reaped: its pid may be another process's by now
                return
            print(
                f"[e2e] kwok for {name} exited by itself (code {code}, "
                f"{self._last_kwok_words(name)!r}); started again"
            )
            self._spawn_kwok(name)

    def _last_kwok_words(self, name: str) -> str:
        """The line of its log that says why a kwok ended (Go's fatal error or panic)."""
        try:
            lines = (self.logdir / f"kwok-{name}.log").read_text(errors="replace").splitlines()
        except OSError:
            return ""
        said = [line for line in lines if line.startswith(("fatal error", "panic:"))]
        return (said or lines or [""])[-1][:200]

    def _watch_return(self, name: str, proc: subprocess.Popen[bytes]) -> None:
        """A restarted kwok once renewed its node's lease and never acted on the node's pods
        (run x of 2026-12-02: five Terminating pods left for the whole minute the test waited,
        where its first start had acted on each within 3 s). A kubelet resyncs its pods; this
        one cannot, so it is started once more when, RESUME_SECONDS after the start, a pod
        deleted before then is still on its nodes. It is said on stdout, not hidden."""
        deadline = time.monotonic() + self.RESUME_SECONDS
        while time.monotonic() < deadline:
            time.sleep(1)
            if self.kwoks.get(name) is not proc:
                return  # stopped (or restarted) by the test meanwhile
        started = datetime.now(timezone.utc).timestamp() - self.RESUME_SECONDS
        if not self._pods_left_deleted(name, before=started):
            return
        with self._kwok_lock:
            if self.kwoks.get(name) is not proc:
                return
            print(f"[e2e] kwok for {name} left its deleted pods alone; started once more")
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            self._spawn_kwok(name)

    def _pods_left_deleted(self, name: str, before: float) -> bool:
        """Whether a pod on the nodes this kwok plays was deleted before `before` (epoch
        seconds) and is still there."""
        nodes = self.get("nodes") or {"items": []}
        played = {
            n["metadata"]["name"]
            for n in nodes["items"]
            if n["metadata"].get("annotations", {}).get("kwok.x-k8s.io/node") == name
        }
        pods = self.get("pods") or {"items": []}
        for pod in pods["items"]:
            deleted = pod["metadata"].get("deletionTimestamp")
            if pod["spec"].get("nodeName") in played and deleted:
                when = datetime.strptime(deleted, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
                if when.timestamp() < before:
                    return True
        return False

    def stop_kubelet(self, name: str) -> None:
        """The kubelet dies: SIGKILL its kwok process (no goodbye, like a power cut)."""
        with self._kwok_lock:
            proc = self.kwoks.pop(name, None)
        if proc is None:
            return
        if proc.poll() is None:  # reaped already: its pid may be another process's now
            with contextlib.suppress(ProcessLookupError):  # it died by itself meanwhile
                os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


class LeaseRenewing:
    """A kubelet that is back far enough to renew its Lease (every second, in a thread, while
    the node's kwok process is stopped) but posts no node status: the kubelet renews the lease in
    its own loop; status goes through another.

    The lease lasts LEASE_SECONDS (10 s) and the plugin calls it late after half of that, so each
    renewal goes through one kept-open client of the API server: a kubectl process per renewal
    took longer than 5 s to start on a machine running two suites (load 28), and the "alive"
    kubelet looked dead (runs q and r of 2026-12-02)."""

    INTERVAL = 1.0

    def __init__(self, cp: ControlPlane, node: str) -> None:
        self.cp, self.node = cp, node
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> LeaseRenewing:
        # Renewed before the test goes on, not a thread start later; a patch the API server
        # refuses is a broken test, not a slow kubelet.
        status = self._renew()
        assert status == 200, f"renewing {self.node}'s lease: HTTP {status}"
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.wait(self.INTERVAL):
            self._renew()

    def _renew(self) -> int:
        now = datetime.now(timezone.utc)
        stamp = now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        status = self.cp.api_patch(
            f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{self.node}",
            {"spec": {"renewTime": stamp}},
            "application/merge-patch+json",
        )
        self._tick(now)
        return status

    def _tick(self, now: datetime) -> None:
        """What else the kubelet posts at each renewal (nothing here)."""


def kubelet_event(node: str, reason: str, stamp: str) -> dict[str, Any]:
    """The event a kubelet writes when its node's Ready condition changes (NodeReady,
    NodeNotReady): about the Node, in the default namespace, from component kubelet."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{node}.{reason.lower()}.{stamp.lower().replace(':', '')}",
            "namespace": "default",
        },
        "involvedObject": {"kind": "Node", "name": node, "uid": node},
        "reason": reason,
        "message": f"Node {node} status is now: {reason}",
        "source": {"component": "kubelet", "host": node},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
        "type": "Normal",
    }


class KubeletReportingProblem(LeaseRenewing):
    """A kubelet that is alive but reports the node not Ready: it keeps renewing the node's
    Lease and posts the given conditions (as a kubelet whose CNI or runtime broke would). The
    node lifecycle controller then does what it does for Ready=False."""

    def __init__(
        self,
        cp: ControlPlane,
        node: str,
        conditions: list[dict[str, Any]],
        announce: bool = False,
    ) -> None:
        """`announce`: also write the event a kubelet writes as it posts Ready=False
        (NodeNotReady, from component kubelet)."""
        super().__init__(cp, node)
        self.conditions = conditions
        self._first = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.announce = announce

    def __enter__(self) -> LeaseRenewing:
        if self.announce:
            self.cp.apply(kubelet_event(self.node, "NodeNotReady", self._first))
        return super().__enter__()

    def _tick(self, now: datetime) -> None:
        stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        conditions = [
            {**c, "lastHeartbeatTime": stamp, "lastTransitionTime": self._first}
            for c in self.conditions
        ]
        self.cp.api_patch(
            f"/api/v1/nodes/{self.node}/status",
            {"status": {"conditions": conditions}},
            "application/strategic-merge-patch+json",
        )
