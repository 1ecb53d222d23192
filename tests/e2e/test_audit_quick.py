"""The live prediction audit's fixed seed set (make test): a handful of generated scenarios on
one failable node, one failure, played out; every prediction of the diagnosis is judged by what
the control plane did (tests/audit/). The long, random runs are `make audit SEED=… N=…`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.audit.run import Batch, summarize, table
from tests.audit.scenarios import generate
from tests.e2e.controlplane import ControlPlane

pytestmark = pytest.mark.e2e
SEED = 17
SCENARIOS = 8


def test_a_fixed_seed_set_of_predictions_holds(control_plane: ControlPlane, tmp_path: Path) -> None:
    scenarios = [generate(SEED, i, "quick", node_slots=1) for i in range(SCENARIOS)]
    result = Batch(control_plane, scenarios, batch=0, slots=1, outdir=tmp_path).run()
    report = table(summarize(result.verdicts))
    assert all(result.placed.values()), f"scenarios not placed: {result.placed}\n{result.errors}"
    judged = [v for v in result.verdicts if v.ok is not None]
    # Each scenario yields an eviction or never-evicted verdict, a replacement and a return one.
    assert len(judged) >= 2 * SCENARIOS, report
    kinds = {v.kind.split(":")[0] for v in judged}
    assert {"replacement", "if-node-returns"} <= kinds, report
    # when it is evicted (or that it never is): on a loaded machine every short toleration may
    # have run out before the first diagnosis, leaving only the never-evicted ones to judge
    assert kinds & {"eviction-time", "never-evicted"}, report
    wrong = [v for v in judged if v.ok is False and not v.known_limit]
    assert not wrong, (
        report
        + "\n"
        + "\n".join(
            f"{v.seed}/{v.index} {v.kind} {v.pod} ({v.scenario}): said {v.predicted!r}, "
            f"the control plane: {v.observed!r}"
            for v in wrong
        )
    )
