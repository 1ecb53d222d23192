"""Many clusters (contexts.py): grouping, the worst exit code, and unreachable clusters kept in
their own group. Two real control planes, one stopped: tests/e2e/test_contexts.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_nodefail.cli.main import main
from kubectl_nodefail.cluster.contexts import ClusterResult, render, worst


@pytest.mark.parametrize(
    ("codes", "expected"),
    [([0, 0], 0), ([0, 3], 3), ([3, 11, 0], 11), ([12, 11], 12), ([], 0), ([3, 10], 10)],
)
def test_worst_exit_code(codes: list[int], expected: int) -> None:
    assert worst(codes) == expected


def test_groups_keep_each_cluster_and_its_error() -> None:
    results = [
        ClusterResult("prod", 3, "1 of 6 nodes not Ready\n"),
        ClusterResult("lab", 11, error="cannot reach the API server at https://x"),
    ]
    text = render(results, "table")
    assert text.index("=== context prod: problems found (exit 3)") < text.index(
        "=== context lab: error (exit 11)"
    )
    assert "cannot reach the API server at https://x" in text
    data = json.loads(render([ClusterResult("prod", 0, '{"summary": {}}'), results[1]], "json"))
    assert data["kind"] == "MultiClusterDiagnosis" and data["exitCode"] == 11
    assert data["clusters"][0] == {"context": "prod", "exitCode": 0, "diagnosis": {"summary": {}}}
    assert data["clusters"][1]["error"].startswith("cannot reach")


def _kubeconfig(tmp_path: Path, names: list[str]) -> Path:
    clusters = "".join(
        f"- name: {n}\n  cluster: {{server: 'https://127.0.0.1:{9 + i}'}}\n"
        for i, n in enumerate(names)
    )
    contexts = "".join(f"- name: {n}\n  context: {{cluster: {n}, user: u}}\n" for n in names)
    path = tmp_path / "kubeconfig"
    path.write_text(
        f"apiVersion: v1\nkind: Config\ncurrent-context: {names[0]}\nclusters:\n{clusters}"
        f"contexts:\n{contexts}users:\n- name: u\n  user: {{token: t}}\n"
    )
    return path


def test_all_contexts_unreachable_clusters_are_reported_per_group(tmp_path: Path) -> None:
    kubeconfig = _kubeconfig(tmp_path, ["east", "west"])
    result = CliRunner().invoke(
        main, ["diagnose", "--all-contexts", "--kubeconfig", str(kubeconfig)]
    )
    assert result.exit_code == 11
    assert "=== context east: error (exit 11)" in result.stdout
    assert "=== context west: error (exit 11)" in result.stdout
    result = CliRunner().invoke(
        main,
        ["diagnose", "--context", "west", "--context", "nope", "--kubeconfig", str(kubeconfig)],
    )
    assert result.exit_code == 11  # the unknown context (10) is an error too; 11 is higher
    assert "=== context nope: error (exit 10)" in result.stdout


def test_several_contexts_exclude_single_cluster_modes(tmp_path: Path) -> None:
    kubeconfig = str(_kubeconfig(tmp_path, ["east", "west"]))
    for extra in (["--watch"], ["--explain", "x"], ["-o", "markdown"], ["--context", "east"]):
        result = CliRunner().invoke(
            main, ["diagnose", "--all-contexts", "--kubeconfig", kubeconfig, *extra]
        )
        assert result.exit_code == 2, (extra, result.stdout)
