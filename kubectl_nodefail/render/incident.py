"""Joins the diagnosis with the incident timelines (analysis/timeline.py) for the outputs:
`timeline` on every failed node in JSON/YAML, the node's or pod's own entry for
`--explain NAME -o json`, the text under `--explain NODE`, and `-o markdown`."""

from __future__ import annotations

from typing import Any

from kubectl_nodefail.analysis import timeline
from kubectl_nodefail.snapshot.model import Snapshot

Obj = dict[str, Any]


def report_with_timelines(report: Any, snap: Snapshot) -> Obj:
    """render.report_data, with each reported node's timeline under nodes[].timeline."""
    from kubectl_nodefail.render import render

    data: Obj = render.report_data(report)
    for node in data.get("nodes") or []:
        entries = timeline.node_timeline(snap, node["name"])
        node["timeline"] = timeline.to_data(entries, snap.captured_at)
    return data


def explained(data: Obj, name: str) -> Obj:
    """The JSON entry of one node, or of one pod as NAMESPACE/NAME (or a unique NAME)."""
    import click

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
    from kubectl_nodefail.common.errors import explain_not_found

    raise explain_not_found(
        [n["name"] for n in data.get("nodes") or []],
        [f"{p['namespace']}/{p['name']}" for p in data.get("pods") or []],
        name,
    )


def timeline_text(snap: Snapshot, name: str) -> str:
    """The timeline under `--explain NODE`; nothing for a pod."""
    from kubectl_nodefail.render import timeline_view

    if snap.node(name) is None:
        return ""
    entries = timeline.node_timeline(snap, name)
    untimed = timeline.untimed_taints(snap, name)
    return "\n" + timeline_view.text(entries, snap.captured_at, untimed)


def markdown(data: Obj, snap: Snapshot) -> str:
    from kubectl_nodefail.render import markdown as md

    if data.get("kind") in ("NodeExplanation", "PodExplanation"):
        raise_unsupported()
    names = [n["name"] for n in data.get("nodes") or [] if n.get("status") != "Ready"]
    timelines = {n: timeline.node_timeline(snap, n) for n in names}
    return md.render(data, timelines, snap.captured_at)


def raise_unsupported() -> None:
    import click

    raise click.UsageError("-o markdown shows the whole diagnosis: use it without --explain")
