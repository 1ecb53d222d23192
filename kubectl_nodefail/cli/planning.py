"""What remediate's two paths (named nodes: remediate_run.py; a zone or a label selector:
zone.py) share around the planner: the plan's binding to the cluster it was computed from, who
types the attestations, and the RBAC preflight before any change."""

from __future__ import annotations

from typing import Any

from kubectl_nodefail.common.errors import ApiError, AuthError, NotFound
from kubectl_nodefail.remediate.actions import preflight, whoami
from kubectl_nodefail.remediate.plan import Binding
from kubectl_nodefail.snapshot.model import format_time


def cluster_binding(
    cluster: Any, snap: Any, from_file: str | None, required: bool, uids: Any
) -> Any:
    """The identity of the cluster a plan is computed from (plan.Binding)."""
    captured = format_time(snap.captured_at) if snap.captured_at else ""
    if cluster is None:
        return Binding(captured_at=captured, source=from_file or "", node_uids=dict(uids))
    try:
        uid = str(cluster.get_object("/api/v1/namespaces/kube-system")["metadata"]["uid"])
    except (AuthError, ApiError) as exc:  # shown as "not read" unless the plan is saved
        if required and not isinstance(exc, (AuthError, NotFound)):
            raise
        if required:
            raise AuthError(
                f"cannot bind the plan to its cluster: reading namespace kube-system (its UID "
                f"is the cluster's identity) failed: {exc.message}",
                hint="grant get on namespaces/kube-system: see `kubectl nodefail rbac diagnose`",
            ) from exc
        uid = ""
    return Binding(cluster.context, cluster.host, uid, captured, "", dict(uids))


def attester(cluster: Any) -> str:
    """Who types the attestations, as the API server names them (for the plan's record)."""
    if cluster is None:
        return "unknown user (plan from a dump)"
    return str(whoami(cluster))


def check_permissions(cluster: Any, plan: Any, confirm: bool) -> None:
    """RBAC preflight: refuse before any change (--confirm) or say what is missing (plan)."""
    missing = preflight(cluster, plan) if plan.mutating else []
    if missing and confirm:
        raise AuthError(
            "refused before any change: missing permissions: " + "; ".join(missing),
            hint="bind the roles `kubectl nodefail rbac remediate` prints",
        )
    if missing:
        plan.refusals.append("missing permissions: " + "; ".join(missing))
