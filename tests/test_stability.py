"""Label-free stability measures (SPEC §14): overlap@k, rbo (RBO_ext), flip@1.

Every expected value comes from an independent computation written here: Python sets over rankings
from ``np.argsort(-scores, kind="stable")`` (the documented tie rule) and RBO_ext straight from Webber,
Moffat & Zobel (2010), eq. 32 -- never from snapbench's own functions.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest
from data_fixtures import write_scores_dir

from snapbench.app.evaluate import evaluate_directory
from snapbench.core.errors import ConfigError
from snapbench.evaluate.config import EvaluationConfig
from snapbench.evaluate.stability import flip_at_k, overlap_at_k, rbo_ext


def ref_rbo(a: list, b: list, p: float, d: int) -> float:
    """RBO_ext = (X_d / d) p^d + ((1 - p) / p) Σ_{i=1..d} (X_i / i) p^i, X_i = |a_{1:i} ∩ b_{1:i}|."""
    x = [len(set(a[:i]) & set(b[:i])) for i in range(1, d + 1)]
    return x[d - 1] / d * p ** d + (1 - p) / p * sum(x[i - 1] / i * p ** i for i in range(1, d + 1))


def ref_rankings(scores: np.ndarray) -> np.ndarray:
    return np.argsort(-scores, axis=1, kind="stable")  # higher first, ties by gallery column


# ------------------------------------------------------------------ hand-computed cases
def test_hand_computed_rbo_overlap_flip():
    a = np.array([[0, 1, 2, 3]])
    b = np.array([[1, 0, 3, 2]])
    # X = 0, 2, 2, 4; p = 0.5, d = 4: 1 * 0.5^4 + 1 * (0 + 2/2 * 0.25 + 2/3 * 0.125 + 4/4 * 0.0625)
    want = 0.0625 + 0.25 + (2 / 3) * 0.125 + 0.0625
    assert rbo_ext(a, b, 0.5, 4)[0] == pytest.approx(want, abs=1e-12)
    assert overlap_at_k(a, b, 1)[0] == 0.0 and overlap_at_k(a, b, 2)[0] == 1.0 and overlap_at_k(a, b, 3)[0] == 2 / 3
    assert flip_at_k(a, b, 1)[0] == 1.0
    assert flip_at_k(a, a, 1)[0] == 0.0


def test_identical_and_disjoint_rankings():
    a = np.arange(50)[None, :]
    assert rbo_ext(a, a, 0.9, 50)[0] == pytest.approx(1.0, abs=1e-12)
    assert rbo_ext(a, a + 50, 0.9, 50)[0] == 0.0
    assert overlap_at_k(a, a + 50, 10)[0] == 0.0


def test_rbo_matches_definition_on_random_rankings():
    rng = np.random.default_rng(3)
    a = np.stack([rng.permutation(40) for _ in range(25)])
    b = np.stack([rng.permutation(40) for _ in range(25)])
    b[:5] = a[:5]
    b[5:10, :10] = a[5:10, :10][:, ::-1]
    for p, d in ((0.9, 20), (0.5, 7), (0.98, 40)):
        got = rbo_ext(a, b, p, d)
        want = [ref_rbo(list(a[q]), list(b[q]), p, d) for q in range(a.shape[0])]
        np.testing.assert_allclose(got, want, atol=1e-12)


def test_rbo_settings_are_checked():
    a = np.arange(5)[None, :]
    for p in (0.0, 1.0, -0.1):
        with pytest.raises(ConfigError, match="rbo_p|in \\(0, 1\\)"):
            rbo_ext(a, a, p, 5)
    with pytest.raises(ConfigError):
        EvaluationConfig(rbo_depth=0)


# ------------------------------------------------------------------ score folders, no labels
def _folder(tmp_path, n_q=40, n=150, seed=0, ties=False):
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(n_q, n))
    conds = {
        "clean": base,
        "img/motion_blur/s1": base + 0.05 * rng.normal(size=(n_q, n)),
        "img/motion_blur/s3": base + 0.6 * rng.normal(size=(n_q, n)),
        "txt/sent_replace": rng.normal(size=(n_q, n)),
    }
    if ties:  # coarse scores: many equal values in both rankings; one condition all equal
        conds = {c: np.round(s, 0) for c, s in conds.items()}
        conds["txt/char_add"] = np.zeros((n_q, n))
    return write_scores_dir(tmp_path / "scores", conds), conds


def _independent(conds, ks=(1, 5, 10, 20), p=0.9, depth=100):
    r0 = ref_rankings(conds["clean"])
    out = {}
    for c, s in conds.items():
        r = ref_rankings(s)
        vals = {f"overlap@{k}": np.mean([len(set(r0[q, :k]) & set(r[q, :k])) / k for q in range(len(r))]) for k in ks}
        vals["rbo"] = np.mean([ref_rbo(list(r0[q]), list(r[q]), p, min(depth, r.shape[1])) for q in range(len(r))])
        vals["flip@1"] = np.mean(r0[:, 0] != r[:, 0])
        out[c] = vals
    return out


@pytest.mark.parametrize("ties", [False, True])
def test_score_folder_without_labels_means_and_cis(tmp_path, ties):
    d, conds = _folder(tmp_path, ties=ties)
    rep = evaluate_directory(d, None, EvaluationConfig(resamples=300, workers=1))
    want = _independent(conds)
    assert rep.meta.labelled is False and rep.meta.qrels is None
    assert set(rep.metrics) == {"overlap@1", "overlap@5", "overlap@10", "overlap@20", "rbo", "flip@1"}
    for c, vals in want.items():
        for m, v in vals.items():
            assert rep.conditions[c][m] == pytest.approx(v, abs=5e-5), (c, m)
            lf = rep.label_free[c][m]
            assert lf["mean"] == pytest.approx(v, abs=5e-5)
            lo, hi = lf["ci"]
            assert lo is not None and hi is not None and lo - 1e-12 <= v <= hi + 1e-12
            if c != "clean":
                assert rep.paired[c][m].ci[0] is not None
    if ties:  # all-equal scores rank in gallery order in both: identical to a clean ranking of ties only where equal
        assert rep.conditions["txt/char_add"]["overlap@10"] == pytest.approx(want["txt/char_add"]["overlap@10"])
    else:
        # the measures order the conditions by how much noise moved the ranking
        o = {c: rep.conditions[c]["overlap@10"] for c in conds}
        assert o["clean"] == 1.0 > o["img/motion_blur/s1"] > o["img/motion_blur/s3"] > o["txt/sent_replace"]
        assert rep.conditions["clean"]["flip@1"] == 0.0


def test_small_gallery_rbo_ranks_the_whole_gallery(tmp_path):
    d, conds = _folder(tmp_path, n_q=12, n=30)
    rep = evaluate_directory(d, None, EvaluationConfig(resamples=50, workers=1))
    want = _independent(conds, depth=30)
    assert rep.conditions["clean"]["rbo"] == pytest.approx(1.0, abs=1e-9)
    for c in conds:
        assert rep.conditions[c]["rbo"] == pytest.approx(want[c]["rbo"], abs=5e-5)


def test_with_labels_stability_sits_beside_the_labelled_metrics(tmp_path):
    d, conds = _folder(tmp_path, n_q=20, n=60)
    qrels = tmp_path / "qrels.json"
    qrels.write_text(json.dumps({f"q{i}": [f"g{i}", f"g{i + 20}"] for i in range(20)}))
    rep = evaluate_directory(d, qrels, EvaluationConfig(resamples=50, workers=1), per_query=True)
    assert "hit@1" in rep.metrics and "overlap@10" in rep.metrics and "rbo" in rep.metrics
    want = _independent(conds)
    r0 = ref_rankings(conds["clean"])
    r = ref_rankings(conds["img/motion_blur/s3"])
    per = rep.per_query.values["img/motion_blur/s3"]["overlap@10"]
    np.testing.assert_allclose(per, [len(set(r0[q, :10]) & set(r[q, :10])) / 10 for q in range(20)], atol=1e-12)
    assert rep.conditions["txt/sent_replace"]["flip@1"] == pytest.approx(want["txt/sent_replace"]["flip@1"])


def test_cli_evaluate_without_qrels(tmp_path):
    d, conds = _folder(tmp_path, n_q=15, n=80)
    out = tmp_path / "r.json"
    res = subprocess.run([sys.executable, "-m", "snapbench", "evaluate", str(d), "--out", str(out), "--resamples", "100",
                          "--rbo-p", "0.8", "--rbo-depth", "20", "-q"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    body = json.loads(out.read_text())
    want = _independent(conds, p=0.8, depth=20)
    assert body["conditions"]["img/motion_blur/s3"]["rbo"] == pytest.approx(want["img/motion_blur/s3"]["rbo"], abs=5e-5)
    assert body["meta"]["stability_measures"]["rbo_p"] == 0.8 and body["meta"]["labelled"] is False
    res = subprocess.run([sys.executable, "-m", "snapbench", "evaluate", str(d), "--metrics", "hit@1"],
                         capture_output=True, text=True)
    assert res.returncode == 2 and "error: --metrics: hit@1 needs relevance labels (give --qrels)" in res.stderr
    assert "Traceback" not in res.stderr


def test_conditions_evaluated_without_the_clean_ranking_are_refused():
    """The library path: a corrupted condition must be compared with clean's ranking, never with itself."""
    from snapbench.core.errors import EvaluationInputError
    from snapbench.evaluate import Labels, evaluate_conditions, evaluate_matrix

    rng = np.random.default_rng(1)
    s0, s1 = rng.normal(size=(10, 30)), rng.normal(size=(10, 30))
    lab = Labels.from_lists([[q] for q in range(10)], 30)
    cfg = EvaluationConfig(resamples=50, workers=1)
    metrics = cfg.metric_list()
    clean = evaluate_matrix(s0, lab, metrics)
    wrong = {"clean": clean, "txt/char_add": evaluate_matrix(s1, lab, metrics)}
    with pytest.raises(EvaluationInputError, match="'txt/char_add' was evaluated without the clean ranking"):
        evaluate_conditions(wrong, lab, cfg)
    right = {"clean": clean, "txt/char_add": evaluate_matrix(s1, lab, metrics, reference=clean.ranking)}
    rep = evaluate_conditions(right, lab, cfg)
    r0, r1 = ref_rankings(s0), ref_rankings(s1)
    want = np.mean([len(set(r0[q, :10]) & set(r1[q, :10])) / 10 for q in range(10)])
    assert rep.conditions["txt/char_add"]["overlap@10"] == pytest.approx(want, abs=1e-12)


def test_compare_gives_model_vs_model_differences_of_stability(tmp_path):
    """Two models' label-free reports compared like any other metric: the difference of drops of
    overlap@10 between the models equals the difference of their mean overlaps (clean is 1 for both)."""
    from snapbench.compare import CompareConfig, ModelValues, compare_models

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    da, ca = _folder(tmp_path / "a", n_q=30, n=80, seed=1)
    db, cb = _folder(tmp_path / "b", n_q=30, n=80, seed=2)
    cfg = EvaluationConfig(resamples=200, workers=1)
    models = []
    for name, d in (("A", da), ("B", db)):
        rep = evaluate_directory(d, None, cfg, per_query=True)
        vals = {c: {m: np.array([np.nan if v is None else v for v in per[m]]) for m in per}
                for c, per in rep.per_query.values.items()}
        models.append(ModelValues.from_values(name, rep.per_query.query_ids, {"T2T": vals}))
    rec = compare_models(models, CompareConfig(resamples=200, workers=1)).records()
    wa, wb = _independent(ca), _independent(cb)
    rows = [r for r in rec["pairs"] if r["metric"] == "overlap@10" and not r["condition"].startswith("group:")
            and r["condition"] in wa]
    assert {r["condition"] for r in rows} == set(wa) - {"clean"}
    for r in rows:
        c = r["condition"]
        sign = 1 if (r["model_a"], r["model_b"]) == ("A", "B") else -1
        assert r["diff"] == pytest.approx(sign * (wa[c]["overlap@10"] - wb[c]["overlap@10"]), abs=5e-5)
        assert r["ci_low"] <= r["diff"] <= r["ci_high"] and r["p_raw"] is not None


def test_cli_evaluate_without_qrels_says_only_what_applies(tmp_path):
    """The printed tables of a label-free evaluation: no stably correct / drag / boost, no first positive."""
    from typer.testing import CliRunner

    from snapbench.cli import app

    d, _ = _folder(tmp_path, n_q=15, n=80)
    r = CliRunner().invoke(app, ["evaluate", str(d), "--resamples", "100"])
    assert r.exit_code == 0, r.output
    words = " ".join(r.stdout.split())
    assert "paired against clean — overlap@10" in words and "no relevance labels" in words
    for label_word in ("stably correct", "drag", "boost", "first positive"):
        assert label_word not in words, label_word


def test_additivity_of_a_label_free_report_defaults_to_overlap(tmp_path):
    from typer.testing import CliRunner

    from snapbench.cli import app

    d, _ = _folder(tmp_path, n_q=15, n=80)  # no joint condition: the table says so
    out = tmp_path / "r.json"
    r = CliRunner().invoke(app, ["evaluate", str(d), "--out", str(out), "--resamples", "100", "-q"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["additivity", str(out)])
    assert r.exit_code == 0, r.output
    assert "no joint condition" in r.stdout and "not in the report" not in r.output


@pytest.mark.parametrize("metrics, expected", [
    (["overlap@5", "overlap@10", "overlap@20", "rbo"], "overlap@10"),
    (["overlap@5", "overlap@20", "rbo", "flip@1"], "overlap@20"),  # no overlap@10: the deepest
    (["rbo", "flip@1"], "rbo"),
])
def test_one_overlap_measure_speaks_for_a_run_without_labels(metrics, expected):
    """The headline (what run prints) and the report's stability section name the same measure."""
    from snapbench.evaluate.stability import overlap_metric
    from snapbench.render.aggregate import headline_metric

    assert headline_metric(metrics)[0] == expected
    assert (overlap_metric(metrics) or metrics[0]) == expected



def _spearman(pq, measure: str, conds: list[str]) -> float | None:
    """scipy's Spearman ρ across ``conds`` between the mean ``measure`` and the mean hit@1 drop from
    clean (queries that do not count left out); ``None`` where undefined, as stability.json writes it."""
    from scipy import stats as scipy_stats

    clean = pq.array("clean", "hit@1")
    s = [np.nanmean(pq.array(c, measure)) for c in conds]
    drop = [np.nanmean(clean - pq.array(c, "hit@1")) for c in conds]
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", scipy_stats.ConstantInputWarning)  # a constant side: undefined
        r = float(scipy_stats.spearmanr(s, drop).statistic)
    return None if np.isnan(r) else r


def test_stability_tracks_the_loss_over_the_conditions_each_mode_reads(smoke_run):
    """Each mode's ρ (stability.json, the finding, the figure) is scipy's Spearman over exactly the
    corrupted conditions :func:`target_reads` says the mode reads, and n_conditions says how many."""
    from snapbench.core.targets import target_reads
    from snapbench.render.stability import stability_finding, stability_vs_loss
    from snapbench.store.rundir import load_run_dir

    data = load_run_dir(smoke_run)
    body = stability_vs_loss(data)
    assert set(body["modes"]) >= {"I2I", "T2T", "IT2IT", "MOOR"}
    for mode, per in body["modes"].items():
        read = [c for c in data.reports[mode].condition_ids if c != "clean" and target_reads(mode, c)]
        for measure, e in per.items():
            assert e["n_conditions"] == len(read) and list(e["points"]) == read, (mode, measure)
            want = _spearman(data.per_query[mode], measure, read)
            assert e["rho"] is None if want is None else e["rho"] == pytest.approx(want, abs=1e-9), (mode, measure)
    assert body["modes"]["T2T"]["overlap@10"]["n_conditions"] == 3  # 2 text conditions and the joint one
    assert "across the 3 corrupted conditions it reads" in stability_finding(body, "T2T")



@pytest.mark.parametrize("level,label", [(0.95, "95% CI"), (0.975, "97.5% CI"), (0.9, "90% CI")])
def test_the_stability_finding_names_its_ci_level_as_every_table_does(level, label):
    """--ci 0.975 is a 97.5% CI (render.fmt.ci_label), not a rounded "98% CI"."""
    from snapbench.render.stability import stability_finding

    body = {"metric": "hit@1", "ci_level": level,
            "modes": {"T2T": {"overlap@10": {"rho": -0.5, "ci": [-0.9, -0.1], "n_conditions": 3}}}}
    assert f"overlap@10 ρ = -0.50 ({label} -0.90 to -0.10)" in stability_finding(body, "T2T")

def test_image_conditions_do_not_inflate_text_to_texts_stability_correlation(smoke_run):
    """Trial: T→T's ρ was taken over every condition, the image ones too.  T→T cannot read them, so each
    sat at stability 1, drop 0 and pulled ρ (on the demo −0.87 over 71 conditions, −0.61 over the 26 it
    reads).  Here T→T's per-query table is set so that the conditions it reads give ρ = −0.5."""
    from snapbench.core.records import PerQuery
    from snapbench.render.stability import stability_vs_loss
    from snapbench.store.rundir import load_run_dir

    data = load_run_dir(smoke_run)
    conds = data.reports["T2T"].condition_ids
    # (mean stability, hit@1 drop) per condition the same for every query; an image condition: (1, 0)
    points = {"txt/char_swap": (0.9, 0.1), "txt/char_add": (0.5, 0.0), "joint/compression+char_add/s3": (0.2, 0.3)}
    assert set(conds) == {"clean", "img/motion_blur/s2", "img/compression/s3", *points}
    n = len(data.per_query["T2T"].query_ids)
    values = {}
    for c in conds:
        s, d = points.get(c, (1.0, 0.0))
        values[c] = {"hit@1": np.full(n, 1.0 - d), "overlap@10": np.full(n, s), "rbo": np.full(n, s)}
    data.per_query["T2T"] = pq = PerQuery.from_arrays(data.per_query["T2T"].query_ids, values)
    e = stability_vs_loss(data)["modes"]["T2T"]["overlap@10"]
    assert e["rho"] == pytest.approx(-0.5) == pytest.approx(_spearman(pq, "overlap@10", list(points)))
    assert e["n_conditions"] == 3 and set(e["points"]) == set(points)
    every = _spearman(pq, "overlap@10", [c for c in conds if c != "clean"])
    assert every is not None and every != pytest.approx(-0.5, abs=0.05)  # the old value, over all 5


def test_severity_curve_of_flip_counts_its_rise_as_the_drop(tmp_path):
    """flip@1 is higher-is-worse: its severity curve's drops are the rise of the flip rate (s − clean),
    positive as the ranking moves more, like the drops of overlap@10 (clean − s)."""
    d, conds = _folder(tmp_path)
    rep = evaluate_directory(d, None, EvaluationConfig(resamples=50, workers=1))
    want = _independent(conds)
    curve = rep.severity_curves["motion_blur"]
    for s in ("s1", "s3"):
        flip = want[f"img/motion_blur/{s}"]["flip@1"] - want["clean"]["flip@1"]
        overlap = want["clean"]["overlap@10"] - want[f"img/motion_blur/{s}"]["overlap@10"]
        assert curve["flip@1"].drops[s] == pytest.approx(flip, abs=1e-12)
        assert curve["overlap@10"].drops[s] == pytest.approx(overlap, abs=1e-12)
    assert curve["flip@1"].drops["s3"] > 0
    assert curve["flip@1"].label != "flat"  # the old sign made every rise look like no drop
