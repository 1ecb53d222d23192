"""The diagnosis with its incident timelines, as the outputs that show them want it: a node's or
pod's own entry for `--explain NAME -o json`, the timeline under `--explain NODE`, and
`-o markdown`. The timelines themselves are the analysis' (Report.timelines, computed once by
diagnose(timelines=True)); the JSON places them (render/data.py, nodes[].timeline)."""

from __future__ import annotations

from typing import Any

import click

from kubectl_nodefail.analysis.findings import Report
from kubectl_nodefail.common.errors import explain_not_found
from kubectl_nodefail.render import markdown as md
from kubectl_nodefail.render import timeline_view

Obj = dict[str, Any]


def explained(data: Obj, name: str) -> Obj:
    """The JSON entry of one node, or of one pod as NAMESPACE/NAME (or a unique NAME)."""
    for node in data.get("nodes") or []:
        if node["name"] == name:
            return {"apiVersion": data["apiVersion"], "kind": "NodeExplanation", **node}
    pods = [
        p
        for p in data.get("pods") or []
        if f"{p['namespace']}/{p['name']}" == name or (p["name"] == name and "/" not in name)
    ]
    if len(pods) > 1:
        raise click.UsageError(f"{name!r} is ambiguous: name it as NAMESPACE/NAME")
    if pods:
        return {"apiVersion": data["apiVersion"], "kind": "PodExplanation", **pods[0]}
    raise explain_not_found(
        [n["name"] for n in data.get("nodes") or []],
        [f"{p['namespace']}/{p['name']}" for p in data.get("pods") or []],
        name,
    )


def timeline_text(report: Report, name: str) -> str:
    """The timeline under `--explain NODE`; nothing for a pod."""
    found = (report.timelines or {}).get(name)
    if found is None:
        return ""
    return "\n" + timeline_view.text(found.entries, report.captured_at, found.untimed_taints)


def markdown(data: Obj, report: Report) -> str:
    """`-o markdown`: the diagnosis and each not-Ready node's timeline."""
    if data.get("kind") in ("NodeExplanation", "PodExplanation"):
        raise_unsupported()
    timelines = report.timelines or {}
    names = [n["name"] for n in data.get("nodes") or [] if n.get("status") != "Ready"]
    return md.render(data, {n: timelines[n].entries for n in names}, report.captured_at)


def raise_unsupported() -> None:
    raise click.UsageError("-o markdown shows the whole diagnosis: use it without --explain")
