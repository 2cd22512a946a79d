"""The corruption layer imports cleanly: each module alone, no import cycles, nothing from the package root.

Cycles are found on the import graph read from the source (every ``import`` statement, also those
inside functions -- a lazy import hides a cycle from Python but not from a reader), so a cycle is
caught even when the import order happens to work.
"""

from __future__ import annotations

import subprocess
import sys

from import_graph import ROOT, cycles, graph, imports, modules

# the area under test: the corruption layer and what it stands on
AREA = ("snapbench.corruptions", "snapbench.interop", "snapbench.core.conditions", "snapbench.core.seeding")


def _in_area(name: str) -> bool:
    return any(name == a or name.startswith(a + ".") for a in AREA)


def test_no_import_cycle_touches_the_corruption_layer() -> None:
    found = [c for c in cycles(graph()) if any(_in_area(m) for m in c)]
    assert not found, "\n".join(" -> ".join(c) for c in found)


def test_the_corruption_layer_never_imports_the_package_root_or_higher_layers() -> None:
    mods = modules()
    higher = ("snapbench.evaluate", "snapbench.fusion", "snapbench.app.stages", "snapbench.render", "snapbench.cli",
              "snapbench.app", "snapbench.models", "snapbench.app.encoding", "snapbench.data")
    bad = []
    for name, path in mods.items():
        if not _in_area(name) or name.startswith("snapbench.interop"):
            continue
        for dep in imports(name, path, set(mods)):
            if dep == "snapbench" or dep.startswith(higher):
                bad.append(f"{name} imports {dep}")
    assert not bad, bad


def test_each_module_imports_alone() -> None:
    names = sorted(n for n in modules() if _in_area(n) and not n.startswith("snapbench.interop."))
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
    script = "import sys, snapbench.core.seeding, snapbench.core.conditions; print('cv2' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert res.stdout.strip() == "False", res.stderr
