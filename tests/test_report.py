"""`snapbench report`: a run directory built from the demo's real pipeline (toy encoder, bundled
photos) -> HTML, paper tables, figures, per-query tables.  Numbers in the tables are checked against
values recomputed here from the score matrices and the reports' per-condition values."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from snapbench.conditions import IMAGE_PRIMITIVES, condition_to_filename, filename_to_condition

REPO = Path(__file__).resolve().parents[1]
MODES = ("I2I", "T2T", "IT2IT")


def _hit1(scores: np.ndarray, positives: list[set[int]]) -> np.ndarray:
    """Per-query hit@1, ties to the lowest gallery index (np.argmax's first maximum); NaN for zero-GT."""
    top = np.argmax(scores, axis=1)
    return np.array([float(int(t) in pos) if pos else np.nan for t, pos in zip(top, positives)])


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    from snapbench.commands.demo import demo
    from snapbench.evaluate import EvaluationConfig, evaluate_directory, write_report
    from snapbench.fusion import MOORIndex, comb_sum
    from snapbench.report import write_per_query

    base = tmp_path_factory.mktemp("report")
    demo_out = base / "demo"
    demo(out=demo_out, data=None, seed=3, workers=1, resamples=200)
    run = base / "run"
    qrels = REPO / "assets" / "demo" / "qrels.json"
    paths = demo_out / "encoded" / "paths"
    cfg = EvaluationConfig(seed=3, resamples=200, workers=1)
    qids = (paths.parent / "query_ids.txt").read_text().split()
    gids = (paths.parent / "gallery_ids.txt").read_text().split()
    gpos = {g: i for i, g in enumerate(gids)}
    qr = json.loads(qrels.read_text())
    positives = [{gpos[g] for g in qr.get(q, []) if g in gpos} for q in qids]
    conds = sorted({filename_to_condition(p.name.split(".")[0]) for p in paths.glob("*.II.npy")})

    def mode_scores(c: str, mode: str) -> np.ndarray:
        ld = lambda p: np.load(paths / f"{condition_to_filename(c)}.{p}.npy")  # noqa: E731
        return {"I2I": lambda: ld("II"), "T2T": lambda: ld("TT"), "IT2IT": lambda: (ld("II") + ld("TT")) / 2}[mode]()

    for mode in MODES:
        write_report(evaluate_directory(paths, qrels, cfg, mode=mode), run / mode / "report.json")
        write_per_query(run / mode / "per_query.csv", qids,
                        {c: {"hit@1": _hit1(mode_scores(c, mode), positives)} for c in conds})
    moor = demo_out / "moor"
    write_report(evaluate_directory(moor, qrels, cfg), run / "MOOR" / "report.json")
    write_per_query(run / "MOOR" / "per_query.csv", qids,
                    {c: {"hit@1": _hit1(np.load(moor / f"{condition_to_filename(c)}.npy"), positives)} for c in conds})
    emb = demo_out / "encoded" / "embeddings"
    index = MOORIndex().fit(np.load(emb / "gallery.image.npy"), np.load(emb / "gallery.text.npy"))
    share = {}
    for c in conds:
        s = condition_to_filename(c)
        share[c] = float(np.mean(index.query(np.load(emb / f"{s}.image.npy"), np.load(emb / f"{s}.text.npy")).text_share))
    (run / "MOOR" / "text_share.json").write_text(json.dumps(share))
    cs = run / "_scores_comb_sum"
    cs.mkdir()
    for name in ("query_ids.txt", "gallery_ids.txt"):
        shutil.copy(paths / name if (paths / name).exists() else paths.parent / name, cs / name)
    for c in conds:
        s = condition_to_filename(c)
        np.save(cs / f"{s}.npy", comb_sum([np.load(paths / f"{s}.{p}.npy") for p in ("II", "TT", "IT", "TI")]))
    write_report(evaluate_directory(cs, qrels, cfg), run / "fusion" / "comb_sum" / "report.json")
    shutil.rmtree(cs)
    manifest = [json.loads(line) for line in (REPO / "assets" / "demo" / "queries.jsonl").read_text().splitlines() if line]
    q0 = manifest[0]
    (run / "run.json").write_text(json.dumps({
        "dataset": "demo & friends_1 (toy)", "encoder": "toy", "seed": 3, "modes": list(MODES) + ["MOOR"],
        "conditions": conds, "snapbench_version": "0.1.0",
        "contact_sheet": {"image": str(REPO / "assets" / "demo" / q0["image"]), "key": q0["id"], "seed": 3,
                          "question": q0["question"], "entity": q0.get("entity")}}))
    return {"dir": run, "qids": qids, "positives": positives, "conds": conds, "mode_scores": mode_scores}


@pytest.fixture(scope="module")
def built(run_dir):
    from snapbench.report import build_report

    res = build_report(run_dir["dir"], dpi=60)
    return res


def test_build_writes_all_outputs(run_dir, built):
    d = run_dir["dir"]
    assert (d / "report.html").is_file()
    for mode in MODES + ("MOOR",):
        for kind in ("delta", "additivity", "r1"):
            assert (d / "tables" / f"{mode}_{kind}.md").is_file()
            assert (d / "tables" / f"{mode}_{kind}.tex").is_file()
        for fig in ("severity_curves", "primitives", "additivity"):
            assert (d / "figures" / f"{mode}_{fig}.png").stat().st_size > 1000
            assert (d / "figures" / f"{mode}_{fig}.pdf").read_bytes()[:5] == b"%PDF-"
    for fig in ("drag", "moor_gain", "text_share", "contact_sheet"):
        assert (d / "figures" / f"{fig}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (d / "per_query.csv").is_file() and (d / "per_query.parquet").is_file()
    assert "per_query" not in built.notes and "figures" not in built.notes
