"""The audit's check of every sentence (tests/audit/sentences.py): right on a recorded moment,
and wrong when a claim's premise or the diagnosis' own consistency is broken, or the check
could pass on anything."""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kubectl_nodefail.cli.main import main
from tests.audit.sentences import check_moment, check_saved
from tests.unit.conftest import FIXTURES

DUMP = FIXTURES / "job-pfp-before-eviction.json"
Obj = dict[str, Any]


def _runner(tamper: Callable[[Obj], None] | None = None) -> Any:
    """The plugin run in-process; `tamper` changes what `diagnose --from-file` prints."""

    def nodefail(*args: str) -> subprocess.CompletedProcess[str]:
        result = CliRunner().invoke(main, list(args))
        out = result.stdout
        if tamper is not None and args[0] == "diagnose":
            data = json.loads(out)
            tamper(data)
            out = json.dumps(data)
        return subprocess.CompletedProcess(list(args), result.exit_code, out, result.stderr)

    return nodefail


def _diagnosis() -> Obj:
    return json.loads(_runner()("diagnose", "--from-file", str(DUMP), "-o", "json").stdout)


def _verdicts(diagnosis: Obj, tamper: Callable[[Obj], None] | None = None) -> dict[str, Any]:
    found = check_moment(2037, "b0-d1", DUMP, diagnosis, _runner(tamper))
    return {v.kind: v for v in found}


def test_a_recorded_moment_holds() -> None:
    verdicts = _verdicts(_diagnosis())
    assert set(verdicts) == {"sentences:invariants", "sentences:premises"}
    assert all(v.ok for v in verdicts.values()), verdicts


def test_a_false_premise_is_wrong() -> None:
    def lie(data: Obj) -> None:
        pod = next(p for p in data["pods"] if p["namespace"] == "au-2037-11")
        claim = next(c for c in pod["claims"] if c.get("because"))
        claim["because"][0]["value"] = "not what the dump says"

    verdict = _verdicts(_diagnosis(), lie)["sentences:premises"]
    assert verdict.ok is False and "not what the dump says" in verdict.observed


def test_a_diagnosis_contradicting_itself_is_wrong() -> None:
    broken = copy.deepcopy(_diagnosis())
    broken["pods"] = broken["pods"][1:]  # the summary still counts the pod
    verdict = _verdicts(broken)["sentences:invariants"]
    assert verdict.ok is False and verdict.observed


def test_saved_moments_are_found_beside_their_dumps(tmp_path: Path) -> None:
    run = tmp_path / "2037"
    run.mkdir()
    (run / "batch0-d1.dump.json").write_text(DUMP.read_text())
    (run / "batch0-d1.diagnosis.json").write_text(json.dumps(_diagnosis()))
    (run / "batch1-d2.diagnosis.json").write_text("{}")  # no dump beside it: not checked
    found = check_saved(run, _runner())
    assert [(v.seed, v.moment, v.ok) for v in found] == [(2037, "batch0-d1", True)] * 2
