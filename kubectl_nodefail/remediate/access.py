"""Before a run: what the plan's steps need of RBAC (checked by SelfSubjectAccessReview), and
who the API server says we are (SelfSubjectReview), for the trail, the Events and the
annotations.
"""

from __future__ import annotations

from kubectl_nodefail.analysis import facts
from kubectl_nodefail.cluster import kube
from kubectl_nodefail.common.errors import ApiError, Forbidden, NotFound
from kubectl_nodefail.remediate.execbase import _pod_ref
from kubectl_nodefail.remediate.steps import Plan

# What each action needs, as (verb, group, resource); every mutating action also takes the
# node lock (get + patch nodes).
_LOCK = [("get", "", "nodes"), ("patch", "", "nodes")]
NEEDS: dict[str, list[tuple[str, str, str]]] = {
    "taint-out-of-service": [
        *_LOCK,
        ("get", "coordination.k8s.io", "leases"),
        ("list", "", "pods"),
    ],
    "remove-out-of-service": [*_LOCK],
    "force-delete-pod": [
        *_LOCK,
        ("get", "coordination.k8s.io", "leases"),
        ("get", "", "pods"),
        ("delete", "", "pods"),
    ],
    "delete-node": [
        *_LOCK,
        ("get", "coordination.k8s.io", "leases"),
        ("delete", "", "nodes"),
    ],
}


def preflight(cluster: kube.Cluster, plan: Plan) -> list[str]:
    """Missing permissions for the plan's mutating steps, by SelfSubjectAccessReview."""
    wanted: set[tuple[str, str, str, str]] = set()
    for step in plan.mutating:
        ns, _ = _pod_ref(step)
        for verb, group, resource in NEEDS.get(step.action, []):
            scope = (
                facts.NODE_LEASE_NAMESPACE
                if resource == "leases"
                else (ns if resource == "pods" else "")
            )
            wanted.add((verb, group, resource, scope))
        wanted.add(("create", "", "events", "default"))  # a node's Events; a pod's, at times
        if ns:
            wanted.add(("create", "", "events", ns))
    missing = []
    for verb, group, resource, ns in sorted(wanted):
        review = cluster.create(
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {
                    "resourceAttributes": {
                        "verb": verb,
                        "group": group,
                        "resource": resource,
                        **({"namespace": ns} if ns else {}),
                    }
                },
            },
        )
        if kube.answer_field(review, "status", "allowed") is not True:  # "true" is not true
            where = f" in namespace {ns}" if ns else " (cluster-wide)"
            missing.append(f"{verb} {resource}{'.' + group if group else ''}{where}")
    return missing


# SelfSubjectReview: v1 from 1.28, v1beta1 in 1.27, v1alpha1 in 1.26 behind a feature gate that
# is off by default (kube_features.go APISelfSubjectReview).
SELF_SUBJECT_REVIEW_VERSIONS = ("v1", "v1beta1", "v1alpha1")


def whoami(cluster: kube.Cluster) -> str:
    """Who the server says we are, for the trail, the Events and the annotations."""
    for version in SELF_SUBJECT_REVIEW_VERSIONS:
        try:
            review = cluster.create(
                f"/apis/authentication.k8s.io/{version}/selfsubjectreviews",
                {"apiVersion": f"authentication.k8s.io/{version}", "kind": "SelfSubjectReview"},
            )
        except NotFound:
            continue  # not served in this version: try the older one
        except (ApiError, Forbidden):  # 1.26 forbids the review to all but admins (no rule)
            break
        user = kube.answer_field(review, "status", "userInfo", "username")
        if isinstance(user, str) and user:
            return user
        break
    return f"unknown user (context {cluster.context})"
