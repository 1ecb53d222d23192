"""`remediate --zone --confirm` on the bench cluster (issue 19): N failed nodes in one zone.

The bench cluster (bench/cluster.py: etcd + a real kube-apiserver, seeded) with its first N
nodes failed as the node lifecycle controller leaves them, moved into one zone (`zone-x`, so the
zone is the failed set), plus a kube-controller-manager running only the two controllers the
out-of-service taint hands the pods to (the taint eviction controller and PodGC): the run's
"done" is then the effect observed, as on a real cluster.

Two scenarios, each on a fresh copy of the seeded cluster:
- full: one `--confirm` over the zone, timed (wall clock), exit code, results;
- interrupted: the same command, SIGINT once K nodes' changes have started, then the same
  command again: what each run did, and that every node ends tainted exactly once.
Each ends with the cluster's record checked: the out-of-service taint once per node, no lock
left, per node one trail line "starting" and one result per taint sent, and the Events.

    .venv/bin/python -m bench.zone --size 500x15000 --failed 200 --out bench/results/zone
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench import cluster

ZONE = "zone-x"
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
LOCK = "kubectl-nodefail.io/lock"
KCM_QPS = [20]  # kube-controller-manager's client rate (its default: 20/s, burst 30)
WAIT = ["120"]  # --wait-timeout
PLUGIN = str(Path(sys.executable).parent / "kubectl-nodefail")


def _zone_of_failed(server: cluster.Server, names: list[str]) -> None:
    def move(name: str) -> None:
        status, out = server.call(
            "PATCH",
            f"/api/v1/nodes/{name}",
            {"metadata": {"labels": {"topology.kubernetes.io/zone": ZONE}}},
            "application/merge-patch+json",
        )
        assert status == 200, out[:300]

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(move, names))


def _controllers(server: cluster.Server, bindir: Path) -> subprocess.Popen[bytes]:
    log = open(server.workdir / "kcm.log", "wb")  # noqa: SIM115 (the process keeps it)
    proc = subprocess.Popen(
        [
            str(bindir / "kube-controller-manager"),
            "--kubeconfig",
            str(server.kubeconfig),
            # the taint eviction controller finds a node's pods through the pod informer's
            # spec.nodeName index, which the node lifecycle controller registers: alone it
            # fails ("Index with name spec.nodeName does not exist") and evicts nothing
            "--controllers=pod-garbage-collector-controller,taint-eviction-controller,"
            "node-lifecycle-controller",
            "--leader-elect=false",
            "--secure-port=0",
            f"--kube-api-qps={KCM_QPS[0]}",
            f"--kube-api-burst={2 * KCM_QPS[0]}",
            "--v=1",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    server.procs.append(proc)
    return proc


def _command(server: cluster.Server, trail: Path) -> list[str]:
    return [
        PLUGIN,
        "remediate",
        "--kubeconfig",
        str(server.kubeconfig),
        "--zone",
        ZONE,
        "--zone-shutdown-confirmed",
        ZONE,
        "--allow-disruption",
        "--log-file",
        str(trail),
        "--wait-timeout",
        WAIT[0],
        "-o",
        "json",
        "--confirm",
    ]


def _trail(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _tainted(server: cluster.Server) -> int:
    nodes = server.get("/api/v1/nodes?labelSelector=topology.kubernetes.io%2Fzone%3Dzone-x")
    return sum(
        1
        for n in nodes["items"]
        if any(t["key"] == OUT_OF_SERVICE for t in n["spec"].get("taints") or [])
    )


def _run(server: cluster.Server, trail: Path, interrupt_after: int = 0) -> dict[str, Any]:
    t0 = time.monotonic()
    proc = subprocess.Popen(
        _command(server, trail), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    applied: dict[str, float] = {}
    total = len(
        server.get("/api/v1/nodes?labelSelector=topology.kubernetes.io%2Fzone%3Dzone-x")["items"]
    )

    def watch() -> None:  # when every node of the zone carries the taint (0.5 s resolution)
        while proc.poll() is None and "all" not in applied:
            if _tainted(server) == total:
                applied["all"] = round(time.monotonic() - t0, 2)
            time.sleep(0.5)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    signalled = None
    if interrupt_after:
        before = len(_trail(trail))
        while proc.poll() is None:
            started = sum(r["result"] == "starting" for r in _trail(trail)[before:])
            if started >= interrupt_after:
                proc.send_signal(signal.SIGINT)
                signalled = round(time.monotonic() - t0, 2)
                break
            time.sleep(0.02)
    out, err = proc.communicate(timeout=600)
    took = time.monotonic() - t0
    watcher.join(2)
    data = json.loads(out) if out.strip() else {}
    steps = [s for s in data.get("steps", []) if s["action"] == "taint-out-of-service"]
    return {
        "seconds": round(took, 2),
        "everyNodeTaintedAt": applied.get("all"),
        "nodesTaintedAtTheEnd": _tainted(server),
        "signalAt": signalled,
        "exit": proc.returncode,
        "taintSteps": len(steps),
        "results": dict(Counter(s["result"] for s in steps)),
        "stderr": err.strip().splitlines()[-3:],
    }


def _record(server: cluster.Server, names: list[str], trail: Path) -> dict[str, Any]:
    nodes = {
        n["metadata"]["name"]: n
        for n in server.get("/api/v1/nodes?labelSelector=topology.kubernetes.io%2Fzone%3Dzone-x")[
            "items"
        ]
    }
    taints = Counter(
        sum(1 for t in nodes[n]["spec"].get("taints") or [] if t["key"] == OUT_OF_SERVICE)
        for n in names
    )
    locks = sum(1 for n in names if LOCK in (nodes[n]["metadata"].get("annotations") or {}))
    lines = _trail(trail)
    sent = Counter(
        r["node"]
        for r in lines
        if r["action"] == "taint-out-of-service"
        and r["result"] in ("done", "unconfirmed", "interrupted", "failed")
    )
    events = Counter(
        e["reason"]
        for e in server.get("/api/v1/namespaces/default/events")["items"]
        if e["reason"].startswith("NodefailTaintOutOfService")
    )
    pods_left = sum(
        len(server.get(f"/api/v1/pods?fieldSelector=spec.nodeName%3D{n}")["items"])
        for n in names[:20]
    )
    return {
        "nodesByOutOfServiceTaints": {str(k): v for k, v in sorted(taints.items())},
        "locksLeft": locks,
        "trailLines": len(lines),
        "taintsSentPerNode": dict(Counter(sent.values())),
        "nodesWithATaintSent": len(sent),
        "events": dict(events),
        "podsLeftOnTheFirst20Nodes": pods_left,
    }


def scenario(bindir: Path, size: cluster.Size, failed: int, interrupt_after: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="nodefail-zone-"))
    server = cluster.start(bindir, size, work / "cluster", log=lambda m: print(m, flush=True))
    try:
        cluster.fail_nodes(server, size.nodes, failed)
        names = [f"node-{i:05d}" for i in range(failed)]
        _zone_of_failed(server, names)
        _controllers(server, bindir)
        time.sleep(5)  # the controllers' informers sync
        trail = work / "trail.jsonl"
        runs = [_run(server, trail, interrupt_after)]
        if interrupt_after:
            runs.append(_run(server, trail))
        return {"runs": runs, "record": _record(server, names, trail)}
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", default="500x15000")
    parser.add_argument("--failed", type=int, default=200)
    parser.add_argument("--interrupt-after", type=int, default=60)
    parser.add_argument("--out", default="")
    parser.add_argument("--kcm-qps", type=int, default=20)
    parser.add_argument("--wait-timeout", default="120")
    parser.add_argument("--scenarios", default="full,interrupted")
    args = parser.parse_args()
    KCM_QPS[0], WAIT[0] = args.kcm_qps, args.wait_timeout
    chosen = args.scenarios.split(",")
    bindir = cluster.binaries()
    size = cluster.Size.parse(args.size)
    result: dict[str, Any] = {
        "size": size.label,
        "failed": args.failed,
        "command": " ".join(_command(cluster.Server(bindir, Path("WORK")), Path("TRAIL"))),
        "kcmQps": args.kcm_qps,
        "cpus": os.cpu_count(),
    }
    name = f"zone-remediate-kcm{args.kcm_qps}-{'-'.join(chosen)}.json"
    for which in chosen:  # each written as soon as it is measured
        result[which] = scenario(
            bindir, size, args.failed, args.interrupt_after if which == "interrupted" else 0
        )
        text = json.dumps(result, indent=1)
        print(text, flush=True)
        if args.out:
            Path(args.out).mkdir(parents=True, exist_ok=True)
            (Path(args.out) / name).write_text(text + "\n")


if __name__ == "__main__":
    main()
