"""Two clusters side by side, runs interleaved: `python -m bench.pair 5000x60000 5000x60000+60000`.

`make bench` measures one cluster size after another, so on a shared machine a load that comes
and goes lands on one size and not the other, and their ratio drifts. Here both clusters run at
once (two etcd + kube-apiserver pairs, each failed the same way) and every round measures
`diagnose -o json` on A, then on B, then the floor (the raw bulk reads) on each: the ratio of
the medians compares runs made under the same load. It writes pair.json and prints the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from bench import cluster, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=cluster.Size.parse, help="NODESxPODS[+EXTRA]")
    parser.add_argument("b", type=cluster.Size.parse, help="NODESxPODS[+EXTRA]")
    parser.add_argument("--failed", type=int, default=20, help="nodes failed in each")
    parser.add_argument("--runs", type=int, default=9, help="interleaved rounds (median)")
    parser.add_argument("--out", default=str(run.REPO / "bench" / "results" / "pair"))
    args = parser.parse_args()
    bindir = cluster.binaries()
    run.compile_package()
    nf = run.nodefail_cmd()
    servers: list[cluster.Server] = []
    works: list[Path] = []
    try:
        for size in (args.a, args.b):
            work = Path(tempfile.mkdtemp(prefix=f"nodefail-pair-{size.key}-"))
            works.append(work)
            server = cluster.start(bindir, size, work / "cp", log=lambda m: print(f"  {m}"))
            servers.append(server)
            cluster.fail_nodes(server, size.nodes, args.failed)
        walls: dict[str, list[float]] = {f"{s}:{t}": [] for s in "ab" for t in ("nf", "floor")}
        rss: dict[str, int] = {"a": 0, "b": 0}
        for i in range(args.runs):
            for key, server in zip("ab", servers, strict=True):
                env = {**os.environ, "KUBECONFIG": str(server.kubeconfig)}
                wall, peak, _ = run.run_once([*nf, "diagnose", "-o", "json"], env)
                walls[f"{key}:nf"].append(wall)
                rss[key] = max(rss[key], peak)
                walls[f"{key}:floor"].append(run.floor(server, 1)["wall"])
            print(
                f"round {i + 1}: diagnose {walls['a:nf'][-1]:.2f} s / {walls['b:nf'][-1]:.2f} s, "
                f"floor {walls['a:floor'][-1]:.2f} s / {walls['b:floor'][-1]:.2f} s",
                flush=True,
            )
        summaries = [_summary(nf, server) for server in servers]
    finally:
        for server in servers:
            server.stop()
        for work in works:
            shutil.rmtree(work, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in walls.items()}
    result: dict[str, Any] = {
        "machine": run.machine(),
        "load": os.getloadavg(),
        "a": args.a.label,
        "b": args.b.label,
        "failed": args.failed,
        "walls": walls,
        "median": med,
        "rss": rss,
        "diagnose_ratio": med["b:nf"] / med["a:nf"],
        "floor_ratio": med["b:floor"] / med["a:floor"],
        "rss_ratio": rss["b"] / max(rss["a"], 1),
        "summaries": summaries,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "pair.json").write_text(json.dumps(result, indent=1) + "\n")
    print(
        f"{args.b.label} against {args.a.label}, {args.failed} failed, median of {args.runs} "
        f"interleaved rounds: diagnose {med['a:nf']:.2f} s -> {med['b:nf']:.2f} s "
        f"({result['diagnose_ratio']:.2f}x), floor {med['a:floor']:.2f} s -> "
        f"{med['b:floor']:.2f} s ({result['floor_ratio']:.2f}x), peak RSS "
        f"{rss['a'] / 2**20:.0f} -> {rss['b'] / 2**20:.0f} MB ({result['rss_ratio']:.2f}x)"
    )

    same = {k: v for k, v in summaries[0].items() if k in STUCK} == {
        k: v for k, v in summaries[1].items() if k in STUCK
    }
    print(f"same failed nodes and stuck pods in both: {same}")


# What a fixed failed set keeps equal between the two clusters.
STUCK = ("nodesNotReady", "stuckPods", "podsOnFailedNodes", "terminatingElsewhere")


def _summary(nf: list[str], server: cluster.Server) -> dict[str, Any]:
    env = {**os.environ, "KUBECONFIG": str(server.kubeconfig)}
    proc = subprocess.run(
        [*nf, "diagnose", "-o", "json"], env=env, capture_output=True, check=False
    )
    return dict(json.loads(proc.stdout or b"{}").get("summary") or {})


if __name__ == "__main__":
    main()
