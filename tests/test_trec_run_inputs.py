"""`snapbench evaluate` on TREC runs: a run file without any result line, and qrels ids that no run
lists when there are no id files (the ids then come from the runs; the qrels rules decide the rest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from snapbench.cli import app

runner = CliRunner()
QIDS = [f"q{i}" for i in range(10)]
GIDS = [f"g{j:02d}" for j in range(20)]


def _runs(root: Path) -> tuple[Path, Path]:
    """Two full-depth runs (clean, img/compression/s1) over 10 queries x 20 items; qrels: one positive
    per query, ranked first by clean for even queries and second for odd ones."""
    d = root / "runs"
    d.mkdir()
    for cond, shift in (("clean", 0), ("img__compression__s1", 1)):
        lines = []
        for i, q in enumerate(QIDS):
            order = [GIDS[(i + j + (i % 2) * shift) % 20] for j in range(20)]
            lines += [f"{q} Q0 {g} {r + 1} {20 - r} t\n" for r, g in enumerate(order)]
        (d / f"{cond}.run").write_text("".join(lines))
    qrels = root / "qrels.trec"
    qrels.write_text("".join(f"{q} 0 {GIDS[i]} 1\n" for i, q in enumerate(QIDS)))
    return d, qrels


def _hit1(run: Path, gold: dict[str, set[str]]) -> float:
    """hit@1 straight from a run file: the top-scored item of each judged query is a positive."""
    best: dict[str, tuple[float, str]] = {}
    for line in run.read_text().splitlines():
        q, _, g, _, s, _ = line.split()
        if q not in best or float(s) > best[q][0]:
            best[q] = (float(s), g)
    return sum(best[q][1] in gold[q] for q in gold) / len(gold)


@pytest.mark.parametrize("text", ["", "\n\n   \n", "# nothing retrieved\n\n"])
@pytest.mark.parametrize("with_ids", [False, True])
def test_a_run_without_result_lines_is_refused_naming_the_file(tmp_path, text, with_ids):
    d, qrels = _runs(tmp_path)
    if with_ids:
        (d / "query_ids.txt").write_text("\n".join(QIDS) + "\n")
        (d / "gallery_ids.txt").write_text("\n".join(GIDS) + "\n")
    bad = d / "img__compression__s1.run"
    bad.write_text(text)
    out = tmp_path / "ev.json"
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qrels), "--out", str(out), "--quiet"])
    assert r.exit_code == 2, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)
    assert "Traceback" not in r.output
    assert f"error: {bad}: no result lines" in " ".join(r.output.split())
    assert not out.exists()


def test_without_id_files_qrels_ids_in_no_run_follow_the_qrels_rules(tmp_path):
    d, qrels = _runs(tmp_path)
    gold = {q: {GIDS[i]} for i, q in enumerate(QIDS)}
    bad = tmp_path / "qrels_bad.trec"
    bad.write_text(qrels.read_text() + "q_nonexistent 0 g00 1\nq1 0 g_unknown_item 1\n")
    out = tmp_path / "ev.json"
    # a judged item no run lists: an unknown gallery id, an error by default (as with gallery_ids.txt)
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(bad), "--out", str(out), "--quiet"])
    assert r.exit_code == 2, r.output
    flat = " ".join(r.output.split())
    assert "g_unknown_item" in flat and "gallery_ids.txt" in flat and "--allow-unknown-items" in flat
    assert not out.exists()
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(bad), "--out", str(out), "--quiet",
                            "--allow-unknown-items"])
    assert r.exit_code == 0, r.output
    rep = json.loads(out.read_text())
    warnings = " ".join(rep["warnings"])
    assert "q_nonexistent" in warnings and "left out" in warnings
    assert "g_unknown_item" in warnings and "dropped" in warnings
    assert not any("depth-limited" in w for w in rep["warnings"])  # no phantom 21st item
    assert rep["n_qrels_without_scores"] == 1 and rep["meta"]["qrels_without_scores"] == ["q_nonexistent"]
    assert rep["n_queries"] == len(QIDS) and rep["meta"]["n_gallery"] == len(GIDS)
    for cond in ("clean", "img__compression__s1"):
        cid = cond.replace("__", "/")
        assert rep["conditions"][cid]["hit@1"] == pytest.approx(_hit1(d / f"{cond}.run", gold))
