"""The outage view: at hundreds to a thousand failed nodes and thousands of stuck pods the default
table is one screen (60 lines) that names every blocked StatefulSet and counts what the report
counts; a failure below the threshold keeps one row per node and pod.

Reports are made big two ways, both from recordings of the real control plane: a generated
snapshot (tests/support/outage_snapshot.py) diagnosed for real, and — for the thousands, where the
analysis would take minutes — the findings of a generated report copied under new names
(the view only counts findings, so copies test its layout at any size in milliseconds).
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import re
import string
from functools import cache
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kubectl_nodefail.analysis import outage, summary
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.findings import OwnerLink, Report
from kubectl_nodefail.cli.main import main
from kubectl_nodefail.render import render
from kubectl_nodefail.snapshot.model import Snapshot
from tests.support.outage_snapshot import Shape, dump, outage_snapshot
from tests.unit.conftest import FIXTURES, report_of

LINES, COLUMNS = 60, 120
SETTINGS = settings(
    max_examples=12,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),  # a shrink would re-render for minutes
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@cache
def generated(failed: int) -> tuple[Snapshot, Report]:
    snap = outage_snapshot(Shape(failed=failed))
    return snap, diagnose(snap, snap.captured_at)


def view_of(report: Report, snap: Snapshot) -> str:
    assert outage.is_outage(report)
    return render.table(report, outage_view=outage.summarise(report))


def blocked_statefulsets(report: Report) -> set[str]:
    return {
        f"{p.namespace}/{p.owner_chain[-1].name}"
        for p in report.pods
        if p.controller == "statefulset" and p.replacement.state == "blocked" and p.owner_chain
    }


def check_screen(text: str, report: Report) -> None:
    """Fits the screen, names every blocked StatefulSet, and its numbers are the report's."""
    lines = text.splitlines()
    assert len(lines) <= LINES, text
    assert max(len(line) for line in lines) <= COLUMNS, text
    for name in blocked_statefulsets(report):
        namespace, sts = name.split("/")
        row = rf"^{re.escape(namespace)}\s+StatefulSet/{re.escape(sts)}\s"
        named = rf"[ ,]{re.escape(name)}(,|$)"
        assert re.search(f"({row}|{named})", text, re.M), (name, text)
    c = summary.counts(report)
    listed = len(report.nodes)
    assert f"NODES: {listed} node" in text
    assert f"WORKLOADS: {len(report.pods)} stuck pod" in text
    assert f"({c.nodes_not_ready} nodes not Ready, {len(report.pods)} stuck pod" in text
    # The node rows and the 'more' line add up to every listed node; the owner rows and
    # theirs to every stuck pod.
    nodes_part = text.split("NODES:")[1].split("WORKLOADS:")[0]
    node_rows = re.findall(r"^\S+\s+\S+\s+(\d+)\s+\d+\s", nodes_part, re.M)
    nodes_more = re.search(r"^\.\.\. and \d+ more groups? \((\d+) nodes?\)", nodes_part, re.M)
    assert sum(map(int, node_rows)) + (int(nodes_more.group(1)) if nodes_more else 0) == listed
    section = text.split("WORKLOADS:")[1].split("FIRST ACTIONS")[0]
    owner = r"(?:\S+/\S+|\(none\)|Node \(static\))"  # summary.owner_of
    owner_rows = re.findall(rf"^\S+\s+{owner}\s+(\d+)\s", section, re.M)
    owners_more = re.search(r"^\.\.\. and \d+ more owners? \((\d+) stuck pods?", section, re.M)
    assert sum(map(int, owner_rows)) + (int(owners_more.group(1)) if owners_more else 0) == len(
        report.pods
    ), text
    commands = [line.split("$ ", 1)[1].split() for line in lines if line.startswith("    $ ")]
    assert commands and all("--confirm" not in words for words in commands), text
    for words in commands:  # an attestation only as a placeholder the user must replace
        for flag, value in itertools.pairwise(words):
            assert flag != "--node-shutdown-confirmed" or value.startswith("<"), words
    assert "-o wide" in text


def test_a_generated_outage_diagnosed_for_real_fits_one_screen() -> None:
    snap, report = generated(40)
    c = summary.counts(report)
    assert c.nodes_not_ready == 40 and len(report.pods) > 400
    assert blocked_statefulsets(report)  # the StatefulSets are there to be named
    text = view_of(report, snap)
    check_screen(text, report)
    # zone and cause groups: the fully disrupted zone first, the shut-down machines apart
    assert re.search(
        r"^e2e/zone-c\s+kubelet-stopped\s+4\s+44\s+\S+\s+proceeding \(FullDisruption\)$", text, re.M
    ), text
    assert re.search(r"^e2e/zone-b\s+machine-shutdown\s+2\s", text, re.M), text
    # serving: the Deployment whose pods were replaced has all its replicas Ready elsewhere
    assert re.search(r"^scenario-down\s+Deployment/web-g0\s+10\s+10/10\s", text, re.M), text


def test_the_command_line_shows_the_outage_view_and_wide_every_row(tmp_path: Path) -> None:
    path = tmp_path / "outage.json"
    path.write_text(json.dumps(dump(Shape(failed=12))))
    table = CliRunner().invoke(main, ["diagnose", "--from-file", str(path)])
    assert table.exit_code == 3, table.output
    assert "This is the outage view" in table.stdout
    wide = CliRunner().invoke(main, ["diagnose", "--from-file", str(path), "-o", "wide"])
    assert "outage view" not in wide.stdout
    _, report = generated(12)
    for p in report.pods:
        assert f"{p.namespace}/{p.name} " in wide.stdout
    data = json.loads(
        CliRunner().invoke(main, ["diagnose", "--from-file", str(path), "-o", "json"]).stdout
    )
    assert "outage" not in data and len(data["pods"]) == len(report.pods)


def test_below_the_threshold_the_table_is_unchanged() -> None:
    """A single failed node, however many pods: one row each, as before."""
    for path in sorted(FIXTURES.glob("*.json")):
        report = report_of(path.stem)
        if sum(1 for n in report.nodes if n.failed) <= 1:
            assert not outage.is_outage(report), path.stem
    # one node full of pods (kubelet --max-pods 110 by default) keeps a row per pod
    one = report_of("node-down-after-eviction")
    on_it = [p for p in one.pods if p.node_failed]
    full = [copy.copy(on_it[i % len(on_it)]) for i in range(110)]
    for i, p in enumerate(full):
        p.name = f"{p.name}-{i}"
    assert not outage.is_outage(dataclasses.replace(one, pods=full))
    fixture = str(FIXTURES / "node-down-after-eviction.json")
    shown = CliRunner().invoke(main, ["diagnose", "--from-file", fixture]).stdout
    assert shown == render.table(report_of("node-down-after-eviction"))


def scaled(report: Report, snap: Snapshot, nodes: int, zones: int, sts: int) -> Report:
    """The report's findings copied under new names until `nodes` nodes fail, over `zones`
    zones, with `sts` distinct StatefulSets among the copied StatefulSet pods (their owners,
    renamed, are not in `snap`: no SERVING count)."""
    failed = [n for n in report.nodes if n.failed]
    new_nodes, new_pods = [], []
    by_node = {n.name: [p for p in report.pods if p.node == n.name] for n in failed}
    sts_pods = 0
    for i in range(nodes):
        template = failed[i % len(failed)]
        name = f"n{i:05d}"
        node = copy.copy(template)
        node.name, node.zone = name, f"zone-{i % zones}"
        new_nodes.append(node)
        for p in by_node[template.name]:
            chain = list(p.owner_chain)
            if p.controller == "statefulset" and chain:
                if sts == 0:
                    continue
                chain[-1] = OwnerLink("StatefulSet", f"db-{sts_pods % sts:04d}")
                sts_pods += 1
            elif chain:
                chain[-1] = OwnerLink(chain[-1].kind, f"{chain[-1].name}-{i // 10}")
            pod = copy.copy(p)
            pod.name, pod.node, pod.owner_chain = f"{p.name}-{i}", name, chain
            new_pods.append(pod)
    zone_findings = [dataclasses.replace(report.zones[0], zone=f"zone-{z}") for z in range(zones)]
    return dataclasses.replace(
        report,
        nodes=new_nodes,
        pods=new_pods,
        zones=zone_findings,
        nodes_total=nodes * 2,
        nodes_not_ready_total=nodes,
        workloads=outage.owner_groups(new_pods, snap, report.captured_at),
    )


@SETTINGS
@given(
    nodes=st.integers(min_value=11, max_value=1000),
    zones=st.integers(min_value=1, max_value=12),
    sts=st.integers(min_value=0, max_value=120),
)
def test_up_to_a_thousand_failed_nodes_fit_one_screen(nodes: int, zones: int, sts: int) -> None:
    snap, report = generated(12)
    big = scaled(report, snap, nodes, zones, sts)
    assert sum(1 for n in big.nodes if n.failed) == nodes
    check_screen(view_of(big, snap), big)


def test_a_thousand_nodes_and_twelve_thousand_pods() -> None:
    snap, report = generated(12)
    big = scaled(report, snap, 1000, 3, 40)
    assert len(big.pods) >= 11_000
    check_screen(view_of(big, snap), big)


NAME_CHARS = string.ascii_lowercase + string.digits


@settings(max_examples=60, deadline=None, database=None)
@given(
    node=st.builds(
        lambda head, tail: head + tail,
        st.sampled_from(NAME_CHARS),
        st.text(alphabet=NAME_CHARS + ".-", max_size=20),
    ),
    placeholder=st.booleans(),
    equals=st.booleans(),
)
def test_a_printed_command_never_confirms_nor_attests_a_real_node(
    node: str, placeholder: bool, equals: bool
) -> None:
    value = "<NODE-YOU-VERIFIED-IS-POWERED-OFF>" if placeholder else node
    flag = f"--node-shutdown-confirmed={value}" if equals else f"--node-shutdown-confirmed {value}"
    text = render.printable(f"kubectl nodefail remediate {node} {flag} --confirm")
    assert "--confirm" not in text.split()
    assert ("--node-shutdown-confirmed" in text) == placeholder
    assert text.startswith(f"kubectl nodefail remediate {node}")
    assert render.printable(f"kubectl taint node {node} x:NoExecute") == (
        f"kubectl taint node {node} x:NoExecute"
    )


def test_the_view_says_what_a_printed_command_left_out() -> None:
    shown = render._left_out(
        "kubectl nodefail remediate n1 --confirm", "kubectl nodefail remediate n1"
    )
    assert shown == " (--confirm left out: it prints the plan)"
    full = "kubectl nodefail remediate n1 --node-shutdown-confirmed n1 --confirm"
    assert render._left_out(full, render.printable(full)) == (
        " (the attestation and --confirm left out: it prints the plan)"
    )
    kept = "kubectl taint node n1 node.kubernetes.io/out-of-service=nodeshutdown:NoExecute"
    assert render._left_out(kept, render.printable(kept)) == ""
