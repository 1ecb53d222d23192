"""Startup time of the plugin: the krew zipapp (on a bare python3) beside the pip-installed
package. A benchmark, not a test: prints medians of N runs of each command.

Usage: python release/measure_startup.py [--runs N] [--zipapp dist/kubectl-nodefail]
                                         [--installed .venv/bin/kubectl-nodefail]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMMANDS = [["version", "--client"], ["--help"], ["diagnose", "--demo"]]


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 3):
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode})")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--zipapp", type=Path, default=REPO / "dist" / "kubectl-nodefail")
    parser.add_argument(
        "--installed", type=Path, default=REPO / ".venv" / "bin" / "kubectl-nodefail"
    )
    parser.add_argument("--python", default=sys.executable, help="the bare python3's base")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nodefail-startup-") as tmp:
        bare = Path(tmp) / "bare"
        subprocess.run([args.python, "-m", "venv", "--without-pip", str(bare)], check=True)
        zenv = {
            "PATH": f"{bare / 'bin'}{os.pathsep}/usr/bin:/bin",
            "HOME": tmp,
            "SHIV_ROOT": str(Path(tmp) / "shiv"),
        }
        ienv = {"PATH": "/usr/bin:/bin", "HOME": tmp}
        zipapp = [str(bare / "bin" / "python3"), "-I", str(args.zipapp)]
        first = [timed([*zipapp, "version", "--client"], zenv)]
        for i in range(2, 4):  # first runs with an empty cache: unpack into SHIV_ROOT
            fresh = {**zenv, "SHIV_ROOT": str(Path(tmp) / f"shiv{i}")}
            first.append(timed([*zipapp, "version", "--client"], fresh))
        print(f"zipapp first run (unpacks once): median {statistics.median(first):.3f} s")
        print(f"{'command':28} {'installed (s)':>14} {'zipapp (s)':>12}   median of {args.runs}")
        for cmd in COMMANDS:
            inst = [timed([str(args.installed), *cmd], ienv) for _ in range(args.runs)]
            zipped = [timed([*zipapp, *cmd], zenv) for _ in range(args.runs)]
            print(
                f"{' '.join(cmd):28} {statistics.median(inst):>14.3f} "
                f"{statistics.median(zipped):>12.3f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
