"""The human types the attestation: no output hands over a pre-filled
`--node-shutdown-confirmed NODE`, a command carrying `--confirm`, or a raw mutating kubectl
command that would bypass remediate's gates (lock, re-checks, trail).

Scans every rendered output (diagnose: table, wide, JSON, YAML, Markdown, --explain of every
node and pod; remediate's plan: table, wide, JSON, YAML, for every strategy, with and without
an attestation) over every recorded fixture.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.cli.diagnose_run import _explain
from kubectl_nodefail.cli.main import main
from kubectl_nodefail.common import attestation
from kubectl_nodefail.remediate.actions import summary
from kubectl_nodefail.remediate.plan import STRATEGIES, Options, make_plan
from kubectl_nodefail.render import incident, render
from kubectl_nodefail.snapshot.model import load_dump
from tests.unit.conftest import FIXTURES, attestable

ALL_FIXTURES = sorted(FIXTURES.rglob("*.json"))
PLACEHOLDER = re.escape(attestation.PLACEHOLDER)
PREFILLED = re.compile(rf"--node-shutdown-confirmed(?![\s=]+{PLACEHOLDER})")
# `--confirm` may be named in prose telling the human to type it ("add --confirm"), never
# inside a command line someone could paste.
CONFIRM_IN_COMMAND = re.compile(r"(?<!add )--confirm\b")
MUTATING_KUBECTL = re.compile(
    r"\bkubectl\s+(taint|delete|patch|drain|cordon|uncordon|edit|replace|apply|annotate"
    r"|label|scale|create|set)\b"
)


def violations(text: str) -> list[str]:
    """What in `text` hands over the gate. Table cells and wrapped prose are joined first, so
    a flag broken at its hyphen ('--node-' / 'shutdown-confirmed') is still seen."""
    flat = re.sub(r"-\n\s+", "-", text)
    flat = re.sub(r"\s+", " ", flat)
    found = []
    for rule, pattern in (
        ("pre-filled attestation", PREFILLED),
        ("--confirm in a command", CONFIRM_IN_COMMAND),
        ("raw mutating kubectl command", MUTATING_KUBECTL),
    ):
        for match in pattern.finditer(flat):
            found.append(f"{rule}: ...{flat[max(0, match.start() - 60) : match.end() + 60]}...")
    return found


def test_the_scan_can_fail() -> None:
    """The rules catch what the issue found in the old output (a check that cannot fail is
    no check)."""
    bad = [
        "$ kubectl nodefail remediate worker-1 --node-shutdown-confirmed worker-1",
        "$ kubectl nodefail remediate worker-1 --node-shutdown-confirmed worker-1 --confirm",
        "re-run with --node-\n     shutdown-confirmed worker-1",
        "$ kubectl nodefail remediate worker-1 --confirm",
        "$ kubectl taint node worker-1 node.kubernetes.io/out-of-service=nodeshutdown:NoExecute",
        "$ kubectl delete pod -n shop db-0 --grace-period=0 --force",
        "$ kubectl delete node worker-1",
    ]
    for text in bad:
        assert violations(text), text
    fine = (
        f"$ kubectl nodefail remediate worker-1 --node-shutdown-confirmed {attestation.PLACEHOLDER}"
        "\nPlan (DRY RUN: nothing was changed; add --confirm to run it)\n"
        "$ kubectl describe node worker-1"
    )
    assert violations(fine) == []


def _outputs(path: Path) -> dict[str, str]:
    """Every rendering of one fixture, by name."""
    snap = load_dump(str(path))
    report = diagnose(snap, snap.captured_at, timelines=True)
    data = render.report_data(report)
    out = {
        "table": render.table(report),
        "wide": render.table(report, wide=True),
        "json": render.as_json(data),
        "yaml": render.as_yaml(data),
        "markdown": incident.markdown(data, report),
    }
    names = [n.name for n in report.nodes] + [f"{p.namespace}/{p.name}" for p in report.pods]
    for name in names:
        out[f"explain {name}"] = _explain(report, name) + incident.timeline_text(report, name)
        out[f"explain {name} json"] = render.as_json(incident.explained(data, name))
    failed = attestable(report)
    for strategy in STRATEGIES:
        for attested in ((), tuple(failed)):
            opts = Options(
                strategy=strategy,
                attested=attested,
                max_nodes=max(1, len(failed)),
                server_minor=snap.server_minor,
            )
            plan = make_plan(report, opts)
            key = f"plan {strategy} attested={bool(attested)}"
            out[key] = render.plan_table(plan, False)
            out[f"{key} wide"] = render.plan_table(plan, False, wide=True)
            doc = render.plan_document(plan, summary(plan))
            out[f"{key} json"] = render.as_json(doc)
            out[f"{key} yaml"] = render.as_yaml(doc)
            steps = [replace(s, result="refused", detail=s.gate) for s in plan.steps]
            out[f"{key} result"] = render.plan_table(replace(plan, steps=steps), True, wide=True)
    return out


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_no_output_hands_over_the_gate(path: Path) -> None:
    outputs = _outputs(path)
    found = {name: v for name, text in outputs.items() if (v := violations(text))}
    assert not found, "\n".join(f"{name}: {v[0]}" for name, v in found.items())


def test_the_scan_sees_suggestions() -> None:
    """The fixtures do carry attestation suggestions, shown with the placeholder: the scan
    above reads real suggestions, not empty outputs."""
    seen = 0
    for path in ALL_FIXTURES[:12]:
        for text in _outputs(path).values():
            seen += text.count(attestation.flag())
    assert seen > 20


def test_the_cli_outputs_hand_over_nothing(tmp_path: Path) -> None:
    """The same through the command line, stdout and stderr, for the demo snapshot."""
    after = str(FIXTURES / "node-down-after-eviction.json")
    runs = [
        ["diagnose", "--from-file", after, "-o", fmt]
        for fmt in ("table", "wide", "json", "yaml", "markdown")
    ]
    runs += [["diagnose", "--from-file", after, "--explain", n] for n in ("flaky-a", "db-0")]
    runs += [["remediate", "--from-file", after, "-o", fmt] for fmt in ("table", "wide", "json")]
    runs += [["remediate", "--from-file", after, "--plan-out", str(tmp_path / "p.json")]]
    for args in runs:
        result = CliRunner().invoke(main, args)
        assert result.exit_code in (3, 4), (args, result.output)
        assert violations(result.stdout + result.stderr) == [], args


def test_a_pasted_suggestion_does_not_run(tmp_path: Path) -> None:
    """The placeholder cannot be pasted and work: the shell refuses the line before running
    anything (a kubectl on PATH that records being called is never called), and quoted, as a
    literal, remediate rejects it with one line."""
    snap = load_dump(str(FIXTURES / "node-down-after-eviction.json"))
    table = render.table(diagnose(snap, snap.captured_at))
    commands = [line.strip()[2:] for line in table.splitlines() if line.strip().startswith("$ ")]
    assert any(attestation.PLACEHOLDER in c for c in commands)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    called = tmp_path / "called"
    fake = bindir / "kubectl"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {called}\n')
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}
    for command in commands:
        if attestation.PLACEHOLDER not in command:
            continue
        for line in (command, command + " --confirm"):
            proc = subprocess.run(
                ["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True
            )
            assert proc.returncode != 0, line
            assert not called.exists(), f"{line!r} ran kubectl: {called.read_text()}"
    result = CliRunner().invoke(
        main,
        [
            "remediate",
            "--from-file",
            str(FIXTURES / "node-down-after-eviction.json"),
            "--node-shutdown-confirmed",
            attestation.PLACEHOLDER,
        ],
    )
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "placeholder" in result.stderr
    assert result.stdout == ""
