"""The run of `kubectl nodefail remediate` (its options and help: remediate.py) for named
nodes or a saved plan (--zone and --selector go to zone.py): every flag checked before the
cluster is read, the plan made and bound to its cluster, saved with --plan-out or narrowed by
--plan-in, carried out with --confirm (SIGINT/SIGTERM stop it cleanly), and shown; after
--plan-out, the command to type next."""

from __future__ import annotations

import shlex
import sys
from dataclasses import replace
from typing import Any

import click
from click.core import ParameterSource

from kubectl_nodefail.analysis.diagnose import diagnose as run_diagnosis
from kubectl_nodefail.cli import zone as zonecmd
from kubectl_nodefail.cli.flags import Connection, current_overrides
from kubectl_nodefail.cli.live import gathered
from kubectl_nodefail.cli.outfiles import open_trail, write_file
from kubectl_nodefail.cli.planning import attester, check_permissions, cluster_binding
from kubectl_nodefail.cli.running import WATCHDOG_KEY, reporter, sigterm_interrupts
from kubectl_nodefail.cli.usage import program_name
from kubectl_nodefail.common import attestation, outpath
from kubectl_nodefail.common.errors import BadOptionError, Exit, InterruptedRun, PlanMismatch
from kubectl_nodefail.remediate import planfile
from kubectl_nodefail.remediate.actions import Executor, Stop, restate, summary, whoami
from kubectl_nodefail.remediate.plan import (
    MUTATING,
    Options,
    binding_problem,
    check_attestations,
    make_plan,
    narrow,
)
from kubectl_nodefail.render import pastable, render
from kubectl_nodefail.snapshot import model as snapshot
from kubectl_nodefail.term import color, fit, printable, progress


def remediate(
    nodes: tuple[str, ...],
    kubeconfig: str | None,
    context: str | None,
    request_timeout: float,
    verbose: int,
    output: str,
    confirm: bool,
    strategy: str,
    attested: tuple[str, ...],
    max_nodes: int,
    allow_disruption: bool,
    despite_automation: bool,
    log_file: str | None,
    wait_timeout: float,
    from_file: str | None,
    plan_out: str | None,
    plan_in: str | None,
    zone: str | None = None,
    selector: str | None = None,
    zone_confirmed: str | None = None,
    selector_confirmed: str | None = None,
) -> int:
    """The run of `kubectl nodefail remediate` (its options and help: remediate.py)."""
    if (zone, selector, zone_confirmed, selector_confirmed) != (None, None, None, None):
        given = click.get_current_context().get_parameter_source("max_nodes")
        args = zonecmd.ZoneArgs(
            zone, selector, zone_confirmed, selector_confirmed, nodes, output, confirm,
            strategy, attested, None if given == ParameterSource.DEFAULT else max_nodes,
            allow_disruption, log_file, wait_timeout, from_file, plan_out, plan_in,
        )  # fmt: skip
        return zonecmd.remediate(
            args, Connection(kubeconfig, context, request_timeout, verbose), verbose
        )
    if plan_in and (nodes or from_file or strategy != "auto"):
        raise click.UsageError(
            "--plan-in replays a saved plan (its own nodes and strategy): give no nodes, "
            "--strategy or --from-file with it"
        )
    if confirm and from_file:
        raise click.UsageError("--confirm acts on a live cluster; not with --from-file")
    typed = attestation.check_typed(attested)
    if typed:
        raise BadOptionError(typed, hint="nothing was done")
    # Everything from outside is checked before the cluster is even read: the saved plan, and
    # that the trail and the plan can be written.
    saved = planfile.read(plan_in) if plan_in else None
    if saved is not None:
        widened = sorted(set(attested) - set(saved.attested))
        if widened:
            raise BadOptionError(
                f"{attestation.FLAG} {widened[0]}: the saved plan {plan_in} has no attestation "
                "for that node, and a saved plan only narrows (make a new plan with the "
                "attestation)",
                hint="nothing was done",
            )
    outpath.check_writable("--plan-out", plan_out)
    outpath.check_writable("--log-file", log_file)
    progress.machine_output(output)
    conn = Connection(kubeconfig, context, request_timeout, verbose)
    opts = Options(
        strategy=saved.strategy if saved else strategy,
        attested=attested,
        only_nodes=sorted({s.node for s in saved.steps}) if saved else nodes,
        max_nodes=max_nodes,
        allow_disruption=allow_disruption,
        despite_automation=despite_automation,
        automation_horizon=wait_timeout,
    )
    cluster = None
    log = None
    stopped = False
    try:
        try:
            with sigterm_interrupts(confirm):
                cluster = None if from_file else conn.cluster()
                plan = _make_plan(
                    cluster,
                    from_file,
                    opts,
                    verbose,
                    bind=bool(plan_out or saved),
                    replay=(plan_in, saved) if saved else None,
                )
                if saved is not None:
                    plan = narrow(saved, plan)
                if cluster is not None:
                    check_permissions(cluster, plan, confirm)
                if plan_out:
                    text = render.as_json(render.plan_document(plan, summary(plan)))
                    write_file("--plan-out", plan_out, lambda fh: fh.write(text))
                if confirm and log_file:
                    log = open_trail(log_file)
        except KeyboardInterrupt:
            progress.done()
            raise InterruptedRun("interrupted before any change: nothing was done") from None
        if confirm and cluster is not None:
            stopped = _execute(cluster, plan, log, wait_timeout, verbose)
    finally:
        if log is not None:
            log.close()
        if cluster is not None:
            cluster.close()
    counts = summary(plan)
    if output in ("json", "yaml"):
        data = (
            render.plan_data(plan, confirm, counts, interrupted=stopped)
            if confirm
            else render.plan_document(plan, counts)
        )
        render.write_data(data, output, sys.stdout)
    else:
        plan_text = render.plan_table(
            plan, confirm, wide=output == "wide", interrupted=stopped, width=fit.width(sys.stdout)
        )
        click.echo(color.style_for_terminal(plan_text), nl=False)
    code = plan.exit_code() if not confirm else plan.result_code(interrupted=stopped)
    if plan_out and not confirm:
        click.echo(printable.text(_next_command(plan, plan_out, kubeconfig, from_file)), err=True)
    if code == Exit.INTERRUPTED:
        done = counts.get("done", 0)
        cut = counts.get("interrupted", 0)
        left = counts.get("not started", 0)
        click.echo(
            f"interrupted: {done} steps done, "
            + (f"{cut} sent but their effect not seen, " if cut else "")
            + f"{left} not started (listed above); re-run the same command to finish the rest",
            err=True,
        )
    return code


def _next_command(plan: Any, path: str, kubeconfig: str | None, from_file: str | None) -> str:
    """After --plan-out: what to type next. Never with an attestation filled in or --confirm:
    the human types the node's name (having checked its machine) and --confirm."""
    # the plan's own context always (a replay elsewhere is refused anyway), kubectl's overrides
    args = pastable.connection_args(kubeconfig, plan.bound_to.context, current_overrides())
    where = [shlex.quote(a) for a in args]
    replay = " ".join([f"{program_name()} remediate --plan-in {shlex.quote(path)}", *where])
    saved = f"saved the plan to {path}"
    if from_file:
        return (
            f"{saved}: made from a dump, it is bound to no cluster and cannot be replayed "
            "(plan against the live cluster to run it)"
        )
    if plan.attested:
        nodes = ", ".join(plan.attested)
        return (
            f"{saved}. Next, once you have checked that the machine of {nodes} is still "
            f"powered off, type {'its' if len(plan.attested) == 1 else 'each'} name in place "
            f"of the placeholder (the flag once per node) and add --confirm to run it:\n  "
            f"{replay} {attestation.flag()}"
        )
    if plan.mutating:
        return f"{saved}. Next, to run it, add --confirm to:\n  {replay}"
    refused = sorted({s.node for s in plan.steps if s.action in MUTATING and not s.allowed})
    if refused:
        out = f"--plan-out {shlex.quote(path)}"
        again = " ".join([f"{program_name()} remediate", *refused, *where, attestation.flag(), out])
        return (
            f"{saved}: every step that would change something is refused. If the refusal is "
            "for want of an attestation, check the machine first; only if it is off, plan "
            f"again, typing the node's name in place of the placeholder:\n  {again}"
        )
    return f"{saved}: it changes nothing, so there is nothing to run"


def _make_plan(
    cluster: Any,
    from_file: str | None,
    opts: Any,
    verbose: int,
    bind: bool = False,
    replay: Any = None,
) -> Any:
    """Diagnose (live or from a dump), then plan, bound to the cluster it was computed from.

    `bind`: the plan is saved or replayed, so the cluster's identity must be read (else it is
    shown when readable). `replay`: a saved plan, refused (exit 15) unless it was made for this
    context, server, cluster and these node objects; that check comes before anything writes."""
    if from_file:
        snap = snapshot.load_dump(from_file)
    else:
        try:
            snap = gathered(cluster, only_nodes=opts.only_nodes, progress=reporter(verbose))
        finally:
            progress.done()
    uids = {n["metadata"]["name"]: str(n["metadata"].get("uid") or "") for n in snap.nodes}
    if replay is None:  # names typed now (a saved plan's nodes may be gone: its steps say so)
        snapshot.require_nodes(snap, opts.only_nodes)
    unknown = set(opts.attested) - set(uids)
    if unknown and replay is None:
        raise click.UsageError(
            f"--node-shutdown-confirmed names unknown nodes: {', '.join(sorted(unknown))}"
        )
    live = cluster_binding(cluster, snap, from_file, bind, uids)
    if replay is not None:
        path, saved = replay
        problem = binding_problem(saved, live)
        if problem:
            raise PlanMismatch(
                f"plan {path}: {problem}; refused before any change", hint="nothing was done"
            )
    check_attestations(snap, opts.attested)  # every typed one, in the plan's scope or not
    report = run_diagnosis(snap, snap.captured_at, only_nodes=opts.only_nodes)
    by = attester(cluster) if opts.attested else ""
    plan = make_plan(
        report, replace(opts, server_minor=snap.server_minor, node_uids=uids, attested_by=by)
    )
    planned = {s.node for s in plan.steps}
    plan.bound_to = replace(live, node_uids={n: u for n, u in uids.items() if n in planned})
    return plan


def _execute(cluster: Any, plan: Any, log: Any, wait_timeout: float, verbose: int) -> bool:
    """Run the plan; SIGINT/SIGTERM stop it after the request in flight (see actions.Stop).
    True when a signal stopped it (the run's exit code is then 6, whatever ran).

    The overall deadline bounds reading and planning, not the execution: a hard stop could land
    between a request and its trail line. From here each request is bounded by
    --request-timeout, the waits by --wait-timeout, and SIGINT/SIGTERM stop it cleanly.
    """
    ctx = click.get_current_context(silent=True)
    watchdog = ctx.meta.get(WATCHDOG_KEY) if ctx is not None else None
    if watchdog is not None:
        watchdog.cancel()
    cluster.deadline = None
    with Stop().on_signals(lambda text: click.echo(text, err=True)) as stop:
        executor = Executor(cluster, whoami(cluster), log, wait_timeout, reporter(verbose))
        executor.stop = stop
        try:
            executor.run(plan)
            restate(cluster, plan)  # "these stay stuck" only from the state now
        finally:
            progress.done()
        return stop.is_set()
