"""Pure planning: a diagnosis plus the user's attestations -> ordered, gated steps.

Nothing here touches the cluster. Each step says what it would do, why, on what evidence, and
which gate it passed or failed; refused steps say what would unlock them. actions.py executes
only the allowed steps, re-checking each one right before acting.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field, fields
from typing import Any

from kubectl_nodefail.analysis import versions
from kubectl_nodefail.analysis.diagnose import MASS_FAILURE_NODES, MASS_FAILURE_SHARE
from kubectl_nodefail.analysis.findings import NodeFinding, PodFinding, Report
from kubectl_nodefail.analysis.zones import NORMAL
from kubectl_nodefail.errors import BadInputError, Exit
from kubectl_nodefail.snapshot import format_time

STRATEGIES = ("auto", "out-of-service", "force-delete", "delete-node")
REPLACEABLE = {"deployment", "replicaset", "replicationcontroller"}
JOBS = {"job", "cronjob"}


def _cosmetic(pod: PodFinding) -> bool:
    """Stuck but harmless: its replacement runs (or ran), and it holds no volume."""
    if pod.storage:
        return False
    if pod.controller in REPLACEABLE:
        return pod.replacement.state in ("running", "not-yet")
    return pod.controller in JOBS and pod.replacement.state in ("running", "finished")


@dataclass
class Step:
    action: (
        str  # wait | taint-out-of-service | remove-out-of-service | force-delete-pod | delete-node
    )
    node: str
    target: str  # "node/NAME" or "pod/NAMESPACE/NAME"
    why: str
    allowed: bool
    gate: str  # the gate passed, or why it was refused and what would unlock it
    evidence: list[str] = field(default_factory=list)
    uid: str = ""
    resource_version: str = ""
    lease_renewed: str = ""  # the node's lease renewTime when planned: must not move before acting
    result: str = ""  # filled in by actions.py: done | skipped | failed | refused | waited
    detail: str = ""


@dataclass
class Plan:
    strategy: str
    steps: list[Step]
    refusals: list[str]  # plan-wide refusals (zone disruption, node bound)
    attested: list[str]

    @property
    def mutating(self) -> list[Step]:
        return [s for s in self.steps if s.allowed and s.action != "wait"]

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Plan:
        """A plan saved with --plan-out (render.plan_data); raises BadInputError if malformed."""
        try:
            if data.get("kind") != "RemediationPlan":
                raise KeyError("kind")
            steps = []
            for raw in data["steps"]:
                args = {f.name: raw[_camel(f.name)] for f in fields(Step)}
                args["result"], args["detail"] = "", ""
                steps.append(Step(**args))
            return cls(
                strategy=data["strategy"],
                steps=steps,
                refusals=list(data["refusals"]),
                attested=list(data["attested"]),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise BadInputError(f"not a saved remediation plan (missing {exc})") from exc

    def result_code(self) -> Exit:
        """After --confirm: all done (0), some refused/skipped/failed (4), nothing done (5)."""
        if self.refusals or any(s.result in ("skipped", "failed", "refused") for s in self.steps):
            return Exit.PARTIAL
        return Exit.OK if any(s.result == "done" for s in self.steps) else Exit.NOTHING_TO_DO

    def exit_code(self) -> Exit:
        """For a plan: runnable (0), some refused (4), nothing to do (5)."""
        if any(not s.allowed for s in self.steps) or self.refusals:
            return Exit.PARTIAL
        return Exit.OK if self.mutating else Exit.NOTHING_TO_DO


@dataclass
class Options:
    strategy: str = "auto"
    attested: Collection[str] = ()
    only_nodes: Collection[str] = ()
    max_nodes: int = 1
    allow_disruption: bool = False
    server_minor: int | None = None


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _shutdown_evidence(node: NodeFinding, opts: Options) -> list[str]:
    evidence = list(node.shutdown_evidence)
    if node.name in opts.attested:
        evidence.append(
            f"the operator attested the machine is shut down "
            f"(--node-shutdown-confirmed {node.name})"
        )
    return evidence


def _strategy(opts: Options) -> str:
    if opts.strategy != "auto":
        return opts.strategy
    if not versions.out_of_service_usable(opts.server_minor):
        return "force-delete"
    return "out-of-service"


def _cluster_refusal(report: Report, opts: Options) -> str | None:
    disrupted = [z for z in report.zones if z.state != NORMAL]
    failed = [n for n in report.nodes if n.failed]
    if disrupted:
        names = ", ".join(f"{z.zone} ({z.state}, {z.not_ready}/{z.nodes} down)" for z in disrupted)
        why = (
            f"zone disruption: {names}. A failure this wide is usually the network or the "
            "control plane; forcing pods off 'dead' nodes could run them twice"
        )
    elif (
        len(failed) >= MASS_FAILURE_NODES
        and report.nodes_total
        and len(failed) / report.nodes_total >= MASS_FAILURE_SHARE
    ):
        why = (
            f"{len(failed)} of {report.nodes_total} nodes are down at once: more likely the "
            "network or the control plane than the machines"
        )
    else:
        return None
    if opts.allow_disruption:
        return None
    return why + ". Destructive steps refused (override: --allow-disruption, after ruling that out)"


def _pods_on(report: Report, node: str) -> list[PodFinding]:
    return [p for p in report.pods if p.node == node and p.node_failed]


def _wait_step(node: NodeFinding, pod: PodFinding, why: str) -> Step:
    return Step(
        "wait",
        node.name,
        f"pod/{pod.namespace}/{pod.name}",
        why,
        True,
        "nothing to do",
        uid=pod.uid,
    )


def _node_steps(
    node: NodeFinding, report: Report, opts: Options, refusal: str | None
) -> list[Step]:
    lease = format_time(node.lease_renewed) if node.lease_renewed else ""
    if node.stale_out_of_service:
        return [
            Step(
                "remove-out-of-service",
                node.name,
                f"node/{node.name}",
                "the node is Ready again and still carries the out-of-service taint, which "
                "Kubernetes never removes by itself",
                True,
                "node is Ready (the only action taken on a Ready node)",
                evidence=[f"node {node.status}"],
                lease_renewed=lease,
            )
        ]
    if not node.failed:
        return []
    evidence = _shutdown_evidence(node, opts)
    strategy = _strategy(opts)
    steps: list[Step] = []
    pods = _pods_on(report, node.name)
    gate_ok = bool(evidence) and refusal is None
    unlock = (
        refusal
        if refusal
        else f"no evidence the machine is down (a silent kubelet may still run its pods). "
        f"Check its power state; if it is off, re-run with --node-shutdown-confirmed "
        f"{node.name}"
    )
    gate = "shutdown confirmed: " + "; ".join(evidence) if gate_ok else unlock
    blocked: list[PodFinding] = []  # what only a destructive step releases
    for pod in pods:
        if pod.controller in ("daemonset", "mirror"):
            steps.append(
                _wait_step(
                    node, pod, f"{pod.controller} pod: never acted on; it resumes with the node"
                )
            )
        elif _cosmetic(pod):
            steps.append(
                _wait_step(
                    node,
                    pod,
                    "replaceable: "
                    + (
                        "the replacement already runs; the stuck object is cosmetic"
                        if pod.terminating
                        else f"evicted by Kubernetes at {format_time(pod.eviction_at)}"
                        if pod.eviction_at
                        else "replaced once evicted"
                    ),
                )
            )
        elif not pod.terminating and pod.eviction_at is not None and not gate_ok:
            steps.append(
                _wait_step(
                    node,
                    pod,
                    f"eviction due {format_time(pod.eviction_at)}; then: {pod.replacement.summary}",
                )
            )
            blocked.append(pod)
        else:
            blocked.append(pod)
    if node.out_of_service:
        steps.append(
            Step(
                "wait",
                node.name,
                f"node/{node.name}",
                "out-of-service taint already set: PodGC force-deletes the pods and volumes detach",
                True,
                "nothing to do",
                lease_renewed=lease,
            )
        )
        return steps
    if not blocked:
        return steps
    names = ", ".join(f"{p.namespace}/{p.name} ({p.controller})" for p in blocked)
    if strategy == "out-of-service":
        steps.append(
            Step(
                "taint-out-of-service",
                node.name,
                f"node/{node.name}",
                f"releases {names}: PodGC force-deletes its Terminating pods, NoExecute "
                "evicts the rest (DaemonSet pods too, back when the taint is removed), "
                "volumes detach at once",
                gate_ok,
                gate,
                evidence,
                lease_renewed=lease,
            )
        )
    elif strategy == "delete-node":
        steps.append(
            Step(
                "delete-node",
                node.name,
                f"node/{node.name}",
                f"the machine is gone for good: PodGC removes every pod bound to it ({names})",
                gate_ok,
                gate,
                evidence,
                lease_renewed=lease,
            )
        )
    else:
        for pod in blocked:
            steps.append(
                Step(
                    "force-delete-pod",
                    node.name,
                    f"pod/{pod.namespace}/{pod.name}",
                    f"{pod.controller}: {pod.replacement.summary}",
                    gate_ok,
                    gate,
                    evidence,
                    uid=pod.uid,
                    resource_version=pod.resource_version,
                    lease_renewed=lease,
                )
            )
    return steps


def make_plan(report: Report, opts: Options) -> Plan:
    refusals: list[str] = []
    refusal = _cluster_refusal(report, opts)
    if refusal:
        refusals.append(refusal)
    candidates = [n for n in report.nodes if not opts.only_nodes or n.name in opts.only_nodes]
    acting = [n for n in candidates if n.failed]
    if len(acting) > opts.max_nodes:
        refusals.append(
            f"{len(acting)} failed nodes in scope but at most {opts.max_nodes} per run "
            "(--max-nodes): name the nodes to act on, or raise the bound"
        )
        refusal = refusal or refusals[-1]
    steps: list[Step] = []
    for node in candidates:
        steps += _node_steps(node, report, opts, refusal)
    return Plan(
        strategy=_strategy(opts), steps=steps, refusals=refusals, attested=sorted(opts.attested)
    )
