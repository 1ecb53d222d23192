"""Builders for the audit judge's unit tests: a polled pod (observe.PodView) and a diagnosis'
prediction (predictions.PodPrediction), every field at a neutral value unless given; each test
module passes its own (its clock, namespace, node)."""

from __future__ import annotations

from typing import Any

from tests.audit.observe import PodView
from tests.audit.predictions import PodPrediction


def pod_view(**fields: Any) -> PodView:
    """A Running pod of a StatefulSet on the node "dead", not deleted."""
    base: dict[str, Any] = {
        "namespace": "",
        "name": "w-0",
        "uid": "",
        "owner_uid": "owner",
        "owner_kind": "StatefulSet",
        "node": "dead",
        "phase": "Running",
        "created": None,
        "deletion": None,
        "grace": None,
        "disruption": None,
        "disruption_reason": "",
        "scheduled_message": "",
        "node_selector_host": "",
        "finalizers": (),
    }
    return PodView(**{**base, **fields})


def pod_prediction(**fields: Any) -> PodPrediction:
    """The first diagnosis' word on a pod not Terminating; `at` (when it was read) is given."""
    base: dict[str, Any] = {
        "moment": "d1",
        "namespace": "",
        "name": "w-0",
        "uid": "",
        "node": "dead",
        "controller": "statefulset",
        "terminating": False,
        "eviction_at": None,
        "eviction_text": "",
        "replacement_state": "",
        "replacement_pods": [],
        "pending_reason": "",
        "action_code": "",
        "action_until": None,
        "if_node_returns": "",
        "finalizers": [],
    }
    return PodPrediction(**{**base, **fields})
