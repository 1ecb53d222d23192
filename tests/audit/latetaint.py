"""A NoExecute taint added to a batch's failed nodes after their unreachable taint (map row 1,
from seed LATE_SEED on): another owner's taint (a drain tool, a remediation operator), written
with its timeAdded as such tools write it. The taint-eviction controller sets a pod's eviction
once, at the first moment it is on the node under NoExecute taints it all tolerates with a
limit, so the new taint moves no eviction already set; it starts one for a pod that tolerated
the node's own taints without limit, and evicts at once a pod that does not tolerate it (the
pods' tolerations of it: scenarios.LATE_CHOICES). In one regular batch per seed, the one
without the controller-manager restart (restart.py), so that each is judged on its own; never
in the zone batch."""

from __future__ import annotations

import json
from datetime import datetime

from tests.audit import restart
from tests.audit.scenarios import LATE_SEED, LATE_TAINT
from tests.e2e.controlplane import ControlPlane

VALUE = "drained"
TRIES = 5


def late_batch(seed: int, batch: int) -> bool:
    """The seed's regular batch that has the taint: the other one than the restart's."""
    return (
        seed >= LATE_SEED
        and batch == 1 - (seed // 2) % 2
        and restart.restart_batch(seed, batch) is None
    )


def add(cp: ControlPlane, node: str, at: datetime) -> None:
    """Append LATE_TAINT (NoExecute, timeAdded `at`) to the Node's taints, the node lifecycle
    controller's left as they are (a JSON patch that tests the list it appends to)."""
    taint = {
        "key": LATE_TAINT,
        "value": VALUE,
        "effect": "NoExecute",
        "timeAdded": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    for _ in range(TRIES):  # the node lifecycle controller may write the list in between
        got = cp.get("node", node) or {}
        taints = (got.get("spec") or {}).get("taints") or []
        patch = [
            {"op": "test", "path": "/spec/taints", "value": taints},
            {"op": "add", "path": "/spec/taints/-", "value": taint},
        ]
        if cp.kubectl("patch", "node", node, "--type=json", "-p", json.dumps(patch), check=False):
            return
    raise RuntimeError(f"{LATE_TAINT} not added to {node} in {TRIES} tries")
