"""Judging the outage view's SERVING (`workloads[].ready`, the claim `serving`): how many of an
owner's pods are Ready on Ready nodes, said at a diagnosis, against the control plane's pods
polled around that moment. In the audit a scenario's namespace holds its owner's pods only (a
Deployment's, of every ReplicaSet), so they are counted by namespace: Running, Ready, not
deleted, on a node other than the batch's failed ones (down from the kill to the return). When
the polls just before and after the diagnosis count differently, a pod became Ready or stopped
serving meanwhile: not judged."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tests.audit.judge import Verdict
from tests.audit.observe import History, Poll, parse_time
from tests.audit.scenarios import Scenario

Obj = dict[str, Any]


@dataclass(frozen=True)
class Serving:
    moment: str
    at: datetime
    namespace: str
    owner: str
    ready: int

    def as_dict(self) -> Obj:
        return {**self.__dict__, "at": self.at.isoformat()}


def predictions(diagnosis: Obj, moment: str, prefix: str) -> list[Serving]:
    """Each replicated owner of the audit's namespaces whose SERVING the diagnosis gives."""
    captured = parse_time(diagnosis.get("capturedAt"))
    assert captured is not None, "diagnosis without capturedAt"
    return [
        Serving(moment, captured, str(w["namespace"]), str(w["owner"]), int(w["ready"]))
        for w in diagnosis.get("workloads") or []
        if str(w.get("namespace", "")).startswith(prefix) and w.get("serving")
    ]


def _count(poll: Poll, namespace: str, failed: set[str]) -> int:
    return sum(
        1
        for v in poll.pods.values()
        if v.namespace == namespace
        and v.phase == "Running"
        and v.ready
        and v.deletion is None
        and v.node
        and v.node not in failed
    )


# capturedAt is written to the second, and the reads behind a diagnosis take a few seconds
# after it (2049/32: pods created in its second were read Ready): the polls from the last one
# before it to the first one this long after it must all agree.
READS = timedelta(seconds=5)


def judge(pred: Serving, history: History, failed: set[str]) -> tuple[str, bool | None]:
    """(what the polls showed, ok): the count the diagnosis gave is every poll's around it."""
    before = [p for p in history.polls if p.at <= pred.at]
    after = [p for p in history.polls if p.at >= pred.at + READS]
    if not before or not after:
        return "not judged: no poll on both sides of the diagnosis", None
    around = [p for p in history.polls if before[-1].at <= p.at <= after[0].at]
    counts = {_count(poll, pred.namespace, failed) for poll in around}
    if len(counts) > 1:
        low, *_, high = sorted(counts)
        return f"not judged: from {low} to {high} around the diagnosis", None
    (count,) = counts
    return f"{count} Running and Ready on healthy nodes", count == pred.ready


def verdicts(
    preds: list[Serving], history: History, failed: set[str], scenarios: list[Scenario]
) -> list[Verdict]:
    """A `serving` verdict per prediction of a scenario of the batch."""
    by_ns = {s.namespace: s for s in scenarios}
    out = []
    for pred in preds:
        s = by_ns.get(pred.namespace)
        if s is None:
            continue
        observed, ok = judge(pred, history, failed)
        out.append(
            Verdict(
                kind="serving",
                seed=s.seed,
                index=s.index,
                moment=pred.moment,
                pod=f"{pred.namespace}/{pred.owner}",
                predicted=f"{pred.ready} Ready on Ready nodes",
                observed=observed,
                ok=ok,
                scenario=s.describe(),
            )
        )
    return out
