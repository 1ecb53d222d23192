"""The one place a dump's content is checked before the analysis reads it.

A dump is outside data: hand-edited, truncated, produced by another tool. The analysis reads
fields by their Kubernetes types (a pod's `status` is an object, `ownerReferences` a list of
objects, timestamps RFC 3339 strings) and trusts them; this module makes that trust safe. It
checks the type of every field the analysis reads, per object kind, and rejects the dump with
exit 13 and a line naming the object and the field. Fields the analysis never reads are not
checked (they may hold anything), and `null` in an optional field means "absent", as in the
API's own JSON: such keys are dropped so the analysis sees one spelling of "absent".

The schema is data (SCHEMAS in schemas.py, written in the language of schemalang.py), turned
once per spec into a small function that checks and cuts (`take`); a new field the analysis
starts reading gets one line in schemas.py.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubectl_nodefail.common.errors import BadInputError, MalformedResponse
from kubectl_nodefail.snapshot import kinds
from kubectl_nodefail.snapshot.schemalang import (
    BOOL,
    INT,
    INT_OR_STR,
    STR,
    STR_LIST,
    STR_MAP,
    TIME,
    AnyObject,
    ListOf,
    MapOf,
    Object,
    Scalar,
    Spec,
    _json_type,
    obj,
    parse_rfc3339,
)
from kubectl_nodefail.snapshot.schemas import (
    DUMP,
    ITEM,
    LIST,
    OTHER_OWNER,
    OWNER_KINDS,
    SCHEMAS,
    UNSORTED,
)

# Re-exported: the schema and its language, used outside as dumpschema.NAME (model.py reads DUMP
# and LIST, tests/openapi.py and the unit tests hold SCHEMAS to each kind's OpenAPI).
__all__ = [
    "BOOL",
    "DUMP",
    "INT",
    "INT_OR_STR",
    "LIST",
    "OWNER_KINDS",
    "SCHEMAS",
    "STR",
    "STR_LIST",
    "STR_MAP",
    "TIME",
    "AnyObject",
    "ListOf",
    "MapOf",
    "Object",
    "Spec",
    "obj",
    "parse_rfc3339",
]

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
