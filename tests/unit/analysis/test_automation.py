"""Remediation automation (analysis/automation.py): the readers of its settings, property-tested
against their definitions, and the diagnosis and plan of snapshots recorded from the real control
plane (tests/e2e/test_automation.py, `make record`): covered, scheduled, stopped, acting; the
plan stands back unless --despite-automation, which unlocks nothing else."""

from __future__ import annotations

import copy
import json
import math
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kubectl_nodefail.analysis import automation
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.timeline import node_timeline
from kubectl_nodefail.remediate.plan import Options, make_plan
from kubectl_nodefail.render import render
from kubectl_nodefail.snapshot.model import from_items, load_dump, parse_time
from tests.oracles import premises
from tests.unit.conftest import FIXTURES

UNITS = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}


def _version(doc: dict) -> str | None:  # type: ignore[type-arg]
    """The dump's serverVersion: what the analysis' version sentences rest on."""
    return doc.get("serverVersion")


@given(st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(sorted(UNITS))), min_size=1))
def test_go_durations_sum_their_parts(parts: list[tuple[int, str]]) -> None:
    text = "".join(f"{n}{unit}" for n, unit in parts)
    assert automation.go_duration(text) == pytest.approx(sum(n * UNITS[u] for n, u in parts))


@given(st.text(max_size=12))
def test_anything_else_is_not_a_duration(text: str) -> None:
    seconds = automation.go_duration(text)
    if seconds is not None:  # then it really is one: digits and units only
        assert text == "0" or text.lstrip("+-")[-1] in "smhn"


@given(st.integers(0, 100), st.integers(0, 5_000), st.booleans())
def test_percentages_scale_as_apimachinery_does(percent: int, total: int, up: bool) -> None:
    exact = percent * total / 100
    want = math.ceil(exact) if up else math.floor(exact)
    assert automation.scaled(f"{percent}%", total, up) == want
    assert automation.scaled(percent, total, up) == percent  # an int is taken as is


@given(
    st.dictionaries(st.sampled_from("abcd"), st.sampled_from("xyz"), max_size=4),
    st.dictionaries(st.sampled_from("abcd"), st.sampled_from("xyz"), max_size=3),
)
def test_match_labels_select_exactly_the_superset(labels: dict, wanted: dict) -> None:
    selector = {"matchLabels": wanted}
    assert automation.selects(selector, labels) == (wanted.items() <= labels.items())
    exists = {"matchExpressions": [{"key": k, "operator": "Exists"} for k in wanted]}
    assert automation.selects(exists, labels) == (set(wanted) <= set(labels))
    absent = {"matchExpressions": [{"key": k, "operator": "DoesNotExist"} for k in wanted]}
    assert automation.selects(absent, labels) == (not set(wanted) & set(labels))


RECORDED = {
    "automation-mhc-scheduled.json": ("auto-mhc", {"scheduled", "due"}),
    "automation-mhc-stopped.json": ("auto-mhc", {"stopped"}),
    "automation-mhc-v1beta2-scheduled.json": ("auto-mhc2", {"scheduled", "due"}),
    "automation-mhc-v1beta2-stopped.json": ("auto-mhc2", {"stopped"}),
    "automation-nhc-scheduled.json": ("auto-nhc", {"scheduled", "due"}),
    "automation-nhc-stopped.json": ("auto-nhc", {"stopped"}),
    "automation-karpenter-watching.json": ("auto-karp", {"watching"}),
    "automation-karpenter-acting.json": ("auto-karp", {"acting"}),
    "automation-karpenter-scheduled.json": ("auto-karp", {"scheduled"}),
    "automation-karpenter-due.json": ("auto-karp", {"scheduled", "due"}),
    "automation-karpenter-overdue.json": ("auto-karp", {"overdue"}),
    "automation-karpenter-stopped.json": ("auto-karp", {"stopped"}),
    "automation-karpenter-blocked-event.json": ("auto-karp", {"stopped"}),
    "automation-ca-scheduled.json": ("auto-ca", {"scheduled", "due"}),
    "automation-cloud-shutdown.json": ("auto-cloud", {"watching"}),
}


def _as_read(doc: dict[str, Any], captured: Any) -> Any:
    """The snapshot of a generated document as a live read holds it: every object cut to the
    dump schema (cli.checked), so a field the schema drops is dropped here too."""
    from kubectl_nodefail.cli.live import checked

    return checked(
        from_items(copy.deepcopy(doc["items"]), captured, source="g", server_version=_version(doc))
    )


def _recorded(name: str):  # type: ignore[no-untyped-def]
    path = FIXTURES / name
    assert path.exists(), "record it: NODEFAIL_RECORD=1 pytest tests/e2e/test_automation.py"
    return load_dump(str(path))


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_recorded_coverage_state_and_plan(name: str) -> None:
    node, states = RECORDED[name]
    snap = _recorded(name)
    report = diagnose(snap, snap.captured_at)
    finding = next(n for n in report.nodes if n.name == node)
    (cov,) = finding.automation
    assert cov.state in states
    assert cov.summary == "; ".join(c.text for c in cov.claims)
    assert all(c.because for c in cov.claims)  # no sentence without its premises
    # (the Karpenter short-circuit's second dead node is alone in its zone: that zone's
    # disruption gate is another matter, overridden here)
    opts = Options(
        attested=(node,),
        only_nodes=(node,),
        server_minor=snap.server_minor,
        allow_disruption=True,
    )
    step = next(s for s in make_plan(report, opts).steps if s.target == f"node/{node}")
    if cov.state in ("stopped", "watching", "overdue"):
        # stopped: it replaces nothing; watching: no time to race is known; overdue: it did
        # not act when due, so it is not waited for
        assert step.allowed
        assert finding.action is not None and "covers it" not in finding.action.summary
        return
    assert cov.at is not None
    # scheduled: within the horizon it stands back; beyond it, it does not
    reach = (cov.at - snap.captured_at).total_seconds()
    if reach > opts.automation_horizon:  # acts after the plan would end: not raced
        assert cov.state == "scheduled" and step.allowed
        opts = Options(**{**opts.__dict__, "automation_horizon": reach + 1})
        step = next(s for s in make_plan(report, opts).steps if s.target == step.target)
    assert not step.allowed and "stands back" in step.gate
    if cov.state == "scheduled":
        short = Options(**{**opts.__dict__, "automation_horizon": max(0.0, reach - 1)})
        later = next(s for s in make_plan(report, short).steps if s.target == step.target)
        assert later.allowed
    despite = Options(**{**opts.__dict__, "despite_automation": True})
    forced = next(s for s in make_plan(report, despite).steps if s.target == step.target)
    assert forced.allowed and "despite" in forced.gate
    # the override unlocks nothing else: without an attestation the step stays refused
    bare = Options(**{**despite.__dict__, "attested": ()})
    refused = next(s for s in make_plan(report, bare).steps if s.target == step.target)
    assert not refused.allowed
    assert finding.action is not None
    if cov.assumed and cov.state == "scheduled":
        # a time resting on a guess (Karpenter's gate, off by default) is not waited for
        assert "covers it" not in finding.action.summary
    else:
        assert finding.action.code == "wait"
    assert "--despite-automation" not in finding.action.remediate


def test_a_time_is_stated_in_the_scheduled_claim() -> None:
    snap = _recorded("automation-mhc-scheduled.json")
    report = diagnose(snap, snap.captured_at)
    (cov,) = next(n for n in report.nodes if n.name == "auto-mhc").automation
    if cov.state == "scheduled":
        assert cov.at is not None and cov.at - snap.captured_at < timedelta(minutes=2)
        assert automation.stands_back(cov, snap.captured_at, 120)
        assert not automation.stands_back(cov, cov.at - timedelta(seconds=200), 120)
    assert "MachineHealthCheck capi-system-e2e/workers-unhealthy" in cov.summary


# --- generated neighbours of the recorded NodeHealthCheck: the short-circuit, the phases, the
# timeouts; every premise re-read from the raw document, and the stand-back as the state says.


def _nhc_neighbour(
    doc: dict[str, Any],
    limit: tuple[str, str],
    observed: int,
    healthy: int,
    phase: str,
    seconds: int,
    started: bool,
) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    nhc = next(i for i in out["items"] if i.get("kind") == "NodeHealthCheck")
    spec, status = nhc["spec"], nhc["status"]
    spec.pop("minHealthy", None)
    spec[limit[0]] = limit[1]
    for rule in spec["unhealthyConditions"]:
        rule["duration"] = f"{seconds}s"
    status.update(observedNodes=observed, healthyNodes=healthy, phase=phase)
    if started:
        status["unhealthyNodes"] = [
            {
                "name": "auto-nhc",
                "remediations": [
                    {
                        "resource": {"kind": "SelfNodeRemediation", "name": "auto-nhc"},
                        "started": doc["capturedAt"],
                    }
                ],
            }
        ]
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    limit=st.tuples(
        st.sampled_from(["minHealthy", "maxUnhealthy"]),
        st.one_of(st.integers(0, 100).map(lambda p: f"{p}%"), st.integers(0, 6).map(str)),
    ),
    observed=st.integers(1, 6),
    healthy=st.integers(0, 6),
    phase=st.sampled_from(["Enabled", "Paused", "Disabled", "Remediating"]),
    seconds=st.integers(1, 3600),
    started=st.booleans(),
)
def test_generated_node_health_checks_state_only_what_holds(
    limit: tuple[str, str],
    observed: int,
    healthy: int,
    phase: str,
    seconds: int,
    started: bool,
) -> None:
    raw = json.loads((FIXTURES / "automation-nhc-scheduled.json").read_text())
    doc = _nhc_neighbour(raw, limit, observed, min(healthy, observed), phase, seconds, started)
    captured = parse_time(doc["capturedAt"])
    assert captured is not None
    snap = from_items(
        copy.deepcopy(doc["items"]), captured, source="generated", server_version=_version(doc)
    )
    report = diagnose(snap, captured)
    finding = next(n for n in report.nodes if n.name == "auto-nhc")
    (cov,) = finding.automation
    assert not premises.check(doc, render.report_data(report))
    healthy = min(healthy, observed)
    field, value = limit
    scaled = automation.scaled(value if value.endswith("%") else int(value), observed, True)
    least = None if scaled is None else scaled if field == "minHealthy" else observed - scaled
    if started:
        assert cov.state == "acting"  # in flight wins over any short-circuit
    elif phase in ("Paused", "Disabled") or (least is not None and healthy < least):
        assert cov.state == "stopped"
    elif field == "maxUnhealthy" and scaled is not None and scaled > observed:
        # getMinHealthy's error ("greater than the number of selected nodes"): no remediation
        assert cov.state == "stopped"
    else:
        assert cov.state in ("scheduled", "due")
    step = next(
        s
        for s in make_plan(report, Options(attested=("auto-nhc",), only_nodes=("auto-nhc",))).steps
        if s.target == "node/auto-nhc"
    )
    assert step.allowed is not automation.stands_back(cov, captured, 120.0)


def test_every_output_names_the_automation() -> None:
    from kubectl_nodefail.render import incident, render

    snap = _recorded("automation-karpenter-acting.json")
    report = diagnose(snap, snap.captured_at, timelines=True)
    data = render.report_data(report)
    karp = next(n for n in data["nodes"] if n["name"] == "auto-karp")
    (cov,) = karp["automation"]
    assert "being deleted since" in cov["summary"]
    assert f"- `auto-karp` (acting): {cov['summary']}" in incident.markdown(data, report)
    table = render.table(report)
    assert "AUTOMATION (who else acts on these nodes)" in table
    assert "Karpenter is replacing it" in table
    assert "[acting] covered by Karpenter" in render.explain_node(
        next(n for n in report.nodes if n.name == "auto-karp"), report
    ).replace("\n", " ").replace("  ", " ")


# --- generated neighbours of the recorded Karpenter NodeClaim: how long the node has been down,
# the NodePool's other nodes and their health, the NodeClaim's pool label, its provider, the
# providerID link and a deletion; the state checked against the health controller's rules as
# stated here (not by calling the code under test), every premise re-read from the raw document.

KARP_NODE, KARP_POOL = "auto-karp", "general-purpose"
TOLERATION = 30 * 60  # the AWS provider's Ready policies


def _karpenter_neighbour(
    doc: dict[str, Any],
    down_seconds: int,
    peers: list[str],
    pool_label: bool,
    group: str,
    linked: bool,
    deleting: bool,
    blocked_ago: int | None = None,
) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    captured = parse_time(out["capturedAt"])
    assert captured is not None
    items = out["items"]
    node = next(i for i in items if i["kind"] == "Node" and i["metadata"]["name"] == KARP_NODE)
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    since = captured - timedelta(seconds=down_seconds)
    ready["lastTransitionTime"] = since.strftime("%Y-%m-%dT%H:%M:%SZ")
    _lease_before(items, KARP_NODE, since)
    claim = next(i for i in items if i["kind"] == "NodeClaim")
    if not pool_label:
        claim["metadata"]["labels"].pop("karpenter.sh/nodepool")
    claim["spec"]["nodeClassRef"]["group"] = group
    if not linked:
        claim["status"]["providerID"] = "aws:///us-east-1a/i-0another"
    if deleting:
        claim["metadata"]["deletionTimestamp"] = out["capturedAt"]
    if blocked_ago is not None:  # Karpenter's event while repair is blocked, as it writes it
        at = (captured - timedelta(seconds=blocked_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
        items.append(
            {
                "kind": "Event",
                "apiVersion": "v1",
                "metadata": {"name": f"{KARP_NODE}.blocked", "namespace": "default"},
                "involvedObject": {"kind": "Node", "name": KARP_NODE, "apiVersion": "v1"},
                "reason": "NodeRepairBlocked",
                "type": "Warning",
                "message": "more than 20% nodes are unhealthy in the nodepool",
                "firstTimestamp": at,
                "lastTimestamp": at,
                "count": 1,
            }
        )
    template = next(
        i for i in items if i["kind"] == "Node" and i["metadata"]["name"].startswith("healthy")
    )
    for n, status in enumerate(peers):
        peer = copy.deepcopy(template)
        peer["metadata"]["name"] = f"karp-peer-{n}"
        peer["metadata"]["labels"]["karpenter.sh/nodepool"] = KARP_POOL
        peer["metadata"]["labels"]["topology.kubernetes.io/zone"] = "zone-karp-peers"
        peer["metadata"]["labels"]["kubernetes.io/hostname"] = f"karp-peer-{n}"
        for cond in peer["status"]["conditions"]:
            if cond["type"] == "Ready":
                cond["status"] = status
        items.append(peer)
    return out


def _down_since(doc: dict[str, Any]) -> Any:
    node = next(
        i for i in doc["items"] if i["kind"] == "Node" and i["metadata"]["name"] == KARP_NODE
    )
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    return parse_time(ready["lastTransitionTime"])


def _expected_karpenter(
    doc: dict[str, Any], linked: bool, deleting: bool, blocked_ago: int | None = None
) -> str:
    """The state from Karpenter's rules (docs/automation.md), computed from the document."""
    if deleting:
        return "acting"
    if not linked:
        return "watching"
    if blocked_ago is not None and blocked_ago <= 20 * 60:  # its own word: blocked now
        return "stopped"
    claim = next(i for i in doc["items"] if i["kind"] == "NodeClaim")
    pool = claim["metadata"]["labels"].get("karpenter.sh/nodepool")
    nodes = [
        i
        for i in doc["items"]
        if i["kind"] == "Node"
        and (pool is None or i["metadata"].get("labels", {}).get("karpenter.sh/nodepool") == pool)
    ]
    unhealthy = sum(
        1
        for n in nodes
        if any(
            c["type"] == "Ready" and c["status"] in ("False", "Unknown")
            for c in n["status"]["conditions"]
        )
    )
    if unhealthy > math.ceil(len(nodes) * 20 / 100):
        return "stopped"
    late = (parse_time(doc["capturedAt"]) - _down_since(doc)).total_seconds() - TOLERATION
    return "scheduled" if late < 0 else "due" if late <= 360 else "overdue"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    down=st.integers(0, 3 * 3600),
    peers=st.lists(st.sampled_from(["True", "False", "Unknown"]), max_size=6),
    pool_label=st.booleans(),
    group=st.sampled_from(["karpenter.k8s.aws", "karpenter.azure.com"]),
    linked=st.booleans(),
    deleting=st.booleans(),
    blocked_ago=st.one_of(st.none(), st.integers(0, 3600)),
)
def test_generated_karpenter_claims_state_only_what_holds(
    down: int,
    peers: list[str],
    pool_label: bool,
    group: str,
    linked: bool,
    deleting: bool,
    blocked_ago: int | None,
) -> None:
    raw = json.loads((FIXTURES / "automation-karpenter-scheduled.json").read_text())
    doc = _karpenter_neighbour(raw, down, peers, pool_label, group, linked, deleting, blocked_ago)
    captured = parse_time(doc["capturedAt"])
    assert captured is not None
    snap = from_items(
        copy.deepcopy(doc["items"]), captured, source="generated", server_version=_version(doc)
    )
    report = diagnose(snap, captured)
    finding = next(n for n in report.nodes if n.name == KARP_NODE)
    (cov,) = finding.automation
    assert not premises.check(doc, render.report_data(report))
    assert cov.state == _expected_karpenter(doc, linked, deleting, blocked_ago), cov.summary
    if cov.state in ("scheduled", "due", "overdue"):
        assert cov.at == _down_since(doc) + timedelta(seconds=TOLERATION)
        # a time resting on what the API does not show says so; overdue says why, and never
        # "probably not enabled" when Karpenter's own event proves it is
        if cov.state == "overdue":
            proven = blocked_ago is not None
            assert ("although node repair is enabled" in cov.summary) is proven
            assert ("probably not enabled" in cov.summary) is not proven
        else:
            assert "if node repair is enabled" in cov.summary
        assert "assumed" in cov.summary
        assert ("whose policies may differ" in cov.summary) is (group != "karpenter.k8s.aws")
    # the peers' own zone is down: that gate is another matter, overridden here
    opts = Options(attested=(KARP_NODE,), only_nodes=(KARP_NODE,), allow_disruption=True)
    step = next(s for s in make_plan(report, opts).steps if s.target == f"node/{KARP_NODE}")
    backs = automation.stands_back(cov, captured, 120.0)
    soon = captured + timedelta(seconds=120)
    assert backs is (
        cov.state in ("acting", "due")
        or (cov.state == "scheduled" and cov.at is not None and cov.at <= soon)
    )
    if backs:
        assert not step.allowed and "stands back" in step.gate and "Karpenter" in step.gate
    else:
        assert step.allowed and "stands back" not in step.gate


def test_set_premises_are_counted_from_the_document_and_can_fail() -> None:
    """The premise checker's counts over a labelled set of Nodes: right when the claim is
    right, and a wrong count is caught (a check that cannot fail is no check)."""
    raw = json.loads((FIXTURES / "automation-karpenter-scheduled.json").read_text())
    doc = _karpenter_neighbour(
        raw, 40 * 60, ["False", "True"], True, "karpenter.k8s.aws", True, False
    )
    captured = parse_time(doc["capturedAt"])
    assert captured is not None
    report = diagnose(_as_read(doc, captured), captured)
    data = render.report_data(report)
    (cov,) = next(n for n in data["nodes"] if n["name"] == KARP_NODE)["automation"]
    assert cov["state"] == "stopped" and "2 of its 3 nodes" in cov["summary"]
    assert not premises.check(doc, data)
    counted = [p for c in cov["claims"] for p in c["because"] if p["object"].startswith("Node[")]
    assert {p["field"].partition("(")[0] for p in counted} == {"count"} and len(counted) == 2
    for premise in counted:
        premise["value"] += 1
    assert len(premises.check(doc, data)) == 2


# --- Cluster API v1beta2: the same MachineHealthCheck written in either API version says the
# same thing (state, time), each from the fields its version has.


def _mhc_in(doc: dict[str, Any], v1beta2: bool, seconds: int, limit: str, allowed: bool) -> Any:
    out = copy.deepcopy(doc)
    mhc = next(i for i in out["items"] if i["kind"] == "MachineHealthCheck")
    spec = mhc["spec"]
    rules = [{"type": "Ready", "status": s} for s in ("Unknown", "False")]
    for key in ("unhealthyConditions", "maxUnhealthy", "nodeStartupTimeout"):
        spec.pop(key, None)
    if v1beta2:
        mhc["apiVersion"] = "cluster.x-k8s.io/v1beta2"
        spec["checks"] = {
            "nodeStartupTimeoutSeconds": 600,
            "unhealthyNodeConditions": [{**r, "timeoutSeconds": seconds} for r in rules],
        }
        spec["remediation"] = {"triggerIf": {"unhealthyLessThanOrEqualTo": limit}}
    else:
        spec["unhealthyConditions"] = [{**r, "timeout": f"{seconds}s"} for r in rules]
        spec["maxUnhealthy"] = limit
        spec["nodeStartupTimeout"] = "10m0s"
    cond = mhc["status"]["conditions"][0]
    if not allowed:
        cond.update(status="False", reason="TooManyUnhealthy")
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seconds=st.integers(1, 7200),
    limit=st.sampled_from(["40%", "100%", "2"]),
    allowed=st.booleans(),
)
def test_a_machine_health_check_reads_the_same_in_v1beta1_and_v1beta2(
    seconds: int, limit: str, allowed: bool
) -> None:
    raw = json.loads((FIXTURES / "automation-mhc-scheduled.json").read_text())
    said = []
    for v1beta2 in (False, True):
        doc = _mhc_in(raw, v1beta2, seconds, limit, allowed)
        captured = parse_time(doc["capturedAt"])
        assert captured is not None
        report = diagnose(_as_read(doc, captured), captured)
        (cov,) = next(n for n in report.nodes if n.name == "auto-mhc").automation
        assert not premises.check(doc, render.report_data(report))
        fields = {p.field for c in cov.claims for p in c.because}
        if not allowed:
            assert cov.state == "stopped" and limit in cov.summary
            want = "spec.remediation.triggerIf.unhealthyLessThanOrEqualTo"
            assert (want in fields) is v1beta2 and ("spec.maxUnhealthy" in fields) is not v1beta2
        else:
            assert cov.state in ("scheduled", "due")
            want = "spec.checks.unhealthyNodeConditions"
            assert (want in fields) is v1beta2, fields
        said.append((cov.state, cov.at))
    assert said[0] == said[1]


def test_an_old_repair_blocked_event_proves_repair_is_on_and_overdue_says_so() -> None:
    raw = json.loads((FIXTURES / "automation-karpenter-scheduled.json").read_text())
    for blocked_ago, state, words in (
        (30 * 60, "overdue", "although node repair is enabled"),
        (10 * 60, "stopped", "node repair is enabled and repairs nothing"),
        (None, "overdue", "probably not enabled"),
    ):
        doc = _karpenter_neighbour(
            raw, 45 * 60, [], True, "karpenter.k8s.aws", True, False, blocked_ago
        )
        captured = parse_time(doc["capturedAt"])
        assert captured is not None
        report = diagnose(_as_read(doc, captured), captured)
        (cov,) = next(n for n in report.nodes if n.name == KARP_NODE).automation
        assert cov.state == state and words in cov.summary, cov.summary
        assert not premises.check(doc, render.report_data(report))


# --- a health check whose timeout passed long ago and that records nothing: its controller does
# not act (not running, paused, skipping), so nothing is waited for; one that handed the Machine
# to an external remediation is acting. Generated around the recorded MHC and NHC.


def _down_for(doc: dict[str, Any], node_name: str, down: int) -> float:
    """The node not Ready since `down` seconds before the capture; the seconds that makes, the
    time written to the second as the API writes it (up to a second more than `down`)."""
    captured = parse_time(doc["capturedAt"])
    assert captured is not None
    node = next(
        i for i in doc["items"] if i["kind"] == "Node" and i["metadata"]["name"] == node_name
    )
    elapsed = float(down)
    for cond in node["status"]["conditions"]:
        if cond["type"] == "Ready":
            since = captured - timedelta(seconds=down)
            cond["lastTransitionTime"] = since.strftime("%Y-%m-%dT%H:%M:%SZ")
            written = parse_time(cond["lastTransitionTime"])
            assert written is not None
            elapsed = (captured - written).total_seconds()
            _lease_before(doc["items"], node_name, since)
    return elapsed


def _lease_before(items: list[dict[str, Any]], node_name: str, since: Any) -> None:
    """A node down since `since` renewed its lease last the node-monitor grace period (40 s)
    before: a neighbour moved back in time moves its lease too (else the kubelet would have run
    after the failure began, and an attestation on it is refused)."""
    last = (since - timedelta(seconds=40)).strftime("%Y-%m-%dT%H:%M:%S.000000Z")
    for item in items:
        if item["kind"] == "Lease" and item["metadata"]["name"] == node_name:
            item["spec"]["renewTime"] = min(item["spec"]["renewTime"], last)


def _lateness_state(down: float, timeout: int) -> str:
    late = down - timeout
    return "scheduled" if late < 0 else "due" if late <= 360 else "overdue"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(["mhc-v1beta1", "mhc-v1beta2", "nhc"]),
    down=st.integers(0, 3 * 3600),
    timeout=st.integers(1, 3600),
    template=st.booleans(),
    checked=st.one_of(st.none(), st.integers(0, 3600)),
    failed=st.sampled_from([False, False, False, True]),
    skip=st.sampled_from([None] * 5 + ["machine-skip", "machine-paused", "mhc-paused"]),
)
@example(  # 360 s to the second, written to the second: a little more, so watching
    kind="mhc-v1beta1", down=0, timeout=1, template=True, checked=360, failed=False, skip=None
)
@example(  # due for 360 s to the second: a little more, so overdue
    kind="mhc-v1beta1", down=361, timeout=1, template=False, checked=None, failed=False, skip=None
)
def test_a_health_check_long_past_due_is_overdue_and_not_waited_for(
    kind: str,
    down: int,
    timeout: int,
    template: bool,
    checked: int | None,
    failed: bool,
    skip: str | None,
) -> None:
    """MHC: `checked` seconds ago it marked the Machine unhealthy (HealthCheckSucceeded
    False), `failed`: its external request could not be created. NHC: `checked` not None means
    it lists the node in status.unhealthyNodes without a remediation (it ran and skips it),
    `failed` that the node carries the exclude-from-remediation label."""
    captured = None
    if kind == "nhc":
        raw = json.loads((FIXTURES / "automation-nhc-scheduled.json").read_text())
        doc = _nhc_neighbour(raw, ("minHealthy", "0"), 3, 3, "Enabled", timeout, False)
        node_name = "auto-nhc"
        nhc = next(i for i in doc["items"] if i["kind"] == "NodeHealthCheck")
        node = next(
            i for i in doc["items"] if i["kind"] == "Node" and i["metadata"]["name"] == node_name
        )
        if checked is not None:
            nhc["status"]["unhealthyNodes"] = [{"name": node_name}]
        if failed:
            node["metadata"].setdefault("labels", {})[automation.NHC_EXCLUDE_LABEL] = "true"
    else:
        raw = json.loads((FIXTURES / "automation-mhc-scheduled.json").read_text())
        doc = _mhc_in(raw, kind == "mhc-v1beta2", timeout, "100%", True)
        node_name = "auto-mhc"
        mhc = next(i for i in doc["items"] if i["kind"] == "MachineHealthCheck")
        if template:
            ref = {"kind": "AWSRemediationTemplate", "name": "reboot", "apiVersion": "x/v1"}
            if kind == "mhc-v1beta2":
                mhc["spec"]["remediation"]["templateRef"] = ref
            else:
                mhc["spec"]["remediationTemplate"] = ref
        machine = next(i for i in doc["items"] if i["kind"] == "Machine")
        if skip is not None:  # the Cluster API book's "Skipping Remediation"
            annotated = mhc if skip == "mhc-paused" else machine
            key = (
                automation.CAPI_SKIP_REMEDIATION
                if skip == "machine-skip"
                else "cluster.x-k8s.io/paused"
            )
            annotated["metadata"].setdefault("annotations", {})[key] = ""
        conditions = machine.setdefault("status", {}).setdefault("conditions", [])
        at = parse_time(doc["capturedAt"])
        assert at is not None
        if checked is not None:  # the MHC found the Machine unhealthy (and no more, alone)
            since = (at - timedelta(seconds=checked)).strftime("%Y-%m-%dT%H:%M:%SZ")
            written = parse_time(since)
            assert written is not None
            checked_for = (at - written).total_seconds()  # written to the second: a bit more
            conditions.append(
                {
                    "type": "HealthCheckSucceeded",
                    "status": "False",
                    "reason": "UnhealthyNode",
                    "lastTransitionTime": since,
                }
            )
        if failed:  # the external request could not be created
            ctype = (
                "ExternallyRemediated"
                if kind == "mhc-v1beta2"
                else ("ExternalRemediationRequestAvailable")
            )
            conditions.append(
                {"type": ctype, "status": "False", "reason": "RemediationTemplateNotFound"}
            )
    down_for = _down_for(doc, node_name, down)
    captured = parse_time(doc["capturedAt"])
    assert captured is not None
    report = diagnose(_as_read(doc, captured), captured)
    finding = next(n for n in report.nodes if n.name == node_name)
    (cov,) = finding.automation
    assert not premises.check(doc, render.report_data(report))
    if kind == "nhc":  # excluded, or listed without a remediation: it skips the node
        want = "stopped" if failed or checked is not None else _lateness_state(down_for, timeout)
    elif skip is not None:
        want = "stopped"
    elif template and checked is not None:
        want = "stopped" if failed else "acting" if checked_for <= 360 else "watching"
    elif checked is not None:  # marked, no template, no replacement asked: it skips it
        want = "stopped"
    else:
        want = _lateness_state(down_for, timeout)
    assert cov.state == want, cov.summary
    if want == "acting":
        assert "AWSRemediationTemplate reboot" in cov.summary
    if want == "watching":
        assert "is not read here" in cov.summary and "does not wait for it" in cov.summary
    if want == "stopped":
        assert any(
            words in cov.summary
            for words in (
                "does not mark the Machine for remediation",
                "could not be created",
                "skips the node",
                "it is skipping the Machine",
                "it is skipping the node for now",
            )
        ), cov.summary
    if want == "overdue":
        assert "has not acted" in cov.summary and "does not wait for it" in cov.summary
        # overdue only where the status shows no sign of it having run at all
        assert checked is None and "probably not running" in cov.summary, cov.summary
        fields = {p.field for c in cov.claims for p in c.because}
        nothing = (
            "status.conditions[type=OwnerRemediated].status"
            if kind != "nhc"
            else f"status.unhealthyNodes[name={node_name}].remediations"
        )
        assert nothing in fields  # "records nothing" rests on the field that would say it
        snap = _as_read(doc, captured)
        (entry,) = [e for e in node_timeline(snap, node_name) if e.kind == "automation"]
        assert entry.time == cov.at and "has not acted since" in entry.summary
    opts = Options(attested=(node_name,), only_nodes=(node_name,))
    step = next(s for s in make_plan(report, opts).steps if s.target == f"node/{node_name}")
    backs = automation.stands_back(cov, captured, 120.0)
    assert backs is (want in ("acting", "due") or (want == "scheduled" and timeout - down <= 120))
    assert step.allowed is not backs


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ago=st.integers(0, 3 * 3600), deleting=st.booleans())
@example(ago=1800, deleting=True)  # STALLED_SECONDS, written to the second: a little more
def test_cluster_autoscaler_long_past_its_time_is_overdue_and_not_waited_for(
    ago: int, deleting: bool
) -> None:
    """The DeletionCandidate taint's value is when cluster-autoscaler found the node unneeded;
    20 min (the default --scale-down-unready-time) later it removes it, scanning every 10 s.
    A taint 6 min past that with the node still there: it is not acting, not waited for."""
    doc = json.loads((FIXTURES / "automation-ca-scheduled.json").read_text())
    captured = parse_time(doc["capturedAt"])
    assert captured is not None
    node = next(
        i for i in doc["items"] if i["kind"] == "Node" and i["metadata"]["name"] == "auto-ca"
    )
    taint = next(t for t in node["spec"]["taints"] if t["key"] == automation.CA_DELETION_CANDIDATE)
    taint["value"] = str(int(captured.timestamp()) - ago)
    if deleting:
        node["spec"]["taints"].append(
            {"key": automation.CA_TO_BE_DELETED, "value": taint["value"], "effect": "NoSchedule"}
        )
    report = diagnose(_as_read(doc, captured), captured)
    finding = next(n for n in report.nodes if n.name == "auto-ca")
    (cov,) = finding.automation
    assert not premises.check(doc, render.report_data(report))
    # the taint's value is whole seconds: the capture's fraction of a second is on top of `ago`
    ago_exact = captured.timestamp() - int(taint["value"])
    late = ago_exact - automation.CA_SCALE_DOWN_UNREADY_SECONDS
    want = (
        ("acting" if ago_exact <= automation.STALLED_SECONDS else "stalled")
        if deleting
        else "scheduled"
        if late < 0
        else "due"
        if late <= automation.OVERDUE_SECONDS
        else "overdue"
    )
    assert cov.state == want, cov.summary
    if want == "overdue":
        assert "has not removed it" in cov.summary and "does not wait for it" in cov.summary
    opts = Options(attested=("auto-ca",), only_nodes=("auto-ca",))
    step = next(s for s in make_plan(report, opts).steps if s.target == "node/auto-ca")
    backs = automation.stands_back(cov, captured, 120.0)
    assert backs is (want in ("acting", "due") or (want == "scheduled" and -late <= 120))
    assert step.allowed is not backs
    if want == "stalled":  # removing it for longer than that takes: not waited for either
        assert "probably does not run" in cov.summary and "does not wait for it" in cov.summary
