"""The analysis benchmark: `diagnose --from-file` of generated outages (bench/outage.py) at a
growing number of stuck pods, no API server. `python -m bench.analysis` (issue 19's target:
`--from-file` <= 1 s per 10,000 stuck pods, time against stuck pods a straight line).

Per size it writes the dump once (cached by size and generator in
~/.cache/kubectl-nodefail-bench/analysis/), then measures, median of --runs:
- `kubectl-nodefail diagnose --from-file DUMP -o json`: wall time and peak RSS (GNU time), as
  an on-call engineer runs it;
- the same in one Python process, phase by phase (`--phases DUMP`): loading and checking the
  dump, the analysis (`diagnose()`), the JSON (report data, each node's timeline, encoding).
Every run's summary must match what the generator built (nodes not Ready, pods on failed
nodes, pods waiting for a failed node), so a faster run that finds less is an error.

Results under --label (e.g. before / after a change) in --out/results.json, merged with the
labels already there; results.md and plot.svg (time against stuck pods) are redrawn from all.

    nice -n 10 python -m bench.analysis --stuck 1000,2000,5000,10000,20000 --runs 3 --label after
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import platform
import shlex
import site
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench import outage, plot
from bench.run import _has_orjson, machine, nodefail_cmd

REPO = Path(__file__).resolve().parents[1]
CACHE = Path.home() / ".cache" / "kubectl-nodefail-bench" / "analysis"
OUT = REPO / "bench" / "results" / "analysis"
DEFAULT_STUCK = "1000,2000,5000,10000,20000"
CHECKED = ("nodesNotReady", "podsOnFailedNodes", "waitingForNode")
PHASES = ("load", "analysis", "timelines", "encode")


def dump_for(shape: outage.Shape) -> tuple[Path, dict[str, Any]]:
    """The dump of `shape`, written once per generator version (its source and templates)."""
    digest = hashlib.sha256(Path(outage.__file__).read_bytes())
    for name in (outage.AFTER, outage.BEFORE, outage.STORAGE):
        digest.update((outage.FIXTURES / f"{name}.json").read_bytes())
    key = f"{shape.failed}-{digest.hexdigest()[:12]}"
    path, info = CACHE / f"outage-{key}.json", CACHE / f"outage-{key}.info.json"
    if not path.exists() or not info.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        meta = outage.write(shape, path)
        meta["bytes"] = path.stat().st_size
        info.write_text(json.dumps(meta))
    return path, json.loads(info.read_text())


def phases(path: str) -> dict[str, Any]:
    """One --from-file diagnosis in this process, timed phase by phase (what cli.diagnose
    does for `-o json`)."""
    from kubectl_nodefail.analysis.diagnose import diagnose
    from kubectl_nodefail.cli import main as cli
    from kubectl_nodefail.render import render
    from kubectl_nodefail.snapshot.model import load_dump

    gc.set_threshold(*getattr(cli, "GC_THRESHOLD", gc.get_threshold()))  # as the command runs

    marks = [(time.perf_counter(), time.process_time())]
    snap = load_dump(path)
    marks.append((time.perf_counter(), time.process_time()))
    report = diagnose(snap, snap.captured_at, timelines=True)
    marks.append((time.perf_counter(), time.process_time()))
    data = render.report_data(report)
    marks.append((time.perf_counter(), time.process_time()))
    text = render.as_json(data)
    marks.append((time.perf_counter(), time.process_time()))
    wall = [b[0] - a[0] for a, b in zip(marks, marks[1:])]
    cpu = [b[1] - a[1] for a, b in zip(marks, marks[1:])]
    return {
        **dict(zip(PHASES, wall)),
        "cpu": dict(zip(PHASES, cpu)),
        "bytes": len(text),
        "summary": data["summary"],
        "package": str(Path(render.__file__).parents[1]),
    }


def _check(summary: dict[str, Any], expected: dict[str, Any], what: str) -> None:
    wrong = {k: (summary.get(k), expected[k]) for k in CHECKED if summary.get(k) != expected[k]}
    if wrong:
        raise SystemExit(f"{what}: found (got, built) {wrong}")


def run_once(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    """One process: wall seconds, CPU seconds (user + system) and peak RSS bytes from GNU time,
    its exit code, the summary of its JSON (exit 0 or 3) or its error line. On a shared
    machine the CPU time is the steadier figure: the wall time also holds the time spent
    waiting for a core."""
    with (
        tempfile.NamedTemporaryFile("r", suffix=".time") as out,
        tempfile.TemporaryFile("w+") as stdout,
    ):
        t0 = time.monotonic()
        proc = subprocess.run(
            ["/usr/bin/time", "-q", "-f", "%M %U %S", "-o", out.name, *argv],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=CACHE,
            check=False,
        )
        wall = time.monotonic() - t0
        rss_kb, user, system = out.read().split()[-3:]
        run: dict[str, Any] = {
            "wall": wall,
            "cpu": float(user) + float(system),
            "rss": int(rss_kb) * 1024,
            "exit": proc.returncode,
        }
        if proc.returncode in (0, 3):
            stdout.seek(0)
            run["summary"] = json.load(stdout)["summary"]
        else:
            run["error"] = (proc.stderr.strip().splitlines() or ["(nothing on stderr)"])[-1]
    return run


def _python(package: str | None) -> tuple[list[str], dict[str, str]]:
    """The interpreter command and environment that import kubectl_nodefail from `package`
    (a folder holding an older commit's copy, `git archive COMMIT kubectl_nodefail | tar -x`)
    instead of the editable install: -S leaves out the site hook that installs the editable
    finder, PYTHONPATH lists the folder, this checkout (bench) and the dependencies. The
    processes run in CACHE: the current folder comes first on sys.path."""
    env = dict(os.environ)
    if not package:
        env["PYTHONPATH"] = str(REPO)
        return [sys.executable], env
    env["PYTHONPATH"] = os.pathsep.join([package, str(REPO), *site.getsitepackages()])
    return [sys.executable, "-S"], env


def measure(path: Path, info: dict[str, Any], runs: int, package: str | None) -> dict[str, Any]:
    python, env = _python(package)
    cli = [*python, "-m", "kubectl_nodefail"] if package else nodefail_cmd()
    argv = [*cli, "diagnose", "--from-file", str(path), "-o", "json"]
    cli_runs = []
    for _ in range(runs):
        run = run_once(argv, env)
        cli_runs.append(run)
        if "error" in run:  # e.g. past the default --deadline: once is enough to know
            break
        _check(run["summary"], info, f"{path} (CLI)")
    steps = []
    for _ in range(runs):
        proc = subprocess.run(
            [*python, "-m", "bench.analysis", "--phases", str(path)],
            capture_output=True,
            text=True,
            check=True,
            cwd=CACHE,
            env=env,
        )
        steps.append(json.loads(proc.stdout))
    _check(steps[0]["summary"], info, f"{path} (in process)")
    expected = str(Path(package or REPO) / "kubectl_nodefail")
    if steps[0]["package"] != expected:
        raise SystemExit(f"measured {steps[0]['package']}, not {expected}")
    median = {k: statistics.median(s[k] for s in steps) for k in PHASES}
    median_cpu = {k: statistics.median(s["cpu"][k] for s in steps) for k in PHASES}
    return {
        "stuck": outage.stuck_pods(outage.Shape(failed=info["nodesNotReady"])),
        "failed": info["nodesNotReady"],
        "nodes": info["nodes"],
        "pods": info["pods"],
        "items": info["items"],
        "dumpBytes": info["bytes"],
        "wall": statistics.median(r["wall"] for r in cli_runs),
        "walls": [r["wall"] for r in cli_runs],
        "cpu": statistics.median(r["cpu"] for r in cli_runs),
        "cpus": [r["cpu"] for r in cli_runs],
        "rss": max(r["rss"] for r in cli_runs),
        **(
            {"error": f"exit {cli_runs[-1]['exit']}: {cli_runs[-1]['error']}"}
            if "error" in cli_runs[-1]
            else {}
        ),
        "phases": median,
        "phasesCpu": median_cpu,
        "phaseRuns": [{k: s[k] for k in PHASES} for s in steps],
        "summary": steps[0]["summary"],
    }


def markdown(doc: dict[str, Any]) -> str:
    lines = [
        "# `diagnose --from-file` of generated outages (bench/analysis.py)",
        "",
        "Target (issue 19): `--from-file` <= 1 s per 10,000 stuck pods. The command's wall and "
        "CPU time (user + system) and peak RSS are medians of its runs; read dump (load and "
        "check), `diagnose()` (each node's timeline included since 2026-12-05), the report data "
        "and "
        "JSON text are the CPU seconds of the same work done in one process, phase by phase "
        "(medians). On this shared machine compare CPU times: wall times include waiting for "
        "a core (see each run's load average).",
        "",
    ]
    for label, run in doc["runs"].items():
        meta = run["meta"]
        lines += [
            f"## {label}",
            "",
            f"Commit {meta['commit']}; {meta['machine']}; started {meta['started']}; "
            f"{meta['runs']} runs each; orjson {'installed' if meta['orjson'] else 'absent'}; "
            "load average at the end "
            f"{', '.join(f'{x:.1f}' for x in meta['load'])}; command: `{meta['command']}`.",
            "",
            "| stuck pods | failed nodes | dump (items, MiB) | `--from-file -o json` wall | "
            "CPU | peak RSS | wall per 10k stuck | read dump | diagnose() | timelines + report | "
            "JSON text |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in run["rows"]:
            p = r.get("phasesCpu") or r["phases"]
            if "error" in r:
                cli = f"did not finish: {r['error']} (after {r['wall']:.0f} s) | - | - | -"
            else:
                cli = (
                    f"{r['wall']:.2f} s | {r['cpu']:.2f} s | {r['rss'] / plot.MB:,.0f} MB | "
                    f"{r['wall'] / r['stuck'] * 10_000:.2f} s"
                )
            lines.append(
                f"| {r['stuck']:,} | {r['failed']:,} | {r['items']:,}, "
                f"{r['dumpBytes'] / plot.MB:,.0f} | {cli} | "
                + " | ".join(f"{p[k]:.2f} s" for k in PHASES)
                + " |"
            )
        lines.append("")
    return "\n".join(lines)


def series(doc: dict[str, Any]) -> list[tuple[str, list[tuple[float, float]]]]:
    out = []
    for label, run in doc["runs"].items():
        rows = run["rows"]
        done = [r for r in rows if "error" not in r]
        out.append((f"{label}: --from-file -o json (CPU)", [(r["stuck"], r["cpu"]) for r in done]))
        out.append(
            (
                f"{label}: analysis, diagnose() (CPU)",
                [(r["stuck"], (r.get("phasesCpu") or r["phases"])["analysis"]) for r in rows],
            )
        )
    return out


def write(out: Path, doc: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / "results.md").write_text(markdown(doc))
    svg = plot.lines_svg(
        series(doc), "stuck pods", "CPU seconds", "diagnose --from-file: time against stuck pods"
    )
    (out / "plot.svg").write_text(svg)


def _commit() -> str:
    proc = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "kubectl_nodefail"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    return proc.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stuck", default=DEFAULT_STUCK, help="stuck pods per size, ascending")
    parser.add_argument("--runs", type=int, default=3, help="runs per size (median)")
    parser.add_argument("--label", default="now", help="name of this run in the results")
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument(
        "--package",
        metavar="DIR",
        help="measure the kubectl_nodefail package in DIR (an older commit's: "
        "`git archive COMMIT kubectl_nodefail | tar -x -C DIR`) instead of the installed one",
    )
    parser.add_argument("--commit", help="the commit --package was taken from (for the record)")
    parser.add_argument("--phases", metavar="DUMP", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phases:
        print(json.dumps(phases(args.phases)))
        return
    out = Path(args.out)
    doc: dict[str, Any] = {"runs": {}}
    if (out / "results.json").exists():
        doc = json.loads((out / "results.json").read_text())
    meta = {
        "commit": args.commit or _commit(),
        "machine": machine(),
        "python": platform.python_version(),
        "orjson": _has_orjson(),
        "started": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "runs": args.runs,
        "command": "python -m bench.analysis " + shlex.join(sys.argv[1:]),
    }
    rows = []
    for stuck in (int(s) for s in args.stuck.split(",")):
        shape = outage.failed_for(stuck)
        path, info = dump_for(shape)
        row = measure(path, info, args.runs, args.package)
        rows.append(row)
        print(
            f"{row['stuck']:>6} stuck pods ({row['failed']} failed nodes): --from-file "
            f"{row['wall']:.2f} s ({row['cpu']:.2f} s CPU), {row['rss'] / plot.MB:.0f} MB; "
            f"analysis {row['phases']['analysis']:.2f} s",
            file=sys.stderr,
        )
        meta["load"] = list(os.getloadavg())
        doc["runs"][args.label] = {"meta": meta, "rows": rows}
        write(out, doc)  # after each size: a long run interrupted keeps what it measured


if __name__ == "__main__":
    main()
