"""`diagnose -o markdown`: the diagnosis and each failed node's incident timeline as Markdown,
to paste into an incident channel or a postmortem.

Built from the same data as `-o json` (render.report_data plus each node's timeline), so the
two never say different things."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubectl_nodefail.analysis.timeline import Entry
from kubectl_nodefail.render import timeline_view
from kubectl_nodefail.term import printable

Obj = dict[str, Any]


def _cell(value: Any) -> str:
    text = " ".join(str("" if value is None else value).split())
    return text.replace("|", "\\|") or "-"


def _table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out


def _owner(pod: Obj) -> str:
    """The top of the owner chain, as KIND/NAME."""
    chain = pod.get("ownerChain") or []
    return f"{chain[-1]['kind']}/{chain[-1]['name']}" if chain else "(none)"


def render(data: Obj, timelines: dict[str, list[Entry]], now: datetime) -> str:
    """The Markdown; every string from the cluster escaped first (printable.py)."""
    data, timelines = printable.clean((data, timelines))
    summary = data["summary"]
    nodes: list[Obj] = data.get("nodes") or []
    pods: list[Obj] = data.get("pods") or []
    source = data.get("source") or ""
    version = data.get("serverVersion") or "unknown version"
    failed = [n["name"] for n in nodes if n.get("status") != "Ready"]
    title = (
        f"Node failure: {', '.join(failed)}"
        if failed
        else ("Cluster problems" if summary.get("problems") else "No node failure")
    )
    out = [
        f"## {title}",
        "",
        f"_{source}, Kubernetes {version}, captured {data.get('capturedAt')}; "
        "by `kubectl nodefail diagnose -o markdown`_",
        "",
        f"**{summary.get('nodesNotReady', 0)} of {data.get('nodesTotal', '?')} nodes not Ready, "
        f"{summary.get('stuckPods', 0)} stuck pods.**",
    ]
    if not nodes and not pods:
        out += ["", "All nodes Ready and no pod stuck terminating. Nothing to do."]
        return "\n".join(out) + "\n"
    if nodes:
        out += ["", "### Nodes", ""]
        out += _table(
            ["node", "status", "zone", "lease renewed", "cause", "action"],
            [
                [
                    f"`{n['name']}`",
                    n.get("status"),
                    n.get("zone"),
                    n.get("leaseRenewed"),
                    (n.get("cause") or {}).get("summary"),
                    (n.get("action") or {}).get("summary"),
                ]
                for n in nodes
            ],
        )
    covered = [(n["name"], c) for n in nodes for c in n.get("automation") or []]
    if covered:
        out += ["", "### Who else acts on these nodes", ""]
        out += [f"- `{name}` ({c.get('state')}): {c.get('summary')}" for name, c in covered]
    for zone in data.get("zones") or []:
        if zone.get("notReady"):
            out += ["", f"Zone `{zone['zone']}`: {zone['state']}, evictions {zone['eviction']}."]
    for line in data.get("cluster") or []:
        out += ["", f"> {line}"]
    if pods:
        out += ["", "### Stuck pods", ""]
        out += _table(
            ["pod", "status", "node", "owner", "replacement", "action"],
            [
                [
                    f"`{p['namespace']}/{p['name']}`",
                    p.get("kubectlStatus"),
                    p.get("node"),
                    _owner(p),
                    (p.get("replacement") or {}).get("summary"),
                    (p.get("action") or {}).get("code"),
                ]
                for p in pods
            ],
        )
    for name in timelines:
        table = timeline_view.markdown(timelines[name], now).rstrip("\n")
        out += ["", f"### Timeline of `{name}`", "", table]
    commands = [
        c
        for n in nodes
        for c in ((n.get("action") or {}).get("remediate"), (n.get("action") or {}).get("kubectl"))
        if c
    ]
    if commands:
        out += ["", "### Suggested", "", "```sh", *dict.fromkeys(commands), "```"]
    return "\n".join(out).rstrip("\n") + "\n"
