"""`-o markdown` (render/markdown.py): what each column holds is what its header says."""

from __future__ import annotations

from pathlib import Path

from kubectl_nodefail import examples
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.render import incident, render
from kubectl_nodefail.snapshot.model import load_dump

DEMO = Path(examples.__file__).parent / "statefulset-node-down.json"


def test_the_pod_table_names_its_column_for_what_it_holds() -> None:
    """The column holds each pod's replacement, not the screen's NEXT (when it is evicted, or
    BLOCKED): its header says replacement (a first-time trial read "next" over "none by
    design (one pod per node)")."""
    snap = load_dump(str(DEMO))
    report = diagnose(snap, snap.captured_at, timelines=True)
    text = incident.markdown(render.report_data(report), report)
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("| pod |"))
    assert header == "| pod | status | node | owner | replacement | action |"
    db = next(line for line in lines if "`scenario-down/db-0`" in line)
    assert "| blocked: the name db-0 is still taken by this Terminating pod |" in db
