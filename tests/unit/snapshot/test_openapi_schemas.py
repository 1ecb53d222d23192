"""The dump schema is the API's: every field the analysis reads, per kind, has the type the API
server's own OpenAPI v3 declares, on every recorded minor (tests/recorded-openapi/, recorded and
compared on each minor's real control plane by tests/e2e/test_versions.py). And objects
generated from that OpenAPI, every optional field filled or null, are read and diagnosed: a
valid object never ends a diagnosis as malformed."""

from __future__ import annotations

import copy
import json
import string
from datetime import datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.cluster import kube
from kubectl_nodefail.render import render
from kubectl_nodefail.snapshot import dumpschema as ds
from kubectl_nodefail.snapshot.model import from_items, parse_time
from tests import openapi
from tests.unit.conftest import FIXTURES

MINORS = openapi.recorded_minors()
Obj = dict[str, Any]


def test_every_supported_minor_is_recorded() -> None:
    assert MINORS == ["1.26", "1.31", "1.36"]


# Fields the analysis reads that an older minor's API does not have yet (they read as absent
# there, as the API server leaves them out): sidecar containers' restartPolicy and a Job's
# podReplacementPolicy (and status.terminating) arrived in 1.28, its managedBy in 1.30.
ADDED_AFTER = {
    "1.26": {
        "Job.spec.managedBy",
        "Job.spec.podReplacementPolicy",
        "Job.status.terminating",
        "Pod.spec.containers[].restartPolicy",
        "Pod.spec.initContainers[].restartPolicy",
    },
}


@pytest.mark.parametrize("minor", MINORS)
@pytest.mark.parametrize("kind", sorted(openapi.KIND_TYPES))
def test_each_field_we_read_has_the_apis_type(minor: str, kind: str) -> None:
    found = openapi.problems(kind, ds.SCHEMAS[kind], openapi.load(minor))
    missing = {p.split(": ")[0] for p in found if p.endswith(openapi.MISSING)}
    assert [p for p in found if not p.endswith(openapi.MISSING)] == []
    assert missing == {f for f in ADDED_AFTER.get(minor, ()) if f.startswith(kind + ".")}


# The automation kinds are custom resources: their types are their projects' CRDs, served
# version by version (Cluster API v1beta1 and v1beta2). tests/recorded-openapi/crds.json holds
# the types of the fields we read as each CRD's openAPIV3Schema declares them (transcribed from
# the release named in its `source`, facts only). A field we read must have its CRD's type in
# every version that declares it, and exist in at least one of them (v1beta2 renamed some).
CRDS = json.loads((openapi.FIXTURES / "crds.json").read_text())
CRD_VERSIONS = {
    "Machine": ("cluster.x-k8s.io/v1beta1/Machine", "cluster.x-k8s.io/v1beta2/Machine"),
    "MachineHealthCheck": (
        "cluster.x-k8s.io/v1beta1/MachineHealthCheck",
        "cluster.x-k8s.io/v1beta2/MachineHealthCheck",
    ),
    "NodeClaim": ("karpenter.sh/v1/NodeClaim",),
    "NodeHealthCheck": ("remediation.medik8s.io/v1alpha1/NodeHealthCheck",),
}


def _crd_problems(kind: str, spec: ds.Object) -> list[str]:
    found = [openapi.check_crd(kind, spec, CRDS[v]["schema"]) for v in CRD_VERSIONS[kind]]
    wrong = sorted({p for each in found for p in each if not p.endswith(openapi.MISSING)})
    missing = [{p.split(": ")[0] for p in each if p.endswith(openapi.MISSING)} for each in found]

    def lacks(absent: set[str], path: str) -> bool:  # the path or one of its parents is absent
        return any(path == a or path.startswith((a + ".", a + "[")) for a in absent)

    nowhere = {p for each in missing for p in each if all(lacks(m, p) for m in missing)}
    return wrong + sorted(f"{p}: in no served version" for p in nowhere)


@pytest.mark.parametrize("kind", sorted(CRD_VERSIONS))
def test_each_automation_field_we_read_has_its_crds_type(kind: str) -> None:
    assert _crd_problems(kind, ds.SCHEMAS[kind]) == []


@pytest.mark.parametrize(
    ("kind", "field", "wrong", "found"),
    [
        ("NodeHealthCheck", "status", ds.obj(observedNodes=ds.STR), "ours is a string"),
        ("NodeClaim", "status", ds.obj(nodeName=ds.INT), "ours is an integer"),
        ("MachineHealthCheck", "spec", ds.obj(maxUnhealthy=ds.INT), "ours is an integer"),
        ("Machine", "status", ds.obj(noderef=ds.obj(name=ds.STR)), "in no served version"),
    ],
)
def test_a_wrong_automation_type_is_found(kind: str, field: str, wrong: Any, found: str) -> None:
    schema = ds.SCHEMAS[kind]
    broken = ds.Object({**schema.fields, field: wrong}, schema.required)
    assert any(found in p for p in _crd_problems(kind, broken)), _crd_problems(kind, broken)


def test_every_api_kind_of_the_schema_is_checked() -> None:
    automation = set(CRD_VERSIONS)
    assert set(ds.SCHEMAS) - automation == set(openapi.KIND_TYPES)
    assert set(ds.OWNER_KINDS) <= set(openapi.KIND_TYPES)


@pytest.mark.parametrize(
    ("kind", "field", "wrong", "found"),
    [
        # the CronJob of issue 34: its status.active read as a Job's count
        ("CronJob", "status", ds.obj(active=ds.INT), "CronJob.status.active: ours is an integer"),
        ("Job", "status", ds.obj(active=ds.STR_LIST), "Job.status.active: ours is a list"),
        ("Node", "spec", ds.obj(taints=ds.STR_MAP), "Node.spec.taints: ours is a map"),
        ("Pod", "spec", ds.obj(nodename=ds.STR), "Pod.spec.nodename: not in the API's type"),
        ("Lease", "spec", ds.obj(renewTime=ds.STR), "Lease.spec.renewTime: ours is a string"),
        ("StatefulSet", "spec", ds.obj(replicas=ds.INT_OR_STR), "ours is an integer or a string"),
    ],
)
def test_a_wrong_type_in_the_schema_is_found(kind: str, field: str, wrong: Any, found: str) -> None:
    schema = ds.SCHEMAS[kind]
    broken = ds.Object({**schema.fields, field: wrong}, schema.required)
    for minor in MINORS:
        assert any(found in p for p in openapi.problems(kind, broken, openapi.load(minor)))


# --- objects generated from the OpenAPI ------------------------------------------------------

TIMES = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1)).map(
    lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ")
)
WORDS = st.text(string.ascii_letters + string.digits + "-./:", max_size=12)


def _instances(schema: dict[str, Any], components: openapi.Components, depth: int) -> Any:
    """Values of an OpenAPI schema: every property present (a value, or null where the field is
    optional), lists of 0-2, maps of 0-2, to `depth` levels (deeper objects empty)."""
    schema = openapi.resolve(schema, components)
    kind = openapi._type_of(schema)
    if kind == "int-or-string":
        return st.one_of(st.integers(-(2**31), 2**31 - 1), WORDS)
    if kind == "string/date-time":
        return TIMES
    if kind == "string":
        return st.sampled_from(schema["enum"]) if schema.get("enum") else WORDS
    if kind == "integer":
        return st.integers(-(2**31), 2**31 - 1)
    if kind == "number":
        return st.floats(allow_nan=False, allow_infinity=False, width=32)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        if depth <= 0:
            return st.just([])
        return st.lists(_instances(schema["items"], components, depth - 1), max_size=2)
    if depth <= 0 or kind != "object":
        return st.just({})
    if "properties" not in schema:
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            return st.dictionaries(WORDS, _instances(extra, components, depth - 1), max_size=2)
        return st.just({})
    required = set(schema.get("required") or ())
    fields = {
        name: _instances(sub, components, depth - 1)
        if name in required
        else st.one_of(st.none(), _instances(sub, components, depth - 1))
        for name, sub in schema["properties"].items()
    }
    return st.fixed_dictionaries(fields)


# Objects of the recorded fixtures (a node down, pods stuck, their owners, leases, events,
# volumes), each kind's objects in turn given generated contents: every field but the identity
# (kind, apiVersion, metadata: the API server checks it for every kind) comes from the OpenAPI.
# A pod keeps its node (so it is still one of the failed node's pods) and has a spec (optional in
# the OpenAPI, required by the API server's validation: at least one container).
FIXTURE_NAMES = ["node-down-after-eviction.json", "neighbours.json", "rwo-volume-on-dead-node.json"]
DUMPS = [json.loads((FIXTURES / name).read_text()) for name in FIXTURE_NAMES]
IDENTITY = ("kind", "apiVersion", "metadata")
SERVER_REQUIRED = {("Pod", "spec")}
DEPTH = 5


def _generated(kind: str, minor: str) -> Any:
    """The contents of an object of one of the kind's API types (an Event of either)."""
    components = openapi.load(minor)

    def of(type_name: str) -> Any:
        root = openapi.resolve(components[type_name], components)
        return st.fixed_dictionaries(
            {
                part: _instances(schema, components, DEPTH)
                if (kind, part) in SERVER_REQUIRED
                else st.one_of(st.none(), _instances(schema, components, DEPTH))
                for part, schema in root["properties"].items()
                if part not in IDENTITY
            }
        )

    return st.sampled_from(openapi.KIND_TYPES[kind]).flatmap(of)


def _kinds_in(docs: list[Obj]) -> set[str]:
    return {item.get("kind") for doc in docs for item in doc["items"]}


def test_the_fixtures_hold_objects_of_most_kinds() -> None:
    assert set(openapi.KIND_TYPES) - _kinds_in(DUMPS) <= {"CronJob", "ReplicationController"}


@pytest.mark.parametrize("minor", MINORS)
@pytest.mark.parametrize("kind", sorted(openapi.KIND_TYPES))
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_generated_object_of_any_valid_shape_is_diagnosed(
    minor: str, kind: str, data: st.DataObject
) -> None:
    body = data.draw(_generated(kind, minor))
    for doc in DUMPS:
        items = copy.deepcopy(doc["items"])
        chosen = [i for i in items if i.get("kind") == kind]
        if not chosen and kind not in ds.OWNER_KINDS:
            continue
        if not chosen:  # none here (a CronJob, a ReplicationController): one more, owning nothing
            meta = {"name": "gen", "namespace": "default", "uid": "gen-1"}
            chosen = [{"kind": kind, "apiVersion": kube.owner_api_version(kind), "metadata": meta}]
            items.append(chosen[0])
        for item in chosen:
            node = (item.get("spec") or {}).get("nodeName") if kind == "Pod" else None
            for part in [k for k in item if k not in IDENTITY]:
                del item[part]
            item.update({k: v for k, v in copy.deepcopy(body).items() if v is not None})
            if node:
                item["spec"] = {**(item.get("spec") or {}), "nodeName": node}
        # the dump path (strict: a file) and the live path (a malformed answer) both take it
        taken = [ds.take_item(i) for i in items]
        ds.check_items(taken)
        ds.take_live(copy.deepcopy(items))
        captured = parse_time(doc["capturedAt"])
        assert captured is not None
        snap = from_items(taken, captured, server_version=doc.get("serverVersion"))
        report = diagnose(snap, captured)
        json.dumps(render.report_data(report))
        render.table(report)
