"""`diagnose --watch`: follow an incident live.

Every INTERVAL seconds the cluster is read again (nodes, the pods of failed nodes, the
Terminating ones: what diagnose reads) and the diagnosis is shown again when what matters
changed: a node's Ready status, its taints, a pod appearing, moving, becoming Terminating,
changing phase or readiness, going away. On a terminal the screen is redrawn in place each
time (ages stay current); into a pipe or a file a new block is appended only on a change,
headed by a `--- TIME ---` line (one JSON document per line with -o json).

A failed read (API server unreachable, timeouts) is reported once on stderr and retried:
a watch must outlive a control-plane blip. Ctrl-C ends it cleanly, with the exit code of the
last diagnosis (0 nothing wrong, 3 problems found).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any, TextIO

from kubectl_nodefail.errors import ApiError, NodefailError, UnreachableError
from kubectl_nodefail.snapshot import Snapshot

CLEAR = "\x1b[H\x1b[2J"


def _ready(obj: dict[str, Any]) -> str:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return str(cond.get("status"))
    return ""


def fingerprint(snap: Snapshot) -> tuple[Any, ...]:
    """What the watch reacts to; heartbeats and resourceVersions alone are not changes."""
    nodes = sorted(
        (
            n["metadata"]["name"],
            _ready(n),
            tuple(
                sorted((t["key"], t["effect"]) for t in (n.get("spec") or {}).get("taints") or [])
            ),
            bool((n.get("spec") or {}).get("unschedulable")),
        )
        for n in snap.nodes
    )
    pods = sorted(
        (
            p["metadata"].get("namespace", ""),
            p["metadata"]["name"],
            p["metadata"].get("uid", ""),
            (p.get("spec") or {}).get("nodeName") or "",
            (p.get("status") or {}).get("phase") or "",
            bool(p["metadata"].get("deletionTimestamp")),
            _ready(p),
        )
        for p in snap.pods
    )
    return (tuple(nodes), tuple(pods))


def run(
    load: Callable[[], Snapshot],
    show: Callable[[Snapshot], tuple[str, int]],
    interval: float,
    out: TextIO,
    err: TextIO,
    tty: bool,
    title: str,
    one_line: bool = False,
    sleep: Callable[[float], None] = time.sleep,
    max_polls: int | None = None,
) -> int:
    """Poll until Ctrl-C (or `max_polls`, for tests); return the last diagnosis's exit code."""
    last: tuple[Any, ...] | None = None
    code = 0
    failing = ""
    polls = 0
    try:
        while max_polls is None or polls < max_polls:
            polls += 1
            try:
                snap = load()
            except (UnreachableError, ApiError) as exc:
                if exc.line() != failing:
                    failing = exc.line()
                    err.write(f"warning: {failing} (retrying every {interval:g}s)\n")
                    err.flush()
                sleep(interval)
                continue
            if failing:
                err.write("warning: reading the cluster again\n")
                failing = ""
            current = fingerprint(snap)
            if tty or current != last:
                text, code = show(snap)
                stamp = datetime.now(timezone.utc).strftime("%H:%M:%S")
                if tty:
                    out.write(
                        f"{CLEAR}{title}   (every {interval:g}s; {stamp}; Ctrl-C to stop)\n\n"
                    )
                    out.write(text)
                elif one_line:
                    out.write(json.dumps(json.loads(text), separators=(",", ":")) + "\n")
                else:
                    out.write(f"--- {stamp} ---\n{text}")
                out.flush()
                last = current
            sleep(interval)
    except KeyboardInterrupt:
        if tty:
            out.write("\n")
        out.flush()
    except NodefailError:
        raise
    return code
