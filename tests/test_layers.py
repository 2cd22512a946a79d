"""The package's layers hold: core <- computation <- store <- render <- app <- cli (pyproject.toml's
import-linter contract), with no import cycle and nothing hidden from the import graph.

Cycles are found on the import graph read from the source (every ``import`` statement, also those
inside functions -- a lazy import hides a cycle from Python but not from a reader), so a cycle is
caught even when the import order happens to work.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

from import_graph import PKG, ROOT, cycles, graph, modules


def test_no_import_cycle_anywhere_in_the_package() -> None:
    found = cycles(graph())
    assert not found, "\n".join(" -> ".join(c) for c in found)


def test_the_layers_contract_of_pyproject_holds() -> None:
    """`lint-imports` (import-linter, a test dependency) checks every import against the layers."""
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    res = subprocess.run([exe, "--no-cache"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1 kept, 0 broken" in res.stdout


def test_every_subpackage_has_its_place_in_the_layers() -> None:
    """A package left out of the contract is checked by nothing (albums was, for a while)."""
    import tomllib

    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    placed = {name.strip() for layer in contract["layers"] for name in layer.split(":")}
    packages = {f"snapbench.{d.name}" for d in (ROOT / "snapbench").iterdir() if (d / "__init__.py").is_file()}
    assert packages - placed == set()


def test_no_import_is_hidden_under_type_checking() -> None:
    """An import only a type checker sees is an edge the layers and the cycle check cannot see."""
    hidden = []
    for path in PKG.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                hidden.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not hidden, hidden


def test_each_module_imports_alone() -> None:
    names = sorted(n for n in modules() if n != "snapbench.__main__")
    script = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    for m in [m for m in sys.modules if m == 'snapbench' or m.startswith('snapbench.')]:\n"
        "        del sys.modules[m]\n"
        "    importlib.import_module(name)\n"
        "print('ok', len(sys.modules))\n"
    )
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=600,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0 and res.stdout.startswith("ok"), res.stderr


def test_importing_seeding_or_conditions_loads_no_opencv() -> None:
    script = "import sys, snapbench.core.seeding, snapbench.core.conditions; print('cv2' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert res.stdout.strip() == "False", res.stderr
