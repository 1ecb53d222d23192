"""The node's path to failure (map row 28, from seed NODE_PATH_SEED on), per regular batch, the
two in turn (so a run of two regular batches has both; the seconds of NotReady drawn):

  - `silent`: the kubelet stops at once (Ready becomes Unknown; the node is tainted unreachable);
  - `not-ready-first`: the kubelet first reports Ready=False for HOLD seconds (a runtime or CNI
    gone, a graceful shutdown under way), and says so in its NodeNotReady event, as a kubelet
    does; then it goes silent. The node is tainted not-ready, then the taint is swapped for
    unreachable; the taint-eviction controller keeps the count the first taint started
    (analysis/evictionclock.py), and nothing on the node shows that taint any more.

kwok's kubelet does not report NotReady: the harness plays it (the e2e suite's
KubeletReportingProblem: it renews the Lease and posts the condition, with the event).
Every per-pod judge then holds the diagnosis to what the controller does on that path.
"""

from __future__ import annotations

from random import Random

NODE_PATH_SEED = 2060
PATHS = ("silent", "not-ready-first")
HOLD = (5, 20)  # seconds of NotReady before the silence
NOT_READY = [
    {
        "type": "Ready",
        "status": "False",
        "reason": "KubeletNotReady",
        "message": "container runtime network not ready: NetworkReady=false "
        "reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not "
        "initialized",
    }
]


def node_path(seed: int, batch: int) -> tuple[str, int]:
    """(the path, the seconds of NotReady before the silence: 0 for `silent`)."""
    if seed < NODE_PATH_SEED:
        return "silent", 0
    path = PATHS[(seed + batch) % len(PATHS)]
    hold = Random(f"{seed}-node-path-{batch}").randint(*HOLD)
    return path, (hold if path == "not-ready-first" else 0)
