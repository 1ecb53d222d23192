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

from kubectl_nodefail import __version__, color, completion, contexts, progress
from kubectl_nodefail.errors import Exit, NodefailError

OUTPUTS = ["table", "wide", "json", "yaml"]
STRATEGY_HELP = """
\b
Strategies (the destructive step a node confirmed down gets; default auto):
  auto            the out-of-service taint where the server supports it (1.28+),
                  else force-delete
  out-of-service  taint node.kubernetes.io/out-of-service=nodeshutdown:NoExecute:
                  Kubernetes force-deletes the node's pods and detaches its volumes at
                  once; remediate removes the taint again once the node is Ready
  force-delete    delete the node's stuck pods with grace 0 and UID/resourceVersion
                  preconditions (DaemonSet and mirror pods excepted)
  delete-node     delete the Node object (machine gone for good); PodGC removes its pods
"""
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


DIAGNOSE_EXAMPLES = """
\b
Examples:
  # every failed node and stuck pod of the current context
  kubectl nodefail diagnose
  # one node, and the full reasoning for it (with its incident timeline)
  kubectl nodefail diagnose worker-3 --explain worker-3
  # why one pod is stuck
  kubectl nodefail diagnose --explain shop/db-0
  # for a runbook: branch on the exit code (3 = problems found), read the JSON
  kubectl nodefail diagnose -o json | jq '.nodes[].cause.code'
  # another cluster, pods of one namespace only
  kubectl nodefail diagnose --context prod-eu -n shop
  # several clusters at once, grouped; the exit code is the worst of them
  kubectl nodefail diagnose --context prod-eu --context prod-us
  kubectl nodefail diagnose --all-contexts -o json
  # follow the incident live (Ctrl-C stops)
  kubectl nodefail diagnose worker-3 --watch
  # offline: a dump taken earlier (kubectl nodefail dump -f incident.json)
  kubectl nodefail diagnose --from-file incident.json
"""
REMEDIATE_EXAMPLES = """
\b
Examples:
  # the plan for one node (changes nothing)
  kubectl nodefail remediate worker-3
  # the machine is confirmed powered off: carry the plan out
  kubectl nodefail remediate worker-3 --node-shutdown-confirmed worker-3 --confirm
  # save the plan for review, then execute exactly that plan
  kubectl nodefail remediate worker-3 --node-shutdown-confirmed worker-3 --plan-out plan.json
  kubectl nodefail remediate --plan-in plan.json --confirm --log-file remediate.log
"""
DUMP_EXAMPLES = """
\b
Examples:
  kubectl nodefail dump -f incident.json            # everything diagnose reads
  kubectl nodefail dump worker-3 -f worker-3.json   # just what one node's diagnosis needs
  kubectl nodefail diagnose --from-file incident.json
"""
VERSION_EXAMPLES = """
\b
Examples:
  kubectl nodefail version                 # plugin and server version
  kubectl nodefail version --client        # the plugin only, no cluster read
  kubectl nodefail version -o json
"""
COMPLETION_HELP = """Print a shell completion script (bash, zsh, fish, or kubectl's).

\b
Completes commands, options, node names, namespaces and NAMESPACE/POD for --explain, read
from the cluster of the kubeconfig (and --context) typed so far.

\b
For `kubectl nodefail <TAB>` (kubectl 1.26+ asks an executable kubectl_complete-nodefail
on PATH; next to the plugin is a good place):
  kubectl nodefail completion kubectl > ~/.krew/bin/kubectl_complete-nodefail
  chmod +x ~/.krew/bin/kubectl_complete-nodefail
For the kubectl-nodefail command itself (pip users):
  bash:  source <(kubectl nodefail completion bash)    # in ~/.bashrc
  zsh:   source <(kubectl nodefail completion zsh)     # in ~/.zshrc, after compinit
  fish:  kubectl nodefail completion fish | source     # in ~/.config/fish/config.fish
"""


def program_name(env: dict[str, str] | None = None) -> str:
    """How usage lines name the command: `kubectl nodefail`, as kubectl users type it.
    kubectl sets KUBECTL_PLUGINS_CALLER to its own path when it runs a plugin; a differently
    named caller (an `oc` or a renamed kubectl) is named instead."""
    import os

    caller = (os.environ if env is None else env).get("KUBECTL_PLUGINS_CALLER", "")
    base = os.path.basename(caller) if caller else ""
    return f"{base or 'kubectl'} nodefail"


class PluginGroup(click.Group):
    """The command group, named as kubectl users type it; completion's variable fixed (click
    would derive it from the program name, which has a space)."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("prog_name", program_name())
        kwargs.setdefault("complete_var", completion.COMPLETE_VAR)
        return super().main(*args, **kwargs)


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
            click.option(
                "--context",
                metavar="NAME",
                help="The kubeconfig context to use.",
                shell_complete=completion.contexts,
            ),
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
                help="More detail: evidence in tables, progress on stderr; tracebacks (-vv).",
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


@click.group(
    cls=PluginGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, "--version", prog_name="kubectl-nodefail")
def main() -> None:
    """Explain failed nodes and stuck pods, and fix them safely.

    \b
      kubectl nodefail diagnose            what is wrong, why, what happens next
      kubectl nodefail remediate NODE      the safe plan (changes nothing)
      kubectl nodefail remediate NODE --confirm   carry the plan out
      kubectl nodefail completion bash     shell completion (see its --help)
    """


@main.command(epilog=VERSION_EXAMPLES)
@connection_options
@click.option("--client", is_flag=True, help="The plugin's version only; no cluster read.")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text")
@handle_errors
def version(
    kubeconfig: str | None,
    context: str | None,
    request_timeout: float,
    verbose: int,
    client: bool,
    output: str,
) -> int:
    """Print the plugin's version and the Kubernetes version of the server it sees.

    Without a reachable cluster it says why, and still exits 0. The server is asked for at
    most 5 seconds unless --request-timeout says less.
    """
    from kubectl_nodefail.versioninfo import describe

    conn = Connection(kubeconfig, context, min(request_timeout, 5.0), verbose)
    info = describe(None if client else conn)
    click.echo(info.json() if output == "json" else info.text(), nl=False)
    return Exit.OK


@main.command("completion", help=COMPLETION_HELP)
@click.argument("shell", type=click.Choice(completion.SHELLS))
def completion_command(shell: str) -> None:
    click.echo(completion.script(main, shell), nl=False)


def _progress(verbose: int) -> Callable[[str], None]:
    return progress.reporter(verbose)


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
        progress.done()
        cluster.close()


@main.command(epilog=DIAGNOSE_EXAMPLES + EXIT_CODES_HELP)
@click.argument("nodes", nargs=-1, metavar="[NODE]...", shell_complete=completion.nodes)
@contexts.repeatable_context
@connection_options
@click.option(
    "-n",
    "--namespace",
    "namespaces",
    multiple=True,
    metavar="NS",
    help="Only pods in this namespace (repeatable). Nodes are always examined.",
    shell_complete=completion.namespaces,
)
@click.option("-A", "--all-namespaces", is_flag=True, help="Pods of every namespace (default).")
@click.option(
    "-o",
    "--output",
    type=click.Choice([*OUTPUTS, "markdown"]),
    default="table",
    show_default=True,
    help="markdown: the diagnosis and each failed node's timeline, for an incident channel.",
)
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
    shell_complete=completion.explain_targets,
)
@click.option(
    "-w",
    "--watch",
    is_flag=True,
    help="Follow the incident: read again every --interval seconds, show it again on a change "
    "(redrawn in place on a terminal). Ctrl-C stops.",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.5),
    default=2.0,
    show_default=True,
    metavar="SECONDS",
    help="How often --watch reads the cluster.",
)
@color.no_color_option
@handle_errors
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
    """Explain every failed node and every stuck pod, by controller type.

    Lists nodes that are not Ready (or carry a shutdown / out-of-service taint) with their likely
    cause and zone state, and every pod on them or stuck Terminating anywhere: what kubectl shows,
    what it really means, why it is stuck for its controller, its replacement, storage blockers,
    when eviction happens, what happens if the node returns, and the safe fix.

    --explain NODE adds the node's incident timeline (last lease renewal, Ready transition,
    taints, evictions, replacements, volumes, recovery), as JSON too (nodes[].timeline).
    """
    from kubectl_nodefail import render
    from kubectl_nodefail.analysis.diagnose import diagnose as run_diagnosis

    if all_namespaces and namespaces:
        raise click.UsageError("--namespace and --all-namespaces exclude each other")
    if from_file and demo:
        raise click.UsageError("--from-file and --demo exclude each other")
    if watch and (from_file or demo):
        raise click.UsageError("--watch follows a live cluster: not with --from-file or --demo")
    many = all_contexts or len(context) > 1
    progress.machine_output("json" if watch or many else output)
    if many and (watch or from_file or demo or explain or output == "markdown"):
        raise click.UsageError(
            "several contexts: not with --watch, --from-file, --demo, --explain or -o markdown"
        )
    conn = Connection(kubeconfig, context[0] if context else None, request_timeout, verbose)

    def show(snap: Any) -> tuple[str, int]:
        report = run_diagnosis(snap, snap.captured_at, only_nodes=nodes, namespaces=namespaces)
        for gap in report.gaps:
            click.echo(f"warning: {gap}", err=True)
        code = Exit.PROBLEMS_FOUND if report.problems else Exit.OK
        if output in ("json", "yaml", "markdown"):
            from kubectl_nodefail import incident

            data = incident.report_with_timelines(report, snap)
            if explain:
                data = incident.explained(data, explain)
            if output == "markdown":
                return incident.markdown(data, snap), code
            return (render.as_json(data) if output == "json" else render.as_yaml(data)), code
        if explain:
            from kubectl_nodefail import incident

            text = _explain(report, explain) + incident.timeline_text(snap, explain)
            return color.style_for_terminal(text), code
        table = render.table(report, wide=output == "wide" or verbose > 0)
        return color.style_for_terminal(table), code

    if watch:
        from kubectl_nodefail import watch as watching

        out = sys.stdout
        return watching.run(
            lambda: load_snapshot(conn, None, False, nodes, namespaces),
            show,
            interval,
            out,
            sys.stderr,
            tty=out.isatty(),
            title=f"{program_name()} diagnose {' '.join(nodes)}".rstrip(),
            one_line=output == "json",
        )
    if many:
        names = list(dict.fromkeys(context)) or contexts.kubeconfig_contexts(kubeconfig)
        if all_contexts and context:
            raise click.UsageError("--context and --all-contexts exclude each other")

        def one(name: str) -> tuple[str, int]:
            per = Connection(kubeconfig, name, request_timeout, 0)
            return show(load_snapshot(per, None, False, nodes, namespaces))

        results = contexts.run_many(names, one)
        click.echo(contexts.render(results, output), nl=False)
        return contexts.worst([r.code for r in results])
    text, code = show(load_snapshot(conn, from_file, demo, nodes, namespaces))
    click.echo(text, nl=False)
    return code


def _load_plan(path: str) -> Any:
    import json

    from kubectl_nodefail.errors import BadInputError
    from kubectl_nodefail.plan import Plan

    try:
        with open(path, encoding="utf-8") as fh:
            return Plan.from_data(json.load(fh))
    except (OSError, ValueError) as exc:
        raise BadInputError(f"cannot read the plan {path}: {exc}") from exc


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


@main.command(epilog=DUMP_EXAMPLES + EXIT_CODES_HELP)
@click.argument("nodes", nargs=-1, metavar="[NODE]...", shell_complete=completion.nodes)
@connection_options
@click.option(
    "-n",
    "--namespace",
    "namespaces",
    multiple=True,
    metavar="NS",
    shell_complete=completion.namespaces,
)
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


@main.command(epilog=REMEDIATE_EXAMPLES + STRATEGY_HELP + EXIT_CODES_HELP)
@click.argument("nodes", nargs=-1, metavar="[NODE]...", shell_complete=completion.nodes)
@connection_options
@click.option("-o", "--output", type=click.Choice(OUTPUTS), default="table", show_default=True)
@click.option("--confirm", is_flag=True, help="Execute the plan. Without it nothing is changed.")
@click.option(
    "--strategy",
    type=click.Choice(["auto", "out-of-service", "force-delete", "delete-node"]),
    default="auto",
    show_default=True,
    help="What a confirmed-down node gets (see below).",
)
@click.option(
    "--node-shutdown-confirmed",
    "attested",
    multiple=True,
    metavar="NODE",
    help="Attest that NODE's machine is powered off (repeatable; one per node). "
    "Unlocks the destructive steps for that node only.",
)
@click.option(
    "--max-nodes",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Act on at most this many failed nodes in one run.",
)
@click.option(
    "--allow-disruption",
    is_flag=True,
    help="Act even while a zone is disrupted or many nodes are down (usually the "
    "network or control plane: be sure first).",
)
@click.option(
    "--log-file",
    type=click.Path(dir_okay=False),
    metavar="PATH",
    help="Append one JSON line per executed step.",
)
@click.option(
    "--wait-timeout",
    type=float,
    default=120.0,
    show_default=True,
    metavar="SECONDS",
    help="How long to watch pods and volumes go after an out-of-service taint.",
)
@click.option("--from-file", metavar="PATH", help="Plan from a dump (never executes).")
@click.option(
    "--plan-out",
    metavar="PATH",
    type=click.Path(dir_okay=False),
    help="Also save the plan as JSON, for review and a later --plan-in --confirm.",
)
@click.option(
    "--plan-in",
    metavar="PATH",
    type=click.Path(dir_okay=False),
    help="Execute exactly this saved plan (with --confirm), re-checking every step.",
)
@color.no_color_option
@handle_errors
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
    log_file: str | None,
    wait_timeout: float,
    from_file: str | None,
    plan_out: str | None,
    plan_in: str | None,
) -> int:
    """Plan the safe fix for failed nodes; carry it out with --confirm.

    \b
    Every step states why, its evidence and its gate. Destructive steps need evidence that the
    machine is really down: --node-shutdown-confirmed NODE, or the cloud provider's shutdown
    taint. Without it, StatefulSet pods and pods holding RWO volumes are never force-deleted.
    Right before each step the node, its lease and the pod are read again; anything that moved
    since the plan (node back, lease renewed, pod recreated) is skipped, never deleted.
    DaemonSet and mirror pods are never acted on; Ready nodes only lose a stale
    out-of-service taint.
    """
    from kubectl_nodefail import render
    from kubectl_nodefail.actions import summary
    from kubectl_nodefail.plan import Options

    if plan_in and (nodes or attested or from_file):
        raise click.UsageError(
            "--plan-in replays a saved plan: give no nodes, attestations or --from-file with it"
        )
    if confirm and from_file:
        raise click.UsageError("--confirm acts on a live cluster; not with --from-file")
    progress.machine_output(output)
    conn = Connection(kubeconfig, context, request_timeout, verbose)
    opts = Options(
        strategy=strategy,
        attested=attested,
        only_nodes=nodes,
        max_nodes=max_nodes,
        allow_disruption=allow_disruption,
    )
    cluster = None if from_file else conn.cluster()
    try:
        plan = _load_plan(plan_in) if plan_in else _make_plan(cluster, from_file, opts, verbose)
        if cluster is not None:
            _check_permissions(cluster, plan, confirm)
            if confirm:
                _execute(cluster, plan, log_file, wait_timeout, verbose)
    finally:
        if cluster is not None:
            cluster.close()
    counts = summary(plan)
    if plan_out:
        with open(plan_out, "w", encoding="utf-8") as fh:
            fh.write(render.as_json(render.plan_data(plan, False, counts)))
    if output in ("json", "yaml"):
        data = render.plan_data(plan, confirm, counts)
        click.echo(render.as_json(data) if output == "json" else render.as_yaml(data), nl=False)
    else:
        plan_text = render.plan_table(plan, confirm, wide=output == "wide")
        click.echo(color.style_for_terminal(plan_text), nl=False)
    return plan.exit_code() if not confirm else plan.result_code()


def _make_plan(cluster: Any, from_file: str | None, opts: Any, verbose: int) -> Any:
    """Diagnose (live or from a dump), then plan."""
    from dataclasses import replace

    from kubectl_nodefail import snapshot
    from kubectl_nodefail.analysis.diagnose import diagnose as run_diagnosis
    from kubectl_nodefail.analysis.diagnose import server_minor
    from kubectl_nodefail.plan import make_plan

    if from_file:
        snap = snapshot.load_dump(from_file)
    else:
        from kubectl_nodefail.gather import gather

        try:
            snap = gather(cluster, only_nodes=opts.only_nodes, progress=_progress(verbose))
        finally:
            progress.done()
    unknown = set(opts.attested) - {n["metadata"]["name"] for n in snap.nodes}
    if unknown:
        raise click.UsageError(
            f"--node-shutdown-confirmed names unknown nodes: {', '.join(sorted(unknown))}"
        )
    report = run_diagnosis(snap, snap.captured_at, only_nodes=opts.only_nodes)
    return make_plan(report, replace(opts, server_minor=server_minor(snap.server_version)))


def _check_permissions(cluster: Any, plan: Any, confirm: bool) -> None:
    """RBAC preflight: refuse before any change (--confirm) or say what is missing (plan)."""
    from kubectl_nodefail.actions import preflight
    from kubectl_nodefail.errors import AuthError

    missing = preflight(cluster, plan) if plan.mutating else []
    if missing and confirm:
        raise AuthError(
            "refused before any change: missing permissions: " + "; ".join(missing),
            hint="bind the role in deploy/rbac/remediate.yaml",
        )
    if missing:
        plan.refusals.append("missing permissions: " + "; ".join(missing))


def _execute(
    cluster: Any, plan: Any, log_file: str | None, wait_timeout: float, verbose: int
) -> None:
    from kubectl_nodefail.actions import Executor, whoami

    Executor(cluster, whoami(cluster), log_file, wait_timeout, _progress(verbose)).run(plan)
