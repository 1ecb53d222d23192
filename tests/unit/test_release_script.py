"""release/build.py's own parts, fast: the krew archive is byte-identical when rebuilt and
holds what the manifest's `files` name; the manifest gets the version, address and sha256 of
exactly that archive. (The full build is tested in tests/e2e/test_release.py.)"""

from __future__ import annotations

import hashlib
import importlib.util
import tarfile
from pathlib import Path

import yaml

from kubectl_nodefail import __version__

REPO = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("release_build", REPO / "release" / "build.py")
assert spec and spec.loader
build = importlib.util.module_from_spec(spec)
spec.loader.exec_module(build)


def test_version_comes_from_the_package() -> None:
    assert build.version() == __version__
    assert "version = attr: kubectl_nodefail.__version__" in (REPO / "setup.cfg").read_text()


def test_krew_archive_is_reproducible_and_matches_the_manifest(tmp_path: Path) -> None:
    exe = tmp_path / "kubectl-nodefail"
    exe.write_bytes(b"#!/usr/bin/env python3\nprint('hi')\n")
    first, second = tmp_path / "a.tar.gz", tmp_path / "b.tar.gz"
    build.krew_archive(exe, first, 1_700_000_000)
    exe.touch()  # a newer mtime on disk changes nothing
    build.krew_archive(exe, second, 1_700_000_000)
    assert first.read_bytes() == second.read_bytes()
    manifest = yaml.safe_load((REPO / "krew-manifest.yaml").read_text())
    platform = manifest["spec"]["platforms"][0]
    with tarfile.open(first) as tar:
        names = sorted(m.name for m in tar.getmembers())
        assert all(m.uid == 0 and m.mtime == 1_700_000_000 for m in tar.getmembers())
        assert tar.getmember("kubectl-nodefail").mode == 0o755
    assert names == sorted(f["from"] for f in platform["files"])
    assert platform["bin"] == "kubectl-nodefail"
    digest = hashlib.sha256(first.read_bytes()).hexdigest()
    text = build.manifest_text((REPO / "krew-manifest.yaml").read_text(), "9.8.7", digest)
    new = yaml.safe_load(text)
    assert new["spec"]["version"] == "v9.8.7"
    assert new["spec"]["platforms"][0]["sha256"] == digest
    assert new["spec"]["platforms"][0]["uri"].endswith(
        "/v9.8.7/kubectl-nodefail-v9.8.7-krew.tar.gz"
    )
    # only those three fields change; comments and the rest stay as written
    changed = [
        (a, b)
        for a, b in zip(
            (REPO / "krew-manifest.yaml").read_text().splitlines(), text.splitlines(), strict=True
        )
        if a != b
    ]
    assert len(changed) == 3


def test_committed_manifest_names_this_version() -> None:
    manifest = yaml.safe_load((REPO / "krew-manifest.yaml").read_text())
    assert manifest["spec"]["version"] == f"v{__version__}"
    platform = manifest["spec"]["platforms"][0]
    assert platform["uri"].endswith(f"/{build.archive_name(__version__)}")
    assert len(platform["sha256"]) == 64 and platform["sha256"] != "0" * 64
