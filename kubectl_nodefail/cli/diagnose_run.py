"""The run of `kubectl nodefail diagnose` (its options and help: diagnose.py): the snapshot of
one cluster, a dump or the demo diagnosed and shown as a table, JSON, YAML or markdown, with
--explain's reasoning for one node or pod; several contexts at once; or --watch, which follows
the incident until Ctrl-C."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

import click

from kubectl_nodefail.analysis import outage
from kubectl_nodefail.analysis.diagnose import diagnose as run_diagnosis
from kubectl_nodefail.cli.flags import Connection, current_overrides
from kubectl_nodefail.cli.live import ReadConnection, load_snapshot
from kubectl_nodefail.cli.running import (
    DEADLINE_KEY,
    DEADLINE_SECONDS_KEY,
    WATCHDOG_KEY,
    leave_now,
)
from kubectl_nodefail.cli.usage import program_name
from kubectl_nodefail.cluster import contexts
from kubectl_nodefail.common.errors import Exit, explain_not_found
from kubectl_nodefail.render import incident, pastable, render
from kubectl_nodefail.snapshot.model import require_nodes
from kubectl_nodefail.term import color, fit, printable, progress
from kubectl_nodefail.watch import watch as watching


def diagnose(
    nodes: tuple[str, ...],
    all_contexts: bool,
    kubeconfig: str | None,
    context: tuple[str, ...],
    request_timeout: float,
    verbose: int,
    namespaces: tuple[str, ...],
    all_namespaces: bool,
    output: str,
    from_file: str | None,
    demo: bool,
    explain: str | None,
    watch: bool,
    interval: float,
) -> int:
    """The run of `kubectl nodefail diagnose` (its options and help: diagnose.py)."""
    if all_namespaces and namespaces:
        raise click.UsageError("--namespace and --all-namespaces exclude each other")
    if from_file and demo:
        raise click.UsageError("--from-file and --demo exclude each other")
    if watch and demo:
        raise click.UsageError("--watch follows a live cluster or a dump file: not with --demo")
    many = all_contexts or len(context) > 1
    progress.machine_output("json" if watch or many else output)
    if many and (watch or from_file or demo or explain or output == "markdown"):
        raise click.UsageError(
            "several contexts: not with --watch, --from-file, --demo, --explain or -o markdown"
        )
    conn = Connection(kubeconfig, context[0] if context else None, request_timeout, verbose)
    on_screen = watch and sys.stdout.isatty()
    live = not (from_file or demo)
    here = (
        pastable.connection_args(kubeconfig, context[0] if context else None, current_overrides())
        if live
        else []
    )

    def show(
        snap: Any, to: TextIO | None = None, where: list[str] | None = None
    ) -> tuple[str, int]:
        """The diagnosis' text and exit code; JSON is written to `to` instead when given
        (then the text is empty): a big outage's JSON is never held whole. `where`: the
        connection flags every suggested command carries (pastable.py); by default this run's
        own, for a live cluster."""
        require_nodes(snap, nodes)
        report = run_diagnosis(
            snap,
            snap.captured_at,
            only_nodes=nodes,
            namespaces=namespaces,
            timelines=output in ("json", "yaml", "markdown") or bool(explain),
        )
        pastable.carry(report, here if where is None else where)
        if not on_screen:  # the watch's screen shows them as notes; stderr would scroll it
            for gap in report.gaps:
                click.echo(printable.text(f"warning: {gap}"), err=True)
        code = Exit.PROBLEMS_FOUND if report.problems else Exit.OK
        if output in ("json", "yaml", "markdown"):
            data = render.report_data(report)
            if explain:
                data = incident.explained(data, explain)
            if output == "markdown":
                return printable.text(incident.markdown(data, report)), code
            if output == "json" and to is not None:
                render.write_json(data, to)
                return "", code
            return (render.as_json(data) if output == "json" else render.as_yaml(data)), code
        width = fit.width(sys.stdout)  # read again at each refresh of --watch: a resize counts
        if explain:
            text = _explain(report, explain, width) + incident.timeline_text(report, explain)
            return color.style_for_terminal(text), code
        wide = output == "wide" or verbose > 0
        view = outage.summarise(report) if not wide and outage.is_outage(report) else None
        table = render.table(report, wide=wide, outage_view=view, width=width)
        return color.style_for_terminal(table), code

    if watch:
        out = sys.stdout
        follow = _follower(conn, namespaces, nodes) if live else None
        reads = ReadConnection(conn, follow.cluster.context) if follow is not None else None

        def refresh() -> Any:
            _renew_deadline()
            kept = follow.kept_reads() if follow is not None else None
            return load_snapshot(
                conn, from_file, False, nodes, namespaces, warn=False, kept=kept, reads=reads
            )

        try:
            code = watching.run(
                refresh,
                show,
                interval,
                out,
                sys.stderr,
                tty=on_screen,
                title=f"{program_name()} diagnose {' '.join(nodes)}".rstrip(),
                one_line=output == "json",
                follow=follow,
                said=progress.lines if verbose > 0 else None,
            )
        finally:
            if reads is not None:
                reads.close()
        leave_now(code)  # Ctrl-C ended the watch: not after the refresh still in flight
    if many:
        names = list(dict.fromkeys(context)) or contexts.kubeconfig_contexts(kubeconfig)
        if all_contexts and context:
            raise click.UsageError("--context and --all-contexts exclude each other")

        overrides = current_overrides()

        def one(name: str) -> tuple[str, int]:
            per = Connection(kubeconfig, name, request_timeout, 0, overrides)
            where = pastable.connection_args(kubeconfig, name, overrides)
            return show(load_snapshot(per, None, False, nodes, namespaces, warn=False), None, where)

        results = contexts.run_many(names, one)
        click.echo(contexts.render(results, output), nl=False)
        return contexts.worst([r.code for r in results])
    text, code = show(load_snapshot(conn, from_file, demo, nodes, namespaces), to=sys.stdout)
    click.echo(text, nl=False)
    return code


def _follower(conn: Connection, namespaces: tuple[str, ...], nodes: tuple[str, ...]) -> Any:
    """The watches --watch keeps open on a live cluster (watch/follow.py), on a connection of
    their own with no overall deadline (they last the whole watch; each request still has
    --request-timeout, each stream its own bounds)."""
    from kubectl_nodefail.watch.follow import Follower

    cluster = conn.cluster()
    cluster.deadline = None
    return Follower(cluster, namespaces, nodes)


def _renew_deadline() -> None:
    """--watch runs until Ctrl-C: the overall deadline (and its watchdog) bounds each refresh
    of the cluster, not the whole watch."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return
    watchdog = ctx.meta.pop(WATCHDOG_KEY, None)
    if watchdog is not None:
        watchdog.cancel()
    seconds = ctx.meta.get(DEADLINE_SECONDS_KEY)
    if seconds:
        ctx.meta[DEADLINE_KEY] = time.monotonic() + seconds


def _explain(report: Any, name: str, width: int | None = None) -> str:
    for node in report.nodes:
        if node.name == name:
            return render.explain_node(node, report, width)
    matches = [
        p
        for p in report.pods
        if f"{p.namespace}/{p.name}" == name or (p.name == name and "/" not in name)
    ]
    if len(matches) > 1:
        raise click.UsageError(f"{name!r} is ambiguous: name it as NAMESPACE/NAME")
    if matches:
        return render.explain_pod(matches[0], report.captured_at, width, report)
    raise explain_not_found(
        [n.name for n in report.nodes], [f"{p.namespace}/{p.name}" for p in report.pods], name
    )
