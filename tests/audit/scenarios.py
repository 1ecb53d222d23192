"""The audit's scenario generator: one workload in its own namespace per scenario, drawn from a
seeded random.Random, so that (seed, index, profile) alone rebuilds it.

Dimensions: controller kind and its settings (replicas, podManagementPolicy,
podReplacementPolicy, podFailurePolicy, completions), finalizers on the pods, not-ready /
unreachable tolerations (absent = the apiserver's 300 s default, short, forever, 0), placement
(preferred, nodeSelector- or required-affinity-pinned to the node that fails) and one change after
the failure (scale up, down, to 0, a rollout of a new pod template, owner deletion, Job
suspension, bare pod deletion), made early (before the first diagnosis) or late (after the
eviction window, before the second); the update strategy that rollout meets (Deployment
RollingUpdate/Recreate, StatefulSet RollingUpdate/OnDelete/partition). docs/audit.md maps these
dimensions to the controllers' code, and names those not drawn yet.

Some draws come from what Kubernetes' own e2e tests expect of node failure (facts re-tested
here, no code taken): test/e2e/apps/network_partition.go — a ReplicationController's pod on an
unreachable node is replaced while the old one stays (grace > 0), a StatefulSet pod is *not*
deleted from the apiserver during the partition and comes back once the node is Ready again, a
Job keeps `parallelism` pods running during the partition; test/e2e/node/taints.go — a pod is
evicted tolerationSeconds after the NoExecute taint, never with a toleration without seconds;
test/e2e/apps/job.go — with podReplacementPolicy Failed a replacement waits for the old pod to
be Failed. The `KUBERNETES_E2E` draws below make those situations frequent.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import Any

from tests.e2e import workloads as w

Obj = dict[str, Any]
FINALIZER = "audit.nodefail/hold"
DEFAULT_TOLERATION = 300  # DefaultTolerationSeconds admission plugin

# "anti": required pod anti-affinity on the hostname, preferred affinity to the failable node;
# with ANTI_REPLICAS pods on the zone's 7 nodes (5 healthy, 2 failable; full profile only).
ANTI_KINDS = ("deployment", "sts-ordered", "sts-parallel")
ANTI_REPLICAS = 6

KINDS = (
    "deployment",
    "sts-ordered",
    "sts-parallel",
    "job",
    "job-failed",
    "job-pfp",
    "cronjob",
    "daemonset",
    "bare",
)
CHANGES: dict[str, tuple[str, ...]] = {
    # (and "rollout" for the ROLLOUT_KINDS, drawn apart: see generate)
    "deployment": ("none", "scale-up", "scale-down", "scale-zero", "delete-owner"),
    "sts-ordered": ("none", "scale-up", "scale-down", "scale-zero", "delete-owner"),
    "sts-parallel": ("none", "scale-up", "scale-down", "scale-zero", "delete-owner"),
    "job": ("none", "suspend", "delete-owner"),
    "job-failed": ("none", "suspend", "delete-owner"),
    "job-pfp": ("none", "suspend", "delete-owner"),
    "cronjob": ("none", "delete-owner"),
    "daemonset": ("none", "delete-owner"),
    "bare": ("none", "delete-pod"),
}
# (and "bind-late" for bare pods from seed 2063: see generate)
# A rollout (a new pod template) replaces a Deployment's or StatefulSet's pods, the stuck one too:
# drawn from a Random of its own, after the others, so the seeds of earlier runs still make the
# scenarios they made (the rollout then takes the place of their change).
ROLLOUT_KINDS = ("deployment", "sts-ordered", "sts-parallel", "daemonset")
ROLLOUT_SHARE = 0.3

# Update strategies (drawn from a Random of their own, like rollouts; from seed 2033 on): what a
# rollout does with the pod on the dead node (pkg/controller/deployment/recreate.go and
# rolling.go; statefulset/stateful_set_control.go: OnDelete updates nothing, a partition at or
# above an ordinal keeps its revision; daemon/update.go).
STRATEGIES: dict[str, tuple[str, ...]] = {
    "deployment": ("RollingUpdate", "Recreate"),
    "sts-ordered": ("RollingUpdate", "OnDelete", "partition"),
    "sts-parallel": ("RollingUpdate", "OnDelete", "partition"),
}

# From seed 2037 on (each from a Random of its own, so earlier seeds still make the scenarios they
# made), the map's rows that were not drawn before (docs/audit.md):
MAP_SEED = 2037
# - time at other scales: grace periods and tolerations of minutes to a day (row 27). A toleration
#   this long is not waited for: its eviction is judged as not happening before the window ends.
LONG_GRACE = (900, 3600)
LONG_TOLERATION = (900, 3600, 86400)
LONG_SHARE = 0.25
# - a paused Deployment (row 8: its ReplicaSet still replaces an evicted pod, a rollout does not
#   progress) and a StatefulSet rolling update with maxUnavailable (row 11)
MORE_STRATEGIES: dict[str, tuple[str, ...]] = {
    "deployment": ("paused",),
    "sts-ordered": ("maxUnavailable",),
    "sts-parallel": ("maxUnavailable",),
}
# - a Job's activeDeadlineSeconds reached while its pod is on the dead node (row 17: FailureTarget,
#   the pod deleted, the Job held open), drawn as a change;
JOB_KINDS = ("job", "job-failed", "job-pfp")
DEADLINE_SHARE = 0.3
# - a Job another controller manages (row 18: spec.managedBy; the built-in Job controller leaves
#   it alone). The harness plays that controller: it creates the Job's pods and nothing else.
MANAGED_BY = "audit.nodefail/external"
MANAGED_SHARE = 0.08

# - what a pod tolerates beyond the two keys (from seed 2038): every taint (`operator: Exists`,
#   no key), so the out-of-service taint too, and the NoSchedule taints of a NotReady node: it is
#   never evicted, a replacement may be scheduled onto the dead node, and remediate's
#   out-of-service taint does not release it (force deletion does)
WILDCARD_SEED = 2038
WILDCARD_SHARE = 0.15

# - graceful node shutdown (from seed 2046, map row 24): the kubelet's shutdown manager sets
#   each pod Failed (reason Terminated, DisruptionTarget TerminationByKubelet) before the machine
#   goes off. kwok has no shutdown manager, so the harness plays its API effect: the status
#   written, right after the kubelet stops (change `shutdown`, early). Such a pod holds nothing:
#   not stuck, and its owner replaces it (a StatefulSet deletes it at once: phase Failed).
SHUTDOWN_SEED = 2046
SHUTDOWN_SHARE = 0.1
SHUTDOWN_REASON = "TerminationByKubelet"
SHUTDOWN_MESSAGE = "Pod was terminated in response to imminent node shutdown."

# - a CronJob on a live schedule (from seed 2049, map row 19), concurrencyPolicy Replace: its
#   Job is made as the controller makes one (`kubectl create job --from`, then listed in the
#   CronJob's status.active, which is what the controller acts on), and with the early changes
#   the CronJob is resumed with its next run a minute or two ahead, inside the eviction window
#   (change `cron-run`): that run deletes the Job, and the garbage collector its pods.
CRON_SEED = 2049
CRON_SHARE = 0.5

# From seed 2053 on (each from a Random of its own):
# - the owner deleted with each propagation the garbage collector knows (map row 22,
#   garbagecollector.go): background (the default, drawn alone before), foreground (the owner
#   stays, finalizer foregroundDeletion, until every dependent with blockOwnerDeletion is gone
#   from the API: the Terminating pod on the dead node included) and orphan (the owner goes, the
#   pod stays, its owner reference removed: owned by nothing);
# - a live CronJob's concurrencyPolicy Forbid beside Replace (map row 19): the run the change
#   brings a minute or two ahead is skipped while status.active lists the Job (JobAlreadyActive).
CASCADE_SEED = 2053
CASCADES = ("background", "foreground", "orphan")
LIVE_CRON_POLICIES = ("Replace", "Forbid")

# From seed 2059 on (a Random of its own): the order of a pod's tolerations (map row 1). The
# taint-eviction controller reads, per taint, the first toleration in the list that matches it:
# `forever-first` puts a pair without limit before the drawn ones (never evicted, whatever
# they say), `limited-first` puts the drawn ones before such a pair (their time is the one read).
ORDER_SEED = 2059
ORDERS = ("forever-first", "limited-first")
ORDER_SHARE = 0.25
ORDERED = ("short", "zero", "long")

# From seed 2060 on (a Random of its own): a pod template that sets spec.nodeName to the failable
# node (map row 26): every pod the owner makes is bound there, no scheduler involved, so each
# replacement is made on the dead node again, evicted by its tolerations, and made again.
BIND_SEED = 2060
BIND_KINDS = ("deployment", "sts-ordered", "sts-parallel", "job", "job-failed", "job-pfp")
BIND_SHARE = 0.2

ALL_KINDS = (*KINDS, "job-managed")

# From seed 2063 on (a Random of its own): a StatefulSet whose pods each mount a ReadWriteOnce CSI
# volume (map row 25, attach-detach): the attach-detach controller attaches it to the pod's node,
# keeps it there while a pod object on that node uses it, force-detaches it six minutes after the
# last one is gone from a node that is not Ready and last reported it mounted, at once under the
# out-of-service taint, and attaches it nowhere else meanwhile (Multi-Attach). kwok plays neither
# the CSI attacher nor the kubelet's volume manager: tests/audit/attach.py plays their API
# effects, and keeps such a pod from starting until its volume is attached to its node.
VOLUME_SEED = 2063
VOLUME_KINDS = ("sts-ordered", "sts-parallel")
VOLUME_SHARE = 0.5
# - and a pod bound to the node by hand after it was tainted (map row 2, `bind-late`: a bare pod
#   made with spec.nodeName, no scheduler, in the early changes): the taint-eviction controller
#   counts its tolerations from when it first sees the pod there, not from the taint
BIND_LATE_SHARE = 0.7
# From seed 2071 on (a Random of its own): a NoExecute taint added to the failed nodes after
# their unreachable taint, by another owner (a tool that writes timeAdded), in one regular batch
# per seed (tests/audit/latetaint.py; map row 1). Each pod tolerates it without limit, for a
# few seconds (a shorter limit does not move an eviction already set; it starts one for a pod
# that tolerates the node's own taints without limit), or not at all (evicted at once). A pod
# its owner makes on that node again (spec.nodeName in the template, a DaemonSet) tolerates it
# without limit: one evicted each time would be made again, a pod every few seconds.
LATE_SEED = 2071
LATE_TAINT = "audit.nodefail/late"
LATE_CHOICES = ("forever", "limited", "none")
LATE_WEIGHTS = (0.5, 0.35, 0.15)
LATE_SECONDS = (3, 20)
# the nodes whose kwok holds such a pod until its volume is attached (the batch's failable nodes
# and its storage node: run.Batch) carry this label, and the storage node this taint, which only
# the volume pods tolerate (so that no other scenario's placement changes)
ATTACH_LABEL = "audit.nodefail/attach"
STORAGE_TAINT = "audit.nodefail/storage"
WAIT_ATTACH = "audit.nodefail/wait-attach"  # a pod's annotation until its volume is attached
VOLUME_CLASS = "audit-manual"  # no such StorageClass: each PV is bound to its claim ahead
SPARE_VOLUMES = 2  # a scale-up's ordinals


# From this seed on the three remedies take turns (seed % 3): the out-of-service taint, force
# deletion, deleting the Node (PodGC removes every pod of it; the harness registers the Node
# again when its kubelet returns, as a kubelet does).
REMEDY_SEED = 2041
REMEDIES = ("out-of-service", "force-delete", "delete-node")


def remedy(seed: int) -> str:
    """The strategy remediate is judged with on a seed's odd batches: the out-of-service taint;
    from MAP_SEED on, force deletion on even seeds; from REMEDY_SEED on, each of REMEDIES in
    turn (each remedy is a prediction of its own)."""
    if seed >= REMEDY_SEED:
        return REMEDIES[seed % len(REMEDIES)]
    return "force-delete" if seed >= MAP_SEED and seed % 2 == 0 else "out-of-service"


# The situations Kubernetes' e2e tests check (network_partition.go, taints.go, job.go):
# a ReplicaSet, StatefulSet or Job pod on a node that stops, nothing changed afterwards.
KUBERNETES_E2E = (
    ("deployment", "none"),
    ("sts-ordered", "none"),
    ("sts-parallel", "none"),
    ("job", "none"),
    ("job-failed", "none"),
)


@dataclass(frozen=True)
class Scenario:
    seed: int
    index: int
    profile: str  # quick: tolerations of at most 25 s (make test); full: the 300 s default too
    kind: str
    replicas: int
    completions: int  # Jobs only
    toleration: str  # default | short | forever | zero | long | wildcard
    toleration_seconds: int | None  # the seconds it means (None: forever)
    finalizer: bool
    placement: str  # prefer | pin-selector | pin-affinity | anti | pin-nodename
    grace: int
    change: str
    change_at: str  # early | late | -
    node_slot: int  # which of the batch's failable nodes
    strategy: str = "-"  # the update strategy (STRATEGIES); "-": the API's default
    cascade: str = "background"  # delete-owner's propagation policy (CASCADES)
    order: str = "-"  # tolerations beside a pair without limit (ORDERS); "-": none
    volume: str = "-"  # "rwo": each pod mounts a ReadWriteOnce CSI volume (VOLUME_SEED)
    late: str = "-"  # how it tolerates LATE_TAINT (LATE_CHOICES); "-": not drawn
    late_seconds: int | None = None  # "limited": its tolerationSeconds

    @property
    def namespace(self) -> str:
        return f"au-{self.seed}-{self.index}"

    @property
    def app(self) -> str:
        return "w"

    def describe(self) -> str:
        tol = (
            f"{self.toleration}({self.toleration_seconds}s)"
            if self.toleration_seconds is not None
            else self.toleration
        )
        bits = [
            self.kind,
            f"replicas={self.replicas}",
            f"tol={tol}",
            f"grace={self.grace}",
            self.placement,
        ]
        if self.kind.startswith("job"):
            bits.append(f"completions={self.completions}")
        if self.finalizer:
            bits.append("finalizer")
        if self.strategy != "-":
            bits.append(f"strategy={self.strategy}")
        if self.order != "-":
            bits.append(self.order)
        if self.volume != "-":
            bits.append(f"volume={self.volume}")
        if self.late != "-":
            bits.append(
                f"late={self.late}" + (f"({self.late_seconds}s)" if self.late_seconds else "")
            )
        if self.change != "none":
            how = f"/{self.cascade}" if self.cascade != "background" else ""
            bits.append(f"{self.change}{how}@{self.change_at}")
        return " ".join(bits)

    def as_dict(self) -> Obj:
        return {**asdict(self), "namespace": self.namespace, "describe": self.describe()}


def generate(seed: int, index: int, profile: str = "full", node_slots: int = 2) -> Scenario:
    """Scenario number `index` of `seed`: its own Random, so no scenario depends on another."""
    if profile not in ("quick", "full"):
        raise ValueError(f"profile must be quick or full, not {profile!r}")
    rng = random.Random(f"{seed}/{index}/{profile}")
    if rng.random() < 0.2:
        kind, change = rng.choice(KUBERNETES_E2E)
    else:
        kind = rng.choice(KINDS)
        change = rng.choice(CHANGES[kind])
    replicas = 1 if kind in ("daemonset", "bare") else rng.choice((1, 1, 2, 3))
    completions = replicas * rng.choice((1, 2)) if kind.startswith("job") else 0
    if kind == "daemonset":
        toleration, seconds = "forever", None  # the DaemonSet controller adds its own
    else:
        choices = ["short", "short", "forever", "zero"] + (["default"] if profile == "full" else [])
        toleration = rng.choice(choices)
        seconds = {
            "default": DEFAULT_TOLERATION,
            "short": rng.randint(10, 25),
            "forever": None,
            "zero": 0,
        }[toleration]
    placement = rng.choice(("prefer", "prefer", "pin-selector", "pin-affinity"))
    if kind == "daemonset":
        placement = "pin-selector"
    elif profile == "full" and kind in ANTI_KINDS and rng.random() < 0.2:
        # one replica per node, as many replicas as nodes but one: the evicted pod's
        # replacement has no node left (Pending: the scheduler names the anti-affinity)
        placement, replicas = "anti", ANTI_REPLICAS
    change_at = rng.choice(("early", "late")) if change != "none" else "-"
    rollout = random.Random(f"{seed}/{index}/{profile}/rollout")
    if kind in ROLLOUT_KINDS and rollout.random() < ROLLOUT_SHARE:
        change, change_at = "rollout", rollout.choice(("early", "late"))
    strategy = "-"
    if kind in STRATEGIES:
        strategies = STRATEGIES[kind] + (MORE_STRATEGIES[kind] if seed >= MAP_SEED else ())
        strategy = random.Random(f"{seed}/{index}/{profile}/strategy").choice(strategies)
    grace = rng.choice((0, 5, 30))
    finalizer = kind != "daemonset" and rng.random() < 0.25
    if seed >= MAP_SEED:
        more = random.Random(f"{seed}/{index}/{profile}/map")
        if more.random() < MANAGED_SHARE:
            kind, change = "job-managed", more.choice(("none", "delete-owner"))
            change_at = more.choice(("early", "late")) if change != "none" else "-"
            # its pods all on the failable node: nothing recreates one that finishes elsewhere
            placement, replicas = "pin-selector", min(replicas, 3)
            completions, strategy = replicas, "-"
        elif kind in JOB_KINDS and more.random() < DEADLINE_SHARE:
            change, change_at = "deadline", more.choice(("early", "late"))
        if more.random() < LONG_SHARE:
            grace = more.choice(LONG_GRACE)
        if kind != "daemonset" and more.random() < LONG_SHARE:
            toleration, seconds = "long", more.choice(LONG_TOLERATION)
    shutdown = random.Random(f"{seed}/{index}/{profile}/shutdown")
    if seed >= SHUTDOWN_SEED and kind != "job-managed" and shutdown.random() < SHUTDOWN_SHARE:
        change, change_at = "shutdown", "early"
    cron = random.Random(f"{seed}/{index}/{profile}/cron")
    live = change != "shutdown" and cron.random() < CRON_SHARE
    if seed >= CRON_SEED and kind == "cronjob" and live:
        strategy, change, change_at = "Replace", "cron-run", "early"
        if seed >= CASCADE_SEED:
            strategy = random.Random(f"{seed}/{index}/{profile}/policy").choice(LIVE_CRON_POLICIES)
    wildcard = random.Random(f"{seed}/{index}/{profile}/tolerate")
    if seed >= WILDCARD_SEED and kind != "daemonset" and wildcard.random() < WILDCARD_SHARE:
        toleration, seconds = "wildcard", None
    bind = random.Random(f"{seed}/{index}/{profile}/bind")
    # not with tolerations of seconds: each replacement, bound to the dead node, is evicted in
    # its turn and made again, a pod every few seconds (at 0 s, as fast as the two controllers
    # go); minutes to forever keep a batch's pods countable
    bound = seed >= BIND_SEED and kind in BIND_KINDS and placement != "anti"
    if bound and bind.random() < BIND_SHARE and toleration not in ("short", "zero"):
        placement = "pin-nodename"
    order = "-"
    orders = random.Random(f"{seed}/{index}/{profile}/order")
    if seed >= ORDER_SEED and toleration in ORDERED and orders.random() < ORDER_SHARE:
        order = orders.choice(ORDERS)
    late = random.Random(f"{seed}/{index}/{profile}/bind-late")
    loose = seed >= VOLUME_SEED and kind == "bare" and change == "none"
    if loose and late.random() < BIND_LATE_SHARE:
        change, change_at = "bind-late", "early"
    volume = "-"
    volumes = random.Random(f"{seed}/{index}/{profile}/volume")
    mountable = kind in VOLUME_KINDS and placement not in ("anti", "pin-nodename")
    if seed >= VOLUME_SEED and mountable and volumes.random() < VOLUME_SHARE:
        volume = "rwo"
    cascade = "background"
    if seed >= CASCADE_SEED and change == "delete-owner":
        cascade = random.Random(f"{seed}/{index}/{profile}/cascade").choice(CASCADES)
    late_taint, late_seconds = "-", None
    if seed >= LATE_SEED:
        drawn = random.Random(f"{seed}/{index}/{profile}/late-taint")
        late_taint = drawn.choices(LATE_CHOICES, LATE_WEIGHTS)[0]
        if placement == "pin-nodename" or kind == "daemonset" or toleration == "wildcard":
            late_taint = "forever"
        late_seconds = drawn.randint(*LATE_SECONDS) if late_taint == "limited" else None
    return Scenario(
        seed=seed,
        index=index,
        profile=profile,
        kind=kind,
        replicas=replicas,
        completions=completions,
        toleration=toleration,
        toleration_seconds=seconds,
        finalizer=finalizer,
        placement=placement,
        grace=grace,
        change=change,
        change_at=change_at,
        node_slot=index % node_slots,
        strategy=strategy,
        cascade=cascade,
        order=order,
        volume=volume,
        late=late_taint,
        late_seconds=late_seconds,
    )


def _tolerations(s: Scenario) -> list[Obj]:
    if s.late in ("forever", "limited") and s.toleration != "wildcard":
        late: Obj = {"key": LATE_TAINT, "operator": "Exists", "effect": "NoExecute"}
        if s.late_seconds is not None:
            late["tolerationSeconds"] = s.late_seconds
        return [*_node_tolerations(s), late]
    return _node_tolerations(s)


def _node_tolerations(s: Scenario) -> list[Obj]:
    if s.toleration == "default":
        return []  # the admission plugin adds 300 s
    if s.toleration == "forever":
        return w.forever_tolerations()
    if s.toleration == "wildcard":
        return [{"operator": "Exists"}]
    if s.order == "forever-first":
        return w.forever_tolerations() + w.tolerations(s.toleration_seconds)
    if s.order == "limited-first":
        return w.tolerations(s.toleration_seconds) + w.forever_tolerations()
    return w.tolerations(s.toleration_seconds)


def _place(spec: Obj, s: Scenario, node: str) -> None:
    if s.placement == "pin-nodename":
        spec["nodeName"] = node
        return
    if s.placement == "pin-selector":
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
        return
    term = {
        "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]
    }
    if s.placement == "pin-affinity":
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
            }
        }
    elif s.placement == "anti":
        spec["affinity"] = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 100, "preference": term}
                ]
            },
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": s.app}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            },
        }
    else:
        spec["affinity"] = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 100, "preference": term}
                ]
            }
        }


def _pod_spec(s: Scenario, node: str, job: bool = False) -> Obj:
    spec: Obj = {
        "containers": [{"name": "main", "image": w.IMAGE}],
        "terminationGracePeriodSeconds": s.grace,
        "tolerations": _tolerations(s),
    }
    if job:
        spec["restartPolicy"] = "Never"
    _place(spec, s, node)
    return spec


def _template(s: Scenario, node: str, job: bool = False) -> Obj:
    meta: Obj = {"labels": {"app": s.app}}
    if s.finalizer:
        meta["finalizers"] = [FINALIZER]
    return {"metadata": meta, "spec": _pod_spec(s, node, job)}


def managed_pods(s: Scenario, node: str, job_uid: str) -> list[Obj]:
    """The pods the harness creates for a Job another controller manages (MANAGED_BY), as such a
    controller does: owned by the Job (controller: true), with the labels its selector asks."""
    meta = _template(s, node, job=True)["metadata"]
    labels = {
        **meta["labels"],
        "batch.kubernetes.io/controller-uid": job_uid,
        "batch.kubernetes.io/job-name": s.app,
    }
    owner = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": s.app,
        "uid": job_uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{s.app}-managed-{i}",
                "namespace": s.namespace,
                "labels": labels,
                "ownerReferences": [owner],
                **({"finalizers": [FINALIZER]} if s.finalizer else {}),
            },
            "spec": _pod_spec(s, node, job=True),
        }
        for i in range(s.replicas)
    ]


def manifests(s: Scenario, node: str) -> list[Obj]:
    """The namespace and the workload of one scenario, its pods aimed at `node`."""
    ns, name = s.namespace, s.app
    out: list[Obj] = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": ns, "labels": {"nodefail-audit": str(s.seed)}},
        }
    ]
    meta = {"name": name, "namespace": ns}
    selector = {"matchLabels": {"app": name}}
    if s.kind == "deployment":
        out.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": meta,
                "spec": {
                    "replicas": s.replicas,
                    "selector": selector,
                    "template": _template(s, node),
                    **({"strategy": {"type": "Recreate"}} if s.strategy == "Recreate" else {}),
                    # "paused": paused at the change, with it (run.Batch.change)
                },
            }
        )
    elif s.kind.startswith("sts"):
        out.append(
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "metadata": meta,
                "spec": {
                    "replicas": s.replicas,
                    "serviceName": name,
                    "podManagementPolicy": "Parallel"
                    if s.kind == "sts-parallel"
                    else "OrderedReady",
                    "selector": selector,
                    "template": _template(s, node),
                    **_sts_strategy(s),
                },
            }
        )
        if s.volume != "-":
            _mount(out[-1]["spec"])
    elif s.kind == "daemonset":
        out.append(
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": meta,
                "spec": {"selector": selector, "template": _template(s, node)},
            }
        )
    elif s.kind == "bare":
        pod_meta: Obj = {**meta, "labels": {"app": name}}
        if s.finalizer:
            pod_meta["finalizers"] = [FINALIZER]
        out.append(
            {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": _pod_spec(s, node)}
        )
    elif s.kind == "cronjob":
        out.append(
            {
                "apiVersion": "batch/v1",
                "kind": "CronJob",
                "metadata": meta,
                "spec": {
                    "schedule": "0 3 * * *",
                    "suspend": True,  # a live one is resumed by its change (cron-run)
                    "jobTemplate": {"spec": _job_spec(s, node)},
                    **(
                        {"concurrencyPolicy": s.strategy}
                        if s.strategy in LIVE_CRON_POLICIES
                        else {}
                    ),
                },
            }
        )
    else:
        out.append(
            {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": _job_spec(s, node)}
        )
    return out


def _mount(spec: Obj) -> None:
    """A StatefulSet's pods each with a ReadWriteOnce volume of their own (volumeClaimTemplates;
    the PVs: attach.volumes), on the nodes that play attaching (ATTACH_LABEL), each pod held
    until its volume is attached to its node (WAIT_ATTACH)."""
    spec["volumeClaimTemplates"] = [
        {
            "metadata": {"name": "data"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": VOLUME_CLASS,
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
    ]
    template = spec["template"]
    template["metadata"]["annotations"] = {WAIT_ATTACH: "true"}
    pod = template["spec"]
    pod["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    pod["tolerations"] = [
        *pod["tolerations"],
        {"key": STORAGE_TAINT, "operator": "Exists", "effect": "NoSchedule"},
    ]
    required = {"key": ATTACH_LABEL, "operator": "In", "values": ["true"]}
    affinity = pod.setdefault("affinity", {}).setdefault("nodeAffinity", {})
    terms = affinity.setdefault(
        "requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": [{}]}
    )["nodeSelectorTerms"]
    for term in terms:
        term.setdefault("matchExpressions", []).append(required)


def _sts_strategy(s: Scenario) -> Obj:
    if s.strategy == "OnDelete":
        return {"updateStrategy": {"type": "OnDelete"}}
    if s.strategy == "maxUnavailable":  # a rolling update may take two pods down at once
        return {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}}
    if s.strategy == "partition":  # every ordinal below the partition keeps its revision
        return {
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": s.replicas}}
        }
    return {}


def _job_spec(s: Scenario, node: str) -> Obj:
    spec: Obj = {
        "parallelism": s.replicas,
        "completions": s.completions or s.replicas,
        "backoffLimit": 6,
        "template": _template(s, node, job=True),
    }
    if s.kind == "job-failed":
        spec["podReplacementPolicy"] = "Failed"
    if s.kind == "job-managed":
        spec["managedBy"] = MANAGED_BY
    if s.kind == "job-pfp":
        spec["podFailurePolicy"] = {
            "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
        }
    return spec
