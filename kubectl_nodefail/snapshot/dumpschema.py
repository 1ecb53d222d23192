"""The one place a dump's content is checked before the analysis reads it.

A dump is outside data: hand-edited, truncated, produced by another tool. The analysis reads
fields by their Kubernetes types (a pod's `status` is an object, `ownerReferences` a list of
objects, timestamps RFC 3339 strings) and trusts them; this module makes that trust safe. It
checks the type of every field the analysis reads, per object kind, and rejects the dump with
exit 13 and a line naming the object and the field. Fields the analysis never reads are not
checked (they may hold anything), and `null` in an optional field means "absent", as in the
API's own JSON: such keys are dropped so the analysis sees one spelling of "absent".

The schema is data (SCHEMAS below), turned once per spec into a small function that checks and
cuts (`take`); a new field the analysis starts reading gets one line here.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Union

from kubectl_nodefail.common.errors import BadInputError, MalformedResponse
from kubectl_nodefail.snapshot import kinds

Obj = dict[str, Any]


class Invalid(Exception):
    """A field of the wrong type; `path` is where, from the object's root (built on the way
    out, so the checks that pass build no strings)."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem

    def under(self, key: str) -> Invalid:
        """The same problem, one level up: `key` prefixed to the path."""
        if not self.path:
            path = key
        elif self.path.startswith("["):
            path = key + self.path
        else:
            path = f"{key}.{self.path}"
        return Invalid(path, self.problem)


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


Spec = Union[Scalar, Object, ListOf, MapOf, AnyObject]  # evaluated at run time: no `|` (3.9)


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


# RFC 3339 as the API server's Go code reads it (time.RFC3339): a fraction of any length
# (RFC3339Nano has 9 digits), then Z or an offset. datetime.fromisoformat alone differs by
# Python: 3.9 and 3.10 take only 3 or 6 digits, 3.11+ also forms that are not RFC 3339.
_RFC3339 = re.compile(
    r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})", re.ASCII
)


@functools.lru_cache(maxsize=1 << 16)
def parse_rfc3339(value: str) -> datetime | None:
    """The time in UTC (a fraction cut to microseconds), or None for anything else (no zone,
    not RFC 3339, or not representable in UTC, as 0001-01-01T00:00:00+14:00 is not).
    Remembered: a snapshot repeats the same few seconds in thousands of objects, read once
    by the checks and again by the analysis (datetimes are immutable, so sharing is safe)."""
    match = _RFC3339.fullmatch(value)
    if not match:
        return None
    seconds, fraction, zone = match.groups()
    micros = f".{(fraction or '')[:6]:0<6}"
    try:
        parsed = datetime.fromisoformat(seconds + micros + ("+00:00" if zone == "Z" else zone))
        return parsed.astimezone(timezone.utc)
    except (ValueError, OverflowError):
        return None


STR = Scalar("a string", _expect(str, "a string"))
BOOL = Scalar("a boolean", _expect(bool, "a boolean"))
INT = Scalar("an integer", _int64)
TIME = Scalar("an RFC 3339 time", _time)
STR_MAP = MapOf(STR)


def _int_or_str(value: Any) -> str | None:
    if isinstance(value, str):
        return None
    return _int64(value) and "must be an integer or a string (int-or-string)"


INT_OR_STR = Scalar("an integer or a string", _int_or_str)
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
# ... and its generation (a Deployment's status speaks of its spec once observedGeneration
# reaches it)
OWNER_METADATA = Object({**METADATA.fields, "generation": INT}, (*METADATA.required, "uid"))
# A condition as most kinds' types have it (PodCondition, JobCondition, DeploymentCondition, ...);
# a Node's also carries its kubelet's heartbeat.
CONDITION = obj(type=STR, status=STR, reason=STR, message=STR, lastTransitionTime=TIME)
NODE_CONDITION = Object({**CONDITION.fields, "lastHeartbeatTime": TIME})
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
            providerID=STR,
        ),
        status=obj(
            conditions=ListOf(NODE_CONDITION),
            nodeInfo=obj(kubeletVersion=STR),
            volumesInUse=STR_LIST,
        ),
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
            terminationGracePeriodSeconds=INT,
            containers=ListOf(CONTAINER),
            initContainers=ListOf(CONTAINER),
            tolerations=ListOf(
                obj(key=STR, operator=STR, value=STR, effect=STR, tolerationSeconds=INT)
            ),
            volumes=ListOf(
                obj(
                    name=STR,
                    persistentVolumeClaim=obj(("claimName",), claimName=STR),
                    ephemeral=ANY,
                )
            ),
            affinity=obj(nodeAffinity=obj(requiredDuringSchedulingIgnoredDuringExecution=ANY)),
        ),
        status=obj(
            phase=STR,
            reason=STR,
            message=STR,
            conditions=ListOf(CONDITION),
            containerStatuses=ListOf(CONTAINER_STATUS),
            initContainerStatuses=ListOf(CONTAINER_STATUS),
            ephemeralContainerStatuses=ListOf(CONTAINER_STATUS),
        ),
        # a pod built from a Table row (podrows.py): the printed columns it was read from
        readFrom=obj(table=obj(status=STR, ready=STR, readinessGates=STR)),
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
        spec=obj(
            accessModes=STR_LIST,
            local=ANY,
            hostPath=ANY,
            csi=obj(driver=STR, volumeHandle=STR),
            # where a local volume can be used (storage.pinning_volume), kept whole
            nodeAffinity=Object({"required": ANY}, ()),
        ),
    ),
    "Event": obj(
        ("metadata",),
        metadata=METADATA,
        reason=STR,
        message=STR,
        involvedObject=obj(kind=STR, name=STR, namespace=STR),
        lastTimestamp=TIME,
        eventTime=TIME,
        type=STR,
        count=INT,
        # events.k8s.io/v1 spellings (the timeline reads both)
        regarding=obj(kind=STR, name=STR, namespace=STR),
        note=STR,
        series=obj(count=INT, lastObservedTime=TIME),
    ),
}
# Remediation automation (analysis/automation.py): the fields it reads, per kind.
SELECTOR = obj(
    matchLabels=STR_MAP,
    matchExpressions=ListOf(obj(key=STR, operator=STR, values=STR_LIST)),
)
AUTOMATION_CONDITION = CONDITION
# A remediation template an MHC or NHC hands unhealthy machines or nodes to.
TEMPLATE_REF = obj(kind=STR, name=STR, namespace=STR, apiVersion=STR)
SCHEMAS["Machine"] = obj(
    ("metadata",),
    metadata=METADATA,
    spec=obj(clusterName=STR),
    status=obj(nodeRef=obj(name=STR), conditions=ListOf(AUTOMATION_CONDITION)),
)
SCHEMAS["MachineHealthCheck"] = obj(
    ("metadata",),
    metadata=METADATA,
    spec=obj(
        clusterName=STR,
        selector=SELECTOR,
        unhealthyConditions=ListOf(obj(type=STR, status=STR, timeout=STR)),
        maxUnhealthy=INT_OR_STR,
        unhealthyRange=STR,
        # cluster.x-k8s.io/v1beta2
        checks=obj(unhealthyNodeConditions=ListOf(obj(type=STR, status=STR, timeoutSeconds=INT))),
        remediation=obj(
            triggerIf=obj(unhealthyLessThanOrEqualTo=INT_OR_STR, unhealthyInRange=STR),
            # v1beta2's reference has no namespace: the template is in the MHC's own
            templateRef=obj(kind=STR, name=STR, apiVersion=STR),
        ),
        remediationTemplate=TEMPLATE_REF,  # v1beta1
    ),
    status=obj(expectedMachines=INT, currentHealthy=INT, conditions=ListOf(AUTOMATION_CONDITION)),
)
SCHEMAS["NodeHealthCheck"] = obj(
    ("metadata",),
    metadata=METADATA,
    spec=obj(
        selector=SELECTOR,
        unhealthyConditions=ListOf(obj(type=STR, status=STR, duration=STR)),
        minHealthy=INT_OR_STR,
        maxUnhealthy=INT_OR_STR,
        pauseRequests=STR_LIST,
        remediationTemplate=TEMPLATE_REF,
    ),
    status=obj(
        observedNodes=INT,
        healthyNodes=INT,
        phase=STR,
        reason=STR,
        conditions=ListOf(AUTOMATION_CONDITION),
        inFlightRemediations=MapOf(TIME),
        unhealthyNodes=ListOf(
            obj(
                ("name",),
                name=STR,
                remediations=ListOf(
                    obj(resource=obj(kind=STR, name=STR, namespace=STR), started=TIME)
                ),
            )
        ),
    ),
)
SCHEMAS["NodeClaim"] = obj(
    ("metadata",),
    metadata=METADATA,
    spec=obj(nodeClassRef=obj(group=STR)),
    status=obj(nodeName=STR, providerID=STR),
)
# The owner kinds the analysis has rules for, each with the fields it reads, typed as that
# kind's own API type declares them (tests/unit/test_openapi_schemas.py holds each to the API
# server's OpenAPI of every supported minor). Fields of the same name differ between kinds: a
# Job's status.active is a count, a CronJob's a list of references.
OWNER_CONDITIONS = obj(conditions=ListOf(CONDITION))


def owner(spec: Object | None = None, status: Object = OWNER_CONDITIONS) -> Object:
    fields: dict[str, Spec] = {"kind": STR, "metadata": OWNER_METADATA, "status": status}
    if spec is not None:
        fields["spec"] = spec
    return Object(fields, ("metadata",))


SCHEMAS.update(
    {
        "ReplicaSet": owner(obj(replicas=INT, selector=ANY)),
        # a ReplicationController's selector is a map of labels, not a LabelSelector
        "ReplicationController": owner(obj(replicas=INT, selector=STR_MAP)),
        # a paused Deployment's rollout makes no progress (its old ReplicaSets keep their pods)
        # strategy Recreate: a rollout creates no new pod while an old one is not finished
        "Deployment": owner(
            obj(replicas=INT, paused=BOOL, selector=ANY, strategy=obj(type=STR)),
            # pods of its newest template, once it has observed its spec
            obj(
                conditions=ListOf(CONDITION),
                updatedReplicas=INT,
                observedGeneration=INT,
            ),
        ),
        "StatefulSet": owner(
            obj(
                replicas=INT,
                ordinals=obj(start=INT),
                podManagementPolicy=STR,
                selector=ANY,
                # a rolling update replaces the pods not on the update revision
                updateStrategy=obj(type=STR, rollingUpdate=obj(partition=INT)),
            ),
            obj(currentRevision=STR, updateRevision=STR, conditions=ListOf(CONDITION)),
        ),
        "DaemonSet": owner(obj(selector=ANY, updateStrategy=obj(type=STR))),
        "Job": owner(
            obj(
                # the wanted pods: min(parallelism, completions - succeeded)
                parallelism=INT,
                completions=INT,
                suspend=BOOL,
                podReplacementPolicy=STR,
                podFailurePolicy=ANY,
                selector=ANY,
            ),
            # Complete / Failed (a finished Job replaces nothing), and its counts
            obj(conditions=ListOf(CONDITION), active=INT, succeeded=INT, failed=INT),
        ),
        # read for its name (the chain Pod -> Job -> CronJob), whether it is suspended, and its
        # concurrencyPolicy Forbid: no run while a Job of it is active (not finished)
        "CronJob": owner(obj(suspend=BOOL, concurrencyPolicy=STR), obj()),
    }
)
# The owner kinds whose schema above is their API type's (the rest of SCHEMAS are not owners).
OWNER_KINDS = (
    "ReplicaSet",
    "ReplicationController",
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "CronJob",
)
# Any other kind is an owner no rule knows (a custom resource: Argo Rollouts, KubeVirt, Kueue,
# OpenKruise's own StatefulSet, ...), read only by its metadata (the owner chain and the
# explanation name it; no rule reads its spec or status). Nothing else in it is looked at, so
# no shape of its spec or status can fail a diagnosis: its fields are its own API's to define.
OTHER_OWNER = obj(("metadata",), kind=STR, metadata=OWNER_METADATA)
ITEM = obj(kind=STR)  # checked first: the kind picks the schema
UNSORTED = obj(("metadata",), metadata=METADATA)  # no kind: left out of the snapshot

# The dump's own envelope (`kubectl nodefail dump`); a kubectl List needs only `items`.
# (`items` are taken one by one while the file is read: take_item, check_items.)
DUMP = obj(
    ("capturedAt",),
    capturedAt=TIME,
    serverVersion=STR,
    source=STR,
    gaps=STR_LIST,
    notes=STR_MAP,
)
LIST = obj()


# --- the interpreter ---------------------------------------------------------------------------


def schema_of(item: Obj) -> Object:
    """The schema of an item by its kind and its apiVersion's group: a kind of the same name from
    another group (OpenKruise's StatefulSet) is an owner no rule knows."""
    kind = item.get("kind")
    if not isinstance(kind, str) or not kind:
        return UNSORTED
    schema = SCHEMAS.get(kind)
    if schema is None:
        return OTHER_OWNER
    if kind in kinds.BUILTIN_GROUPS and not kinds.is_builtin(kind, item.get("apiVersion")):
        return OTHER_OWNER
    return schema


INTERN_MAX = 64  # strings up to this long are shared between objects when a dump is loaded


def take(value: Any, spec: Spec) -> Any:
    """`value` checked against `spec` and cut to what it names: the analysis reads nothing
    else, so a pod's container specs, managedFields or a ReplicaSet's template never stay in
    memory. Null optional fields are dropped ("absent"), keys are the schema's own strings and
    short strings are interned (one copy of "lastTransitionTime" and "True" for 60,000 pods).
    Raises Invalid at the first wrong type; its path is built only then."""
    return _taker(spec)(value)


Taker = Callable[[Any], Any]
# Each spec's taker, built once: a dump's 100,000 objects are walked by closures that know
# their fields, not by an interpreter that asks each spec what it is at every field
# (docs/scale.md: the cut was a third of loading a big outage's dump). Keyed by id(): specs
# hold dicts, so they do not hash; the spec is kept beside its taker so its id stays its own.
_TAKERS: dict[int, tuple[Spec, Taker]] = {}


def _taker(spec: Spec) -> Taker:
    known = _TAKERS.get(id(spec))
    if known is None:
        known = _TAKERS[id(spec)] = (spec, _build(spec))
    return known[1]


def _not_object(value: Any) -> Invalid:
    return Invalid("", f"must be an object, not {_json_type(value)}")


def _kept(value: Any) -> Any:
    return sys.intern(value) if type(value) is str and len(value) <= INTERN_MAX else value


def _build(spec: Spec) -> Taker:
    if type(spec) is Object:
        return _object_taker(spec)
    if type(spec) is Scalar:
        return _scalar_taker(spec)
    if type(spec) is ListOf:
        return _list_taker(spec)
    if type(spec) is MapOf:
        return _map_taker(spec)

    def take_any_object(value: Any) -> Any:  # AnyObject: kept whole
        if type(value) is not dict:
            raise _not_object(value)
        return value

    return take_any_object


def _object_taker(spec: Object) -> Taker:
    required = spec.required
    fields = tuple((name, _taker(sub)) for name, sub in spec.fields.items())

    def take_object(value: Any) -> Any:
        if type(value) is not dict:
            raise _not_object(value)
        get = value.get
        for name in required:
            if get(name) is None:
                raise Invalid(name, "is missing")
        out = {}
        for name, take_field in fields:
            item = get(name)
            if item is not None:
                try:
                    out[name] = take_field(item)
                except Invalid as exc:
                    raise exc.under(name) from None
        return out

    return take_object


def _scalar_taker(spec: Scalar) -> Taker:
    check = spec.check
    if spec is STR:  # the commonest by far: its check inlined

        def take_string(value: Any) -> Any:
            if type(value) is not str:
                raise Invalid("", check(value) or "must be a string")
            return sys.intern(value) if len(value) <= INTERN_MAX else value

        return take_string

    def take_scalar(value: Any) -> Any:
        problem = check(value)
        if problem:
            raise Invalid("", problem)
        return _kept(value)

    return take_scalar


def _list_taker(spec: ListOf) -> Taker:
    take_item_ = _taker(spec.item)

    def take_list(value: Any) -> Any:
        if type(value) is not list:
            raise Invalid("", f"must be a list, not {_json_type(value)}")
        try:
            return [take_item_(item) for item in value]
        except Invalid:
            for i, item in enumerate(value):  # again, one by one: which element
                try:
                    take_item_(item)
                except Invalid as exc:
                    raise exc.under(f"[{i}]") from None
            raise

    return take_list


def _map_taker(spec: MapOf) -> Taker:
    take_value = _taker(spec.value)

    def take_map(value: Any) -> Any:
        if type(value) is not dict:
            raise _not_object(value)
        try:
            return {sys.intern(key): take_value(item) for key, item in value.items()}
        except Invalid:
            for key, item in value.items():  # again, one by one: which key
                try:
                    take_value(item)
                except Invalid as exc:
                    raise exc.under(key) from None
            raise

    return take_map


@dataclass
class Rejected:
    """An item that failed its schema while the file was read: reported with its index later."""

    name: str
    error: Invalid


def take_item(item: Any) -> Obj | Rejected | Any:
    """One element of a dump's items, taken by its kind's schema (kind and apiVersion kept);
    a wrong type becomes a Rejected, reported by check_items with the item's index."""
    if type(item) is not dict:
        return item  # reported by check_items
    try:
        _taker(ITEM)(item)
        out = _taker(schema_of(item))(item)
    except Invalid as exc:
        return Rejected(_name(item, None), exc)
    for key in ("kind", "apiVersion"):
        if key in item:
            out[key] = item[key]
    return out


def check_items(items: list[Any]) -> None:
    """Raise BadInputError for the first item take_item rejected (or that is no object)."""
    for index, item in enumerate(items):
        if isinstance(item, Rejected):
            raise BadInputError(
                f"items[{index}]{item.name}: {item.error.path} {item.error.problem}"
            )
        if type(item) is not dict:
            raise BadInputError(f"items[{index}] must be an object, not {_json_type(item)}")


def cut_live(item: Obj) -> Obj:
    """One object read from the API server, as take_live takes it (for a list's items as its
    pages arrive: kube.Cluster.shape)."""
    return take_live([item])[0]


def check_live(item: Obj) -> Obj:
    """One object read from the API server, held to the schema as `cut_live` holds it but kept
    whole (a dump keeps what the server sent)."""
    cut_live(item)
    return item


def take_live(objects: list[Obj]) -> list[Obj]:
    """Objects read from the API server, held to the same schema and cut the same way: the
    analysis sees one shape whichever way its input came. A wrong type is a malformed answer
    (exit 14)."""
    out = []
    for item in objects:
        taken = take_item(item)
        if isinstance(taken, Rejected):
            raise MalformedResponse(
                f"the API server sent a malformed{taken.name}: "
                f"{taken.error.path} {taken.error.problem}"
            )
        out.append(taken)
    return out


def check_envelope(doc: Any, spec: Object, source: str) -> None:
    """The dump's own fields (capturedAt, serverVersion, notes, gaps, items), in place."""
    try:
        doc.update(take(doc, spec))
    except Invalid as exc:
        raise BadInputError(f"dump file {source}: {exc.path or 'the file'} {exc.problem}") from exc
    for name in spec.fields:
        if doc.get(name, 0) is None:
            del doc[name]


def _name(item: Any, index: int | None) -> str:
    """How an item is named in an error, after its index: ' Pod ns/name', or ' (Kind)'."""
    kind = item.get("kind") if isinstance(item.get("kind"), str) else None
    meta = item.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) else None
    namespace = meta.get("namespace") if isinstance(meta.get("namespace"), str) else None
    if not name:
        return f" ({kind})" if kind else ""
    return f" {kind or 'object'} " + (f"{namespace}/{name}" if namespace else name)


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
