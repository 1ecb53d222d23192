"""The layer contract of kubectl_nodefail, checked from the code (`make lint` runs it).

Each wing is a package of one job, and a wing imports only from its own floor and those below:

    cli > watch > render > remediate > cluster > analysis > snapshot > term > common

(`__main__` is above everything; `examples` and `roles` are data, with the leaves.) Every import
counts, at module level or inside a function. On top of the floors: no import circle between
modules, and the analysis reaches no network, process or file-system module (it is pure: a
snapshot and a time in, findings out).

    python hack/layers.py            # exit 1 and one line per breach
    python hack/layers.py --dot      # the module graph in Graphviz dot (hack/layout_svg.py)
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

PACKAGE = "kubectl_nodefail"
FLOORS = (
    "common",
    "term",
    "snapshot",
    "analysis",
    "cluster",
    "remediate",
    "render",
    "watch",
    "cli",
)
DATA = ("examples", "roles")  # data packages: on the ground floor
# what the pure analysis never imports (the standard library's I/O and the API client)
IMPURE = ("socket", "ssl", "http", "urllib", "subprocess", "requests", "kubernetes", "shutil")

Graph = Mapping[str, Iterable[str]]


def modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package under `root`."""
    out = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(root: Path) -> dict[str, set[str]]:
    """Module -> what it imports (modules of the package by their dotted names, other top-level
    packages by their first name), at any depth of its code."""
    known = modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        found: set[str] = set()
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    found.add(full if full in known else base)
        graph[name] = {m if m.startswith(PACKAGE) else m.split(".")[0] for m in found if m != name}
    return graph


def floor(module: str) -> int:
    """The floor of a module of the package (-1: the package itself, above all: __main__)."""
    parts = module.split(".")
    if len(parts) == 1:
        return 0  # kubectl_nodefail/__init__.py: the version, nothing else
    wing = parts[1]
    if wing == "__main__":
        return len(FLOORS)
    if wing in DATA:
        return 0
    if wing not in FLOORS:
        raise ValueError(f"{module}: not in a wing (one of {', '.join(FLOORS)})")
    return FLOORS.index(wing)


def breaches(graph: Graph) -> list[str]:
    """Every import that breaks the contract, one line each."""
    out = []
    for module, targets in sorted(graph.items()):
        try:
            here = floor(module)
        except ValueError as e:
            out.append(str(e))
            continue
        for target in sorted(targets):
            if target.startswith(PACKAGE):
                if target == PACKAGE or floor(target) <= here:
                    continue
                out.append(f"{module} imports {target}: a floor above its own")
            elif module.split(".")[1:2] == ["analysis"] and target in IMPURE:
                out.append(f"{module} imports {target}: the analysis does no I/O")
    return out + [f"import circle: {' -> '.join(c)}" for c in circles(graph)]


def circles(graph: Graph) -> list[list[str]]:
    """The import circles between modules of the package (each once, from its smallest name)."""
    inside = {m: sorted(t for t in ts if t in graph and t != PACKAGE) for m, ts in graph.items()}
    found: list[list[str]] = []
    seen: set[tuple[str, ...]] = set()

    def walk(start: str, node: str, path: list[str]) -> None:
        for nxt in inside.get(node, []):
            if nxt == start:
                cycle = path[:]
                key = tuple(sorted(cycle))
                if key not in seen:
                    seen.add(key)
                    first = cycle.index(min(cycle))
                    found.append([*cycle[first:], *cycle[:first], min(cycle)])
            elif nxt > start and nxt not in path:
                walk(start, nxt, [*path, nxt])

    for start in sorted(inside):
        walk(start, start, [start])
    return found


def dot(graph: Graph) -> str:
    """The module graph, one cluster per floor, top floor first."""
    lines = ["digraph layout {", "  rankdir=TB; newrank=true; node [shape=box, fontsize=10];"]
    by_floor: dict[int, list[str]] = {}
    for module in graph:
        by_floor.setdefault(floor(module), []).append(module)
    names = ["common + data", *FLOORS[1:], "__main__"]
    for level in sorted(by_floor, reverse=True):
        lines.append(f'  subgraph cluster_{level} {{ label="{names[level]}"; rank=same;')
        lines += [f'    "{m.removeprefix(PACKAGE + ".")}";' for m in sorted(by_floor[level])]
        lines.append("  }")
    for module, targets in sorted(graph.items()):
        for target in sorted(t for t in targets if t in graph and t != PACKAGE):
            short = (m.removeprefix(PACKAGE + ".") for m in (module, target))
            lines.append('  "{}" -> "{}";'.format(*short))
    return "\n".join([*lines, "}"]) + "\n"


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    graph = imports(root)
    if sys.argv[1:] == ["--dot"]:
        sys.stdout.write(dot(graph))
        return 0
    found = breaches(graph)
    for line in found:
        print(f"layers: {line}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
