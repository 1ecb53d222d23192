"""The saved-plan loader, offline: strict validation, the digest, and properties over arbitrary
and mutated input (every input is either a valid plan or BadInputError, never another error)."""

from __future__ import annotations

import contextlib
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_nodefail.cli.main import main
from kubectl_nodefail.common.errors import BadInputError
from kubectl_nodefail.remediate import planfile
from kubectl_nodefail.remediate.actions import summary
from kubectl_nodefail.remediate.plan import Options, Plan, make_plan
from kubectl_nodefail.render import render
from tests.unit.conftest import report_of

NODE = "flaky-a"


def _saved(strategy: str = "force-delete", attested: tuple[str, ...] = (NODE,)) -> Any:
    report = report_of("node-down-after-eviction")
    plan = make_plan(report, Options(strategy=strategy, attested=attested, server_minor=36))
    return json.loads(render.as_json(render.plan_document(plan, summary(plan))))


SAVED = _saved()
SAVED_OOS = _saved("out-of-service")


def _resigned(data: Any) -> Any:
    """What someone editing a plan by hand and recomputing its digest would produce."""
    data["digest"] = planfile.sign(data)
    return data


def _first(data: Any, action: str) -> dict[str, Any]:
    return next(s for s in data["steps"] if s["action"] == action)


def test_a_saved_plan_loads_back_exactly() -> None:
    plan = planfile.load(copy.deepcopy(SAVED))
    assert plan.strategy == "force-delete" and plan.attested == [NODE]
    assert [s.target for s in plan.steps] == [s["target"] for s in SAVED["steps"]]
    assert all(s.result == "" for s in plan.steps)


def test_a_steps_facts_are_words_never_read_back() -> None:
    """`because` (the facts a step's words about pods rest on) is saved but outside the digest
    and dropped on load: a replayed plan states the live plan's facts (plan.narrow), a changed
    one is not an edit, and a plan saved before the field existed still loads."""
    data = copy.deepcopy(SAVED)
    step = next(s for s in data["steps"] if s["because"])
    step["because"] = [{"object": "Pod/x/y", "field": "spec.nodeName", "value": "elsewhere"}]
    assert all(s.because == [] for s in planfile.load(data).steps)
    for raw in data["steps"]:
        raw.pop("because")
    assert [s.target for s in planfile.load(data).steps] == [s["target"] for s in SAVED["steps"]]
    step = next(s for s in copy.deepcopy(SAVED)["steps"] if s["because"])
    step["because"] = [{"object": 1, "field": "f", "value": None}]  # still held to its shape
    broken = copy.deepcopy(SAVED)
    broken["steps"] = [step if s["target"] == step["target"] else s for s in broken["steps"]]
    with pytest.raises(BadInputError, match="object must be a string"):
        planfile.load(broken)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda s: s.update(allowed="false"),
            'allowed must be true or false, not the string "false"',
        ),
        (lambda s: s.update(allowed=1), "allowed must be true or false, not a number"),
        (lambda s: s.update(uid=""), "has no valid UID"),
        (lambda s: s.update(resourceVersion=""), "has no valid resourceVersion"),
        (lambda s: s.update(action="drain-node"), "unknown action"),
        (lambda s: s.update(target=5), "target must be a string, not a number"),
        (lambda s: s.update(target="pod/broken"), "is not a pod name"),
        (lambda s: s.update(target="node/flaky-a"), "needs a pod target"),
        (lambda s: s.update(node="Not_A_Node"), "is not a node name"),
        (lambda s: s.update(evidence="attested"), "evidence must be a list of strings"),
        (lambda s: s.update(leaseRenewed="yesterday"), "leaseRenewed"),
        (lambda s: s.update(extra=1), "unknown field 'extra'"),
        (lambda s: s.pop("gate"), "lacks the field 'gate'"),
    ],
)
def test_a_tampered_step_is_rejected_even_with_a_recomputed_digest(edit: Any, message: str) -> None:
    data = copy.deepcopy(SAVED)
    edit(_first(data, "force-delete-pod"))
    with pytest.raises(BadInputError) as err:
        planfile.load(data)
    assert message in err.value.message and "\n" not in err.value.message


def test_an_edit_that_is_well_formed_is_reported_as_edited() -> None:
    data = copy.deepcopy(SAVED)
    _first(data, "force-delete-pod")["uid"] = "00000000-0000-0000-0000-000000000000"
    with pytest.raises(BadInputError, match="edited after it was saved"):
        planfile.load(data)
    data = copy.deepcopy(SAVED)
    data["attested"] = [NODE, "healthy-0"]
    data["attestations"].append(dict(data["attestations"][0], node="healthy-0"))
    with pytest.raises(BadInputError, match="edited after it was saved"):
        planfile.load(data)
    # With the digest recomputed the file loads: narrowing against live state is what protects.
    assert planfile.load(_resigned(data)).attested == [NODE, "healthy-0"]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(kind="RemediationResult"), "that is the result of a run"),
        (lambda d: d.update(apiVersion="v2"), "apiVersion must be"),
        (lambda d: d.update(strategy="auto"), "strategy must be one of"),
        (lambda d: d.update(confirmed=True), "confirmed must be false"),
        (lambda d: d.update(steps={}), "steps must be a list"),
        (lambda d: d.update(digest="abc"), "digest must be sha256"),
        (lambda d: d.pop("digest"), "'digest' is missing"),
        (lambda d: d.update(attested=["x y"]), "is not a valid node name"),
    ],
)
def test_a_tampered_document_is_rejected(edit: Any, message: str) -> None:
    data = copy.deepcopy(SAVED)
    edit(data)
    with pytest.raises(BadInputError) as err:
        planfile.load(data)
    assert message in err.value.message


def test_the_cli_rejects_a_bad_plan_before_reading_any_cluster(tmp_path: Path) -> None:
    """Exit 13, one line on stderr, nothing on stdout: checked before the kubeconfig is read."""
    cases: dict[str, str] = {
        "not-json.json": "{",
        "string-allowed.json": json.dumps(
            _resigned(copy.deepcopy(SAVED))
            | {
                "steps": [
                    dict(s, allowed="false") if s["action"] == "force-delete-pod" else s
                    for s in SAVED["steps"]
                ]
            }
        ),
        "list.json": "[]",
        "deep.json": "[" * 100000 + "]" * 100000,
    }
    for name, text in cases.items():
        path = tmp_path / name
        path.write_text(text)
        result = CliRunner().invoke(
            main,
            ["remediate", "--plan-in", str(path), "--confirm", "--kubeconfig", "/nonexistent"],
        )
        assert result.exit_code == 13, (name, result.output)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and str(path) in lines[0]
        assert result.stdout == ""


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
FIELD_NAMES = sorted({k for s in SAVED["steps"] for k in s} | set(SAVED))


def _load_or_bad_input(data: Any) -> Plan | None:
    try:
        return planfile.load(data)
    except BadInputError as exc:
        assert exc.message and "\n" not in exc.message
        return None


@settings(max_examples=150, deadline=None)
@given(JSON)
def test_arbitrary_json_is_a_plan_or_bad_input(data: Any) -> None:
    assert _load_or_bad_input(data) is None  # nothing random is a valid signed plan


def _mutations() -> st.SearchStrategy[tuple[int | None, str, Any, bool]]:
    """(step index or None for the document, field, new value or a deletion, resign)."""
    return st.tuples(
        st.one_of(st.none(), st.integers(min_value=0, max_value=len(SAVED["steps"]) - 1)),
        st.sampled_from(FIELD_NAMES),
        st.one_of(
            JSON,
            st.sampled_from(
                ["false", "true", True, False, "", "pod/x", "node/flaky-a", "force-delete-pod"]
            ),
            st.just(KeyError),
        ),
        st.booleans(),
    )


def _mutate(base: Any, where: int | None, key: str, value: Any) -> Any:
    data = copy.deepcopy(base)
    target = data if where is None else data["steps"][where % len(data["steps"])]
    if value is KeyError:
        target.pop(key, None)
    else:
        target[key] = value
    return data


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([SAVED, SAVED_OOS]), _mutations())
def test_mutated_plans_are_valid_or_bad_input(
    base: Any, mutation: tuple[int | None, str, Any, bool]
) -> None:
    where, key, value, resign = mutation
    data = _mutate(base, where, key, value)
    if resign:
        # Steps too broken to digest are loaded unsigned.
        with contextlib.suppress(KeyError, TypeError, AttributeError, ValueError):
            data = _resigned(data)
    plan = _load_or_bad_input(data)
    if plan is None:
        return
    # A plan that loads is well typed and well formed, whatever was edited.
    for step in plan.steps:
        assert isinstance(step.allowed, bool) and planfile.step_problem(step) is None
        assert all(isinstance(e, str) for e in step.evidence)
    unchanged = data == base or (where is not None and key in planfile.UNSIGNED)
    summary_only = where is None and key in ("summary", "refusals", "confirmed")
    assert resign or unchanged or summary_only, f"an edit of {key} was not noticed"


def test_a_destructive_node_step_without_the_planned_node_uid_is_malformed() -> None:
    """A Node's delete or out-of-service taint names the Node object planned, as a force delete
    names its pod: the executor compares it with the Node read live (another object of that name
    is skipped), so a step without it is refused, never sent (it used to be compared only when
    present)."""
    from kubectl_nodefail.remediate.planfile import step_problem
    from kubectl_nodefail.remediate.steps import Step

    for action in ("delete-node", "taint-out-of-service"):

        def step(uid: str, action: str = action) -> Step:
            return Step(action, NODE, f"node/{NODE}", "w", True, "g", uid=uid)

        assert "has no valid node UID" in (step_problem(step("")) or "")
        assert "has no valid node UID" in (step_problem(step("not a uid!")) or "")
        assert step_problem(step("0d6f1c3e-0000-4000-8000-000000000000")) is None
    # removing a stale taint from a Ready node is gated on the node alone
    stale = Step("remove-out-of-service", NODE, f"node/{NODE}", "w", True, "g")
    assert step_problem(stale) is None
