"""release/build.py's own parts, fast: the krew archive is byte-identical when rebuilt and
holds what the manifest's `files` name; the manifest gets the version, address and sha256 of
exactly that archive. (The full build is tested in tests/e2e/test_release.py.)"""

from __future__ import annotations

import hashlib
import importlib.util
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import yaml

from kubectl_nodefail import __version__
from kubectl_nodefail.common.errors import Exit

REPO = Path(__file__).resolve().parents[3]
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


def test_the_zipapp_starts_with_its_own_version_check(tmp_path: Path) -> None:
    """replace_main swaps shiv's __main__.py for release/zipapp_main.py and keeps every other
    entry, byte for byte, in order, with its time and mode; a zip without one is refused."""
    exe = tmp_path / "app"
    with exe.open("wb") as f:
        f.write(b"#!/usr/bin/env python3\n")
        with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(zipfile.ZipInfo("site-packages/a.py", (2020, 1, 2, 3, 4, 6)), b"A = 1\n")
            zf.writestr(zipfile.ZipInfo("__main__.py", (2020, 1, 2, 3, 4, 6)), b"import x\n")
    before = zipfile.ZipFile(exe).infolist()
    build.replace_main(exe, build.ZIPAPP_MAIN.read_bytes())
    assert exe.read_bytes().startswith(b"#!/usr/bin/env python3\n")
    with zipfile.ZipFile(exe) as zf:
        after = zf.infolist()
        assert [(i.filename, i.date_time, i.external_attr) for i in after] == [
            (i.filename, i.date_time, i.external_attr) for i in before
        ]
        assert zf.read("site-packages/a.py") == b"A = 1\n"
        assert zf.read("__main__.py") == build.ZIPAPP_MAIN.read_bytes()
    broken = tmp_path / "broken"
    with broken.open("wb") as f:
        f.write(b"#!/usr/bin/env python3\n")
        with zipfile.ZipFile(f, "w") as zf:
            zf.writestr("a.py", b"")
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.path.insert(0, sys.argv[1]); import build; "
            "build.replace_main(build.Path(sys.argv[2]), b'')",
            str(REPO / "release"),
            str(broken),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1 and "shiv wrote no __main__.py" in proc.stderr


def test_the_version_check_exits_with_the_documented_code(tmp_path: Path) -> None:
    """The shim cannot import errors.Exit (that is what an old Python must not reach); its
    literal is the CONFIG code, and the current Python passes the check and goes on to the
    bootstrap (here: a stand-in that says so)."""
    text = build.ZIPAPP_MAIN.read_text()
    assert f"EXIT_PYTHON_TOO_OLD = {int(Exit.CONFIG)}\n" in text
    assert "NEEDED = (3, 9)\n" in text
    (tmp_path / "_bootstrap.py").write_text("def bootstrap():\n    print('bootstrapped')\n")
    proc = subprocess.run(
        [sys.executable, str(build.ZIPAPP_MAIN)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tmp_path)},
        check=False,
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "bootstrapped\n", "")
