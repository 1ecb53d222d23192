"""A patch of a node as read: a JSON patch that starts with a test of the resourceVersion read,
so the server refuses it if the node changed since (NodeChanged), and how many times a run
reads the node again when it did.
"""

from __future__ import annotations

from kubectl_nodefail.cluster import kube
from kubectl_nodefail.common.errors import ApiError, Conflict, NodefailError, NotFound
from kubectl_nodefail.remediate.execbase import ExecutorBase
from kubectl_nodefail.snapshot.model import Obj

# A node object changes under a run for reasons of its own (status, conditions, the node
# controller's taints), most often right after its kubelet returns. The step whose only gate is
# the node object (remove-out-of-service: the node is Ready) reads it again, re-checks and tries
# again; the others were planned from more than the node (pods, lease, attestation, the cluster's
# zones), so a change skips them and a re-run plans afresh.
RETRIED_ON_NODE_CHANGE = frozenset({"remove-out-of-service"})
NODE_CHANGE_ATTEMPTS = 3  # also the tries at taking and releasing the lock


def _escape(key: str) -> str:
    """JSON-pointer escaping of a map key (annotations contain '/')."""
    return key.replace("~", "~0").replace("/", "~1")


class NodeChanged(Conflict):
    """A node patch refused because the node changed since it was read."""


class NodePatch(ExecutorBase):
    """The Executor's node patch (the lock, the taint and its removal all go through it)."""

    def _patch_node(self, node: Obj, ops: list[Obj]) -> None:
        """A JSON patch of the node as read, refused by the server if it changed since.

        Every node patch starts with a test of the resourceVersion read. When that test fails,
        the API server answers 422 with a generic message and no cause (it drops the patch
        library's error text: apiserver endpoints/handlers/patch.go), the same answer as for any
        patch that does not apply. So a 422 is told apart by reading the node again: a new
        resourceVersion means it changed under us (NodeChanged); otherwise the error stands."""
        meta = node["metadata"]
        name, read = meta["name"], meta["resourceVersion"]
        test = {"op": "test", "path": "/metadata/resourceVersion", "value": read}
        try:
            self.cluster.json_patch(kube.node_path(name), [test, *ops])
        except ApiError as exc:
            if exc.status != 422 or not exc.bare:  # a validation error names its object
                raise
            try:
                now = self.cluster.get_object(kube.node_path(name))["metadata"]["resourceVersion"]
            except NotFound:
                raise
            except NodefailError as again:
                raise ApiError(
                    f"{exc.message}; reading node {name} again to see whether it changed "
                    f"failed too: {again.message}",
                    status=exc.status,
                ) from exc
            if now == read:
                raise
            raise NodeChanged(
                f"node {name} changed between our read and our write (resourceVersion "
                f"{read} -> {now})",
                status=422,
            ) from exc


def _annotation_set(node: Obj, key: str, value: str) -> list[Obj]:
    if node["metadata"].get("annotations") is None:
        return [{"op": "add", "path": "/metadata/annotations", "value": {key: value}}]
    return [{"op": "add", "path": f"/metadata/annotations/{_escape(key)}", "value": value}]
