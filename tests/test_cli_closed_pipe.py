"""Every command prints through :mod:`snapbench.render.console`: a reader that goes away (`2>&1 | head -1`) is a
quiet exit 0 once the outputs are written, on stdout and on stderr alike -- rich's own consoles turned
a closed pipe into exit 1 (notes, spinners and progress bars on stderr)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _closed_pipe(*args: str) -> subprocess.CompletedProcess:
    """Run snapbench with stdout and stderr on a pipe whose reader is gone before the first line."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([sys.executable, "-m", "snapbench", *args], stdout=write, stderr=write, timeout=300,
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        os.close(write)


def test_compare_on_a_closed_pipe_exits_0_with_every_file_written(smoke_multi, tmp_path):
    out = tmp_path / "cmp"
    proc = _closed_pipe("compare", str(smoke_multi), "--out", str(out), "--no-progress", "--formats", "md")
    assert proc.returncode == 0  # was 1: the first note on stderr met rich's closed-pipe SystemExit(1)
    assert (out / "compare.json").is_file() and (out / "run.json").is_file()

