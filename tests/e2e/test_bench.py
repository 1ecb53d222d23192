"""The scale benchmark keeps working: a small run (50 nodes / 500 pods) of the very code
`make bench` runs, on its own etcd + kube-apiserver. It checks the results are sane (the
diagnosis finds exactly the nodes failed and the finalizer-held pods seeded, the dump gives the
same diagnosis, every tool was measured), never how fast anything was: timings are the
benchmark's business, not a test's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.controlplane import REPO, wait_for

pytestmark = pytest.mark.e2e


def test_small_benchmark_run(tmp_path: Path) -> None:
    out = tmp_path / "results"
    env = {**os.environ, "NODEFAIL_BENCH_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.run",
            "--sizes",
            "50x500",
            "--failed",
            "1,5",
            "--runs",
            "1",
            "--kubectl-pods-max",
            "1000",
            "--no-small",
            "--out",
            str(out),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = json.loads((out / "results.json").read_text())["rows"]
    tools = {
        "diagnose -o json",
        "dump",
        "--from-file",
        "kubectl get nodes -o json",
        "kubectl get pods -A -o json",
        "floor (raw reads)",
    }
    for failed in (1, 5):
        step = [r for r in rows if r["failed"] == failed]
        assert {r["tool"] for r in step} == tools
        diag = next(r for r in step if r["tool"] == "diagnose -o json")
        summary, expected = diag["diagnosis"], diag["expected"]
        assert summary["nodesNotReady"] == expected["nodesNotReady"] == failed
        # Only the failed nodes are listed: the others' kubelets renewed their leases.
        assert summary["nodesListed"] == expected["nodesListed"] == failed
        assert summary["terminatingElsewhere"] == expected["terminatingElsewhere"] > 0
        assert summary["podsOnFailedNodes"] > 0
        assert summary["stuckPods"] >= summary["podsOnFailedNodes"]
        assert diag["live_equals_file"] is True
        for r in step:
            assert r["wall"] > 0
            if r["tool"] != "floor (raw reads)":
                assert r["rss"] > 10 * 2**20, r  # a real process was measured
            if r["tool"] not in ("--from-file", "floor (raw reads)"):
                assert r["requests"] > 0 and r["bytes"] > 0, r
        from_file = next(r for r in step if r["tool"] == "--from-file")
        assert from_file["requests"] == 0  # offline: no API request at all
        assert diag["dump_bytes"] > 0
    table = (out / "results.md").read_text()
    assert "| 50 nodes / 500 pods | 5 | diagnose -o json |" in table
    svg = (out / "plot.svg").read_text()
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>") and "<rect" in svg


def test_small_pair_run_keeps_the_failed_set_fixed(tmp_path: Path) -> None:
    """`bench.pair` on two small clusters, the second with extra pods on its healthy nodes: both
    diagnoses find the same failed nodes and the same stuck pods (the experiment is fair), and
    every round was measured."""
    out = tmp_path / "pair"
    env = {**os.environ, "NODEFAIL_BENCH_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "bench.pair", "30x300", "30x300+300"),
            *("--failed", "2", "--runs", "2", "--out", str(out)),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    doc = json.loads((out / "pair.json").read_text())
    a, b = doc["summaries"]
    assert a["nodesNotReady"] == b["nodesNotReady"] == 2
    assert a["stuckPods"] == b["stuckPods"] > 0
    assert a["podsOnFailedNodes"] == b["podsOnFailedNodes"] > 0
    assert all(len(walls) == 2 and min(walls) > 0 for walls in doc["walls"].values())
    assert "same failed nodes and stuck pods in both: True" in proc.stdout


def test_a_benchmark_killed_mid_run_leaves_no_server_running(tmp_path: Path) -> None:
    """A benchmark process that dies without stopping its servers (SIGKILL, a Ctrl-C'd suite
    that killed it) leaves neither its etcd nor its folder: the Server's reaper
    (bench/reaper.py) kills what names the folder and removes it."""
    work = tmp_path / "cp"
    work.mkdir()
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from bench import cluster\n"
        "server = cluster.Server(cluster.binaries(), Path(sys.argv[1]))\n"
        "server.start_etcd()\n"
        "print(server.procs[0].pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    owner = subprocess.Popen(
        [sys.executable, "-c", script, str(work)], cwd=REPO, stdout=subprocess.PIPE
    )
    try:
        assert owner.stdout is not None
        etcd = int(owner.stdout.readline())
        assert Path(f"/proc/{etcd}/cmdline").read_bytes().find(str(work).encode()) >= 0
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
        wait_for("etcd is killed", lambda: not _running(etcd), 30, 0.1)
        wait_for("the folder is removed", lambda: not work.exists(), 30, 0.1)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        if owner.stdout is not None:
            owner.stdout.close()


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie waits for init)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
