"""The rules that come before the owner kind's own: a finished pod that was deleted, an owner
gone from the cluster, and an owner being deleted (in the foreground, the deletion waits on the
pod).
"""

from __future__ import annotations

from kubectl_nodefail.analysis.claims import Premise, claim
from kubectl_nodefail.analysis.controllers.context import (
    Context,
    Explained,
    _node_ready,
    _until_kubelet,
)
from kubectl_nodefail.analysis.controllers.jobs import managed_by
from kubectl_nodefail.analysis.controllers.statefulsets import _ordinal
from kubectl_nodefail.analysis.findings import Replacement
from kubectl_nodefail.snapshot.model import Obj


def _finished(ctx: Context) -> Explained:
    """A pod that had run to completion, then was deleted: the API server removes a finished
    pod at once (grace period 0, no kubelet needed), so only finalizers keep its object. What
    waits on it then: a StatefulSet that wants its name back, an owner deleted in the
    foreground; otherwise nothing."""
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
    waiter = (_statefulset_waits(ctx) or _foreground_waits(ctx)) if held else None
    finalizers = ctx.pod_fact("metadata.finalizers")
    if waiter is not None:
        waits, gone, summary, facts = waiter
        why.append(
            claim(
                "held-by-finalizers",
                "why",
                f"Only finalizers {', '.join(held)} keep the object, and {waits}.",
                finalizers,
                *facts,
            )
        )
        rep = Replacement("blocked", summary)
        return Explained(
            [
                *why,
                claim("blocks", "replacement", rep.summary, finalizers, *facts),
                claim(
                    "if-node-returns",
                    "returns",
                    "nothing changes for it: the kubelet has nothing left to stop, and the "
                    f"object stays until its finalizers are removed; then {gone}.",
                    ctx.pod_fact("status.phase"),
                    finalizers,
                ),
            ],
            rep,
        )
    if held:
        why.append(
            claim(
                "held-by-finalizers",
                "why",
                f"Only finalizers {', '.join(held)} keep the object; nothing waits on it.",
                finalizers,
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
                finalizers,
            ),
        ],
        rep,
    )


# What waits on a finished pod's object: (the words, what follows once it is gone, the
# replacement's summary, the facts).
Waiter = tuple[str, str, str, list[Premise]]


def _foreground_waits(ctx: Context) -> Waiter | None:
    """The pod's owner being deleted in the foreground: its deletion waits for every dependent
    object to go, this one too (garbage collector)."""
    if not ctx.owners:
        return None
    meta = ctx.owners[0]["metadata"]
    if not meta.get("deletionTimestamp") or FOREGROUND not in (meta.get("finalizers") or []):
        return None
    blocks = _blocks_owner(ctx, ctx.owners[0])
    if not blocks.value:
        return None
    owner = f"{ctx.owner_kinds[0]} {meta.get('name')}"
    facts = [
        ctx.owner_fact(0, "metadata.deletionTimestamp"),
        ctx.owner_fact(0, "metadata.finalizers"),
        blocks,
    ]
    return (
        f"{owner}, being deleted in the foreground, waits for it to go",
        f"{owner}'s deletion no longer waits on it",
        f"none wanted: {owner} is being deleted and waits for this object",
        facts,
    )


def _blocks_owner(ctx: Context, owner: Obj) -> Premise:
    """The pod's reference to `owner` blocks its deletion: the garbage collector's foreground
    deletion waits only for dependents whose reference says blockOwnerDeletion (controllers set
    it on their pods; a reference written by hand may not)."""
    uid = owner["metadata"].get("uid", "")
    return ctx.pod_fact(f"metadata.ownerReferences[uid={uid}].blockOwnerDeletion")


def _statefulset_waits(ctx: Context) -> Waiter | None:
    """A StatefulSet that still wants this pod's ordinal creates the name again only once the
    object is gone (at-most-one identity; its controller deletes a Failed pod and recreates it;
    audit 2048/93). None for another owner, or an ordinal outside its range."""
    if ctx.kind != "statefulset" or not ctx.owners or ctx.owner_kinds[0] != "StatefulSet":
        return None
    sts = ctx.owners[0]
    if sts["metadata"].get("deletionTimestamp"):
        return None
    name = sts["metadata"]["name"]
    spec = sts.get("spec") or {}
    replicas = 1 if spec.get("replicas") is None else spec["replicas"]  # the API's default
    start = (spec.get("ordinals") or {}).get("start", 0)
    ordinal = _ordinal(ctx.name, name)
    if ordinal is None or not isinstance(replicas, int) or not isinstance(start, int):
        return None
    if not start <= ordinal < start + replicas:
        return None
    facts = [
        ctx.owner_fact(0, "spec.replicas"),
        ctx.owner_fact(0, "spec.ordinals"),
        ctx.owner_fact(0, "metadata.deletionTimestamp"),
        ctx.pod_fact("metadata.name"),
    ]
    return (
        f"StatefulSet {name} creates {ctx.name} again only once it is gone: the ordinal waits "
        "on them",
        f"StatefulSet {name} creates {ctx.name} again",
        f"blocked: StatefulSet {name} creates {ctx.name} again only once this object is gone",
        facts,
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


# The controllers that make no pod for an owner with a deletionTimestamp: replica_set.go
# (manageReplicas only while `rs.DeletionTimestamp == nil`); stateful_set_control.go ("If the
# StatefulSet is being deleted, don't do anything other than updating status"); daemon_controller
# syncDaemonSet returns at once (audit 2053/8: a DaemonSet deleted in the foreground was said to
# make a new pod on the node once it returned); job_controller.go syncJob (manageJob only while
# `job.DeletionTimestamp == nil`; its status and conditions still move). A Job another
# controller manages (spec.managedBy) is that controller's to say.
STOPS_WHEN_DELETED = (
    "deployment",
    "replicaset",
    "replicationcontroller",
    "statefulset",
    "daemonset",
    "job",
    "cronjob",
)


def _deleting_owner(ctx: Context) -> int | None:
    """0 when the pod's own controller (ReplicaSet, ReplicationController, StatefulSet,
    DaemonSet, Job) has a deletionTimestamp: it creates no pod for it any more. A Deployment or
    CronJob being deleted alone decides nothing: its ReplicaSet or Job still manages its pods
    until the garbage collector deletes it too."""
    if ctx.kind not in STOPS_WHEN_DELETED or not ctx.owners:
        return None
    if ctx.owner_kinds[0] == "Job" and managed_by(ctx.owners[0]) is not None:
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
    blocks = _blocks_owner(ctx, owner)
    foreground = FOREGROUND in (owner["metadata"].get("finalizers") or []) and bool(blocks.value)
    because = [
        p
        for i in deleting
        for p in (
            ctx.owner_fact(i, "metadata.deletionTimestamp"),
            ctx.owner_fact(i, "metadata.finalizers"),
        )
    ]
    because += [ctx.pod_fact("metadata.deletionTimestamp"), blocks, *_node_ready(ctx)]
    if kind == "Job":  # the built-in Job controller's to act on (else not said: _deleting_owner)
        because.append(ctx.owner_fact(index, "spec.managedBy"))
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
