"""The ReplicaSet rule (also for Deployments and ReplicationControllers): a live replica until
evicted, a Terminating pod counted as gone and replaced at once, and the Deployment's rollouts
(a newer template superseding the ReplicaSet, a Recreate rollout waiting on the pod).
"""

from __future__ import annotations

from kubectl_nodefail.analysis.claims import Claim, Premise, claim, fact
from kubectl_nodefail.analysis.controllers.context import (
    Context,
    Explained,
    _active,
    _live,
    _node_ready,
    _until_kubelet,
)
from kubectl_nodefail.analysis.controllers.replacement import (
    _found,
    _replacements,
    _returns_after_replacement,
    pending_reason,
)
from kubectl_nodefail.analysis.findings import Replacement
from kubectl_nodefail.analysis.nodes import lifecycle_off
from kubectl_nodefail.analysis.text import plural
from kubectl_nodefail.snapshot.model import Obj


def _counted(ctx: Context, rs: Obj) -> list[Obj]:
    """The ReplicaSet's live pods other than this one."""
    uid = ctx.pod["metadata"].get("uid")
    return [
        p
        for p in ctx.snap.pods_owned_by(rs["metadata"]["uid"])
        if _live(p) and p["metadata"].get("uid") != uid
    ]


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
        f"Terminating ones included. This pod stays {ctx.phase} "
        + (
            "until PodGC marks it Failed (it is on no node: on PodGC's next pass, every 20 s"
            f"{ctx.podgc_passed_over()})"
            if not ctx.node
            else "until its kubelet ends it, or PodGC marks it Failed (under the out-of-service "
            "taint, or once its Node is deleted)"
        )
        + ", so until then the rollout waits on it and the Deployment runs no pod of the new "
        "template."
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
        ctx.pod_fact("metadata.deletionTimestamp"),
    ]


def _recreate_blocked(ctx: Context, waits: tuple[str, list[Premise]]) -> Explained:
    """The pod a Recreate rollout waits on: blocked, and it blocks its Deployment."""
    text, because = waits
    name = ctx.owners[1]["metadata"]["name"]
    rep = Replacement(
        "blocked",
        f"blocked: Deployment {name} (strategy Recreate) creates no pod of its new template "
        f"while this pod is neither Failed nor Succeeded (it is {ctx.phase}; a finalizer may "
        "keep the object after)",
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
            claim("if-node-returns", "returns", _recreate_returns(ctx, name), deletion, *because),
        ],
        rep,
        on_phase=True,
    )


def _recreate_returns(ctx: Context, name: str) -> str:
    """What the node's return does for a Recreate rollout waiting on this pod: its kubelet ends
    it (finalizers may keep the object: the rollout needs only the pod ended); a pod on no node
    is ended by PodGC, not by any node's return."""
    scales = (
        f"Deployment {name} (Recreate) scales its new ReplicaSet up (creating it first if need be)"
    )
    if not ctx.node:
        return (
            "it is on no node, so no node's return ends it: PodGC marks it Failed, and then "
            f"{scales}, once no other pod of an older ReplicaSet runs."
        )
    if ctx.foreign_finalizers:
        return f"kubelet stops the old containers (its finalizers keep the object); then {scales}."
    return f"kubelet stops the old containers and removes the object; then {scales}."


def replicaset(ctx: Context) -> Explained:
    rs = ctx.owners[0] if ctx.owners else None
    owner = (
        "Deployment " + ctx.owners[1]["metadata"]["name"]
        if len(ctx.owners) > 1
        else ("ReplicaSet " + ctx.owner_name())
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
            rep = Replacement("not-yet", f"none yet: created when the pod is {ctx.ends}")
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
        # the node lifecycle controller lifts its taints from a node back Ready, if it runs
        lifted = "" if lifecycle_off(ctx.snap, ctx.now)[0] else "; taints are lifted"
        text = f"the pod carries on (its containers may never have stopped){lifted}."
    return claim(
        "if-node-returns", "returns", text, ctx.pod_fact("metadata.deletionTimestamp"), *wants
    )
