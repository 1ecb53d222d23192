"""A saved plan against the live cluster: the saved steps narrowed by a plan computed now (a
saved plan narrows, never widens), how a recorded attestation reads at replay, and whether the
plan is bound to this cluster at all.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kubectl_nodefail.analysis.claims import Premise
from kubectl_nodefail.common import attestation
from kubectl_nodefail.remediate.steps import MUTATING, Attestation, Binding, Plan, Step


def step_key(step: Step) -> tuple[str, str, str, str]:
    """What identifies a step across plans: the same action on the same object of one node."""
    return (step.action, step.target, step.node, step.uid)


def _missing(old: Step, fresh: Plan) -> str:
    """Why the live plan has no step matching a saved one."""
    same = [s for s in fresh.steps if s.target == old.target]
    if any(s.action == old.action and s.node == old.node for s in same):
        uid = next(s.uid for s in same if s.action == old.action)
        return f"{old.target} is another object now: UID {uid}, the saved plan's {old.uid}"
    if same:
        return f"the live plan has {same[0].action} on node {same[0].node} for {old.target}"
    return (
        f"the live plan has no {old.action} for {old.target} on node {old.node}: the object "
        "is gone, recreated or moved, or the node is Ready again"
    )


def _live_words(old: Step, live: _LiveWords) -> Step:
    """What a saved step not in the live plan may still say of pods: only those the live plan
    finds stuck (the same entry in one of its steps), with the live plan's facts about them.
    A saved file's words about pods are never shown as they were written."""
    releases = [r for r in old.releases if r in live.releases]
    leaves = [r for r in old.leaves_stuck if r in live.leaves_stuck]
    because = [p for r in releases + leaves for p in live.facts.get(_pod_ref(r), [])]
    return replace(old, releases=releases, leaves_stuck=leaves, because=because)


@dataclass
class _LiveWords:
    """The live plan's entries of stuck pods, and its facts about each pod, found once."""

    releases: set[str]
    leaves_stuck: set[str]
    facts: dict[str, list[Premise]]

    @classmethod
    def of(cls, fresh: Plan) -> _LiveWords:
        facts: dict[str, dict[tuple[str, str], Premise]] = {}
        for s in fresh.steps:
            for p in s.because:
                facts.setdefault(p.object, {}).setdefault((p.object, p.field), p)
        return cls(
            {r for s in fresh.steps for r in s.releases},
            {r for s in fresh.steps for r in s.leaves_stuck},
            {pod: list(found.values()) for pod, found in facts.items()},
        )


def _pod_ref(entry: str) -> str:
    """`Pod/NS/NAME` of a step's entry `NS/NAME (…)`."""
    return "Pod/" + entry.split(" ", 1)[0]


def narrow(saved: Plan, fresh: Plan) -> Plan:
    """A saved plan checked against a plan computed from the live cluster now.

    A saved step runs only if the saved plan allowed it AND the fresh plan holds the same step
    (action, target, node, UID) and allows it now; it then carries the fresh plan's values
    (resourceVersion, lease renewal), so every gate is live state. Anything else is refused with
    the reason. Steps only the fresh plan has are not added: a saved plan narrows, never widens.
    """
    now = {step_key(s): s for s in fresh.steps}
    words = _LiveWords.of(fresh)
    # a refused saved step names only the pods the live plan still finds stuck (a pod
    # recreated elsewhere, or on a node back, is not left stuck by it): _live_words
    steps: list[Step] = []
    for old in saved.steps:
        live = now.get(step_key(old))
        if not old.allowed:
            steps.append(
                _live_words(replace(old, gate=f"refused in the saved plan: {old.gate}"), words)
            )
        elif live is None and old.action not in MUTATING:
            steps.append(replace(old, why=f"{old.why} (no such step in the live plan now)"))
        elif live is None:
            steps.append(
                _live_words(
                    replace(old, allowed=False, gate=f"not allowed now ({_missing(old, fresh)})"),
                    words,
                )
            )
        elif not live.allowed and old.node in set(saved.attested) - set(fresh.attested):
            steps.append(
                replace(
                    old,
                    allowed=False,
                    gate=_not_retyped(saved, old.node),
                    releases=list(live.releases),
                    leaves_stuck=list(live.leaves_stuck),
                    because=list(live.because),
                )
            )
        elif not live.allowed:
            steps.append(
                replace(
                    old,
                    allowed=False,
                    gate=f"not allowed now ({live.gate})",
                    releases=list(live.releases),
                    leaves_stuck=list(live.leaves_stuck),
                    because=list(live.because),
                )
            )
        else:
            steps.append(replace(live))
    return Plan(
        strategy=saved.strategy,
        steps=steps,
        refusals=list(fresh.refusals),
        attested=list(fresh.attested),
        bound_to=fresh.bound_to,
        attestations=list(saved.attestations),
    )


def attestation_line(plan: Plan, record: Attestation) -> str:
    """How a recorded attestation is shown at replay, and whether it counts now."""
    counts = (
        "typed for this run: it counts"
        if record.node in plan.attested
        else f"NOT typed again for this run: its steps are refused ({attestation.flag()} "
        "once you have checked the machine is still off)"
    )
    return (
        f"This plan carries an attestation by {record.by} at {record.at} that {record.node} "
        f"is shut down; {counts}"
    )


def _not_retyped(saved: Plan, node: str) -> str:
    record = next((a for a in saved.attestations if a.node == node), None)
    who = f" by {record.by} at {record.at}" if record else ""
    return (
        f"the plan's attestation{who} that {node} is shut down was not typed again for this "
        f"run: check the machine is still off, then add {attestation.flag()}"
    )


def binding_problem(saved: Plan, live: Binding) -> str | None:
    """Why a saved plan must not run against this cluster (one line), or None: another
    context or server, another cluster behind them, a node recreated since, or no cluster."""
    was = saved.bound_to
    if was.source or not was.cluster_uid:
        origin = f"from the dump {was.source}" if was.source else "without a cluster identity"
        return f"it was computed {origin}, so it is bound to no cluster: plan against the cluster"
    if (was.context, was.server) != (live.context, live.server):
        return (
            f"it was made for context {was.context!r} (server {was.server}), and this is "
            f"context {live.context!r} (server {live.server})"
        )
    if was.cluster_uid != live.cluster_uid:
        return (
            f"it was made for another cluster behind this context and server: namespace "
            f"kube-system has UID {live.cluster_uid or '(unread)'} here, {was.cluster_uid} in "
            "the plan"
        )
    planned = dict(was.node_uids)
    planned.update({a.node: a.node_uid for a in saved.attestations})
    for node, uid in sorted(planned.items()):
        now = live.node_uids.get(node)
        if uid and now and now != uid:
            return (
                f"node {node} is another object now (UID {now}, the plan's {uid}): it was "
                "deleted and recreated since the plan, which (with any attestation in it) was "
                "about the old one"
            )
    return None
