"""The benchmark's table (markdown) and plot (an SVG written by hand: no plotting dependency)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

MB = 2**20


def summary(rows: list[dict[str, Any]]) -> list[str]:
    """One line per cluster and failed-node count: every tool side by side."""
    lines = [
        "| cluster | failed | diagnose | dump | --from-file | kubectl get nodes | "
        "kubectl get pods -A | floor | diagnose / get nodes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (cluster, failed), group in _groups(rows).items():
        by = {r["tool"]: r for r in group}

        def cell(tool: str, req: bool = False, by: dict[str, Any] = by) -> str:
            r = by.get(tool)
            if not r:
                return "not run"
            text = f"{r['wall']:.1f} s"
            if r["rss"]:
                text += f", {r['rss'] / MB:,.0f} MB"
            if req and r["requests"]:
                text += f", {r['requests']} req, {r['bytes'] / MB:.1f} MiB"
            return text

        diag, kn = by.get("diagnose -o json"), by.get("kubectl get nodes -o json")
        ratio = f"{diag['wall'] / kn['wall']:.2f}x" if diag and kn else "-"
        lines.append(
            f"| {cluster} | {failed} | {cell('diagnose -o json', True)} | "
            f"{cell('dump')} | {cell('--from-file')} | {cell('kubectl get nodes -o json')} | "
            f"{cell('kubectl get pods -A -o json')} | {cell('floor (raw reads)')} | {ratio} |"
        )
    return lines


def markdown(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        f"Machine: {meta['machine']}; started {meta['started']}; load average at the end "
        f"{', '.join(f'{x:.1f}' for x in meta['load'])}; "
        f"orjson {'installed' if meta['orjson'] else 'absent'}.",
        "",
        *summary(rows),
        "",
        "All measurements:",
        "",
        "| cluster | failed | tool | wall (median) | peak RSS | requests | bytes read |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        size = cluster_label(r) if r["nodes"] else "-"
        rss = f"{r['rss'] / MB:,.0f} MB" if r["rss"] else "-"
        req = f"{r['requests']:,}" if r["requests"] else "-"
        size_read = f"{r['bytes'] / MB:,.1f} MiB" if r["bytes"] else "-"
        wall = f"{r['wall']:.3f} s" if r["wall"] < 1 else f"{r['wall']:.2f} s"
        failed = r["failed"] or "-"
        lines.append(f"| {size} | {failed} | {r['tool']} | {wall} | {rss} | {req} | {size_read} |")
    lines += ["", "Ratios (same run):", ""]
    groups = _groups(rows)
    for (cluster, failed), group in groups.items():
        by = {r["tool"]: r for r in group}
        diag, nodes_k = by.get("diagnose -o json"), by.get("kubectl get nodes -o json")
        if not diag or not nodes_k:
            continue
        parts = [f"diagnose / kubectl get nodes = {diag['wall'] / nodes_k['wall']:.2f}x"]
        if "dump" in by:
            parts.append(f"dump / diagnose = {by['dump']['wall'] / diag['wall']:.2f}x")
        if "floor (raw reads)" in by:
            parts.append(
                f"diagnose / floor = {diag['wall'] / by['floor (raw reads)']['wall']:.2f}x"
            )
        s = diag.get("diagnosis") or {}
        parts.append(
            f"found {s.get('nodesNotReady', '?')} NotReady nodes, "
            f"{s.get('stuckPods', '?')} stuck pods"
        )
        lines.append(f"- {cluster}, {failed} failed: " + "; ".join(parts))
    lines += healthy_growth(rows)
    lines += targets(rows)
    return "\n".join(lines) + "\n"


# Issue 19's targets, each on the rows of one (nodes, pods, failed) in either shape: what is
# compared, the limit, and how the figure is taken from the same run's rows of that cluster.
DIAG, NODES_K, FLOOR, FILE = (
    "diagnose -o json",
    "kubectl get nodes -o json",
    "floor (raw reads)",
    "--from-file",
)
TARGETS: list[tuple[tuple[int, int, int], str, float, str]] = [
    ((5000, 60000, 20), "diagnose / kubectl get nodes", 1.0, "x"),
    ((5000, 60000, 20), "diagnose peak RSS", 250, "MB"),
    ((5000, 60000, 200), "diagnose / floor", 2.0, "x"),
    ((5000, 60000, 200), "diagnose / kubectl get nodes", 1.0, "x"),
    ((5000, 60000, 200), "diagnose peak RSS", 300, "MB"),
    ((5000, 60000, 1000), "diagnose / floor", 3.0, "x"),
    ((5000, 60000, 1000), "diagnose peak RSS", 500, "MB"),
]


def _measure(what: str, by: dict[str, dict[str, Any]]) -> float | None:
    """One target's figure from a group's rows (tool -> row), None when a row is missing."""
    diag = by.get(DIAG)
    if diag is None:
        return None
    if what == "diagnose peak RSS":
        return float(diag["rss"]) / MB if diag["rss"] else None
    other = by.get(NODES_K if what.endswith("get nodes") else FLOOR)
    return diag["wall"] / other["wall"] if other and other["wall"] else None


def targets(rows: list[dict[str, Any]]) -> list[str]:
    """Issue 19's targets against this run's rows (a target whose cluster was not measured is
    left out), plus `--from-file` per 10,000 stuck pods and the 10-node diagnose wherever
    measured."""
    groups: dict[tuple[int, int, int, bool], dict[str, dict[str, Any]]] = {}
    for r in rows:
        if r["nodes"] and not r.get("extra"):
            key = (r["nodes"], r["pods"], r["failed"], bool(r.get("spread")))
            groups.setdefault(key, {})[r["tool"]] = r
    out = []
    for (nodes, pods, failed), what, limit, unit in TARGETS:
        for spread in (False, True):
            by = groups.get((nodes, pods, failed, spread)) or {}
            value = _measure(what, by)
            if value is None:
                continue
            label = cluster_label({**by[DIAG], "extra": 0})
            out.append(_target_row(f"{label}, {failed} failed", what, value, limit, unit))
    for (_, _, failed, _), by in sorted(groups.items()):
        stuck = ((by.get(DIAG) or {}).get("diagnosis") or {}).get("stuckPods")
        if FILE in by and isinstance(stuck, int) and stuck >= 1000:
            per = by[FILE]["wall"] / (stuck / 10000)
            label = cluster_label({**by[FILE], "extra": 0})
            out.append(
                _target_row(
                    f"{label}, {failed} failed ({stuck:,} stuck pods)",
                    "--from-file per 10,000 stuck pods",
                    per,
                    1.0,
                    "s",
                )
            )
    small = groups.get((10, 100, 1, False), {}).get(DIAG)
    if small:
        out.append(
            _target_row("10 nodes / 100 pods, 1 failed", "diagnose", small["wall"], 0.35, "s")
        )
    if not out:
        return []
    return [
        "",
        "Issue 19's targets (this run's rows; ratios within the same cluster and failed set):",
        "",
        "| cluster | measure | this run | target | met |",
        "|---|---|---|---|---|",
        *out,
    ]


def _target_row(where: str, what: str, value: float, limit: float, unit: str) -> str:
    shown = (
        f"{value:,.0f} {unit}" if unit == "MB" else f"{value:.2f}{'' if unit == 'x' else ' '}{unit}"
    )
    bound = (
        f"<= {limit:,.0f} {unit}"
        if unit == "MB"
        else f"<= {limit:g}{'' if unit == 'x' else ' '}{unit}"
    )
    return f"| {where} | {what} | {shown} | {bound} | {'yes' if value <= limit else '**no**'} |"


def stuck_svg(rows: list[dict[str, Any]]) -> str:
    """Wall time against the stuck pods found, one line per tool and cluster shape (diagnose
    live and `--from-file` of its dump): a straight line is a cost that grows with the outage."""
    series: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        stuck = (r.get("diagnosis") or {}).get("stuckPods")
        if r["nodes"] < 1000 or r["tool"] not in (DIAG, FILE) or not isinstance(stuck, int):
            continue
        name = f"{r['tool']}, {cluster_label(r)}"
        series.setdefault(name, []).append((float(stuck), float(r["wall"])))
    return lines_svg(
        sorted(series.items()),
        "stuck pods found",
        "wall time (median), s",
        "make bench: time against stuck pods (clusters of 1,000 nodes or more)",
    )


def healthy_growth(rows: list[dict[str, Any]]) -> list[str]:
    """For each `N x P + E` cluster measured next to its `N x P` base (same failed count): what
    the extra healthy pods cost diagnose, the failed nodes and their pods being the same."""
    diag = {
        (r["nodes"], r["pods"] - r.get("extra", 0), r.get("extra", 0), r["failed"]): r
        for r in rows
        if r["nodes"] and r["tool"] == "diagnose -o json" and not r.get("spread")
    }
    out = []
    for (nodes, base, extra, failed), grown in diag.items():
        before = diag.get((nodes, base, 0, failed))
        if not extra or not before:
            continue
        out.append(
            f"- healthy pods {base:,} -> {base + extra:,} on {nodes:,} nodes, the same {failed} "
            f"failed nodes and their pods: diagnose {grown['wall'] / before['wall']:.2f}x time, "
            f"{grown['rss'] / max(before['rss'], 1):.2f}x peak RSS, "
            f"{grown['requests']} vs {before['requests']} requests"
        )
    return ["", "Healthy pods added at a fixed failed set (same run):", "", *out] if out else []


def cluster_label(r: dict[str, Any], short: bool = False) -> str:
    """`5,000 nodes / 60,000 pods`, with extra pods `... + 60,000 on healthy nodes`."""
    extra = r.get("extra", 0)
    if short:
        nodes, pods = r["nodes"], r["pods"] - extra
        text = f"{nodes // 1000}kn/" if nodes >= 1000 else f"{nodes}n/"
        text += f"{pods // 1000}kp" if pods >= 1000 else f"{pods}p"
        return text + (f"+{extra // 1000}k" if extra else "") + ("/s" if r.get("spread") else "")
    text = f"{r['nodes']:,} nodes / {r['pods'] - extra:,} pods"
    text += f" + {extra:,} on healthy nodes" if extra else ""
    return text + (", owners spread" if r.get("spread") else "")


def _groups(rows: list[dict[str, Any]]) -> dict[tuple[str, int], list[dict[str, Any]]]:
    out: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in rows:
        if r["nodes"]:
            out.setdefault((cluster_label(r), r["failed"]), []).append(r)
    return out


COLORS = {
    "diagnose -o json": "#1f77b4",
    "dump": "#ff7f0e",
    "--from-file": "#2ca02c",
    "kubectl get nodes -o json": "#7f7f7f",
    "kubectl get pods -A -o json": "#d62728",
    "floor (raw reads)": "#17becf",
}


def svg(rows: list[dict[str, Any]]) -> str:
    """Two panels of grouped bars (wall time, peak RSS), one group per cluster size and
    failed-node count. Bars past the axis (kubectl get pods) are clipped and labelled."""
    groups = [g for g in _groups(rows).items() if g[1][0]["nodes"] >= 100]
    tools = [t for t in COLORS if any(r["tool"] == t for _, g in groups for r in g)]
    width, panel_h, left, top = 140 + 90 * max(1, len(groups)), 260, 60, 30
    height = top + 2 * (panel_h + 70) + 20 * len(tools)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    for p, (metric, unit, scale) in enumerate((("wall", "s", 1.0), ("rss", "MB", MB))):
        y0 = top + p * (panel_h + 70)
        values = [
            r[metric] / scale
            for _, g in groups
            for r in g
            if r["tool"] != "kubectl get pods -A -o json" and r[metric]
        ]
        vmax = max(values or [1.0]) * 1.15
        out.append(
            f'<text x="{left}" y="{y0 - 8}" font-weight="bold">'
            f"{'wall time (median)' if metric == 'wall' else 'peak RSS'} [{unit}]</text>"
        )
        out.append(
            f'<line x1="{left}" y1="{y0 + panel_h}" x2="{width - 20}" y2="{y0 + panel_h}" '
            'stroke="black"/>'
        )
        for k in range(5):
            v = vmax * k / 4
            y = y0 + panel_h - panel_h * k / 4
            out.append(
                f'<text x="{left - 5}" y="{y + 4:.0f}" text-anchor="end">{v:,.0f}</text>'
                f'<line x1="{left}" y1="{y:.0f}" x2="{width - 20}" y2="{y:.0f}" stroke="#ddd"/>'
            )
        for gi, ((_, failed), group) in enumerate(groups):
            gx = left + 10 + gi * 90
            by = {r["tool"]: r for r in group}
            bw = 80 / max(1, len(tools))
            for ti, tool in enumerate(tools):
                r = by.get(tool)
                if not r or not r[metric]:
                    continue
                v = r[metric] / scale
                h = min(panel_h, panel_h * v / vmax)
                x = gx + ti * bw
                out.append(
                    f'<rect x="{x:.1f}" y="{y0 + panel_h - h:.1f}" width="{bw - 1:.1f}" '
                    f'height="{h:.1f}" fill="{COLORS[tool]}"><title>{escape(tool)}: '
                    f"{v:,.2f} {unit}</title></rect>"
                )
                if v > vmax:
                    out.append(f'<text x="{x:.1f}" y="{y0 - 1}" font-size="9">{v:,.0f}</text>')
            label = cluster_label(group[0], short=True)
            out.append(
                f'<text x="{gx + 40}" y="{y0 + panel_h + 14}" text-anchor="middle">{label}</text>'
                f'<text x="{gx + 40}" y="{y0 + panel_h + 27}" text-anchor="middle">'
                f"{failed} failed</text>"
            )
    ly = top + 2 * (panel_h + 70) - 20
    for ti, tool in enumerate(tools):
        out.append(
            f'<rect x="{left}" y="{ly + 20 * ti}" width="12" height="12" fill="{COLORS[tool]}"/>'
            f'<text x="{left + 18}" y="{ly + 20 * ti + 10}">{escape(tool)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


LINE_COLORS = ["#1f77b4", "#2ca02c", "#ff7f0e", "#d62728", "#9467bd", "#8c564b", "#17becf"]


def lines_svg(
    series: list[tuple[str, list[tuple[float, float]]]], x_label: str, y_label: str, title: str
) -> str:
    """An x-y plot (lines with dots, both axes from 0), one line per named series: what grows
    linearly shows as a straight line."""
    width, height, left, top, right, bottom = 640, 400, 70, 40, 20, 60
    points = [p for _, pts in series for p in pts]
    xmax = max((x for x, _ in points), default=1.0) * 1.05 or 1.0
    ymax = max((y for _, y in points), default=1.0) * 1.1 or 1.0
    plot_w, plot_h = width - left - right, height - top - bottom
    legend_h = 16 * len(series)

    def at(x: float, y: float) -> tuple[float, float]:
        return left + plot_w * x / xmax, top + plot_h - plot_h * y / ymax

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height + legend_h}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height + legend_h}" fill="white"/>',
        f'<text x="{left}" y="{top - 16}" font-weight="bold">{escape(title)}</text>',
    ]
    for k in range(6):
        y = top + plot_h - plot_h * k / 5
        x = left + plot_w * k / 5
        out.append(
            f'<line x1="{left}" y1="{y:.0f}" x2="{left + plot_w}" y2="{y:.0f}" stroke="#ddd"/>'
            f'<text x="{left - 5}" y="{y + 4:.0f}" text-anchor="end">{ymax * k / 5:,.1f}</text>'
            f'<text x="{x:.0f}" y="{top + plot_h + 16}" text-anchor="middle">'
            f"{xmax * k / 5:,.0f}</text>"
        )
    out.append(
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" '
        'stroke="black"/>'
        f'<text x="{left + plot_w / 2:.0f}" y="{top + plot_h + 36}" text-anchor="middle">'
        f"{escape(x_label)}</text>"
        f'<text x="14" y="{top + plot_h / 2:.0f}" transform="rotate(-90 14 '
        f'{top + plot_h / 2:.0f})" text-anchor="middle">{escape(y_label)}</text>'
    )
    for n, (name, pts) in enumerate(series):
        color = LINE_COLORS[n % len(LINE_COLORS)]
        xy = [at(x, y) for x, y in sorted(pts)]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        for (x, y), (px, py) in zip(sorted(pts), xy):
            out.append(
                f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{color}"><title>'
                f"{escape(name)}: {x:,.0f} -> {y:,.2f}</title></circle>"
            )
        ly = height + 16 * n - 6
        out.append(
            f'<rect x="{left}" y="{ly - 9}" width="12" height="12" fill="{color}"/>'
            f'<text x="{left + 18}" y="{ly + 1}">{escape(name)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


if __name__ == "__main__":  # regenerate results.md and plot.svg from a results.json
    src = Path(sys.argv[1] if len(sys.argv) > 1 else "bench/results/results.json")
    doc = json.loads(src.read_text())
    (src.parent / "results.md").write_text(markdown(doc["rows"], doc["meta"]))
    (src.parent / "plot.svg").write_text(svg(doc["rows"]))
    (src.parent / "stuck.svg").write_text(stuck_svg(doc["rows"]))
