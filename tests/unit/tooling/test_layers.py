"""The layer contract (hack/layers.py, run by `make lint`): the package keeps it, and the check
catches each kind of breach it exists for; the committed drawing of the floors is the code's."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "hack"))
import layers  # noqa: E402
import layout_svg  # noqa: E402


def test_the_package_keeps_its_floors() -> None:
    assert layers.breaches(layers.imports(ROOT)) == []


def test_every_module_is_in_a_wing_and_none_is_over_600_lines() -> None:
    for module, path in layers.modules(ROOT).items():
        layers.floor(module)  # raises for a module outside the wings
        assert len(path.read_text().splitlines()) <= 600, module


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """A copy of the package to break on purpose."""
    shutil.copytree(ROOT / layers.PACKAGE, tmp_path / layers.PACKAGE)
    return tmp_path


def _add(root: Path, module: str, line: str) -> None:
    path = root / (module.replace(".", "/") + ".py")
    path.write_text(path.read_text() + f"\n\ndef _breach() -> None:\n    {line}\n")


def test_an_import_from_a_floor_above_is_caught(package: Path) -> None:
    _add(package, "kubectl_nodefail.analysis.eviction", "from kubectl_nodefail.render import fit")
    # render/fit does not exist: the check reads imports, it does not run them
    _add(package, "kubectl_nodefail.snapshot.model", "from kubectl_nodefail.cluster import kube")
    found = layers.breaches(layers.imports(package))
    assert any("snapshot.model imports kubectl_nodefail.cluster.kube" in f for f in found), found
    assert any(f.startswith("kubectl_nodefail.analysis.eviction imports") for f in found), found


def test_io_in_the_analysis_and_a_circle_are_caught(package: Path) -> None:
    _add(package, "kubectl_nodefail.analysis.text", "import socket")
    _add(package, "kubectl_nodefail.analysis.facts", "from kubectl_nodefail.analysis import text")
    _add(package, "kubectl_nodefail.analysis.text", "from kubectl_nodefail.analysis import facts")
    found = layers.breaches(layers.imports(package))
    assert "kubectl_nodefail.analysis.text imports socket: the analysis does no I/O" in found
    assert any(f.startswith("import circle:") and "analysis.facts" in f for f in found), found


def test_a_module_outside_the_wings_is_caught(package: Path) -> None:
    (package / layers.PACKAGE / "stray.py").write_text("X = 1\n")
    found = layers.breaches(layers.imports(package))
    assert any("kubectl_nodefail.stray: not in a wing" in f for f in found), found


def test_the_committed_drawing_is_the_codes() -> None:
    committed = (ROOT / "docs" / "layout.svg").read_text()
    assert committed == layout_svg.svg(ROOT), "run `make layout` and commit docs/layout.svg"


def test_the_layout_page_lists_every_module() -> None:
    """docs/layout.md is the tree as it is: every module of the package has its line."""
    page = (ROOT / "docs" / "layout.md").read_text()
    for path in layers.modules(ROOT).values():
        rel = path.relative_to(ROOT / layers.PACKAGE).as_posix()
        assert f"\n  {rel} " in page, f"docs/layout.md does not list {rel}"
