"""The audit's tally per dimension (tests/audit/dimensions.py), on a results document shaped as
tests/audit/run.py writes one: each judged prediction counts under every value of its
scenario and batch; unjudged ones and known limits are not wrong."""

from __future__ import annotations

from typing import Any

from tests.audit.dimensions import table, tally
from tests.audit.latetaint import late_batch
from tests.audit.scenarios import LATE_SEED, generate

SEED = LATE_SEED


def _run() -> dict[str, Any]:
    late = next(b for b in (0, 1) if late_batch(SEED, b))
    scenarios = [generate(SEED, i).__dict__ | {"index": i} for i in range(3)]
    verdicts = [
        {"index": 0, "ok": True, "known_limit": ""},
        {"index": 0, "ok": False, "known_limit": ""},
        {"index": 1, "ok": False, "known_limit": "kwok"},
        {"index": 2, "ok": None, "known_limit": ""},
    ]
    batch = {
        "batch": late,
        "nodePath": "not-ready-first (6s)",
        "restart": {},
        "scenarios": scenarios,
        "verdicts": verdicts,
    }
    return {"n": 3, "zoneBatch": 0, "batches": [batch]}


def test_each_prediction_counts_under_every_value_of_its_scenario_and_batch() -> None:
    counts = tally([_run()])
    assert counts[("how the node fails", "not-ready-first")] == [3, 3, 1]
    assert counts[("a new controller leader", "no")] == [3, 3, 1]
    first = generate(SEED, 0)
    assert counts[("controller", first.kind)][1:] >= [2, 1]
    assert counts[("another owner's NoExecute taint", first.late)][1:] >= [2, 1]
    # the known limit is judged but not wrong; the unjudged one is not judged
    assert sum(v[1] for k, v in counts.items() if k[0] == "zone batch") == 3
    assert sum(v[2] for k, v in counts.items() if k[0] == "zone batch") == 1
    text = table(counts)
    assert "| how the node fails | `not-ready-first` | 3 | 3 | 1 |" in text
