"""After a run, what the result says: how many steps ended in each state, and the pods it
names read again (only a pod still bound to its step's node, the object the plan named, on a
node still not Ready, stays named).
"""

from __future__ import annotations

from kubectl_nodefail.analysis.claims import fact
from kubectl_nodefail.analysis.nodes import is_ready
from kubectl_nodefail.cluster import kube
from kubectl_nodefail.cluster.resources import node_path
from kubectl_nodefail.common.errors import ApiError, AuthError, UnreachableError
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


def _same(entry: str, here: dict[str, Obj], planned: dict[str, object]) -> bool:
    """The pod an entry names is on the node now, and is the object the plan named (its UID,
    where the plan stated it: a pod recreated under its name is another)."""
    pod = here.get(_named(entry))
    uid = planned.get(f"Pod/{_named(entry)}")
    return pod is not None and (uid is None or pod["metadata"].get("uid") == uid)


def restate(cluster: kube.Cluster, plan: Plan) -> None:
    """Before the result speaks of pods that stay stuck (a step refused, skipped or not
    started), read the node and its pods again (one read and one list per node): a pod stays
    named only if it is still bound to that step's node, is the object the plan named (its UID,
    where the plan stated it), and (but for a pod finalizers hold) the node is still not Ready;
    the step's facts become those of the re-read (its UID, its node, the node's Ready status).
    A pod that is not (gone, recreated elsewhere or under its name, or its node Ready again) is
    said so instead (in place). A read that fails leaves the names, marked as not re-read, with
    no facts."""
    on_node: dict[str, dict[str, Obj] | None] = {}
    nodes: dict[str, Obj | None] = {}
    for step in plan.steps:
        runs = step.allowed and step.result in ("", "done", "unconfirmed", "interrupted")
        if runs or not (step.releases or step.leaves_stuck):
            continue
        if step.node not in on_node:
            try:
                nodes[step.node] = cluster.get_object(node_path(step.node))
                pods = cluster.list_all(
                    "/api/v1/pods", "Pod", fieldSelector=f"spec.nodeName={step.node}"
                )
                on_node[step.node] = {
                    f"{p['metadata'].get('namespace')}/{p['metadata']['name']}": p for p in pods
                }
            except (ApiError, AuthError, UnreachableError):
                on_node[step.node] = None
        here = on_node[step.node]
        if here is None:
            step.releases = [f"{entry} [not re-read]" for entry in step.releases]
            step.leaves_stuck = [f"{entry} [not re-read]" for entry in step.leaves_stuck]
            step.because = []
            continue
        node = nodes[step.node] or {}
        planned = {p.object: p.value for p in step.because if p.field == "metadata.uid"}
        moved = [
            _named(e) for e in step.releases + step.leaves_stuck if not _same(e, here, planned)
        ]
        kept = [e for e in step.releases if _same(e, here, planned)]
        # on a node Ready again its kubelet handles its pods again: none waits for this step;
        # a pod held by finalizers stays held whatever the node
        back = [_named(e) for e in kept] if is_ready(node) else []
        step.releases = [] if back else kept
        step.leaves_stuck = [e for e in step.leaves_stuck if _same(e, here, planned)]
        step.because = [
            fact("Pod", here[_named(e)], path)
            for e in step.releases + step.leaves_stuck
            for path in ("metadata.uid", "spec.nodeName")
        ] + [fact("Pod", here[_named(e)], "metadata.finalizers") for e in step.leaves_stuck]
        if step.releases or back:  # stuck only while the node is not Ready; handled once it is
            step.because.append(fact("Node", node, "status.conditions[type=Ready].status"))
        if back:
            step.detail = (step.detail + "; " if step.detail else "") + (
                f"{step.node} is Ready again when re-read: its kubelet handles "
                + ", ".join(back)
                + " again"
            )
        if moved:
            step.detail = (step.detail + "; " if step.detail else "") + (
                f"no longer on {step.node} when re-read (gone, or recreated elsewhere or under "
                "its name): " + ", ".join(moved)
            )
