"""Draws docs/layout.svg from the code: the package's floors (hack/layers.py), top floor first,
each wing's modules in a band with their line counts, and per floor the floors it imports from
(how many imports). Plain SVG, no Graphviz needed: `python hack/layout_svg.py > docs/layout.svg`
(`make layout`); a unit test checks the committed drawing is the one the code gives.
"""

from __future__ import annotations

import sys
from collections import Counter
from html import escape
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import layers

ROOT = Path(__file__).resolve().parent.parent
BOX_W, BOX_H, GAP, PER_ROW, LEFT, RIGHT = 150, 30, 8, 6, 110, 250
NAMES = ["common (+ data)", *layers.FLOORS[1:], "__main__"]


def svg(root: Path = ROOT) -> str:
    graph = layers.imports(root)
    files = layers.modules(root)
    by_floor: dict[int, list[str]] = {}
    for module in graph:
        by_floor.setdefault(layers.floor(module), []).append(module)
    uses: dict[int, Counter[int]] = {}
    for module, targets in graph.items():
        here = layers.floor(module)
        for target in targets:
            if target in graph and target != layers.PACKAGE and layers.floor(target) != here:
                uses.setdefault(here, Counter())[layers.floor(target)] += 1
    width = LEFT + PER_ROW * (BOX_W + GAP) + RIGHT
    out, y = [], 10
    for level in sorted(by_floor, reverse=True):
        mods = sorted(by_floor[level])
        rows = (len(mods) + PER_ROW - 1) // PER_ROW
        height = rows * (BOX_H + GAP) + GAP + 16
        out.append(
            f'<rect x="4" y="{y}" width="{width - 8}" height="{height}" fill="#f4f6fa" '
            'stroke="#9aa5b8" rx="6"/>'
        )
        out.append(
            f'<text x="12" y="{y + 20}" font-size="14" font-weight="bold">'
            f"{escape(NAMES[level])}</text>"
        )
        for i, module in enumerate(mods):
            row, col = divmod(i, PER_ROW)
            bx, by = LEFT + col * (BOX_W + GAP), y + GAP + row * (BOX_H + GAP)
            lines = len(files[module].read_text().splitlines())
            label = module.removeprefix(layers.PACKAGE + ".").split(".", 1)[-1] or "(package)"
            if files[module].name == "__init__.py":
                label += "/"
            colour = "#fde2e2" if lines > 600 else "#ffffff"
            out.append(
                f'<rect x="{bx}" y="{by}" width="{BOX_W}" height="{BOX_H}" fill="{colour}" '
                'stroke="#5b6b85" rx="3"/>'
            )
            out.append(
                f'<text x="{bx + 6}" y="{by + 19}" font-size="11">{escape(label)} '
                f'<tspan fill="#6b7280">{lines}</tspan></text>'
            )
        below = uses.get(level, Counter())
        said = ", ".join(f"{NAMES[f]} {n}" for f, n in sorted(below.items(), reverse=True))
        out.append(
            f'<text x="{width - RIGHT + 4}" y="{y + 20}" font-size="11" fill="#374151">'
            f"imports from: {escape(said) or '(nothing of the package)'}</text>"
        )
        y += height + 10
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y}" '
        f'font-family="sans-serif" viewBox="0 0 {width} {y}">'
    )
    return "\n".join([head, *out, "</svg>"]) + "\n"


if __name__ == "__main__":
    sys.stdout.write(svg())
