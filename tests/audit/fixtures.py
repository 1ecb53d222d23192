"""A wrong prediction's snapshot, kept as a unit fixture: the batch's dump of the moment the
diagnosis was made, cut down to the scenario's namespace (cluster-scoped objects and other
system namespaces kept), with notes saying what was said and what the control plane did."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

Obj = dict[str, Any]


def cut(dump: Obj, namespace: str, prefix: str) -> Obj:
    """The dump without the other scenarios' namespaced objects."""
    items = []
    for item in dump.get("items") or []:
        ns = (item.get("metadata") or {}).get("namespace") or ""
        if ns.startswith(prefix) and ns != namespace:
            continue
        if item.get("kind") == "Namespace":
            name = item["metadata"]["name"]
            if name.startswith(prefix) and name != namespace:
                continue
        items.append(item)
    return {**dump, "items": items}


def save_wrong(doc: Obj, dest: Path) -> list[Path]:
    """One fixture per (scenario, moment) with a wrong prediction; returns the files written."""
    written = []
    by_case: dict[tuple[int, int, str], list[Obj]] = {}
    for v in doc.get("wrong") or []:
        if v["index"] >= 0:
            by_case.setdefault((v["seed"], v["index"], v["moment"]), []).append(v)
    batches = {s["index"]: b for b in doc.get("batches") or [] for s in b["scenarios"]}
    for (seed, index, moment), verdicts in sorted(by_case.items()):
        batch = batches.get(index)
        if batch is None:
            continue
        source = Path(batch["dumps"][moment])
        if not source.exists():
            continue
        namespace = f"au-{seed}-{index}"
        fixture = cut(json.loads(source.read_text()), namespace, f"au-{seed}-")
        scenario = next(s for s in batch["scenarios"] if s["index"] == index)
        fixture["notes"] = {
            "scenario": f"audit seed {seed} index {index}: {scenario['describe']}",
            "moment": f"{moment} (the diagnosis the wrong prediction came from)",
            "recordedBy": "tests/audit (make audit)",
            "wrong": "; ".join(
                f"{v['kind']} {v['pod']}: said {v['predicted']!r}, the control plane: "
                f"{v['observed']!r}"
                for v in verdicts
            ),
        }
        dest.mkdir(parents=True, exist_ok=True)
        path = dest / f"seed{seed}-{index}-{moment}.json"
        path.write_text(json.dumps(fixture, indent=1, sort_keys=True) + "\n")
        written.append(path)
    return written
