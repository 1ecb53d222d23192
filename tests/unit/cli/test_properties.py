"""Property-based tests (hypothesis): whatever a dump or a kubeconfig holds, the outcome is a
result or a documented exit code with exactly one line on stderr. Never exit 1, never a
traceback. Counterexamples found are kept as plain tests in test_bad_dumps.py and
test_bad_servers.py.

Example counts are bounded so the whole file runs in seconds; NODEFAIL_PROPERTY_SCALE=20 runs
twenty times as many (a deeper search, by hand).
"""

from __future__ import annotations

import base64
import copy
import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any
from unittest import mock

import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_nodefail.cli.main import main
from kubectl_nodefail.cluster import kube
from tests.unit.conftest import FIXTURES

FIXTURE_NAMES = sorted(p.stem for p in FIXTURES.glob("*.json"))
SCALE = int(os.environ.get("NODEFAIL_PROPERTY_SCALE", "1"))
SETTINGS = settings(
    max_examples=40 * SCALE,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Values a careless editor, another tool or a truncated copy puts where a field was.
GARBAGE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["", "2026-11-30T09:47:16Z", "Running", "True", "NoExecute", "v1.36.1"]),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    st.builds(lambda: {"name": "x", "uid": "u"}),  # fresh objects: later steps mutate them
    st.builds(lambda: [{"kind": "Pod"}]),
)


@cache
def _fixture_text(name: str) -> str:
    return (FIXTURES / f"{name}.json").read_text()


def fixture(name: str) -> Any:
    return json.loads(_fixture_text(name))


def _children(node: Any) -> list[Any]:
    if isinstance(node, dict):
        return list(node)
    if isinstance(node, list):
        return list(range(len(node)))
    return []


@st.composite
def mutated_doc(draw: st.DrawFn, base: Any) -> Any:
    """The document with 1-4 random changes at random paths: a value replaced by garbage or
    by a value of another type, a key dropped, or garbage inserted."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 4))):
        parent: Any = None
        key: Any = None
        node = doc
        while _children(node) and (parent is None or draw(st.integers(0, 4)) > 0):
            parent, key = node, draw(st.sampled_from(_children(node)))
            node = node[key]
        if parent is None:
            continue
        action = draw(st.sampled_from(["replace", "replace", "drop", "insert", "retype"]))
        if action == "replace":
            parent[key] = draw(GARBAGE)
        elif action == "drop":
            del parent[key]
        elif action == "insert" and isinstance(node, dict):
            node[draw(st.text(max_size=8))] = draw(GARBAGE)
        elif action == "insert" and isinstance(node, list):
            node.insert(draw(st.integers(0, len(node))), draw(GARBAGE))
        else:  # the same content, another JSON type
            parent[key] = [node] if not isinstance(node, list) else {"0": node}
    return doc


def _check_outcome(code: int, stderr: str, results: set[int], errors: set[int]) -> None:
    assert "Traceback" not in stderr, stderr
    assert code != 1, stderr
    if code in results:
        assert all(line.startswith("warning: ") for line in stderr.splitlines()), stderr
        return
    assert code in errors, (code, stderr)
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr


def _run_dump(tmp: Path, doc: Any, args: list[str]) -> tuple[int, str]:
    path = tmp / "dump.json"
    path.write_text(json.dumps(doc))
    result = CliRunner().invoke(main, [*args, "--from-file", str(path)])
    return result.exit_code, result.stderr


@SETTINGS
@given(data=st.data(), name=st.sampled_from(FIXTURE_NAMES))
def test_mutated_fixtures_give_a_result_or_exit_13(
    tmp_path_factory: Any, data: st.DataObject, name: str
) -> None:
    doc = data.draw(mutated_doc(fixture(name)))
    output = data.draw(st.sampled_from(["table", "json", "wide"]))
    code, stderr = _run_dump(tmp_path_factory.mktemp("d"), doc, ["diagnose", "-o", output])
    _check_outcome(code, stderr, {0, 3}, {13})


@SETTINGS
@given(data=st.data(), name=st.sampled_from(FIXTURE_NAMES))
def test_mutated_pods_give_a_result_or_exit_13(
    tmp_path_factory: Any, data: st.DataObject, name: str
) -> None:
    """The same, aimed at the objects the analysis reads most: one pod or node mutated."""
    doc = fixture(name)
    kinds = ("Pod", "Node", "Lease", "StatefulSet", "ReplicaSet", "Job", "Event")
    targets = [i for i, item in enumerate(doc["items"]) if item.get("kind") in kinds]
    index = data.draw(st.sampled_from(targets))
    doc["items"][index] = data.draw(mutated_doc(doc["items"][index]))
    code, stderr = _run_dump(tmp_path_factory.mktemp("d"), doc, ["diagnose"])
    _check_outcome(code, stderr, {0, 3}, {13})


@settings(SETTINGS, max_examples=20 * SCALE)
@given(data=st.data(), name=st.sampled_from(FIXTURE_NAMES))
def test_mutated_fixtures_plan_or_exit_13(
    tmp_path_factory: Any, data: st.DataObject, name: str
) -> None:
    """remediate --from-file reads the same dumps: a plan, or exit 13 (2 for an unknown node)."""
    doc = data.draw(mutated_doc(fixture(name)))
    code, stderr = _run_dump(tmp_path_factory.mktemp("d"), doc, ["remediate"])
    _check_outcome(code, stderr, {0, 4, 5}, {13})


@settings(SETTINGS, max_examples=4 * SCALE)
@given(data=st.data(), name=st.sampled_from(FIXTURE_NAMES))
def test_mutated_fixtures_through_the_installed_command(
    tmp_path_factory: Any, data: st.DataObject, name: str
) -> None:
    """A few through the real entry point in its own process: no stray output either."""
    doc = data.draw(mutated_doc(fixture(name)))
    path = tmp_path_factory.mktemp("d") / "dump.json"
    path.write_text(json.dumps(doc))
    proc = subprocess.run(
        [sys.executable, "-m", "kubectl_nodefail", "diagnose", "--from-file", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    _check_outcome(proc.returncode, proc.stderr, {0, 3}, {13})


# --- kubeconfigs: exit 10 (or, when still usable, the server's answer), one line ---------

GOOD_KUBECONFIG: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Config",
    "current-context": "c",
    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
    "users": [{"name": "u", "user": {"token": "t"}}],
    "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
}


@st.composite
def kubeconfig_text(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["mutated", "server", "ca", "truncated", "text"]))
    if kind == "text":
        return draw(st.text(max_size=60))
    doc = copy.deepcopy(GOOD_KUBECONFIG)
    if kind == "mutated":
        doc = draw(mutated_doc(doc))
    elif kind == "server":
        doc["clusters"][0]["cluster"]["server"] = draw(
            st.one_of(
                st.text(max_size=30),
                st.sampled_from(["not a url at all", "https://", "ftp://x", "https://[::1", "h:"]),
                st.builds(lambda p: f"https://127.0.0.1:{p}", st.integers(-5, 10**6)),
            )
        )
    else:
        doc["clusters"][0]["cluster"]["certificate-authority-data"] = draw(
            st.one_of(
                st.binary(max_size=40).map(lambda b: base64.b64encode(b).decode()),
                st.text(max_size=20),
                st.integers(),
            )
        )
    text = yaml.safe_dump(doc) if draw(st.booleans()) else json.dumps(doc)
    if kind == "truncated":
        text = text[: draw(st.integers(0, len(text)))]
    return text


@settings(SETTINGS, max_examples=50 * SCALE)
@given(text=kubeconfig_text())
def test_arbitrary_kubeconfigs_are_exit_10_or_a_connection_outcome(
    tmp_path_factory: Any, text: str
) -> None:
    path = tmp_path_factory.mktemp("k") / "config"
    path.write_text(text)
    with mock.patch.object(kube, "RETRIES", 0):  # the server port refuses: no backoff waits
        result = CliRunner().invoke(
            main, ["diagnose", "--kubeconfig", str(path), "--request-timeout", "2"]
        )
    # 10: unusable; 11/12: usable, and the (absent) server refused or the credentials failed
    _check_outcome(result.exit_code, result.stderr, set(), {10, 11, 12})
