"""A big synthetic cluster for the benchmark: etcd + kube-apiserver only, no controllers.

Without controllers nothing rewrites what we seed: nodes keep the status written, Terminating
pods stay Terminating (no kubelet confirms), nothing is rescheduled. Seeding goes straight into
etcd (JSON objects through etcd's gRPC gateway, in large transactions, concurrently): a
60,000-pod cluster seeds in about a minute instead of the many minutes 120,000 API writes take
(create, then the status subresource). kube-apiserver reads JSON from etcd as well as protobuf
(its storage decoder recognises both), so it serves these objects like any others; what we
change later (failing nodes, deleting pods) goes through the API as usual.

The seeded etcd data is kept in a cache folder keyed by the cluster size and the seed format, so
later runs start from a copy of it in seconds.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import random
import shutil
import socket
import ssl
import subprocess
import threading
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from bench import reaper

REPO = Path(__file__).resolve().parents[1]
CACHE = Path(
    os.environ.get("NODEFAIL_BENCH_CACHE", Path.home() / ".cache" / "kubectl-nodefail-bench")
)
SEED_FORMAT = 4  # bump when the seeded objects change: old caches are then ignored
TOKEN = "nodefail-bench-token"
NAMESPACES = 100
ZONES = ("zone-a", "zone-b", "zone-c")
FINALIZER_HELD = 50  # Terminating pods on healthy nodes, held by a finalizer
MAX_FAILED = 200  # the most nodes the benchmark fails (node-00000 ... node-00199)


def reserve(n_nodes: int) -> int:
    """The last nodes never fail: they hold the finalizer-held pods and keep the cluster up."""
    return max(1, min(50, n_nodes // 2))


@dataclass(frozen=True)
class Size:
    """A seeded cluster: `nodes` nodes carrying `pods` pods spread over all of them, plus `extra`
    pods on the nodes that never fail (from node MAX_FAILED on).

    `5000x60000+60000` doubles the healthy pods of `5000x60000` while every node that can fail
    keeps exactly the pods it has there (the same objects: the base is seeded identically), so
    the pair measures what the healthy part of a cluster costs at a fixed failed set."""

    nodes: int
    pods: int
    extra: int = 0
    # "spread": each owner's replicas land on nodes far apart (a stride through the nodes), so
    # a failed node's pods come from as many owners as it has pods, as on a real cluster where
    # a node hosts many workloads; by default a owner's replicas sit on consecutive nodes, and
    # neighbouring failed nodes share owners.
    spread: bool = False

    @classmethod
    def parse(cls, text: str) -> Size:
        """`NODESxPODS`, `NODESxPODS+EXTRA`, either with `/spread` after it."""
        text, _, shape = text.strip().lower().partition("/")
        if shape not in ("", "spread"):
            raise ValueError(f"unknown shape {shape!r} (only 'spread')")
        nodes, _, rest = text.partition("x")
        pods, _, extra = rest.partition("+")
        return cls(int(nodes), int(pods), int(extra or 0), shape == "spread")

    @property
    def total(self) -> int:
        return self.pods + self.extra

    @property
    def label(self) -> str:
        base = f"{self.nodes:,} nodes / {self.pods:,} pods"
        if self.extra:
            base += f" + {self.extra:,} on healthy nodes"
        return base + (", owners spread" if self.spread else "")

    @property
    def key(self) -> str:
        key = f"{self.nodes}n-{self.pods}p" + (f"+{self.extra}h" if self.extra else "")
        return key + ("-spread" if self.spread else "")

    def node_of(self, placement: int) -> int:
        """The node of the `placement`-th pod placed (round robin, or a stride for `spread`)."""
        if not self.spread:
            return placement % self.nodes
        return (placement * spread_stride(self.nodes)) % self.nodes


def spread_stride(n_nodes: int) -> int:
    """A stride through n_nodes that visits every node (coprime to it) and puts consecutive
    placements far apart: the first prime from ~0.58 n_nodes up that does not divide it."""
    k = max(2, int(n_nodes * 0.58))
    while not (_is_prime(k) and n_nodes % k != 0) and k < 10 * n_nodes + 10:
        k += 1
    return k


def _is_prime(k: int) -> bool:
    return k >= 2 and all(k % d for d in range(2, int(k**0.5) + 1))


UTC = timezone.utc


def _benchmark_tls() -> ssl.SSLContext:
    """The benchmark's own API server, certificate unchecked: no CA store is loaded."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


TLS = _benchmark_tls()

Obj = dict[str, Any]


def ts(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def binaries() -> Path:
    """The control plane built by hack/build-control-plane.sh (its last output line)."""
    proc = subprocess.run(
        ["bash", str(REPO / "hack" / "build-control-plane.sh")],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    return Path(proc.stdout.strip().splitlines()[-1])


# --- synthetic objects (realistic shapes and sizes: a pod is ~5-6 KB of JSON) ---


def _managed(manager: str, op: str, when: str, fields: Obj, sub: str | None = None) -> Obj:
    entry = {
        "manager": manager,
        "operation": op,
        "apiVersion": "v1",
        "time": when,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }
    if sub:
        entry["subresource"] = sub
    return entry


def node_obj(i: int, created: datetime) -> Obj:
    name = f"node-{i:05d}"
    zone = ZONES[i % len(ZONES)]
    when = ts(created)
    conditions = [
        {
            "type": t,
            "status": "False",
            "reason": f"KubeletHas{r}",
            "message": f"kubelet has {m}",
            "lastHeartbeatTime": when,
            "lastTransitionTime": when,
        }
        for t, r, m in (
            ("MemoryPressure", "SufficientMemory", "sufficient memory available"),
            ("DiskPressure", "NoDiskPressure", "no disk pressure"),
            ("PIDPressure", "SufficientPID", "sufficient PID available"),
        )
    ] + [
        {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
            "lastHeartbeatTime": when,
            "lastTransitionTime": when,
        }
    ]
    images = [
        {
            "names": [
                f"registry.example.com/team-{k}/service-{k}@sha256:{hashlib.sha256(f'{k}'.encode()).hexdigest()}",
                f"registry.example.com/team-{k}/service-{k}:v1.{k}.0",
            ],
            "sizeBytes": 10_000_000 + k * 1_000_003,
        }
        for k in range(12)
    ]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": str(uuid.UUID(int=random.getrandbits(128))),
            "creationTimestamp": when,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": "m5.2xlarge",
                "topology.kubernetes.io/region": "bench",
                "topology.kubernetes.io/zone": zone,
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "managedFields": [
                _managed(
                    "kubelet",
                    "Update",
                    when,
                    {"f:metadata": {"f:labels": {"f:kubernetes.io/hostname": {}}}},
                ),
                _managed(
                    "kubelet",
                    "Update",
                    when,
                    {"f:status": {"f:conditions": {'k:{"type":"Ready"}': {"f:status": {}}}}},
                    "status",
                ),
            ],
        },
        "spec": {"podCIDR": f"10.{i // 256 % 256}.{i % 256}.0/24", "providerID": f"bench://{name}"},
        "status": {
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"},
            "allocatable": {
                "cpu": "7910m",
                "memory": "31Gi",
                "pods": "110",
                "ephemeral-storage": "95Gi",
            },
            "conditions": conditions,
            "addresses": [
                {"type": "InternalIP", "address": f"10.200.{i // 256 % 256}.{i % 256}"},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": hashlib.md5(name.encode()).hexdigest(),
                "systemUUID": str(uuid.UUID(int=i + 1)),
                "bootID": str(uuid.UUID(int=i + 7)),
                "kernelVersion": "6.1.0-bench",
                "osImage": "Debian GNU/Linux 12 (bookworm)",
                "containerRuntimeVersion": "containerd://2.0.0",
                "kubeletVersion": "v1.36.1",
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "images": images,
        },
    }


def lease_obj(i: int, created: datetime) -> Obj:
    name = f"node-{i:05d}"
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": name,
            "namespace": "kube-node-lease",
            "uid": str(uuid.UUID(int=random.getrandbits(128))),
            "creationTimestamp": ts(created),
        },
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": 40,
            "renewTime": created.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
        },
    }


def namespace_obj(name: str, created: datetime) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "uid": str(uuid.UUID(int=random.getrandbits(128))),
            "creationTimestamp": ts(created),
            "labels": {"kubernetes.io/metadata.name": name},
        },
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def _container(name: str, image: str, port: int) -> Obj:
    return {
        "name": name,
        "image": image,
        "ports": [{"containerPort": port, "protocol": "TCP", "name": "http"}],
        "env": [
            {"name": "LOG_LEVEL", "value": "info"},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        ],
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"cpu": "500m", "memory": "256Mi"},
        },
        "readinessProbe": {
            "httpGet": {"path": "/healthz", "port": port, "scheme": "HTTP"},
            "periodSeconds": 10,
            "timeoutSeconds": 1,
            "successThreshold": 1,
            "failureThreshold": 3,
        },
        "volumeMounts": [
            {
                "name": "kube-api-access",
                "readOnly": True,
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
            }
        ],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
    }


@dataclass
class Workload:
    kind: str  # Deployment | StatefulSet | Job | DaemonSet | bare
    namespace: str
    name: str
    uid: str
    replicas: int
    pod_owner_kind: str = ""
    pod_owner_name: str = ""
    pod_owner_uid: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    objects: list[Obj] = field(default_factory=list)


def pod_obj(
    wl: Workload, name: str, node: str, created: datetime, ordinal: int, extra: Obj | None = None
) -> Obj:
    when = ts(created)
    meta: Obj = {
        "name": name,
        "namespace": wl.namespace,
        "uid": str(uuid.UUID(int=random.getrandbits(128))),
        "creationTimestamp": when,
        "labels": dict(wl.labels),
        "annotations": {
            "prometheus.io/scrape": "true",
            "prometheus.io/port": "8080",
            "kubectl.kubernetes.io/default-container": "app",
        },
        "managedFields": [
            _managed(
                "kube-controller-manager",
                "Update",
                when,
                {
                    "f:metadata": {
                        "f:labels": {f"f:{k}": {} for k in wl.labels},
                        "f:ownerReferences": {f'k:{{"uid":"{wl.pod_owner_uid}"}}': {}},
                    },
                    "f:spec": {
                        "f:containers": {
                            'k:{"name":"app"}': {".": {}, "f:image": {}, "f:name": {}},
                            'k:{"name":"sidecar"}': {".": {}, "f:image": {}, "f:name": {}},
                        }
                    },
                },
            ),
            _managed(
                "kubelet",
                "Update",
                when,
                {
                    "f:status": {
                        "f:conditions": {
                            f'k:{{"type":"{t}"}}': {".": {}, "f:status": {}, "f:type": {}}
                            for t in ("Ready", "ContainersReady", "Initialized", "PodScheduled")
                        },
                        "f:containerStatuses": {},
                        "f:hostIP": {},
                        "f:podIP": {},
                        "f:startTime": {},
                    }
                },
                "status",
            ),
        ],
    }
    if wl.pod_owner_kind:
        meta["ownerReferences"] = [
            {
                "apiVersion": "batch/v1" if wl.pod_owner_kind == "Job" else "apps/v1",
                "kind": wl.pod_owner_kind,
                "name": wl.pod_owner_name,
                "uid": wl.pod_owner_uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    phase = "Succeeded" if wl.kind == "Job" and ordinal % 2 else "Running"
    running = phase == "Running"
    ip = f"10.{ordinal // 65536 % 256}.{ordinal // 256 % 256}.{ordinal % 256}"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "containers": [
                _container("app", f"registry.example.com/{wl.namespace}/{wl.name}:v1.2.3", 8080),
                _container("sidecar", "registry.example.com/platform/proxy:v2.0.1", 15001),
            ],
            "volumes": [
                {
                    "name": "kube-api-access",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                        ],
                    },
                }
            ],
            "restartPolicy": "Never" if wl.kind == "Job" else "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "nodeName": node,
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
            "priority": 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {
            "phase": phase,
            "conditions": [
                {
                    "type": t,
                    "status": "True" if running or t != "Ready" else "False",
                    "lastProbeTime": None,
                    "lastTransitionTime": when,
                }
                for t in (
                    "PodReadyToStartContainers",
                    "Initialized",
                    "Ready",
                    "ContainersReady",
                    "PodScheduled",
                )
            ],
            "hostIP": "10.200.0.1",
            "hostIPs": [{"ip": "10.200.0.1"}],
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": when,
            "containerStatuses": [
                {
                    "name": c,
                    "state": {"running": {"startedAt": when}}
                    if running
                    else {
                        "terminated": {
                            "exitCode": 0,
                            "reason": "Completed",
                            "startedAt": when,
                            "finishedAt": when,
                            "containerID": f"containerd://{uuid.UUID(int=ordinal * 2 + j).hex}",
                        }
                    },
                    "lastState": {},
                    "ready": running,
                    "restartCount": 0,
                    "image": f"registry.example.com/{wl.namespace}/{wl.name}:v1.2.3",
                    "imageID": f"registry.example.com/{wl.namespace}/{wl.name}@sha256:"
                    + hashlib.sha256(wl.name.encode()).hexdigest(),
                    "containerID": f"containerd://{uuid.UUID(int=ordinal * 2 + j).hex}",
                    "started": running,
                }
                for j, c in enumerate(("app", "sidecar"))
            ],
            "qosClass": "Burstable",
        },
    }
    if extra:
        meta.update(extra)
    return pod


def _template(labels: dict[str, str]) -> Obj:
    return {
        "metadata": {"labels": labels},
        "spec": {
            "containers": [{"name": "app", "image": "registry.example.com/app:v1"}],
            "restartPolicy": "Always",
        },
    }


def workloads(
    n_pods: int, n_nodes: int, created: datetime, tag: str = "", daemonset: bool = True
) -> list[Workload]:
    """Owners of every kind: one DaemonSet (a pod per node; not with `daemonset=False`), then
    Deployments (80% of the rest), StatefulSets (10%), Jobs (7%), bare pods (3%), spread over
    NAMESPACES namespaces. `tag` keeps the names and UIDs of a second set apart."""
    rnd = random.Random(f"42{tag}" if tag else 42)
    out: list[Workload] = []
    when = ts(created)

    def uid() -> str:
        return str(uuid.UUID(int=rnd.getrandbits(128)))

    ds_uid = uid()
    ds = Workload(
        "DaemonSet",
        "kube-system",
        "node-agent",
        ds_uid,
        n_nodes,
        "DaemonSet",
        "node-agent",
        ds_uid,
        {"app": "node-agent"},
    )
    ds.objects.append(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {
                "name": "node-agent",
                "namespace": "kube-system",
                "uid": ds_uid,
                "creationTimestamp": when,
                "generation": 1,
            },
            "spec": {
                "selector": {"matchLabels": {"app": "node-agent"}},
                "template": _template({"app": "node-agent"}),
            },
            "status": {"desiredNumberScheduled": n_nodes, "numberReady": n_nodes},
        }
    )
    if daemonset:
        out.append(ds)
    rest = max(0, n_pods - n_nodes) if daemonset else n_pods
    budget = {
        "Deployment": int(rest * 0.80),
        "StatefulSet": int(rest * 0.10),
        "Job": int(rest * 0.07),
    }
    budget["bare"] = rest - sum(budget.values())
    k = 0
    for kind, total in budget.items():
        while total > 0:
            ns = f"team-{k % NAMESPACES:03d}"
            size = {
                "Deployment": rnd.choice((3, 5, 8, 12, 20)),
                "StatefulSet": rnd.choice((3, 5)),
                "Job": rnd.choice((2, 4)),
                "bare": 1,
            }[kind]
            size = min(size, total)
            total -= size
            name = f"{kind.lower()}-{tag}{k:05d}"
            k += 1
            if kind == "Deployment":
                d_uid, rs_uid = uid(), uid()
                pth = hashlib.sha256(name.encode()).hexdigest()[:10]
                rs_name = f"{name}-{pth}"
                labels = {"app": name, "pod-template-hash": pth}
                wl = Workload(kind, ns, name, d_uid, size, "ReplicaSet", rs_name, rs_uid, labels)
                wl.objects += [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "metadata": {
                            "name": name,
                            "namespace": ns,
                            "uid": d_uid,
                            "creationTimestamp": when,
                            "generation": 1,
                            "labels": {"app": name},
                        },
                        "spec": {
                            "replicas": size,
                            "selector": {"matchLabels": {"app": name}},
                            "template": _template({"app": name}),
                            "strategy": {"type": "RollingUpdate"},
                        },
                        "status": {"replicas": size, "readyReplicas": size},
                    },
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "metadata": {
                            "name": rs_name,
                            "namespace": ns,
                            "uid": rs_uid,
                            "creationTimestamp": when,
                            "generation": 1,
                            "labels": labels,
                            "ownerReferences": [
                                {
                                    "apiVersion": "apps/v1",
                                    "kind": "Deployment",
                                    "name": name,
                                    "uid": d_uid,
                                    "controller": True,
                                    "blockOwnerDeletion": True,
                                }
                            ],
                        },
                        "spec": {
                            "replicas": size,
                            "selector": {"matchLabels": labels},
                            "template": _template(labels),
                        },
                        "status": {"replicas": size, "readyReplicas": size},
                    },
                ]
            elif kind == "StatefulSet":
                s_uid = uid()
                labels = {"app": name}
                wl = Workload(kind, ns, name, s_uid, size, "StatefulSet", name, s_uid, labels)
                wl.objects.append(
                    {
                        "apiVersion": "apps/v1",
                        "kind": "StatefulSet",
                        "metadata": {
                            "name": name,
                            "namespace": ns,
                            "uid": s_uid,
                            "creationTimestamp": when,
                            "generation": 1,
                        },
                        "spec": {
                            "replicas": size,
                            "selector": {"matchLabels": labels},
                            "serviceName": name,
                            "template": _template(labels),
                            "podManagementPolicy": "OrderedReady",
                        },
                        "status": {"replicas": size, "readyReplicas": size},
                    }
                )
            elif kind == "Job":
                j_uid = uid()
                labels = {
                    "batch.kubernetes.io/controller-uid": j_uid,
                    "batch.kubernetes.io/job-name": name,
                    "job-name": name,
                    "controller-uid": j_uid,
                }
                wl = Workload(kind, ns, name, j_uid, size, "Job", name, j_uid, labels)
                wl.objects.append(
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "metadata": {
                            "name": name,
                            "namespace": ns,
                            "uid": j_uid,
                            "creationTimestamp": when,
                            "generation": 1,
                        },
                        "spec": {
                            "parallelism": size,
                            "completions": size * 2,
                            "backoffLimit": 6,
                            "selector": {
                                "matchLabels": {"batch.kubernetes.io/controller-uid": j_uid}
                            },
                            "template": _template(labels),
                            "podReplacementPolicy": "TerminatingOrFailed",
                        },
                        "status": {"active": size // 2, "succeeded": size - size // 2},
                    }
                )
            else:
                wl = Workload("bare", ns, name, "", 1, labels={"app": name})
            out.append(wl)
    return out


# --- etcd + kube-apiserver ---


@dataclass
class Server:
    bindir: Path
    workdir: Path
    etcd_port: int = 0
    api_port: int = 0
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    apiserver_args: tuple[str, ...] = ()  # more kube-apiserver flags (bench/watch.py's)
    # stops etcd and kube-apiserver and removes the folder if this process dies before `stop`
    _reaper: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig"

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.api_port}"

    def _guard(self) -> None:
        """Before the first server starts: its reaper (bench/reaper.py), which kills every
        process naming this folder (etcd's data, kube-apiserver's certificates) and removes it
        if this process dies without `stop`: a Ctrl-C'd or killed benchmark leaves nothing."""
        if self._reaper is None:
            self._reaper = reaper.start(
                {
                    "delete": [],
                    "env": {},
                    "workdir": str(self.workdir),
                    "keep_logs_from": [],
                    "keep_logs_to": None,
                }
            )

    def start_etcd(self) -> None:
        self._guard()
        self.etcd_port = free_port()
        peer = free_port()
        log = open(self.workdir / "etcd.log", "wb")  # noqa: SIM115 (closed once handed over)
        self.procs.append(
            subprocess.Popen(
                [
                    str(self.bindir / "etcd"),
                    "--data-dir",
                    str(self.workdir / "etcd"),
                    "--listen-client-urls",
                    f"http://127.0.0.1:{self.etcd_port}",
                    "--advertise-client-urls",
                    f"http://127.0.0.1:{self.etcd_port}",
                    "--listen-peer-urls",
                    f"http://127.0.0.1:{peer}",
                    "--initial-advertise-peer-urls",
                    f"http://127.0.0.1:{peer}",
                    "--initial-cluster",
                    f"default=http://127.0.0.1:{peer}",
                    "--max-txn-ops",
                    "2000",
                    "--max-request-bytes",
                    str(32 * 1024 * 1024),
                    "--quota-backend-bytes",
                    str(8 * 1024**3),
                    "--unsafe-no-fsync",
                    "--log-level",
                    "warn",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
        log.close()  # the process has its own descriptor of it
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.etcd_port}/health", timeout=2)
                return
            except OSError:
                if self.procs[-1].poll() is not None:
                    break  # it exited: waiting longer will not help
                time.sleep(0.2)
        self.stop()  # its reaper stands down: the folder and the log named here stay
        raise RuntimeError(f"etcd did not start; see {self.workdir / 'etcd.log'}")

    def start_apiserver(self) -> None:
        self._guard()
        self.api_port = free_port()
        pki = self.workdir / "pki"
        pki.mkdir(exist_ok=True)
        key = pki / "sa.key"
        if not key.exists():
            subprocess.run(
                ["openssl", "genrsa", "-out", str(key), "2048"], check=True, capture_output=True
            )
        (pki / "tokens.csv").write_text(f'{TOKEN},bench-admin,bench-admin,"system:masters"\n')
        log = open(self.workdir / "apiserver.log", "wb")  # noqa: SIM115 (closed once handed over)
        self.procs.append(
            subprocess.Popen(
                [
                    str(self.bindir / "kube-apiserver"),
                    "--etcd-servers",
                    f"http://127.0.0.1:{self.etcd_port}",
                    "--bind-address",
                    "127.0.0.1",
                    "--advertise-address",
                    "127.0.0.1",
                    "--secure-port",
                    str(self.api_port),
                    "--cert-dir",
                    str(pki),
                    "--token-auth-file",
                    str(pki / "tokens.csv"),
                    "--authorization-mode",
                    "RBAC",
                    "--service-account-issuer",
                    "https://kubernetes.default.svc",
                    "--service-account-key-file",
                    str(key),
                    "--service-account-signing-key-file",
                    str(key),
                    "--service-cluster-ip-range",
                    "10.96.0.0/16",
                    "--disable-admission-plugins",
                    "ServiceAccount",
                    "--enable-priority-and-fairness=false",
                    "--max-requests-inflight",
                    "1000",
                    "--max-mutating-requests-inflight",
                    "500",
                    "--v",
                    "1",
                    *self.apiserver_args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
        log.close()  # the process has its own descriptor of it
        self.kubeconfig.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [
                        {
                            "name": "bench",
                            # kube-apiserver's self-signed serving certificate (--cert-dir)
                            "cluster": {
                                "server": self.url,
                                "certificate-authority": str(pki / "apiserver.crt"),
                            },
                        }
                    ],
                    "users": [{"name": "bench", "user": {"token": TOKEN}}],
                    "contexts": [
                        {"name": "bench", "context": {"cluster": "bench", "user": "bench"}}
                    ],
                    "current-context": "bench",
                }
            )
        )
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                if self.get("/readyz", raw=True) == b"ok":
                    return
            except OSError:
                pass
            if self.procs[-1].poll() is not None:
                break
            time.sleep(0.5)
        self.stop()  # as for etcd: the log named here stays
        raise RuntimeError(f"kube-apiserver did not become ready; see {self.workdir}/apiserver.log")

    # --- a raw client (also the benchmark's floor: no decoding) ---

    # One TLS context for the server (no CA store: the benchmark's own API server) and one
    # kept-open connection per thread, as any client keeps them. A context and a handshake per
    # request cost ~50 ms of CPU each: 5,000 lease renewals took minutes, and the floor's page
    # reads carried a handshake each.
    _local: threading.local = field(default_factory=threading.local, repr=False)

    def _conn(self) -> http.client.HTTPSConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPSConnection("127.0.0.1", self.api_port, context=TLS, timeout=300)
            self._local.conn = conn
        return conn

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        ctype: str = "application/json",
        accept: str = "application/json",
    ) -> tuple[int, bytes]:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": ctype, "Accept": accept}
        for attempt in (1, 2):
            conn = self._conn()
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                return resp.status, resp.read()
            except (http.client.HTTPException, ConnectionError):
                # a kept-open connection the server closed: once more on a new one
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def get(self, path: str, raw: bool = False, accept: str = "application/json") -> Any:
        status, data = self.call("GET", path, accept=accept)
        if status != 200:
            raise OSError(f"GET {path}: {status} {data[:200]!r}")
        return data if raw else json.loads(data)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
        for proc in reversed(self.procs):
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()
        if self._reaper is not None:
            reaper.stand_down(self._reaper)
            self._reaper = None

    # --- seeding straight into etcd ---

    def etcd_put_all(self, kvs: list[tuple[str, bytes]], batch: int = 1000) -> None:
        def put(chunk: list[tuple[str, bytes]]) -> None:
            body = json.dumps(
                {
                    "success": [
                        {
                            "requestPut": {
                                "key": base64.b64encode(k.encode()).decode(),
                                "value": base64.b64encode(v).decode(),
                            }
                        }
                        for k, v in chunk
                    ]
                }
            ).encode()
            conn = http.client.HTTPConnection("127.0.0.1", self.etcd_port, timeout=300)
            try:
                conn.request(
                    "POST", "/v3/kv/txn", body=body, headers={"Content-Type": "application/json"}
                )
                resp = conn.getresponse()
                out = resp.read()
                if resp.status != 200:
                    raise RuntimeError(f"etcd txn failed: {resp.status} {out[:300]!r}")
            finally:
                conn.close()

        chunks = [kvs[i : i + batch] for i in range(0, len(kvs), batch)]
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(put, chunks))


RESOURCE_KEYS = {
    "Node": "minions",
    "Namespace": "namespaces",
    "Lease": "leases",
    "Pod": "pods",
    "Deployment": "deployments",
    "ReplicaSet": "replicasets",
    "StatefulSet": "statefulsets",
    "DaemonSet": "daemonsets",
    "Job": "jobs",
}


def etcd_key(obj: Obj) -> str:
    meta = obj["metadata"]
    resource = RESOURCE_KEYS[obj["kind"]]
    if meta.get("namespace"):
        return f"/registry/{resource}/{meta['namespace']}/{meta['name']}"
    return f"/registry/{resource}/{meta['name']}"


def _unique_name(prefix: str, r: int, taken: set[str]) -> str:
    """A controller-like random suffix (5 characters), unique like the API server makes it."""
    salt = 0
    while True:
        suffix = hashlib.sha256(f"{prefix}/{r}/{salt}".encode()).hexdigest()[:5]
        name = f"{prefix}-{suffix}"
        if name not in taken:
            taken.add(name)
            return name
        salt += 1


def seed_objects(size: Size, created: datetime) -> list[Obj]:
    n_nodes = size.nodes
    random.seed(n_nodes * 1_000_003 + size.pods)
    objs: list[Obj] = [namespace_obj(f"team-{k:03d}", created) for k in range(NAMESPACES)]
    objs += [node_obj(i, created) for i in range(n_nodes)]
    objs += [lease_obj(i, created) for i in range(n_nodes)]
    ordinal = 0
    node_of = 0
    held = 0
    taken: set[str] = set()
    for wl in workloads(size.pods, n_nodes, created):
        objs += wl.objects
        for r in range(wl.replicas):
            if wl.kind == "DaemonSet":
                node, name = f"node-{r:05d}", f"node-agent-{r:05d}"
            else:
                node = f"node-{size.node_of(node_of):05d}"
                node_of += 1
                name = _pod_name(wl, r, taken)
            extra = None
            # Finalizer-held Terminating pods on healthy nodes (the last nodes never fail).
            if wl.kind == "Deployment" and held < FINALIZER_HELD and ordinal % 97 == 5:
                node = f"node-{n_nodes - 1 - held % reserve(n_nodes):05d}"
                deleted = created + timedelta(seconds=60)
                extra = {
                    "deletionTimestamp": ts(deleted),
                    "deletionGracePeriodSeconds": 30,
                    "finalizers": ["example.com/backup-before-delete"],
                }
                held += 1
            objs.append(pod_obj(wl, name, node, created, ordinal, extra))
            ordinal += 1
    # The extra healthy pods: only on nodes the benchmark never fails.
    healthy = list(range(min(MAX_FAILED, n_nodes - reserve(n_nodes)), n_nodes))
    for wl in workloads(size.extra, n_nodes, created, tag="x", daemonset=False):
        objs += wl.objects
        for r in range(wl.replicas):
            node = f"node-{healthy[node_of % len(healthy)]:05d}"
            node_of += 1
            objs.append(pod_obj(wl, _pod_name(wl, r, taken), node, created, ordinal))
            ordinal += 1
    return objs


def _pod_name(wl: Workload, replica: int, taken: set[str]) -> str:
    if wl.kind == "StatefulSet":
        return f"{wl.name}-{replica}"
    if wl.kind == "bare":
        return wl.name
    return _unique_name(wl.pod_owner_name, replica, taken)


def manifest_path(data: Path) -> Path:
    """What was seeded (counts the benchmark checks the diagnosis against)."""
    return data.with_name(data.name + ".json")


def manifest(size: Size) -> dict[str, int]:
    return dict(json.loads(manifest_path(cache_dir(size)).read_text()))


def cache_dir(size: Size) -> Path:
    return CACHE / f"etcd-v{SEED_FORMAT}-{size.key}"


def seeded_etcd(bindir: Path, size: Size, log: Any = print) -> Path:
    """The etcd data folder of a seeded cluster of this size (seeded once, then cached)."""
    target = cache_dir(size)
    if (target / "member").exists() and manifest_path(target).exists():
        return target
    CACHE.mkdir(parents=True, exist_ok=True)
    work = target.with_name(target.name + ".tmp")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    server = Server(bindir, work)
    t0 = time.monotonic()
    server.start_etcd()
    try:
        created = datetime.now(UTC) - timedelta(days=3)
        objs = seed_objects(size, created)
        kvs = [(etcd_key(o), json.dumps(o, separators=(",", ":")).encode()) for o in objs]
        server.etcd_put_all(kvs)
        held = sum(1 for o in objs if o["metadata"].get("deletionTimestamp"))
        manifest_path(target).write_text(
            json.dumps({"nodes": size.nodes, "pods": size.total, "terminatingElsewhere": held})
            + "\n"
        )
        log(
            f"seeded {len(objs)} objects ({sum(len(v) for _, v in kvs) / 2**20:.0f} MiB) "
            f"in {time.monotonic() - t0:.0f}s"
        )
    finally:
        server.stop()
    shutil.rmtree(target, ignore_errors=True)
    (work / "etcd").rename(target)
    shutil.rmtree(work, ignore_errors=True)
    return target


def start(
    bindir: Path,
    size: Size,
    workdir: Path,
    log: Any = print,
    apiserver_args: tuple[str, ...] = (),
) -> Server:
    """A running etcd + kube-apiserver on a fresh copy of the cached seeded data."""
    data = seeded_etcd(bindir, size, log)
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    shutil.copytree(data, workdir / "etcd")
    server = Server(bindir, workdir, apiserver_args=apiserver_args)
    server.start_etcd()
    t0 = time.monotonic()
    server.start_apiserver()
    log(f"kube-apiserver ready in {time.monotonic() - t0:.0f}s")
    t0 = time.monotonic()
    renew_leases(server, size.nodes)
    log(f"{size.nodes} node leases renewed in {time.monotonic() - t0:.0f}s")
    return server


HEALTHY_LEASE_SECONDS = 3600


def renew_leases(server: Server, n_nodes: int) -> None:
    """Every node's kubelet renews its lease now, with a lease of an hour. The seeded leases
    were renewed when the cluster was seeded (days ago, cached): Ready nodes behind them are
    what a node lifecycle controller that stopped acting leaves, and the plugin lists every
    one (lease-not-renewed; 4,980 of 5,000 nodes in a run of 2026-12-02). The benchmark has no
    kubelets to renew each lease every 10 s (5,000 writes per 10 s on the API server it
    measures); a kubelet's lease duration is its own setting (nodeLeaseDurationSeconds), and an
    hour covers a benchmark's size. Failed nodes get a 40 s lease, stale (fail_nodes)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    def renew(i: int) -> None:
        status, out = server.call(
            "PATCH",
            f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-{i:05d}",
            {"spec": {"renewTime": now, "leaseDurationSeconds": HEALTHY_LEASE_SECONDS}},
            "application/merge-patch+json",
        )
        assert status == 200, out[:300]

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(renew, range(n_nodes)))


def fail_nodes(server: Server, n_nodes: int, count: int, already: int = 0) -> None:
    """Make nodes [already, count) look dead, as the node lifecycle controller leaves them: Ready
    Unknown, unreachable taints, a stale lease; and half of their pods deleted by taint eviction
    (Terminating: no kubelet confirms)."""
    now = datetime.now(UTC)
    stale = now - timedelta(minutes=6)
    names = [f"node-{i:05d}" for i in range(already, min(count, n_nodes - reserve(n_nodes)))]

    def fail(name: str) -> None:
        node = server.get(f"/api/v1/nodes/{name}")
        conds = node["status"]["conditions"]
        for c in conds:
            c["status"] = "Unknown"
            c["reason"] = "NodeStatusUnknown"
            c["message"] = "Kubelet stopped posting node status."
            c["lastHeartbeatTime"] = ts(stale)
            c["lastTransitionTime"] = ts(stale + timedelta(seconds=40))
        status, out = server.call(
            "PATCH",
            f"/api/v1/nodes/{name}/status",
            {"status": {"conditions": conds}},
            "application/strategic-merge-patch+json",
        )
        assert status == 200, out[:300]
        taints = [
            {
                "key": "node.kubernetes.io/unreachable",
                "effect": e,
                "timeAdded": ts(stale + timedelta(seconds=40)),
            }
            for e in ("NoSchedule", "NoExecute")
        ]
        status, out = server.call(
            "PATCH",
            f"/api/v1/nodes/{name}",
            {"spec": {"taints": taints}},
            "application/merge-patch+json",
        )
        assert status == 200, out[:300]
        status, out = server.call(
            "PATCH",
            f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}",
            {
                "spec": {
                    "renewTime": stale.strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
                    "leaseDurationSeconds": 40,
                }
            },
            "application/merge-patch+json",
        )
        assert status == 200, out[:300]
        pods = server.get(f"/api/v1/pods?fieldSelector=spec.nodeName%3D{name}")["items"]
        for i, pod in enumerate(sorted(pods, key=lambda p: p["metadata"]["name"])):
            if (
                i % 2 == 0
                and pod["metadata"].get("ownerReferences", [{}])[0].get("kind") != "DaemonSet"
            ):
                meta = pod["metadata"]
                status, out = server.call(
                    "DELETE",
                    f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                    {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 30},
                )
                assert status in (200, 202), out[:300]

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(fail, names))
