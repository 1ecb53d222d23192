"""kube-controller-manager's leader: when the one running now took over.

Some of the controllers' clocks live in memory only, and a new leader (a restart, an upgrade, a
failover after the leader lost its Lease to a slow API server) starts each again from its own
start:
- the taint-eviction controller's count for each pod on a NoExecute-tainted node
  (tainteviction processPodOnNode: a count it finds is kept, none is found after a restart);
- the attach-detach controller's wait before it force-detaches a volume whose pod is gone (its
  actual state of the world is rebuilt from the nodes' status.volumesAttached, and the wait set
  at its reconciler's first look);
- the node lifecycle controller's grace before it sets Ready Unknown (its last probe of each
  node is taken at its first look).
The node lifecycle controller also adds each failed node's NoExecute taint again then (a new
timeAdded, rate-limited per zone): a taint's timeAdded after the leader took over, on a node that
failed before, is that, not the start of a count. The leader's Lease says when it took over:
spec.acquireTime (proven on the real control plane: tests/e2e/test_eviction_clock.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from kubectl_nodefail.analysis import facts
from kubectl_nodefail.analysis.claims import Premise, fact
from kubectl_nodefail.analysis.text import duration
from kubectl_nodefail.snapshot.model import Obj, Snapshot, format_time, parse_time, shifted

# Beyond leaseDurationSeconds, this much more before a Lease is called expired: the clocks of
# this machine and of the control plane may differ by a few seconds.
CLOCK_SLACK_SECONDS = 10


@dataclass(frozen=True)
class Leader:
    since: datetime  # spec.acquireTime
    lease: Obj
    state: str  # alive | expired (no renewal within its duration) | unknown (no renewTime)

    def premise(self, field: str = "acquireTime") -> Premise:
        return fact("Lease", self.lease, f"spec.{field}")

    def premises(self) -> list[Premise]:
        """What the leader's story rests on: when it took over, and whether it renews."""
        return [self.premise(), self.premise("renewTime"), self.premise("leaseDurationSeconds")]

    def words(self) -> str:
        return (
            f"kube-controller-manager's current leader took over at {format_time(self.since)} "
            f"(its Lease {facts.CONTROLLER_LEASE_NAMESPACE}/{facts.CONTROLLER_LEASE_NAME}, "
            "acquireTime)"
        )

    def after(self, moment: datetime | None) -> bool:
        """The leader took over after `moment`: a clock started then was started again."""
        return moment is not None and self.since > moment

    def renewed(self) -> datetime | None:
        return parse_time((self.lease.get("spec") or {}).get("renewTime"))

    def expired(self) -> bool:
        """No leader renewed the Lease when it was read: kube-controller-manager is down (or
        cut off from the API server), and none of its controllers runs."""
        return self.state == "expired"

    def alive(self) -> bool:
        return self.state == "alive"

    def no_leader(self, now: datetime) -> str:
        renewed = self.renewed()
        assert renewed is not None
        return (
            "kube-controller-manager has no leader: its Lease "
            f"{facts.CONTROLLER_LEASE_NAMESPACE}/{facts.CONTROLLER_LEASE_NAME} was last renewed "
            f"{duration((now - renewed).total_seconds())} ago, past its leaseDurationSeconds, so "
            "none of its controllers runs (unless it now runs without leader election)"
        )


def leader(snap: Snapshot) -> Leader | None:
    """The leader of the moment, when its Lease was read and says when it took over."""
    return snap.memo("leader", _leader)


def _leader(snap: Snapshot) -> Leader | None:
    for lease in snap.leases:
        meta = lease.get("metadata") or {}
        if (meta.get("namespace"), meta.get("name")) != (
            facts.CONTROLLER_LEASE_NAMESPACE,
            facts.CONTROLLER_LEASE_NAME,
        ):
            continue
        return of_lease(lease, snap.read_at or snap.captured_at)
    return None


def of_lease(lease: Obj, read: datetime) -> Leader | None:
    """The leader a Lease read at `read` names (None: it says not when it took over)."""
    since = parse_time((lease.get("spec") or {}).get("acquireTime"))
    return None if since is None else Leader(since, lease, state(lease, read))


def state(lease: Obj, read: datetime) -> str:
    """Whether the leader Lease, read at `read`, renews: alive | expired | unknown (no
    renewTime or duration)."""
    spec = lease.get("spec") or {}
    renew = spec.get("renewTime")
    until = expires(
        parse_time(renew) if isinstance(renew, str) else None, spec.get("leaseDurationSeconds")
    )
    return "unknown" if until is None else "expired" if read > until else "alive"


def expires(renewed: datetime | None, seconds: object) -> datetime | None:
    """When a Lease renewed at `renewed`, lasting `seconds`, is called expired: past its
    duration and CLOCK_SLACK_SECONDS (None: either is missing or not an integer)."""
    if renewed is None or not isinstance(seconds, int) or isinstance(seconds, bool):
        return None
    return shifted(renewed, seconds + CLOCK_SLACK_SECONDS)  # 2^62 s: never, not an overflow
