"""The command line: exit codes, one-line errors, output formats, and a light --help."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_nodefail.cli.main import main
from tests.unit.conftest import FIXTURES

AFTER = str(FIXTURES / "node-down-after-eviction.json")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_help_does_not_import_the_kubernetes_client() -> None:
    code = (
        "import sys; from kubectl_nodefail.cli.main import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "assert 'kubernetes' not in sys.modules, 'kubernetes imported'"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "kubectl nodefail diagnose" in proc.stdout


def test_problems_found_exit_3_and_table() -> None:
    code, out, _ = run("diagnose", "--from-file", AFTER)
    assert code == 3
    assert out.splitlines()[0].startswith("1 of 6 nodes not Ready")
    assert "flaky-a" in out and "BLOCKED" in out and "SUGGESTED" in out


def test_healthy_snapshot_exit_0_one_short_answer() -> None:
    code, out, _ = run("diagnose", "--from-file", str(FIXTURES / "node-down-recovered.json"))
    assert code == 0
    assert out.startswith("All 6 nodes Ready and no pod stuck terminating. Nothing to do.")
    assert len(out.splitlines()) == 1


def test_json_output_is_stable_shape() -> None:
    code, out, _ = run("diagnose", "--from-file", AFTER, "-o", "json")
    data = json.loads(out)
    assert code == 3 and data["kind"] == "Diagnosis" and data["apiVersion"] == "kubectl-nodefail/v1"
    assert set(data["summary"]) == {
        "problems",
        "nodesTotal",
        "nodesNotReady",
        "stuckPods",
        "podsOnFailedNodes",
        "waitingForVolume",
        "waitingForNode",
        "terminatingElsewhere",
        "heldByFinalizers",
        "onDeletedNodes",
    }
    first = data["pods"][0]
    for key in (
        "namespace",
        "name",
        "uid",
        "kubectlStatus",
        "meaning",
        "ownerChain",
        "controller",
        "explanation",
        "replacement",
        "storage",
        "timeline",
        "ifNodeReturns",
        "action",
    ):
        assert key in first, key


def test_yaml_and_wide_outputs() -> None:
    code, out, _ = run("diagnose", "--from-file", AFTER, "-o", "yaml")
    assert code == 3 and "kind: Diagnosis" in out
    code, out, _ = run("diagnose", "--from-file", AFTER, "-o", "wide")
    assert code == 3 and "EVIDENCE" in out and "REPLACEMENT" in out


def test_explain_pod_and_node() -> None:
    code, out, _ = run("diagnose", "--from-file", AFTER, "--explain", "scenario-down/db-0")
    assert code == 3
    assert out.startswith("Pod scenario-down/db-0 on node flaky-a")
    assert "Why it is stuck:" in out and "If the node returns:" in out
    code, out, _ = run("diagnose", "--from-file", AFTER, "--explain", "flaky-a")
    assert "Node flaky-a (NotReady" in out and "Shutdown evidence: none" in out


def test_explain_unknown_name_is_a_usage_error() -> None:
    code, _, err = run("diagnose", "--from-file", AFTER, "--explain", "nope")
    assert code == 2 and "not found among the failed nodes and stuck pods" in err
    assert "did you mean" not in err and len(err.strip().splitlines()) == 1
    for output in ("table", "json"):
        code, out, err = run(
            "diagnose", "--from-file", AFTER, "--explain", "scenario-down/db-1", "-o", output
        )
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
        assert "(did you mean scenario-down/db-0?)" in err
    code, _, err = run("diagnose", "--from-file", AFTER, "--explain", "db-1")
    assert code == 2 and "(did you mean db-0?)" in err
    code, _, err = run("diagnose", "--from-file", AFTER, "--explain", "flaky-b")
    assert code == 2 and "(did you mean flaky-a?)" in err


def test_remediate_on_a_node_that_does_not_exist_is_not_found() -> None:
    """As kubectl says it, exit 16: not "Nothing to do" (exit 5), which reads as all clear."""
    code, out, err = run("remediate", "--from-file", AFTER, "flaky-b")
    assert code == 5 and "Nothing to do" in out  # flaky-b exists and is Ready
    code, out, err = run("remediate", "--from-file", AFTER, "flakya")
    assert code == 16 and out == ""
    assert err.strip() == 'error: nodes "flakya" not found (did you mean flaky-a?)'


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not valid JSON"),
        ('{"kind": "NodefailDump", "items": []}', "no valid capturedAt"),
        ('{"kind": "Pod"}', "has no 'items' list"),
        ('{"kind": "List", "items": [{"kind": "Pod"}]}', "items[0] (Pod): metadata is missing"),
    ],
)
def test_malformed_dump_is_one_line_exit_13(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "dump.json"
    path.write_text(content)
    code, out, err = run("diagnose", "--from-file", str(path))
    assert code == 13 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err and "Traceback" not in err


def test_missing_dump_file() -> None:
    code, _, err = run("diagnose", "--from-file", "/nonexistent/dump.json")
    assert code == 13 and "not found" in err


def test_kubectl_list_output_is_accepted(tmp_path: Path) -> None:
    dump = json.loads(Path(AFTER).read_text())
    items = [i for i in dump["items"] if i["kind"] in ("Node", "Pod")]
    path = tmp_path / "list.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    code, out, err = run("diagnose", "--from-file", str(path), "-o", "json")
    assert code == 3
    assert "capture time unknown" in err
    assert json.loads(out)["summary"]["nodesNotReady"] == 1


def test_no_kubeconfig_exit_10(tmp_path: Path) -> None:
    code, _, err = run("diagnose", "--kubeconfig", str(tmp_path / "missing"))
    assert code == 10 and "no kubeconfig found" in err


def _kubeconfig(tmp_path: Path, server: str) -> str:
    path = tmp_path / "config"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "dead",
                "clusters": [{"name": "dead", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "dead", "context": {"cluster": "dead", "user": "u"}}],
            }
        )
    )
    return str(path)


def test_unknown_context_exit_10(tmp_path: Path) -> None:
    code, _, err = run(
        "diagnose",
        "--kubeconfig",
        _kubeconfig(tmp_path, "https://127.0.0.1:1"),
        "--context",
        "nope",
    )
    assert code == 10 and "context 'nope' not found" in err and "known contexts: dead" in err


def test_unreachable_api_server_exit_11(tmp_path: Path) -> None:
    code, _, err = run(
        "diagnose",
        "--kubeconfig",
        _kubeconfig(tmp_path, "https://127.0.0.1:1"),
        "--request-timeout",
        "3",
    )
    assert code == 11 and err.startswith(
        "error: The connection to the server 127.0.0.1:1 was refused - did you specify the right "
        "host or port? (context "
    )
    assert len(err.strip().splitlines()) == 1


def test_conflicting_flags_are_usage_errors() -> None:
    code, _, err = run("diagnose", "--from-file", AFTER, "--demo")
    assert code == 2 and "exclude each other" in err
    code, _, err = run("diagnose", "-n", "a", "-A")
    assert code == 2 and "exclude each other" in err
    # A saved plan carries its own nodes and strategy: flags that would change them are
    # refused, never silently ignored. (Its attestations are typed again: test_plan_binding.)
    for extra in (["--strategy", "force-delete"], ["n1"]):
        code, _, err = run("remediate", "--plan-in", "plan.json", *extra)
        assert code == 2 and "--plan-in replays a saved plan" in err, (extra, err)


def test_demo_runs_on_the_bundled_recording() -> None:
    code, out, err = run("diagnose", "--demo")
    assert code == 3 and "recorded from a real control plane" in err
    assert "db-0" in out


def test_remediate_plan_exit_codes_from_a_dump(tmp_path: Path) -> None:
    code, out, _ = run("remediate", "--from-file", AFTER)
    assert code == 4 and "DRY RUN" in out and "REFUSED" in out
    code, out, _ = run("remediate", "--from-file", AFTER, "--node-shutdown-confirmed", "flaky-a")
    assert code == 0 and "taint-out-of-service" in out
    code, out, _ = run("remediate", "--from-file", str(FIXTURES / "node-down-recovered.json"))
    assert code == 5 and "Nothing to do" in out
    saved = tmp_path / "plan.json"
    code, out, _ = run(
        "remediate",
        "--from-file",
        AFTER,
        "--node-shutdown-confirmed",
        "flaky-a",
        "-o",
        "json",
        "--plan-out",
        str(saved),
    )
    assert code == 0 and json.loads(saved.read_text())["kind"] == "RemediationPlan"
    data = json.loads(out)
    assert data["summary"] == {"planned": len(data["steps"])}  # every step allowed, none run


def test_remediate_refuses_confirm_on_a_dump_and_bad_plans(tmp_path: Path) -> None:
    code, _, err = run("remediate", "--from-file", AFTER, "--confirm")
    assert code == 2 and "not with --from-file" in err
    code, _, err = run("remediate", "--from-file", AFTER, "--node-shutdown-confirmed", "nope")
    assert code == 2 and "unknown nodes: nope" in err
    bad = tmp_path / "plan.json"
    bad.write_text('{"kind": "Diagnosis"}')
    code, _, err = run("remediate", "--plan-in", str(bad), "--kubeconfig", str(tmp_path / "x"))
    # The plan file is validated first, offline: nothing is read or changed with a bad one.
    assert code == 13 and len(err.strip().splitlines()) == 1 and "kind must be" in err
    code, _, err = run(
        "remediate", "--from-file", AFTER, "--plan-out", str(tmp_path / "no" / "plan.json")
    )
    assert code == 2 and "--plan-out" in err and "does not exist" in err


def test_a_node_that_does_not_exist_is_not_found_never_all_clear() -> None:
    """kubectl says NotFound for a typo; an all-clear would send the on-call back to bed."""
    code, out, err = run("diagnose", "flaky-aa", "--from-file", AFTER)
    assert code == 16 and out == ""
    assert err.strip() == 'error: nodes "flaky-aa" not found (did you mean flaky-a?)'
    code, _, err = run("remediate", "worker-3", "--from-file", AFTER)
    assert code == 16 and 'nodes "worker-3" not found' in err


def test_a_filtered_view_never_speaks_for_the_whole_cluster() -> None:
    snap = json.loads(Path(AFTER).read_text())
    ready = next(
        i["metadata"]["name"]
        for i in snap["items"]
        if i.get("kind") == "Node"
        and any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in i.get("status", {}).get("conditions", [])
        )
    )
    code, out, _ = run("diagnose", ready, "--from-file", AFTER)
    first = out.splitlines()[0]
    assert code == 0 and "Nothing to do" not in first and "All " not in first
    assert first.startswith(f"node {ready}: nothing stuck. Elsewhere 1 of ")
    code, out, _ = run("diagnose", ready, "--from-file", AFTER, "-o", "json")
    data = json.loads(out)
    assert data["summary"]["nodesNotReady"] == sum(z["notReady"] for z in data["zones"]) == 1
    assert data["scopeNodes"] == [ready]
