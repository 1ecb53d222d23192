"""The owners whose story needs no search: a DaemonSet's pod (one per node, never moved), a
static pod (its kubelet runs it from a manifest), a bare pod (nothing recreates it) and a pod of
a controller kind not known here (it depends on that controller).
"""

from __future__ import annotations

from kubectl_nodefail.analysis import facts
from kubectl_nodefail.analysis.claims import Claim, Premise, claim
from kubectl_nodefail.analysis.controllers.context import Context, Explained
from kubectl_nodefail.analysis.findings import Replacement


def daemonset(ctx: Context) -> Explained:
    name = ctx.owner_name()
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


def owner_decides(
    ctx: Context,
    why: str,
    rep: Replacement,
    rep_claim: Claim,
    after_deletion: str,
    owner: Premise,
) -> Explained:
    """A pod whose fate another controller decides (a kind not known here, a Job managed by
    another controller): why, what stands in for it, and what follows a return, no more."""
    returns = after_deletion if ctx.terminating else "the pod carries on in place."
    return Explained(
        [
            claim("unknown-owner", "why", why, owner),
            rep_claim,
            claim(
                "if-node-returns",
                "returns",
                returns,
                owner,
                ctx.pod_fact("metadata.deletionTimestamp"),
            ),
        ],
        rep,
    )


def other(ctx: Context) -> Explained:
    refs = ctx.owner_ref_fact()
    ref = (ctx.pod["metadata"].get("ownerReferences") or [{}])[0]
    what = f"{ref.get('kind', '?')} {ref.get('name', '?')} ({ref.get('apiVersion', '?')})"
    rep = Replacement("unknown", f"depends on {ref.get('kind', 'the owner')}")
    return owner_decides(
        ctx,
        f"owned by {what}: what replaces it depends on that controller. Most treat a "
        "Terminating pod as gone (like ReplicaSets); identity-keeping ones behave like "
        "StatefulSets and wait for the object to disappear.",
        rep,
        claim("replacement", "replacement", rep.summary, refs),
        "kubelet finishes the deletion; the owner then does what it does.",
        refs,
    )
