"""snapbench's import graph read from the source: every ``import`` statement, also those inside
functions (a lazy import hides a cycle from Python but not from a reader), so a cycle or a layer
crossing is caught even when the import order happens to work."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "snapbench"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by the name of its ``__init__``)."""
    return {module_name(p): p for p in PKG.rglob("*.py")}


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """snapbench modules ``name`` imports (a package import counts as its ``__init__``)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            if not base.startswith("snapbench"):
                continue
            for a in node.names:
                out.add(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base)
    return {m for m in out if m in known and m != name}


def graph() -> dict[str, set[str]]:
    """module -> the snapbench modules it imports."""
    mods = modules()
    return {n: imports(n, p, set(mods)) for n, p in mods.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The cycles a depth-first walk of ``g`` meets (each as a path that returns to its start)."""
    found: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(g[node]):
            if state.get(nxt) == 1:
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for n in sorted(g):
        if n not in state:
            visit(n, [n])
    return found
