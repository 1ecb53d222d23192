"""The release as `make release` builds it (once per test session), and bare Pythons to run it.

A "bare" Python is an empty virtual environment (no pip, no packages) of the oldest Python 3.9+
found: its interpreter, run with -I, sees nothing but the standard library.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.controlplane import REPO

SUPPORTED = ("3.9", "3.10", "3.11", "3.12", "3.13", "3.14")
# Too old for the plugin: the zipapp must still say so in one line (release/zipapp_main.py).
TOO_OLD = ("2.7", "3.6", "3.7", "3.8")


# What krew calls this machine's arch (runtime.GOARCH), by Python's platform.machine().
GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


@dataclass(frozen=True)
class Release:
    out: Path
    archive: Path  # the pure one, for every platform without its own
    manifest: Path
    wheel: Path
    sdist: Path
    zipapp: Path  # the pure zipapp (the one in `archive`)
    archives: dict[str, Path]  # per platform ("linux-amd64", "darwin"; "" the pure one)

    def manifest_data(self) -> dict[str, Any]:
        return dict(yaml.safe_load(self.manifest.read_text()))

    def for_this_machine(self) -> tuple[str, Path]:
        """The platform and archive krew installs here (the pure one where none is built)."""
        os_ = platform.system().lower()
        arch = GOARCH.get(platform.machine().lower(), platform.machine().lower())
        for key in (f"{os_}-{arch}", os_ if arch in ("amd64", "arm64") else ""):
            if key in self.archives:
                return key, self.archives[key]
        return "", self.archive


@functools.lru_cache(maxsize=1)
def built_release() -> Release:
    """Run release/build.py into a temporary folder; the checkout (dist/, krew-manifest.yaml)
    is left alone. The folder goes when the test process ends (every run left one behind,
    7 MB in /tmp each, until 2026-12-02)."""
    out = Path(tempfile.mkdtemp(prefix="nodefail-release-"))
    atexit.register(shutil.rmtree, out, ignore_errors=True)
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "release" / "build.py"),
            "--allow-dirty",
            "--keep-manifest",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"release/build.py failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    archives = {
        (found.group(1) or ""): path
        for path in out.glob("kubectl-nodefail-v*-krew.tar.gz")
        for found in [re.search(r"-v[^-]+(?:-(.+))?-krew\.tar\.gz$", path.name)]
        if found
    }
    wheels = list(out.glob("kubectl_nodefail-*.whl"))
    sdists = list(out.glob("kubectl_nodefail-*.tar.gz")) + list(
        out.glob("kubectl-nodefail-[0-9]*.tar.gz")
    )
    assert len(wheels) == len(sdists) == 1 and "" in archives, sorted(p.name for p in out.iterdir())
    return Release(
        out,
        archives[""],
        out / "krew-manifest.yaml",
        wheels[0],
        sdists[0],
        out / "kubectl-nodefail",
        archives,
    )


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _interpreters(versions: tuple[str, ...]) -> dict[str, Path]:
    """Each of `versions` found on this machine (pyenv's, else on PATH) that runs and is the
    version its name says."""
    found: dict[str, Path] = {}
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for ver in versions:
        installed = sorted(pyenv.glob(f"{ver}.*/bin/python{ver}"))
        exe = str(installed[-1]) if installed else shutil.which(f"python{ver}")
        if exe:
            probe = subprocess.run(
                [exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                capture_output=True,
                text=True,
                check=False,
            )
            if probe.returncode == 0 and probe.stdout.strip() == ver:
                found[ver] = Path(exe)
    return found


def _by_version(found: dict[str, Path]) -> list[Path]:
    return [found[v] for v in sorted(found, key=lambda v: tuple(map(int, v.split("."))))]


def pythons() -> list[Path]:
    """Every supported CPython on this machine, oldest first (at least the one running the
    tests)."""
    found = _interpreters(SUPPORTED)
    current = f"{sys.version_info[0]}.{sys.version_info[1]}"
    found.setdefault(current, Path(sys.executable))
    return _by_version(found)


def old_pythons() -> list[Path]:
    """Every CPython on this machine too old for the plugin (none on a machine without them)."""
    return _by_version(_interpreters(TOO_OLD))


def bare_venv(python: Path, where: Path) -> Path:
    """An empty virtual environment (no pip): returns its bin folder (python3 inside)."""
    subprocess.run([str(python), "-m", "venv", "--without-pip", str(where)], check=True)
    return where / "bin"
