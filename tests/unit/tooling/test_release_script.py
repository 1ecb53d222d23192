"""release/build.py's own parts, fast: the krew archive is byte-identical when rebuilt and
holds what the manifest's `files` name; the manifest gets the version, address and sha256 of
exactly each archive, one per platform (a compiled JSON decoder where built). The full build
is tested in tests/e2e/test_release.py."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

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


def _matches(selector: dict[str, Any], os_: str, arch: str) -> bool:
    """A krew platform selector (a Kubernetes label selector) against an os/arch."""
    labels = {"os": os_, "arch": arch}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        has = labels.get(expr["key"]) in expr["values"]
        if has != (expr["operator"] == "In"):
            return False
    return True


def test_every_platform_gets_one_archive_with_a_compiled_decoder_where_built() -> None:
    """The selectors do not overlap (krew takes a match, whatever the order), every linux and
    darwin machine gets one, and the platforms of FAST_PLATFORMS get theirs."""
    manifest = yaml.safe_load((REPO / "krew-manifest.yaml").read_text())
    platforms = manifest["spec"]["platforms"]
    for os_ in ("linux", "darwin"):
        for arch in ("amd64", "arm64", "386", "arm", "ppc64le", "s390x"):
            found = [p for p in platforms if _matches(p["selector"], os_, arch)]
            assert len(found) == 1, (os_, arch)
            name = found[0]["uri"].rsplit("/", 1)[1]
            key = f"{os_}-{arch}" if os_ == "linux" else os_
            compiled = key in build.FAST_PLATFORMS and arch in ("amd64", "arm64")
            assert name == build.archive_name(__version__, key if compiled else "")
    assert not [p for p in platforms if _matches(p["selector"], "windows", "amd64")]
    for p in platforms:
        assert p["bin"] == "kubectl-nodefail"
        assert [f["from"] for f in p["files"]] == ["kubectl-nodefail", "LICENSE"]


def test_krew_archive_is_reproducible_and_matches_the_manifest(tmp_path: Path) -> None:
    exe = tmp_path / "kubectl-nodefail"
    exe.write_bytes(b"#!/usr/bin/env python3\nprint('hi')\n")
    first, second = tmp_path / "a.tar.gz", tmp_path / "b.tar.gz"
    build.krew_archive(exe, first, 1_700_000_000)
    exe.touch()  # a newer mtime on disk changes nothing
    build.krew_archive(exe, second, 1_700_000_000)
    assert first.read_bytes() == second.read_bytes()
    manifest = yaml.safe_load((REPO / "krew-manifest.yaml").read_text())
    with tarfile.open(first) as tar:
        names = sorted(m.name for m in tar.getmembers())
        assert all(m.uid == 0 and m.mtime == 1_700_000_000 for m in tar.getmembers())
        assert tar.getmember("kubectl-nodefail").mode == 0o755
    for platform in manifest["spec"]["platforms"]:
        assert names == sorted(f["from"] for f in platform["files"])


def test_the_manifest_gets_each_archives_address_and_sha256() -> None:
    current = (REPO / "krew-manifest.yaml").read_text()
    digests = {p: hashlib.sha256(p.encode()).hexdigest() for p in ["", *build.FAST_PLATFORMS]}
    text = build.manifest_text(current, "9.8.7", digests)
    new = yaml.safe_load(text)
    assert new["spec"]["version"] == "v9.8.7"
    for platform in new["spec"]["platforms"]:
        name = platform["uri"].rsplit("/", 1)[1]
        key = next((k for k in build.FAST_PLATFORMS if name == build.archive_name("9.8.7", k)), "")
        assert platform["uri"].endswith(f"/v9.8.7/{build.archive_name('9.8.7', key)}")
        assert platform["sha256"] == digests[key]
    # only the version and each platform's uri and sha256 change; comments and the rest stay
    changed = [
        (a, b) for a, b in zip(current.splitlines(), text.splitlines(), strict=True) if a != b
    ]
    assert len(changed) == 1 + 2 * len(digests)
    assert build.manifest_text(text, "9.8.7", digests) == text


def test_a_manifest_that_names_other_archives_is_refused(tmp_path: Path) -> None:
    current = (REPO / "krew-manifest.yaml").read_text()
    digests = {p: "0" * 64 for p in ["", *build.FAST_PLATFORMS]}
    missing = current.replace("-linux-arm64-krew.tar.gz", "-krew.tar.gz")
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, json; sys.path.insert(0, sys.argv[1]); import build; "
            "build.manifest_text(sys.argv[2], '1.0.0', json.loads(sys.argv[3]))",
            str(REPO / "release"),
            missing,
            json.dumps(digests),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1 and "names the archives" in proc.stderr, proc.stderr


def test_committed_manifest_names_this_version() -> None:
    manifest = yaml.safe_load((REPO / "krew-manifest.yaml").read_text())
    assert manifest["spec"]["version"] == f"v{__version__}"
    names = sorted(p["uri"].rsplit("/", 1)[1] for p in manifest["spec"]["platforms"])
    assert names == sorted(build.archive_name(__version__, k) for k in ["", *build.FAST_PLATFORMS])
    for platform in manifest["spec"]["platforms"]:
        assert len(platform["sha256"]) == 64 and platform["sha256"] != "0" * 64


def test_the_compiled_wheels_are_pinned_for_every_cpython_and_platform() -> None:
    """compiled-wheels.txt: one orjson wheel per supported CPython (3.9 up to the newest the
    release tests run) and platform of FAST_PLATFORMS, each with a sha256."""
    rows = [
        line.split()
        for line in build.COMPILED_WHEELS.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert all(len(r) == 2 and len(r[1]) == 64 for r in rows)
    cpythons = {f"cp3{minor}" for minor in range(9, 15)}
    for mark, _tag in build.FAST_PLATFORMS.values():
        tags = sorted(name.split("-")[2] for name, _ in rows if mark in name)
        assert set(tags) == cpythons and len(tags) == len(cpythons), (mark, tags)
    versions = {name.split("-")[1] for name, _ in rows}
    assert len(versions) == 1 and {name.split("-")[0] for name, _ in rows} == {"orjson"}


def test_add_compiled_puts_each_cpythons_module_beside_the_others(tmp_path: Path) -> None:
    wheels = []
    for py in ("cp39", "cp310"):
        whl = tmp_path / f"orjson-1.0-{py}-{py}-x.whl"
        with zipfile.ZipFile(whl, "w") as zf:
            zf.writestr("orjson/__init__.py", "from .orjson import *\n")
            zf.writestr(f"orjson/orjson.{py}.so", py)
            zf.writestr("orjson-1.0.dist-info/METADATA", f"from {py}")
            zf.writestr("orjson-1.0.dist-info/RECORD", "unstable")
            zf.writestr("other/x.py", "")
        wheels.append(whl)
    site = tmp_path / "site"
    added = build.add_compiled(site, wheels)
    assert added == ["orjson/orjson.cp39.so", "orjson/orjson.cp310.so"]
    files = sorted(str(p.relative_to(site)) for p in site.rglob("*") if p.is_file())
    assert files == [
        "orjson-1.0.dist-info/METADATA",
        "orjson/__init__.py",
        "orjson/orjson.cp310.so",
        "orjson/orjson.cp39.so",
    ]
    assert (site / "orjson-1.0.dist-info/METADATA").read_text() == "from cp39"


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
