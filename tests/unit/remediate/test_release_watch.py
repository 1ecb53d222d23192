"""The watch after an accepted out-of-service taint or Node delete (remediate/release.py): what
it waits for. Audit 2061 on the real control plane: a StatefulSet whose template sets
spec.nodeName made its w-0 again on the node after each release, and the watch, counting it,
ran to --wait-timeout and reported the taint unconfirmed (exit 7) though everything the taint
was to release had gone."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from kubectl_nodefail.remediate.mutations import Mutations
from kubectl_nodefail.remediate.stop import Stop
from kubectl_nodefail.snapshot.model import format_time

NODE = "flaky-r2"
SENT = datetime(2026, 12, 6, 12, 47, 40, 500000, tzinfo=timezone.utc)


def _pod(name: str, created: datetime) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ns", "name": name, "creationTimestamp": format_time(created)},
        "spec": {"nodeName": NODE, "tolerations": []},
    }


class _Cluster:
    """The node's pods: `old` (there before the request) gone after one read, `again` (made
    after it, as a template bound to the node does) there at every read."""

    def __init__(self) -> None:
        self.reads = 0

    def list_all(self, path: str, kind: str, **query: Any) -> list[Any]:
        if kind != "Pod":
            return []
        self.reads += 1
        again = _pod("w-0", SENT + timedelta(seconds=3))
        return [again] if self.reads > 1 else [_pod("old", SENT - timedelta(seconds=60)), again]


def _watch(since: datetime | None, wait_timeout: float = 3) -> tuple[bool, str]:
    executor = Mutations.__new__(Mutations)
    executor.cluster = _Cluster()  # type: ignore[assignment]
    executor.wait_timeout = wait_timeout
    executor.stop = Stop()
    executor.progress = lambda message: None  # type: ignore[method-assign]
    return executor._wait_released(NODE, False, since)


def test_a_pod_bound_to_the_node_after_the_request_is_named_not_waited_for() -> None:
    released, detail = _watch(SENT)
    assert released, detail
    assert (
        "bound to the node after the request (made again there), not waited for: ns/w-0" in detail
    )


@pytest.mark.parametrize("created_after", [0, 0.4])
def test_a_pod_made_in_the_requests_own_second_is_still_waited_for(created_after: float) -> None:
    """Stamped to the second: a pod made in the second the request was accepted may have been
    there before it, and is waited for (never said released without being seen gone)."""
    cluster = _Cluster()
    executor = Mutations.__new__(Mutations)
    executor.cluster = cluster  # type: ignore[assignment]
    executor.wait_timeout = 1
    executor.stop = Stop()
    executor.progress = lambda message: None  # type: ignore[method-assign]
    same = SENT.replace(microsecond=0) + timedelta(seconds=created_after)
    cluster.list_all = lambda path, kind, **q: [_pod("w-0", same)] if kind == "Pod" else []  # type: ignore[method-assign]
    released, detail = executor._wait_released(NODE, False, SENT)
    assert not released and "still 1 pods to be released (ns/w-0)" in detail


def test_without_the_requests_time_every_pod_on_the_node_is_waited_for() -> None:
    released, detail = _watch(None, wait_timeout=1)
    assert not released and "still 1 pods to be released (ns/w-0)" in detail
