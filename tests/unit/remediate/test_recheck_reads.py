"""What remediate's re-checks read from the API server right before a mutation (the node, the
pod, the node's lease: `kube.Cluster.get_object`) is held to the dump schema there: any answer
either reads as the re-checks read it, or is one MalformedResponse (exit 14). Before, a node
whose conditions were not a list of objects, or a lease whose spec was not an object, ended in
a traceback (exit 1) in the middle of `remediate --confirm` (found by a review, 2026-12-02).
The same for what remediate reads outside the schema: the volume attachments it waits on, the
access and identity reviews."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_nodefail.analysis.nodes import is_ready
from kubectl_nodefail.cluster import kube
from kubectl_nodefail.common.errors import MalformedResponse
from kubectl_nodefail.remediate import actions
from kubectl_nodefail.remediate.plan import Plan, Step
from tests.support.fakeapi import kubeconfig, serve

PATHS = {
    "Node": "/api/v1/nodes/n1",
    "Pod": "/api/v1/namespaces/shop/pods/db-0",
    "Lease": "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1",
}
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=4), st.just("True")
)
JUNK = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)
TIMES = st.one_of(st.just("2026-12-02T10:00:00.123456Z"), st.just("2026-12-02T10:00:00Z"), JUNK)


@st.composite
def conditions(draw: st.DrawFn) -> Any:
    good = st.fixed_dictionaries(
        {
            "type": st.sampled_from(["Ready", "MemoryPressure"]),
            "status": st.sampled_from(["True", "False", "Unknown"]),
        },
        optional={"lastTransitionTime": TIMES, "reason": JUNK},
    )
    return draw(st.one_of(st.lists(st.one_of(good, JUNK), max_size=3), JUNK))


@st.composite
def answers(draw: st.DrawFn) -> tuple[str, Any]:
    """A kind and a body for it: right in most places, wrong (any JSON) in a few."""
    kind = draw(st.sampled_from(sorted(PATHS)))
    meta: dict[str, Any] = {"name": "x", "uid": "u-1", "resourceVersion": "7"}
    meta.update(
        draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "annotations": st.one_of(
                        st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2), JUNK
                    ),
                    "finalizers": st.one_of(st.lists(st.text(max_size=3), max_size=2), JUNK),
                    "deletionTimestamp": TIMES,
                },
            )
        )
    )
    if kind == "Node":
        body: Any = {
            "metadata": meta,
            "status": draw(st.one_of(st.fixed_dictionaries({"conditions": conditions()}), JUNK)),
        }
    elif kind == "Pod":
        body = {
            "metadata": meta,
            "spec": draw(
                st.one_of(st.fixed_dictionaries({"nodeName": st.one_of(st.just("n1"), JUNK)}), JUNK)
            ),
        }
    else:
        body = {
            "metadata": meta,
            "spec": draw(st.one_of(st.fixed_dictionaries({}, optional={"renewTime": TIMES}), JUNK)),
        }
    return kind, body


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[kube.Cluster, list[bytes]]]:
    body: list[bytes] = [b"{}"]
    with serve(lambda n, method, path: (200, {"Content-Type": "application/json"}, body[0])) as api:
        tmp: Path = tmp_path_factory.mktemp("recheck")
        yield kube.Cluster(kubeconfig(tmp, api.url), timeout=5), body


@settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(answer=answers())
def test_an_object_read_to_act_on_reads_cleanly_or_is_malformed(
    cluster: tuple[kube.Cluster, list[bytes]], answer: tuple[str, Any]
) -> None:
    client, body = cluster
    kind, doc = answer
    body[0] = json.dumps(doc).encode()
    try:
        got = client.get_object(PATHS[kind])
    except MalformedResponse as exc:
        assert exc.exit_code == 14 and "\n" not in exc.line()
        return
    assert got == doc  # whole, as sent
    # what the re-checks read of it, read without an error
    if kind == "Node":
        is_ready(got)
        actions._lock_of(got)
    elif kind == "Pod":
        meta = got["metadata"]
        actions.holding_finalizers(
            list(meta.get("finalizers") or []), bool(meta.get("deletionTimestamp")), "force-delete"
        )
        assert isinstance((got.get("spec") or {}).get("nodeName") or "", str)
    else:
        actions._lease_second((got.get("spec") or {}).get("renewTime") or "")


def test_a_node_whose_conditions_are_not_objects_is_exit_14(
    cluster: tuple[kube.Cluster, list[bytes]],
) -> None:
    client, body = cluster
    node = {
        "metadata": {"name": "n1", "uid": "u", "resourceVersion": "1"},
        "status": {"conditions": [None]},
    }
    body[0] = json.dumps(node).encode()
    with pytest.raises(
        MalformedResponse, match=r"malformed Node n1: status\.conditions\[0\] must be an object"
    ):
        client.get_object(PATHS["Node"])


def test_volume_attachments_waited_on_are_held_to_the_schema() -> None:
    """The attachments remediate waits to see gone (its release check) are read outside the
    diagnosis: held to the same schema, a malformed one is exit 14, not a traceback."""

    class Attachments:
        def list_all(self, path: str, kind: str, **query: Any) -> list[dict[str, Any]]:
            # as kube.Cluster.list_all gives items: each with its kind
            return [{"kind": kind, "metadata": {"name": "va1"}, "spec": ["not", "an", "object"]}]

    executor = actions.Executor(Attachments(), "tester", None, 60, lambda message: None)  # type: ignore[arg-type]
    with pytest.raises(MalformedResponse, match="malformed VolumeAttachment va1: spec must be"):
        executor.attachments()


REVIEWS = st.one_of(
    JUNK,
    st.fixed_dictionaries(
        {
            "status": st.one_of(
                JUNK, st.fixed_dictionaries({}, optional={"allowed": JUNK, "userInfo": JUNK})
            )
        }
    ),
    st.fixed_dictionaries(
        {
            "status": st.fixed_dictionaries(
                {"userInfo": st.fixed_dictionaries({}, optional={"username": JUNK})}
            )
        }
    ),
)


@settings(max_examples=300, deadline=None, database=None)
@given(review=REVIEWS)
def test_access_and_identity_reviews_of_any_shape_read_without_a_traceback(review: Any) -> None:
    """The SelfSubjectAccessReview (remediate's RBAC preflight) and SelfSubjectReview (who
    is acting, for the trail and Events) answers, read outside the dump schema: any shape reads
    as not allowed / unknown user unless it says exactly `allowed: true` / a username."""

    class Reviews:
        context = "fake"

        def create(self, path: str, body: dict[str, Any]) -> Any:
            return review

    plan = Plan(
        "out-of-service",
        [Step("taint-out-of-service", "n1", "node/n1", "", True, "attested", uid="u")],
        [],
        ["n1"],
    )
    missing = actions.preflight(Reviews(), plan)  # type: ignore[arg-type]
    allowed = (
        isinstance(review, dict)
        and isinstance(review.get("status"), dict)
        and review["status"].get("allowed") is True
    )
    assert (missing == []) is allowed
    user = actions.whoami(Reviews())  # type: ignore[arg-type]
    name = (
        kube.answer_field(review, "status", "userInfo", "username")
        if isinstance(review, dict)
        else None
    )
    assert user == (name if isinstance(name, str) and name else "unknown user (context fake)")
