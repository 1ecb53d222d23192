"""After a run: how many steps ended in each state, and the pods the result names read again
(only a pod still bound to its step's node stays named).
"""

from __future__ import annotations

from kubectl_nodefail.analysis.claims import fact
from kubectl_nodefail.cluster import kube
from kubectl_nodefail.common.errors import ApiError, AuthError
from kubectl_nodefail.remediate.steps import Plan
from kubectl_nodefail.snapshot.model import Obj


def summary(plan: Plan) -> dict[str, int]:
    """How many steps ended (or, in a plan, stand) in each state."""
    counts: dict[str, int] = {}
    for step in plan.steps:
        state = step.result or ("planned" if step.allowed else "refused")
        counts[state] = counts.get(state, 0) + 1
    return counts


def _named(entry: str) -> str:
    """NS/NAME of a step's pod entry `NS/NAME (controller)`."""
    return entry.split(" ", 1)[0]


def restate(cluster: kube.Cluster, plan: Plan) -> None:
    """Before the result speaks of pods that stay stuck (a step refused, skipped or not
    started), read the node's pods again (one list per node): only a pod still bound to that
    step's node stays named, and the step's facts become those of the re-read (its UID, its
    node); one that is not (gone, or recreated elsewhere under its name) is said so instead (in
    place). A read that fails leaves the names, marked as not re-read, with no facts."""
    on_node: dict[str, dict[str, Obj] | None] = {}
    for step in plan.steps:
        runs = step.allowed and step.result in ("", "done", "unconfirmed", "interrupted")
        if runs or not (step.releases or step.leaves_stuck):
            continue
        if step.node not in on_node:
            try:
                pods = cluster.list_all(
                    "/api/v1/pods", "Pod", fieldSelector=f"spec.nodeName={step.node}"
                )
                on_node[step.node] = {
                    f"{p['metadata'].get('namespace')}/{p['metadata']['name']}": p for p in pods
                }
            except (ApiError, AuthError):
                on_node[step.node] = None
        here = on_node[step.node]
        if here is None:
            step.releases = [f"{entry} [not re-read]" for entry in step.releases]
            step.leaves_stuck = [f"{entry} [not re-read]" for entry in step.leaves_stuck]
            step.because = []
            continue
        moved = [_named(e) for e in step.releases + step.leaves_stuck if _named(e) not in here]
        step.releases = [e for e in step.releases if _named(e) in here]
        step.leaves_stuck = [e for e in step.leaves_stuck if _named(e) in here]
        step.because = [
            fact("Pod", here[_named(e)], path)
            for e in step.releases + step.leaves_stuck
            for path in ("metadata.uid", "spec.nodeName")
        ] + [fact("Pod", here[_named(e)], "metadata.finalizers") for e in step.leaves_stuck]
        if moved:
            step.detail = (step.detail + "; " if step.detail else "") + (
                f"no longer on {step.node} when re-read (gone, or recreated elsewhere): "
                + ", ".join(moved)
            )
