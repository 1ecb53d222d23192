"""`python -m tests.audit --seed S --n N`: the live prediction audit (make audit SEED=… N=…).

Starts its own real control plane (tests/e2e/conftest.running_control_plane), plays N scenarios
of seed S out in batches (each batch shares one failure), judges every prediction the diagnosis
made, prints per claim kind the predictions checked and wrong, writes a JSON results file and
exits 1 when a prediction was wrong and is not a known limit (tests/audit/limits.py), 0 else.
Scenario i of seed S is rebuilt by `--seed S --only i`.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.audit import zonebatch
from tests.audit.fixtures import save_wrong
from tests.audit.run import Batch, BatchResult, log, table, write_results
from tests.audit.scenarios import generate
from tests.e2e.conftest import HEALTHY_NODES, running_control_plane
from tests.e2e.controlplane import HEALTHY_ZONE, REPO, ControlPlane

EXTRA_HEALTHY = ("audit-healthy-3", "audit-healthy-4")


@contextmanager
def control_plane(bindir: Path | None) -> Iterator[ControlPlane]:
    """The suite's control plane (tests/e2e/conftest.running_control_plane), or one from
    prebuilt binaries (--bindir: no build step, so no wait on another checkout's build lock)."""
    if bindir is None:
        with running_control_plane(None) as cp:
            yield cp
        return
    workdir = Path(tempfile.mkdtemp(prefix="nodefail-audit-"))
    cp = ControlPlane(bindir, workdir)
    try:
        cp.start()
        for name in HEALTHY_NODES:
            cp.add_node(name, HEALTHY_ZONE)
        yield cp
    finally:
        cp.stop(keep_logs_to=REPO / ".audit" / "logs")
        shutil.rmtree(workdir, ignore_errors=True)


def record(
    out: Path, args: argparse.Namespace, n: int, started: float, batches: list[BatchResult]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The results so far, written (after every batch: a run cut short keeps what it judged)."""
    meta = {
        "command": " ".join(sys.argv),
        "seed": args.seed,
        "n": n,
        "profile": args.profile,
        "batchSize": args.batch_size,
        "zoneBatch": zonebatch.zone_count(args.seed, args.n),
        "wallSeconds": round(time.monotonic() - started, 1),
    }
    doc = write_results(out, meta, batches)
    log(f"after batch {len(batches) - 1}: {len(doc['wrong'])} wrong so far ({out})")
    return doc, meta


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.audit", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--n", type=int, default=40, help="number of scenarios (indexes 0..N-1)")
    parser.add_argument("--only", type=int, nargs="*", help="just these indexes (a reproduction)")
    parser.add_argument("--batch-size", type=int, default=50)
    parser.add_argument("--slots", type=int, default=2, help="failable nodes per batch (at most 2)")
    parser.add_argument("--profile", choices=("quick", "full"), default="full")
    parser.add_argument(
        "--out", type=Path, default=None, help="results JSON (default .audit/SEED/results.json)"
    )
    parser.add_argument(
        "--bindir",
        type=Path,
        default=None,
        help="control plane binaries (default: hack/build-control-plane.sh's newest minor)",
    )
    parser.add_argument(
        "--save-fixtures",
        action="store_true",
        help="keep each wrong prediction's snapshot in tests/fixtures/audit/",
    )
    parser.add_argument(
        "--no-remediate",
        action="store_true",
        help="odd batches do not run remediate --confirm on their first node while it is down",
    )
    args = parser.parse_args(argv)
    if args.seed < 0 or args.n < 1 or args.batch_size < 1 or not 1 <= args.slots <= 2:
        parser.error("seed >= 0, n >= 1, batch-size >= 1, 1 <= slots <= 2")
    outdir = REPO / ".audit" / str(args.seed)
    outdir.mkdir(parents=True, exist_ok=True)
    out = args.out or outdir / "results.json"
    indexes = args.only if args.only else list(range(args.n))
    # from zonebatch.ZONE_SEED on, the last scenarios of the run are the zone batch's
    zoned = set(range(args.n - zonebatch.zone_count(args.seed, args.n), args.n))
    scenarios = [
        generate(args.seed, i, args.profile, args.slots) for i in indexes if i not in zoned
    ]
    in_zone = [
        generate(args.seed, i, args.profile, zonebatch.FAILABLE) for i in indexes if i in zoned
    ]
    started = time.monotonic()
    batches: list[BatchResult] = []
    with control_plane(args.bindir) as cp:
        # Five healthy nodes beside a batch's two failable ones in the zone: never more than
        # two NotReady, so the zone never enters PartialDisruption (eviction stays on). The
        # zone batch (zonebatch.py) has a zone of its own, where it does.
        for name in EXTRA_HEALTHY:
            cp.add_node(name, HEALTHY_ZONE)
        for b, start in enumerate(range(0, len(scenarios), args.batch_size)):
            batch = Batch(
                cp,
                scenarios[start : start + args.batch_size],
                b,
                args.slots,
                outdir,
                remediate=b % 2 == 1 and not args.no_remediate,
            )
            batches.append(batch.run())
            doc, meta = record(out, args, len(indexes), started, batches)
        if in_zone:
            b = len(batches)
            zone = Batch(cp, in_zone, b, zonebatch.FAILABLE, outdir, not args.no_remediate, True)
            batches.append(zone.run())
            doc, meta = record(out, args, len(indexes), started, batches)
    print(table(doc["summary"]))
    print(
        f"\n{len(indexes)} scenarios, seed {args.seed}, {meta['wallSeconds']:.0f}s; results: {out}"
    )
    for err in [e for b in batches for e in b.errors]:
        print(f"note: {err}")
    if args.save_fixtures:
        for path in save_wrong(doc, REPO / "tests" / "fixtures" / "audit"):
            print(f"fixture: {path.relative_to(REPO)}")
    if doc["wrong"]:
        print(
            f"{len(doc['wrong'])} wrong prediction(s); "
            f"reproduce one with --seed {args.seed} --only INDEX"
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
