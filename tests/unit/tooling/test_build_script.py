"""hack/build-control-plane.sh is safe to run concurrently (two checkouts, a suite running):
with the cache warm, concurrent runs all succeed and print the same folder of links, and a
folder a running suite uses is never removed or replaced.

The cache is a throwaway one holding stand-in binaries under the names the script derives from
its versions and go.sum files, and `go` is a stand-in that fails: any build attempt fails the
test. So this runs in a second and proves the warm path builds nothing.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "hack" / "build-control-plane.sh"
WRAPPERS = ROOT / "hack" / "controlplane"


def _required(go_mod: Path, module: str) -> str:
    """The version go.mod requires of module (the script reads the wrapper modules the same way)."""
    found = re.search(
        rf"^\s*(?:require )?{re.escape(module)} (v[0-9.]+)$", go_mod.read_text(), re.M
    )
    assert found, f"{go_mod} requires no {module}"
    return found.group(1)


def _sum(go_sum: Path) -> str:
    return hashlib.sha256(go_sum.read_bytes()).hexdigest()[:12]


def cache_folders() -> dict[str, list[str]]:
    """The cache folders a finished build of the default minor leaves, and their binaries."""
    text = SCRIPT.read_text()
    versions = dict(re.findall(r"^(\w+_VERSION|DEFAULT_K8S_MINOR)=(\S+)", text, flags=re.M))
    k8s_module = WRAPPERS / f"kubernetes-v{versions['DEFAULT_K8S_MINOR']}"
    etcd_module = WRAPPERS / "etcd-v3.6"
    k8s = _required(k8s_module / "go.mod", "k8s.io/kubernetes")
    if "k8s.io/legacy-cloud-providers" in (k8s_module / "go.mod").read_text():
        k8s += "-providerless"
    etcd = _required(etcd_module / "go.mod", "go.etcd.io/etcd/server/v3")
    k8s_sum, etcd_sum = _sum(k8s_module / "go.sum"), _sum(etcd_module / "go.sum")
    return {
        f"kubernetes-{k8s}-{k8s_sum}": [
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
        ],
        f"etcd-{etcd}-{etcd_sum}": ["etcd", "etcdctl", "etcdutl"],
        f"kwok-{versions['KWOK_VERSION']}": ["kwok", "kwokctl"],
        f"kubectl-{k8s}-{k8s_sum}": ["kubectl"],
        f"krew-{versions['KREW_VERSION']}": ["krew"],
    }


def _executable(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def warm_cache(tmp: Path) -> dict[str, str]:
    """A cache as a finished build leaves it; returns the environment that points at it."""
    bindir = tmp / "cache" / "bin"
    for folder, binaries in cache_folders().items():
        dest = bindir / folder
        dest.mkdir(parents=True)
        for binary in binaries:
            _executable(dest / binary, f"echo {binary} {folder}")
    fake_bin = tmp / "fakebin"
    fake_bin.mkdir()
    _executable(fake_bin / "go", "echo 'go must not run: the cache is warm' >&2; exit 1")
    return {
        **os.environ,
        "NODEFAIL_CACHE": str(tmp / "cache"),
        "PATH": f"{fake_bin}{os.pathsep}{os.environ['PATH']}",
    }


def run_script(env: dict[str, str]) -> tuple[int, str, str]:
    proc = subprocess.run(
        ["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    lines = proc.stdout.strip().splitlines()
    return proc.returncode, lines[-1] if lines else "", proc.stderr


def test_concurrent_runs_all_succeed_and_print_the_same_folder(tmp_path: Path) -> None:
    env = warm_cache(tmp_path)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: run_script(env), range(4)))
    assert all(code == 0 for code, _, _ in results), [err for _, _, err in results]
    folders = {folder for _, folder, _ in results}
    assert len(folders) == 1, folders
    folder = Path(folders.pop())
    assert (folder / "kube-apiserver").is_symlink() and os.access(folder / "kubectl", os.X_OK)
    leftovers = [p.name for p in folder.parent.iterdir() if p.name.startswith(".links")]
    assert leftovers == [], leftovers


def test_a_folder_in_use_is_never_removed_or_replaced(tmp_path: Path) -> None:
    env = warm_cache(tmp_path)
    code, first, err = run_script(env)
    assert code == 0, err
    in_use = Path(first)
    inode = in_use.stat().st_ino
    held = os.open(in_use, os.O_RDONLY)  # as a running suite's working set would
    try:
        # Later calls, some concurrent, and one after a component was rebuilt (new content).
        with ThreadPoolExecutor(3) as pool:
            again = list(pool.map(lambda _: run_script(env), range(3)))
        assert all(code == 0 and folder == first for code, folder, _ in again)
        kubectl_dir = Path(os.readlink(in_use / "kubectl")).parent
        _executable(kubectl_dir / "kubectl-extra", "true")  # the component changed
        code, rebuilt, err = run_script(env)
        assert code == 0, err
        assert rebuilt != first  # a new folder for the new content ...
        assert in_use.stat().st_ino == inode  # ... and the one in use untouched
        assert sorted(p.name for p in in_use.iterdir()) == sorted(
            b for binaries in cache_folders().values() for b in binaries
        )
        assert subprocess.run([in_use / "kube-apiserver"], check=True, capture_output=True)
    finally:
        os.close(held)
