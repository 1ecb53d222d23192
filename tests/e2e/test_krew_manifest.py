"""krew-manifest.yaml has a shape krew accepts: installed offline by the real krew (v0.4.3)
from a stand-in archive (a launcher and the LICENSE), with the sha256 filled in for it.
The released archive and its sha256 belong to the packaging work."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.e2e.controlplane import REPO, build_binaries

pytestmark = pytest.mark.e2e
PLACEHOLDER = "0" * 64


def test_krew_installs_the_manifest_offline(tmp_path: Path) -> None:
    bindir = build_binaries()
    launcher = tmp_path / "kubectl-nodefail"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kubectl_nodefail "$@"\n')
    launcher.chmod(0o755)
    archive = tmp_path / "kubectl-nodefail.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(launcher, arcname="kubectl-nodefail")
        tar.add(REPO / "LICENSE", arcname="LICENSE")
    manifest = (REPO / "krew-manifest.yaml").read_text()
    assert PLACEHOLDER in manifest
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    (tmp_path / "m.yaml").write_text(manifest.replace(PLACEHOLDER, digest))
    env = {
        **os.environ,
        "KREW_ROOT": str(tmp_path / "krew"),
        "PATH": f"{tmp_path / 'krew' / 'bin'}{os.pathsep}{bindir}{os.pathsep}{os.environ['PATH']}",
    }
    proc = subprocess.run(
        [
            str(bindir / "krew"),
            "install",
            f"--manifest={tmp_path / 'm.yaml'}",
            f"--archive={archive}",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Installed plugin: nodefail" in proc.stderr + proc.stdout
    proc = subprocess.run(
        [str(bindir / "kubectl"), "nodefail", "version"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0 and proc.stdout.startswith("kubectl-nodefail "), proc.stderr
