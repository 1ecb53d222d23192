"""Owners as the API serves them: a kind's fields by that kind's own type (a CronJob's
status.active is a list of references, a Job's a count), a kind of a built-in name from another
group (OpenKruise's StatefulSet) is not the built-in kind, and an owner no rule knows is read by
its metadata only, whatever its spec and status hold."""

from __future__ import annotations

import copy
import json
from typing import Any

from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.cluster import gather
from kubectl_nodefail.render import render
from kubectl_nodefail.snapshot import dumpschema, kinds
from kubectl_nodefail.snapshot.model import from_items, parse_time
from tests.unit.conftest import FIXTURES

Obj = dict[str, Any]


def _doc(name: str) -> Obj:
    doc: Obj = json.loads((FIXTURES / name).read_text())
    return doc


def _pods(doc: Obj, live: bool = False) -> dict[str, Obj]:
    """The diagnosis's pods by name, the items read as a dump (or as a live answer)."""
    items = copy.deepcopy(doc["items"])
    taken = dumpschema.take_live(items) if live else [dumpschema.take_item(i) for i in items]
    dumpschema.check_items(taken)
    captured = parse_time(doc["capturedAt"])
    assert captured is not None
    report = diagnose(from_items(taken, captured, server_version=doc["serverVersion"]), captured)
    return {p["name"]: p for p in render.report_data(report)["pods"]}


def _active_cronjob(doc: Obj) -> Obj:
    """The fixture's CronJob as the CronJob controller leaves it while its Job runs."""
    cron = next(i for i in doc["items"] if i.get("kind") == "CronJob")
    job = next(
        i
        for i in doc["items"]
        if i.get("kind") == "Job" and i["metadata"]["name"] == "nightly-manual"
    )
    ref = {"apiVersion": "batch/v1", "kind": "Job", "name": job["metadata"]["name"]}
    cron["status"] = {
        "active": [
            {**ref, "namespace": job["metadata"]["namespace"], "uid": job["metadata"]["uid"]}
        ],
        "lastScheduleTime": "2026-11-30T09:46:00Z",
    }
    cron["spec"] = {"schedule": "* * * * *", "concurrencyPolicy": "Forbid", "suspend": False}
    return cron


def test_a_cronjob_with_active_jobs_is_read_and_its_pod_explained() -> None:
    doc = _doc("node-down-after-eviction.json")
    before = _pods(doc)["nightly-manual-h4v8s"]
    _active_cronjob(doc)
    for live in (False, True):
        pod = _pods(doc, live)["nightly-manual-h4v8s"]
        assert pod["controller"] == "cronjob"
        assert [link["kind"] for link in pod["ownerChain"]] == ["Job", "CronJob"]
        assert pod["explanation"] == before["explanation"]


def _kruise(doc: Obj, replicas: Any) -> str:
    """The fixture's StatefulSet pod handed to an OpenKruise StatefulSet of the same name (its
    apps/v1 StatefulSet gone), whose spec and status hold fields of other types than apps/v1's."""
    sts = next(i for i in doc["items"] if i.get("kind") == "StatefulSet")
    sts["apiVersion"] = "apps.kruise.io/v1beta1"
    sts["spec"] = {"replicas": replicas, "updateStrategy": {"rollingUpdate": {"partition": "50%"}}}
    sts["status"] = {"active": "yes", "updateRevision": 7, "conditions": "none"}
    pod = next(
        i
        for i in doc["items"]
        if i.get("kind") == "Pod"
        and any(
            r.get("uid") == sts["metadata"]["uid"]
            for r in i["metadata"].get("ownerReferences") or []
        )
    )
    for ref in pod["metadata"]["ownerReferences"]:
        ref["apiVersion"] = "apps.kruise.io/v1beta1"
    return str(pod["metadata"]["name"])


def test_a_kind_of_a_builtin_name_from_another_group_is_no_builtin_kind() -> None:
    doc = _doc("node-down-after-eviction.json")
    name = _kruise(doc, replicas="three")
    for live in (False, True):
        pod = _pods(doc, live)[name]
        # not the apps/v1 rules (which would read its spec), not "its owner is gone"
        assert pod["controller"] == "other"
        assert pod["ownerChain"][0]["kind"] == "StatefulSet.apps.kruise.io"
        assert pod["ownerChain"][0]["found"] is True
        assert "apps.kruise.io/v1beta1" in pod["explanation"]
        assert "not in the cluster" not in pod["explanation"]


def test_kinds_know_groups() -> None:
    assert kinds.group_of("apps/v1") == "apps" and kinds.group_of("v1") == ""
    assert kinds.is_builtin("StatefulSet", "apps/v1") and kinds.is_builtin("StatefulSet", None)
    assert not kinds.is_builtin("StatefulSet", "apps.kruise.io/v1beta1")
    assert kinds.is_builtin("Event", "events.k8s.io/v1") and kinds.is_builtin("Event", "v1")
    assert not kinds.is_builtin("Rollout", "argoproj.io/v1alpha1")
    assert kinds.owner_key("Rollout", "argoproj.io/v1alpha1") == "Rollout"
    assert kinds.owner_key("Job", "batch.example.com/v1") == "Job.batch.example.com"


def test_gather_reads_no_builtin_path_for_another_groups_kind() -> None:
    pod = {
        "metadata": {
            "namespace": "ns",
            "ownerReferences": [
                {"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": "a"},
                {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "b"},
                {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": "c"},
            ],
        }
    }
    assert list(gather._owner_refs(pod)) == [("StatefulSet", "ns", "b")]


def test_an_unknown_owners_spec_and_status_are_not_read() -> None:
    rollout = {
        "kind": "Rollout",
        "apiVersion": "argoproj.io/v1alpha1",
        "metadata": {"name": "r", "namespace": "ns", "uid": "u"},
        "spec": {"replicas": "many", "selector": ["x"]},
        "status": {"active": {"a": 1}, "conditions": 3, "succeeded": "no"},
    }
    taken = dumpschema.take_item(rollout)
    assert taken == {k: rollout[k] for k in ("kind", "apiVersion", "metadata")}
    assert dumpschema.take_live([rollout]) == [taken]


def test_a_statefulset_wanting_two_billion_replicas_is_counted_not_listed() -> None:
    doc = _doc("node-down-after-eviction.json")
    sts = next(i for i in doc["items"] if i.get("kind") == "StatefulSet")
    sts["spec"]["replicas"] = 2**31 - 1
    pods = _pods(doc)
    owned = [p for p in pods.values() if p["controller"] == "statefulset"]
    assert owned
    text = json.dumps(owned)
    assert len(text) < 20_000
    assert f"-{2**31 - 2} not created yet" in text
