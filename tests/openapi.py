"""The API server's own OpenAPI v3, recorded per minor, and the dump schema held to it.

`record` reads the group documents the dump schema's kinds live in (/openapi/v3/api/v1,
/openapi/v3/apis/apps/v1, ...) and keeps the component schemas reachable from those kinds;
tests/e2e/test_versions.py compares that with tests/recorded-openapi/v1.MINOR.json on each
minor's real control plane (and writes it with NODEFAIL_RECORD=1). `problems` walks one of our
specs beside the API's schema of its kind: a field we read that the API does not declare, or
declares with another type, is a problem.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubectl_nodefail.snapshot import dumpschema as ds

FIXTURES = Path(__file__).parent / "recorded-openapi"  # beside, not in, the dump fixtures
GROUP_DOCUMENTS = (
    "api/v1",
    "apis/apps/v1",
    "apis/batch/v1",
    "apis/coordination.k8s.io/v1",
    "apis/storage.k8s.io/v1",
    "apis/events.k8s.io/v1",
)
# Each kind the dump schema knows from the API server itself, and its type(s) there. An Event
# is read in both of its spellings (core/v1 and events.k8s.io/v1): a field we read must be in
# one of them, with the same type in each that has it.
KIND_TYPES: dict[str, tuple[str, ...]] = {
    "Node": ("io.k8s.api.core.v1.Node",),
    "Pod": ("io.k8s.api.core.v1.Pod",),
    "PersistentVolume": ("io.k8s.api.core.v1.PersistentVolume",),
    "PersistentVolumeClaim": ("io.k8s.api.core.v1.PersistentVolumeClaim",),
    "ReplicationController": ("io.k8s.api.core.v1.ReplicationController",),
    "Event": ("io.k8s.api.core.v1.Event", "io.k8s.api.events.v1.Event"),
    "Lease": ("io.k8s.api.coordination.v1.Lease",),
    "VolumeAttachment": ("io.k8s.api.storage.v1.VolumeAttachment",),
    "ReplicaSet": ("io.k8s.api.apps.v1.ReplicaSet",),
    "Deployment": ("io.k8s.api.apps.v1.Deployment",),
    "StatefulSet": ("io.k8s.api.apps.v1.StatefulSet",),
    "DaemonSet": ("io.k8s.api.apps.v1.DaemonSet",),
    "Job": ("io.k8s.api.batch.v1.Job",),
    "CronJob": ("io.k8s.api.batch.v1.CronJob",),
}
# Fields of ours that no API type has, by design: a pod built from a server-side Table row
# carries the printed columns it was read from (podrows.py).
LOCAL_FIELDS = {("Pod", "readFrom")}
Components = dict[str, Any]


def record(get: Callable[[str], Any]) -> Components:
    """The component schemas reachable from KIND_TYPES, read with `get` (a path -> parsed JSON).
    A type that several documents repeat (ObjectMeta) is the same in each: the first is kept."""
    merged: Components = {}
    for doc in GROUP_DOCUMENTS:
        schemas = get(f"/openapi/v3/{doc}")["components"]["schemas"]
        for name, schema in schemas.items():
            merged.setdefault(name, schema)
    kept: Components = {}
    todo = [name for names in KIND_TYPES.values() for name in names]
    while todo:
        name = todo.pop()
        if name in kept:
            continue
        kept[name] = merged[name]
        todo += _refs(merged[name])
    return dict(sorted(kept.items()))


def load(minor: str) -> Components:
    return json.loads((FIXTURES / f"v{minor}.json").read_text())


def recorded_minors() -> list[str]:
    return sorted(p.stem[1:] for p in FIXTURES.glob("v1.*.json"))


def _refs(schema: Any) -> list[str]:
    out: list[str] = []
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str):
            out.append(ref.rsplit("/", 1)[-1])
        for value in schema.values():
            out += _refs(value)
    elif isinstance(schema, list):
        for value in schema:
            out += _refs(value)
    return out


def resolve(schema: dict[str, Any], components: Components) -> dict[str, Any]:
    """A schema with its reference followed (`$ref`, or `allOf: [{$ref}]` as the API writes a
    field of a named type with a default)."""
    for _ in range(20):
        ref = schema.get("$ref")
        if ref is None and len(schema.get("allOf") or []) == 1:
            ref = schema["allOf"][0].get("$ref")
        if ref is None:
            return schema
        schema = components[ref.rsplit("/", 1)[-1]]
    raise AssertionError(f"reference loop at {schema}")


def problems(kind: str, spec: ds.Object, components: Components) -> list[str]:
    """Where `spec` (our schema of `kind`) reads a field the API does not declare, or declares
    with another type."""
    roots = [components[name] for name in KIND_TYPES[kind]]
    out: list[str] = []
    for name, sub in spec.fields.items():
        if (kind, name) in LOCAL_FIELDS:
            continue
        declared = [resolve(r, components).get("properties", {}).get(name) for r in roots]
        found = [d for d in declared if d is not None]
        if not found:
            out.append(f"{kind}.{name}: {MISSING}")
        for schema in found:
            out += _check(sub, schema, components, f"{kind}.{name}")
    return out


def _check(spec: ds.Spec, schema: dict[str, Any], components: Components, path: str) -> list[str]:
    schema = resolve(schema, components)
    api_type = _type_of(schema)
    if isinstance(spec, ds.Object):
        if api_type != "object" or "properties" not in schema:
            return [f"{path}: ours is an object with fields, the API's is {api_type}"]
        out = []
        for name, sub in spec.fields.items():
            declared = schema["properties"].get(name)
            if declared is None:
                out.append(f"{path}.{name}: {MISSING}")
            else:
                out += _check(sub, declared, components, f"{path}.{name}")
        return out
    if isinstance(spec, ds.ListOf):
        if api_type != "array":
            return [f"{path}: ours is a list, the API's is {api_type}"]
        return _check(spec.item, schema["items"], components, f"{path}[]")
    if isinstance(spec, ds.MapOf):
        extra = schema.get("additionalProperties")
        if api_type != "object" or not isinstance(extra, dict) or "properties" in schema:
            return [f"{path}: ours is a map, the API's is {api_type}"]
        return _check(spec.value, extra, components, f"{path}{{}}")
    if isinstance(spec, ds.AnyObject):
        return [] if api_type == "object" else [f"{path}: ours is an object, the API's {api_type}"]
    want = SCALAR_TYPES[spec.describe]
    return [] if api_type == want else [f"{path}: ours is {spec.describe}, the API's is {api_type}"]


def check_crd(kind: str, spec: ds.Object, root: dict[str, Any]) -> list[str]:
    """Where `spec` (our schema of an automation kind) reads a field that one served version of
    its CustomResourceDefinition (`root`: that version's openAPIV3Schema, types only, as
    tests/recorded-openapi/crds.json transcribes it) does not declare, or declares with another
    type. metadata is the API's ObjectMeta, held to the API server's own OpenAPI elsewhere."""
    out: list[str] = []
    for name, sub in spec.fields.items():
        if name == "metadata":
            continue
        declared = root.get("properties", {}).get(name)
        if declared is None:
            out.append(f"{kind}.{name}: {MISSING}")
        else:
            out += _check(sub, declared, {}, f"{kind}.{name}")
    return out


MISSING = "not in the API's type"  # a field a later minor added reads as absent on this one

# Our scalars as the API writes its types: a time is a string of format date-time (Time and
# MicroTime alike), an int-or-string carries the extension that says so.
SCALAR_TYPES = {
    ds.STR.describe: "string",
    ds.BOOL.describe: "boolean",
    ds.INT.describe: "integer",
    ds.TIME.describe: "string/date-time",
    ds.INT_OR_STR.describe: "int-or-string",
}


def _type_of(schema: dict[str, Any]) -> str:
    if schema.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    kind = schema.get("type")
    if kind == "string" and schema.get("format") == "date-time":
        return "string/date-time"
    if kind is None and "properties" in schema:
        return "object"
    return str(kind)
