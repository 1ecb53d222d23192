"""The wrong predictions the live audit found (tests/fixtures/audit/, each snapshot's
`notes.wrong`), diagnosed again: the prediction the control plane proved wrong is not made any
more. The judge's own phrase readers decide what a text predicts (tests/audit/judge.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kubectl_nodefail import render
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.snapshot import load_dump
from tests.audit.judge import RETURN_PHRASES
from tests.unit.conftest import FIXTURES

AUDIT = sorted((FIXTURES / "audit").glob("*.json"))
WRONG = re.compile(r"(?P<kind>[a-z-]+:[a-z-]+) (?P<ns>[a-z0-9-]+)/(?P<pod>[a-z0-9-]+): said")


def _wrong(path: Path) -> list[tuple[str, str]]:
    notes = json.loads(path.read_text())["notes"]["wrong"]
    return [(m["kind"], m["pod"]) for m in WRONG.finditer(notes)]


@pytest.mark.parametrize("path", AUDIT, ids=[p.name for p in AUDIT])
def test_a_prediction_the_control_plane_proved_wrong_is_not_made_again(path: Path) -> None:
    wrong = _wrong(path)
    assert wrong, f"{path.name}: no wrong prediction recorded"
    snap = load_dump(str(path))
    data = render.report_data(diagnose(snap, snap.captured_at))
    pods = {p["name"]: p for p in data["pods"]}
    phrases = dict(RETURN_PHRASES)
    for kind, name in wrong:
        pod = pods[name]
        family, what = kind.split(":", 1)
        if family == "replacement":
            assert pod["replacement"]["state"] != what, (path.name, name, pod["replacement"])
        else:
            assert family == "if-node-returns"
            text = pod["ifNodeReturns"].lower()
            assert not phrases[what].search(text), (path.name, name, text)
