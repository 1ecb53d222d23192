"""A new kube-controller-manager leader during the failure (map row 2, from seed RESTART_SEED
on): in one regular batch per seed, after the failed nodes are tainted and the early changes
made, kube-controller-manager is stopped and started again, as a crash, an upgrade or a lost
Lease does. The new leader keeps nothing of the old one's memory: it takes every failed node's
NoExecute taints off and puts them back (a new timeAdded), counts each pod again, and starts its
force-detach waits again. The first diagnosis is made once the taints are back, so every
prediction it makes is judged against that leader (analysis/leader.py reads its Lease).

From seed LEADERLESS_SEED on, the manager stays stopped until its Lease has expired (its
duration and the analysis' clock slack): a diagnosis `d0` is made then, with no leader, and
judged by leaderless.py (nothing evicted, replaced or removed until a new leader takes over);
only then is the manager started again.

The process is stopped and started again as it was (tests/e2e/components.py).
"""

from __future__ import annotations

from pathlib import Path
from random import Random

from tests.e2e import components

RESTART_SEED = 2068
LEADERLESS_SEED = 2076  # from it on, a diagnosis with no leader before the start (d0)
# d0 is made this long past the Lease's duration: the clocks of the harness and of the
# control plane may differ, and a diagnosis calling a Lease expired must be right to
LEADERLESS_SLACK = 15
DELAY = (5, 40)  # seconds between the taints and the restart
COMPONENT = "kube-controller-manager"


def restart_batch(seed: int, batch: int) -> int | None:
    """The seconds to wait after the taints before the restart, in the one regular batch of
    the seed that has it (batch 0 or 1 by seed pairs, so the node paths vary); else None."""
    if seed < RESTART_SEED or batch != (seed // 2) % 2:
        return None
    return Random(f"{seed}-restart").randint(*DELAY)


def leaderless(seed: int) -> bool:
    """Whether the restart batch of `seed` diagnoses with no leader before the start."""
    return seed >= LEADERLESS_SEED


def stop(cluster_dir: Path) -> components.Stopped:
    """Stop the cluster's kube-controller-manager; `.start()` starts it again as it was."""
    return components.stop(cluster_dir, COMPONENT)


def restart(cluster_dir: Path) -> int:
    """Stop the cluster's kube-controller-manager and start it again as it was; the new pid."""
    return stop(cluster_dir).start()
