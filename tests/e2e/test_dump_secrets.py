"""A dump is safe to share, on the real control plane (issue 38 item 2): a secret planted where
real workloads keep them (a container's env value and args, a pod annotation, and kubectl
apply's last-applied-configuration, which repeats them all) is in no file `dump` writes, in a
file only its owner can read; `--no-redact` writes them, with a warning, so the check can
fail; and the redacted dump diagnoses as the live cluster does."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from tests.e2e import workloads as w
from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane
from tests.e2e.helpers import wait_node_unknown, wait_running_on

pytestmark = pytest.mark.e2e
NS = "scenario-secrets"
NODE = "flaky-sec"
SECRET = "hunter2-e2e-secret"


def test_a_dump_of_a_live_cluster_holds_no_planted_secret(
    control_plane: ControlPlane, plugin: Plugin, tmp_path: Path
) -> None:
    cp = control_plane
    cp.add_failable_node(NODE)
    app = w.deployment(NS, "app", prefer=NODE, toleration_seconds=3600)
    spec = app["spec"]["template"]["spec"]
    spec["containers"][0]["env"] = [{"name": "DB_PASSWORD", "value": SECRET}]
    spec["containers"][0]["args"] = [f"--password={SECRET}"]
    app["spec"]["template"]["metadata"]["annotations"] = {"example.com/token": SECRET}
    cp.apply(w.namespace(NS), app)  # kubectl apply: last-applied-configuration repeats them
    wait_running_on(cp, NS, "app", NODE)
    cp.stop_kubelet(NODE)
    wait_node_unknown(cp, NODE)

    out = tmp_path / "incident.json"
    proc = plugin.run("dump", "-f", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert SECRET not in text
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    doc = json.loads(text)
    assert "--no-redact" in doc["notes"]["redacted"]
    assert any(i["kind"] == "Pod" and i["metadata"]["namespace"] == NS for i in doc["items"])

    whole = tmp_path / "whole.json"
    proc = plugin.run("dump", "--no-redact", "-f", str(whole))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("warning: --no-redact"), proc.stderr
    assert whole.read_text().count(SECRET) >= 3  # env, args, annotation (and last-applied)

    live = plugin.run("diagnose", "-o", "json")
    cut = plugin.run("diagnose", "--from-file", str(out), "-o", "json")
    assert live.returncode == cut.returncode == 3, live.stderr + cut.stderr
    rows = {p["name"]: p["action"]["code"] for p in json.loads(cut.stdout)["pods"]}
    assert rows == {p["name"]: p["action"]["code"] for p in json.loads(live.stdout)["pods"]}
