"""Bad dumps: exit 13 and one line naming the object and the field, never a crash (issue 9).

Each case below crashed with exit 1 before dumps were checked by dumpschema; the last ones are
counterexamples hypothesis found (tests/unit/cli/test_properties.py), kept as plain regressions.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubectl_nodefail.cli.main import main
from kubectl_nodefail.snapshot import model as snapshot
from tests.unit.conftest import FIXTURES

Doc = dict[str, Any]
_ORIGINAL = json.loads((FIXTURES / "node-down-after-eviction.json").read_text())


def fixture() -> Doc:
    return copy.deepcopy(_ORIGINAL)


def first(doc: Doc, kind: str) -> Doc:
    return next(i for i in doc["items"] if i["kind"] == kind)


def stuck_pod(doc: Doc) -> Doc:
    """A pod the diagnosis reads in full (Terminating on the failed node)."""
    return next(i for i in doc["items"] if i["kind"] == "Pod" and i["metadata"]["name"] == "db-0")


def diagnose(tmp_path: Path, content: str | bytes, *args: str) -> tuple[int, str, str]:
    path = tmp_path / "dump.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    result = CliRunner().invoke(main, ["diagnose", "--from-file", str(path), *args])
    return result.exit_code, result.stdout, result.stderr


def mutated(change: Callable[[Doc], None]) -> str:
    doc = fixture()
    change(doc)
    return json.dumps(doc)


def _set(path: list[Any], value: Any) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        target: Any = stuck_pod(doc)
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def _delete(path: list[Any]) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        target: Any = stuck_pod(doc)
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return change


CASES: list[tuple[str, Callable[[Doc], None], str]] = [
    ("pod status a string", _set(["status"], "Running"), "db-0: status must be an object"),
    (
        "ownerReferences a string",
        _set(["metadata", "ownerReferences"], "StatefulSet/db"),
        "db-0: metadata.ownerReferences must be a list",
    ),
    (
        "integer deletionTimestamp",
        _set(["metadata", "deletionTimestamp"], 1764496036),
        "metadata.deletionTimestamp must be an RFC 3339 time string, not a number",
    ),
    (
        "integer condition time",
        _set(["status", "conditions", 0, "lastTransitionTime"], 0),
        "status.conditions[0].lastTransitionTime must be an RFC 3339 time string",
    ),
    (
        "timestamp without a zone",
        _set(["metadata", "deletionTimestamp"], "2026-11-30T09:47:16"),
        "is not an RFC 3339 time with a zone",
    ),
    ("pod without spec", _delete(["spec"]), "db-0: spec is missing"),
    ("pod without name", _delete(["metadata", "name"]), "(Pod): metadata.name is missing"),
    ("pod name a number", _set(["metadata", "name"], 7), "metadata.name must be a string"),
    (
        "container without a name",
        _delete(["spec", "containers", 0, "name"]),
        "spec.containers[0].name is missing",
    ),
    ("labels with a number", _set(["metadata", "labels"], {"a": 1}), "metadata.labels.a must be"),
    (
        "tolerationSeconds a string",
        _set(["spec", "tolerations", 0, "tolerationSeconds"], "300"),
        "spec.tolerations[0].tolerationSeconds must be an integer",
    ),
    ("finalizers a dict", _set(["metadata", "finalizers"], {}), "metadata.finalizers must be"),
]


@pytest.mark.parametrize(("change", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_wrong_types_in_a_pod_are_exit_13_naming_the_field(
    tmp_path: Path, change: Callable[[Doc], None], message: str
) -> None:
    code, out, err = diagnose(tmp_path, mutated(change))
    assert code == 13 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], err


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("capturedAt", 1764496047, "capturedAt must be an RFC 3339 time string, not a number"),
        ("serverVersion", 36, "serverVersion must be a string, not a number (36)"),
        ("notes", [1, 2], "notes must be an object, not a list"),
        ("notes", {"a": 1}, "notes.a must be a string"),
        ("gaps", "none", "gaps must be a list"),
        ("gaps", [1], "gaps[0] must be a string"),
    ],
)
def test_wrong_types_in_the_envelope_are_exit_13(
    tmp_path: Path, key: str, value: Any, message: str
) -> None:
    code, _, err = diagnose(tmp_path, mutated(lambda doc: doc.update({key: value})))
    assert code == 13 and message in err and len(err.strip().splitlines()) == 1, err


def test_null_optional_fields_mean_absent(tmp_path: Path) -> None:
    """`null` where the API omits a field is read as absent, not rejected."""

    def change(doc: Doc) -> None:
        doc["serverVersion"] = None
        doc["notes"] = None
        pod = stuck_pod(doc)
        pod["metadata"]["finalizers"] = None
        pod["status"]["conditions"] = None

    code, out, err = diagnose(tmp_path, mutated(change))
    assert code == 3 and "db-0" in out, err


def test_deeply_nested_json_is_exit_13(tmp_path: Path) -> None:
    code, _, err = diagnose(tmp_path, "[" * 200_000)
    assert code == 13 and "nested too deeply" in err and len(err.strip().splitlines()) == 1


def test_oversized_dump_is_a_clear_exit_13(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot, "MAX_DUMP_BYTES", 1 << 20)
    code, _, err = diagnose(tmp_path, b" " * (2 << 20) + b"{}")
    assert code == 13 and "is 2 MiB, more than the 1 MiB this tool reads" in err
    assert "dump fewer nodes or namespaces" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "is not valid JSON"),
        (b"\xff\xfe{}", "cannot read dump file"),
        ('{"kind": "NodefailDump", "capturedAt": "x", "items": []}', "capturedAt is not an RFC"),
        ('{"kind": ["List"], "items": []}', "is of kind None"),
        ('{"kind": "List", "items": [1]}', "items[0] must be an object"),
        ('{"kind": "List", "items": [{"kind": 5, "metadata": {"name": "a"}}]}', "kind must be"),
        ("1" * 5000, "not usable JSON"),
    ],
)
def test_unusable_files_are_exit_13(tmp_path: Path, content: str | bytes, message: str) -> None:
    code, _, err = diagnose(tmp_path, content)
    assert code == 13 and message in err and len(err.strip().splitlines()) == 1, err


def test_a_directory_is_exit_13(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["diagnose", "--from-file", str(tmp_path)])
    assert result.exit_code == 13 and "cannot read dump file" in result.stderr


def test_loaded_objects_keep_only_what_the_analysis_reads() -> None:
    """managedFields' field lists, container specs and pod templates (but spec.nodeName) are
    dropped while parsing (memory), and the diagnosis of every fixture is unchanged by it
    (test_node_failure_fixtures). A pod keeps who wrote it when (evictionclock.spec_written)."""
    snap = snapshot.load_dump(str(FIXTURES / "node-down-after-eviction.json"))
    pod = next(p for p in snap.pods if p["metadata"]["name"] == "db-0")
    managed = pod["metadata"]["managedFields"]
    assert managed and all(
        set(m) <= {"manager", "operation", "subresource", "time"} for m in managed
    )
    assert all("managedFields" not in o["metadata"] for o in [*snap.nodes, *snap.owners])
    assert set(pod["spec"]["containers"][0]) <= {"name", "restartPolicy"}
    rs = next(o for o in snap.owners if o["kind"] == "ReplicaSet")
    # of its template, only what binds its pods to a node (spec.nodeName), if set
    assert rs["spec"]["template"] == {"spec": {}} and rs["metadata"]["uid"]


def test_line_breaking_characters_from_the_dump_stay_on_one_line(tmp_path: Path) -> None:
    """Found by hypothesis: a kind of '\\x85' (NEL, a line break to str.splitlines) or a name
    with a newline, quoted in the error, split the one line in two."""

    def change(doc: Doc) -> None:
        node = first(doc, "Node")
        node["kind"] = "\x85"
        del node["metadata"]
        pod = stuck_pod(doc)
        pod["metadata"]["name"] = "db-0\nerror: fake second line"
        pod["status"] = 1

    code, _, err = diagnose(tmp_path, mutated(change))
    assert code == 13 and len(err.strip().splitlines()) == 1, err
    assert "(\\x85): metadata is missing" in err


@pytest.mark.parametrize("seconds", [2**62, -(2**62), 10**12, 2**63 - 1])
def test_huge_but_valid_second_counts_mean_forever(tmp_path: Path, seconds: int) -> None:
    """tolerationSeconds and deletionGracePeriodSeconds are int64s in the API: 2^62 seconds
    overflowed the date arithmetic (exit 1); it means 'never' and the diagnosis goes on."""

    def change(doc: Doc) -> None:
        for item in doc["items"]:
            if item["kind"] == "Pod":
                for toleration in item["spec"].get("tolerations") or []:
                    if "tolerationSeconds" in toleration:
                        toleration["tolerationSeconds"] = seconds
                if item["metadata"].get("deletionTimestamp"):
                    item["metadata"]["deletionGracePeriodSeconds"] = seconds

    code, out, err = diagnose(tmp_path, mutated(change), "-o", "json")
    assert code == 3 and json.loads(out)["summary"]["stuckPods"] > 0, err


@pytest.mark.parametrize(
    ("value", "accepted"),
    [
        ("0001-01-01T00:00:00Z", True),
        ("9999-12-31T23:59:59Z", True),
        ("0001-01-01T00:00:00+14:00", False),  # before year 1 in UTC
        ("9999-12-31T23:59:59-12:00", False),  # after year 9999 in UTC
    ],
)
def test_times_at_the_ends_of_the_calendar(tmp_path: Path, value: str, accepted: bool) -> None:
    def change(doc: Doc) -> None:
        doc["capturedAt"] = value
        stuck_pod(doc)["metadata"]["deletionTimestamp"] = value

    code, _, err = diagnose(tmp_path, mutated(change), "-o", "json")
    if accepted:
        assert code == 3, err
    else:
        assert code == 13 and "capturedAt is not an RFC 3339 time" in err
