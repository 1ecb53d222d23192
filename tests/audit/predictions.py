"""What a diagnosis predicts, read from `kubectl nodefail diagnose -o json` only (never from the
analysis code), so the audit keeps judging whatever the analysis becomes."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tests.audit.observe import parse_time

Obj = dict[str, Any]


@dataclass
class PodPrediction:
    moment: str  # d1 | d2: which diagnosis
    at: datetime  # when it was captured
    namespace: str
    name: str
    uid: str
    node: str
    controller: str
    terminating: bool
    eviction_at: datetime | None
    eviction_text: str
    replacement_state: str
    replacement_pods: list[str]
    pending_reason: str
    action_code: str
    action_until: datetime | None
    if_node_returns: str
    finalizers: list[str]
    claims: list[Obj] = field(default_factory=list)  # pods[].claims when the JSON has them
    expected_by: datetime | None = None  # replacement.expectedBy: a not-yet one made by then
    replacement_summary: str = ""  # replacement.summary (older results lack it)

    @property
    def never_evicted(self) -> bool:
        return self.eviction_at is None and "never evicted" in self.eviction_text

    def as_dict(self) -> Obj:
        out = dict(self.__dict__)
        for key in ("at", "eviction_at", "action_until", "expected_by"):
            out[key] = out[key].isoformat() if out[key] else None
        return out


def pod_predictions(diagnosis: Obj, moment: str, prefix: str) -> list[PodPrediction]:
    """Every pod of the audit's namespaces the diagnosis lists."""
    captured = parse_time(diagnosis.get("capturedAt"))
    assert captured is not None, "diagnosis without capturedAt"
    out = []
    for pod in diagnosis.get("pods") or []:
        if not str(pod.get("namespace", "")).startswith(prefix):
            continue
        rep = pod.get("replacement") or {}
        action = pod.get("action") or {}
        out.append(
            PodPrediction(
                moment=moment,
                at=captured,
                namespace=pod["namespace"],
                name=pod["name"],
                uid=pod.get("uid") or "",
                node=pod.get("node") or "",
                controller=pod.get("controller") or "",
                terminating=bool(pod.get("terminating")),
                eviction_at=parse_time(pod.get("evictionAt")),
                eviction_text=str(pod.get("timeline") or ""),
                replacement_state=str(rep.get("state") or ""),
                replacement_pods=list(rep.get("pods") or []),
                pending_reason=str(rep.get("pendingReason") or ""),
                action_code=str(action.get("code") or ""),
                action_until=parse_time(action.get("until")),
                if_node_returns=str(pod.get("ifNodeReturns") or ""),
                finalizers=list(pod.get("finalizers") or []),
                claims=list(pod.get("claims") or []),
                expected_by=parse_time(rep.get("expectedBy")),
                replacement_summary=str(rep.get("summary") or ""),
            )
        )
    return out


def node_predictions(diagnosis: Obj, nodes: set[str]) -> list[Obj]:
    """Per failed node of the batch: its action (code, until) and its newest timeline entry."""
    out = []
    for node in diagnosis.get("nodes") or []:
        if node.get("name") not in nodes:
            continue
        action = node.get("action") or {}
        timeline = node.get("timeline") or []
        out.append(
            {
                "node": node["name"],
                "status": node.get("status"),
                "cause": (node.get("cause") or {}).get("code"),
                "action": action.get("code"),
                "until": action.get("until"),
                "last_event": timeline[-1]["kind"] if timeline else None,
                "next": node.get("next"),
            }
        )
    return out
