"""What every part of the Executor shares: the state its parts read (declared once here; the
dataclass Executor in actions.py gives its fields and defaults), the clock, and the pod a step
names.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TextIO

from kubectl_nodefail.cluster import kube
from kubectl_nodefail.remediate.steps import Step
from kubectl_nodefail.remediate.stop import Stop


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _pod_ref(step: Step) -> tuple[str, str]:
    """(namespace, name) of a pod step's target "pod/NAMESPACE/NAME"; ("", "") for node steps."""
    if not step.target.startswith("pod/"):
        return "", ""
    _, ns, name = step.target.split("/", 2)
    return ns, name


class ExecutorBase:
    """The Executor's state, as its parts (trail.py, lock.py, recheck.py, release.py,
    mutations.py, nodepatch.py) read it; actions.Executor declares these as its fields."""

    cluster: kube.Cluster
    user: str
    log: TextIO | None
    wait_timeout: float
    progress: Callable[[str], None]
    stop: Stop
    token: str
    defer_release: bool
    _locks: dict[str, str]
    _write: threading.Lock
    _claims: dict[tuple[str, str], str]
    _pvs: dict[str, str]
