"""`kubectl nodefail`: the click commands. Flags become options, errors become exit codes.

Kept thin and light: `kubectl nodefail --help` imports click and little else (it is measured
against `python3 -c pass`); what only a command needs (the kubernetes client above all, but
also logging, many-cluster runs, the analysis) is imported inside that command.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from functools import wraps
from typing import IO, Any, NamedTuple, TextIO

import click

from kubectl_nodefail.cli import completion
from kubectl_nodefail.common import exitcodes
from kubectl_nodefail.common.errors import Exit, NodefailError, explain_not_found
from kubectl_nodefail.term import closedpipe, color, fit, printable, progress

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
EXIT_CODES_HELP = exitcodes.help_text()  # every code, once: the top-level --help
DEFAULT_DEADLINE = 120.0  # seconds for a whole run; remediate adds its --wait-timeout
DEADLINE_GRACE = 1.0  # the hard stop, for waits nothing can interrupt (DNS); kills exec plugins
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|h|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


class Duration(click.ParamType):
    """kubectl's duration syntax: `30`, `30s`, `2m`, `1m30s`, `500ms`; `0` means no limit."""

    name = "duration"

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        if isinstance(value, (int, float)):
            seconds = float(value)
        else:
            text = str(value).strip()
            try:
                seconds = float(text)
            except ValueError:
                parts = _DURATION.findall(text)
                if not parts or "".join(a + b for a, b in parts) != text:
                    self.fail(f"{value!r} is not a duration (e.g. 30s, 2m, 1m30s)", param, ctx)
                seconds = sum(float(a) * _UNIT_SECONDS[b] for a, b in parts)
        if not 0 <= seconds < 10**9:
            self.fail(f"{value!r} is out of range", param, ctx)
        return seconds


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
  # once you checked that its machine is powered off (console, power state), type that
  # node's name in place of the placeholder (it is refused as written) and add --confirm
  kubectl nodefail remediate worker-3 --node-shutdown-confirmed <NODE-YOU-VERIFIED-IS-POWERED-OFF>
  # save the plan for review, then run exactly that plan (the attestation typed again)
  kubectl nodefail remediate worker-3 --plan-out plan.json \\
      --node-shutdown-confirmed <NODE-YOU-VERIFIED-IS-POWERED-OFF>
  kubectl nodefail remediate --plan-in plan.json \\
      --node-shutdown-confirmed <NODE-YOU-VERIFIED-IS-POWERED-OFF>
  # a whole zone: its plan; once every machine of zone-b is checked off, type the zone
  # in place of the placeholder, and add --confirm
  kubectl nodefail remediate --zone zone-b
  kubectl nodefail remediate --zone zone-b --allow-disruption \
      --zone-shutdown-confirmed <ZONE-WHOSE-MACHINES-YOU-VERIFIED-ARE-OFF>
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


# The cyclic garbage collector's thresholds (CPython's default: 700, 10, 10). A big outage's
# snapshot and diagnosis are millions of small containers, next to none in a cycle; at the
# default, collections were a third of the analysis of 20,000 stuck pods (docs/scale.md).
GC_THRESHOLD = (100_000, 10, 10)


class PluginGroup(click.Group):
    """The command group, named as kubectl users type it; completion's variable fixed (click
    would derive it from the program name, which has a space)."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        gc.set_threshold(*GC_THRESHOLD)
        closedpipe.install()  # `| head`: the rest dropped, the command's own exit code
        kwargs.setdefault("prog_name", program_name())
        kwargs.setdefault("complete_var", completion.COMPLETE_VAR)
        try:
            return super().main(*args, **kwargs)
        except SystemExit as end:
            code = end.code if isinstance(end.code, int) else 0 if end.code is None else 1
            final = _with_output_checked(code)
            if final == code:
                raise
            raise SystemExit(final) from end

    # A usage error of any command (an unknown option or command, a missing or invalid value,
    # options that exclude each other) leaves the group as one line: the two places click
    # raises them from are the group's own arguments and everything under invoke.
    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except click.UsageError as exc:
            raise OneLineUsageError(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            raise OneLineUsageError(exc) from None


class OneLineUsageError(click.ClickException):
    """A usage error as one line on stderr, exit 2, like the tool's other errors: `error:
    MESSAGE (see 'kubectl nodefail COMMAND --help')`. click's own is four lines (the usage, a
    hint, a blank line, then the error)."""

    exit_code = 2

    def __init__(self, error: click.UsageError) -> None:
        from kubectl_nodefail.common.errors import one_line

        super().__init__(" ".join(one_line(error.format_message()).split()))
        self.command_path = error.ctx.command_path if error.ctx is not None else program_name()

    def show(self, file: Any = None) -> None:
        line = f"error: {self.message} (see '{self.command_path} --help')"
        click.echo(printable.text(line), file=file, err=True)


class Connection(NamedTuple):
    kubeconfig: str | None
    context: str | None
    request_timeout: float
    verbose: int
    overrides: Any = None  # kubeconfig.Overrides; None: those of the running command's flags

    def cluster(self) -> Any:
        from kubectl_nodefail.cluster.kube import Cluster

        ctx = click.get_current_context(silent=True)
        deadline = ctx.meta.get(DEADLINE_KEY) if ctx is not None else None
        overrides = self.overrides if self.overrides is not None else current_overrides()
        cluster = Cluster(
            self.kubeconfig, self.context, self.request_timeout or None, deadline, overrides
        )
        cluster.notice = _notice
        return cluster


def _notice(line: str) -> None:
    """One line for the user from the client (the server throttles us), between progress."""
    progress.done()
    click.echo(printable.text(f"warning: {line}"), err=True)


def current_overrides() -> Any:
    """kubectl's connection flags of the running command (a kubeconfig.Overrides), or None
    outside a command (the click context is per thread: read it on the command's own)."""
    ctx = click.get_current_context(silent=True)
    return ctx.meta.get(OVERRIDES_KEY) if ctx is not None else None


DEADLINE_KEY = "kubectl_nodefail.deadline"  # the run's time.monotonic() deadline, in ctx.meta
OVERRIDES_KEY = "kubectl_nodefail.overrides"  # kubectl's connection flags, in ctx.meta
WATCHDOG_KEY = "kubectl_nodefail.watchdog"  # lifted while remediate executes (see _execute)
DEADLINE_SECONDS_KEY = "kubectl_nodefail.deadline_seconds"  # --deadline, for --watch


# kubectl's global connection flags (cli-runtime's ConfigFlags), as `kubectl options` lists
# them: (flags, kubeconfig.Overrides field, help, multiple, is_flag)
KUBECTL_FLAGS: tuple[tuple[tuple[str, ...], str, str, bool, bool], ...] = (
    (("--cluster",), "cluster", "The name of the kubeconfig cluster to use.", False, False),
    (("--user",), "user", "The name of the kubeconfig user to use.", False, False),
    (
        ("-s", "--server"),
        "server",
        "The address and port of the Kubernetes API server.",
        False,
        False,
    ),
    (("--token",), "token", "Bearer token for authentication to the API server.", False, False),
    (
        ("--as",),
        "impersonate",
        "Username to impersonate for the operation (a user or a "
        "service account, system:serviceaccount:NS:NAME).",
        False,
        False,
    ),
    (
        ("--as-group",),
        "impersonate_groups",
        "Group to impersonate for the operation (repeatable).",
        True,
        False,
    ),
    (("--as-uid",), "impersonate_uid", "UID to impersonate for the operation.", False, False),
    (
        ("--certificate-authority",),
        "certificate_authority",
        "Path to a cert file for the certificate authority.",
        False,
        False,
    ),
    (
        ("--client-certificate",),
        "client_certificate",
        "Path to a client certificate file for TLS.",
        False,
        False,
    ),
    (("--client-key",), "client_key", "Path to a client key file for TLS.", False, False),
    (
        ("--insecure-skip-tls-verify",),
        "insecure_skip_tls_verify",
        "The server's certificate is not checked for validity (insecure).",
        False,
        True,
    ),
    (
        ("--tls-server-name",),
        "tls_server_name",
        "Server name to use for server certificate validation (default: the server URL's host).",
        False,
        False,
    ),
    (
        ("--disable-compression",),
        "disable_compression",
        "Opt out of response compression for all requests (gzip is asked for by default, as "
        "kubectl does).",
        False,
        True,
    ),
)
CONNECTION_PARAMS = frozenset(
    {"kubeconfig", "context", "request_timeout", "deadline"} | {f[1] for f in KUBECTL_FLAGS}
)


def connection_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """kubectl's connection flags, shared by every command that reads the cluster. The flags
    of KUBECTL_FLAGS reach the command as one kubeconfig.Overrides (in ctx.meta, see
    `current_overrides`), not as parameters of its own."""

    @wraps(fn)
    def collect(*args: Any, **kwargs: Any) -> Any:
        given = {field: kwargs.pop(field) for _, field, _, _, _ in KUBECTL_FLAGS}
        given["impersonate_groups"] = tuple(given["impersonate_groups"])
        ctx = click.get_current_context()
        from kubectl_nodefail.cluster.kubeconfig import Overrides

        ctx.meta[OVERRIDES_KEY] = Overrides(**given)
        return fn(*args, **kwargs)

    kubectl_flags = [
        click.option(
            *names,
            field,
            multiple=multiple,
            is_flag=is_flag,
            default=None if not (multiple or is_flag) else (() if multiple else False),
            metavar=None if is_flag else "TEXT",
            help=text,
        )
        for names, field, text, multiple, is_flag in KUBECTL_FLAGS
    ]
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
            *kubectl_flags,
            click.option(
                "--request-timeout",
                type=Duration(),
                default="30s",
                show_default=True,
                metavar="DURATION",
                help="How long to wait for a single server request (as kubectl: 30s, 2m; "
                "0 = no per-request limit). A request that times out is not retried.",
            ),
            click.option(
                "--deadline",
                type=Duration(),
                default=None,
                metavar="DURATION",
                help=f"The longest the whole run may take, retries and waits the server asks "
                f"for included [default: {DEFAULT_DEADLINE:g}s; remediate adds its "
                "--wait-timeout]. Past it: exit 11.",
            ),
            click.option(
                "-v",
                "--verbose",
                count=True,
                help="More detail: evidence in tables, progress on stderr; tracebacks (-vv).",
            ),
        ]
    ):
        collect = decorator(collect)
    return collect


class NodefailCommand(click.Command):
    """A command whose --help lists kubectl's connection flags in their own section, as
    `kubectl options` does."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, list(args))
        except click.NoSuchOption as exc:
            said = argument_as_option(self, ctx, exc.option_name, args)
            if said is None:
                raise
            raise click.NoSuchOption(exc.option_name, said, [], ctx) from None
        except click.UsageError as exc:
            if exc.ctx is None:  # click's parser leaves it out (a missing value): name the command
                exc.ctx = ctx
            raise

    def get_short_help_str(self, limit: int = 45) -> str:
        """The summary in the top-level --help: never cut with '...' (click cuts a summary
        it makes to fit); every command sets a short_help that fits 80 columns."""
        return super().get_short_help_str(limit=1 << 16)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        own: list[tuple[str, str]] = []
        connection: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None:
                (connection if param.name in CONNECTION_PARAMS else own).append(record)
        for title, rows in (("Options", own), ("Connection options (as kubectl's)", connection)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


PluginGroup.command_class = NodefailCommand


def _stem(word: str) -> str:
    return word.strip("-").lower().replace("-", "_").rstrip("s")


def argument_as_option(
    command: click.Command, ctx: click.Context, option: str, args: list[str]
) -> str | None:
    """The message for an unknown option that names one of the command's positional
    arguments (`diagnose --node worker-1`: NODE is typed bare), or None. click would suggest
    whichever option spells closest (`--demo`); this says how the argument is given, with the
    value typed, and nothing else of the command line."""
    import shlex

    from kubectl_nodefail.common.errors import closest, one_line

    arguments = {_stem(p.name or ""): p for p in command.params if isinstance(p, click.Argument)}
    meant = closest(_stem(option), arguments)
    if meant is None:
        return None
    value = ""
    for i, word in enumerate(args):
        if word.startswith(option + "="):
            value = word.split("=", 1)[1]
            break
        if word == option:
            following = args[i + 1] if i + 1 < len(args) else ""
            value = "" if following.startswith("-") else following
            break
    name = (arguments[meant].name or "").upper().rstrip("S")
    example = f"{ctx.command_path} {shlex.quote(value) if value else name}"
    return one_line(
        f"No such option '{option}': {name} is an argument, typed without a flag: {example}"
    )


def repeatable_context(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Make the `--context` that connection_options added repeatable, and add
    `--all-contexts`. Written above @connection_options (decorators apply bottom-up)."""
    params = getattr(fn, "__click_params__", [])
    for i, param in enumerate(params):
        if param.name == "context":
            params[i] = click.Option(
                ["--context"],
                multiple=True,
                metavar="NAME",
                help="The kubeconfig context to use; repeat it to diagnose several clusters.",
                shell_complete=completion.contexts,
            )
    return click.option(
        "--all-contexts",
        is_flag=True,
        help="Diagnose every context of the kubeconfig, concurrently, grouped by context.",
    )(fn)


def handle_errors(fn: Callable[..., int]) -> Callable[..., None]:
    """Run a command body; map its result and the tool's errors onto exit codes.

    Also holds the overall deadline (--deadline): requests see it through the click context,
    and a watchdog ends the run with exit 11 should a wait that nothing can interrupt (a name
    lookup, a credential plugin) outlast it.
    """

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        verbose = kwargs.get("verbose", 0)
        _quiet_libraries(verbose)
        seconds = _deadline_seconds(kwargs)
        watchdog = None
        if seconds is not None:
            click.get_current_context().meta[DEADLINE_KEY] = time.monotonic() + seconds
            watchdog = _Watchdog(seconds)
            click.get_current_context().meta[WATCHDOG_KEY] = watchdog
            click.get_current_context().meta[DEADLINE_SECONDS_KEY] = seconds
        try:
            code = fn(*args, **kwargs)
        except NodefailError as exc:
            if verbose >= 2:
                _print_traceback()
            # an interruption before any change: not after the reads still in flight
            now = exc.exit_code == Exit.INTERRUPTED
            _fail(f"error: {exc.line()}", int(exc.exit_code), watchdog, now=now)
        except KeyboardInterrupt:
            _fail("interrupted", int(Exit.CTRL_C), watchdog, now=True)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except Exception as exc:  # a bug: one line unless asked for more
            if verbose:
                _print_traceback()
            _fail(
                f"error: internal error: {type(exc).__name__}: {_first_line(exc)} "
                "(rerun with -v for the traceback)",
                int(Exit.INTERNAL),
                watchdog,
            )
        finally:
            if watchdog is not None:
                watchdog.cancel()
        sys.exit(int(code))

    return wrapper


def _print_traceback() -> None:
    import traceback

    traceback.print_exc()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else ""


def _fail(line: str, code: int, watchdog: _Watchdog | None, now: bool = False) -> None:
    """Print the one error line and exit, unless the watchdog already said it. `now`: at once
    (see `_leave_now`)."""
    if watchdog is None or watchdog.claim():
        progress.done()  # the status line, erased before the error line
        click.echo(printable.text(line), err=True)  # it may quote the cluster: escaped
    if now:
        _leave_now(code)
    sys.exit(code)


def _leave_now(code: int) -> None:
    """Exit without waiting for the requests still in flight on other threads (Python's exit
    would join them: up to --request-timeout after a Ctrl-C). Those are reads: remediate's
    changes are sent from the main thread, whose `finally` blocks (trail log, node locks) have
    run by the time a KeyboardInterrupt gets here, and a Ctrl-C during its execution is
    actions.Stop's, not this."""
    sys.stdout.flush()
    code = _with_output_checked(code)
    sys.stderr.flush()
    os._exit(code)


# The codes that only report an outcome the output carries: with the output incomplete (a full
# disk) they become 2. Any other (a partial remediate, an interruption, an error) says more
# than "the output is incomplete" and is kept; the line is said either way.
_OUTCOME_ONLY = (Exit.OK, Exit.PROBLEMS_FOUND, Exit.NOTHING_TO_DO)


def _with_output_checked(code: int) -> int:
    """The exit code once standard output is known to be written or not (closedpipe)."""
    why = closedpipe.output_failed()  # a full disk under `> file`: not a bug
    if why is None:
        return code
    progress.done()
    click.echo(f"error: {why}: the output is incomplete", err=True)
    return int(Exit.USAGE) if code in _OUTCOME_ONLY else code


def _deadline_seconds(kwargs: dict[str, Any]) -> float | None:
    """The run's deadline in seconds: --deadline, or the default (plus remediate's wait)."""
    if "deadline" not in kwargs:
        return None
    given = kwargs.pop("deadline")
    if given is not None:
        return float(given) or None  # 0: no deadline, as for --request-timeout
    return DEFAULT_DEADLINE + float(kwargs.get("wait_timeout") or 0)


class _Watchdog:
    """Ends the process with exit 11 and one line if the run outlasts its deadline.

    Requests stop themselves before the deadline (kube.Cluster cuts every timeout to it);
    this is the backstop for waits that cannot be cut, DEADLINE_GRACE seconds later. Exactly
    one error line is printed: whoever claims the line first says it.
    """

    # How the process ends when the deadline passes: at once, whatever the other threads do.
    # An in-process test runner (click's CliRunner under a pytest-xdist worker) would die with
    # it: the unit tests' conftest sets a no-op (the command's own path then ends it, 11 too).
    leave: Callable[[int], None] = staticmethod(os._exit)

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._lock = threading.Lock()
        self._said = False
        self._timer = threading.Timer(seconds + DEADLINE_GRACE, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def claim(self) -> bool:
        with self._lock:
            if self._said:
                return False
            self._said = True
            return True

    def cancel(self) -> None:
        self._timer.cancel()

    def _expire(self) -> None:
        if not self.claim():
            return
        plugins = sys.modules.get("kubectl_nodefail.cluster.credplugin")
        if plugins is not None:
            plugins.kill_all()  # no credential plugin outlives the command
        progress.done()
        sys.stdout.flush()
        sys.stderr.write(
            f"error: the run did not finish within the overall deadline of {self.seconds:g}s "
            "(raise --deadline, or check the cluster and the network)\n"
        )
        sys.stderr.flush()
        type(self).leave(int(Exit.UNREACHABLE))


def _quiet_libraries(verbose: int) -> None:
    """Keep the client libraries' own log lines off stderr: our one line says it.

    The kubernetes client logs a failing exec credential plugin through the root logger
    (`logging.error`), which would print `ERROR:root:...` next to our message. With -vv their
    logs are shown.
    """
    import logging

    root = logging.getLogger()
    if verbose >= 2:
        logging.basicConfig(level=logging.DEBUG if verbose > 2 else logging.WARNING)
        return
    if not any(isinstance(h, logging.NullHandler) for h in root.handlers):
        root.addHandler(logging.NullHandler())  # logging.error() then never calls basicConfig
    for name in ("kubernetes", "urllib3"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


def _print_version(ctx: click.Context, value: bool) -> None:
    """--version: the same text as `version --client`, one format for both."""
    if not value or ctx.resilient_parsing:
        return
    from kubectl_nodefail.cli.version import describe

    click.echo(describe(None).text(), nl=False)
    ctx.exit()


@click.group(
    cls=PluginGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=EXIT_CODES_HELP,
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=lambda ctx, param, value: _print_version(ctx, value),
    help="Print the plugin's version (as `version --client` does) and exit.",
)
def main() -> None:
    """Explain failed nodes and stuck pods, and fix them safely.

    \b
      kubectl nodefail diagnose            what is wrong, why, what happens next
      kubectl nodefail remediate NODE      the safe plan (changes nothing)
      kubectl nodefail remediate NODE --confirm   carry the plan out
      kubectl nodefail completion bash     shell completion (see its --help)
    """


@main.command(
    short_help="The plugin's version and the server's Kubernetes version.",
    epilog=VERSION_EXAMPLES + exitcodes.help_text("version"),
)
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
    from kubectl_nodefail.cli.version import describe

    conn = Connection(kubeconfig, context, min(request_timeout, 5.0), verbose)
    info = describe(None if client else conn)
    click.echo(info.json() if output == "json" else info.text(), nl=False)
    return Exit.OK


@main.command(
    "completion",
    help=COMPLETION_HELP,
    short_help="A shell completion script (bash, zsh, fish, kubectl).",
    epilog=exitcodes.help_text("completion"),
)
@click.argument("shell", type=click.Choice(completion.SHELLS))
def completion_command(shell: str) -> None:
    click.echo(completion.script(main, shell), nl=False)


RBAC_EXAMPLES = """
\b
Examples:
  kubectl nodefail rbac diagnose | kubectl apply -f -     # the read-only role
  kubectl nodefail rbac remediate | kubectl apply -f -    # both roles remediate --confirm needs
  kubectl create clusterrolebinding nodefail-diagnose \\
    --clusterrole=kubectl-nodefail-diagnose --user=NAME
"""


@main.command(
    "rbac",
    short_help="Print the least-privilege RBAC roles, as YAML.",
    epilog=RBAC_EXAMPLES + exitcodes.help_text("rbac"),
)
@click.argument("command", required=False, type=click.Choice(["diagnose", "remediate"]))
def rbac_command(command: str | None) -> None:
    """Print the ClusterRoles a user of COMMAND needs, as YAML (default: every role).

    diagnose, dump and remediate's plan need kubectl-nodefail-diagnose (read-only);
    remediate --confirm needs it and kubectl-nodefail-remediate (the writes its steps make).
    Nothing is read from or sent to the cluster: apply the output, then bind the roles.
    """
    from kubectl_nodefail import roles

    click.echo(roles.for_command(command), nl=False)


def _progress(verbose: int) -> Callable[[str], None]:
    return progress.reporter(verbose)


def load_snapshot(
    conn: Connection,
    from_file: str | None,
    demo: bool,
    nodes: tuple[str, ...],
    namespaces: tuple[str, ...],
    warn: bool = True,
) -> Any:
    """A Snapshot from a dump file, the bundled demo, or the live cluster. `warn`: say on
    stderr which -n namespaces the cluster does not have (not under --watch's screen)."""
    from kubectl_nodefail.snapshot import model as snapshot

    if demo:
        from kubectl_nodefail.examples import demo_path

        path = demo_path()
        click.echo(f"(demo: a snapshot recorded from a real control plane: {path})", err=True)
        return snapshot.load_dump(path)
    if from_file:
        return snapshot.load_dump(from_file)
    cluster = conn.cluster()
    try:
        snap = gathered(
            cluster, only_nodes=nodes, namespaces=namespaces, progress=_progress(conn.verbose)
        )
        if warn:
            _warn_unknown_namespaces(cluster, namespaces)
        return snap
    finally:
        progress.done()
        cluster.close()


def _warn_unknown_namespaces(cluster: Any, namespaces: tuple[str, ...]) -> None:
    """One stderr line per -n namespace the cluster does not have; the exit code stays."""
    from kubectl_nodefail.cluster.gather import unknown_namespaces

    progress.done()
    for line in unknown_namespaces(cluster, namespaces):
        click.echo(f"warning: {line}", err=True)


def gathered(cluster: Any, **options: Any) -> Any:
    """gather()'s snapshot of the live cluster for the analysis, checked(): its pods and
    nodes are cut to the dump schema as their pages arrive, not once all are read (a 1,000-node
    outage's pods and their owners' other pods, held whole, were most of diagnose's memory;
    gather itself reads the nodes' conditions, which must be checked first)."""
    from kubectl_nodefail.cluster.gather import gather
    from kubectl_nodefail.snapshot import dumpschema

    cluster.shape["Pod"] = cluster.shape["Node"] = dumpschema.cut_live
    return checked(gather(cluster, **options), cut=("pods", "nodes"))


def checked(snap: Any, cut: tuple[str, ...] = ()) -> Any:
    """A live snapshot held to the dump schema and cut the same way (dumpschema.take_live):
    the analysis trusts its input whichever way it came. `cut`: lists whose every object
    was cut as it was read (not cut twice)."""
    from kubectl_nodefail.snapshot import dumpschema
    from kubectl_nodefail.snapshot import model as snapshot

    for name in snapshot.LISTS:
        if name not in cut:
            setattr(snap, name, dumpschema.take_live(getattr(snap, name)))
    return snap


@main.command(
    short_help="Explain failed nodes and stuck pods, by controller type.",
    epilog=DIAGNOSE_EXAMPLES + exitcodes.help_text("diagnose"),
)
@click.argument("nodes", nargs=-1, metavar="[NODE]...", shell_complete=completion.nodes)
@repeatable_context
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
    "(redrawn in place on a terminal); a server that fails or refuses is retried. Ctrl-C "
    "stops: the last diagnosis's exit code, or the failed read's if none succeeded.",
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
    from kubectl_nodefail.render import pastable

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
        # imported once the cluster answered: a refused connection fails without their cost
        from kubectl_nodefail.analysis.diagnose import diagnose as run_diagnosis
        from kubectl_nodefail.render import render
        from kubectl_nodefail.snapshot.model import require_nodes

        require_nodes(snap, nodes)
        report = run_diagnosis(snap, snap.captured_at, only_nodes=nodes, namespaces=namespaces)
        pastable.carry(report, here if where is None else where)
        if not on_screen:  # the watch's screen shows them as notes; stderr would scroll it
            for gap in report.gaps:
                click.echo(printable.text(f"warning: {gap}"), err=True)
        code = Exit.PROBLEMS_FOUND if report.problems else Exit.OK
        if output in ("json", "yaml", "markdown"):
            from kubectl_nodefail.render import incident

            data = incident.report_with_timelines(report, snap)
            if explain:
                data = incident.explained(data, explain)
            if output == "markdown":
                return printable.text(incident.markdown(data, snap)), code
            if output == "json" and to is not None:
                render.write_json(data, to)
                return "", code
            return (render.as_json(data) if output == "json" else render.as_yaml(data)), code
        width = fit.width(sys.stdout)  # read again at each refresh of --watch: a resize counts
        if explain:
            from kubectl_nodefail.render import incident

            text = _explain(report, explain, width) + incident.timeline_text(snap, explain)
            return color.style_for_terminal(text), code
        wide = output == "wide" or verbose > 0
        from kubectl_nodefail.analysis import outage

        view = outage.summarise(report, snap) if not wide and outage.is_outage(report) else None
        table = render.table(report, wide=wide, outage_view=view, width=width)
        return color.style_for_terminal(table), code

    if watch:
        from kubectl_nodefail.watch import watch as watching

        out = sys.stdout

        def refresh() -> Any:
            _renew_deadline()
            return load_snapshot(conn, from_file, False, nodes, namespaces, warn=False)

        code = watching.run(
            refresh,
            show,
            interval,
            out,
            sys.stderr,
            tty=on_screen,
            title=f"{program_name()} diagnose {' '.join(nodes)}".rstrip(),
            one_line=output == "json",
        )
        _leave_now(code)  # Ctrl-C ended the watch: not after the refresh still in flight
    if many:
        from kubectl_nodefail.cluster import contexts

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
    from kubectl_nodefail.render import render

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


@main.command(
    short_help="Save what diagnose reads as one JSON file, for offline use.",
    epilog=DUMP_EXAMPLES + exitcodes.help_text("dump"),
)
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
    type=click.Path(),
    default="-",
    show_default=True,
    help="Where to write the dump ('-' = stdout); a file is made readable by its owner only.",
)
@click.option(
    "--no-redact",
    is_flag=True,
    help="Keep whole objects (env values, args, commands, pod templates, every annotation): "
    "secrets included.",
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
    no_redact: bool,
) -> int:
    """Write what diagnose reads as one JSON file, for offline analysis (--from-file).

    Each object is cut to the fields the analysis reads: container env values, args and
    commands, pod templates and the annotations it does not read are left out (the dump's
    notes say so), so that a dump can be attached to a ticket. --no-redact keeps whole objects.
    """
    from kubectl_nodefail.cluster.dumpfile import write_dump
    from kubectl_nodefail.cluster.gather import gather
    from kubectl_nodefail.common import outpath
    from kubectl_nodefail.snapshot import dumpschema
    from kubectl_nodefail.snapshot import model as snapshot

    if out != "-":
        outpath.check_writable("--file", out)  # before the cluster is read
    conn = Connection(kubeconfig, context, request_timeout, verbose)
    cluster = conn.cluster()
    # gather reads the nodes' conditions: held to the schema as they arrive, kept whole
    cluster.shape["Node"] = dumpschema.check_live
    try:
        snap = gather(cluster, only_nodes=nodes, namespaces=namespaces, progress=_progress(verbose))
        _warn_unknown_namespaces(cluster, namespaces)
    finally:
        progress.done()
        cluster.close()
    snapshot.require_nodes(snap, nodes)
    if no_redact:
        click.echo(
            "warning: --no-redact: the dump holds whole objects, secrets in env values, args, "
            "commands and annotations included",
            err=True,
        )
    if out == "-":
        write_dump(snap, sys.stdout, redact=not no_redact)
        sys.stdout.flush()
    else:
        _write("--file", out, lambda fh: write_dump(snap, fh, redact=not no_redact), private=True)
        click.echo(f"wrote {out}: {len(snap.nodes)} nodes, {len(snap.pods)} pods", err=True)
    return Exit.OK


@main.command(
    short_help="Plan the safe fix for failed nodes; --confirm carries it out.",
    epilog=REMEDIATE_EXAMPLES + STRATEGY_HELP + exitcodes.help_text("remediate"),
)
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
    "Unlocks the destructive steps for that node only. With --plan-in: type again the "
    "attestation the plan carries, or it does not count.",
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
    "--despite-automation",
    is_flag=True,
    help="Act even on a node that its remediation automation (MachineHealthCheck, "
    "NodeHealthCheck, Karpenter, cluster-autoscaler) remediates now or within "
    "--wait-timeout: you race it.",
)
@click.option(
    "--log-file",
    type=click.Path(),  # checked by outpath.check_writable, in one line
    metavar="PATH",
    help="Append a JSON line when each change starts and one with its result "
    "(checked writable before anything is done).",
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
    "--zone",
    metavar="ZONE",
    help="Plan every failed node of this zone (its topology.kubernetes.io/zone label, or "
    "REGION/ZONE as diagnose shows it), StatefulSets and volumes first; --confirm runs "
    "8 nodes at a time. See docs/outage.md.",
)
@click.option(
    "-l",
    "--selector",
    metavar="SELECTOR",
    help="Plan every failed node matching this label selector (a rack), as --zone does.",
)
@click.option(
    "--zone-shutdown-confirmed",
    "zone_confirmed",
    metavar="ZONE",
    help="Attest that the machines of --zone ZONE are powered off (type the zone again). "
    "Covers its not-Ready nodes whose lease is stale; never a Ready node or one whose lease "
    "is renewed.",
)
@click.option(
    "--selector-shutdown-confirmed",
    "selector_confirmed",
    metavar="SELECTOR",
    help="As --zone-shutdown-confirmed, for the nodes of --selector (type it again).",
)
@click.option(
    "--plan-out",
    metavar="PATH",
    type=click.Path(),  # checked by outpath.check_writable, in one line
    help="Also save the plan as JSON, for review and a later --plan-in --confirm.",
)
@click.option(
    "--plan-in",
    metavar="PATH",
    type=click.Path(dir_okay=False),
    help="Narrow to this saved plan: run (with --confirm) only its steps that a plan "
    "computed from the live cluster now allows too. Refused (exit 15) for another context, "
    "server or cluster, or a node recreated since.",
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
    """Plan the safe fix for failed nodes; carry it out with --confirm.

    \b
    Every step states why, its evidence and its gate. Destructive steps need evidence that the
    machine is really down: --node-shutdown-confirmed NODE, or the cloud provider's shutdown
    taint. Without it, StatefulSet pods and pods holding RWO volumes are never force-deleted.
    Right before each step the node, its lease and the pod are read again; anything that moved
    since the plan (node back, lease renewed, pod recreated or bound elsewhere) is skipped,
    never deleted. DaemonSet and mirror pods are never acted on; Ready nodes only lose a stale
    out-of-service taint; pods held by a finalizer are named, never promised released.
    A saved plan (--plan-in) only narrows: the live plan decides. One run at a time per node
    (a lock annotation). SIGINT/SIGTERM stop after the request in flight (exit 6).
    """
    from kubectl_nodefail.common import outpath
    from kubectl_nodefail.common.errors import InterruptedRun
    from kubectl_nodefail.remediate import planfile
    from kubectl_nodefail.remediate.actions import summary
    from kubectl_nodefail.remediate.plan import Options
    from kubectl_nodefail.render import render

    if (zone, selector, zone_confirmed, selector_confirmed) != (None, None, None, None):
        from click.core import ParameterSource

        from kubectl_nodefail.cli import zone as zonecmd

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
    from kubectl_nodefail.common import attestation
    from kubectl_nodefail.common.errors import BadOptionError

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
            with _sigterm_interrupts(confirm):
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
                    from kubectl_nodefail.remediate.plan import narrow

                    plan = narrow(saved, plan)
                if cluster is not None:
                    _check_permissions(cluster, plan, confirm)
                if plan_out:
                    text = render.as_json(render.plan_document(plan, summary(plan)))
                    _write("--plan-out", plan_out, lambda fh: fh.write(text))
                if confirm and log_file:
                    log = _open_trail(log_file)
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
    import shlex

    from kubectl_nodefail.common import attestation
    from kubectl_nodefail.remediate.plan import MUTATING
    from kubectl_nodefail.render import pastable

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


def _write(flag: str, path: str, write: Callable[[IO[str]], object], private: bool = False) -> None:
    """Write an output file checked by outpath.check_writable; a change since (the folder
    removed, the disk full) is still one line and exit 2. `private`: mode 0600, made so
    before anything is written (an existing file of ours too)."""
    from kubectl_nodefail.common.errors import BadOptionError, short

    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        fd = os.open(path, flags, 0o600) if private else os.open(path, flags, 0o666)
        if private:  # O_CREAT's mode is only for a new file; someone else's keeps theirs
            with contextlib.suppress(OSError):
                os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            write(fh)
    except OSError as exc:
        raise BadOptionError(f"{flag}: cannot write {path}: {short(exc)}") from exc


def _open_trail(path: str) -> IO[str]:
    """The --log-file, opened to append before the first change (closed by the caller)."""
    from kubectl_nodefail.common.errors import BadOptionError, short

    try:
        return open(path, "a", encoding="utf-8")
    except OSError as exc:
        raise BadOptionError(f"--log-file: cannot write {path}: {short(exc)}") from exc


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
    from dataclasses import replace

    from kubectl_nodefail.analysis.diagnose import diagnose as run_diagnosis
    from kubectl_nodefail.remediate.plan import binding_problem, check_attestations, make_plan
    from kubectl_nodefail.snapshot import model as snapshot

    if from_file:
        snap = snapshot.load_dump(from_file)
    else:
        try:
            snap = gathered(cluster, only_nodes=opts.only_nodes, progress=_progress(verbose))
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
    live = _binding(cluster, snap, from_file, bind, uids)
    if replay is not None:
        from kubectl_nodefail.common.errors import PlanMismatch

        path, saved = replay
        problem = binding_problem(saved, live)
        if problem:
            raise PlanMismatch(
                f"plan {path}: {problem}; refused before any change", hint="nothing was done"
            )
    check_attestations(snap, opts.attested)  # every typed one, in the plan's scope or not
    report = run_diagnosis(snap, snap.captured_at, only_nodes=opts.only_nodes)
    by = _attester(cluster) if opts.attested else ""
    plan = make_plan(
        report, replace(opts, server_minor=snap.server_minor, node_uids=uids, attested_by=by)
    )
    planned = {s.node for s in plan.steps}
    plan.bound_to = replace(live, node_uids={n: u for n, u in uids.items() if n in planned})
    return plan


def _binding(cluster: Any, snap: Any, from_file: str | None, required: bool, uids: Any) -> Any:
    """The identity of the cluster a plan is computed from (plan.Binding)."""
    from kubectl_nodefail.common.errors import ApiError, AuthError, NotFound
    from kubectl_nodefail.remediate.plan import Binding
    from kubectl_nodefail.snapshot.model import format_time

    captured = format_time(snap.captured_at) if snap.captured_at else ""
    if cluster is None:
        return Binding(captured_at=captured, source=from_file or "", node_uids=dict(uids))
    try:
        uid = str(cluster.get_object("/api/v1/namespaces/kube-system")["metadata"]["uid"])
    except (AuthError, ApiError) as exc:  # shown as "not read" unless the plan is saved
        if required and not isinstance(exc, (AuthError, NotFound)):
            raise
        if required:
            raise AuthError(
                f"cannot bind the plan to its cluster: reading namespace kube-system (its UID "
                f"is the cluster's identity) failed: {exc.message}",
                hint="grant get on namespaces/kube-system: see `kubectl nodefail rbac diagnose`",
            ) from exc
        uid = ""
    return Binding(cluster.context, cluster.host, uid, captured, "", dict(uids))


def _attester(cluster: Any) -> str:
    """Who types the attestations, as the API server names them (for the plan's record)."""
    if cluster is None:
        return "unknown user (plan from a dump)"
    from kubectl_nodefail.remediate.actions import whoami

    return str(whoami(cluster))


def _check_permissions(cluster: Any, plan: Any, confirm: bool) -> None:
    """RBAC preflight: refuse before any change (--confirm) or say what is missing (plan)."""
    from kubectl_nodefail.common.errors import AuthError
    from kubectl_nodefail.remediate.actions import preflight

    missing = preflight(cluster, plan) if plan.mutating else []
    if missing and confirm:
        raise AuthError(
            "refused before any change: missing permissions: " + "; ".join(missing),
            hint="bind the roles `kubectl nodefail rbac remediate` prints",
        )
    if missing:
        plan.refusals.append("missing permissions: " + "; ".join(missing))


@contextlib.contextmanager
def _sigterm_interrupts(on: bool) -> Iterator[None]:
    """While remediate --confirm reads and plans, SIGTERM stops it as Ctrl-C does (exit 6,
    nothing done) instead of killing it mid-way."""
    import signal

    if not on:
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _execute(cluster: Any, plan: Any, log: Any, wait_timeout: float, verbose: int) -> bool:
    """Run the plan; SIGINT/SIGTERM stop it after the request in flight (see actions.Stop).
    True when a signal stopped it (the run's exit code is then 6, whatever ran).

    The overall deadline bounds reading and planning, not the execution: a hard stop could land
    between a request and its trail line. From here each request is bounded by
    --request-timeout, the waits by --wait-timeout, and SIGINT/SIGTERM stop it cleanly.
    """
    from kubectl_nodefail.remediate.actions import Executor, Stop, restate, whoami

    ctx = click.get_current_context(silent=True)
    watchdog = ctx.meta.get(WATCHDOG_KEY) if ctx is not None else None
    if watchdog is not None:
        watchdog.cancel()
    cluster.deadline = None
    with Stop().on_signals(lambda text: click.echo(text, err=True)) as stop:
        executor = Executor(cluster, whoami(cluster), log, wait_timeout, _progress(verbose))
        executor.stop = stop
        try:
            executor.run(plan)
            restate(cluster, plan)  # "these stay stuck" only from the state now
        finally:
            progress.done()
        return stop.is_set()
