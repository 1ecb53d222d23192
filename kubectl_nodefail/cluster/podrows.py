"""A pod from a row of the pods Table, where the row says all the analysis reads of it.

A zone outage brings thousands of owners whose other pods must be looked through to find
replacements and count what still serves (issue 19: 24,000 sibling pods at 200 failed nodes,
~5.6 KB each as full objects). Most of them are Running and Ready on a healthy node, and of
those the analysis reads only the metadata, the node, the phase and the Ready condition. The API
server's Table of pods with `includeObject=Metadata` gives exactly that at a third of the bytes:
the object's metadata, and kubectl's printed columns (NAME, READY, STATUS, NODE, READINESS
GATES). A row stands for its pod only when the columns decide every field the compact pod
carries; any other row is read as a full object (`from_row` returns None).

Why the derived fields hold (kubectl's pod printer, pkg/printers/internalversion/printers.go
printPod, which the API server runs for the Table):
- STATUS starts as status.phase (status.reason when set) and is replaced by an init container's
  state, a waiting or terminated container's reason, "Terminating" or "Unknown" for a deleted
  pod; "Completed" turns back into "Running" only when a container is terminated, which READY
  then shows as not ready. So STATUS "Running" with READY n/n (every container ready and
  running) is phase Running, no deletion, all containers ready.
- READY n/n and READINESS GATES "<none>" or k/k is the kubelet's Ready condition True: Ready is
  ContainersReady (every container ready) and every readiness gate's condition True.
- NODE is spec.nodeName as written.
The Ready condition can differ for seconds: on a node that became Ready again before its kubelet
rewrote the pod's status after the node lifecycle controller marked it not ready (gather takes
rows on Ready nodes only, so not on a node still down), and when a controller has just set a
readiness gate's condition True and the kubelet has not yet recomputed Ready (docs/scale.md,
"Compact sibling rows"; checked against full objects on the real control plane:
tests/e2e/test_pod_rows.py). What else a row cannot give (when a replacement was scheduled and
became Ready, for a failed node's timeline) is read whole: gather.RowRules.
"""

from __future__ import annotations

import re
from typing import Any

Obj = dict[str, Any]

# The columns a row must have to stand for its pod (kubectl's pod printer, every supported minor).
NEEDED = ("Name", "Ready", "Status", "Node", "Readiness Gates")
_FRACTION = re.compile(r"(\d+)/(\d+)")
NO_NODE = "<none>"
NO_GATES = "<none>"
# Where a pod object came from when it was built from a row: kept in dumps, so a reader of the
# dump knows these fields are the printed columns, not the whole object.
READ_FROM = "readFrom"


def columns_usable(columns: list[str]) -> bool:
    return all(name in columns for name in NEEDED)


def _all_of(cell: Any, at_least: int = 1) -> bool:
    """'n/n' with n >= at_least."""
    m = _FRACTION.fullmatch(cell) if isinstance(cell, str) else None
    return m is not None and m.group(1) == m.group(2) and int(m.group(2)) >= at_least


def _gates_true(cell: Any) -> bool:
    return cell == NO_GATES or _all_of(cell, at_least=0)


def from_row(columns: list[str], cells: list[Any], meta: Obj | None) -> Obj | None:
    """The pod a row stands for (Running, Ready, on its node, with the object's own metadata),
    or None when the row does not decide it (read the full object then)."""
    if meta is None or len(cells) != len(columns) or not columns_usable(columns):
        return None
    cell = dict(zip(columns, cells))
    node = cell["Node"]
    if (
        cell["Status"] != "Running"
        or not _all_of(cell["Ready"])
        or not _gates_true(cell["Readiness Gates"])
        or not isinstance(node, str)
        or node in ("", NO_NODE)
        or cell["Name"] != meta.get("name")
        or meta.get("deletionTimestamp")
    ):
        return None
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"nodeName": node},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        READ_FROM: {
            "table": {
                "status": cell["Status"],
                "ready": cell["Ready"],
                "readinessGates": cell["Readiness Gates"],
            }
        },
    }
