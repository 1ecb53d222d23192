"""The real control plane's kubeconfig (kwokctl's: a CA and a client certificate in files) is
resolved without the kubernetes client, to the settings the client itself derives, and a
diagnosis through it never imports the client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane, wait_for

pytestmark = pytest.mark.e2e


def test_live_kubeconfig_is_static_and_agrees_with_the_client(
    control_plane: ControlPlane,
) -> None:
    from kubernetes import client, config

    from kubectl_nodefail.cluster import kubeconfig

    path = str(control_plane.kubeconfig)
    ours = kubeconfig.resolve(path, kubeconfig.read(path), None)
    assert ours is not None and ours.cert and ours.key and ours.ca  # static: client certificate
    cfg = client.Configuration()
    config.load_kube_config(config_file=path, client_configuration=cfg, persist_config=False)
    assert (ours.host, ours.verify) == (cfg.host, cfg.verify_ssl)
    assert ours.ca == Path(cfg.ssl_ca_cert).read_bytes()
    assert (ours.cert, ours.key) == (
        Path(cfg.cert_file).read_bytes(),
        Path(cfg.key_file).read_bytes(),
    )


def test_live_diagnosis_never_imports_the_client(control_plane: ControlPlane) -> None:
    code = (
        "import sys\nfrom kubectl_nodefail.cli.main import main\n"
        "try:\n    main(['diagnose', '-o', 'json', '--kubeconfig', sys.argv[1]])\n"
        "except SystemExit as exc:\n    print('exit', exc.code)\n"
        "print('kubernetes' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(control_plane.kubeconfig)],
        capture_output=True,
        text=True,
        check=False,
    )
    tail = proc.stdout.splitlines()[-2:]
    assert tail[-1] == "False" and tail[0] in ("exit 0", "exit 3"), proc.stdout + proc.stderr
    assert '"kind": "Diagnosis"' in proc.stdout


def test_live_diagnosis_of_a_context_in_the_second_kubeconfig_file(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    """KUBECONFIG=decoy:missing:real, as an on-call engineer's ~/.kube/config:prod.yaml: the
    context of the real control plane lives in the last file, the decoy's current-context
    points at a dead port. `--context` reaches the real cluster, as kubectl does with the same
    KUBECONFIG; without it both take the first file's current-context."""
    import yaml

    real = yaml.safe_load(control_plane.kubeconfig.read_text())
    context = real["current-context"]
    dead = {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}
    decoy = tmp_path / "decoy.yaml"
    decoy.write_text(
        yaml.safe_dump(
            {
                "current-context": "decoy",
                "clusters": [{"name": "decoy", "cluster": dead}],
                "users": [{"name": "decoy", "user": {"token": "decoy"}}],
                "contexts": [{"name": "decoy", "context": {"cluster": "decoy", "user": "decoy"}}],
            }
        )
    )
    plugin = Plugin(control_plane)
    listed = [str(decoy), str(tmp_path / "missing.yaml"), str(control_plane.kubeconfig)]
    plugin.env["KUBECONFIG"] = os.pathsep.join(listed)

    code, data = plugin.diagnose_json("--context", context)
    assert code in (0, 3) and data["kind"] == "Diagnosis"
    kubectl = [str(control_plane.bindir / "kubectl"), "get", "--raw", "/version"]
    agreed = subprocess.run(
        [*kubectl, "--context", context], capture_output=True, text=True, env=plugin.env
    )
    assert agreed.returncode == 0 and "gitVersion" in agreed.stdout, agreed.stderr

    proc = plugin.run("diagnose")  # the decoy's current-context: unreachable, for kubectl too
    assert proc.returncode == 11 and proc.stderr.count("\n") == 1, proc.stderr
    assert subprocess.run(kubectl, capture_output=True, env=plugin.env).returncode != 0


# --- impersonation (issue 18): people set `as:` to act with LESS privilege -------------------

NOBODY = "nodefail-e2e-nobody"  # a user no role is bound to


def _impersonating_kubeconfig(control_plane: ControlPlane, tmp_path: Path, **user: Any) -> Path:
    """The admin kubeconfig (certificates inlined) with `user`'s fields added to its user."""
    doc = control_plane.get_kubeconfig()
    doc["users"][0]["user"].update(user)
    path = tmp_path / "impersonating.kubeconfig"
    path.write_text(json.dumps(doc))
    return path


def test_as_flag_and_as_field_are_refused_by_rbac_as_for_kubectl(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    """The admin impersonating a user without roles: kubectl is refused, and so is the
    plugin, with the permission exit code (12) naming the impersonated user; before issue 18
    the plugin ignored both and read the cluster as the admin."""
    plugin = Plugin(control_plane)
    kubectl = [str(control_plane.bindir / "kubectl"), "get", "nodes"]
    refused = subprocess.run(
        [*kubectl, "--as", NOBODY], capture_output=True, text=True, env=plugin.env
    )
    assert refused.returncode != 0 and "forbidden" in refused.stderr, refused.stderr

    by_flag = plugin.run("diagnose", "--as", NOBODY)
    assert by_flag.returncode == 12, by_flag.stderr
    assert "forbidden" in by_flag.stderr and NOBODY in by_flag.stderr
    # the hint is a command the krew install has, not a path of the repository
    assert "`kubectl nodefail rbac`" in by_flag.stderr and "deploy/" not in by_flag.stderr

    config = _impersonating_kubeconfig(control_plane, tmp_path, **{"as": NOBODY})
    by_field = plugin.run("diagnose", "--kubeconfig", str(config))
    assert by_field.returncode == 12, by_field.stderr
    assert "forbidden" in by_field.stderr and NOBODY in by_field.stderr
    kubectl_field = subprocess.run(
        [*kubectl, "--kubeconfig", str(config)], capture_output=True, text=True, env=plugin.env
    )
    assert kubectl_field.returncode != 0 and NOBODY in kubectl_field.stderr

    # the admin itself still reads the cluster (the refusals above are the impersonation's)
    code, _ = plugin.diagnose_json()
    assert code in (0, 3)


def test_impersonated_user_in_the_audit_log(control_plane: ControlPlane, tmp_path: Path) -> None:
    """A write through the plugin's connection (a SelfSubjectReview: audited at Metadata level,
    persists nothing) carries the impersonation of `as:` + --as-group: the API server answers
    as the impersonated user and its audit log records impersonatedUser."""
    from kubectl_nodefail.cluster.kube import Cluster
    from kubectl_nodefail.cluster.kubeconfig import Overrides

    config = _impersonating_kubeconfig(control_plane, tmp_path, **{"as": NOBODY})
    cluster = Cluster(str(config), overrides=Overrides(impersonate_groups=("nodefail-e2e-g",)))
    try:
        review = cluster.create(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
        )
    finally:
        cluster.close()
    info = review["status"]["userInfo"]
    assert info["username"] == NOBODY and "nodefail-e2e-g" in info["groups"]

    log = control_plane.cluster_dir / "logs" / "audit.log"

    def audited() -> list[dict[str, Any]]:
        entries = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        return [
            e
            for e in entries
            if e.get("objectRef", {}).get("resource") == "selfsubjectreviews"
            and e.get("userAgent", "").startswith("kubectl-nodefail/")
            and (e.get("impersonatedUser") or {}).get("username") == NOBODY
        ]

    found = wait_for("the impersonated SelfSubjectReview in the audit log", audited, 30)
    assert "nodefail-e2e-g" in found[-1]["impersonatedUser"]["groups"]


def test_the_api_server_compresses_what_is_asked_compressed_and_it_reads_the_same(
    control_plane: ControlPlane,
) -> None:
    """Requests ask for gzip as kubectl's do (docs/connecting.md): the real API server
    compresses an answer over its threshold (128 KiB), and the decoded object equals the one
    read with --disable-compression."""
    import urllib3

    from kubectl_nodefail.cluster import kube
    from kubectl_nodefail.cluster.kubeconfig import Overrides

    name, namespace = "big-for-gzip", "default"
    data = {f"k{i:04d}": "x" * 100 + str(i) for i in range(2000)}  # ~210 KB
    control_plane.kubectl(
        "create",
        "-f",
        "-",
        stdin=json.dumps(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": namespace},
                "data": data,
            }
        ),
    )
    path = f"/api/v1/namespaces/{namespace}/configmaps/{name}"
    try:
        config = str(control_plane.kubeconfig)
        gzipped = kube.Cluster(config)
        plain = kube.Cluster(config, overrides=Overrides(disable_compression=True))
        assert gzipped._conn.compress and not plain._conn.compress
        assert gzipped.get(path)["data"] == plain.get(path)["data"] == data
        headers = urllib3.HTTPHeaderDict({"Accept-Encoding": "gzip"})
        for key, value in gzipped._conn.auth_headers():
            headers.add(key, value)
        raw = gzipped._conn.pool.request(
            "GET", gzipped.host + path, headers=headers, preload_content=False
        )
        try:
            assert raw.status == 200 and raw.headers.get("Content-Encoding") == "gzip"
            assert len(raw.read(decode_content=False)) < 50_000  # ~210 KB of JSON, compressed
        finally:
            raw.release_conn()
    finally:
        control_plane.kubectl("delete", "configmap", name, "-n", namespace, check=False)
