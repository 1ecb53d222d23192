"""Per controller type: why a pod on a failed node is stuck, what replaces it, and what happens
if the node returns. The knowledge comes from the controllers' sources (see the reference doc)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from kubectl_nodefail.analysis import facts
from kubectl_nodefail.analysis.findings import Replacement
from kubectl_nodefail.analysis.podstatus import TERMINAL_PHASES
from kubectl_nodefail.snapshot import Obj, Snapshot, parse_time, shifted


@dataclass
class Context:
    """What the per-controller rules need to know about one pod."""

    pod: Obj
    kind: str  # controller type from owners.controller_type
    owners: list[Obj]  # owner objects found, nearest first
    snap: Snapshot
    node: str
    node_failed: bool
    failed_nodes: set[str]
    terminating: bool
    now: datetime

    @property
    def name(self) -> str:
        return str(self.pod["metadata"]["name"])


def _active(pod: Obj, failed_nodes: set[str]) -> bool:
    """Counts as a running replica: not terminating, not finished, not on a failed node."""
    phase = (pod.get("status") or {}).get("phase")
    return (
        not pod["metadata"].get("deletionTimestamp")
        and phase not in TERMINAL_PHASES
        and (pod.get("spec") or {}).get("nodeName") not in failed_nodes
    )


def pending_reason(pod: Obj, dead_node: str) -> str:
    """Why a replacement does not schedule, from its PodScheduled condition and spec."""
    spec = pod.get("spec") or {}
    selector = spec.get("nodeSelector") or {}
    if selector.get(facts.LABEL_HOSTNAME) == dead_node:
        return f"pinned: nodeSelector {facts.LABEL_HOSTNAME}={dead_node} names the failed node"
    message = ""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") != "True":
            message = cond.get("message") or cond.get("reason") or ""
    low = message.lower()
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if "volume node affinity conflict" in low:
        return f"local volume: its PV is bound to a node it cannot use ({message})"
    if "node affinity/selector" in low or ("affinity" in low and required):
        return f"pinned by node selector/affinity to nodes that are not available ({message})"
    if "insufficient" in low:
        return f"not enough resources on healthy nodes ({message})"
    if "untolerated taint" in low:
        return f"healthy nodes carry taints it does not tolerate ({message})"
    if message:
        return message
    return "not scheduled yet (no scheduler message)"


def _replacements(ctx: Context, owner_uid: str, finished_too: bool = False) -> list[Obj]:
    """Pods of the same owner created since the stuck pod's deletion was requested (for Jobs,
    finished ones count too: a replacement that already completed did its job)."""
    meta = ctx.pod["metadata"]
    since = parse_time(meta.get("deletionTimestamp"))
    if since is not None:
        since = shifted(since, -((meta.get("deletionGracePeriodSeconds") or 0) + 5))
    out = []
    for other in ctx.snap.pods_owned_by(owner_uid):
        if other["metadata"].get("uid") == meta.get("uid"):
            continue
        finished = (other.get("status") or {}).get("phase") in TERMINAL_PHASES
        if not (_active(other, ctx.failed_nodes) or (finished_too and finished)):
            continue
        created = parse_time(other["metadata"].get("creationTimestamp"))
        if since is None or (created is not None and created >= since):
            out.append(other)
    return out


def _describe_found(pods: list[Obj], dead_node: str, what: str) -> Replacement:
    def where(found: list[Obj]) -> str:
        return ", ".join(f"{p['metadata']['name']} on {p['spec'].get('nodeName')}" for p in found)

    names = [p["metadata"]["name"] for p in pods]
    running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
    if running:
        return Replacement("running", f"{what} Running: {where(running)}", names)
    done = [p for p in pods if (p.get("status") or {}).get("phase") in TERMINAL_PHASES]
    if done:
        phases = "/".join(sorted({p["status"]["phase"] for p in done}))
        return Replacement(
            "finished", f"{what} already ran to the end ({phases}): {where(done)}", names
        )
    pending = pods[0]
    reason = pending_reason(pending, dead_node)
    return Replacement(
        "pending",
        f"{what} {pending['metadata']['name']} is Pending: {reason}",
        names,
        pending_reason=reason,
    )


def replicaset(ctx: Context) -> tuple[str, Replacement, str]:
    rs = ctx.owners[0] if ctx.owners else None
    owner = (
        "Deployment " + ctx.owners[1]["metadata"]["name"]
        if len(ctx.owners) > 1
        else ("ReplicaSet " + (rs["metadata"]["name"] if rs else "?"))
    )
    why = (
        f"{owner} counts a Terminating pod as gone and creates a replacement at once, so this "
        "stuck pod is mostly cosmetic: it only holds its name in listings (and RWO volumes)."
    )
    if not ctx.terminating:
        why = (
            f"{owner} still counts this pod as a live replica: nothing replaces it until it is "
            "evicted (then a replacement is created at once)."
        )
        rep = Replacement("not-yet", "none yet: created when the pod is evicted")
    elif rs is None:
        rep = Replacement("unknown", "owner not read: cannot look for the replacement")
    else:
        found = _replacements(ctx, rs["metadata"]["uid"])
        if found:
            rep = _describe_found(found, ctx.node, "replacement")
        else:
            desired = (rs.get("spec") or {}).get("replicas", 1)
            active = [
                p
                for p in ctx.snap.pods_owned_by(rs["metadata"]["uid"])
                if _active(p, ctx.failed_nodes)
            ]
            if desired == 0:
                rep = Replacement(
                    "none",
                    "the ReplicaSet was scaled to 0 (rollout or scale-down): "
                    "no replacement is wanted",
                )
            elif len(active) >= desired:
                rep = Replacement(
                    "running",
                    f"{len(active)}/{desired} replicas active elsewhere",
                    [p["metadata"]["name"] for p in active],
                )
            else:
                rep = Replacement(
                    "missing",
                    f"{len(active)}/{desired} replicas active and no "
                    "replacement pod found (quota, admission or a controller problem: "
                    "check the ReplicaSet's events)",
                )
    returns = (
        "kubelet stops the old containers and removes the object; the replacement keeps running."
        if ctx.terminating
        else "the pod carries on (its containers may never have stopped); taints are lifted."
    )
    return why, rep, returns


def _ordinal(pod_name: str, sts_name: str) -> int | None:
    tail = pod_name[len(sts_name) + 1 :] if pod_name.startswith(sts_name + "-") else ""
    return int(tail) if tail.isdigit() else None


def _ordinals(values: list[int]) -> str:
    return ", ".join(str(v) for v in sorted(values))


def statefulset_work(sts: Obj, snap: Snapshot, stuck: str) -> str:
    """What the StatefulSet controller has not done yet because of the stuck ordinal: ordinals to
    create or remove, and the pods not yet on the update revision (controller-revision-hash)."""
    name = sts["metadata"]["name"]
    spec, status = sts.get("spec") or {}, sts.get("status") or {}
    replicas = spec.get("replicas", 1)
    start = (spec.get("ordinals") or {}).get("start", 0)
    pods = snap.pods_owned_by(sts["metadata"].get("uid", ""))
    present = {o: p for p in pods if (o := _ordinal(p["metadata"]["name"], name)) is not None}
    wanted = set(range(start, start + replicas))
    parts = []
    missing = sorted(wanted - set(present))
    if missing:
        parts.append(f"ordinals {_ordinals(missing)} not created yet (replicas {replicas})")
    extra = sorted(set(present) - wanted)
    if extra:
        parts.append(f"ordinals {_ordinals(extra)} not removed yet (replicas {replicas})")
    current, update = status.get("currentRevision"), status.get("updateRevision")
    if update and current and update != current:
        old = sorted(
            o
            for o, p in present.items()
            if (p["metadata"].get("labels") or {}).get("controller-revision-hash") != update
        )
        parts.append(
            f"rolling update to revision {update} not finished: ordinals {_ordinals(old)} "
            f"still on {current}"
            if old
            else f"rolling update to revision {update} in progress"
        )
    if not parts:
        return f"nothing else is pending in StatefulSet {name} now"
    return "pending in StatefulSet " + name + ": " + "; ".join(parts)


def statefulset(ctx: Context) -> tuple[str, Replacement, str]:
    sts = ctx.owners[0] if ctx.owners else None
    policy = ((sts or {}).get("spec") or {}).get("podManagementPolicy") or "OrderedReady"
    name = sts["metadata"]["name"] if sts else "?"
    if policy == "OrderedReady":
        block = (
            "podManagementPolicy OrderedReady: the stuck ordinal also blocks creating higher "
            "ordinals, scale-down and rolling updates"
        )
    else:
        block = (
            "podManagementPolicy Parallel: the other ordinals are still created and removed "
            "(scaling proceeds), but a rolling update, which goes from the highest ordinal "
            "down, stops at this one: it and the lower ordinals stay on the old revision until "
            "it is gone"
        )
    if sts is not None:
        block += f" ({statefulset_work(sts, ctx.snap, ctx.name)})"
    why = (
        f"StatefulSet {name} gives each ordinal one fixed name and creates {ctx.name} again only "
        "when the old object is gone (at-most-one identity). A dead kubelet never confirms the "
        f"deletion, so the pod blocks its own replacement. {block}. Released only by the kubelet "
        "returning, deleting the Node object, a force delete, or the out-of-service taint; "
        "forcing it while the old process may still run breaks at-most-one (split brain, data "
        "loss)."
    )
    if not ctx.terminating:
        why = (
            f"StatefulSet {name} still counts {ctx.name} as its replica. Once evicted it will "
            "stay Terminating and block its own replacement (fixed name, at-most-one). "
            + block
            + "."
        )
        rep = Replacement(
            "blocked", f"none: {ctx.name} will be recreated only after the old object is removed"
        )
    else:
        rep = Replacement(
            "blocked", f"blocked: the name {ctx.name} is still taken by this Terminating pod"
        )
    returns = (
        f"kubelet removes the old pod, then the StatefulSet controller recreates {ctx.name} "
        "(it may land on this or another node)."
        if ctx.terminating
        else "the pod carries on in place."
    )
    return why, rep, returns


def daemonset(ctx: Context) -> tuple[str, Replacement, str]:
    name = ctx.owners[0]["metadata"]["name"] if ctx.owners else "?"
    why = (
        f"DaemonSet {name} runs one pod per node; its pods tolerate not-ready/unreachable "
        "NoExecute without a time limit, so they are never evicted and never moved. (The "
        "out-of-service taint is not tolerated: it does evict them.)"
    )
    rep = Replacement("not-needed", "none by design (one pod per node)")
    returns = "the pod goes back to Running in place; nothing is recreated."
    if ctx.terminating:
        returns = (
            "kubelet finishes deleting it and the DaemonSet controller creates a new one on "
            "the node."
        )
    return why, rep, returns


def job(ctx: Context) -> tuple[str, Replacement, str]:
    job_obj = ctx.owners[0] if ctx.owners else None
    spec = (job_obj or {}).get("spec") or {}
    policy = spec.get("podReplacementPolicy") or (
        "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed"
    )
    name = job_obj["metadata"]["name"] if job_obj else "?"
    cron = f" (CronJob {ctx.owners[1]['metadata']['name']})" if len(ctx.owners) > 1 else ""
    if policy == "Failed":
        why = (
            f"Job {name}{cron} has podReplacementPolicy Failed"
            + (
                " (the default when podFailurePolicy is set, as here)"
                if spec.get("podFailurePolicy")
                else ""
            )
            + ": it creates a replacement only once the old pod reaches phase Failed, which a "
            "pod Terminating on a dead node never does. The pod blocks its own replacement."
        )
    elif job_obj is not None and "podReplacementPolicy" not in spec:
        # Servers before 1.29 (the field's beta) store no such field: same behaviour, no name.
        why = (
            f"Job {name}{cron} has no podReplacementPolicy (this server predates it) and no "
            "podFailurePolicy: a replacement is created as soon as the pod is Terminating."
        )
    else:
        why = (
            f"Job {name}{cron} has podReplacementPolicy TerminatingOrFailed (the default): a "
            "replacement is created as soon as the pod is Terminating."
        )
    if not ctx.terminating:
        why += " The pod is not evicted yet, so it still counts as active."
        rep = Replacement("not-yet", "none yet: the pod still counts as active")
    elif job_obj is None:
        rep = Replacement("unknown", "owner not read: cannot look for the replacement")
    else:
        found = _replacements(ctx, job_obj["metadata"]["uid"], finished_too=True)
        if found:
            rep = _describe_found(found, ctx.node, "replacement")
        elif policy == "Failed":
            rep = Replacement(
                "blocked", "blocked: podReplacementPolicy Failed waits for this pod to fail"
            )
        else:
            rep = Replacement(
                "missing",
                "no replacement found (the Job may be complete, suspended or at its backoffLimit)",
            )
    returns = (
        "kubelet removes the old pod; the Job counts it as failed"
        + (" and then creates the replacement." if policy == "Failed" else ".")
        if ctx.terminating
        else "the pod carries on and may complete."
    )
    return why, rep, returns


def mirror(ctx: Context) -> tuple[str, Replacement, str]:
    why = (
        "a static pod: the kubelet runs it from a manifest file on the node and only mirrors it "
        "into the API. Deleting the API object does not stop it (the kubelet recreates the "
        "mirror); nothing through the API can move it."
    )
    rep = Replacement("none", "none possible: static pods live on their node")
    returns = (
        "the kubelet restarts it from its manifest; the mirror pod reappears and its start "
        "time resets."
    )
    return why, rep, returns


def bare(ctx: Context) -> tuple[str, Replacement, str]:
    why = (
        "no controller owns this pod: nothing recreates it anywhere. Deleting it loses it; "
        "recreate it yourself from its manifest if it is needed."
    )
    rep = Replacement("none", "none will come (no controller)")
    returns = (
        "kubelet kills it and removes the object: it is gone for good."
        if ctx.terminating
        else "the pod carries on in place."
    )
    return why, rep, returns


def other(ctx: Context) -> tuple[str, Replacement, str]:
    ref = (ctx.pod["metadata"].get("ownerReferences") or [{}])[0]
    what = f"{ref.get('kind', '?')} {ref.get('name', '?')} ({ref.get('apiVersion', '?')})"
    why = (
        f"owned by {what}: what replaces it depends on that controller. Most treat a "
        "Terminating pod as gone (like ReplicaSets); identity-keeping ones behave like "
        "StatefulSets and wait for the object to disappear."
    )
    rep = Replacement("unknown", f"depends on {ref.get('kind', 'the owner')}")
    returns = (
        "kubelet finishes the deletion; the owner then does what it does."
        if ctx.terminating
        else "the pod carries on in place."
    )
    return why, rep, returns


RULES = {
    "deployment": replicaset,
    "replicaset": replicaset,
    "replicationcontroller": replicaset,
    "statefulset": statefulset,
    "daemonset": daemonset,
    "job": job,
    "cronjob": job,
    "mirror": mirror,
    "bare": bare,
    "other": other,
}


def explain(ctx: Context) -> tuple[str, Replacement, str]:
    """(why it is stuck, its replacement, what happens if the node returns)."""
    return RULES[ctx.kind](ctx)
