"""`make release` (release/build.py): the krew archive, its manifest and the wheel agree; the
zipapp inside runs on a bare python3 with every dependency's pure-Python code; the wheel
installs into an empty virtual environment. Needs no control plane."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from kubectl_nodefail import __version__
from tests.e2e.controlplane import REPO
from tests.e2e.release import SUPPORTED, bare_venv, built_release, old_pythons, pythons, sha256

pytestmark = (
    pytest.mark.e2e
)  # one parallel worker with test_release/test_krew_manifest: tests/conftest.py

# Run inside the unpacked zipapp by a bare python -I: imports everything the plugin uses,
# exercises the two packages whose compiled part was stripped, and lists every compiled
# module loaded from outside the interpreter's own standard library.
IMPORT_CHECK = """
import json, sys, sysconfig
sys.path.insert(0, sys.argv[1])
import kubectl_nodefail.remediate.actions, kubectl_nodefail.cli.main
import kubectl_nodefail.cluster.gather, kubectl_nodefail.cluster.kube
import kubectl_nodefail.remediate.plan, kubectl_nodefail.render.render
import kubectl_nodefail.analysis.diagnose, kubectl_nodefail.snapshot.model
import kubernetes.client, kubernetes.config, kubernetes.client.rest
import certifi, charset_normalizer, click, dateutil.parser, oauthlib.oauth2, requests
import requests_oauthlib, tabulate, urllib3, websocket, yaml
assert yaml.safe_load("a: [1, 2]") == {"a": [1, 2]}
assert str(charset_normalizer.from_bytes("déjà vu, naïve".encode()).best()) == "déjà vu, naïve"
stdlib = tuple(sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib"))
compiled = sorted(
    f"{name}: {m.__file__}"
    for name, m in list(sys.modules.items())
    if str(getattr(m, "__file__", "") or "").endswith((".so", ".pyd", ".dylib"))
    and not str(m.__file__).startswith(stdlib)
)
print(json.dumps({"libyaml": yaml.__with_libyaml__, "compiled": compiled,
                  "kubernetes": kubernetes.__version__, "modules": len(sys.modules)}))
"""


def _zipapp_of(archive: Path) -> bytes:
    with tarfile.open(archive) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert set(members) == {"kubectl-nodefail", "LICENSE"}
        assert members["kubectl-nodefail"].mode == 0o755
        exe = tar.extractfile("kubectl-nodefail")
        assert exe is not None
        return exe.read()


def test_archive_manifest_and_wheel_agree() -> None:
    rel = built_release()
    manifest = rel.manifest_data()
    assert manifest["spec"]["version"] == f"v{__version__}"
    by_name = {p["uri"].rsplit("/", 1)[1]: p for p in manifest["spec"]["platforms"]}
    assert sorted(by_name) == sorted(a.name for a in rel.archives.values())
    for archive in rel.archives.values():
        assert by_name[archive.name]["sha256"] == sha256(archive)
        assert by_name[archive.name]["uri"].endswith(f"/v{__version__}/{archive.name}")
    assert set(rel.archives) == {"", "linux-amd64", "linux-arm64", "darwin"}
    assert rel.wheel.name == f"kubectl_nodefail-{__version__}-py3-none-any.whl"
    assert __version__ in rel.sdist.name
    assert _zipapp_of(rel.archive) == rel.zipapp.read_bytes()
    # the manifest the script wrote into the repository is the one it put beside the archive,
    # apart from the placeholder fields a development checkout may carry
    committed = (REPO / "krew-manifest.yaml").read_text().splitlines()
    written = rel.manifest.read_text().splitlines()
    assert len(committed) == len(written)
    differ = [a for a, b in zip(committed, written, strict=True) if a != b]
    assert [line for line in differ if "sha256" not in line] == []


def test_zipapp_carries_no_compiled_code() -> None:
    rel = built_release()
    assert rel.zipapp.read_bytes().startswith(b"#!/usr/bin/env python3\n")
    with zipfile.ZipFile(rel.zipapp) as zf:
        names = zf.namelist()
    assert any(n.endswith("kubectl_nodefail/cli/main.py") for n in names)
    assert any(n.endswith("kubernetes/client/api_client.py") for n in names)
    assert any(n.endswith("yaml/constructor.py") for n in names)
    compiled = [n for n in names if n.endswith((".so", ".pyd", ".dylib")) or ".so." in n]
    assert compiled == []


# The compiled module each archive with a decoder carries, per CPython the plugin supports.
SUFFIX = {
    "linux-amd64": "x86_64-linux-gnu.so",
    "linux-arm64": "aarch64-linux-gnu.so",
    "darwin": "darwin.so",
}


@pytest.mark.parametrize("platform", sorted(SUFFIX))
def test_a_platforms_zipapp_is_the_pure_one_and_orjson_for_each_cpython(
    platform: str, tmp_path: Path
) -> None:
    rel = built_release()
    exe = tmp_path / "app"
    exe.write_bytes(_zipapp_of(rel.archives[platform]))
    with zipfile.ZipFile(rel.zipapp) as pure, zipfile.ZipFile(exe) as fast:
        pure_names, fast_names = set(pure.namelist()), set(fast.namelist())
        extra = sorted(fast_names - pure_names)
        assert pure_names <= fast_names
        same = [n for n in pure_names if n != "build_id" and pure.read(n) != fast.read(n)]
    # the bootstrap's build id names the content, so it differs; nothing else does
    assert all(n.endswith((".json", "build_id")) for n in same), same
    compiled = sorted(n.rsplit("/", 1)[1] for n in extra if n.endswith(".so"))
    cpythons = [f"3{minor}" for minor in range(9, 15)]
    assert compiled == sorted(f"orjson.cpython-{v}-{SUFFIX[platform]}" for v in cpythons)
    others = [n.split("site-packages/", 1)[1] for n in extra if not n.endswith(".so")]
    assert all(n.startswith(("orjson/", "orjson-")) for n in others), others
    assert any(n.endswith("licenses/LICENSE-MIT") for n in others)


def test_zipapp_and_wheel_ship_the_rbac_roles(tmp_path: Path) -> None:
    """The permission hints name `kubectl nodefail rbac`: the roles it prints are package data
    of the wheel and the zipapp, and the zipapp on a bare Python prints deploy/rbac's files."""
    rel = built_release()
    wanted = {f"kubectl_nodefail/roles/{role}.yaml" for role in ("diagnose", "remediate")}
    with zipfile.ZipFile(rel.zipapp) as zf:
        in_zipapp = {n.split("site-packages/", 1)[-1] for n in zf.namelist()}
    with zipfile.ZipFile(rel.wheel) as zf:
        in_wheel = set(zf.namelist())
    assert wanted <= in_zipapp and wanted <= in_wheel
    py = str(bare_venv(pythons()[0], tmp_path / "venv") / "python3")  # the oldest supported
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SHIV_ROOT": str(tmp_path / "shiv")}
    proc = subprocess.run(
        [py, "-I", str(rel.zipapp), "rbac", "diagnose"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (REPO / "deploy" / "rbac" / "diagnose.yaml").read_text()


@pytest.mark.parametrize("python", pythons(), ids=lambda p: p.name)
def test_zipapp_runs_on_a_bare_python(python: Path, tmp_path: Path) -> None:
    rel = built_release()
    bindir = bare_venv(python, tmp_path / "venv")
    py = str(bindir / "python3")
    empty = subprocess.run(
        [py, "-I", "-c", "import yaml"], capture_output=True, text=True, check=False
    )
    assert empty.returncode != 0, "the bare Python is not bare: it imports yaml"
    env = {
        "PATH": f"{bindir}{os.pathsep}/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "SHIV_ROOT": str(tmp_path / "shiv"),
    }
    run = {"capture_output": True, "text": True, "env": env, "check": False}
    # the shebang finds the bare python3 first on PATH
    proc = subprocess.run([str(rel.zipapp), "version"], **run)  # type: ignore[call-overload]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"kubectl-nodefail {__version__}")
    proc = subprocess.run([py, "-I", str(rel.zipapp), "diagnose", "--demo", "-o", "json"], **run)  # type: ignore[call-overload]
    assert proc.returncode == 3, proc.stderr
    assert json.loads(proc.stdout)["summary"]["nodesNotReady"] == 1
    # the kubeconfig loader and the HTTP path, against a port nobody listens on: exit 11
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: abc}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    proc = subprocess.run(
        [py, "-I", str(rel.zipapp), "diagnose", "--kubeconfig", str(kubeconfig)], **run
    )  # type: ignore[call-overload]
    assert proc.returncode == 11, proc.stderr
    assert proc.stderr.startswith("error: The connection to the server 127.0.0.1:9 was refused")
    # every module the plugin uses imports from the unpacked zipapp, none of them compiled
    sites = list((tmp_path / "shiv").glob("kubectl-nodefail_*/site-packages"))
    assert len(sites) == 1
    proc = subprocess.run([py, "-I", "-c", IMPORT_CHECK, str(sites[0])], **run)  # type: ignore[call-overload]
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["compiled"] == [] and report["libyaml"] is False
    assert report["kubernetes"].startswith("35.")  # the newest client that installs on 3.9
    # the same answer as the development install (its newer click, tabulate and client)
    proc = subprocess.run([py, "-I", str(rel.zipapp), "diagnose", "--demo"], **run)  # type: ignore[call-overload]
    dev = subprocess.run(
        [str(Path(sys.executable).parent / "kubectl-nodefail"), "diagnose", "--demo"], **run
    )  # type: ignore[call-overload]

    def demo(text: str) -> str:  # the demo file's path differs: inside ~/.shiv, in the checkout
        return re.sub(r"[^\s(]*/statefulset-node-down\.json", "DEMO", text)

    assert (proc.returncode, demo(proc.stdout)) == (dev.returncode, demo(dev.stdout))
    assert demo(proc.stdout).startswith(
        "1 of 6 nodes not Ready, 11 stuck pods (1 Pending: they may run only on a failed node) "
        "(DEMO, "
    )


def test_the_oldest_supported_python_is_tested() -> None:
    """3.9 (macOS's own python3) must be among the Pythons the zipapp is run on: this machine
    kind carries it (pyenv), so its absence is a broken machine, not a reason to test less."""
    found = sorted(p.name for p in pythons())
    assert f"python{SUPPORTED[0]}" in found, f"no Python {SUPPORTED[0]} here, only {found}"


@pytest.mark.parametrize("python", old_pythons(), ids=lambda p: p.name)
def test_an_old_python_gets_one_line_and_exit_10(python: Path, tmp_path: Path) -> None:
    """Run by an old python3 first on PATH (the shebang) and by name: one line naming the
    need, exit 10, before shiv's bootstrap or any dependency is imported (nothing unpacked)."""
    rel = built_release()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python3").symlink_to(python)
    env = {
        "PATH": f"{bindir}{os.pathsep}/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "SHIV_ROOT": str(tmp_path / "shiv"),
    }
    for argv in ([str(rel.zipapp), "diagnose", "--demo"], [str(python), str(rel.zipapp)]):
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        assert proc.returncode == 10, proc.stderr
        assert proc.stdout == ""
        lines = proc.stderr.splitlines()
        assert len(lines) == 1, proc.stderr
        assert lines[0].startswith("error: kubectl-nodefail needs Python 3.9 or newer; ")
        assert "Traceback" not in proc.stderr
    assert not (tmp_path / "shiv").exists()


@pytest.mark.parametrize(
    "python", sorted({pythons()[0], Path(sys.executable)}), ids=lambda p: p.name
)
def test_wheel_installs_into_an_empty_venv(python: Path, tmp_path: Path) -> None:
    """pip install of the released wheel into a fresh venv of the oldest supported Python and
    of this one: offline from a wheel cache (filled from the package index once, on the first
    run), then the console script runs."""
    rel = built_release()
    venv = tmp_path / "venv"
    subprocess.run([str(python), "-m", "venv", str(venv)], check=True)
    cache = Path(os.environ.get("NODEFAIL_CACHE", Path.home() / ".cache/kubectl-nodefail"))
    cache = cache / "wheels-pip"
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
    offline = [*pip, "install", "--no-index", "--find-links", str(cache), str(rel.wheel)]
    if subprocess.run(offline, capture_output=True, check=False).returncode != 0:
        subprocess.run([*pip, "download", "--dest", str(cache), str(rel.wheel)], check=True)
        subprocess.run(offline, check=True)
    proc = subprocess.run(
        [str(venv / "bin" / "kubectl-nodefail"), "version"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"kubectl-nodefail {__version__}")


@pytest.mark.parametrize("python", pythons(), ids=lambda p: p.name)
def test_this_machines_zipapp_decodes_with_orjson_and_answers_the_same(
    python: Path, tmp_path: Path
) -> None:
    """The archive krew installs here, on a bare Python: orjson loads (its module for this
    CPython), `version` says so, and its answers are the pure zipapp's, byte for byte."""
    rel = built_release()
    platform, archive = rel.for_this_machine()
    assert platform, "no archive with a compiled decoder for this machine"
    fast = tmp_path / "fast" / "kubectl-nodefail"  # shiv names its folder after the file
    fast.parent.mkdir()
    fast.write_bytes(_zipapp_of(archive))
    fast.chmod(0o755)
    bindir = bare_venv(python, tmp_path / "venv")
    py = str(bindir / "python3")
    env = {"PATH": f"{bindir}{os.pathsep}/usr/bin:/bin", "HOME": str(tmp_path / "home")}
    outputs = {}
    for name, app in (("fast", fast), ("pure", rel.zipapp)):
        run = {
            "capture_output": True,
            "text": True,
            "env": {**env, "SHIV_ROOT": str(tmp_path / f"shiv-{name}")},
            "check": False,
        }
        version = subprocess.run([py, "-I", str(app), "version", "--client", "-o", "json"], **run)  # type: ignore[call-overload]
        assert version.returncode == 0, version.stderr
        outputs[name] = [json.loads(version.stdout)["jsonDecoder"]]
        for args in (["diagnose", "--demo", "-o", "json"], ["diagnose", "--demo", "-o", "wide"]):
            proc = subprocess.run([py, "-I", str(app), *args], **run)  # type: ignore[call-overload]
            # the demo file's path is inside each zipapp's own unpacked folder
            text = re.sub(r"[^\s(\"]*/statefulset-node-down\.json", "DEMO", proc.stdout)
            outputs[name].append((proc.returncode, text))
    assert outputs["fast"][0] == "orjson 3.11.5" and outputs["pure"][0] == "json (standard library)"
    assert outputs["fast"][1:] == outputs["pure"][1:]
    sites = list((tmp_path / "shiv-fast").glob("kubectl-nodefail_*/site-packages"))
    assert len(sites) == 1
    where = subprocess.run(
        [
            py,
            "-I",
            "-c",
            "import sys; sys.path.insert(0, sys.argv[1]); import orjson.orjson as m; "
            "print(m.__file__)",
            str(sites[0]),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert where.returncode == 0, where.stderr
    tag = subprocess.run(
        [py, "-I", "-c", "import sys; print('%d%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert where.stdout.startswith(str(sites[0])) and f".cpython-{tag}-" in where.stdout


def test_release_is_reproducible(tmp_path: Path) -> None:
    """A second build of the same checkout gives a byte-identical zipapp and archive: the
    manifest's sha256 and a rebuild can never disagree."""
    rel = built_release()
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "release" / "build.py"),
            "--allow-dirty",
            "--keep-manifest",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    for archive in rel.archives.values():
        assert sha256(tmp_path / archive.name) == sha256(archive)
    assert (tmp_path / "krew-manifest.yaml").read_text() == rel.manifest.read_text()
