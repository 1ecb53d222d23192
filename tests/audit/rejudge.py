"""`python -m tests.audit.rejudge [--rediagnose] RESULTS.json`: recompute every verdict of a
finished audit run from its saved files (the predictions in the results, each batch's polled
history), with the judge as it is now. For changes to the judge, never to what the control plane
did.

--rediagnose: the predictions are made again by the analysis as it is now, from the dumps the run
took a moment before each diagnosis (`batchB-d1.dump.json`, `-d2`); the control plane's history
stays what it was. So a fix to the analysis is judged by what the control plane really did in
those same scenarios. A rediagnosed run is written beside the original (results.rediagnosed.json);
a fix still needs a fresh `make audit` run to count (the dump is a second older than the
diagnosis it replaces)."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.audit import limits, serving, zonebatch
from tests.audit.judge import Verdict, judge, judge_remediation
from tests.audit.observe import History, PodView, Poll, parse_time
from tests.audit.predictions import PodPrediction, pod_predictions
from tests.audit.run import summarize, table, volume_verdicts
from tests.audit.scenarios import generate

Obj = dict[str, Any]
TIMES = ("created", "deletion", "disruption")


def _time(value: str) -> datetime:
    parsed = parse_time(value)
    assert parsed is not None
    return parsed


def view_from_json(raw: Obj) -> PodView:
    """A PodView as tests/audit/run.py saved it."""
    fields: Obj = {k: (parse_time(v) if k in TIMES else v) for k, v in raw.items()}
    fields["finalizers"] = tuple(fields["finalizers"])
    return PodView(**fields)


def load_history(path: Path) -> History:
    doc = json.loads(path.read_text())
    h = History()
    h.marks = {k: _time(v) for k, v in doc["marks"].items()}
    h.remediated = doc.get("remediated", "")
    h.shut_down = dict(doc.get("shutDown") or {})
    h.jobs = {ns: [(_time(at), st) for at, st in rows] for ns, rows in doc["jobs"].items()}
    h.cron_runs = {ns: _time(at) for ns, at in (doc.get("cronRuns") or {}).items()}
    h.job_reads = [_time(at) for at in doc.get("jobReads") or []]
    h.runs = {
        ns: {name: _time(at) for name, at in seen.items()}
        for ns, seen in (doc.get("runs") or {}).items()
    }
    h.nodes = {
        name: [(_time(at), tuple(t) if t is not None else None) for at, t in rows]
        for name, rows in (doc.get("nodes") or {}).items()
    }
    h.volumes = {
        pv: [(_time(at), tuple((n, a, d) for n, a, d in states)) for at, states in rows]
        for pv, rows in (doc.get("volumes") or {}).items()
    }
    for poll in doc["polls"]:
        views = {}
        for raw in poll["pods"]:
            views[raw["uid"]] = view_from_json(raw)
        h.polls.append(Poll(_time(poll["at"]), views))
    return h


def load_prediction(raw: Obj) -> PodPrediction:
    fields = dict(raw)
    for key in ("at", "eviction_at", "action_until", "expected_by"):
        fields[key] = parse_time(fields[key]) if fields.get(key) else None
    return PodPrediction(**fields)


def rediagnosed(
    results: Path, batch: Obj, prefix: str
) -> tuple[list[PodPrediction], list[serving.Serving], dict[str, Obj]]:
    """The batch's predictions (and SERVING) made again, by the analysis as it is now, from its
    dumps."""
    from kubectl_nodefail.analysis.diagnose import diagnose
    from kubectl_nodefail.render import render
    from kubectl_nodefail.snapshot.model import load_dump

    out: list[PodPrediction] = []
    said: list[serving.Serving] = []
    data_of: dict[str, Obj] = {}
    for moment in ("d1", "d2"):
        snap = load_dump(str(results.parent / f"batch{batch['batch']}-{moment}.dump.json"))
        data = render.report_data(diagnose(snap, snap.captured_at))
        out += pod_predictions(data, moment, prefix)
        said += serving.predictions(data, moment, prefix)
        data_of[moment] = data
    return out, said, data_of


def said_then(results: Path, batch: int) -> dict[str, Obj]:
    """The batch's diagnoses as the run printed them (batchB-d1/d2.diagnosis.json)."""
    out = {}
    for moment in ("d1", "d2"):
        path = results.parent / f"batch{batch}-{moment}.diagnosis.json"
        if path.exists():
            out[moment] = json.loads(path.read_text())
    return out


def rejudge(results: Path, again: bool = False) -> Obj:
    doc = json.loads(results.read_text())
    verdicts: list[Verdict] = []
    for batch in doc["batches"]:
        history = load_history(results.parent / f"batch{batch['batch']}-history.json")
        # judged on their own (not from the pod predictions): the node's cause; the zone
        # batch's lines (zonebatch.py); SERVING and the sentences (each diagnosis whole), kept
        # as the run judged them unless the diagnoses are made again
        kept = {"node-cause", "zone:brake", "serving", "sentences:invariants", "sentences:premises"}
        said: list[serving.Serving] = []
        if again:
            prefix = f"au-{batch['scenarios'][0]['seed']}-"
            preds, said, diagnoses = rediagnosed(results, batch, prefix)
            batch["predictions"] = [p.as_dict() for p in preds]
            kept = {"node-cause"}
        else:
            preds = [load_prediction(p) for p in batch["predictions"]]
            diagnoses = said_then(results, batch["batch"])
        batch_verdicts = [Verdict(**v) for v in batch["verdicts"] if v["kind"] in kept]
        if again:
            made = [
                generate(s["seed"], s["index"], s["profile"], len(batch["nodes"]))
                for s in batch["scenarios"]
                if s["placed"]
            ]
            batch_verdicts += serving.verdicts(said, history, set(batch["nodes"]), made)
        remediation = batch.get("remediation") or {}
        if remediation.get("file"):
            report = Path(remediation["file"])
            try:
                done: Obj | None = json.loads(report.read_text())
            except (OSError, ValueError):
                done = None
            scenarios = {
                f"au-{s['seed']}-{s['index']}": generate(
                    s["seed"], s["index"], s["profile"], len(batch["nodes"])
                )
                for s in batch["scenarios"]
            }
            seed = batch["scenarios"][0]["seed"]
            batch_verdicts += judge_remediation(
                done, remediation["exit"], history, scenarios, f"au-{seed}-"
            )
            if len(batch["nodes"]) > 2:  # the zone batch (regular ones have at most two)
                batch_verdicts += zonebatch.judge_refused(
                    done, history, seed, batch["batch"], f"au-{seed}-"
                )
        batch_verdicts += volume_verdicts(
            diagnoses,
            history,
            list(batch["nodes"]),
            [
                generate(s["seed"], s["index"], s["profile"], len(batch["nodes"]))
                for s in batch["scenarios"]
            ],
        )
        for s in batch["scenarios"]:
            if not s["placed"]:
                continue
            scenario = generate(s["seed"], s["index"], s["profile"], len(batch["nodes"]))
            mine = [p for p in preds if p.namespace == scenario.namespace]
            batch_verdicts += judge(scenario, mine, history, limits.known_limit)
        batch["verdicts"] = [v.as_dict() for v in batch_verdicts]
        verdicts += batch_verdicts
    doc["summary"] = summarize(verdicts)
    doc["wrong"] = [v.as_dict() for v in verdicts if v.ok is False and not v.known_limit]
    doc["knownLimits"] = [v.as_dict() for v in verdicts if v.ok is False and v.known_limit]
    return doc


def main(argv: list[str]) -> int:
    again = "--rediagnose" in argv
    args = [a for a in argv if a != "--rediagnose"]
    if len(args) != 1:
        print("usage: python -m tests.audit.rejudge [--rediagnose] RESULTS.json", file=sys.stderr)
        return 2
    results = Path(args[0])
    doc = rejudge(results, again)
    out = results.with_name("results.rediagnosed.json") if again else results
    out.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    print(table(doc["summary"]))
    return 1 if doc["wrong"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
