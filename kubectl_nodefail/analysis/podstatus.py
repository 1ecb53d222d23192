"""Pod STATUS and READY columns exactly as `kubectl get pods` prints them (printPod)."""

from __future__ import annotations

from kubectl_nodefail.analysis import facts
from kubectl_nodefail.snapshot.model import Obj

TERMINAL_PHASES = {"Succeeded", "Failed"}


def _terminated_reason(term: Obj, prefix: str = "") -> str:
    if term.get("reason"):
        return prefix + term["reason"]
    if term.get("signal"):
        return f"{prefix}Signal:{term['signal']}"
    return f"{prefix}ExitCode:{term.get('exitCode', 0)}"


def _init_reason(pod: Obj) -> tuple[str | None, int]:
    """The Init:... reason while init containers are not done, and ready sidecars counted."""
    status = pod.get("status") or {}
    spec_inits = (pod.get("spec") or {}).get("initContainers") or []
    sidecars = {c["name"] for c in spec_inits if c.get("restartPolicy") == "Always"}
    ready_sidecars = 0
    for i, cs in enumerate(status.get("initContainerStatuses") or []):
        state = cs.get("state") or {}
        term, waiting = state.get("terminated"), state.get("waiting")
        if term is not None and term.get("exitCode", 0) == 0:
            continue
        if cs.get("name") in sidecars and cs.get("started"):
            ready_sidecars += 1 if cs.get("ready") else 0
            continue
        if term is not None:
            return _terminated_reason(term, "Init:"), ready_sidecars
        if waiting and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            return "Init:" + waiting["reason"], ready_sidecars
        return f"Init:{i}/{len(spec_inits)}", ready_sidecars
    return None, ready_sidecars


def _has_condition(pod: Obj, ctype: str) -> bool:
    return any(
        c.get("type") == ctype and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def kubectl_status(pod: Obj) -> str:
    status = pod.get("status") or {}
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    init_reason, _ = _init_reason(pod)
    if init_reason is not None and not _has_condition(pod, "Initialized"):
        reason = init_reason
    else:
        has_running = False
        for cs in reversed(status.get("containerStatuses") or []):
            state = cs.get("state") or {}
            waiting, term = state.get("waiting"), state.get("terminated")
            if waiting and waiting.get("reason"):
                reason = waiting["reason"]
            elif term is not None:
                reason = _terminated_reason(term)
            elif cs.get("ready") and state.get("running") is not None:
                has_running = True
        if reason == "Completed" and has_running:
            reason = "Running" if _has_condition(pod, "Ready") else "NotReady"
    deleting = bool(pod["metadata"].get("deletionTimestamp"))
    if deleting and status.get("reason") == facts.REASON_NODE_LOST:
        return "Unknown"
    if deleting and phase not in TERMINAL_PHASES:
        return "Terminating"
    return reason


def ready_column(pod: Obj) -> str:
    status = pod.get("status") or {}
    spec = pod.get("spec") or {}
    total = len(spec.get("containers") or [])
    ready = sum(
        1
        for cs in status.get("containerStatuses") or []
        if cs.get("ready") and (cs.get("state") or {}).get("running") is not None
    )
    sidecars = [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    total += len(sidecars)
    _, ready_sidecars = _init_reason(pod)
    return f"{ready + ready_sidecars}/{total}"
