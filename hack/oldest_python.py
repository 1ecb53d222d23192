"""Fail when kubectl_nodefail uses a PEP 604 union (`X | Y`) that Python 3.9 would evaluate.

Every module has `from __future__ import annotations` (ruff's FA rules), so unions in
annotations are never evaluated; one anywhere else (a type alias, an isinstance argument, a
cast) raises TypeError on 3.9 when the line runs. vermin, which `make lint` also runs for the
standard library and syntax, cannot tell the two apart (its union check flags annotations too),
and mypy can no longer target 3.9. A `|` counts as a union when an operand looks like a type:
None, a builtin type, a CamelCase name, or a subscripted generic (`list[int]`).

Usage: python hack/oldest_python.py [PATH ...]   (default: kubectl_nodefail)
"""

from __future__ import annotations

import ast
import builtins
import sys
from collections.abc import Iterator
from pathlib import Path

BUILTIN_TYPES = {name for name in dir(builtins) if isinstance(getattr(builtins, name), type)}


def _annotation_nodes(tree: ast.AST) -> set[int]:
    """ids of every node inside an annotation (lazy under `from __future__ import annotations`)."""
    roots: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            roots += [a.annotation for a in every if a is not None and a.annotation is not None]
            if node.returns is not None:
                roots.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
    return {id(n) for root in roots for n in ast.walk(root)}


def _looks_like_a_type(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value is None
    if isinstance(node, ast.Subscript):
        return _looks_like_a_type(node.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _looks_like_a_type(node.left) or _looks_like_a_type(node.right)
    name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", "")
    camel = name[:1].isupper() and not name.isupper()  # a class, not a CONSTANT
    return name in BUILTIN_TYPES or camel


def runtime_unions(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(), str(path))
    skip = _annotation_nodes(tree)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.BitOr)
            and id(node) not in skip
            and (_looks_like_a_type(node.left) or _looks_like_a_type(node.right))
        ):
            skip |= {id(n) for n in ast.walk(node)}  # `A | B | C`: one line, not three
            yield (
                f"{path}:{node.lineno}: `{ast.unparse(node)}` is evaluated at run time, and "
                "Python 3.9 has no `X | Y` for types: use typing.Union / typing.Optional"
            )


def main(argv: list[str]) -> int:
    roots = [Path(a) for a in argv] or [Path("kubectl_nodefail")]
    files = sorted(f for r in roots for f in ([r] if r.is_file() else r.rglob("*.py")))
    found = [line for f in files for line in runtime_unions(f)]
    print("\n".join(found) or f"oldest_python: no run-time `X | Y` union in {len(files)} files")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
