"""Many clusters at once: `diagnose --context A --context B` or `--all-contexts`.

Each context is diagnosed on its own thread with its own connection; results are printed
grouped by context, in the order asked (the kubeconfig's order for --all-contexts). A cluster
that cannot be read (unreachable, credentials rejected) is reported in its own group with its
error and exit code, without hiding the others. The exit code is the worst across clusters:
any error (10-14, the highest number) over problems found (3) over nothing wrong (0).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubectl_nodefail.cluster.kube import thread_pool
from kubectl_nodefail.cluster.kubeconfig import load
from kubectl_nodefail.common.errors import ConfigError, NodefailError
from kubectl_nodefail.term import printable

WORKERS = 4


@dataclass
class ClusterResult:
    context: str
    code: int
    text: str = ""  # the diagnosis as the chosen output renders it
    error: str = ""  # the one-line error when the cluster could not be diagnosed


def kubeconfig_contexts(kubeconfig: str | None) -> list[str]:
    """The context names of the merged kubeconfig, in kubectl's order."""
    merged = load(kubeconfig)
    names = merged.context_names()
    if not names:
        raise ConfigError(f"no contexts in {merged.label}")
    return names


def run_many(contexts: list[str], one: Callable[[str], tuple[str, int]]) -> list[ClusterResult]:
    """Diagnose every context concurrently; an error stays in its cluster's result."""

    def attempt(context: str) -> ClusterResult:
        try:
            text, code = one(context)
            return ClusterResult(context, int(code), text)
        except NodefailError as exc:
            return ClusterResult(context, int(exc.exit_code), error=exc.line())

    with thread_pool(min(WORKERS, len(contexts))) as pool:
        return list(pool.map(attempt, contexts))


def worst(codes: list[int]) -> int:
    """Errors (highest number first) over problems found (3) over nothing wrong (0)."""
    return max(codes, key=lambda c: (0 if c == 0 else 1 if c == 3 else 2, c), default=0)


def render(results: list[ClusterResult], output: str) -> str:
    if output in ("json", "yaml"):
        clusters = []
        for r in results:
            entry: dict[str, Any] = {"context": r.context, "exitCode": r.code}
            if r.error:
                entry["error"] = r.error
            else:
                entry["diagnosis"] = json.loads(r.text) if output == "json" else r.text
            clusters.append(entry)
        data = {
            "apiVersion": "kubectl-nodefail/v1",
            "kind": "MultiClusterDiagnosis",
            "exitCode": worst([r.code for r in results]),
            "clusters": clusters,
        }
        if output == "json":
            return json.dumps(data, indent=2) + "\n"
        import yaml

        for entry in clusters:
            if "diagnosis" in entry:
                entry["diagnosis"] = yaml.safe_load(entry["diagnosis"])
        return str(yaml.safe_dump(data, sort_keys=False))
    out = []
    for r in results:  # the text is escaped by its renderer; the name and error here
        head = f"=== context {printable.escape(r.context)}: "
        if r.error:
            out.append(f"{head}error (exit {r.code})\n{printable.text(r.error)}\n")
        else:
            state = "problems found" if r.code == 3 else "nothing wrong" if r.code == 0 else ""
            out.append(f"{head}{state} (exit {r.code})\n{r.text}")
    return "\n".join(out)
