"""The benchmark's report: issue 19's targets read from a run's rows, both cluster shapes kept
apart, and the time-against-stuck-pods plot (no timing here: the figures are made up)."""

from __future__ import annotations

from typing import Any

from bench import plot

MB = 2**20


def _row(tool: str, wall: float, failed: int, spread: bool, rss: int = 0, stuck: int = 0) -> dict:
    return {
        "tool": tool,
        "wall": wall,
        "rss": rss,
        "requests": 0,
        "bytes": 0,
        "nodes": 5000,
        "pods": 60000,
        "extra": 0,
        "spread": spread,
        "failed": failed,
        "diagnosis": {"stuckPods": stuck, "nodesNotReady": failed},
    }


def _cluster(failed: int, spread: bool, diag: float, rss_mb: int, stuck: int) -> list[dict]:
    return [
        _row(plot.DIAG, diag, failed, spread, rss_mb * MB, stuck),
        _row(plot.NODES_K, 5.0, failed, spread),
        _row(plot.FLOOR, 2.0, failed, spread),
        _row(plot.FILE, stuck / 10000 * 0.8, failed, spread, 100 * MB, stuck),
    ]


def _table(rows: list[dict[str, Any]]) -> list[list[str]]:
    return [
        [c.strip() for c in line.strip("|").split("|")]
        for line in plot.targets(rows)
        if line.startswith("| ") and not line.startswith("| cluster")
    ]


def test_each_target_is_judged_on_its_own_cluster_and_shape() -> None:
    rows = _cluster(20, False, 4.0, 200, 250) + _cluster(20, True, 6.0, 260, 250)
    rows += _cluster(200, True, 5.0, 290, 2500)
    table = _table(rows)
    by = {(r[0], r[1]): r for r in table}
    base, spread = "5,000 nodes / 60,000 pods", "5,000 nodes / 60,000 pods, owners spread"
    assert by[(f"{base}, 20 failed", "diagnose / kubectl get nodes")][2:] == [
        "0.80x",
        "<= 1x",
        "yes",
    ]
    assert by[(f"{spread}, 20 failed", "diagnose / kubectl get nodes")][2:] == [
        "1.20x",
        "<= 1x",
        "**no**",
    ]
    assert by[(f"{spread}, 20 failed", "diagnose peak RSS")][2:] == [
        "260 MB",
        "<= 250 MB",
        "**no**",
    ]
    assert by[(f"{spread}, 200 failed", "diagnose / floor")][2:] == ["2.50x", "<= 2x", "**no**"]
    assert by[(f"{spread}, 200 failed", "diagnose peak RSS")][-1] == "yes"
    # 1,000 failed and the default shape's 200 were not measured: no row claims them.
    assert not [r for r in table if "1000 failed" in r[0] or r[0] == f"{base}, 200 failed"]
    per_file = [r for r in table if r[1] == "--from-file per 10,000 stuck pods"]
    assert [r[0] for r in per_file] == [f"{spread}, 200 failed (2,500 stuck pods)"]
    assert per_file[0][2:] == ["0.80 s", "<= 1 s", "yes"]


def test_no_rows_no_section() -> None:
    assert plot.targets([]) == []


def test_the_stuck_pods_plot_has_a_line_per_tool_and_shape() -> None:
    rows = []
    for failed, stuck in ((20, 250), (200, 2500), (1000, 12000)):
        rows += _cluster(failed, False, stuck / 1000, 200, stuck)
        rows += _cluster(failed, True, stuck / 800, 200, stuck)
    svg = plot.stuck_svg(rows)
    assert svg.count("<polyline") == 4  # diagnose and --from-file, two shapes
    assert svg.count("<circle") == 12
    assert "owners spread" in svg and "12,000 -> " in svg
