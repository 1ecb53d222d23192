"""`remediate --zone/--selector` planning on constructed outage snapshots (outage_snapshot.py:
renamed copies of the recorded failed node flaky-a over three zones) and recorded fixtures: the
order (StatefulSets and volumes first), the brake explained with the controller's rates, what a
typed zone attestation covers (never a Ready node or one whose lease is renewed), and the checks
of what the operator types (property-based: malformed input is one line and exit 2)."""

from __future__ import annotations

import copy
import functools
import json
from datetime import timedelta

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_nodefail.analysis import facts
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.machine import machine_ran
from kubectl_nodefail.analysis.nodes import is_ready
from kubectl_nodefail.cli import main as cli
from kubectl_nodefail.common import selector
from kubectl_nodefail.common.errors import AttestationContradicted
from kubectl_nodefail.remediate import zoneplan
from kubectl_nodefail.remediate.plan import MUTATING
from kubectl_nodefail.snapshot.model import Snapshot, format_time, parse_time
from tests.support.outage_snapshot import Shape, outage_snapshot

DESTRUCTIVE = MUTATING - {"remove-out-of-service"}


# zone-a: 24 generated nodes down and 12 up, plus the template's nodes (flaky-b, flaky-d down,
# healthy-0..2 up); zone-b 12 down / 80 up; zone-c 4 down / 0 up
OUTAGE = outage_snapshot(Shape(failed=40))


@pytest.fixture(scope="module")
def outage() -> Snapshot:
    return OUTAGE


def _plan(snap: Snapshot, zone: str, **ask: object) -> tuple[zoneplan.Plan, zoneplan.ZoneView]:
    scope = zoneplan.in_scope(snap.nodes, zone, None)
    return zoneplan.plan_zone(snap, scope, zoneplan.Ask(**ask))  # type: ignore[arg-type]


def _sts_nodes(snap: Snapshot) -> set[str]:
    return {
        p["spec"]["nodeName"]
        for p in snap.pods
        if p["spec"].get("nodeName")
        and any(r.get("kind") == "StatefulSet" for r in p["metadata"].get("ownerReferences") or [])
    }


def test_statefulset_nodes_first_then_the_longest_down(outage: Snapshot) -> None:
    plan, view = _plan(outage, "zone-a", typed_scope=True, allow_disruption=True)
    rows = view.rows
    sts = _sts_nodes(outage)
    assert {r.node for r in rows if r.statefulset_pods} == {r.node for r in rows} & sts
    assert 0 < sum(r.first for r in rows) < len(rows)
    firsts = [r.first for r in rows]
    assert firsts == sorted(firsts, reverse=True)  # every first node before every other
    for group in (True, False):
        down = [r.not_ready_seconds or 0 for r in rows if r.first == group]
        assert down == sorted(down, reverse=True)
    # plan.steps follow the rows, one node's steps together
    order = list(dict.fromkeys(s.node for s in plan.steps))
    assert order == [r.node for r in rows]
    assert [s.node for s in plan.steps] == [r.node for r in rows for _ in r.steps]


def test_zone_attestation_unlocks_only_the_zone(outage: Snapshot) -> None:
    plan, view = _plan(outage, "zone-a", typed_scope=True, allow_disruption=True)
    zone_a = {n["metadata"]["name"] for n in outage.nodes if zoneplan.zone_matches(n, "zone-a")}
    assert {f"zone-a-down-{k:04d}" for k in range(24)} <= zone_a
    assert not zone_a & {
        n["metadata"]["name"] for n in outage.nodes if "zone-b" in n["metadata"]["name"]
    }
    assert set(view.scope.nodes) == zone_a
    assert plan.mutating and {s.node for s in plan.steps} <= zone_a
    assert all(s.allowed for s in plan.steps if s.action in DESTRUCTIVE)
    up = {n["metadata"]["name"] for n in outage.nodes if is_ready(n)}
    assert sorted(view.ready) == sorted(zone_a & up) and len(view.ready) >= 12
    assert not any(s.node in view.ready for s in plan.steps)
    # Without the typed attestation nothing destructive is allowed, and the plan shows the
    # placeholder, never the zone filled in.
    plan, view = _plan(outage, "zone-a", allow_disruption=True)
    assert not plan.mutating
    from kubectl_nodefail.render import zoneview

    text = zoneview.text(plan, view, confirmed=False, interrupted=False, wide=False)
    assert zoneplan.ZONE_PLACEHOLDER in text
    assert f"{zoneplan.ZONE_FLAG} zone-a" not in text


def test_the_zone_brake_refuses_without_allow_disruption(outage: Snapshot) -> None:
    plan, _ = _plan(outage, "zone-a", typed_scope=True)
    assert not plan.mutating
    assert any("PartialDisruption" in r and "--allow-disruption" in r for r in plan.refusals)


def test_brake_explains_the_controllers_rates() -> None:
    snap = outage_snapshot(Shape(failed=200))  # zone-a: 120 down, 60 up (> 50 nodes)
    _, view = _plan(snap, "zone-a", typed_scope=True, allow_disruption=True)
    [zone, ours] = view.brake
    assert "PartialDisruption" in zone and "slowed" in zone and "0.01" in zone
    assert "about 3.3 h to taint all 120" in zone  # 120 nodes at 0.01 nodes/s
    assert f"at most {zoneplan.POOL} nodes at a time" in ours
    small = outage_snapshot(Shape(failed=40))  # zone-a: 24 down, 12 up: tainting stopped
    _, view = _plan(small, "zone-a", typed_scope=True)
    assert "stopped" in view.brake[0] and "about" not in view.brake[0]
    _, view = _plan(small, "zone-c", typed_scope=True)  # 4 down, none up: FullDisruption
    assert "FullDisruption" in view.brake[0] and "about 40 s for its 4" in view.brake[0]


def _fresh_or_ready(
    snap: Snapshot,
    fresh: set[str],
    ready: set[str],
    cloud: set[str] = frozenset(),  # type: ignore[assignment]
) -> Snapshot:
    """A copy of the snapshot where the `fresh` nodes' leases were renewed 2 s before the read,
    the `ready` nodes report Ready and the `cloud` nodes carry the cloud shutdown taint."""
    snap = copy.copy(snap)
    for name in list(vars(snap)):  # the indexes (cached properties) are made anew
        if isinstance(getattr(type(snap), name, None), functools.cached_property):
            del vars(snap)[name]
    snap.leases = json.loads(json.dumps(snap.leases))
    snap.nodes = json.loads(json.dumps(snap.nodes))
    renewed = format_time(snap.captured_at - timedelta(seconds=2)).replace("Z", ".000000Z")
    for lease in snap.leases:
        if lease["metadata"]["name"] in fresh:
            lease["spec"]["renewTime"] = renewed
    for node in snap.nodes:
        if node["metadata"]["name"] in cloud:
            node["spec"].setdefault("taints", []).append(
                {"key": facts.TAINT_CLOUD_SHUTDOWN, "effect": "NoSchedule"}
            )
        if node["metadata"]["name"] in ready:
            for c in node["status"]["conditions"]:
                if c["type"] == "Ready":
                    c["status"] = "True"
    return snap


# the nodes a typed zone-a attestation lets the plan act on
DOWN = sorted(
    {
        s.node
        for s in _plan(OUTAGE, "zone-a", typed_scope=True, allow_disruption=True)[0].steps
        if s.allowed and s.action in DESTRUCTIVE
    }
)


@settings(max_examples=12, deadline=None)
@given(
    fresh=st.sets(st.sampled_from(DOWN), max_size=6),
    ready=st.sets(st.sampled_from(DOWN), max_size=6),
    cloud=st.sets(st.sampled_from(DOWN), max_size=6),
    strategy=st.sampled_from(["out-of-service", "force-delete", "delete-node"]),
)
def test_a_ready_or_lease_renewed_node_is_never_acted_on_under_a_zone_attestation(
    fresh: set[str], ready: set[str], cloud: set[str], strategy: str
) -> None:
    """Also when the node carries the cloud provider's shutdown taint (evidence of its own on
    the single-node path): a renewed lease contradicts it, and the zone run spares the node."""
    snap = _fresh_or_ready(OUTAGE, fresh, ready, cloud)
    plan, view = _plan(snap, "zone-a", typed_scope=True, allow_disruption=True, strategy=strategy)
    spared = fresh | ready
    assert not [s for s in plan.steps if s.node in spared and s.allowed and s.action in DESTRUCTIVE]
    assert len(DOWN) > 20
    for name in fresh - ready:
        assert name in view.coverage.excluded and name not in view.coverage.attested
        refused = [s for s in plan.steps if s.node == name and s.action in DESTRUCTIVE]
        assert refused and all("a zone run does not act on" in s.gate for s in refused)
    assert set(view.ready) >= ready
    # every other failed node of the zone is covered and acted on
    acted = {s.node for s in plan.steps if s.allowed and s.action in DESTRUCTIVE}
    assert acted == set(DOWN) - spared


def test_a_typed_node_attestation_on_a_lease_renewed_node_is_refused(outage: Snapshot) -> None:
    """The operator typed the name of a node whose kubelet renews its lease: the machine runs,
    so the attestation is refused with that evidence, the whole run with it (exit 17)."""
    name = DOWN[3]
    snap = _fresh_or_ready(outage, {name}, set())
    with pytest.raises(AttestationContradicted) as refused:
        _plan(snap, "zone-a", typed_scope=True, typed_nodes=[name], allow_disruption=True)
    assert f"{name}: refused, the kubelet of {name} renewed its lease" in refused.value.message
    assert refused.value.exit_code == 17


# --- what the operator types ---


@given(zone=st.text(max_size=30), typed=st.one_of(st.none(), st.text(max_size=30)))
def test_a_zone_attestation_must_repeat_the_zone(zone: str, typed: str | None) -> None:
    problem = zoneplan.scope_problem(zone, None, typed, None)
    valid_zone = bool(zone.strip()) and zone.isprintable()
    if typed is not None and "VERIFIED-ARE-OFF" in typed.upper():
        assert problem is not None and "placeholder" in problem
    elif typed is not None and typed != zone:
        assert problem is not None and "does not name the zone" in problem
    else:
        assert (problem is None) == valid_zone
    assert problem is None or "\n" not in problem


def test_scope_flags_that_do_not_go_together() -> None:
    assert "one of them" in (zoneplan.scope_problem("a", "x=y", None, None) or "")
    assert "give --zone too" in (zoneplan.scope_problem(None, "x=y", "a", None) or "")
    assert "give --selector too" in (zoneplan.scope_problem("a", None, None, "x=y") or "")
    assert zoneplan.scope_problem(None, "x=y", None, "x=y") is None
    assert "placeholder" in (
        zoneplan.scope_problem("a", None, zoneplan.ZONE_PLACEHOLDER.lower().strip("<>"), None) or ""
    )


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("a=b", {"a": "b"}, True),
        ("a==b", {"a": "c"}, False),
        ("a!=b", {}, True),
        ("a in (x, y),!c", {"a": "y"}, True),
        ("a in (x, y),!c", {"a": "y", "c": ""}, False),
        ("a notin (x)", {}, True),
        ("a", {"a": ""}, True),
        ("topology.kubernetes.io/zone=zone-b", {"topology.kubernetes.io/zone": "zone-b"}, True),
        ("rack>3", {"rack": "4"}, True),
        ("rack<3", {"rack": "x"}, False),
        ("a=", {"a": ""}, True),
    ],
)
def test_selector_matches(text: str, labels: dict[str, str], expected: bool) -> None:
    assert selector.parse(text).matches(labels) is expected


@pytest.mark.parametrize(
    "text", ["", " ", "a,,b", "a in (b", "a in ()", "a=b)", "=b", "a b", "-a=b", "a/=b", "a>b"]
)
def test_malformed_selectors_are_refused(text: str) -> None:
    with pytest.raises(selector.SelectorError):
        selector.parse(text)


@given(st.text(max_size=60))
def test_any_text_is_a_selector_or_one_selector_error(text: str) -> None:
    try:
        parsed = selector.parse(text)
    except selector.SelectorError as exc:
        assert "\n" not in str(exc)
    else:
        assert parsed.requirements
        parsed.matches({"a": "b"})  # evaluating it never fails


_KEY = st.from_regex(r"\A[a-z]([a-z0-9-]{0,8}[a-z0-9])?\Z")


@given(key=_KEY, values=st.lists(_KEY, min_size=1, max_size=3), label=_KEY)
def test_set_and_equality_forms_agree(key: str, values: list[str], label: str) -> None:
    labels = {key: label}
    one = selector.parse(f"{key} in ({', '.join(values)})").matches(labels)
    assert one == (label in values)
    assert selector.parse(f"{key} notin ({','.join(values)})").matches(labels) == (not one)
    assert selector.parse(f"{key}={values[0]}").matches(labels) == (label == values[0])


FIXTURE = "tests/fixtures/three-nodes-down.json"


@settings(max_examples=40, deadline=None)
@given(
    zone=st.text(min_size=1, max_size=20),
    typed=st.one_of(st.none(), st.text(max_size=20)),
    sel=st.one_of(st.none(), st.text(max_size=30)),
)
def test_cli_bad_scope_input_is_one_line_never_a_traceback(
    zone: str, typed: str | None, sel: str | None
) -> None:
    args = ["remediate", "--from-file", FIXTURE]
    args += ["--selector", sel] if sel is not None else ["--zone", zone]
    if typed is not None:
        args += ["--zone-shutdown-confirmed", typed]
    result = CliRunner().invoke(cli.main, args)
    assert result.exit_code in (0, 2, 4, 5, 16), (args, result.output)
    if result.exit_code in (2, 16):
        assert len(result.stderr.strip().splitlines()) <= 3  # click's usage lines, or one
        assert result.stdout == ""


def test_cli_zone_plan_from_a_dump() -> None:
    ok = CliRunner().invoke(
        cli.main,
        [
            "remediate",
            "--from-file",
            FIXTURE,
            "--zone",
            "zone-a",
            "--zone-shutdown-confirmed",
            "zone-a",
            "--allow-disruption",
            "-o",
            "json",
        ],
    )
    assert ok.exit_code == 0, ok.output
    data = json.loads(ok.stdout)
    assert data["zone"]["attestation"]["covers"] == ["flaky-b", "flaky-c", "flaky-d"]
    assert all(s["allowed"] for s in data["steps"])
    confirm = CliRunner().invoke(
        cli.main, ["remediate", "--from-file", FIXTURE, "--zone", "zone-a", "--confirm"]
    )
    assert confirm.exit_code == 2
    named = CliRunner().invoke(
        cli.main,
        [
            "remediate",
            "--from-file",
            FIXTURE,
            "--zone",
            "zone-a",
            "--node-shutdown-confirmed",
            "healthy-9",
        ],
    )
    assert named.exit_code == 2 and "not a node of zone zone-a" in named.stderr


def test_a_zone_attestation_leaves_out_a_node_that_ran_after_its_failure(
    outage: Snapshot,
) -> None:
    """A node of the zone whose kubelet renewed its lease after Ready turned Unknown, now stale
    again: the zone-wide attestation does not cover it (it is excluded with that evidence), and
    the run goes on for the others instead of refusing the whole zone (the refusal, exit 17, is
    for a node the operator typed)."""
    name = DOWN[2]
    snap = _fresh_or_ready(outage, set(), set())
    node = next(n for n in snap.nodes if n["metadata"]["name"] == name)
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    lease = next(le for le in snap.leases if le["metadata"]["name"] == name)
    since = parse_time(ready["lastTransitionTime"])
    assert since is not None
    late = since + timedelta(seconds=1)  # after the failure began, and stale at the read
    lease["spec"]["renewTime"] = format_time(late).replace("Z", ".000000Z")
    finding = next(n for n in diagnose(snap, snap.captured_at).nodes if n.name == name)
    assert finding.lease_stale is True and "after its Ready condition" in str(machine_ran(finding))
    plan, _ = _plan(snap, "zone-a", typed_scope=True, allow_disruption=True)
    covered = {s.node for s in plan.steps if s.allowed and s.action in DESTRUCTIVE}
    assert name not in covered and covered, covered


def test_a_typed_attestation_naming_a_ready_node_of_the_zone_is_refused(outage: Snapshot) -> None:
    """A Ready node is in no report (nothing to list), yet a typed attestation naming it is
    refused: the check reads the snapshot, not the report."""
    ready = next(n["metadata"]["name"] for n in outage.nodes if is_ready(n))
    with pytest.raises(AttestationContradicted) as refused:
        _plan(outage, "zone-a", typed_scope=True, typed_nodes=[ready], allow_disruption=True)
    assert f"refused, node {ready} is Ready" in refused.value.message
