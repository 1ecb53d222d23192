"""The zone batch (map row 3, from seed ZONE_SEED on): the last scenarios of a run are played in
a zone of their own, five nodes of which four fail, so the node lifecycle controller's brake
engages while the batch is down.

How it is played (tests/audit/run.py, `Batch(zone=True)`):
  - the zone: one healthy node and four failable ones (`au{seed}-b{batch}-n0..n3`); the zone's
    scenarios are spread over the four (generate(..., node_slots=FAILABLE));
  - kill, in three steps: n0 and n1 (2/5 not Ready: Normal; both tainted NoExecute at the test
    bed's rate); then n2 (3/5, >= 55 %: PartialDisruption, and in a zone of at most 50 nodes the
    tainting stops; n2 itself is tainted or not, a race inside the controller's pass that the
    diagnosis reads); then, the zone already braked, n3: it keeps no NoExecute taint;
  - remediate --confirm on n3, attested as every odd batch does: the brake must refuse its
    destructive steps, and nothing may change (`remediate:refused`);
  - the return, in an order drawn per seed (RETURN_ORDERS): the untainted nodes first (the zone
    leaves the brake with nothing left to taint), or all at once (the zone may recover while an
    untainted node is still down, and the controller then taints it).

Judged here, beside every per-pod judge:
  - `zone:brake`: a zone the diagnosis says has its tainting stopped names how many not-Ready
    nodes are without the NoExecute taint; none of them gains one before the return;
  - `remediate:refused`: each destructive step refused leaves its target as it was.
A pod said to see no eviction while the zone stays in PartialDisruption is judged per pod (judge.py,
`eviction-paused`).
"""

from __future__ import annotations

from datetime import datetime
from random import Random
from typing import Any

from tests.audit.judge import DESTRUCTIVE, Verdict
from tests.audit.observe import History

Obj = dict[str, Any]
ZONE_SEED = 2056  # the first seed whose runs end with a zone batch
ZONE_SHARE = 5  # one scenario in ZONE_SHARE of a run is played in the zone batch
FAILABLE = 4  # of the zone's 5 nodes
FIRST = 2  # failing first (the zone stays Normal: both tainted)
RETURN_ORDERS = ("untainted-first", "together")
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
UNREACHABLE_NO_SCHEDULE = "node.kubernetes.io/unreachable:NoSchedule"
NOEXECUTE = ("node.kubernetes.io/unreachable:NoExecute", "node.kubernetes.io/not-ready:NoExecute")


def zone_count(seed: int, n: int) -> int:
    """How many of a run's n scenarios go to its zone batch (none before ZONE_SEED, none in a
    run of fewer than two scenarios)."""
    if seed < ZONE_SEED or n < 2:
        return 0
    return max(1, n // ZONE_SHARE)


def return_order(seed: int, batch: int) -> str:
    return Random(f"{seed}-zone-return-{batch}").choice(RETURN_ORDERS)


def zone_name(seed: int, batch: int) -> str:
    return f"au{seed}-zone{batch}"


def noexecute(taints: tuple[str, ...] | None) -> bool:
    return bool(taints) and any(t in NOEXECUTE for t in taints or ())


def judge_brake(
    diagnosis: Obj, moment: str, history: History, nodes: list[str], seed: int, batch: int
) -> list[Verdict]:
    """The zone lines of one diagnosis whose tainting is stopped: the not-Ready nodes without
    the NoExecute taint at the diagnosis (as polled) get none before the return; the count the
    line gives is theirs."""
    at, back = history.marks[moment], history.marks["return"]
    out = []
    for zone in diagnosis.get("zones") or []:
        mine = str(zone.get("zone", "")).endswith(zone_name(seed, batch))
        if zone.get("eviction") != "stopped" or not mine:
            continue
        untainted = [n for n in nodes if not noexecute(history.node_taints(n, at))]
        said = str(zone.get("explanation") or "")
        counted = f"on the {len(untainted)} not-Ready node(s) without the NoExecute taint" in said
        gained = [
            (n, when)
            for n in untainted
            for when, taints in history.node_changes(n, at, back)
            if noexecute(taints)
        ]
        observed = (
            f"{gained[0][0]} tainted NoExecute at {gained[0][1]:%H:%M:%S}"
            if gained
            else f"{len(untainted)} untainted node(s) ({', '.join(untainted) or 'none'}) "
            "kept no NoExecute taint until the return"
        )
        if not counted:
            observed += f"; the line counts otherwise: {said[:160]}"
        out.append(
            Verdict(
                kind="zone:brake",
                seed=seed,
                index=-1,
                moment=moment,
                pod=f"zone/{zone.get('zone')}",
                predicted="tainting stopped: the untainted not-Ready nodes stay untainted",
                observed=observed,
                ok=counted and not gained,
                scenario=f"batch {batch}",
            )
        )
    return out


def judge_refused(
    doc: Obj | None, history: History, seed: int, batch: int, prefix: str
) -> list[Verdict]:
    """remediate --confirm under the brake: each destructive step it refused left its target as
    it was, up to the return (the Node there with no out-of-service taint, the pod there)."""
    started, back = history.marks["remediate"], history.marks["return"]
    out = []
    for step in (doc or {}).get("steps") or []:
        if step.get("action") not in DESTRUCTIVE or step.get("allowed"):
            continue
        target = str(step.get("target") or "")
        kind, _, name = target.partition("/")
        if kind == "node":
            changed = [
                (at, taints)
                for at, taints in history.node_changes(name, started, back)
                if taints is None or any(t.startswith(OUT_OF_SERVICE) for t in taints)
            ]
            observed = (
                f"node {'deleted' if changed[0][1] is None else 'tainted out-of-service'} at "
                f"{changed[0][0]:%H:%M:%S}"
                if changed
                else "the Node stayed, without the out-of-service taint"
            )
            ok: bool | None = not changed
        elif kind == "pod" and name.startswith(prefix):
            ns, _, pod = name.partition("/")
            gone = _pod_gone(history, ns, pod, started, back)
            observed = f"gone at {gone:%H:%M:%S}" if gone else "still there at the return"
            ok = gone is None
        else:
            continue
        out.append(
            Verdict(
                kind="remediate:refused",
                seed=seed,
                index=-1,
                moment="remediate",
                pod=target,
                predicted=f"{step.get('action')} refused: nothing done",
                observed=observed,
                ok=ok,
                scenario=f"batch {batch}",
            )
        )
    return out


def _pod_gone(
    history: History, ns: str, name: str, start: datetime, end: datetime
) -> datetime | None:
    """The first poll in (start, end] without the pod the last poll before `start` had under
    that name, or that shows it deleted when it was not yet (a pod already Terminating stays
    as it was until it goes)."""
    before = [p for p in history.polls if p.at <= start]
    if not before:
        return None
    found = [(u, v) for u, v in before[-1].pods.items() if v.namespace == ns and v.name == name]
    if not found:
        return None
    uid, was = found[0]
    for poll in history.polls:
        if start < poll.at <= end:
            view = poll.pods.get(uid)
            if view is None or (was.deletion is None and view.deletion is not None):
                return poll.at
    return None
