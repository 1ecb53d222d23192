"""The StatefulSet rule: one fixed name per ordinal, created again only once the old object is
gone (at-most-one identity), what the stuck ordinal holds up (higher ordinals, scale-down,
rolling updates), and a local volume that brings the pod back to its node.
"""

from __future__ import annotations

from collections.abc import Collection

from kubectl_nodefail.analysis import facts, owners, storage
from kubectl_nodefail.analysis.claims import Claim, Premise, claim, fact
from kubectl_nodefail.analysis.controllers.context import Context, Explained
from kubectl_nodefail.analysis.controllers.replacement import required_hosts
from kubectl_nodefail.analysis.findings import Replacement
from kubectl_nodefail.snapshot.model import Obj, Snapshot


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


def _lower(name: str, start: int, ordinal: int) -> str:
    """The ordinals below `ordinal`, by pod name, with their verb's number."""
    if ordinal - start == 1:
        return f"{name}-{start} is"
    return f"{name}-{start} to {name}-{ordinal - 1} are"


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


def _bound_here(ctx: Context, sts: Obj | None) -> tuple[str, Premise] | None:
    """Why the recreated pod can only be on this node, from the set's template or (as it was
    made from it) the pod's own spec: spec.nodeName, a nodeSelector or a required node
    affinity naming only this node. None when the scheduler may place it elsewhere."""
    if sts is not None and owners.template_node(sts) == ctx.node:
        return "its template binds every pod there (spec.nodeName)", ctx.owner_fact(
            0, "spec.template.spec.nodeName"
        )
    spec = ctx.pod.get("spec") or {}
    if (spec.get("nodeSelector") or {}).get(facts.LABEL_HOSTNAME) == ctx.node:
        return f"its nodeSelector allows only {ctx.node}", ctx.pod_fact(
            f"spec.nodeSelector[{facts.LABEL_HOSTNAME}]"
        )
    if required_hosts(spec) == [ctx.node]:
        return f"its required node affinity allows only {ctx.node}", ctx.pod_fact(
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        )
    return None


def statefulset(ctx: Context) -> Explained:
    sts = ctx.owners[0] if ctx.owners else None
    spec = (sts or {}).get("spec") or {}
    policy = spec.get("podManagementPolicy") or "OrderedReady"
    name = ctx.owner_name()
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
    if sts is None:
        block = (
            f"its podManagementPolicy is unknown (StatefulSet {name} not read): under "
            "OrderedReady, the default, the stuck ordinal also blocks creating higher ordinals, "
            "scale-down and rolling updates; under Parallel, only a rolling update stops at it"
        )
    elif policy == "OrderedReady":
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
                *([] if sts is not None else [ctx.owner_ref_fact()]),
            )
        )
        out.append(
            claim(
                "blocks",
                "why",
                block[0].upper() + block[1:] + ".",
                *(policy_fact or [ctx.owner_ref_fact()]),
            )
        )
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
    # stateful_set_control.go: OrderedReady creates a missing ordinal only once every lower
    # one is Running and Ready, one pod at a time (audit 2078/43: its own set's lower ordinals
    # were on the dead node too, and were recreated first)
    # (and available: Ready for minReadySeconds; isRunningAndAvailable)
    # removed at once when it goes: a grace period of 0, or PodGC's force delete (its node
    # gone), unless a finalizer keeps the object (and the name) after it
    swept = ctx.gone and not ctx.foreign_finalizers
    at_once = swept or (ctx.grace_zero and not ctx.never_evicted)
    remade = wanted and (ctx.terminating or at_once)
    ready_for = spec.get("minReadySeconds") or 0
    in_order = (
        f" once {_lower(name, start, ordinal)} Running and Ready"
        + (f" (each for minReadySeconds, {ready_for}s)" if ready_for else "")
        + " (OrderedReady creates one pod at a time, the lowest ordinal first)"
        if remade and policy == "OrderedReady" and ordinal is not None and ordinal > start
        else ""
    )
    if in_order:
        owner_wants += [*policy_fact, ctx.owner_fact(0, "spec.minReadySeconds")]
    if not wanted:
        rep = Replacement(
            "not-wanted",
            f"none wanted: StatefulSet {name} has replicas {replicas} "
            f"({_ordinal_range(start, replicas)})",
        )
    elif ctx.terminating and not swept:
        rep = Replacement(
            "blocked",
            f"blocked: the name {ctx.name} is still taken by this Terminating pod{only_there}",
        )
    elif at_once:
        # a node gone: its local volume's node cannot be looked at, so nowhere else is said
        affine = _node_affine(ctx) if swept else None
        if affine is not None:
            owner_wants.append(fact("PersistentVolume", affine, "spec.nodeAffinity.required"))
        where = (
            ""
            if affine is not None
            else f" on {ctx.node}{only_there}"
            if pin is not None
            else " elsewhere"
        )
        rep = Replacement(
            "not-yet",
            f"none yet: {ctx.name} is created again{where}"
            + (
                " as soon as PodGC force-deletes the object"
                if swept
                else " as soon as the eviction removes the object (grace period 0)"
            )
            + (
                f" (where: as PersistentVolume {affine['metadata']['name']}'s node affinity "
                "allows; if it allows only the deleted node, it stays Pending)"
                if affine is not None
                else ""
            )
            + ("," + in_order if in_order else ""),
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
            f"on {ctx.node} again{in_order}: its claim {pin[0]} is bound to PersistentVolume "
            f"{pin[2]['metadata']['name']}, whose node affinity allows only {ctx.node} (a local "
            "volume)."
        )
    elif wanted and (bound := _bound_here(ctx, sts)) is not None:
        returns = (
            f"kubelet removes the old pod, then the StatefulSet controller recreates {ctx.name} "
            f"on {ctx.node} again{in_order}: {bound[0]}."
        )
        owner_wants.append(bound[1])
    elif wanted:
        returns = (
            f"kubelet removes the old pod, then the StatefulSet controller recreates {ctx.name}"
            f"{in_order} (it may land on this or another node)."
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


def _node_affine(ctx: Context) -> Obj | None:
    """The first PersistentVolume the pod claims whose required node affinity restricts where
    it can be used."""
    for _, _, pv in storage.claimed_volumes(ctx.pod, ctx.snap):
        if pv is not None and ((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required"):
            return pv
    return None
