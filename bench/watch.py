"""`diagnose --watch` on the benchmark's big cluster (issue 37): by watches (watch/follow.py),
beside the same command reading everything every --interval (the design before it, run by
replacing the follower with none, as bench.run sets kube.WORKERS).

For each design: the benchmark's etcd + kube-apiserver (bench/cluster.py) with --failed nodes
failed, healthy kubelets' status reports played at --beats per minute (a 5,000-node cluster's
kubelets report every 5 minutes when nothing changes: ~1,000 a minute; each is one Node update
that a watch of Nodes carries), then `diagnose --watch -o json --interval 2 -v` started. After
its first read, for --seconds with nothing else changing: the requests and bytes the API server
served it (its own metrics: apiserver_request_total for GET, LIST and WATCH, response and watch
event sizes), the API server's CPU seconds and the plugin's. Then one more node fails: the
seconds until the watch prints a diagnosis that has it. Then (watches only) the same command on
a terminal (a pseudo-terminal of 200x60): --screens more nodes fail, one at a time, and for
each the seconds until its name is on the screen (the line naming the changes a read is made
for, painted before that read) and until the diagnosis with it is. Writes results.json into
--out.

The window without the plugin (whose rates are taken off) is --seconds long, or
--baseline-seconds.

Usage: python -m bench.watch [--size 5000x60000] [--failed 200] [--seconds 120]
       [--baseline-seconds S] [--screens N] [--gap S] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench import cluster

REPO = Path(__file__).resolve().parents[1]
TICKS = os.sysconf("SC_CLK_TCK")
READS = re.compile(r'verb="(GET|LIST|WATCH)"')
NON_RESOURCE = re.compile(r'[{,]resource=""')  # /metrics itself, /version, discovery
POLLING = (
    "import kubectl_nodefail.cli.diagnose_run as d; d._follower = lambda *a: None; "
    "from kubectl_nodefail.cli.main import main; import sys; "
    "sys.argv = ['kubectl-nodefail', *sys.argv[1:]]; main()"
)
WATCHING = (
    "from kubectl_nodefail.cli.main import main; import sys; "
    "sys.argv = ['kubectl-nodefail', *sys.argv[1:]]; main()"
)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def served(server: cluster.Server) -> tuple[int, float]:
    """(read requests, bytes) the API server has served so far: GET, LIST and WATCH requests,
    response sizes and the sizes of the watch events it sent."""
    time.sleep(0.5)
    requests, size = 0, 0.0
    for line in server.get("/metrics", raw=True).decode().splitlines():
        if NON_RESOURCE.search(line):
            continue
        if line.startswith("apiserver_request_total{") and READS.search(line):
            requests += int(float(line.rsplit(" ", 1)[1]))
        elif (
            line.startswith("apiserver_response_sizes_sum{") and READS.search(line)
        ) or line.startswith("apiserver_watch_events_sizes_sum{"):
            size += float(line.rsplit(" ", 1)[1])
    return requests, size


class Beats(threading.Thread):
    """Healthy kubelets' status reports: a Ready condition's lastHeartbeatTime patched, one
    node after another, at `per_minute`."""

    def __init__(self, server: cluster.Server, first: int, n_nodes: int, per_minute: int) -> None:
        super().__init__(daemon=True)
        self.server, self.first, self.n, self.gap = server, first, n_nodes, 60.0 / per_minute
        self.stop = threading.Event()
        self.sent = 0

    def run(self) -> None:
        i = self.first
        while not self.stop.wait(self.gap):
            name = f"node-{i:05d}"
            now = cluster.ts(cluster.datetime.now(cluster.UTC))
            body = {"status": {"conditions": [{"type": "Ready", "lastHeartbeatTime": now}]}}
            try:
                self.server.call(
                    "PATCH",
                    f"/api/v1/nodes/{name}/status",
                    body,
                    "application/strategic-merge-patch+json",
                )
            except OSError:  # the server stopped under it: the run is over
                return
            self.sent += 1
            i = i + 1 if i + 1 < self.n else self.first


def one(
    server: cluster.Server, code: str, env: dict[str, str], args: argparse.Namespace, next_fail: int
) -> dict[str, Any]:
    api = next(p for p in server.procs if "kube-apiserver" in " ".join(map(str, p.args)))
    # the same window without the plugin: what the API server serves and spends by itself (its
    # own controllers' reads, the status reports), taken off the plugin's window below
    req0, bytes0 = served(server)
    api0, start = cpu_seconds(api.pid), time.monotonic()
    time.sleep(args.baseline_seconds or args.seconds)
    req1, bytes1 = served(server)
    base = time.monotonic() - start
    base_req, base_bytes = (req1 - req0) / base, (bytes1 - bytes0) / base
    base_cpu = (cpu_seconds(api.pid) - api0) / base
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "diagnose", "--watch", "-o", "json", "--interval", "2", "-v"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    docs: list[tuple[float, dict[str, Any]]] = []
    said: list[tuple[float, str]] = []  # stderr (-v: each step of each read), as it came
    reader = threading.Thread(
        target=lambda: docs.extend((time.monotonic(), json.loads(x)) for x in proc.stdout or []),
        daemon=True,
    )
    reader.start()
    threading.Thread(
        target=lambda: said.extend((time.monotonic(), x) for x in proc.stderr or []), daemon=True
    ).start()
    t0 = time.monotonic()
    while not docs:
        if proc.poll() is not None or time.monotonic() - t0 > 600:
            raise RuntimeError(f"no first diagnosis: {''.join(x for _, x in said)}")
        time.sleep(0.2)
    first = docs[0][0] - t0
    time.sleep(3)  # the first read's last requests (owners, siblings) land
    req0, bytes0 = served(server)
    api0, plugin0, start = cpu_seconds(api.pid), cpu_seconds(proc.pid), time.monotonic()
    minutes = []  # each minute of the window: what the API server served, less its own rate
    last_req, last_bytes, last_at = req0, bytes0, start
    while time.monotonic() - start < args.seconds:
        time.sleep(min(60.0, args.seconds - (time.monotonic() - start)))
        now_req, now_bytes = served(server)
        span = time.monotonic() - last_at
        minutes.append(
            {
                "requests": round(now_req - last_req - base_req * span, 1),
                "mib": round((now_bytes - last_bytes - base_bytes * span) / 2**20, 3),
                "said": [x.rstrip() for at, x in said if last_at <= at and x.startswith("...")],
            }
        )
        last_req, last_bytes, last_at = now_req, now_bytes, time.monotonic()
    req1, bytes1 = served(server)
    api1, plugin1, quiet = cpu_seconds(api.pid), cpu_seconds(proc.pid), time.monotonic() - start
    failed = f"node-{next_fail:05d}"
    shown = len(docs)
    cluster.fail_nodes(server, args.nodes, next_fail + 1, already=next_fail)
    failed_at = time.monotonic()
    seen = None
    while time.monotonic() - failed_at < 60 and seen is None:
        for at, doc in docs[shown:]:
            if any(n["name"] == failed for n in doc["nodes"]):
                seen = at - failed_at
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    time.sleep(0.5)  # the budget's last lines
    err = "".join(x for _, x in said)
    steps = [
        f"{at - failed_at:6.2f} s  {x.rstrip()}"
        for at, x in said
        if failed_at <= at and x.startswith("...") and (seen is None or at <= failed_at + seen)
    ]
    return {
        "first_read_s": round(first, 2),
        "quiet_s": round(quiet, 1),
        "requests_per_min": round(((req1 - req0) / quiet - base_req) * 60, 1),
        "mib_per_min": round(((bytes1 - bytes0) / quiet - base_bytes) * 60 / 2**20, 3),
        "apiserver_cpu_s_per_min": round(((api1 - api0) / quiet - base_cpu) * 60, 2),
        "apiserver_alone": {
            "requests_per_min": round(base_req * 60, 1),
            "mib_per_min": round(base_bytes * 60 / 2**20, 3),
            "cpu_s_per_min": round(base_cpu * 60, 2),
        },
        "plugin_cpu_share": round((plugin1 - plugin0) / quiet, 4),
        "by_minute": minutes,
        "failed_node_shown_after_s": None if seen is None else round(seen, 2),
        "failed_node_read_steps": steps,  # -v's steps of the reads until it was shown
        "budget": [
            line.rstrip() for line in err.splitlines() if line.startswith(("requests:", "  "))
        ],
    }


SCREEN_CODE = WATCHING


def on_screen(
    server: cluster.Server, env: dict[str, str], args: argparse.Namespace, fail: int
) -> dict[str, Any]:
    """`diagnose --watch` on a pseudo-terminal: after its first screen, nodes `fail`,
    `fail + 1`, ... (--screens of them) fail one at a time, each once the last one's diagnosis
    is painted and --gap seconds have passed; for each, the seconds until its name is painted,
    whether the "reading" line said it, and the seconds until the diagnosis that has it is
    painted (the headline's count of nodes not Ready with it)."""
    import fcntl
    import pty
    import struct
    import termios

    pid, fd = pty.fork()
    if pid == 0:  # the child: the plugin, on the terminal
        os.execve(
            sys.executable,
            [sys.executable, "-c", SCREEN_CODE, "diagnose", "--watch", "--interval", "2"],
            {**env, "TERM": "xterm-256color", "COLUMNS": "200", "LINES": "60"},
        )
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 60, 200, 0, 0))
    chunks: list[tuple[float, bytes]] = []

    def read() -> None:
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                return
            if not data:
                return
            chunks.append((time.monotonic(), data))

    threading.Thread(target=read, daemon=True).start()
    t0 = time.monotonic()
    named: list[float | None] = []
    said: list[bool] = []
    diagnosed: list[float | None] = []
    try:
        while b"CHANGES" not in b"".join(c for _, c in chunks):  # the first screen
            if time.monotonic() - t0 > 600:
                raise RuntimeError("no first screen")
            time.sleep(0.2)
        for node in range(fail, fail + args.screens):
            time.sleep(args.gap)  # the last read's last requests land; the cluster quiet
            seen, told, shown = _one_failure(server, args, node, chunks)
            named.append(seen)
            said.append(told)
            diagnosed.append(shown)
    finally:
        os.kill(pid, signal.SIGINT)
        os.waitpid(pid, 0)
    times = sorted(t for t in diagnosed if t is not None)
    return {
        "failed_node_on_screen_after_s": named,
        "named_on_the_reading_line": said,
        "diagnosis_on_screen_after_s": diagnosed,
        "diagnosis_on_screen_median_s": round(statistics.median(times), 2) if times else None,
        "diagnosis_on_screen_max_s": max(times) if times and len(times) == len(diagnosed) else None,
    }


def _one_failure(
    server: cluster.Server, args: argparse.Namespace, fail: int, chunks: list[tuple[float, bytes]]
) -> tuple[float | None, bool, float | None]:
    """Node `fail` fails (nodes 0 to `fail - 1` failed already): the seconds until its name is
    on the screen, whether the reading line named it, the seconds until the diagnosis with it
    is (None: not within a minute)."""
    shown = len(chunks)
    name = f"node-{fail:05d}".encode()
    cluster.fail_nodes(server, args.nodes, fail + 1, already=fail)
    failed_at = time.monotonic()
    seen = diagnosed = None
    said = False
    counted = f"{fail + 1} of {args.nodes} nodes not Ready".encode()
    while time.monotonic() - failed_at < 60 and (seen is None or diagnosed is None):
        painted = b""  # the bytes since the failure, joined: a name may span two reads
        for at, data in chunks[shown:]:
            painted += data
            if seen is None and name in painted:
                seen = round(at - failed_at, 2)
                said = b"reading the cluster again" in painted
            if diagnosed is None and counted in painted:
                diagnosed = round(at - failed_at, 2)
        time.sleep(0.02)
    return seen, said, diagnosed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="5000x60000")
    parser.add_argument("--failed", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--beats", type=int, default=1000, help="node status reports a minute")
    parser.add_argument(
        "--screens",
        type=lambda text: max(int(text), 1),
        default=3,
        help="nodes failed one at a time on the terminal (at least 1)",
    )
    parser.add_argument(
        "--gap",
        type=float,
        default=5,
        help="seconds between a diagnosis on the terminal and the next node failing",
    )
    parser.add_argument(
        "--baseline-seconds",
        type=float,
        default=0,
        help="the window without the plugin (default: --seconds); its rates are taken off",
    )
    parser.add_argument(
        "--compaction-seconds",
        type=int,
        default=0,
        help="the API server's --etcd-compaction-interval (default: its own, 5 minutes); "
        "shorter, a watch whose version stays old (Events: no bookmarks) meets its 410 sooner",
    )
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "watch"))
    parser.add_argument(
        "--designs", default="watches,every interval", help="which of the two to run"
    )
    args = parser.parse_args()
    size = cluster.Size.parse(args.size)
    args.nodes = size.nodes
    bindir = cluster.binaries()
    work = Path(tempfile.mkdtemp(prefix="nodefail-bench-watch-"))
    rows = {}
    chosen = set(args.designs.split(","))
    for design, code in (("watches", WATCHING), ("every interval", POLLING)):
        if design not in chosen:
            continue
        flags = (
            (f"--etcd-compaction-interval={args.compaction_seconds}s",)
            if args.compaction_seconds
            else ()
        )
        server = cluster.start(
            bindir, size, work / design.replace(" ", "-"), log=print, apiserver_args=flags
        )
        try:
            cluster.fail_nodes(server, size.nodes, args.failed)
            # the nodes that fail during the runs (args.failed, then --screens more) get no reports
            beats = Beats(
                server,
                args.failed + 1 + args.screens,
                size.nodes - cluster.reserve(size.nodes),
                args.beats,
            )
            beats.start()
            env = {**os.environ, "KUBECONFIG": str(server.kubeconfig)}
            rows[design] = one(server, code, env, args, args.failed)
            if design == "watches":
                rows[design]["screen"] = on_screen(server, env, args, args.failed + 1)
            beats.stop.set()
            rows[design]["beats_sent"] = beats.sent
            print(design, json.dumps({k: v for k, v in rows[design].items() if k != "budget"}))
        finally:
            server.stop()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    doc = {
        "size": args.size,
        "failed": args.failed,
        "seconds": args.seconds,
        "baseline_seconds": args.baseline_seconds or args.seconds,
        "beats": args.beats,
        "compaction_seconds": args.compaction_seconds or None,  # None: the server's own
        **rows,
    }
    (out / "results.json").write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
