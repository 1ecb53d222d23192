"""The audit's taint added later (tests/audit/latetaint.py, map row 1): which batch has it, the
patch that adds it beside the node lifecycle controller's own, and the pods' tolerations of it
(tests/audit/scenarios.py). The control plane's own answer is the audit's and
tests/e2e/test_eviction_clock.py's."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from tests.audit import latetaint, restart
from tests.audit.scenarios import LATE_SEED, LATE_TAINT, generate, manifests

AT = datetime(2026, 12, 6, 21, 0, 5, 700000, tzinfo=timezone.utc)
OWN = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "x"}


def test_one_regular_batch_per_seed_and_never_the_restarts() -> None:
    assert not any(latetaint.late_batch(s, b) for s in range(2000, LATE_SEED) for b in range(3))
    for seed in range(LATE_SEED, LATE_SEED + 40):
        chosen = [b for b in (0, 1) if latetaint.late_batch(seed, b)]
        assert len(chosen) == 1
        assert restart.restart_batch(seed, chosen[0]) is None
        assert not latetaint.late_batch(seed, 2)


class _Plane:
    """What add() asks of the control plane: the Node, and a kubectl patch that fails
    `refusals` times (another writer changed the list in between)."""

    def __init__(self, refusals: int) -> None:
        self.refusals = refusals
        self.patches: list[list[Any]] = []

    def get(self, kind: str, name: str) -> Any:
        return {"spec": {"taints": [OWN]}}

    def kubectl(self, *args: str, check: bool = True) -> str:
        self.patches.append(json.loads(args[args.index("-p") + 1]))
        if len(self.patches) <= self.refusals:
            return ""
        return "node/n patched"


def test_the_taint_is_appended_with_its_time_to_the_list_read() -> None:
    plane = _Plane(refusals=2)
    latetaint.add(plane, "n", AT)  # type: ignore[arg-type]
    assert len(plane.patches) == 3
    test, added = plane.patches[-1]
    assert test == {"op": "test", "path": "/spec/taints", "value": [OWN]}
    assert added["op"] == "add" and added["path"] == "/spec/taints/-"
    assert added["value"] == {
        "key": LATE_TAINT,
        "value": latetaint.VALUE,
        "effect": "NoExecute",
        "timeAdded": "2026-12-06T21:00:05Z",
    }


def test_a_list_that_keeps_changing_is_an_error_not_a_silent_skip() -> None:
    plane = _Plane(refusals=latetaint.TRIES)
    try:
        latetaint.add(plane, "n", AT)  # type: ignore[arg-type]
    except RuntimeError as exc:
        assert LATE_TAINT in str(exc)
    else:
        raise AssertionError("no error")


def _late_toleration(pod_spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in pod_spec.get("tolerations") or [] if t.get("key") == LATE_TAINT]


def _pod_spec(objs: list[dict[str, Any]]) -> dict[str, Any]:
    """The pod spec of a scenario's workload, whatever its kind."""
    obj = next(o for o in objs if o["kind"] not in ("Namespace", "PersistentVolume"))
    spec = obj["spec"]
    if obj["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    return spec if obj["kind"] == "Pod" else spec["template"]["spec"]


def test_each_pod_tolerates_it_as_drawn_and_an_owner_that_remakes_it_there_forever() -> None:
    drawn = [generate(LATE_SEED, i) for i in range(200)]
    assert {s.late for s in drawn} == {"forever", "limited", "none"}
    assert all(generate(LATE_SEED - 1, i).late == "-" for i in range(50))
    for s in drawn:
        spec = _pod_spec(manifests(s, "node-a"))
        found = _late_toleration(spec)
        if s.toleration == "wildcard":
            assert s.late == "forever" and not found  # {operator: Exists} tolerates it
        elif s.late == "none":
            assert not found
        else:
            assert len(found) == 1 and found[0]["effect"] == "NoExecute"
            assert found[0].get("tolerationSeconds") == s.late_seconds
        if s.placement == "pin-nodename" or s.kind == "daemonset":
            assert s.late == "forever"
