"""Build a release of kubectl-nodefail from this checkout, in one go.

Produces, in --out (default dist/):
  kubectl_nodefail-V-py3-none-any.whl, kubectl_nodefail-V.tar.gz   (pip / pipx users)
  kubectl-nodefail                 the plugin as one executable zipapp (shiv) that runs on a
                                   bare python3 (3.9+): every dependency inside, pure Python;
                                   an older python3 gets one line and exit 10 (zipapp_main.py)
  kubectl-nodefail-vV-krew.tar.gz  the krew archive: that zipapp and LICENSE (every platform but
                                   those below)
  kubectl-nodefail-vV-P-krew.tar.gz  the same zipapp with a compiled JSON decoder (orjson) for
                                   each supported CPython, for P = linux-amd64, linux-arm64 and
                                   darwin (FAST_PLATFORMS; its wheels pinned by sha256 in
                                   release/compiled-wheels.txt): chosen at start, the standard
                                   library where it does not load (common/jsondecode.py)
  krew-manifest.yaml               with the archive's sha256 (also written to the repository)
  SHA256SUMS

The version comes from one place, kubectl_nodefail/__init__.py. The archive is reproducible
(fixed timestamps from the last commit, sorted entries, pinned dependencies), so the manifest's
sha256 and a rebuild of the same commit agree; `--check` proves the committed manifest does.

Usage: python release/build.py [--out DIR] [--wheel-cache DIR] [--allow-dirty] [--check]
Only the standard library here; the tools it runs (build, shiv, pip) are pinned in setup.cfg's
`release` extra.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REQUIREMENTS = REPO / "release" / "zipapp-requirements.txt"
COMPILED_WHEELS = REPO / "release" / "compiled-wheels.txt"
ZIPAPP_MAIN = REPO / "release" / "zipapp_main.py"
MANIFEST = REPO / "krew-manifest.yaml"
PLUGIN = "kubectl-nodefail"
DOWNLOAD = "https://github.com/kubectl-nodefail/kubectl-nodefail/releases/download"
COMPILED = (".so", ".pyd", ".dylib")
# Written by pip into each .dist-info and different on every machine or run.
UNSTABLE_METADATA = ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json")
# Never imported by the plugin, and unusable without aiohttp (left out of the zipapp).
UNUSED = ("kubernetes/aio",)
# The archives with a compiled JSON decoder: krew's platform -> (what names its wheels in
# compiled-wheels.txt, the platform tag pip downloads them for). darwin's are universal2.
FAST_PLATFORMS = {
    "linux-amd64": ("manylinux_2_17_x86_64", "manylinux_2_17_x86_64"),
    "linux-arm64": ("manylinux_2_17_aarch64", "manylinux_2_17_aarch64"),
    "darwin": ("universal2", "macosx_11_0_arm64"),
}
COMPILED_PACKAGE = "orjson"


def version() -> str:
    text = (REPO / "kubectl_nodefail" / "__init__.py").read_text()
    match = re.search(r'^__version__ = "([^"]+)"$', text, re.M)
    if not match:
        sys.exit("release: no __version__ in kubectl_nodefail/__init__.py")
    return match.group(1)


def archive_name(ver: str, platform: str = "") -> str:
    """The krew archive of a platform in FAST_PLATFORMS, or ("") the pure one for every other."""
    return f"{PLUGIN}-v{ver}{'-' + platform if platform else ''}-krew.tar.gz"


ARCHIVE_RE = re.compile(
    rf"{PLUGIN}-v[^/]+?(?:-(?P<platform>{'|'.join(FAST_PLATFORMS)}))?-krew\.tar\.gz$"
)


def source_date_epoch() -> int:
    """Every timestamp in the zipapp and the archive: the time of the last commit that changed
    anything but the manifest (committing the manifest must not change the archive it names)."""
    if os.environ.get("SOURCE_DATE_EPOCH"):
        return int(os.environ["SOURCE_DATE_EPOCH"])
    out = subprocess.run(
        ["git", "log", "-1", "--format=%ct", "--", ".", ":(exclude)krew-manifest.yaml"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.strip())


def dirty_files() -> list[str]:
    """Changed or untracked files, except the manifest this script writes."""
    out = subprocess.run(
        ["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True, check=True
    )
    return [
        line[3:] for line in out.stdout.splitlines() if line[3:].strip() != "krew-manifest.yaml"
    ]


def run(cmd: list[str], **kwargs: object) -> None:
    print("+", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, **kwargs)  # type: ignore[call-overload]


def python_dists(out: Path, epoch: int) -> Path:
    """The sdist and the wheel, with the pinned setuptools of this environment (no download)."""
    run(
        [sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel", "-o", str(out)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "SOURCE_DATE_EPOCH": str(epoch)},
    )
    wheels = sorted(out.glob("kubectl_nodefail-*.whl"))
    if len(wheels) != 1:
        sys.exit(f"release: expected one wheel in {out}, found {wheels}")
    return wheels[0]


def pip_install(site: Path, *args: str) -> list[str]:
    """pip installing into the folder `site` only: offline, no dependencies resolved, no .pyc."""
    return [
        *(sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"),
        *("--target", str(site), "--no-deps", "--no-compile", "--no-index", *args),
    ]


def dependency_wheels(cache: Path, site: Path) -> None:
    """Install the pinned dependencies into `site`: offline from `cache` when it has them,
    else download them into `cache` first (once)."""
    install = pip_install(site, "--only-binary=:all:", "--find-links", str(cache))
    install += ["-r", str(REQUIREMENTS)]
    if subprocess.run(install, capture_output=True, check=False).returncode == 0:
        return
    cache.mkdir(parents=True, exist_ok=True)
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--only-binary=:all:",
            "--dest",
            str(cache),
            "-r",
            str(REQUIREMENTS),
        ]
    )
    shutil.rmtree(site, ignore_errors=True)
    run(install)


def compiled_wheels(cache: Path) -> dict[str, list[Path]]:
    """Per platform of FAST_PLATFORMS, the wheels compiled-wheels.txt lists, from `cache`
    (downloaded into it first when missing), each checked against its sha256 there."""
    listed = [
        line.split()
        for line in COMPILED_WHEELS.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    out: dict[str, list[Path]] = {platform: [] for platform in FAST_PLATFORMS}
    for name, digest in listed:
        platform = next((p for p, (mark, _) in FAST_PLATFORMS.items() if mark in name), None)
        if platform is None:
            sys.exit(
                f"release: {name} in {COMPILED_WHEELS.name} is for no platform of FAST_PLATFORMS"
            )
        path = cache / name
        if not path.exists():
            package, ver, py = name.split("-")[:3]
            cache.mkdir(parents=True, exist_ok=True)
            run(
                [
                    *(sys.executable, "-m", "pip", "download", "--quiet"),
                    *("--disable-pip-version-check", "--no-deps", "--only-binary=:all:"),
                    *("--platform", FAST_PLATFORMS[platform][1], "--implementation", "cp"),
                    *("--python-version", f"{py[2]}.{py[3:]}", "--abi", py),
                    *("--dest", str(cache), f"{package}=={ver}"),
                ]
            )
        if not path.exists() or sha256(path) != digest:
            sys.exit(f"release: {path} is missing or is not the file {COMPILED_WHEELS.name} names")
        out[platform].append(path)
    return out


def add_compiled(site: Path, wheels: list[Path]) -> list[str]:
    """The compiled package's files from each wheel into `site` (each CPython's module beside
    the others: Python imports the one its suffix names), with the first wheel's metadata and
    licenses; returns the compiled modules added."""
    added = []
    for n, wheel in enumerate(wheels):
        with zipfile.ZipFile(wheel) as whl:
            for name in sorted(whl.namelist()):
                top = name.split("/", 1)[0]
                meta = top.endswith(".dist-info")
                if name.endswith("/") or (top != COMPILED_PACKAGE and not meta):
                    continue
                if meta and (n or name.rsplit("/", 1)[-1] in UNSTABLE_METADATA):
                    continue
                target = site / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(whl.read(name))
                if name.endswith(COMPILED):
                    added.append(name)
    return added


def strip_site(site: Path) -> list[str]:
    """Remove what a zipapp must not carry; return the compiled files removed.

    Compiled extensions cannot be imported from a zip and are built for one platform and one
    Python: without them, PyYAML and charset-normalizer use their pure-Python code."""
    removed = []
    for path in sorted(site.rglob("*")):
        if path.is_file() and (path.name.endswith(COMPILED) or ".so." in path.name):
            removed.append(str(path.relative_to(site)))
            path.unlink()
    for path in list(site.rglob("__pycache__")) + [site / "bin"] + [site / u for u in UNUSED]:
        shutil.rmtree(path, ignore_errors=True)
    for info in site.glob("*.dist-info"):
        for name in UNSTABLE_METADATA:
            (info / name).unlink(missing_ok=True)
    return removed


def zipapp(site: Path, target: Path, epoch: int) -> None:
    """The executable: shiv's bootstrap, which unpacks the zip once into ~/.shiv (SHIV_ROOT) so
    later runs import from files with cached bytecode."""
    env = {**os.environ, "SOURCE_DATE_EPOCH": str(epoch)}
    run(
        [
            sys.executable,
            "-m",
            "shiv",
            "--site-packages",
            str(site),
            "--entry-point",
            "kubectl_nodefail.cli.main:main",
            "--output-file",
            str(target),
            "--python",
            "/usr/bin/env python3",
            "--reproducible",
            "--compressed",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
    )
    replace_main(target, ZIPAPP_MAIN.read_bytes())


def replace_main(exe: Path, main: bytes) -> None:
    """Put `main` in place of shiv's __main__.py, which imports shiv's bootstrap at once: an
    old python3 would stop on its syntax with a traceback before any check of ours could run.
    Every other entry is copied as it is (same names, order, times and modes)."""
    data = exe.read_bytes()
    shebang = data[: data.index(b"\n") + 1]
    out = io.BytesIO()
    out.write(shebang)
    with zipfile.ZipFile(io.BytesIO(data[len(shebang) :])) as old:
        if "__main__.py" not in old.namelist():
            sys.exit(f"release: shiv wrote no __main__.py into {exe}")
        with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as new:
            for info in old.infolist():
                new.writestr(info, main if info.filename == "__main__.py" else old.read(info))
    exe.write_bytes(out.getvalue())


def krew_archive(exe: Path, target: Path, epoch: int) -> None:
    """A reproducible .tar.gz: sorted entries, root-owned, fixed mtimes, no gzip timestamp."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, src, mode in ((PLUGIN, exe, 0o755), ("LICENSE", REPO / "LICENSE", 0o644)):
            data = src.read_bytes()
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, epoch
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            tar.addfile(info, io.BytesIO(data))
    with open(target, "wb") as raw:  # noqa: SIM117 (one `with` per line: Python 3.9's syntax)
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
            gz.write(buf.getvalue())


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def manifest_text(current: str, ver: str, digests: dict[str, str]) -> str:
    """krew-manifest.yaml with this release's version, and each platform's download address
    and sha256 (`digests`: platform of FAST_PLATFORMS, or "" for the pure archive -> sha256). Each
    platform entry is found by the archive its uri names, and every archive is named once."""
    lines = re.sub(r"(?m)^(  version: ).*$", rf"\g<1>v{ver}", current, count=1).split("\n")
    named: list[str] = []
    for i, line in enumerate(lines):
        found = ARCHIVE_RE.search(line) if line.startswith("    uri: ") else None
        if not found:
            continue
        platform = found.group("platform") or ""
        named.append(platform)
        lines[i] = f"    uri: {DOWNLOAD}/v{ver}/{archive_name(ver, platform)}"
        if not lines[i + 1].startswith("    sha256: "):
            sys.exit(f"release: {MANIFEST.name}: no sha256 line after the uri of {platform!r}")
        lines[i + 1] = f'    sha256: "{digests[platform]}"'
    if sorted(named) != sorted(digests):
        sys.exit(f"release: {MANIFEST.name} names the archives {named}, the build {list(digests)}")
    return "\n".join(lines)


def build(out: Path, cache: Path) -> dict[str, Path]:
    ver, epoch = version(), source_date_epoch()
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*"):
        if old.is_file():
            old.unlink()
    wheel = python_dists(out, epoch)
    with tempfile.TemporaryDirectory(prefix="nodefail-release-") as tmp:
        site = Path(tmp) / "site"
        dependency_wheels(cache, site)
        shutil.rmtree(site / "bin", ignore_errors=True)  # console scripts: not needed
        run(pip_install(site, str(wheel)))
        removed = strip_site(site)
        print(f"release: compiled files left out: {', '.join(removed) or 'none'}", file=sys.stderr)
        exe = out / PLUGIN
        zipapp(site, exe, epoch)
        archive = out / archive_name(ver)
        krew_archive(exe, archive, epoch)
        digests = {"": sha256(archive)}
        for platform, wheels in compiled_wheels(cache).items():
            fast = Path(tmp) / platform
            shutil.copytree(site, fast / "site")
            added = add_compiled(fast / "site", wheels)
            print(f"release: {platform}: {', '.join(added)}", file=sys.stderr)
            zipapp(fast / "site", fast / PLUGIN, epoch)
            krew_archive(fast / PLUGIN, out / archive_name(ver, platform), epoch)
            digests[platform] = sha256(out / archive_name(ver, platform))
    manifest = manifest_text(MANIFEST.read_text(), ver, digests)
    (out / "krew-manifest.yaml").write_text(manifest)
    sums = [f"{sha256(p)}  {p.name}" for p in sorted(out.iterdir()) if p.is_file()]
    (out / "SHA256SUMS").write_text("\n".join(sums) + "\n")
    return {"archive": archive, "manifest": out / "krew-manifest.yaml", "wheel": wheel, "exe": exe}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "dist")
    parser.add_argument(
        "--wheel-cache",
        type=Path,
        default=Path(os.environ.get("NODEFAIL_CACHE", Path.home() / ".cache/kubectl-nodefail"))
        / "wheels",
        help="downloaded dependency wheels, reused offline",
    )
    parser.add_argument("--allow-dirty", action="store_true", help="build uncommitted changes")
    parser.add_argument(
        "--keep-manifest",
        action="store_true",
        help="write the manifest only into --out, not into the repository (tests)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="build into a temporary folder and fail if krew-manifest.yaml disagrees",
    )
    args = parser.parse_args()
    dirty = dirty_files()
    if dirty and not args.allow_dirty:
        print(
            f"release: uncommitted changes ({', '.join(dirty[:5])}): commit them, or pass "
            "--allow-dirty (the archive's timestamps come from the last commit)",
            file=sys.stderr,
        )
        return 2
    if args.check:
        with tempfile.TemporaryDirectory(prefix="nodefail-check-") as tmp:
            built = build(Path(tmp), args.wheel_cache)
            if built["manifest"].read_text() != MANIFEST.read_text():
                print(
                    "release: krew-manifest.yaml disagrees with a build of this checkout: "
                    "run make release and commit it",
                    file=sys.stderr,
                )
                return 1
        print("release: krew-manifest.yaml matches a build of this checkout", file=sys.stderr)
        return 0
    built = build(args.out, args.wheel_cache)
    if not args.keep_manifest:
        MANIFEST.write_text(built["manifest"].read_text())
    print((args.out / "SHA256SUMS").read_text(), end="")
    print(f"release: wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
