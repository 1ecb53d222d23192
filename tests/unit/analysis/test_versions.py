"""The version table (analysis/versions.py) and what the diagnosis says it applied, on the
snapshots recorded per minor (tests/fixtures/v1.MINOR/, by tests/e2e/test_versions.py)."""

from __future__ import annotations

import pytest

from kubectl_nodefail.analysis import versions
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.remediate.plan import Options, make_plan
from tests.unit.conftest import FIXTURES, load

MATRIX = sorted(p.name for p in FIXTURES.glob("v1.*") if p.is_dir())


def test_the_matrix_has_recordings_of_each_tested_minor() -> None:
    assert MATRIX == ["v1.26", "v1.31", "v1.36"]


@pytest.mark.parametrize(
    ("minor", "node_lost", "grace", "oos", "disruption", "replacement"),
    [
        (25, True, 40, "alpha", "alpha", "none"),
        (26, True, 40, "beta", "beta", "none"),
        (27, False, 40, "beta", "beta", "none"),
        (28, False, 40, "ga", "beta", "alpha"),
        (31, False, 40, "ga", "ga", "beta"),
        (32, False, 50, "ga", "ga", "beta"),
        (34, False, 50, "ga", "ga", "ga"),
        (36, False, 50, "ga", "ga", "ga"),
    ],
)
def test_behaviour_table(
    minor: int, node_lost: bool, grace: int, oos: str, disruption: str, replacement: str
) -> None:
    b = versions.behaviour(minor)
    assert b.node_lost_possible is node_lost
    assert b.node_monitor_grace_seconds == grace
    assert b.out_of_service == oos and b.out_of_service_on_by_default is (oos != "alpha")
    assert b.disruption_target == disruption
    assert b.pod_replacement_policy == replacement


def test_out_of_service_usable_from_its_beta() -> None:
    assert versions.out_of_service_usable(None)
    assert not versions.out_of_service_usable(25)
    assert all(versions.out_of_service_usable(m) for m in range(26, 40))


def test_applied_names_the_minor_and_flags_untested_ones() -> None:
    assert "unknown" in versions.applied(None)[0]
    notes = versions.applied(26)
    assert all(n.startswith("1.26:") for n in notes)
    assert any("NodeLost" in n and "--enable-taint-manager=false" in n for n in notes)
    assert any("default 40s" in n for n in notes)
    assert any("default 50s" in n for n in versions.applied(36))
    assert "outside the tested minors" in versions.applied(20)[0]
    assert "outside the tested minors" in versions.applied(40)[0]


@pytest.mark.parametrize("folder", MATRIX)
def test_each_recording_is_of_its_minor_and_says_what_was_applied(folder: str) -> None:
    snap = load(f"{folder}/node-down-after-eviction")
    minor = snap.server_minor
    assert f"v1.{minor}" == folder
    report = diagnose(snap, snap.captured_at)
    assert report.server_behaviour == versions.applied(minor)
    # The default eviction path on every tested minor: Terminating, never NodeLost.
    stuck = [p for p in report.pods if p.node_failed and p.terminating]
    assert stuck and all(p.kubectl_status == "Terminating" for p in stuck)
    assert all(p.era == "current" for p in report.pods)
    assert not any("NodeLost" in note for note in report.cluster)


@pytest.mark.parametrize("folder", MATRIX)
def test_remediate_strategy_per_minor(folder: str) -> None:
    snap = load(f"{folder}/node-down-after-eviction")
    minor = snap.server_minor
    report = diagnose(snap, snap.captured_at)
    plan = make_plan(report, Options(attested=["ver-down"], server_minor=minor))
    assert plan.strategy == "out-of-service"
    assert make_plan(report, Options(attested=["ver-down"], server_minor=25)).strategy == (
        "force-delete"
    )


def test_job_on_a_server_without_pod_replacement_policy_is_not_given_one() -> None:
    """The 1.26 apiserver stores no podReplacementPolicy: the explanation must not name one."""
    old = load("v1.26/node-down-after-eviction")
    batch = next(p for p in diagnose(old, old.captured_at).pods if p.name.startswith("batch-"))
    assert "no podReplacementPolicy" in batch.explanation
    assert batch.replacement.state in ("running", "finished")
    new = load("v1.36/node-down-after-eviction")
    batch = next(p for p in diagnose(new, new.captured_at).pods if p.name.startswith("batch-"))
    # 1.36 delays Complete while a pod is Terminating: the Job wants no pod, so what its policy
    # would do is not said; that it is held is (the v1.26 server completed its Job)
    assert "SuccessCriteriaMet=True but is not Complete" in batch.explanation
    assert "podReplacementPolicy" not in batch.explanation
