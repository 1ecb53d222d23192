"""dumpschema cuts every object to the fields it names (the analysis reads nothing else).
This proves it on every recorded fixture: the diagnosis (with the nodes' timelines) and the plan
of a cut snapshot are identical to those of the same objects uncut. A field the analysis starts
reading without a line in the schema makes this fail, instead of silently reading "absent" in
production."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.remediate.plan import Options, make_plan
from kubectl_nodefail.render import render
from kubectl_nodefail.snapshot.model import from_items, load_dump, parse_time
from tests.unit.conftest import attestable

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
ALL = sorted(FIXTURES.rglob("*.json"))


def _uncut(path: Path):  # type: ignore[no-untyped-def]
    doc = json.loads(path.read_text())
    captured = parse_time(doc["capturedAt"])
    assert captured is not None
    return from_items(
        doc["items"],
        captured,
        source=str(path),
        server_version=doc.get("serverVersion"),
        gaps=list(doc.get("gaps") or []),
        notes=dict(doc.get("notes") or {}),
    )


def _outputs(snap) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    report = diagnose(snap, snap.captured_at, timelines=True)
    failed = attestable(report)
    opts = Options(
        attested=tuple(failed),
        max_nodes=max(1, len(failed)),
        allow_disruption=True,
        server_minor=snap.server_minor,
    )
    plan = make_plan(report, opts)
    return (
        render.as_json(render.report_data(report)),
        render.as_json(render.plan_data(plan, False, {})),
    )


def test_every_fixture_is_covered() -> None:
    assert len(ALL) >= 20, ALL


@pytest.mark.parametrize("path", ALL, ids=[str(p.relative_to(FIXTURES)) for p in ALL])
def test_the_cut_snapshot_diagnoses_and_plans_like_the_whole_one(path: Path) -> None:
    whole_report, whole_plan = _outputs(_uncut(path))
    cut_report, cut_plan = _outputs(load_dump(str(path)))
    assert cut_report == whole_report
    assert cut_plan == whole_plan
