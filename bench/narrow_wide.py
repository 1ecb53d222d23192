"""The failed nodes' pods, read two ways on the benchmark's cluster (issue 37's "a thousand
per-node pod lists or one list"): one `spec.nodeName=` list per failed node, as gather reads
them (kube.WORKERS at a time), against one list of every pod of the cluster, paged (500 or
5,000 a page), kept to the failed nodes' pods as each page arrives (after the items' cut, as
`list_all` does). Per way, alternating, --rounds times: wall and client CPU seconds, the API
server's CPU seconds, its read requests and bytes (its own metrics). Writes results.json into
--out.

Usage: python -m bench.narrow_wide [--size 5000x60000/spread] [--failed 1000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from bench import cluster
from bench.watch import cpu_seconds, served
from kubectl_nodefail.cluster import kube
from kubectl_nodefail.cluster.pods_read import _pods_on

REPO = Path(__file__).resolve().parents[1]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="5000x60000/spread")
    parser.add_argument("--failed", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "pods-narrow-wide"))
    args = parser.parse_args()
    size = cluster.Size.parse(args.size)
    server = cluster.start(
        cluster.binaries(), size, Path(tempfile.mkdtemp(prefix="nodefail-wide-")), log=print
    )
    rows: dict[str, list[dict[str, Any]]] = {}
    try:
        cluster.fail_nodes(server, size.nodes, args.failed)
        api = next(p for p in server.procs if "kube-apiserver" in " ".join(map(str, p.args)))
        failed = [f"node-{i:05d}" for i in range(args.failed)]
        wanted = set(failed)

        def narrow(c: kube.Cluster) -> int:
            return sum(len(b) for b in kube.parallel(lambda n: _pods_on(c, (), n), failed))

        def wide(limit: int) -> Callable[[kube.Cluster], int]:
            def on(pod: dict[str, Any]) -> dict[str, Any] | None:
                return pod if (pod.get("spec") or {}).get("nodeName") in wanted else None

            def read(c: kube.Cluster) -> int:
                return len(c.list_all("/api/v1/pods", "Pod", limit=limit, keep=on))

            return read

        ways = (
            ("narrow", narrow),
            ("wide, 500 a page", wide(500)),
            ("wide, 5000 a page", wide(5000)),
        )
        for _ in range(args.rounds):
            for name, way in ways:
                c = kube.Cluster(str(server.kubeconfig), timeout=120)
                req0, bytes0 = served(server)
                api0, cpu0, t0 = cpu_seconds(api.pid), _cpu(), time.monotonic()
                pods = way(c)
                wall, cpu = time.monotonic() - t0, _cpu() - cpu0
                api1 = cpu_seconds(api.pid)
                req1, bytes1 = served(server)
                row = {
                    "pods": pods,
                    "wall_s": round(wall, 2),
                    "client_cpu_s": round(cpu, 2),
                    "apiserver_cpu_s": round(api1 - api0, 2),
                    "requests": req1 - req0,  # the metrics read is not counted (served())
                    "mib": round((bytes1 - bytes0) / 2**20, 1),
                }
                rows.setdefault(name, []).append(row)
                print(name, row, flush=True)
    finally:
        server.stop()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    doc = {"size": args.size, "failed": args.failed, "rounds": rows}
    (out / "results.json").write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
