"""`python -m tests.audit.dimensions RESULTS.json ...`: per dimension of the map (docs/audit.md),
how many scenarios drew each value and how many predictions about them were judged and wrong,
over finished audit runs. A prediction counts under every dimension value of its scenario and
of its batch (the node path, a new leader, the late taint, the zone batch, the remedy).

Judged: a verdict right or wrong (`ok` True or False); wrong: `ok` False and not a known limit
of the test bed (limits.py). The scenario's fields are read from the results as the run saved
them, so a run keeps its own draw whatever the generator draws now."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from tests.audit import latetaint
from tests.audit.scenarios import remedy

Obj = dict[str, Any]


def _grace(seconds: int) -> str:
    return f"{seconds} s" if seconds < 60 else f"{seconds // 60} min"


def values(scenario: Obj, batch: Obj, zone: bool) -> list[tuple[str, str]]:
    """(dimension, value) of one scenario in its batch."""
    seed = int(scenario["seed"])
    late = scenario.get("late", "-")
    return [
        ("controller", scenario["kind"]),
        ("tolerations", scenario["toleration"]),
        ("placement", scenario["placement"]),
        ("grace period", _grace(int(scenario["grace"]))),
        ("change", f"{scenario['change']}@{scenario['change_at']}"),
        ("update strategy", scenario.get("strategy", "-")),
        ("finalizer", "yes" if scenario["finalizer"] else "no"),
        ("tolerations' order", scenario.get("order", "-")),
        ("volume", scenario.get("volume", "-")),
        (
            "another owner's NoExecute taint",
            late if not zone and latetaint.late_batch(seed, int(batch["batch"])) else "-",
        ),
        ("how the node fails", str(batch.get("nodePath") or "silent").split(" (")[0]),
        ("a new controller leader", "yes" if batch.get("restart") else "no"),
        (
            "a diagnosis with no controller leader",
            "yes" if (batch.get("restart") or {}).get("leaderless") else "no",
        ),
        ("zone batch", "yes" if zone else "no"),
        ("remedy", remedy(seed)),
    ]


def tally(results: list[Obj]) -> dict[tuple[str, str], list[int]]:
    """(dimension, value) -> [scenarios, judged, wrong]."""
    out: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for run in results:
        zone_from = int(run.get("n", 0)) - int(run.get("zoneBatch") or 0)
        for batch in run["batches"]:
            scenarios = {int(s["index"]): s for s in batch.get("scenarios") or []}
            zone = bool(run.get("zoneBatch")) and min(scenarios, default=0) >= zone_from
            keys = {i: values(s, batch, zone) for i, s in scenarios.items()}
            for pairs in keys.values():
                for pair in pairs:
                    out[pair][0] += 1
            for verdict in batch.get("verdicts") or []:
                found = keys.get(int(verdict.get("index", -1)))
                if found is None or verdict.get("ok") is None:
                    continue
                wrong = verdict["ok"] is False and not verdict.get("known_limit")
                for pair in found:
                    out[pair][1] += 1
                    out[pair][2] += int(wrong)
    return dict(out)


def table(counts: dict[tuple[str, str], list[int]]) -> str:
    lines = [
        "| dimension | value | scenarios | predictions judged | wrong |",
        "|---|---|---|---|---|",
    ]
    for (dimension, value), (drawn, judged, wrong) in sorted(counts.items()):
        lines.append(f"| {dimension} | `{value}` | {drawn:,} | {judged:,} | {wrong} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    runs = [json.loads(Path(p).read_text()) for p in argv]
    print(table(tally(runs)), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
