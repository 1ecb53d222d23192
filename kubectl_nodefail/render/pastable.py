"""Printed commands that act on the cluster that was diagnosed (issue 36 item 1).

A suggestion is pasted at 3 a.m., often in another shell whose current context is not the one
the diagnosis read: `kubectl nodefail remediate flaky-a1 ...` without `--context` plans (and with
--confirm acts) on whatever that context is. So every command the diagnosis suggests carries the
connection flags the user gave, shell-quoted, right after its subcommand: the kubeconfig, the
context (each section's own under --all-contexts), and kubectl's overrides that change which
cluster or identity is used. Never a token: a bearer token is a secret, and pasted lines end up
in shell histories and incident channels (the user types --token again, or relies on the
kubeconfig).
"""

from __future__ import annotations

import shlex
from dataclasses import replace

from kubectl_nodefail.analysis.findings import Action, Report
from kubectl_nodefail.cluster.kubeconfig import Overrides

# (Overrides field, flag) in the order kubectl's --help lists them
_VALUED = (
    ("cluster", "--cluster"),
    ("user", "--user"),
    ("server", "--server"),
    ("impersonate", "--as"),
    ("impersonate_uid", "--as-uid"),
    ("certificate_authority", "--certificate-authority"),
    ("client_certificate", "--client-certificate"),
    ("client_key", "--client-key"),
    ("tls_server_name", "--tls-server-name"),
)
_SWITCHES = (
    ("insecure_skip_tls_verify", "--insecure-skip-tls-verify"),
    ("disable_compression", "--disable-compression"),
)


def connection_args(
    kubeconfig: str | None, context: str | None, overrides: Overrides | None
) -> list[str]:
    """The flags that make a pasted command reach the same cluster as this run, as words."""
    args: list[str] = []
    if kubeconfig:
        args += ["--kubeconfig", kubeconfig]
    if context:
        args += ["--context", context]
    if overrides is None:
        return args
    for field, flag in _VALUED:
        value = getattr(overrides, field)
        if value:
            args += [flag, value]
    for group in overrides.impersonate_groups:
        args += ["--as-group", group]
    for field, flag in _SWITCHES:
        if getattr(overrides, field):
            args.append(flag)
    return args


_PREFIXES = ("kubectl nodefail remediate", "kubectl nodefail diagnose", "kubectl")


def carrying(command: str, args: list[str]) -> str:
    """`command` with the connection flags inserted after its (sub)command, shell-quoted."""
    if not command or not args:
        return command
    words = " ".join(shlex.quote(a) for a in args)
    for prefix in _PREFIXES:
        if command == prefix or command.startswith(prefix + " "):
            return f"{prefix} {words}{command[len(prefix) :]}"
    return command


def _action(action: Action | None, args: list[str]) -> Action | None:
    if action is None:
        return None
    return replace(
        action,
        kubectl=carrying(action.kubectl, args),
        remediate=carrying(action.remediate, args),
    )


def carry(report: Report, args: list[str]) -> None:
    """Every suggested command of the report made to carry `args` (in place)."""
    if not args:
        return
    for node in report.nodes:
        node.action = _action(node.action, args)
    for pod in report.pods:
        pod.action = _action(pod.action, args) or pod.action
