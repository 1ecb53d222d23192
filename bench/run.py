"""The scale benchmark: `make bench` (all sizes) or `python -m bench.run --sizes 50x500`.

For each cluster size it starts etcd + kube-apiserver on a copy of the cached seeded data (see
cluster.py), fails 1, then 20, then 200 nodes, and after each step measures, side by side in the
same run: `kubectl nodefail diagnose -o json`, `dump`, `diagnose --from-file` of that dump,
`kubectl get nodes -o json`, `kubectl get pods -A -o json` (the built kubectl; skipped above
--kubectl-pods-max pods: 13.6 GB at 60,000 pods), and the floor: the same bulk reads diagnose
cannot avoid (every node, the Table scan of pods) fetched by a raw HTTP client that decodes
nothing. Per tool: median wall time, peak RSS (of the process, from wait4), API requests and
response bytes (from the API server's own metrics, before and after). Writes results.json,
results.md (a table) and plot.svg into --out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench import cluster, plot

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SIZES = "500x15000,5000x60000,5000x60000/spread,5000x120000,5000x60000+60000"
DEFAULT_FAILED = "1,20,200,1000"


def parse_sizes(text: str) -> list[cluster.Size]:
    return [cluster.Size.parse(part) for part in text.split(",")]


def nodefail_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("kubectl-nodefail")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "kubectl_nodefail"]


def with_workers(n: int, *argv: str) -> list[str]:
    """`diagnose` with kube.WORKERS (its request threads) set to n: the product has no knob for
    it, so the benchmark sets the module constant before the command runs (--workers)."""
    code = (
        f"import kubectl_nodefail.cluster.kube as k; k.WORKERS = {n}; "
        "from kubectl_nodefail.cli.main import main; import sys; "
        f"sys.argv = ['kubectl-nodefail', 'diagnose', *{list(argv)!r}]; main()"
    )
    return [sys.executable, "-c", code]


NON_RESOURCE = re.compile(r'[{,]resource=""')


def metrics(server: cluster.Server) -> tuple[int, float]:
    """(resource requests served, response bytes of reads) so far, from the API server's own
    metrics. Non-resource requests (/metrics itself, /version, discovery) are left out."""
    time.sleep(0.5)  # metrics are recorded as a request ends: let the last ones land
    text = server.get("/metrics", raw=True).decode()
    requests = 0
    size = 0.0
    for line in text.splitlines():
        if NON_RESOURCE.search(line):
            continue
        if line.startswith("apiserver_request_total{"):
            requests += int(float(line.rsplit(" ", 1)[1]))
        elif line.startswith("apiserver_response_sizes_sum{"):
            size += float(line.rsplit(" ", 1)[1])
    return requests, size


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, int, int]:
    """(wall seconds, peak RSS bytes, exit code) of one process. The peak RSS comes from GNU
    time (a small C parent: wait4 straight from this Python would count the pages of the
    forked Python too)."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss_file:
        wrapper = ["/usr/bin/time", "-q", "-f", "%M", "-o", rss_file.name]
        t0 = time.monotonic()
        proc = subprocess.run(
            [*wrapper, *argv],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            check=False,
        )
        wall = time.monotonic() - t0
        text = rss_file.read().strip().splitlines()
    if proc.returncode not in (0, 3):
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr[-500:]!r}")
    peak_kb = int(text[-1]) if text and text[-1].isdigit() else 0
    return wall, peak_kb * 1024, proc.returncode


def measure(
    name: str, argv: list[str], server: cluster.Server | None, runs: int, env: dict[str, str]
) -> dict[str, Any]:
    walls, rss, reqs, sizes = [], [], [], []
    for _ in range(runs):
        before = metrics(server) if server else (0, 0.0)
        wall, peak, _ = run_once(argv, env)
        after = metrics(server) if server else (0, 0.0)
        walls.append(wall)
        rss.append(peak)
        reqs.append(after[0] - before[0])
        sizes.append(after[1] - before[1])
    return {
        "tool": name,
        "wall": statistics.median(walls),
        "walls": walls,
        "rss": max(rss),
        "requests": int(statistics.median(reqs)),
        "bytes": statistics.median(sizes),
    }


def floor(server: cluster.Server, runs: int) -> dict[str, Any]:
    """The API server's own time for the bulk reads diagnose needs (all nodes; the pods Table;
    the finished pods' metadata), fetched concurrently by a raw client that decodes nothing."""

    def pages(path: str, accept: str, limit: int, extra: str = "") -> int:
        total, cont = 0, ""
        while True:
            q = f"{path}?limit={limit}{extra}" + (f"&continue={cont}" if cont else "")
            data = server.get(q, raw=True, accept=accept)
            total += len(data)
            m = re.search(rb'"continue":"([^"]+)"', data[:2000]) or re.search(
                rb'"continue":"([^"]+)"', data[-2000:]
            )
            if not m:
                return total
            cont = m.group(1).decode()

    table = "application/json;as=Table;g=meta.k8s.io;v=v1"
    meta = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
    walls = []
    for _ in range(runs):
        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=3) as pool:
            jobs = [
                pool.submit(pages, "/api/v1/nodes", "application/json", 500),
                pool.submit(pages, "/api/v1/pods", table, 10000, "&includeObject=None"),
                pool.submit(
                    pages,
                    "/api/v1/pods",
                    meta,
                    500,
                    "&fieldSelector=status.phase%21%3DRunning%2Cstatus.phase%21%3DPending"
                    "%2Cstatus.phase%21%3DUnknown",
                ),
            ]
            size = sum(j.result() for j in jobs)
        walls.append(time.monotonic() - t0)
    return {
        "tool": "floor (raw reads)",
        "wall": statistics.median(walls),
        "walls": walls,
        "rss": 0,
        "requests": 0,
        "bytes": size,
    }


def consistency(nf: list[str], env: dict[str, str], dump_path: Path) -> dict[str, Any]:
    """The live diagnosis, and whether the dump gives the same one (summary and stuck pods)."""

    def diagnose(*extra: str) -> dict[str, Any]:
        proc = subprocess.run(
            [*nf, "diagnose", "-o", "json", *extra], env=env, capture_output=True, check=False
        )
        return dict(json.loads(proc.stdout or b"{}"))

    def essence(doc: dict[str, Any]) -> Any:
        pods = [
            (p["namespace"], p["name"], p["category"], (p.get("replacement") or {}).get("state"))
            for p in doc.get("pods") or []
        ]
        nodes = [
            (n["name"], n["status"], (n.get("cause") or {}).get("code"))
            for n in doc.get("nodes") or []
        ]
        return doc.get("summary"), sorted(pods), sorted(nodes)

    live = diagnose()
    offline = diagnose("--from-file", str(dump_path))
    # The nodes the diagnosis lists (failed, or Ready with a problem): the failed ones only,
    # on a cluster whose other nodes are healthy.
    summary = {**(live.get("summary") or {}), "nodesListed": len(live.get("nodes") or [])}
    return {"summary": summary, "same": essence(live) == essence(offline)}


def bench_size(
    args: argparse.Namespace, bindir: Path, size: cluster.Size, failed: list[int]
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    n_nodes, n_pods = size.nodes, size.total
    work = Path(tempfile.mkdtemp(prefix=f"nodefail-bench-{n_nodes}-"))
    server = cluster.start(bindir, size, work / "cp", log=lambda m: print(f"  {m}"))
    env = {**os.environ, "KUBECONFIG": str(server.kubeconfig)}
    kubectl = str(bindir / "kubectl")
    nf = nodefail_cmd()
    dump_path = work / "dump.json"
    try:
        done = 0
        for count in failed:
            cluster.fail_nodes(server, n_nodes, count, already=done)
            done = count
            time.sleep(1)
            print(f"{size.label}, {count} failed:", flush=True)
            tools = [
                ("diagnose -o json", [*nf, "diagnose", "-o", "json"]),
                ("dump", [*nf, "dump", "-f", str(dump_path)]),
                ("--from-file", [*nf, "diagnose", "--from-file", str(dump_path), "-o", "json"]),
                ("kubectl get nodes -o json", [kubectl, "get", "nodes", "-o", "json"]),
            ]
            if n_pods <= args.kubectl_pods_max:
                tools.append(
                    ("kubectl get pods -A -o json", [kubectl, "get", "pods", "-A", "-o", "json"])
                )
            for n in args.workers:
                tools.append((f"diagnose -o json, {n} threads", with_workers(n, "-o", "json")))
            results = []
            for name, argv in tools:
                res = measure(name, argv, None if name == "--from-file" else server, args.runs, env)
                results.append(res)
                print(
                    f"  {name:30s} {res['wall']:7.2f} s {res['rss'] / 2**20:7.0f} MB "
                    f"{res['requests']:6d} req {res['bytes'] / 2**20:8.1f} MiB",
                    flush=True,
                )
            res = floor(server, args.runs)
            results.append(res)
            print(
                f"  {res['tool']:30s} {res['wall']:7.2f} s  ({res['bytes'] / 2**20:.1f} MiB)",
                flush=True,
            )
            check = consistency(nf, env, dump_path)
            expected = {
                "nodesNotReady": min(count, n_nodes - cluster.reserve(n_nodes)),
                "nodesListed": min(count, n_nodes - cluster.reserve(n_nodes)),
                **{k: v for k, v in cluster.manifest(size).items() if k not in ("nodes", "pods")},
            }
            print(
                f"  diagnosis {check['summary']}; expected {expected}; live == --from-file: "
                f"{check['same']}",
                flush=True,
            )
            for res in results:
                res.update(
                    nodes=n_nodes,
                    pods=n_pods,
                    extra=size.extra,
                    spread=size.spread,
                    failed=count,
                    dump_bytes=dump_path.stat().st_size if dump_path.exists() else 0,
                    diagnosis=check["summary"],
                    expected=expected,
                    live_equals_file=check["same"],
                )
            rows += results
    finally:
        server.stop()
        if not args.keep:
            import shutil

            shutil.rmtree(work, ignore_errors=True)
    return rows


def small(args: argparse.Namespace, bindir: Path) -> list[dict[str, Any]]:
    """Start-up costs: `--help` against `python3 -c pass` and its floor (importing click), and
    diagnose on a 10-node cluster."""
    rows = []
    env = dict(os.environ)
    nf = nodefail_cmd()
    for name, argv in (
        ("python3 -c pass", [sys.executable, "-c", "pass"]),
        # The floor of --help: the plugin's CLI is click, and importing it alone costs this.
        ("python3 -c 'import click'", [sys.executable, "-c", "import click"]),
        ("kubectl nodefail --help", [*nf, "--help"]),
    ):
        res = measure(name, argv, None, max(args.runs, 7), env)
        res.update(nodes=0, pods=0, failed=0)
        rows.append(res)
        print(f"  {name:30s} {res['wall']:7.3f} s {res['rss'] / 2**20:7.0f} MB", flush=True)
    rows += bench_size(args, bindir, cluster.Size(10, 100), [1])
    return rows


def machine() -> str:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{os.cpu_count()} CPUs ({cpu}), {mem:.0f} GiB RAM, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        default=DEFAULT_SIZES,
        help="NODESxPODS[+EXTRA][/spread],... (default: %(default)s)",
    )
    parser.add_argument("--failed", default=DEFAULT_FAILED, help="failed nodes, ascending")
    parser.add_argument("--runs", type=int, default=3, help="runs per tool (median)")
    parser.add_argument(
        "--kubectl-pods-max",
        type=int,
        default=15000,
        help="skip `kubectl get pods -A` above this many pods",
    )
    parser.add_argument("--no-small", action="store_true", help="skip --help and the 10-node run")
    parser.add_argument(
        "--workers",
        type=lambda text: [int(x) for x in text.split(",") if x],
        default=[],
        help="also measure diagnose with these request-thread counts, e.g. 1,2,4,8,16",
    )
    parser.add_argument("--out", default=str(REPO / "bench" / "results"))
    parser.add_argument("--keep", action="store_true", help="keep the work folders")
    parser.add_argument(
        "--append", action="store_true", help="add to the rows already in --out/results.json"
    )
    parser.add_argument(
        "--bindir",
        help="the control-plane binaries (default: built or found by hack/build-control-plane.sh)",
    )
    args = parser.parse_args()
    bindir = Path(args.bindir) if args.bindir else cluster.binaries()
    failed = [int(x) for x in args.failed.split(",")]
    rows: list[dict[str, Any]] = []
    previous = Path(args.out) / "results.json"
    if args.append and previous.exists():
        rows = list(json.loads(previous.read_text())["rows"])
    started = datetime.now(timezone.utc)
    compile_package()
    if not args.no_small:
        print("start-up:", flush=True)
        rows += small(args, bindir)
    for size in parse_sizes(args.sizes):
        failed_here = [f for f in failed if f <= size.nodes - cluster.reserve(size.nodes)] or [1]
        if size.extra and max(failed_here) > cluster.MAX_FAILED:
            # its extra pods sit on the nodes after the first MAX_FAILED: failing more would
            # put them on failed nodes
            print(
                f"{size.key}: failing at most {cluster.MAX_FAILED} nodes (not "
                f"{', '.join(str(f) for f in failed_here if f > cluster.MAX_FAILED)}): "
                "its extra pods sit on the nodes after those",
                flush=True,
            )
            failed_here = [f for f in failed_here if f <= cluster.MAX_FAILED] or [1]
        rows += bench_size(args, bindir, size, failed_here)
        write(Path(args.out), rows, started)  # after each size: a long run keeps what it got
    write(Path(args.out), rows, started)
    print(f"wrote {args.out}/results.md, results.json, plot.svg, stuck.svg")


def compile_package() -> None:
    """Write the package's bytecode, as `pip install` does, before anything is timed: where
    PYTHONDONTWRITEBYTECODE is set (this project's CI machine sets it) an editable checkout is
    otherwise compiled again by every run, ~0.05-0.1 s that no installed plugin pays."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    package = REPO / "kubectl_nodefail"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], env=env, check=True)


def write(out: Path, rows: list[dict[str, Any]], started: datetime) -> None:
    out.mkdir(parents=True, exist_ok=True)
    meta = {
        "machine": machine(),
        "started": started.isoformat(timespec="seconds"),
        "load": os.getloadavg(),
        "orjson": _has_orjson(),
    }
    (out / "results.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    (out / "results.md").write_text(plot.markdown(rows, meta))
    (out / "plot.svg").write_text(plot.svg(rows))
    (out / "stuck.svg").write_text(plot.stuck_svg(rows))


def _has_orjson() -> bool:
    try:
        import orjson  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    main()
