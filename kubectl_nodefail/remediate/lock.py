"""The node lock: an annotation with owner, token and expiry, written with a resourceVersion
precondition, so two remediate runs never act on one node at once; taken before a node's first
step, released at the end of the run (also after an interruption), expiring by itself.
"""

from __future__ import annotations

import json
import os
import socket
from datetime import timedelta

from kubectl_nodefail.cluster import kube
from kubectl_nodefail.common.errors import Conflict, NodefailError, NotFound
from kubectl_nodefail.remediate.execbase import _now
from kubectl_nodefail.remediate.nodepatch import (
    NODE_CHANGE_ATTEMPTS,
    NodeChanged,
    NodePatch,
    _annotation_set,
    _escape,
)
from kubectl_nodefail.snapshot.model import Obj, format_time, parse_time

ANNOTATION_LOCK = "kubectl-nodefail.io/lock"
LOCK_MARGIN_SECONDS = 300  # a lock lasts the out-of-service wait plus this


class NodeLock(NodePatch):
    """The Executor's lock on each node it acts on."""

    # --- the node lock ---

    def _lock(self, node: str) -> str | None:
        """Take this run's lock on the node (once); None when held, else why we stood back."""
        if node in self._locks:
            return self._locks[node] or None
        try:
            why = self._take_lock(node)
        except NodefailError as exc:
            why = f"could not take the lock on node {node}: {exc.message}; nothing done here"
        self._locks[node] = why or ""
        return why

    def _take_lock(self, name: str) -> str | None:
        until = _now() + timedelta(seconds=self.wait_timeout + LOCK_MARGIN_SECONDS)
        mine = json.dumps(
            {
                "holder": f"{self.user} on {socket.gethostname()} (pid {os.getpid()})",
                "token": self.token,
                "until": format_time(until),
            },
            sort_keys=True,
        )
        for _ in range(NODE_CHANGE_ATTEMPTS):
            try:
                node = self.cluster.get_object(kube.node_path(name))
            except NotFound:
                return None  # its steps find the node gone and skip
            held = _lock_of(node)
            if held is not None and held.get("token") != self.token:
                expiry = parse_time(str(held.get("until") or ""))
                if expiry is None or expiry > _now():
                    return (
                        f"another remediate run holds the lock on node {name}: "
                        f"{held.get('holder') or 'unknown holder'}, until "
                        f"{held.get('until') or '(unreadable)'}; stood back, nothing done here "
                        f"(if that run died, the lock expires then, or remove the annotation "
                        f"{ANNOTATION_LOCK})"
                    )
                self.progress(f"taking over the expired lock of {held.get('holder')} on {name}")
            try:
                self._patch_node(node, _annotation_set(node, ANNOTATION_LOCK, mine))
            except NotFound:
                return None  # its steps find the node gone and skip
            except NodeChanged:
                continue  # the node changed (maybe another run locked it): look again
            self.progress(f"locked node {name} until {format_time(until)}")
            return None
        return f"could not take the lock on node {name}: it kept changing; nothing done here"

    def _release_locks(self) -> None:
        for name in self.held_locks():
            self.release_lock(name)
        self._locks.clear()

    def held_locks(self) -> list[str]:
        """The nodes whose lock this run holds."""
        return [name for name, why in list(self._locks.items()) if not why]

    def release_lock(self, name: str) -> None:
        """Remove this run's lock from the node (if it still holds it)."""
        for _ in range(NODE_CHANGE_ATTEMPTS):
            try:
                node = self.cluster.get_object(kube.node_path(name))
                held = _lock_of(node)
                if held is None or held.get("token") != self.token:
                    break
                path = f"/metadata/annotations/{_escape(ANNOTATION_LOCK)}"
                self._patch_node(node, [{"op": "remove", "path": path}])
                self.progress(f"released the lock on node {name}")
                break
            except NotFound:
                break
            except Conflict:
                continue
            except NodefailError as exc:
                self.progress(f"could not release the lock on node {name}: {exc.message}")
                break
        else:
            self.progress(
                f"could not release the lock on node {name}: the node changed under each "
                f"of {NODE_CHANGE_ATTEMPTS} attempts; it expires by itself "
                f"(annotation {ANNOTATION_LOCK})"
            )


def _lock_of(node: Obj) -> dict[str, object] | None:
    """The lock annotation's value, or None; an unreadable value counts as held."""
    raw = ((node.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_LOCK)
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"holder": f"unreadable lock {raw[:60]!r}"}
