"""Per controller type: why a pod on a failed node is stuck, what replaces it, and what happens
if the node returns. The knowledge comes from the controllers' sources (see the reference doc).

Every statement is a claim (claims.py) with the snapshot facts it rests on. A statement true in
the usual case is made only where its premise holds: the owner still wants the pod (replica
count, ordinal range, a Job not yet finished), the pod had not finished, no finalizer holds it,
a replacement exists and is in the state named.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime

from kubectl_nodefail.analysis import facts, storage
from kubectl_nodefail.analysis.claims import Claim, Premise, claim, fact
from kubectl_nodefail.analysis.findings import Replacement
from kubectl_nodefail.analysis.podstatus import TERMINAL_PHASES
from kubectl_nodefail.analysis.text import plural
from kubectl_nodefail.snapshot.model import Obj, Snapshot, parse_time, shifted

# Finalizers that Kubernetes' own controllers remove by themselves while the node is down.
SELF_REMOVED_FINALIZERS = {"batch.kubernetes.io/job-tracking"}


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
    owner_kinds: list[str] = field(default_factory=list)  # the kinds of `owners`, same order
    never_evicted: bool = False  # tolerates the node's NoExecute taints without a time limit

    @property
    def grace_zero(self) -> bool:
        """Deleted with grace period 0, the object goes at once, without the kubelet."""
        return (self.pod.get("spec") or {}).get("terminationGracePeriodSeconds") == 0

    @property
    def name(self) -> str:
        return str(self.pod["metadata"]["name"])

    @property
    def phase(self) -> str:
        return str((self.pod.get("status") or {}).get("phase") or "")

    @property
    def finished(self) -> bool:
        return self.phase in TERMINAL_PHASES

    @property
    def foreign_finalizers(self) -> list[str]:
        return [
            f
            for f in self.pod["metadata"].get("finalizers") or []
            if f not in SELF_REMOVED_FINALIZERS
        ]

    def owner_ref_fact(self) -> Premise:
        """The pod's controlling owner reference, by its kind (or that it has none)."""
        refs = self.pod["metadata"].get("ownerReferences") or []
        if not refs:
            return self.pod_fact("metadata.ownerReferences")
        ref = next((r for r in refs if r.get("controller")), refs[0])
        return self.pod_fact(f"metadata.ownerReferences[kind={ref.get('kind')}].name")

    def pod_fact(self, path: str) -> Premise:
        return fact("Pod", self.pod, path)

    def owner_fact(self, index: int, path: str) -> Premise:
        return fact(self.owner_kinds[index], self.owners[index], path)


@dataclass
class Explained:
    """A rule's result: its claims (in sections why/replacement/returns) and the replacement."""

    claims: list[Claim]
    replacement: Replacement


def _live(pod: Obj) -> bool:
    """What the ReplicaSet controller counts as a replica (controller.IsPodActive): not
    deleted, not finished, wherever it is (a pod on a failed node counts until evicted)."""
    return (
        not pod["metadata"].get("deletionTimestamp")
        and (pod.get("status") or {}).get("phase") not in TERMINAL_PHASES
    )


def _counted(ctx: Context, rs: Obj) -> list[Obj]:
    """The ReplicaSet's live pods other than this one."""
    uid = ctx.pod["metadata"].get("uid")
    return [
        p
        for p in ctx.snap.pods_owned_by(rs["metadata"]["uid"])
        if _live(p) and p["metadata"].get("uid") != uid
    ]


def _active(pod: Obj, failed_nodes: set[str]) -> bool:
    """Counts as a running replica: live, and not on a failed node."""
    return _live(pod) and (pod.get("spec") or {}).get("nodeName") not in failed_nodes


# "0/5 nodes are available: 1 node(s) had untolerated taint {...}, 4 node(s) didn't match ...
# preemption: ..." -> the per-reason parts, as the scheduler wrote them.
_AVAILABLE = re.compile(r"^\s*\d+/\d+ nodes are available:\s*(.*)$", re.S)
# The per-node part ends at the first period followed by a space or the end: what follows
# ("preemption: ...", "no new claims to deallocate, preemption: ...") is not a node's reason.
_END = re.compile(r"\.(?:\s|$)")
_SPLIT = re.compile(r",\s*(?=\d+ node\(s\) )")
_PART = re.compile(r"(\d+) (node\(s\) .+)", re.S)


def scheduler_reasons(message: str) -> list[str]:
    """The scheduler's per-node reasons ('4 node(s) didn't match pod anti-affinity rules'), in
    its order; [] when the message is not in that form."""
    m = _AVAILABLE.match(message)
    if not m:
        return []
    head = _END.split(m.group(1), maxsplit=1)[0]
    parts = [_PART.fullmatch(part.strip()) for part in _SPLIT.split(head)]
    if not all(parts):
        return []  # not in the form we know: the caller quotes the whole message
    return [f"{p.group(1)} {p.group(2).strip()}" for p in parts if p]


def scheduled_condition(pod: Obj) -> Obj | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") != "True":
            return dict(cond)
    return None


def pending_reason(pod: Obj, dead_node: str) -> str:
    """Why a replacement does not schedule: its own spec where it names the failed node, else
    the scheduler's message as written (never a cause guessed from a keyword)."""
    spec = pod.get("spec") or {}
    selector = spec.get("nodeSelector") or {}
    if selector.get(facts.LABEL_HOSTNAME) == dead_node:
        return f"pinned: nodeSelector {facts.LABEL_HOSTNAME}={dead_node} names the failed node"
    if required_hosts(spec) == [dead_node]:
        return (
            f"pinned: its required node affinity allows only {facts.LABEL_HOSTNAME} "
            f"{dead_node}, the failed node"
        )
    cond = scheduled_condition(pod)
    message = (cond or {}).get("message") or (cond or {}).get("reason") or ""
    reasons = scheduler_reasons(message)
    if reasons:
        return "the scheduler found no node: " + "; ".join(reasons)
    if message:
        return f"the scheduler says: {message}"
    return "not scheduled yet (no scheduler message)"


def required_hosts(spec: Obj) -> list[str] | None:
    """The hostnames a required node affinity allows, when it is one `hostname In [...]` term."""
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if len(terms) != 1:
        return None
    exprs = terms[0].get("matchExpressions") or []
    if len(exprs) != 1 or terms[0].get("matchFields"):
        return None
    e = exprs[0]
    if e.get("key") != facts.LABEL_HOSTNAME or e.get("operator") != "In":
        return None
    return list(e.get("values") or [])


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


def _where(found: list[Obj]) -> str:
    return ", ".join(f"{p['metadata']['name']} on {p['spec'].get('nodeName')}" for p in found)


def _found(pods: list[Obj], dead_node: str, what: str) -> tuple[Replacement, Claim]:
    """A replacement found: Running, finished or Pending, with the facts that say so. `pods`
    names the replacements in the state said (a Pending one is never listed as Running)."""
    running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
    done = [p for p in pods if (p.get("status") or {}).get("phase") in TERMINAL_PHASES]
    waiting = [p for p in pods if p not in running and p not in done]
    if waiting and (running or done):
        return _partly_replaced(running or done, waiting, dead_node, what)
    if running:
        names = [p["metadata"]["name"] for p in running]
        rep = Replacement("running", f"{what} Running: {_where(running)}", names)
        because = [fact("Pod", p, "status.phase") for p in running]
        because += [fact("Pod", p, "spec.nodeName") for p in running]
        return rep, claim("replacement", "replacement", rep.summary, *because)
    if done:
        phases = "/".join(sorted({p["status"]["phase"] for p in done}))
        rep = Replacement("finished", f"{what} already ran to the end ({phases}): {_where(done)}")
        rep.pods = [p["metadata"]["name"] for p in done]
        return rep, claim(
            "replacement",
            "replacement",
            rep.summary,
            *(fact("Pod", p, "status.phase") for p in done),
        )
    pending = pods[0]
    reason = pending_reason(pending, dead_node)
    rep = Replacement(
        "pending",
        f"{what} {pending['metadata']['name']} is Pending: {reason}",
        [p["metadata"]["name"] for p in pods],
        pending_reason=reason,
    )
    because = [fact("Pod", pending, "status.phase"), fact("Pod", pending, "spec.nodeName")]
    if scheduled_condition(pending) is not None:
        because.append(fact("Pod", pending, "status.conditions[type=PodScheduled].message"))
    return rep, claim("blocked-by", "replacement", rep.summary, *because)


def _partly_replaced(
    serving: list[Obj], waiting: list[Obj], dead_node: str, what: str
) -> tuple[Replacement, Claim]:
    """Some of the owner's new pods run (or ran), others wait: which one stands in for this pod
    the API cannot say, so the pod is not called replaced while one of them is Pending."""
    pending = waiting[0]
    reason = pending_reason(pending, dead_node)
    state = "Running" if serving[0].get("status", {}).get("phase") == "Running" else "finished"
    rep = Replacement(
        "pending",
        f"{what}s: {len(serving)} {state} ({_where(serving)}), {len(waiting)} Pending "
        f"({pending['metadata']['name']}: {reason})",
        [p["metadata"]["name"] for p in waiting],
        pending_reason=reason,
    )
    because = [fact("Pod", p, "status.phase") for p in serving + waiting]
    because += [fact("Pod", p, "spec.nodeName") for p in serving + waiting]
    if scheduled_condition(pending) is not None:
        because.append(fact("Pod", pending, "status.conditions[type=PodScheduled].message"))
    return rep, claim("blocked-by", "replacement", rep.summary, *because)


def _returns_after_replacement(rep: Replacement) -> str:
    """What becomes of the replacement when the old node returns, from its state only."""
    if rep.state == "running":
        return "the replacement keeps running."
    if rep.state == "finished":
        return "the replacement's result stands."
    if rep.state == "pending":
        return (
            "the Pending replacement is scheduled again (the returning node is a candidate "
            "once its taints are lifted)."
        )
    if rep.state == "not-wanted":
        return "nothing is recreated (the owner wants no replacement)."
    return "nothing else is recreated by that alone."


def _finished(ctx: Context) -> Explained:
    """A pod that had run to completion, then was deleted: the API server removes a finished
    pod at once (grace period 0, no kubelet needed), so only finalizers keep its object."""
    phase = ctx.phase
    held = ctx.foreign_finalizers
    why = [
        claim(
            "finished",
            "why",
            f"it had already {'succeeded' if phase == 'Succeeded' else 'failed'} (phase "
            f"{phase}) before it was deleted: its work is over, and a finished pod is removed "
            "without waiting for its kubelet.",
            ctx.pod_fact("status.phase"),
            ctx.pod_fact("metadata.deletionTimestamp"),
        )
    ]
    if held:
        why.append(
            claim(
                "held-by-finalizers",
                "why",
                f"Only finalizers {', '.join(held)} keep the object; nothing waits on it.",
                ctx.pod_fact("metadata.finalizers"),
            )
        )
    rep = Replacement("not-needed", f"none needed: the pod had finished ({phase})")
    counted = f"; its owner counted it as {phase.lower()} when it finished" if ctx.owners else ""
    return Explained(
        [
            *why,
            claim("counts-as", "replacement", rep.summary + counted, ctx.pod_fact("status.phase")),
            claim(
                "if-node-returns",
                "returns",
                "nothing changes for it: the kubelet has nothing left to stop"
                + (", and the object stays until its finalizers are removed." if held else "."),
                ctx.pod_fact("status.phase"),
                ctx.pod_fact("metadata.finalizers"),
            ),
        ],
        rep,
    )


def _released_by(ctx: Context) -> Claim:
    """What ends the wait for a kubelet that never confirms, and what it cannot release."""
    held = ctx.foreign_finalizers
    if held:
        return claim(
            "released-by",
            "why",
            "The kubelet returning, deleting the Node object, a force delete or the "
            "out-of-service taint would end only the wait for the kubelet: finalizers "
            f"{', '.join(held)} keep the object (and its name) until whoever set them removes "
            "them. Forcing while the old process may still run also breaks at-most-one "
            "(split brain, data loss).",
            ctx.pod_fact("metadata.finalizers"),
        )
    return claim(
        "released-by",
        "why",
        "Released only by the kubelet returning, deleting the Node object, a force delete, or "
        "the out-of-service taint; forcing it while the old process may still run breaks "
        "at-most-one (split brain, data loss).",
        ctx.pod_fact("metadata.finalizers"),
    )


# The Deployment controller stamps each ReplicaSet with the revision of its template, and itself
# with the newest (pkg/controller/deployment/sync.go; util/deployment_util.go RevisionAnnotation).
DEPLOYMENT_REVISION = "deployment.kubernetes.io/revision"


def _superseded(ctx: Context) -> tuple[str, str, list[Premise]] | None:
    """The pod's ReplicaSet is an old one of a Deployment rolling out a newer template (not
    paused): (old revision, new revision, premises), else None. The rollout scales the old
    ReplicaSet down as pods of the new template become available, deleting its pods (audit
    2031/32: a never-evicted pod of the old template did not carry on when its node returned)."""
    if len(ctx.owners) < 2 or ctx.owner_kinds[1] != "Deployment":
        return None
    rs, deployment = ctx.owners[0], ctx.owners[1]
    mine = (rs["metadata"].get("annotations") or {}).get(DEPLOYMENT_REVISION)
    newest = (deployment["metadata"].get("annotations") or {}).get(DEPLOYMENT_REVISION)
    if mine is None or newest is None or mine == newest:
        return None
    if ((deployment.get("spec") or {}).get("paused")) is True:
        return None
    return (
        mine,
        newest,
        [
            ctx.owner_fact(0, f"metadata.annotations[{DEPLOYMENT_REVISION}]"),
            ctx.owner_fact(1, f"metadata.annotations[{DEPLOYMENT_REVISION}]"),
            ctx.owner_fact(1, "spec.paused"),
        ],
    )


def _recreate_waits(ctx: Context) -> tuple[str, list[Premise]] | None:
    """A pod, not finished, of a ReplicaSet scaled to 0 by a Deployment that wants replicas and
    rolls out with strategy Recreate (not paused): (the sentence, its premises), else None.

    A Recreate rollout scales every old ReplicaSet to 0 first and creates (and scales up) the
    new one only once no pod of an older ReplicaSet is in a phase other than Failed or
    Succeeded, Terminating ones included (pkg/controller/deployment/recreate.go
    oldPodsRunning; getPodMapForDeployment keeps inactive pods for it). Until then the new
    ReplicaSet does not exist and the Deployment's revision is not bumped, so an old ReplicaSet
    is told by its 0 replicas under a Deployment that wants some, has observed its spec and has
    no pod of its newest template (status.updatedReplicas). A pod on a dead node keeps its
    phase: the rollout waits on it."""
    if len(ctx.owners) < 2 or ctx.owner_kinds[1] != "Deployment" or ctx.finished:
        return None
    rs, deployment = ctx.owners[0], ctx.owners[1]
    spec = deployment.get("spec") or {}
    if (spec.get("strategy") or {}).get("type") != "Recreate" or spec.get("paused") is True:
        return None
    wanted = spec.get("replicas", 1)
    if not wanted or (rs.get("spec") or {}).get("replicas", 1) != 0:
        return None
    status = deployment.get("status") or {}
    observed = status.get("observedGeneration")
    if observed is None or observed != deployment["metadata"].get("generation"):
        return None  # its status does not speak of its spec yet (a scale or edit not synced)
    if status.get("updatedReplicas"):
        return None  # pods of the new template exist: this ReplicaSet is not waited on
    name = deployment["metadata"]["name"]
    text = (
        f"Deployment {name} wants {plural(wanted, 'replica')} and rolls out with strategy "
        "Recreate: it "
        f"scaled ReplicaSet {rs['metadata']['name']} to 0 and creates pods of its new template "
        "only once no pod of an older ReplicaSet is still Pending, Running or Unknown, "
        f"Terminating ones included. This pod stays {ctx.phase} until its kubelet confirms, so "
        "the rollout waits on it and the Deployment runs no pod of the new template."
    )
    return text, [
        ctx.owner_fact(1, "spec.strategy.type"),
        ctx.owner_fact(1, "spec.replicas"),
        ctx.owner_fact(1, "spec.paused"),
        ctx.owner_fact(1, "metadata.generation"),
        ctx.owner_fact(1, "status.observedGeneration"),
        ctx.owner_fact(1, "status.updatedReplicas"),
        ctx.owner_fact(0, "spec.replicas"),
        ctx.pod_fact("status.phase"),
    ]


def _node_ready(ctx: Context) -> list[Premise]:
    """The pod's node's Ready condition: the premise of what is said about its kubelet."""
    node = ctx.snap.node(ctx.node) if ctx.node else None
    return [fact("Node", node, "status.conditions[type=Ready].status")] if node else []


def _until_kubelet(ctx: Context, short: bool = False) -> str:
    """How long the pod object stays: while its node's kubelet is down (a failed node), or until
    that kubelet confirms the deletion (a node that did not fail)."""
    if ctx.node_failed:
        return (
            "while its kubelet is down"
            if short
            else "which does not happen while its kubelet is down"
        )
    return (
        "until its kubelet confirms the deletion"
        if short
        else "which its kubelet has not confirmed yet"
    )


def _recreate_blocked(ctx: Context, waits: tuple[str, list[Premise]]) -> Explained:
    """The pod a Recreate rollout waits on: blocked, and it blocks its Deployment."""
    text, because = waits
    name = ctx.owners[1]["metadata"]["name"]
    rep = Replacement(
        "blocked",
        f"blocked: Deployment {name} (strategy Recreate) creates no pod of its new template "
        "while this pod exists",
    )
    deletion = ctx.pod_fact("metadata.deletionTimestamp")
    because = [*because, *_node_ready(ctx)]
    lead = (
        ""
        if ctx.terminating
        else "Its ReplicaSet deletes this pod, which then stays Terminating "
        f"{_until_kubelet(ctx, short=True)}. "
    )
    return Explained(
        [
            claim("blocks", "why", lead + text, deletion, *because),
            claim("replacement", "replacement", rep.summary, deletion, *because),
            claim(
                "if-node-returns",
                "returns",
                "kubelet stops the old containers and removes the object; then Deployment "
                f"{name} (Recreate) scales its new ReplicaSet up (creating it first if need be).",
                deletion,
                *because,
            ),
        ],
        rep,
    )


def replicaset(ctx: Context) -> Explained:
    rs = ctx.owners[0] if ctx.owners else None
    owner = (
        "Deployment " + ctx.owners[1]["metadata"]["name"]
        if len(ctx.owners) > 1
        else ("ReplicaSet " + (rs["metadata"]["name"] if rs else "?"))
    )
    desired = ((rs or {}).get("spec") or {}).get("replicas", 1)
    wants: list[Premise] = [ctx.owner_fact(0, "spec.replicas")] if rs is not None else []
    out: list[Claim] = []
    waits = _recreate_waits(ctx) if desired == 0 else None
    if waits is not None:
        return _recreate_blocked(ctx, waits)
    if not ctx.terminating:
        if rs is not None and desired == 0:
            rep = Replacement("not-wanted", "none: the ReplicaSet wants 0 replicas now")
            text = f"{owner} wants 0 replicas now: it deletes this pod and replaces nothing."
        elif ctx.never_evicted:
            rep = Replacement(
                "none",
                "none: it tolerates the node's taints without a time limit, so it is never "
                "evicted and never replaced",
            )
            text = (
                f"{owner} still counts this pod as a live replica, and it is never evicted: "
                "nothing replaces it while the node is down."
            )
        else:
            rep = Replacement("not-yet", "none yet: created when the pod is evicted")
            text = (
                f"{owner} still counts this pod as a live replica: nothing replaces it until it "
                "is evicted (then a replacement is created at once)."
            )
        out += [
            claim("counts-as", "why", text, ctx.pod_fact("metadata.deletionTimestamp"), *wants),
            claim(
                "replacement",
                "replacement",
                rep.summary,
                ctx.pod_fact("metadata.deletionTimestamp"),
            ),
            _rs_returns(ctx, rs, rep, wants),
        ]
        return Explained(out, rep)
    if rs is None:
        rep = Replacement("unknown", "owner not read: cannot look for the replacement")
        rep_claim = claim("replacement", "replacement", rep.summary)
    elif found := _replacements(ctx, rs["metadata"]["uid"]):
        rep, rep_claim = _found(found, ctx.node, "replacement")
    else:
        active = [
            p for p in ctx.snap.pods_owned_by(rs["metadata"]["uid"]) if _active(p, ctx.failed_nodes)
        ]
        counted = [*wants, *(fact("Pod", p, "status.phase") for p in active)]
        if desired == 0:
            rep = Replacement(
                "not-wanted",
                "the ReplicaSet was scaled to 0 (rollout or scale-down): no replacement is wanted",
            )
        elif len(active) >= desired and all(
            (p.get("status") or {}).get("phase") == "Running" for p in active
        ):
            rep = Replacement(
                "running",
                f"{len(active)}/{desired} replicas Running elsewhere",
                [p["metadata"]["name"] for p in active],
            )
        elif len(active) >= desired:
            # enough replicas, but not all of them run: none is wanted for this pod, and it is
            # not "replaced" either (audit 2029/81: the others Pending, pinned to a dead node)
            waiting = [p for p in active if (p.get("status") or {}).get("phase") != "Running"]
            first = waiting[0]
            phase = (first.get("status") or {}).get("phase") or "no phase"
            why = pending_reason(first, ctx.node) if phase == "Pending" else f"phase {phase}"
            rep = Replacement(
                "not-wanted",
                f"none wanted: {owner} has its {desired} replicas, "
                f"{len(active) - len(waiting)} Running and {len(waiting)} not Running "
                f"({first['metadata']['name']}: {why})",
            )
        elif len(live := _counted(ctx, rs)) >= desired:
            # the ReplicaSet counts a pod on a failed node as a replica until it is evicted
            # (controller.FilterActivePods): none is wanted for this one, and the other is
            # replaced once evicted (audit 2033/81: scaled 2 -> 1, both pods on the dead node)
            held = [p for p in live if p not in active]
            counted += [fact("Pod", p, "metadata.deletionTimestamp") for p in held]
            counted += [fact("Pod", p, "spec.nodeName") for p in held]
            where = sorted({(p.get("spec") or {}).get("nodeName") or "" for p in held})
            counted += [
                fact("Node", node, "status.conditions[type=Ready].status")
                for n in where
                if (node := ctx.snap.node(n)) is not None
            ]
            names = ", ".join(p["metadata"]["name"] for p in held)
            rep = Replacement(
                "not-wanted",
                f"none wanted: {owner} has its {plural(desired, 'replica')}, counting {names} "
                f"on failed node {', '.join(where)}: a ReplicaSet counts a pod until it is "
                "deleted (evicted), and replaces it then",
            )
        else:
            rep = Replacement(
                "missing",
                f"{len(active)}/{desired} replicas active and no replacement pod found (quota, "
                "admission or a controller problem: check the ReplicaSet's events)",
            )
        rep_claim = claim("owner-wants", "replacement", rep.summary, *counted)
    if desired == 0:
        text = (
            f"{owner} counts a Terminating pod as gone and wants 0 replicas now: nothing "
            "replaces it, and the stuck object only holds its name in listings (and RWO volumes)."
        )
    elif rep.state == "running":
        text = (
            f"{owner} counts a Terminating pod as gone and creates a replacement at once, so this "
            "stuck pod is mostly cosmetic: it only holds its name in listings (and RWO volumes)."
        )
    elif rep.state == "not-wanted":
        # its replicas are there but not all Running (the premise checker's generated
        # neighbours: "mostly cosmetic" beside a Pending replacement)
        text = (
            f"{owner} counts a Terminating pod as gone and has its {desired} replicas without "
            "it, not all of them Running (see the replacement): this stuck object itself only "
            "holds its name in listings (and RWO volumes)."
        )
    else:
        text = (
            f"{owner} counts a Terminating pod as gone and replaces it at once unless something "
            "stops it (see the replacement): this stuck object itself only holds its name in "
            "listings (and RWO volumes)."
        )
    out += [
        claim("counts-as", "why", text, ctx.pod_fact("metadata.deletionTimestamp"), *wants),
        rep_claim,
        _rs_terminating_returns(ctx, rs, rep, rep_claim),
    ]
    return Explained(out, rep)


def _rs_terminating_returns(
    ctx: Context, rs: Obj | None, rep: Replacement, rep_claim: Claim
) -> Claim:
    """If the node returns, for a ReplicaSet's Terminating pod: the old object goes; what
    becomes of the replacement depends on its state, and on a rollout that supersedes the
    ReplicaSet (its pods, the replacement included, are replaced in turn: audit 2032/22, 83)."""
    superseded = _superseded(ctx) if rep.state in ("running", "pending") else None
    if superseded is not None and rs is not None:
        old, new, revision_facts = superseded
        after = (
            f"the {'Pending ' if rep.state == 'pending' else ''}replacement is of the old "
            f"template too: Deployment {ctx.owners[1]['metadata']['name']}'s rollout replaces it "
            f"(ReplicaSet {rs['metadata']['name']} holds revision {old}, the Deployment is at "
            f"revision {new}; the rollout scales the old ReplicaSet down as pods of the new "
            "template become available)."
        )
        premises = [*rep_claim.because, *revision_facts]
    else:
        after, premises = _returns_after_replacement(rep), list(rep_claim.because)
    return claim(
        "if-node-returns",
        "returns",
        "kubelet stops the old containers and removes the object; " + after,
        ctx.pod_fact("metadata.deletionTimestamp"),
        *premises,
    )


def _rs_returns(ctx: Context, rs: Obj | None, rep: Replacement, wants: list[Premise]) -> Claim:
    """If the node returns, for a ReplicaSet's pod not Terminating."""
    superseded = _superseded(ctx) if rep.state != "not-wanted" else None
    if rep.state == "not-wanted":
        text = (
            "the ReplicaSet deletes it (it wants 0 replicas), then the kubelet stops it and "
            "removes the object; nothing replaces it."
        )
    elif superseded is not None and rs is not None:
        old, new, revision_facts = superseded
        wants = [*wants, *revision_facts]
        text = (
            f"it runs again until Deployment {ctx.owners[1]['metadata']['name']}'s rollout "
            f"replaces it: its ReplicaSet {rs['metadata']['name']} holds revision {old}, the "
            f"Deployment is at revision {new}, and the rollout scales the old ReplicaSet down "
            "as pods of the new template become available; that deletes this pod, then the "
            "kubelet stops it and removes the object."
        )
    else:
        text = "the pod carries on (its containers may never have stopped); taints are lifted."
    return claim(
        "if-node-returns", "returns", text, ctx.pod_fact("metadata.deletionTimestamp"), *wants
    )


def _ordinal(pod_name: str, sts_name: str) -> int | None:
    tail = pod_name[len(sts_name) + 1 :] if pod_name.startswith(sts_name + "-") else ""
    return int(tail) if tail.isdigit() else None


def _ordinals(values: list[int]) -> str:
    return ", ".join(str(v) for v in sorted(values))


def _absent(start: int, stop: int, present: Collection[int]) -> str:
    """The ordinals of [start, stop) not in `present`, listed one by one when few, else as
    ranges ("3-4999"): a StatefulSet may want two billion of them."""
    runs: list[tuple[int, int]] = []
    cursor = start
    for o in sorted(o for o in present if start <= o < stop):
        if o > cursor:
            runs.append((cursor, o - 1))
        cursor = o + 1
    if cursor < stop:
        runs.append((cursor, stop - 1))
    if sum(last - first + 1 for first, last in runs) <= ABSENT_LISTED:
        return _ordinals([o for first, last in runs for o in range(first, last + 1)])
    return ", ".join(str(first) if first == last else f"{first}-{last}" for first, last in runs)


ABSENT_LISTED = 10  # absent ordinals up to this many are listed one by one


def _ordinal_range(start: int, replicas: int) -> str:
    if replicas <= 0:
        return "no ordinals"
    return f"ordinal {start}" if replicas == 1 else f"ordinals {start}-{start + replicas - 1}"


def statefulset_work(sts: Obj, snap: Snapshot, stuck: str) -> str:
    """What the StatefulSet controller has not done yet because of the stuck ordinal: ordinals to
    create or remove, and the pods not yet on the update revision (controller-revision-hash)."""
    name = sts["metadata"]["name"]
    spec, status = sts.get("spec") or {}, sts.get("status") or {}
    replicas = spec.get("replicas", 1)
    start = (spec.get("ordinals") or {}).get("start", 0)
    pods = snap.pods_owned_by(sts["metadata"].get("uid", ""))
    present = {o: p for p in pods if (o := _ordinal(p["metadata"]["name"], name)) is not None}
    stop = start + replicas  # replicas is an int32: the wanted ordinals are counted, never listed
    parts = []
    missing = _absent(start, stop, present)
    if missing:
        parts.append(f"ordinals {missing} not created yet (replicas {replicas})")
    extra = sorted(o for o in present if not start <= o < stop)
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


STS_REVISION_LABEL = "controller-revision-hash"


def _stale_revision(
    ctx: Context, sts: Obj, ordinal: int | None
) -> tuple[str, str, list[Premise]] | None:
    """The pod is on an older revision than its StatefulSet's update revision, and the set's
    RollingUpdate (the default strategy; not OnDelete) covers its ordinal (at or above the
    partition): (its revision, the update revision, premises), else None. The rolling update
    deletes such a pod and recreates it with the new template once the pods above it are
    healthy (pkg/controller/statefulset/stateful_set_control.go updateStatefulSet)."""
    spec, status = sts.get("spec") or {}, sts.get("status") or {}
    strategy = spec.get("updateStrategy") or {}
    mine = (ctx.pod["metadata"].get("labels") or {}).get(STS_REVISION_LABEL)
    update = status.get("updateRevision")
    if not mine or not update or mine == update or strategy.get("type") == "OnDelete":
        return None
    start = (spec.get("ordinals") or {}).get("start", 0)
    partition = (strategy.get("rollingUpdate") or {}).get("partition") or 0
    if ordinal is None or ordinal - start < partition:
        return None
    return (
        mine,
        update,
        [
            ctx.pod_fact(f"metadata.labels[{STS_REVISION_LABEL}]"),
            ctx.owner_fact(0, "status.updateRevision"),
            ctx.owner_fact(0, "spec.updateStrategy.type"),
            ctx.owner_fact(0, "spec.updateStrategy.rollingUpdate.partition"),
        ],
    )


def statefulset(ctx: Context) -> Explained:
    sts = ctx.owners[0] if ctx.owners else None
    spec = (sts or {}).get("spec") or {}
    policy = spec.get("podManagementPolicy") or "OrderedReady"
    name = sts["metadata"]["name"] if sts else "?"
    replicas = spec.get("replicas", 1)
    start = (spec.get("ordinals") or {}).get("start", 0)
    ordinal = _ordinal(ctx.name, name) if sts else None
    wanted = sts is None or ordinal is None or start <= ordinal < start + replicas
    owner_wants = (
        [
            ctx.owner_fact(0, "spec.replicas"),
            ctx.owner_fact(0, "spec.ordinals"),
            ctx.pod_fact("metadata.name"),
        ]
        if sts is not None
        else []
    )
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
    policy_fact = [ctx.owner_fact(0, "spec.podManagementPolicy")] if sts is not None else []
    out: list[Claim] = []
    if not wanted:
        out.append(
            claim(
                "owner-wants",
                "why",
                f"StatefulSet {name} now has replicas {replicas} "
                f"({_ordinal_range(start, replicas)}): {ctx.name} is outside that range, so it "
                + (
                    "is not recreated once its object is gone."
                    if ctx.terminating
                    else "is deleted when the controller scales down, and not recreated."
                ),
                *owner_wants,
                ctx.pod_fact("metadata.deletionTimestamp"),
            )
        )
    if ctx.terminating:
        out.append(
            claim(
                "kubelet-hold",
                "why",
                f"StatefulSet {name} gives each ordinal one fixed name and creates a pod of that "
                "name again only when the old object is gone (at-most-one identity). A dead "
                "kubelet never confirms the deletion, so the object stays"
                + (", blocking its own replacement." if wanted else "."),
                ctx.pod_fact("metadata.deletionTimestamp"),
            )
        )
        out.append(claim("blocks", "why", block[0].upper() + block[1:] + ".", *policy_fact))
        out.append(_released_by(ctx))
    elif not wanted:
        pass  # the owner-wants claim says what becomes of it
    elif ctx.never_evicted:
        out.append(
            claim(
                "counts-as",
                "why",
                f"StatefulSet {name} still counts {ctx.name} as its replica, and the pod "
                "tolerates the node's taints without a time limit: it is never evicted, so it "
                "stays as it is while the node is down.",
                ctx.pod_fact("metadata.deletionTimestamp"),
                *owner_wants,
            )
        )
    elif ctx.grace_zero:
        out.append(
            claim(
                "counts-as",
                "why",
                f"StatefulSet {name} still counts {ctx.name} as its replica. Its grace period is "
                "0: once evicted, the API server removes the object at once, without the "
                f"kubelet, and the StatefulSet controller creates {ctx.name} again elsewhere "
                "while the old one may still run (at-most-one does not hold: split brain).",
                ctx.pod_fact("spec.terminationGracePeriodSeconds"),
                *owner_wants,
            )
        )
    else:
        out.append(
            claim(
                "counts-as",
                "why",
                f"StatefulSet {name} still counts {ctx.name} as its replica. Once evicted it will "
                "stay Terminating"
                + (" and block its own replacement (fixed name, at-most-one). " if wanted else ". ")
                + block
                + ".",
                ctx.pod_fact("metadata.deletionTimestamp"),
                *owner_wants,
                *policy_fact,
            )
        )
    pin = storage.pinning_volume(ctx.pod, ctx.snap, ctx.node)
    only_there = (
        f" (and then only on {ctx.node}: PersistentVolume {pin[2]['metadata']['name']} allows "
        "no other node)"
        if pin is not None
        else ""
    )
    if pin is not None:
        owner_wants += [
            fact("PersistentVolumeClaim", pin[1], "spec.volumeName"),
            fact("PersistentVolume", pin[2], "spec.nodeAffinity.required"),
        ]
    if not wanted:
        rep = Replacement(
            "not-wanted",
            f"none wanted: StatefulSet {name} has replicas {replicas} "
            f"({_ordinal_range(start, replicas)})",
        )
    elif ctx.terminating:
        rep = Replacement(
            "blocked",
            f"blocked: the name {ctx.name} is still taken by this Terminating pod{only_there}",
        )
    elif ctx.grace_zero and not ctx.never_evicted:
        rep = Replacement(
            "not-yet",
            f"none yet: {ctx.name} is created again "
            + (f"on {ctx.node}{only_there}" if pin is not None else "elsewhere")
            + " as soon as the eviction removes the object (grace period 0)",
        )
    else:
        rep = Replacement(
            "blocked",
            f"none: {ctx.name} will be recreated only after the old object is removed" + only_there,
        )
    out.append(
        claim(
            "owner-wants" if not wanted else "replacement",
            "replacement",
            rep.summary,
            *owner_wants,
            ctx.pod_fact("metadata.deletionTimestamp"),
        )
    )
    update = _stale_revision(ctx, sts, ordinal) if sts is not None else None
    if not ctx.terminating and wanted and update is not None:
        revisions = (
            f"{ctx.name} is on revision {update[0]}, StatefulSet {name}'s update revision is "
            f"{update[1]}"
        )
        if policy == "OrderedReady":
            # an OrderedReady set updates only while every pod is Running and Ready, this one
            # included (audit 3053/4, 3053/22)
            returns = (
                f"it runs again; once every pod of StatefulSet {name} is Running and Ready, the "
                f"rolling update replaces it: {revisions}. The controller deletes it (the "
                "highest ordinal first), then the kubelet stops it and the controller recreates "
                f"{ctx.name} with the new template."
            )
        else:
            returns = (
                f"it runs again until the rolling update replaces it: {revisions}. The "
                "controller deletes it (the highest ordinal first, each once the pods above it "
                "are Running and Ready), then the kubelet stops it and the controller recreates "
                f"{ctx.name} with the new template."
            )
        owner_wants += update[2]
    elif not ctx.terminating and wanted:
        returns = "the pod carries on in place."
    elif not ctx.terminating and policy == "OrderedReady":
        # statefulset_control.go processCondemned: in OrderedReady a condemned pod waits while
        # another pod of the set is the first unhealthy one (audit 2028/23)
        returns = (
            f"it is outside replicas {replicas}: the StatefulSet controller deletes it once the "
            "set's other pods are Running and Ready (OrderedReady scales down one pod at a time, "
            "the highest ordinal first); then the kubelet stops it and removes the object; it is "
            "not recreated."
        )
    elif not ctx.terminating:
        returns = (
            f"the StatefulSet controller deletes it (outside replicas {replicas}), then the "
            "kubelet stops it and removes the object; it is not recreated."
        )
    elif wanted and pin is not None:
        returns = (
            f"kubelet removes the old pod, then the StatefulSet controller recreates {ctx.name} "
            f"on {ctx.node} again: its claim {pin[0]} is bound to PersistentVolume "
            f"{pin[2]['metadata']['name']}, whose node affinity allows only {ctx.node} (a local "
            "volume)."
        )
    elif wanted:
        returns = (
            f"kubelet removes the old pod, then the StatefulSet controller recreates {ctx.name} "
            "(it may land on this or another node)."
        )
    else:
        returns = (
            f"kubelet removes the old pod; {ctx.name} is not recreated (outside replicas "
            f"{replicas})."
        )
    out.append(
        claim(
            "if-node-returns",
            "returns",
            returns,
            ctx.pod_fact("metadata.deletionTimestamp"),
            *owner_wants,
        )
    )
    return Explained(out, rep)


def daemonset(ctx: Context) -> Explained:
    name = ctx.owners[0]["metadata"]["name"] if ctx.owners else "?"
    rep = Replacement("not-needed", "none by design (one pod per node)")
    returns = "the pod goes back to Running in place; nothing is recreated."
    if ctx.terminating:
        returns = (
            "kubelet finishes deleting it and the DaemonSet controller creates a new one on "
            "the node."
        )
    return Explained(
        [
            claim(
                "one-per-node",
                "why",
                f"DaemonSet {name} runs one pod per node; its pods tolerate not-ready/unreachable "
                "NoExecute without a time limit, so they are never evicted and never moved. (The "
                "out-of-service taint is not tolerated: it does evict them.)",
                ctx.owner_ref_fact(),
            ),
            claim("replacement", "replacement", rep.summary, ctx.owner_ref_fact()),
            claim(
                "if-node-returns", "returns", returns, ctx.pod_fact("metadata.deletionTimestamp")
            ),
        ],
        rep,
    )


def _job_finished(job: Obj) -> str | None:
    """Complete or Failed when the Job carries that condition True."""
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return None


# A Job that met its success or failure criteria carries SuccessCriteriaMet or FailureTarget
# first, and Complete or Failed only once none of its pods is Terminating any more
# (pkg/controller/job/job_controller.go: delayTerminalCondition, enactJobFinished waits for
# terminating == 0; CountTerminatingPods counts a deleted pod not yet in a terminal phase).
FINISHING = {"SuccessCriteriaMet": "Complete", "FailureTarget": "Failed"}


def _job_finishing(job: Obj) -> str | None:
    """SuccessCriteriaMet or FailureTarget, when the Job carries it True and is not finished."""
    if _job_finished(job) is not None:
        return None
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in FINISHING and cond.get("status") == "True":
            return str(cond["type"])
    return None


def _job_held_open(ctx: Context, job_obj: Obj, name: str, rep: Replacement) -> Explained | None:
    """A Terminating pod (not finished) of a Job that has met its criteria: the Job is not
    Complete (or Failed) while the pod object exists, and a CronJob with concurrencyPolicy
    Forbid starts no run while that Job is active (cronjob_controllerv2.go: a Job leaves
    status.active only once finished). The stuck pod blocks its owner: not cosmetic."""
    finishing = _job_finishing(job_obj)
    if finishing is None or not ctx.terminating or ctx.finished:
        return None
    target = FINISHING[finishing]
    because = [
        ctx.pod_fact("metadata.deletionTimestamp"),
        ctx.pod_fact("status.phase"),
        ctx.owner_fact(0, f"status.conditions[type={finishing}].status"),
        ctx.owner_fact(0, f"status.conditions[type={target}].status"),
        *_node_ready(ctx),
    ]
    text = (
        f"Job {name} has {finishing}=True but is not {target}: the Job controller marks it "
        f"{target} only once none of its pods is Terminating, and this one stays {ctx.phase} "
        f"{_until_kubelet(ctx, short=True)}. Whatever waits for the Job to finish (a pipeline, "
        "ttlSecondsAfterFinished, kubectl wait) waits on this pod."
    )
    cron = ctx.owners[1] if len(ctx.owners) > 1 and ctx.owner_kinds[1] == "CronJob" else None
    if cron is not None:
        policy = (cron.get("spec") or {}).get("concurrencyPolicy") or "Allow"
        because.append(ctx.owner_fact(1, "spec.concurrencyPolicy"))
        cron_name = cron["metadata"]["name"]
        if policy == "Forbid":
            text += (
                f" CronJob {cron_name} has concurrencyPolicy Forbid: it starts no run while "
                "this Job is active, so every scheduled run is skipped until then."
            )
        elif policy == "Replace":
            text += (
                f" CronJob {cron_name} has concurrencyPolicy Replace: its next run deletes this "
                "Job (background propagation) and starts a new one; this pod stays Terminating."
            )
    held = Replacement(
        "blocked",
        f"{rep.summary}; but Job {name} cannot be {target} while this pod exists"
        if rep.pods
        else f"Job {name} cannot be {target} while this pod exists",
        list(rep.pods),
    )
    returns = f"kubelet removes the old pod; then Job {name} is {target}" + (
        f" and CronJob {cron['metadata']['name']} runs again on schedule." if cron else "."
    )
    return Explained(
        [
            claim("blocks", "why", text, *because),
            claim("replacement", "replacement", held.summary, *because),
            claim("if-node-returns", "returns", returns, *because),
        ],
        held,
    )


def _ignores_disruption(spec: Obj, pod: Obj) -> bool:
    """The Job's podFailurePolicy has an Ignore rule on the DisruptionTarget condition, and the
    pod carries it: its failure is not counted (the taint manager sets it when it evicts)."""
    disrupted = any(
        c.get("type") == "DisruptionTarget" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )
    if not disrupted:
        return False
    for rule in ((spec.get("podFailurePolicy") or {}).get("rules")) or []:
        if rule.get("action") != "Ignore":
            continue
        if any(c.get("type") == "DisruptionTarget" for c in rule.get("onPodConditions") or []):
            return True
    return False


# The Job controller's pod-failure backoff (pkg/controller/job/job_controller.go
# DefaultJobPodFailureBackOff, MaxJobPodFailureBackOff; backoff_utils.go): 10 s after a failure,
# doubled for each further failure since the last success, at most 10 min.
JOB_BACKOFF_BASE = 10
JOB_BACKOFF_MAX = 600


def job_wants(job_obj: Obj) -> int:
    """How many pods a running Job keeps active: min(parallelism, completions - succeeded); with
    no completions (a work queue), parallelism until the first success, then none new."""
    spec, status = job_obj.get("spec") or {}, job_obj.get("status") or {}
    parallelism = spec.get("parallelism")
    parallelism = 1 if parallelism is None else parallelism
    succeeded = status.get("succeeded") or 0
    completions = spec.get("completions")
    if completions is None:
        return parallelism if succeeded == 0 else 0
    return max(0, min(parallelism, completions - succeeded))


def job_backoff_bound(job_obj: Obj) -> int:
    """Seconds within which the Job's backoff has run out: failures since the last success are at
    most status.failed, plus this pod when not counted yet."""
    failed = ((job_obj.get("status") or {}).get("failed") or 0) + 1
    return int(min(JOB_BACKOFF_MAX, JOB_BACKOFF_BASE * 2 ** min(failed - 1, 10)))


def _job_next_pod(ctx: Context, job_obj: Obj, name: str) -> tuple[Replacement, Claim]:
    """A Terminating pod of a live Job (not finished, not suspended) whose owner may replace it
    at once (TerminatingOrFailed) and has not yet: either the Job wants no more pods, or its
    pod-failure backoff delays the next one."""
    counts = [
        ctx.owner_fact(0, "spec.parallelism"),
        ctx.owner_fact(0, "spec.completions"),
        ctx.owner_fact(0, "status.succeeded"),
        ctx.owner_fact(0, "status.active"),
    ]
    wants = job_wants(job_obj)
    active = (job_obj.get("status") or {}).get("active") or 0
    if active >= wants:
        rep = Replacement(
            "not-wanted",
            f"none needed: Job {name} wants {wants} active pod(s) and has {active}",
        )
        return rep, claim("owner-wants", "replacement", rep.summary, *counts)
    bound = job_backoff_bound(job_obj)
    rep = Replacement(
        "not-yet",
        f"none yet: Job {name} has {active} of {wants} wanted active pod(s); it creates the "
        f"next after its pod-failure backoff, within {bound} s",
        expected_by=shifted(ctx.now, bound),
    )
    return rep, claim(
        "replacement", "replacement", rep.summary, *counts, ctx.owner_fact(0, "status.failed")
    )


def job(ctx: Context) -> Explained:
    job_obj = ctx.owners[0] if ctx.owners else None
    spec = (job_obj or {}).get("spec") or {}
    policy = spec.get("podReplacementPolicy") or (
        "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed"
    )
    name = job_obj["metadata"]["name"] if job_obj else "?"
    cron = f" (CronJob {ctx.owners[1]['metadata']['name']})" if len(ctx.owners) > 1 else ""
    policy_facts = (
        [ctx.owner_fact(0, "spec.podReplacementPolicy"), ctx.owner_fact(0, "spec.podFailurePolicy")]
        if job_obj is not None
        else []
    )
    done = _job_finished(job_obj) if job_obj is not None else None
    suspended = bool(spec.get("suspend"))
    ignored = _ignores_disruption(spec, ctx.pod)
    if suspended:
        policy_facts.append(ctx.owner_fact(0, "spec.suspend"))
    if ignored:
        policy_facts.append(ctx.pod_fact("status.conditions[type=DisruptionTarget].status"))
    found = (
        _replacements(ctx, job_obj["metadata"]["uid"], finished_too=True)
        if job_obj is not None and ctx.terminating
        else []
    )
    if done is not None and not found:
        cond = ctx.owner_fact(0, f"status.conditions[type={done}].status")
        rep = Replacement("not-wanted", f"none wanted: Job {name} is {done}")
        return Explained(
            [
                claim(
                    "owner-wants",
                    "why",
                    f"Job {name}{cron} has finished ({done}=True): it creates no more pods, so "
                    "nothing replaces this one and nothing waits on it.",
                    cond,
                ),
                claim("owner-wants", "replacement", rep.summary, cond),
                claim(
                    "if-node-returns",
                    "returns",
                    "kubelet stops the old containers and removes the object; the Job, already "
                    f"{done}, does not change.",
                    cond,
                    ctx.pod_fact("metadata.deletionTimestamp"),
                ),
            ],
            rep,
        )
    if policy == "Failed":
        text = (
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
        text = (
            f"Job {name}{cron} has no podReplacementPolicy (this server predates it) and no "
            "podFailurePolicy: a replacement is created as soon as the pod is Terminating."
        )
    else:
        text = (
            f"Job {name}{cron} has podReplacementPolicy TerminatingOrFailed (the default): a "
            "replacement is created as soon as the pod is Terminating."
        )
    if not ctx.terminating:
        text += " The pod is not evicted yet, so it still counts as active."
    out = [
        claim("counts-as", "why", text, ctx.pod_fact("metadata.deletionTimestamp"), *policy_facts)
    ]
    if not ctx.terminating:
        rep = Replacement("not-yet", "none yet: the pod still counts as active")
        rep_claim = claim(
            "replacement", "replacement", rep.summary, ctx.pod_fact("metadata.deletionTimestamp")
        )
    elif job_obj is None:
        rep = Replacement("unknown", "owner not read: cannot look for the replacement")
        rep_claim = claim("replacement", "replacement", rep.summary)
    elif found:
        rep, rep_claim = _found(found, ctx.node, "replacement")
    elif policy == "Failed":
        rep = Replacement(
            "blocked", "blocked: podReplacementPolicy Failed waits for this pod to fail"
        )
        rep_claim = claim("replacement", "replacement", rep.summary, *policy_facts)
    elif suspended:
        rep = Replacement("not-wanted", f"none while Job {name} is suspended (spec.suspend)")
        rep_claim = claim(
            "owner-wants", "replacement", rep.summary, ctx.owner_fact(0, "spec.suspend")
        )
    else:
        rep, rep_claim = _job_next_pod(ctx, job_obj, name)
    held_open = _job_held_open(ctx, job_obj, name, rep) if job_obj is not None else None
    if held_open is not None:  # its replacement policy no longer matters: it wants no pod
        return held_open
    out.append(rep_claim)
    counted = (
        "the Job does not count it as failed (its podFailurePolicy ignores DisruptionTarget)"
        if ignored
        else "the Job counts it as failed"
    )
    if ctx.terminating and done is not None:
        returns = f"kubelet removes the old pod; the Job, already {done}, does not change."
    elif ctx.terminating and suspended:
        # Whether a suspended Job counts the pod it deleted as failed is not said: KEP-2232
        # says it does, the v1.36 control plane did not (audit 2026/153).
        returns = "kubelet removes the old pod; the Job, suspended, creates no replacement."
    elif ctx.terminating:
        returns = f"kubelet removes the old pod; {counted}" + (
            " and then creates the replacement." if policy == "Failed" else "."
        )
    elif suspended:
        returns = (
            f"Job {name} is suspended: it deletes this pod, then the kubelet stops it and "
            "removes the object; no replacement while suspended."
        )
    else:
        returns = "the pod carries on and may complete."
    out.append(
        claim(
            "if-node-returns",
            "returns",
            returns,
            ctx.pod_fact("metadata.deletionTimestamp"),
            ctx.pod_fact("status.phase"),
            *policy_facts,
            *([ctx.owner_fact(0, f"status.conditions[type={done}].status")] if done else []),
        )
    )
    return Explained(out, rep)


def mirror(ctx: Context) -> Explained:
    rep = Replacement("none", "none possible: static pods live on their node")
    source = ctx.pod_fact(f"metadata.annotations[{facts.ANNOTATION_MIRROR}]")
    return Explained(
        [
            claim(
                "static-pod",
                "why",
                "a static pod: the kubelet runs it from a manifest file on the node and only "
                "mirrors it into the API. Deleting the API object does not stop it (the kubelet "
                "recreates the mirror); nothing through the API can move it.",
                source,
            ),
            claim("replacement", "replacement", rep.summary, source),
            claim(
                "if-node-returns",
                "returns",
                "the kubelet restarts it from its manifest; the mirror pod reappears and its "
                "start time resets.",
                source,
            ),
        ],
        rep,
    )


def bare(ctx: Context) -> Explained:
    refs = ctx.owner_ref_fact()
    rep = Replacement("none", "none will come (no controller)")
    returns = (
        "kubelet kills it and removes the object: it is gone for good."
        if ctx.terminating
        else "the pod carries on in place."
    )
    return Explained(
        [
            claim(
                "no-owner",
                "why",
                "no controller owns this pod: nothing recreates it anywhere. Deleting it loses "
                "it; recreate it yourself from its manifest if it is needed.",
                refs,
            ),
            claim("replacement", "replacement", rep.summary, refs),
            claim(
                "if-node-returns",
                "returns",
                returns,
                ctx.pod_fact("metadata.deletionTimestamp"),
                refs,
            ),
        ],
        rep,
    )


def other(ctx: Context) -> Explained:
    refs = ctx.owner_ref_fact()
    ref = (ctx.pod["metadata"].get("ownerReferences") or [{}])[0]
    what = f"{ref.get('kind', '?')} {ref.get('name', '?')} ({ref.get('apiVersion', '?')})"
    rep = Replacement("unknown", f"depends on {ref.get('kind', 'the owner')}")
    returns = (
        "kubelet finishes the deletion; the owner then does what it does."
        if ctx.terminating
        else "the pod carries on in place."
    )
    return Explained(
        [
            claim(
                "unknown-owner",
                "why",
                f"owned by {what}: what replaces it depends on that controller. Most treat a "
                "Terminating pod as gone (like ReplicaSets); identity-keeping ones behave like "
                "StatefulSets and wait for the object to disappear.",
                refs,
            ),
            claim("replacement", "replacement", rep.summary, refs),
            claim(
                "if-node-returns", "returns", returns, ctx.pod_fact("metadata.deletionTimestamp")
            ),
        ],
        rep,
    )


def owner_gone(ctx: Context) -> bool:
    """The pod's controller is not in the snapshot and nothing says it could not be read: it was
    deleted (the garbage collector removes its pods)."""
    if ctx.owners or ctx.kind in ("bare", "mirror", "other"):
        return False
    ref = (ctx.pod["metadata"].get("ownerReferences") or [{}])[0]
    kind = str(ref.get("kind") or "")
    return not any(kind.lower() in gap.lower() or "owner" in gap.lower() for gap in ctx.snap.gaps)


def orphaned(ctx: Context) -> Explained:
    """Its owner was deleted: nothing recreates the pod, whatever kind the owner was."""
    ref = next(
        (r for r in ctx.pod["metadata"].get("ownerReferences") or [] if r.get("controller")),
        (ctx.pod["metadata"].get("ownerReferences") or [{}])[0],
    )
    owner = f"{ref.get('kind', '?')} {ref.get('name', '?')}"
    refs = ctx.owner_ref_fact()
    rep = Replacement("not-wanted", f"none: its owner {owner} is gone")
    returns = (
        "kubelet removes the old pod; nothing recreates it (its owner is gone)."
        if ctx.terminating
        else "the pod carries on until the garbage collector deletes it (its owner is gone)."
    )
    return Explained(
        [
            claim(
                "owner-wants",
                "why",
                f"its owner {owner} is not in the cluster (deleted): nothing recreates this pod, "
                "and the garbage collector deletes it.",
                refs,
            ),
            claim("owner-wants", "replacement", rep.summary, refs),
            claim(
                "if-node-returns",
                "returns",
                returns,
                refs,
                ctx.pod_fact("metadata.deletionTimestamp"),
            ),
        ],
        rep,
    )


# The garbage collector's finalizer on an owner deleted in the foreground: the owner stays until
# its dependents with blockOwnerDeletion are gone from the API (garbagecollector.go
# processDeletingDependentsItem), a pod merely Terminating included.
FOREGROUND = "foregroundDeletion"


def _deleting_owner(ctx: Context) -> int | None:
    """0 when the pod's ReplicaSet (or ReplicationController) has a deletionTimestamp: its
    controller creates no pod for it any more (replica_set.go manages replicas only while the
    set is not being deleted). A Deployment being deleted alone decides nothing: its ReplicaSet
    still manages its replicas until the garbage collector deletes it too."""
    if ctx.kind not in ("deployment", "replicaset", "replicationcontroller") or not ctx.owners:
        return None
    return 0 if ctx.owners[0]["metadata"].get("deletionTimestamp") else None


def owner_deleting(ctx: Context, index: int) -> Explained:
    """A pod whose owner is being deleted: not replaced; deleted in the foreground, the owner
    (and the Deployment above it, when that is being deleted too) stays until this pod object
    is gone, so the deletion waits on it."""
    deleting = [
        i
        for i in range(index, min(len(ctx.owners), 2))
        if ctx.owners[i]["metadata"].get("deletionTimestamp")
    ]
    owner, kind = ctx.owners[index], ctx.owner_kinds[index]
    name = owner["metadata"]["name"]
    named = " and ".join(
        f"{ctx.owner_kinds[i]} {ctx.owners[i]['metadata']['name']}" for i in reversed(deleting)
    )
    being, stay, wait = (
        ("are", "they stay", "wait") if len(deleting) > 1 else ("is", "it stays", "waits")
    )
    foreground = FOREGROUND in (owner["metadata"].get("finalizers") or [])
    because = [
        p
        for i in deleting
        for p in (
            ctx.owner_fact(i, "metadata.deletionTimestamp"),
            ctx.owner_fact(i, "metadata.finalizers"),
        )
    ]
    because += [ctx.pod_fact("metadata.deletionTimestamp"), *_node_ready(ctx)]
    if foreground:
        text = (
            f"{named} {being} being deleted in the foreground (finalizer {FOREGROUND}): "
            f"{kind} {name} creates no replacement, and {stay} until this pod object is "
            f"gone, {_until_kubelet(ctx)}. The deletion (and whatever waits on it: a delete run "
            "with --wait, a GitOps sync) waits on this pod."
        )
        rep = Replacement(
            "blocked", f"none wanted: {named} {being} being deleted and {wait} for this pod"
        )
        returns = (
            "kubelet stops the old containers and removes the object; then the garbage "
            f"collector finishes deleting {named}."
        )
    elif "orphan" in (owner["metadata"].get("finalizers") or []):
        text = (
            f"{kind} {name} is being deleted, orphaning its dependents (finalizer orphan): it "
            "creates no replacement, and the garbage collector removes this pod's owner "
            "reference instead of deleting it."
        )
        rep = Replacement("not-wanted", f"none: {kind} {name} is being deleted")
        returns = "the pod carries on, owned by nothing, or the kubelet removes it if deleted."
    else:
        text = (
            f"{kind} {name} is being deleted: it creates no replacement, and the garbage "
            "collector deletes this pod."
        )
        rep = Replacement("not-wanted", f"none: {kind} {name} is being deleted")
        returns = "kubelet removes the old pod; nothing recreates it (its owner is being deleted)."
    return Explained(
        [
            claim("blocks" if foreground else "owner-wants", "why", text, *because),
            claim("owner-wants", "replacement", rep.summary, *because),
            claim("if-node-returns", "returns", returns, *because),
        ],
        rep,
    )


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


def explain(ctx: Context) -> Explained:
    """The pod's claims (why it is stuck, its replacement, what happens if the node returns)
    and its replacement. A finished pod that was deleted is explained as such, whatever owns it."""
    if ctx.terminating and ctx.finished and ctx.kind not in ("mirror", "daemonset"):
        return _finished(ctx)
    if owner_gone(ctx):
        return orphaned(ctx)
    deleting = _deleting_owner(ctx)
    if deleting is not None:
        return owner_deleting(ctx, deleting)
    return RULES[ctx.kind](ctx)
