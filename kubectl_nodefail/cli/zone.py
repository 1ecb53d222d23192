"""`remediate --zone Z` / `remediate --selector SELECTOR`: a zone's or a rack's failed set.

Reads the whole cluster (the zone brake needs every zone), plans the nodes in scope with the
same planner and gates as the single-node path (zoneplan.py adds the scope, the typed zone
attestation's coverage and the order), prints one row per node, and with --confirm runs it a
few nodes at a time (zonerun.py). Exit codes as for any remediate run (the worst step decides).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import Any

import click

from kubectl_nodefail.cli.live import gathered
from kubectl_nodefail.cli.outfiles import open_trail
from kubectl_nodefail.cli.planning import attester, check_permissions, cluster_binding
from kubectl_nodefail.cli.running import WATCHDOG_KEY, reporter, sigterm_interrupts
from kubectl_nodefail.common import attestation, outpath, selector
from kubectl_nodefail.common.errors import BadOptionError, Exit, InterruptedRun, NameNotFound
from kubectl_nodefail.remediate import zoneplan, zonerun
from kubectl_nodefail.remediate.actions import Executor, Stop, restate, summary, whoami
from kubectl_nodefail.remediate.plan import MUTATING
from kubectl_nodefail.render import render, zoneview
from kubectl_nodefail.snapshot import model as snapshot
from kubectl_nodefail.term import color, progress


@dataclass
class ZoneArgs:
    zone: str | None
    selector: str | None
    zone_confirmed: str | None
    selector_confirmed: str | None
    nodes: tuple[str, ...]
    output: str
    confirm: bool
    strategy: str
    attested: tuple[str, ...]
    max_nodes: int | None  # None: not given (the scope is the bound)
    allow_disruption: bool
    log_file: str | None
    wait_timeout: float
    from_file: str | None
    plan_out: str | None
    plan_in: str | None


def check(args: ZoneArgs) -> Any:
    """Every flag checked before the cluster is read; the parsed selector (or None)."""
    if args.nodes or args.plan_in or args.plan_out:
        raise click.UsageError(
            "--zone/--selector plan a whole scope: give no node names, --plan-in or --plan-out "
            "with them (a saved zone plan is not supported yet)"
        )
    if args.confirm and args.from_file:
        raise click.UsageError("--confirm acts on a live cluster; not with --from-file")
    problem = zoneplan.scope_problem(
        args.zone, args.selector, args.zone_confirmed, args.selector_confirmed
    )
    if problem:
        raise BadOptionError(problem, hint="nothing was done")
    typed = attestation.check_typed(args.attested)
    if typed:
        raise BadOptionError(typed, hint="nothing was done")
    if args.selector is None:
        return None
    try:
        return selector.parse(args.selector)
    except selector.SelectorError as exc:
        raise BadOptionError(
            f"--selector {args.selector!r}: {exc}", hint="nothing was done"
        ) from None


def remediate(args: ZoneArgs, conn: Any, verbose: int) -> int:
    parsed = check(args)
    outpath.check_writable("--log-file", args.log_file)
    progress.machine_output(args.output)
    cluster = None
    log = None
    stopped = False
    try:
        try:
            with sigterm_interrupts(args.confirm):
                if args.from_file:
                    snap = snapshot.load_dump(args.from_file)
                else:
                    cluster = conn.cluster()
                    try:
                        snap = gathered(cluster, progress=reporter(verbose))
                    finally:
                        progress.done()
                scope = zoneplan.in_scope(snap.nodes, args.zone, parsed)
                if not scope.nodes:
                    zones = sorted({zoneplan.zone_of(n) for n in snap.nodes})
                    raise NameNotFound(
                        f"no node in {scope.words}",
                        hint=f"zones here: {', '.join(zones[:10]) or 'none'}",
                    )
                outside = sorted(set(args.attested) - set(scope.nodes))
                if outside:
                    raise BadOptionError(
                        f"{attestation.FLAG} {outside[0]}: not a node of {scope.words}",
                        hint="nothing was done",
                    )
                plan, view = zoneplan.plan_zone(
                    snap,
                    scope,
                    zoneplan.Ask(
                        args.strategy,
                        args.attested,
                        (args.zone_confirmed or args.selector_confirmed) is not None,
                        args.max_nodes,
                        args.allow_disruption,
                        attester(cluster)
                        if args.attested or args.zone_confirmed or args.selector_confirmed
                        else "",
                    ),
                )
                uids = {
                    n["metadata"]["name"]: str(n["metadata"].get("uid") or "") for n in snap.nodes
                }
                live = cluster_binding(cluster, snap, args.from_file, False, uids)
                planned = {s.node for s in plan.steps}
                plan.bound_to = replace(
                    live, node_uids={n: u for n, u in uids.items() if n in planned}
                )
                if cluster is not None:
                    check_permissions(cluster, plan, args.confirm)
                if args.confirm and args.log_file:
                    log = open_trail(args.log_file)
        except KeyboardInterrupt:
            progress.done()
            raise InterruptedRun("interrupted before any change: nothing was done") from None
        if args.confirm and cluster is not None:
            stopped = _execute(cluster, plan, log, args.wait_timeout, verbose)
    finally:
        if log is not None:
            log.close()
        if cluster is not None:
            cluster.close()
    counts = summary(plan)
    if args.output in ("json", "yaml"):
        data = render.plan_data(plan, args.confirm, counts, interrupted=stopped)
        data["zone"] = zoneview.data(view)
        render.write_data(data, args.output, sys.stdout)
    else:
        body = zoneview.text(plan, view, args.confirm, stopped, wide=args.output == "wide")
        click.echo(color.style_for_terminal(body), nl=False)
    code = plan.exit_code() if not args.confirm else plan.result_code(interrupted=stopped)
    if code == Exit.INTERRUPTED:
        acting = [s for s in plan.steps if s.action in MUTATING]
        sent = {s.node for s in acting if s.result in ("done", "unconfirmed", "interrupted")}
        left = {s.node for s in acting if s.result == "not started"} - sent
        click.echo(
            f"interrupted: {len(sent)} nodes' changes sent ("
            f"{sum(1 for s in acting if s.result == 'interrupted')} of them with their effect "
            f"not seen yet), {len(left)} nodes not started (listed above); re-run the same "
            "command to finish the rest",
            err=True,
        )
    return code


def _execute(cluster: Any, plan: Any, log: Any, wait_timeout: float, verbose: int) -> bool:
    """As remediate_run._execute, with the nodes run a few at a time (zonerun). True when a
    signal stopped the run."""
    ctx = click.get_current_context(silent=True)
    watchdog = ctx.meta.get(WATCHDOG_KEY) if ctx is not None else None
    if watchdog is not None:
        watchdog.cancel()
    cluster.deadline = None
    with Stop().on_signals(lambda text: click.echo(text, err=True)) as stop:
        steps_log = progress.lines if verbose else (lambda _: None)
        executor = Executor(cluster, whoami(cluster), log, wait_timeout, steps_log)
        executor.stop = stop
        status = reporter(verbose) if not verbose else progress.lines
        try:
            zonerun.run(executor, plan, status)
            restate(cluster, plan)  # "these stay stuck" only from the state now
        finally:
            progress.done()
        return stop.is_set()
