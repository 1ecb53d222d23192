"""`kubectl nodefail`: the click commands. Flags become options, errors become exit codes.

Kept thin and light: heavy modules (the kubernetes client above all) are imported inside the
commands, so `kubectl nodefail --help` stays fast.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

import click

from kubectl_nodefail import __version__
from kubectl_nodefail.errors import Exit, NodefailError

OUTPUTS = ["table", "wide", "json", "yaml"]
EXIT_CODES_HELP = """
\b
Exit codes:
  0   nothing wrong (diagnose) / every step done or runnable (remediate)
  3   problems found (diagnose)
  4   some steps refused, skipped or failed (remediate)
  5   nothing to do (remediate)
  2   usage error          10  kubeconfig or context error
  11  API server unreachable or timing out
  12  credentials rejected or a required read forbidden
  13  malformed dump file  14  other API error      1  bug
"""


@dataclass
class Connection:
    kubeconfig: str | None
    context: str | None
    request_timeout: float
    verbose: int

    def cluster(self) -> Any:
        from kubectl_nodefail.kube import Cluster

        return Cluster(self.kubeconfig, self.context, self.request_timeout)


def connection_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """kubectl's connection flags, shared by every command that reads the cluster."""
    for decorator in reversed(
        [
            click.option(
                "--kubeconfig",
                metavar="PATH",
                help="Path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config).",
            ),
            click.option("--context", metavar="NAME", help="The kubeconfig context to use."),
            click.option(
                "--request-timeout",
                type=float,
                default=30.0,
                show_default=True,
                metavar="SECONDS",
                help="Timeout of each API request.",
            ),
            click.option(
                "-v",
                "--verbose",
                count=True,
                help="More detail: progress on stderr; tracebacks on errors (-vv).",
            ),
        ]
    ):
        fn = decorator(fn)
    return fn


def handle_errors(fn: Callable[..., int]) -> Callable[..., None]:
    """Run a command body; map its result and the tool's errors onto exit codes."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        verbose = kwargs.get("verbose", 0)
        try:
            code = fn(*args, **kwargs)
        except NodefailError as exc:
            if verbose >= 2:
                traceback.print_exc()
            click.echo(f"error: {exc.line()}", err=True)
            sys.exit(int(exc.exit_code))
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except Exception as exc:  # a bug: one line unless asked for more
            if verbose:
                traceback.print_exc()
            click.echo(
                f"error: internal error: {type(exc).__name__}: {exc} "
                "(rerun with -v for the traceback)",
                err=True,
            )
            sys.exit(int(Exit.INTERNAL))
        sys.exit(int(code))

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name="kubectl-nodefail")
def main() -> None:
    """Explain failed nodes and stuck pods, and fix them safely.

    \b
      kubectl nodefail diagnose            what is wrong, why, what happens next
      kubectl nodefail remediate NODE      the safe plan (changes nothing)
      kubectl nodefail remediate NODE --confirm   carry the plan out
    """


@main.command()
def version() -> None:
    """Print the version."""
    click.echo(f"kubectl-nodefail {__version__}")


def _progress(verbose: int) -> Callable[[str], None]:
    from kubectl_nodefail.gather import stderr_progress

    return stderr_progress if verbose else (lambda _: None)


def load_snapshot(
    conn: Connection,
    from_file: str | None,
    demo: bool,
    nodes: tuple[str, ...],
    namespaces: tuple[str, ...],
) -> Any:
    """A Snapshot from a dump file, the bundled demo, or the live cluster."""
    from kubectl_nodefail import snapshot

    if demo:
        from kubectl_nodefail.examples import demo_path

        path = demo_path()
        click.echo(f"(demo: a snapshot recorded from a real control plane: {path})", err=True)
        return snapshot.load_dump(path)
    if from_file:
        return snapshot.load_dump(from_file)
    from kubectl_nodefail.gather import gather

    cluster = conn.cluster()
    try:
        return gather(
            cluster, only_nodes=nodes, namespaces=namespaces, progress=_progress(conn.verbose)
        )
    finally:
        cluster.close()


@main.command(epilog=EXIT_CODES_HELP)
@click.argument("nodes", nargs=-1, metavar="[NODE]...")
@connection_options
@click.option(
    "-n",
    "--namespace",
    "namespaces",
    multiple=True,
    metavar="NS",
    help="Only pods in this namespace (repeatable). Nodes are always examined.",
)
@click.option("-A", "--all-namespaces", is_flag=True, help="Pods of every namespace (default).")
@click.option("-o", "--output", type=click.Choice(OUTPUTS), default="table", show_default=True)
@click.option(
    "--from-file",
    metavar="PATH",
    help="Analyse a dump (`kubectl nodefail dump`, or `kubectl get ... -o json`).",
)
@click.option(
    "--demo",
    is_flag=True,
    help="Analyse the bundled snapshot recorded from a real "
    "control plane (a StatefulSet and friends on a dead node).",
)
@click.option(
    "--explain",
    "explain",
    metavar="NAME",
    help="Print the full reasoning for one node, or one pod as NAMESPACE/NAME.",
)
@handle_errors
def diagnose(
    nodes: tuple[str, ...],
    kubeconfig: str | None,
    context: str | None,
    request_timeout: float,
    verbose: int,
    namespaces: tuple[str, ...],
    all_namespaces: bool,
    output: str,
    from_file: str | None,
    demo: bool,
    explain: str | None,
) -> int:
    """Explain every failed node and every stuck pod, by controller type.

    Lists nodes that are not Ready (or carry a shutdown / out-of-service taint) with their likely
    cause and zone state, and every pod on them or stuck Terminating anywhere: what kubectl shows,
    what it really means, why it is stuck for its controller, its replacement, storage blockers,
    when eviction happens, what happens if the node returns, and the safe fix.
    """
    from kubectl_nodefail import render
    from kubectl_nodefail.analysis.diagnose import diagnose as run_diagnosis

    if all_namespaces and namespaces:
        raise click.UsageError("--namespace and --all-namespaces exclude each other")
    if from_file and demo:
        raise click.UsageError("--from-file and --demo exclude each other")
    conn = Connection(kubeconfig, context, request_timeout, verbose)
    snap = load_snapshot(conn, from_file, demo, nodes, namespaces)
    report = run_diagnosis(snap, snap.captured_at, only_nodes=nodes, namespaces=namespaces)
    for gap in report.gaps:
        click.echo(f"warning: {gap}", err=True)
    if explain:
        click.echo(_explain(report, explain), nl=False)
    elif output in ("json", "yaml"):
        data = render.report_data(report)
        click.echo(render.as_json(data) if output == "json" else render.as_yaml(data), nl=False)
    else:
        click.echo(render.table(report, wide=output == "wide"), nl=False)
    return Exit.PROBLEMS_FOUND if report.problems else Exit.OK


def _explain(report: Any, name: str) -> str:
    from kubectl_nodefail import render

    for node in report.nodes:
        if node.name == name:
            return render.explain_node(node, report)
    matches = [
        p
        for p in report.pods
        if f"{p.namespace}/{p.name}" == name or (p.name == name and "/" not in name)
    ]
    if len(matches) > 1:
        raise click.UsageError(f"{name!r} is ambiguous: name it as NAMESPACE/NAME")
    if matches:
        return render.explain_pod(matches[0], report.captured_at)
    raise click.UsageError(f"{name!r} is neither a failed node nor a stuck pod in this diagnosis")


@main.command(epilog=EXIT_CODES_HELP)
@click.argument("nodes", nargs=-1, metavar="[NODE]...")
@connection_options
@click.option("-n", "--namespace", "namespaces", multiple=True, metavar="NS")
@click.option(
    "-f",
    "--file",
    "out",
    type=click.Path(dir_okay=False, writable=True),
    default="-",
    show_default=True,
    help="Where to write the dump ('-' = stdout).",
)
@handle_errors
def dump(
    nodes: tuple[str, ...],
    kubeconfig: str | None,
    context: str | None,
    request_timeout: float,
    verbose: int,
    namespaces: tuple[str, ...],
    out: str,
) -> int:
    """Write what diagnose reads as one JSON file, for offline analysis (--from-file)."""
    import json

    from kubectl_nodefail.gather import gather

    conn = Connection(kubeconfig, context, request_timeout, verbose)
    cluster = conn.cluster()
    try:
        snap = gather(cluster, only_nodes=nodes, namespaces=namespaces, progress=_progress(verbose))
    finally:
        cluster.close()
    text = json.dumps(snap.to_dump(), indent=1, sort_keys=True) + "\n"
    if out == "-":
        click.echo(text, nl=False)
    else:
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(text)
        click.echo(f"wrote {out}: {len(snap.nodes)} nodes, {len(snap.pods)} pods", err=True)
    return Exit.OK
