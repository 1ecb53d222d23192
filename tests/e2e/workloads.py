"""Manifests of the scenarios' workloads (plain dicts), with short eviction tolerations."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
IMAGE = "registry.example/app:1"  # kwok never pulls images


def tolerations(seconds: int | None) -> list[Obj]:
    """Own not-ready/unreachable NoExecute tolerations (the apiserver default is 300 s)."""
    if seconds is None:
        return []
    return [
        {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}
        for key in ("node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready")
    ]


def pod_spec(
    app: str,
    prefer: str | None = None,
    pin: str | None = None,
    toleration_seconds: int | None = 20,
    grace: int = 30,
    **extra: Any,
) -> Obj:
    """A pod template spec; `prefer` attracts it to a node, `pin` forces it there."""
    spec: Obj = {
        "containers": [{"name": "main", "image": IMAGE}],
        "terminationGracePeriodSeconds": grace,
        "tolerations": tolerations(toleration_seconds),
        **extra,
    }
    if pin:
        spec["nodeSelector"] = {"kubernetes.io/hostname": pin}
    if prefer:
        spec["affinity"] = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "preference": {
                            "matchExpressions": [
                                {
                                    "key": "kubernetes.io/hostname",
                                    "operator": "In",
                                    "values": [prefer],
                                }
                            ]
                        },
                    }
                ]
            }
        }
    return spec


def template(app: str, spec: Obj) -> Obj:
    return {"metadata": {"labels": {"app": app}}, "spec": spec}


def namespace(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def deployment(ns: str, name: str, replicas: int = 1, **spec_args: Any) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": template(name, pod_spec(name, **spec_args)),
        },
    }


def statefulset(
    ns: str,
    name: str,
    replicas: int = 1,
    policy: str = "OrderedReady",
    volume: bool = False,
    **spec_args: Any,
) -> Obj:
    sts: Obj = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "podManagementPolicy": policy,
            "selector": {"matchLabels": {"app": name}},
            "template": template(name, pod_spec(name, **spec_args)),
        },
    }
    if volume:
        sts["spec"]["volumeClaimTemplates"] = [
            {
                "metadata": {"name": "data"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "manual",
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        ]
        sts["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [
            {"name": "data", "mountPath": "/data"}
        ]
    return sts


def daemonset(ns: str, name: str) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": template(name, pod_spec(name, toleration_seconds=None)),
        },
    }


def bare_pod(ns: str, name: str, **spec_args: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
        "spec": pod_spec(name, **spec_args),
    }


def job(ns: str, name: str, failure_policy: bool = False, **spec_args: Any) -> Obj:
    spec = pod_spec(name, restartPolicy="Never", **spec_args)
    obj: Obj = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "backoffLimit": 6,
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }
    if failure_policy:
        obj["spec"]["podFailurePolicy"] = {
            "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
        }
    return obj


def finalizer_pod(ns: str, name: str, node: str) -> Obj:
    pod = bare_pod(ns, name, pin=node)
    pod["metadata"]["finalizers"] = ["e2e.nodefail/hold"]
    return pod


def mirror_pod(ns: str, name: str, node: str, node_uid: str) -> Obj:
    """An approximation of a static pod's mirror: the kubelet's annotations and Node owner."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-{node}",
            "namespace": ns,
            "labels": {"app": name},
            "annotations": {
                "kubernetes.io/config.mirror": "e2e-hash",
                "kubernetes.io/config.source": "file",
                "kubernetes.io/config.hash": "e2e-hash",
            },
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "name": node,
                    "uid": node_uid,
                    "controller": True,
                }
            ],
        },
        "spec": {
            "nodeName": node,
            "containers": [{"name": "main", "image": IMAGE}],
            "tolerations": [{"operator": "Exists", "effect": "NoExecute"}],
            "priorityClassName": "system-node-critical",
        },
    }


def cronjob(ns: str, name: str, **spec_args: Any) -> Obj:
    """A suspended CronJob: its Jobs are made on demand with `kubectl create job --from`."""
    spec = pod_spec(name, restartPolicy="Never", **spec_args)
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "schedule": "0 3 * * *",
            "suspend": True,
            "jobTemplate": {
                "spec": {"template": {"metadata": {"labels": {"app": name}}, "spec": spec}}
            },
        },
    }


def operated_pod(ns: str, name: str, owner: Obj, **spec_args: Any) -> Obj:
    """A pod whose controller is something this tool has no rules for (an operator's object)."""
    pod = bare_pod(ns, name, **spec_args)
    pod["metadata"]["ownerReferences"] = [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            "controller": True,
        }
    ]
    return pod


def forever_tolerations() -> list[Obj]:
    """not-ready/unreachable NoExecute tolerated without tolerationSeconds: never evicted."""
    return [
        {"key": key, "operator": "Exists", "effect": "NoExecute"}
        for key in ("node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready")
    ]


def only_on(obj: Obj, nodes: list[str]) -> Obj:
    """Require the pods of a workload (or a bare pod) to run on one of `nodes`."""
    spec = obj["spec"]["template"]["spec"] if "template" in obj["spec"] else obj["spec"]
    # Added to the node affinity already there: a `prefer=` (preferred term) must survive, or
    # the scheduler picks among `nodes` at random.
    affinity = spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
    affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": nodes}
                ]
            }
        ]
    }
    return obj


def with_finalizer(obj: Obj, finalizer: str) -> Obj:
    """A pod (or every pod of a workload: controllers copy the template's finalizers)."""
    meta = obj["spec"]["template"]["metadata"] if "template" in obj["spec"] else obj["metadata"]
    meta["finalizers"] = [finalizer]
    return obj
