"""Every sentence of every audit diagnosis checked, not only the predictions the judge reads:
the diagnosis' self-consistency and time invariants (tests/oracles/invariants.py) on the live
diagnosis, and every claim's premises (tests/oracles/premises.py) on the same moment's dump
diagnosed again from that file, with the plan of that dump (`remediate --from-file`) checked the
same way. Each moment gives one verdict per oracle (`sentences:invariants`, `sentences:premises`),
wrong with every violation named.

`python -m tests.audit.sentences DIR` checks the moments a run saved in DIR (.audit/SEED).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.audit.judge import Verdict
from tests.oracles import premises
from tests.oracles.invariants import check_data

Obj = dict[str, Any]
Run = Callable[..., "subprocess.CompletedProcess[str]"]


def check_moment(
    seed: int, moment: str, dump_path: Path, diagnosis: Obj, nodefail: Run
) -> list[Verdict]:
    """The two verdicts of one moment (a batch's d1 or d2)."""
    found = [str(v) for v in check_data(diagnosis)]
    dump = json.loads(dump_path.read_text())
    false: list[str] = []
    again = nodefail("diagnose", "--from-file", str(dump_path), "-o", "json")
    if again.returncode not in (0, 3):
        false.append(f"diagnose --from-file: exit {again.returncode}: {again.stderr.strip()}")
    else:
        data = json.loads(again.stdout)
        false += [str(p) for p in premises.check(dump, data)]
        found += [f"(from the dump) {v}" for v in check_data(data)]
    planned = nodefail("remediate", "--from-file", str(dump_path), "-o", "json")
    if planned.returncode not in (0, 4, 5):
        false.append(f"remediate --from-file: exit {planned.returncode}: {planned.stderr.strip()}")
    else:
        false += [f"(plan) {p}" for p in premises.check_plan(dump, json.loads(planned.stdout))]
    counted = f"{len(diagnosis.get('pods') or [])} pods, {len(diagnosis.get('nodes') or [])} nodes"
    return [
        Verdict(
            kind=kind,
            seed=seed,
            index=-1,
            moment=moment,
            pod="-",
            predicted=what,
            observed="; ".join(wrong) if wrong else f"none ({counted})",
            ok=not wrong,
        )
        for kind, what, wrong in (
            ("sentences:invariants", "no self-contradiction, no time told wrong", found),
            ("sentences:premises", "every claim's premises hold in the dump", false),
        )
    ]


def check_saved(outdir: Path, nodefail: Run) -> list[Verdict]:
    """The verdicts of every moment a run saved (batchB-MOMENT.diagnosis.json beside its dump)."""
    seed = int(outdir.name) if outdir.name.isdigit() else -1
    out = []
    for path in sorted(outdir.glob("batch*-d*.diagnosis.json")):
        dump = path.with_name(path.name.replace(".diagnosis.json", ".dump.json"))
        if dump.exists():
            moment = path.name.split(".", 1)[0]
            out += check_moment(seed, moment, dump, json.loads(path.read_text()), nodefail)
    return out


def main(argv: list[str]) -> int:
    from tests.audit.run import nodefail_bin

    def nodefail(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([nodefail_bin(), *args], capture_output=True, text=True, check=False)

    verdicts = check_saved(Path(argv[0]), nodefail)
    for v in verdicts:
        print(f"{v.moment:12} {v.kind:22} {'ok' if v.ok else 'WRONG'}  {v.observed[:300]}")
    return 0 if verdicts and all(v.ok for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
