"""Shell completion: click's scripts for bash, zsh and fish (for the `kubectl-nodefail`
command), kubectl's own plugin completion (`kubectl nodefail <TAB>`, kubectl 1.26+, through an
executable named kubectl_complete-nodefail on PATH), and values read from the cluster: node
names, namespaces, and NAMESPACE/POD for --explain.

Completion must never get in the way: every cluster read has a short timeout and any failure
(no kubeconfig, cluster down, forbidden) completes nothing rather than printing an error.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import click
from click.shell_completion import (
    CompletionItem,
    ShellComplete,
    add_completion_class,
    get_completion_class,
)

COMPLETE_VAR = "_KUBECTL_NODEFAIL_COMPLETE"
COMMAND = "kubectl-nodefail"
SHELLS = ("bash", "zsh", "fish", "kubectl")
TIMEOUT = 3.0
# cobra's ShellCompDirective values, which kubectl reads from a plugin's completer
DIRECTIVE_DEFAULT = 0
DIRECTIVE_NO_FILE = 4


def _params(ctx: click.Context) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    c: click.Context | None = ctx
    while c is not None:
        merged = {**c.params, **merged}
        c = c.parent
    return merged


def _read(ctx: click.Context, fetch: Callable[[Any], list[str]]) -> list[str]:
    """Names from the cluster the command line points at, or none on any failure."""
    params = _params(ctx)
    try:
        from kubectl_nodefail.cluster.kube import Cluster
        from kubectl_nodefail.cluster.kubeconfig import Overrides

        context = params.get("context")
        if isinstance(context, (tuple, list)):  # diagnose's --context is repeatable
            context = context[0] if context else None
        fields = Overrides.__dataclass_fields__
        given = {k: v for k, v in params.items() if k in fields and v is not None}
        given["impersonate_groups"] = tuple(given.get("impersonate_groups") or ())
        overrides = Overrides(**given)
        cluster = Cluster(params.get("kubeconfig"), context, TIMEOUT, overrides=overrides)
    except Exception:
        return []
    try:
        return fetch(cluster)
    except Exception:
        return []
    finally:
        cluster.close()


def _names(items: list[dict[str, Any]]) -> list[str]:
    return sorted(str(i.get("metadata", {}).get("name", "")) for i in items)


def nodes(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Node names not yet on the command line."""
    given = set(_params(ctx).get("nodes") or ())
    names = _read(ctx, lambda c: _names(c.list_metadata("/api/v1/nodes")))
    return [CompletionItem(n) for n in names if n.startswith(incomplete) and n not in given]


def namespaces(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    names = _read(ctx, lambda c: _names(c.list_metadata("/api/v1/namespaces")))
    return [CompletionItem(n) for n in names if n.startswith(incomplete)]


def explain_targets(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """--explain takes a node or NAMESPACE/POD: nodes and namespaces first, then the pods of
    the namespace typed before the slash (one namespace's pods, never the whole cluster's)."""
    if "/" in incomplete:
        ns = incomplete.split("/", 1)[0]
        pods = _read(ctx, lambda c: _names(c.list_metadata(f"/api/v1/namespaces/{quote(ns)}/pods")))
        return [CompletionItem(f"{ns}/{p}") for p in pods if f"{ns}/{p}".startswith(incomplete)]

    def both(c: Any) -> list[str]:
        found = _names(c.list_metadata("/api/v1/nodes"))
        return found + [f"{n}/" for n in _names(c.list_metadata("/api/v1/namespaces"))]

    return [CompletionItem(n) for n in _read(ctx, both) if n.startswith(incomplete)]


def contexts(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Context names of the kubeconfig (no cluster read)."""
    try:
        from kubectl_nodefail.cluster.kubeconfig import context_names

        names = sorted(context_names(_params(ctx).get("kubeconfig") or None))
    except Exception:
        return []
    return [CompletionItem(n) for n in names if n.startswith(incomplete)]


KUBECTL_SCRIPT = """\
#!/bin/sh
# kubectl's completion for `kubectl nodefail` (kubectl 1.26+ runs this file, found on PATH as
# kubectl_complete-nodefail, with the words typed after "kubectl nodefail").
%(complete_var)s=kubectl_complete exec %(prog_name)s "$@"
"""


class KubectlComplete(ShellComplete):
    """kubectl's plugin completion protocol (cobra's): the words after the plugin's name as
    arguments, the last one being completed; answers one value per line (TAB, description)
    and a last line ":DIRECTIVE"."""

    name = "kubectl"
    source_template = KUBECTL_SCRIPT

    def source_vars(self) -> Any:
        found = super().source_vars()
        found["prog_name"] = COMMAND
        return found

    def get_completion_args(self) -> tuple[list[str], str]:
        words = sys.argv[1:]
        if not words:
            return [], ""
        return words[:-1], words[-1]

    def format_completion(self, item: CompletionItem) -> str:
        return f"{item.value}\t{item.help}" if item.help else item.value

    def complete(self) -> str:
        args, incomplete = self.get_completion_args()
        items = self.get_completions(args, incomplete)
        files = any(i.type in ("file", "dir") for i in items)
        values = [self.format_completion(i) for i in items if i.type == "plain"]
        directive = DIRECTIVE_DEFAULT if files else DIRECTIVE_NO_FILE
        return "\n".join([*values, f":{directive}"])


add_completion_class(KubectlComplete)


def script(cli: click.Command, shell: str) -> str:
    """The completion script for `shell`, for the command kubectl-nodefail (never for
    `kubectl` itself, whose own completion it must not replace)."""
    cls = get_completion_class(shell)
    if cls is None:
        raise click.BadParameter(f"unknown shell {shell!r}")
    return cls(cli, {}, COMMAND, COMPLETE_VAR).source()


def in_completion() -> bool:
    return bool(os.environ.get(COMPLETE_VAR))
