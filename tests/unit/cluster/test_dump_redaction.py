"""`kubectl nodefail dump` writes only what the analysis reads (redact.py): secrets planted in a
live cluster's env values, args, commands, a Deployment's pod template and annotations never
reach the file, which is mode 0600; `--no-redact` keeps them, with a warning. A redacted dump
diagnoses exactly as the whole one, for every recorded fixture and the bundled example."""

from __future__ import annotations

import copy
import io
import json
import stat
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from kubectl_nodefail.cli.main import main
from kubectl_nodefail.cluster import redact
from kubectl_nodefail.cluster.dumpfile import write_dump
from kubectl_nodefail.common.errors import Exit
from kubectl_nodefail.examples import demo_path
from kubectl_nodefail.snapshot.model import from_items, parse_time
from tests.support.fakeapi import Answer, json_answer, kubeconfig, serve
from tests.unit.conftest import FIXTURES, attestable

SECRET = "hunter2-secret"
VERSION = {"major": "1", "minor": "36", "gitVersion": "v1.36.1"}
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
PLURALS = {
    "nodes": "Node",
    "pods": "Pod",
    "leases": "Lease",
    "events": "Event",
    "volumeattachments": "VolumeAttachment",
    "persistentvolumeclaims": "PersistentVolumeClaim",
    "persistentvolumes": "PersistentVolume",
    "replicasets": "ReplicaSet",
    "deployments": "Deployment",
    "statefulsets": "StatefulSet",
    "daemonsets": "DaemonSet",
    "jobs": "Job",
    "cronjobs": "CronJob",
}


def _planted() -> list[dict[str, Any]]:
    """The recorded failure, with SECRET in every place a secret lives: each container's env
    value, args and command, a Deployment's pod template, last-applied-configuration (of a pod
    and of the Deployment) and an annotation of no meaning to the analysis."""
    items = json.loads((FIXTURES / "node-down-after-eviction.json").read_text())["items"]
    for item in items:
        meta = item["metadata"]
        if item["kind"] == "Pod":
            for container in item["spec"]["containers"]:
                container["env"] = [{"name": "PASSWORD", "value": SECRET}]
                container["args"] = [f"--password={SECRET}"]
                container["command"] = ["/bin/sh", "-c", f"echo {SECRET}"]
            meta["annotations"] = {
                **(meta.get("annotations") or {}),
                "example.com/token": SECRET,
                LAST_APPLIED: json.dumps({"spec": {"containers": [{"args": [SECRET]}]}}),
            }
        if item["kind"] == "Deployment":
            template = item["spec"]["template"]["spec"]
            template["containers"][0]["env"] = [{"name": "PASSWORD", "value": SECRET}]
            meta["annotations"] = {
                **(meta.get("annotations") or {}),
                LAST_APPLIED: json.dumps(item["spec"]),
                "example.com/token": SECRET,
            }
    return items


def _cluster(items: list[dict[str, Any]]):  # type: ignore[no-untyped-def]
    """A fake API server answering from `items`: lists by resource, objects by name."""

    def script(n: int, method: str, path: str) -> Answer:
        route = path.split("?", 1)[0].rstrip("/")
        if route == "/version":
            return json_answer(VERSION)
        parts = route.split("/")
        if parts[-1] in PLURALS:
            kind = PLURALS[parts[-1]]
            return json_answer({"metadata": {}, "items": [i for i in items if i["kind"] == kind]})
        kind = PLURALS.get(parts[-2]) if len(parts) > 1 else None
        found = [i for i in items if i["kind"] == kind and i["metadata"]["name"] == parts[-1]]
        return json_answer(found[0]) if found else json_answer({"message": "not found"}, 404)

    return script


def _dump(tmp_path: Path, *flags: str) -> tuple[Any, Path]:
    out = tmp_path / "incident.json"
    with serve(_cluster(_planted())) as api:
        kc = kubeconfig(tmp_path, api.url)
        result = CliRunner().invoke(main, ["dump", "--kubeconfig", kc, "-f", str(out), *flags])
    return result, out


def test_the_dump_holds_no_secret_and_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    result, out = _dump(tmp_path)
    assert result.exit_code == Exit.OK, result.output
    assert result.stderr.startswith(f"wrote {out}: 6 nodes"), result.stderr
    text = out.read_text()
    assert SECRET not in text
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    doc = json.loads(text)
    assert doc["notes"]["redacted"] == redact.note()
    assert "env" in doc["notes"]["redacted"] and "--no-redact" in doc["notes"]["redacted"]
    pods = [i for i in doc["items"] if i["kind"] == "Pod"]
    assert pods and all(
        set(c) <= {"name", "restartPolicy"} for p in pods for c in p["spec"]["containers"]
    )
    deployments = [i for i in doc["items"] if i["kind"] == "Deployment"]
    assert deployments and all("template" not in d["spec"] for d in deployments)
    revision = "deployment.kubernetes.io/revision"  # read by the analysis: kept
    assert any(revision in (i["metadata"].get("annotations") or {}) for i in doc["items"])


def test_an_existing_file_is_made_private_too(tmp_path: Path) -> None:
    out = tmp_path / "incident.json"
    out.write_text("old")
    out.chmod(0o644)
    result, _ = _dump(tmp_path)
    assert result.exit_code == Exit.OK, result.output
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and SECRET not in out.read_text()


def test_no_redact_keeps_whole_objects_and_says_so(tmp_path: Path) -> None:
    result, out = _dump(tmp_path, "--no-redact")
    assert result.exit_code == Exit.OK, result.output
    warning, wrote = result.stderr.splitlines()
    assert warning.startswith("warning: --no-redact: the dump holds whole objects, secrets")
    assert wrote.startswith(f"wrote {out}")
    text = out.read_text()
    assert text.count(SECRET) >= 5  # env, args, command, the template, the annotations
    assert "redacted" not in json.loads(text)["notes"]
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_the_planted_live_dump_redacted_diagnoses_as_the_whole_one(tmp_path: Path) -> None:
    _, whole = _dump(tmp_path, "--no-redact")
    doc = json.loads(whole.read_text())
    assert _redacted_and_whole(doc, tmp_path) == ["whole.json", "cut.json"]


# --- every recorded snapshot: the redacted dump diagnoses as the whole one --------------------

ALL = [*sorted(FIXTURES.rglob("*.json")), Path(demo_path())]


def _diagnosis(path: Path) -> tuple[int, Any]:
    """diagnose -o json of a dump, without the lines naming the file and the dump's notes."""
    result = CliRunner().invoke(main, ["diagnose", "--from-file", str(path), "-o", "json"])
    assert result.exit_code in (Exit.OK, Exit.PROBLEMS_FOUND), result.output
    data = json.loads(result.stdout)
    data.pop("source")
    data.pop("notes", None)
    return result.exit_code, data


def _redacted_and_whole(doc: dict[str, Any], tmp_path: Path) -> list[str]:
    """The dump `doc` written whole and redacted: both diagnose the same (the files' names)."""
    captured = parse_time(doc.get("capturedAt")) or parse_time("2026-11-30T09:47:27Z")
    assert captured is not None  # a kubectl List has no capture time: any fixed one
    snap = from_items(
        copy.deepcopy(doc["items"]),
        captured,
        source="recorded",
        server_version=doc.get("serverVersion"),
        gaps=list(doc.get("gaps") or []),
        notes=dict(doc.get("notes") or {}),
    )
    files = {}
    for name, cut in (("whole", False), ("cut", True)):
        buffer = io.StringIO()
        write_dump(snap, buffer, redact=cut)
        files[name] = tmp_path / f"{name}.json"
        files[name].write_text(buffer.getvalue())
    assert _diagnosis(files["cut"]) == _diagnosis(files["whole"])
    cut_items = json.loads(files["cut"].read_text())["items"]
    if cut_items != json.loads(files["whole"].read_text())["items"]:
        assert len(files["cut"].read_text()) < len(files["whole"].read_text())
    # else: a dump written redacted already (the audit's before it kept whole objects): the cut
    # is the identity on it, and it diagnoses the same
    return [f.name for f in files.values()]


@pytest.mark.parametrize("path", ALL, ids=[str(p.relative_to(p.parents[1])) for p in ALL])
def test_a_redacted_dump_diagnoses_as_the_whole_one(path: Path, tmp_path: Path) -> None:
    assert _redacted_and_whole(json.loads(path.read_text()), tmp_path) == ["whole.json", "cut.json"]


class _Recording(dict):  # type: ignore[type-arg]
    """An annotations map that notes every key the analysis looks up ('*': it read them all)."""

    seen: ClassVar[set[str]] = set()

    def get(self, key: Any, default: Any = None) -> Any:
        self.seen.add(key)
        return super().get(key, default)

    def __getitem__(self, key: Any) -> Any:
        self.seen.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: Any) -> bool:
        self.seen.add(key)
        return super().__contains__(key)

    def __iter__(self):  # type: ignore[no-untyped-def]
        self.seen.add("*")
        return super().__iter__()

    def items(self):  # type: ignore[no-untyped-def]
        self.seen.add("*")
        return super().items()


def test_the_analysis_reads_no_annotation_the_redaction_drops() -> None:
    """Every annotation the diagnosis, the timelines and the plan look up, over every fixture,
    is one redact keeps (each object given a map that is never empty, so `or {}` is not taken)."""
    from kubectl_nodefail.analysis.diagnose import diagnose
    from kubectl_nodefail.remediate.plan import Options, make_plan
    from kubectl_nodefail.snapshot.model import LISTS, load_dump

    _Recording.seen = set()
    for path in ALL:
        snap = load_dump(str(path))
        for name in LISTS:
            for obj in getattr(snap, name):
                meta = obj.get("metadata")
                if isinstance(meta, dict):
                    meta["annotations"] = _Recording(
                        {"example.com/unread": "", **(meta.get("annotations") or {})}
                    )
        report = diagnose(snap, snap.captured_at, timelines=True)
        failed = attestable(report)
        make_plan(report, Options(attested=failed, max_nodes=max(1, len(failed))))
    assert _Recording.seen, "no annotation looked up: the recording is not seen"
    assert _Recording.seen <= redact.kept_annotations(), _Recording.seen
