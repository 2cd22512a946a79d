"""The corruption layer imports cleanly: each module alone, no import cycles, nothing from the package root.

Cycles are found on the import graph read from the source (every ``import`` statement, also those
inside functions -- a lazy import hides a cycle from Python but not from a reader), so a cycle is
caught even when the import order happens to work.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "snapbench"
# the area under test: the corruption layer and what it stands on
AREA = ("snapbench.corruptions", "snapbench.interop", "snapbench.conditions", "snapbench.seeding")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PKG.rglob("*.py")}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
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


def _in_area(name: str) -> bool:
    return any(name == a or name.startswith(a + ".") for a in AREA)


def test_no_import_cycle_touches_the_corruption_layer() -> None:
    mods = _modules()
    graph = {n: _imports(n, p, set(mods)) for n, p in mods.items()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                if any(_in_area(m) for m in cycle):
                    cycles.append(cycle)
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n, [n])
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_the_corruption_layer_never_imports_the_package_root_or_higher_layers() -> None:
    mods = _modules()
    higher = ("snapbench.evaluate", "snapbench.fusion", "snapbench.pipeline", "snapbench.report", "snapbench.cli",
              "snapbench.commands", "snapbench.models", "snapbench.encode", "snapbench.data")
    bad = []
    for name, path in mods.items():
        if not _in_area(name) or name.startswith("snapbench.interop"):
            continue
        for dep in _imports(name, path, set(mods)):
            if dep == "snapbench" or dep.startswith(higher):
                bad.append(f"{name} imports {dep}")
    assert not bad, bad


def test_each_module_imports_alone() -> None:
    names = sorted(n for n in _modules() if _in_area(n) and not n.startswith("snapbench.interop."))
    script = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    for m in [m for m in sys.modules if m == 'snapbench' or m.startswith('snapbench.')]:\n"
        "        del sys.modules[m]\n"
        "    importlib.import_module(name)\n"
        "print('ok', len(sys.modules))\n"
    )
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0 and res.stdout.startswith("ok"), res.stderr


def test_importing_seeding_or_conditions_loads_no_opencv() -> None:
    script = "import sys, snapbench.seeding, snapbench.conditions; print('cv2' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert res.stdout.strip() == "False", res.stderr
