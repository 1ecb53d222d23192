"""The options several commands share: kubectl's connection flags (their kubeconfig.Overrides
kept in the click context), the duration type of --request-timeout and --deadline, diagnose's
repeatable --context, and the Connection a command's flags describe, which makes its Cluster."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import wraps
from typing import Any, NamedTuple

import click

from kubectl_nodefail.cli import completion
from kubectl_nodefail.cli.running import DEADLINE_KEY, DEFAULT_DEADLINE
from kubectl_nodefail.term import printable, progress

OUTPUTS = ["table", "wide", "json", "yaml"]
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|h|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
OVERRIDES_KEY = "kubectl_nodefail.overrides"  # kubectl's connection flags, in ctx.meta


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


class Connection(NamedTuple):
    kubeconfig: str | None
    context: str | None
    request_timeout: float
    verbose: int
    overrides: Any = None  # kubeconfig.Overrides; None: those of the running command's flags

    def cluster(self) -> Any:
        # the API client's wing: never imported for a --help or `version --client`
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
        # the kubeconfig loader (and YAML) when a command runs: every --help reads this module
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
