"""The one place a dump's content is checked before the analysis reads it.

A dump is outside data: hand-edited, truncated, produced by another tool. The analysis reads
fields by their Kubernetes types (a pod's `status` is an object, `ownerReferences` a list of
objects, timestamps RFC 3339 strings) and trusts them; this module makes that trust safe. It
checks the type of every field the analysis reads, per object kind, and rejects the dump with
exit 13 and a line naming the object and the field. Fields the analysis never reads are not
checked (they may hold anything), and `null` in an optional field means "absent", as in the
API's own JSON: such keys are dropped so the analysis sees one spelling of "absent".

The schema is data (SCHEMAS below), walked by one small interpreter; a new field the analysis
starts reading gets one line here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from kubectl_nodefail.errors import BadInputError, MalformedResponse

Obj = dict[str, Any]


class Invalid(Exception):
    """A field of the wrong type; `path` is where, from the object's root."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


# --- the schema language -----------------------------------------------------------------


@dataclass(frozen=True)
class Scalar:
    """A JSON scalar checked by `check` (which returns a problem, or None)."""

    describe: str
    check: Callable[[Any], str | None]


@dataclass(frozen=True)
class Object:
    """A JSON object: the listed fields are checked, others left alone; `required` must be
    present (and not null)."""

    fields: dict[str, Spec] = field(default_factory=dict)
    required: tuple[str, ...] = ()


@dataclass(frozen=True)
class ListOf:
    item: Spec


@dataclass(frozen=True)
class MapOf:
    """A JSON object with any keys, every value of one spec (labels, annotations)."""

    value: Spec


@dataclass(frozen=True)
class AnyObject:
    """An object whose content the analysis does not look into (only whether it is set)."""


Spec = Scalar | Object | ListOf | MapOf | AnyObject


def _expect(kind: type | tuple[type, ...], word: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            return f"must be {word}, not a boolean"
        return None if isinstance(value, kind) else f"must be {word}, not {_json_type(value)}"

    return check


def _time(value: Any) -> str | None:
    if not isinstance(value, str):
        return f"must be an RFC 3339 time string, not {_json_type(value)}"
    if parse_rfc3339(value) is None:
        return f"is not an RFC 3339 time with a zone (in range): {value[:40]!r}"
    return None


def _int64(value: Any) -> str | None:
    problem = _expect(int, "an integer")(value)
    if problem is None and not -(2**63) <= value < 2**63:
        return "is out of the 64-bit integer range"
    return problem


def parse_rfc3339(value: str) -> datetime | None:
    """The time in UTC, or None for anything else (no zone, or not representable in UTC, as
    0001-01-01T00:00:00+14:00 is not)."""
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        return parsed.astimezone(timezone.utc) if parsed.tzinfo is not None else None
    except (ValueError, OverflowError):
        return None


STR = Scalar("a string", _expect(str, "a string"))
BOOL = Scalar("a boolean", _expect(bool, "a boolean"))
INT = Scalar("an integer", _int64)
TIME = Scalar("an RFC 3339 time", _time)
STR_MAP = MapOf(STR)
STR_LIST = ListOf(STR)
ANY = AnyObject()


def obj(required: tuple[str, ...] = (), **fields: Spec) -> Object:
    return Object(dict(fields), required)


# --- what the analysis reads, per kind ---------------------------------------------------------

METADATA = obj(
    ("name",),
    name=STR,
    namespace=STR,
    uid=STR,
    resourceVersion=STR,
    labels=STR_MAP,
    annotations=STR_MAP,
    finalizers=STR_LIST,
    creationTimestamp=TIME,
    deletionTimestamp=TIME,
    deletionGracePeriodSeconds=INT,
    ownerReferences=ListOf(
        obj(apiVersion=STR, kind=STR, name=STR, uid=STR, controller=BOOL),
    ),
)
# Owner objects are looked up by uid (their pods point at it): it must be there.
OWNER_METADATA = Object(METADATA.fields, (*METADATA.required, "uid"))
CONDITION = obj(
    type=STR,
    status=STR,
    reason=STR,
    message=STR,
    lastHeartbeatTime=TIME,
    lastTransitionTime=TIME,
)
CONTAINER = obj(("name",), name=STR, restartPolicy=STR)
CONTAINER_STATUS = obj(
    name=STR,
    ready=BOOL,
    started=BOOL,
    state=obj(
        waiting=obj(reason=STR),
        terminated=obj(reason=STR, signal=INT, exitCode=INT),
        running=ANY,
    ),
)

SCHEMAS: dict[str, Object] = {
    "Node": obj(
        ("metadata",),
        metadata=METADATA,
        spec=obj(
            unschedulable=BOOL,
            taints=ListOf(obj(key=STR, value=STR, effect=STR, timeAdded=TIME)),
        ),
        status=obj(conditions=ListOf(CONDITION), nodeInfo=obj(kubeletVersion=STR)),
    ),
    "Lease": obj(
        ("metadata",),
        metadata=METADATA,
        spec=obj(renewTime=TIME, leaseDurationSeconds=INT),
    ),
    "Pod": obj(
        ("metadata", "spec"),
        metadata=METADATA,
        spec=obj(
            nodeName=STR,
            nodeSelector=STR_MAP,
            containers=ListOf(CONTAINER),
            initContainers=ListOf(CONTAINER),
            tolerations=ListOf(
                obj(key=STR, operator=STR, value=STR, effect=STR, tolerationSeconds=INT)
            ),
            volumes=ListOf(obj(persistentVolumeClaim=obj(("claimName",), claimName=STR))),
            affinity=obj(nodeAffinity=obj(requiredDuringSchedulingIgnoredDuringExecution=ANY)),
        ),
        status=obj(
            phase=STR,
            reason=STR,
            message=STR,
            conditions=ListOf(CONDITION),
            containerStatuses=ListOf(CONTAINER_STATUS),
            initContainerStatuses=ListOf(CONTAINER_STATUS),
        ),
    ),
    "VolumeAttachment": obj(
        ("metadata",),
        metadata=METADATA,
        spec=obj(nodeName=STR, source=obj(persistentVolumeName=STR)),
        status=obj(attached=BOOL),
    ),
    "PersistentVolumeClaim": obj(
        ("metadata",),
        metadata=METADATA,
        spec=obj(volumeName=STR, accessModes=STR_LIST),
    ),
    "PersistentVolume": obj(
        ("metadata",),
        metadata=METADATA,
        spec=obj(accessModes=STR_LIST, local=ANY, hostPath=ANY),
    ),
    "Event": obj(
        ("metadata",),
        metadata=METADATA,
        reason=STR,
        message=STR,
        involvedObject=obj(kind=STR, name=STR, namespace=STR),
        lastTimestamp=TIME,
        eventTime=TIME,
    ),
}
# Any other kind is an owner (ReplicaSet, StatefulSet, Job, ..., or one no rule knows).
OWNER = obj(
    ("metadata",),
    kind=STR,
    metadata=OWNER_METADATA,
    spec=obj(
        replicas=INT,
        podManagementPolicy=STR,
        podReplacementPolicy=STR,
        podFailurePolicy=ANY,
        selector=ANY,
    ),
)
ITEM = obj(kind=STR)  # checked first: the kind picks the schema
UNSORTED = obj(("metadata",), metadata=METADATA)  # no kind: left out of the snapshot

# The dump's own envelope (`kubectl nodefail dump`); a kubectl List needs only `items`.
DUMP = obj(
    ("capturedAt", "items"),
    capturedAt=TIME,
    serverVersion=STR,
    source=STR,
    gaps=STR_LIST,
    notes=STR_MAP,
    items=ListOf(ANY),
)
LIST = obj(("items",), items=ListOf(ANY))


# --- the interpreter ---------------------------------------------------------------------------


def schema_of(item: Obj) -> Object:
    kind = item.get("kind")
    if not isinstance(kind, str) or not kind:
        return UNSORTED
    return SCHEMAS.get(kind, OWNER)


INTERN_MAX = 64  # strings up to this long are shared between objects when a dump is loaded


def project(value: Any, spec: Spec) -> Any:
    """Only what the schema names (the analysis reads nothing else): a pod's container specs,
    managedFields, a ReplicaSet's template are dropped. Wrong types are kept as they are, for
    check() to report."""
    if isinstance(spec, Object) and isinstance(value, dict):
        # The schema's own key strings: one copy of "lastTransitionTime" for 60,000 pods.
        return {k: project(value[k], sub) for k, sub in spec.fields.items() if k in value}
    if isinstance(spec, ListOf) and isinstance(value, list):
        return [project(v, spec.item) for v in value]
    if isinstance(spec, Scalar) and type(value) is str and len(value) <= INTERN_MAX:
        return sys.intern(value)  # "True", "NoExecute", timestamps: shared, not repeated
    if isinstance(spec, MapOf) and isinstance(value, dict):
        return {sys.intern(k): project(v, spec.value) for k, v in value.items()}
    return value


def project_item(item: Obj) -> Obj:
    """A top-level object cut to what its kind's schema names (plus kind and apiVersion)."""
    out = project(item, schema_of(item))
    for key in ("kind", "apiVersion"):
        if key in item:
            out[key] = item[key]
    return out


def check(value: Any, spec: Spec, path: str = "") -> None:
    """Raise Invalid at the first field whose type is wrong; drop null optional fields."""
    if isinstance(spec, Scalar):
        problem = spec.check(value)
        if problem:
            raise Invalid(path, problem)
    elif isinstance(spec, AnyObject):
        if not isinstance(value, dict):
            raise Invalid(path, f"must be an object, not {_json_type(value)}")
    elif isinstance(spec, ListOf):
        if not isinstance(value, list):
            raise Invalid(path, f"must be a list, not {_json_type(value)}")
        for i, item in enumerate(value):
            check(item, spec.item, f"{path}[{i}]")
    elif isinstance(spec, MapOf):
        if not isinstance(value, dict):
            raise Invalid(path, f"must be an object, not {_json_type(value)}")
        for key, item in value.items():
            check(item, spec.value, _join(path, key))
    else:
        _check_object(value, spec, path)


def _check_object(value: Any, spec: Object, path: str) -> None:
    if not isinstance(value, dict):
        raise Invalid(path or "the object", f"must be an object, not {_json_type(value)}")
    for name in spec.required:
        if value.get(name) is None:
            raise Invalid(_join(path, name), "is missing")
    for name, sub in spec.fields.items():
        if name not in value:
            continue
        if value[name] is None:
            del value[name]  # null is "absent", as the API server means it
            continue
        check(value[name], sub, _join(path, name))


def check_item(item: Any, index: int) -> None:
    """One object of the dump's items, against the schema of its kind."""
    try:
        check(item, ITEM)
        check(item, schema_of(item))
    except Invalid as exc:
        raise BadInputError(f"{_name(item, index)}: {exc.path} {exc.problem}") from exc


def check_live(objects: Iterable[Obj]) -> None:
    """Objects read from the API server, held to the same schema: the analysis trusts its
    input whichever way it came. A wrong type is a malformed answer (exit 14)."""
    for index, item in enumerate(objects):
        try:
            check(item, schema_of(item))
        except Invalid as exc:
            name = _name(item, index).split(" ", 1)[-1]
            raise MalformedResponse(
                f"the API server sent a malformed {name}: {exc.path} {exc.problem}"
            ) from exc


def check_envelope(doc: Any, spec: Object, source: str) -> None:
    try:
        check(doc, spec)
    except Invalid as exc:
        raise BadInputError(f"dump file {source}: {exc.path or 'the file'} {exc.problem}") from exc


def _name(item: Any, index: int) -> str:
    """How an item is named in an error: its kind and namespace/name when readable."""
    if not isinstance(item, dict):
        return f"items[{index}]"
    kind = item.get("kind") if isinstance(item.get("kind"), str) else None
    meta = item.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) else None
    namespace = meta.get("namespace") if isinstance(meta.get("namespace"), str) else None
    if not name:
        return f"items[{index}]" + (f" ({kind})" if kind else "")
    return f"items[{index}] {kind or 'object'} " + (f"{namespace}/{name}" if namespace else name)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"a number ({value!r:.20})"
    if isinstance(value, str):
        return f"a string ({value[:30]!r})"
    return "a list" if isinstance(value, list) else "an object"
