"""`snapbench evaluate` and its outputs: a reader that leaves early (`| head -2`) is a quiet exit 0
(the report was written), and a wrong output option fails before the evaluation, writing nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from snapbench.cli import app

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


@pytest.fixture(scope="module")
def scores(tmp_path_factory) -> tuple[Path, Path]:
    """A SCORES_DIR of 20 queries x 30 items (clean and one image condition) and its qrels."""
    root = tmp_path_factory.mktemp("eval")
    d = root / "scores"
    d.mkdir()
    qids, gids = [f"q{i}" for i in range(20)], [f"g{j}" for j in range(30)]
    (d / "query_ids.txt").write_text("\n".join(qids) + "\n")
    (d / "gallery_ids.txt").write_text("\n".join(gids) + "\n")
    rng = np.random.default_rng(1)
    rel = np.zeros((20, 30))
    rel[np.arange(20), np.arange(20)] = 1
    for k, c in enumerate(("clean", "img__motion_blur__s2")):
        np.save(d / f"{c}.npy", (rng.standard_normal((20, 30)) + (3 - 2 * k) * rel).astype(np.float32))
    qrels = root / "qrels.json"
    qrels.write_text(json.dumps({q: [gids[i]] for i, q in enumerate(qids)}))
    return d, qrels


def test_a_reader_that_leaves_early_is_a_quiet_exit_0(scores, tmp_path):
    d, qrels = scores
    out = tmp_path / "e.json"
    read, write = os.pipe()
    os.close(read)  # `| head -2` gone before the tables are printed
    proc = subprocess.run([sys.executable, "-m", "snapbench", "evaluate", str(d), "--qrels", str(qrels),
                           "--out", str(out), "--resamples", "200"], stdout=write, stderr=subprocess.PIPE,
                          text=True, timeout=300, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    os.close(write)
    assert proc.returncode == 0, proc.stderr  # rich's closed-pipe exit was 1 ("nothing was measured")
    assert "Traceback" not in proc.stderr and "error" not in proc.stderr, proc.stderr
    assert json.loads(out.read_text())["conditions"]["clean"]["hit@1"] is not None


def test_a_table_file_of_an_unknown_kind_is_refused_before_the_evaluation(scores, tmp_path, monkeypatch):
    import snapbench.app.evaluate as runner_module

    d, qrels = scores
    calls = []
    real = runner_module.evaluate_directory
    monkeypatch.setattr(runner_module, "evaluate_directory", lambda *a, **k: calls.append(1) or real(*a, **k))
    out, table = tmp_path / "e.json", tmp_path / "t.xlsx"
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qrels), "--out", str(out), "--table-out", str(table),
                            "--resamples", "200"])
    assert r.exit_code == 2 and r.output == f"error: {table}: --table-out: a table file must end in .csv or .md\n"
    assert not out.exists() and not table.exists()
    assert calls == []  # refused before any evaluation


@pytest.mark.parametrize("bad", ["folder", "under_a_file"])
def test_an_out_that_cannot_be_a_file_is_refused_before_the_evaluation(scores, tmp_path, bad):
    d, qrels = scores
    (tmp_path / "folder").mkdir()
    (tmp_path / "afile").write_text("x")
    out = tmp_path / "folder" if bad == "folder" else tmp_path / "afile" / "e.json"
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qrels), "--out", str(out), "--resamples", "200"])
    assert r.exit_code == 2 and r.output.startswith("error: "), r.output
    assert ("--out names the file to write" if bad == "folder" else "is a file, not a folder") in r.output
    assert "metric values" not in r.output  # no table was printed: nothing was evaluated
