"""Which API group each kind the analysis knows belongs to.

A kind's name alone does not say what it is: OpenKruise serves its own `StatefulSet` and
`DaemonSet` (apps.kruise.io), other projects their own `Job` or `Node`. An object or an owner
reference is the built-in kind only when its apiVersion's group is the built-in group; one of
the same name from another group is an owner of a kind no rule knows (read by its metadata
only). An object without an apiVersion (a list item, a hand-made dump) is taken as the built-in
kind of its name, as before apiVersions were kept.
"""

from __future__ import annotations

# kind -> the groups that serve it as the API's own kind ("" is the core group, apiVersion "v1")
BUILTIN_GROUPS: dict[str, tuple[str, ...]] = {
    "Node": ("",),
    "Pod": ("",),
    "PersistentVolume": ("",),
    "PersistentVolumeClaim": ("",),
    "ReplicationController": ("",),
    "Event": ("", "events.k8s.io"),
    "Lease": ("coordination.k8s.io",),
    "VolumeAttachment": ("storage.k8s.io",),
    "ReplicaSet": ("apps",),
    "Deployment": ("apps",),
    "StatefulSet": ("apps",),
    "DaemonSet": ("apps",),
    "Job": ("batch",),
    "CronJob": ("batch",),
}


def group_of(api_version: str) -> str:
    """The group of an apiVersion: "apps/v1" -> "apps", "v1" -> "" (the core group)."""
    group, _, version = api_version.rpartition("/")
    return group if version else api_version


def is_builtin(kind: str, api_version: object) -> bool:
    """The object (or reference) is the API's own `kind`: a known kind name, and no apiVersion or
    one of the kind's own groups."""
    groups = BUILTIN_GROUPS.get(kind)
    if groups is None:
        return False
    return not isinstance(api_version, str) or not api_version or group_of(api_version) in groups


def owner_key(kind: str, api_version: object) -> str:
    """How an owner kind is named where kinds of the same name must not meet: the kind itself for
    a built-in kind or a name no built-in kind has, `Kind.group` (kubectl's spelling) for a
    built-in kind's name served by another group."""
    if kind not in BUILTIN_GROUPS or is_builtin(kind, api_version):
        return kind
    return f"{kind}.{group_of(str(api_version))}"
