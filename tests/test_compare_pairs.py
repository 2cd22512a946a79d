"""Paired model differences against loop-based references: the bootstrap rebuilt resample by
resample, the permutation test swap by swap, the exact test by convolving binomials, the
adjustment by statsmodels, the effect sizes by their formulas."""

from __future__ import annotations

import numpy as np
import pytest
from compare_helpers import CONDITIONS, RESAMPLES, SEED, Q, evaluated, model_values, per_query
from scipy.stats import binom, rankdata

from snapbench.compare import CompareConfig, ModelValues, compare_models
from snapbench.compare.ranking import tiers
from snapbench.evaluate import bootstrap_counts, swap_matrix

multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests

CFG = CompareConfig(resamples=RESAMPLES, seed=SEED, workers=2)
CORRUPTED = CONDITIONS[1:]


@pytest.fixture(scope="module")
def case():
    qids, runs = evaluated(3)
    vals = {name: per_query(ev, ["hit@1", "ndcg@5", "mrr"]) for name, ev, _ in runs}
    return runs, vals, compare_models(model_values(qids, runs), CFG).records()


def _rows(records, **key):
    return [r for r in records if all(r[k] == v for k, v in key.items())]


def _diffs(va, vb, rows=slice(None)):
    """ΔA − ΔB per corrupted condition, each value = mean over the counted queries of ``rows``."""
    def val(v, c):
        x = v[c][rows]
        return np.nanmean(x)
    return np.array([(val(va, c) - val(va, "clean")) - (val(vb, c) - val(vb, "clean")) for c in CORRUPTED])


def test_diff_is_the_difference_of_the_runs_own_deltas(case):
    runs, _, rec = case
    reports = {name: rep for name, _, rep in runs}
    for r in rec["pairs"]:
        if r["condition"].startswith("group:"):
            continue
        pa, pb = reports[r["model_a"]]["paired"], reports[r["model_b"]]["paired"]
        want = pa[r["condition"]][r["metric"]]["delta"] - pb[r["condition"]][r["metric"]]["delta"]
        assert r["diff"] == pytest.approx(want, abs=1e-15)
    inside = [r["ci_low"] <= r["diff"] <= r["ci_high"] for r in rec["pairs"]]
    assert np.mean(inside) > 0.97


@pytest.mark.parametrize("metric", ["ndcg@5", "hit@1"])
def test_bootstrap_ci_equals_a_loop_over_resamples(case, metric):
    """Only the queries that count (those with a positive) are resampled, with the draw of their
    number: the run's own resampling."""
    _, vals, rec = case
    a, b = "model0", "model2"
    counted = np.flatnonzero(~np.isnan(vals[a]["clean"][metric]))
    assert 0 < counted.size < Q  # the helper's data set has zero-GT queries
    counts = bootstrap_counts(counted.size, RESAMPLES, SEED)
    va, vb = {c: vals[a][c][metric] for c in CONDITIONS}, {c: vals[b][c][metric] for c in CONDITIONS}
    boot = np.array([_diffs(va, vb, np.repeat(counted, counts[i].astype(int))) for i in range(RESAMPLES)])
    boot = np.concatenate([boot, boot.mean(axis=1, keepdims=True)], axis=1)
    lo, hi = np.quantile(boot, [0.025, 0.975], axis=0)
    for j, c in enumerate(CORRUPTED + ["group:all"]):
        (r,) = _rows(rec["pairs"], model_a=a, model_b=b, metric=metric, condition=c)
        assert (r["ci_low"], r["ci_high"]) == pytest.approx((lo[j], hi[j]), abs=1e-12)


@pytest.mark.parametrize("metric", ["ndcg@5", "hit@1"])
def test_permutation_p_equals_a_loop_over_swaps(case, metric):
    """Every column for ndcg; for hit@1 the groups (its conditions have the exact test).  Only the
    counted queries are swapped, with the swap draw of their number."""
    _, vals, rec = case
    a, b = "model1", "model2"
    counted = np.flatnonzero(~np.isnan(vals[a]["clean"][metric]))
    swaps = swap_matrix(counted.size, RESAMPLES, SEED, key="compare")
    va, vb = {c: vals[a][c][metric] for c in CONDITIONS}, {c: vals[b][c][metric] for c in CONDITIONS}
    obs = _diffs(va, vb)
    obs = np.append(obs, obs.mean())
    extreme = np.zeros(obs.size)
    for row in swaps.astype(bool):
        s = np.zeros(Q, dtype=bool)
        s[counted] = row
        sa = {c: np.where(s, vb[c], va[c]) for c in CONDITIONS}
        sb = {c: np.where(s, va[c], vb[c]) for c in CONDITIONS}
        d = _diffs(sa, sb)
        d = np.append(d, d.mean())
        extreme += np.abs(d) >= np.abs(obs) * (1 - 1e-9) - 1e-12
    want = (1 + extreme) / (1 + RESAMPLES)
    for j, c in enumerate(CORRUPTED + ["group:all"]):
        if metric == "hit@1" and j < len(CORRUPTED):
            continue
        (r,) = _rows(rec["pairs"], model_a=a, model_b=b, metric=metric, condition=c)
        assert r["test"] == "permutation"
        assert r["p_raw"] == pytest.approx(want[j], abs=1e-15)


def _exact_by_convolution(d) -> float:
    """Two-sided P(|T| >= |t|) with T = Σ signs · d from the pmfs of the ±1 and ±2 parts, convolved."""
    n1, n2 = int(np.sum(np.abs(d) == 1)), int(np.sum(np.abs(d) == 2))
    p1 = binom.pmf(np.arange(n1 + 1), n1, 0.5)   # T1 = 2 K1 - n1, support step 2
    p2 = binom.pmf(np.arange(n2 + 1), n2, 0.5)   # T2 = 4 K2 - 2 n2, support step 4
    grid1 = np.zeros(2 * n1 + 1)
    grid1[::2] = p1                               # index i <-> T1 = i - n1
    grid2 = np.zeros(4 * n2 + 1)
    grid2[::4] = p2                               # index i <-> T2 = i - 2 n2
    pmf = np.convolve(grid1, grid2)               # index i <-> T = i - n1 - 2 n2
    t = np.arange(pmf.size) - n1 - 2 * n2
    return float(pmf[np.abs(t) >= abs(int(np.sum(d)))].sum())


def test_exact_test_and_effect_on_hits(case):
    _, vals, rec = case
    for a, b in [("model0", "model1"), ("model0", "model2"), ("model1", "model2")]:
        for c in CORRUPTED:
            xa = vals[a][c]["hit@1"] - vals[a]["clean"]["hit@1"]
            xb = vals[b][c]["hit@1"] - vals[b]["clean"]["hit@1"]
            d = (xa - xb)[~np.isnan(xa)]
            (r,) = _rows(rec["pairs"], model_a=a, model_b=b, metric="hit@1", condition=c)
            assert r["test"] == ("mcnemar" if not np.any(np.abs(d) == 2) else "exact_signflip")
            assert r["p_raw"] == pytest.approx(_exact_by_convolution(d), rel=1e-9)
            w = np.abs(d).sum()
            assert r["effect_size"] == pytest.approx(d.sum() / (2 * w) if w else 0.0)
    assert {r["test"] for r in rec["pairs"] if r["metric"] == "hit@1"} >= {"mcnemar", "permutation"}


def test_effect_size_d_z(case):
    _, vals, rec = case
    a, b = "model0", "model1"
    ds = []
    for c in CORRUPTED:
        d = (vals[a][c]["mrr"] - vals[a]["clean"]["mrr"]) - (vals[b][c]["mrr"] - vals[b]["clean"]["mrr"])
        ds.append(d)
        (r,) = _rows(rec["pairs"], model_a=a, model_b=b, metric="mrr", condition=c)
        d = d[~np.isnan(d)]
        assert r["effect_size"] == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-10)
    dbar = np.mean(ds, axis=0)
    dbar = dbar[~np.isnan(dbar)]
    (r,) = _rows(rec["pairs"], model_a=a, model_b=b, metric="mrr", condition="group:all")
    assert r["effect_size"] == pytest.approx(dbar.mean() / dbar.std(ddof=1), rel=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("correction,sm", [("holm", "holm"), ("bh", "fdr_bh")])
def test_p_adj_equals_statsmodels_family_by_family(correction, sm):
    qids, runs = evaluated(3)
    rec = compare_models(model_values(qids, runs), CompareConfig(resamples=300, seed=1, correction=correction)).records()
    fams = {}
    for r in rec["pairs"]:
        kind = "group" if r["condition"].startswith("group:") else "condition"
        fams.setdefault((r["mode"], r["metric"], r["model_a"], r["model_b"], kind), []).append(r)
    assert len(fams) == 5 * 3 * 2
    for fam in fams.values():
        raw = np.array([r["p_raw"] for r in fam])
        np.testing.assert_allclose([r["p_adj"] for r in fam], multipletests(raw, method=sm)[1], rtol=1e-12)


def test_ratio_metric_permutation_swaps_num_and_den():
    """reject_precision = Σa / Σ(a + b): swapping models on a query moves both sums."""
    qids, runs = evaluated(2, metrics=["hit@1", "reject_precision"], set_threshold=2.2)
    models = [ModelValues.from_stats(name, qids, {"M": {c: ev.stats for c, ev in evals.items()}})
              for name, evals, _ in runs]
    rec = compare_models(models, CFG).records()
    st = [{c: ev.stats["reject_precision"] for c, ev in evals.items()} for _, evals, _ in runs]

    def diff(num, den):  # num/den: [model][condition] -> per-query arrays
        with np.errstate(invalid="ignore", divide="ignore"):
            v = [{c: num[m][c].sum() / den[m][c].sum() for c in CONDITIONS} for m in range(2)]
        return np.array([(v[0][c] - v[0]["clean"]) - (v[1][c] - v[1]["clean"]) for c in CORRUPTED])

    num = [{c: s[c].num for c in CONDITIONS} for s in st]
    den = [{c: s[c].den for c in CONDITIONS} for s in st]
    obs = diff(num, den)
    extreme, defined = np.zeros(obs.size), np.zeros(obs.size)
    for s in swap_matrix(Q, RESAMPLES, SEED, key="compare").astype(bool):
        n2 = [{c: np.where(s, num[1 - m][c], num[m][c]) for c in CONDITIONS} for m in range(2)]
        d2 = [{c: np.where(s, den[1 - m][c], den[m][c]) for c in CONDITIONS} for m in range(2)]
        d = diff(n2, d2)
        ok = np.isfinite(d)
        defined += ok
        extreme += ok & (np.abs(np.where(ok, d, 0)) >= np.abs(obs) * (1 - 1e-9) - 1e-12)
    for j, c in enumerate(CORRUPTED):
        (r,) = _rows(rec["pairs"], metric="reject_precision", condition=c)
        if np.isnan(obs[j]):
            assert np.isnan(r["p_raw"])
        else:
            assert r["diff"] == pytest.approx(obs[j], abs=1e-15)
            assert r["p_raw"] == pytest.approx((1 + extreme[j]) / (1 + defined[j]), abs=1e-15)


def test_ranking_intervals_from_a_loop_and_tiers(case):
    _, vals, rec = case
    counted = np.flatnonzero(~np.isnan(vals["model0"]["clean"]["ndcg@5"]))
    counts = bootstrap_counts(counted.size, RESAMPLES, SEED)
    names = ["model0", "model1", "model2"]

    def score(v, rows):
        return np.mean([np.nanmean(v[c]["ndcg@5"][rows]) - np.nanmean(v["clean"]["ndcg@5"][rows]) for c in CORRUPTED])

    boot = np.array([[score(vals[n], np.repeat(counted, counts[i].astype(int))) for n in names]
                     for i in range(RESAMPLES)])
    ranks = rankdata(-boot, axis=1)
    point = rankdata(-np.array([score(vals[n], slice(None)) for n in names]))
    for k, n in enumerate(names):
        (r,) = _rows(rec["ranking"], model=n, metric="ndcg@5")
        assert r["rank"] == point[k]
        assert r["rank_low"] == np.quantile(ranks[:, k], 0.025, method="lower")
        assert r["rank_high"] == np.quantile(ranks[:, k], 0.975, method="higher")


def test_tiers_rule():
    apart = np.zeros((4, 4), dtype=bool)
    # scores: m2 > m0 > m3 > m1; m0 not apart from m2 (tier 1); m3 apart from m2 -> opens tier 2;
    # m1 not apart from m3 -> tier 2, although it is apart from m2
    for i, j in [(2, 3), (2, 1)]:
        apart[i, j] = apart[j, i] = True
    assert tiers([0.5, 0.1, 0.6, 0.3], apart).tolist() == [1, 2, 1, 2]
    assert tiers([0.5, 0.1, 0.6, 0.3], np.zeros((4, 4), bool)).tolist() == [1, 1, 1, 1]


def test_identical_models_share_a_tier_and_separated_ones_do_not():
    qids, runs = evaluated(3)
    models = model_values(qids, runs, metrics=["ndcg@5"])
    twin = ModelValues("twin", models[0].query_ids, models[0].stats)
    rec = compare_models([models[0], twin, models[2]], CFG).records()
    (p,) = _rows(rec["pairs"], model_a="model0", model_b="twin", condition="group:all")
    assert p["diff"] == 0 and p["ci_low"] == p["ci_high"] == 0 and p["p_raw"] == 1
    tier = {r["model"]: r["group"] for r in rec["ranking"]}
    assert tier["model0"] == tier["twin"]
    (sep,) = _rows(rec["pairs"], model_a="model0", model_b="model2", condition="group:all")
    assert sep["p_adj"] < 0.05 and sep["ci_low"] > 0  # model2 is far more fragile in this fixture
    assert tier["model2"] != tier["model0"]


def test_additivity_pair_diff_and_ci_from_a_loop(case):
    runs, vals, rec = case
    reports = {name: rep for name, _, rep in runs}
    a, b, m = "model0", "model2", "ndcg@5"
    joints = ["joint/compression+char_add/s1", "joint/compression+char_add/s2"]
    for j in joints:
        (r,) = _rows(rec["additivity_pairs"], model_a=a, model_b=b, metric=m, joint=j)
        want = reports[a]["additivity"][j][m]["delta"] - reports[b]["additivity"][j][m]["delta"]
        assert r["diff"] == pytest.approx(want, abs=1e-15)
    counted = np.flatnonzero(~np.isnan(vals[a]["clean"][m]))
    counts = bootstrap_counts(counted.size, RESAMPLES, SEED)

    def delta(v, rows, j):  # δ = R(i) + R(t) − R(J) − R(clean)
        img = "img/compression/s" + j[-1]
        return sum(np.nanmean(v[c][m][rows]) * s for c, s in ((img, 1), ("txt/char_add", 1), (j, -1), ("clean", -1)))

    boot = []
    for i in range(RESAMPLES):
        rows = np.repeat(counted, counts[i].astype(int))
        d = [delta(vals[a], rows, j) - delta(vals[b], rows, j) for j in joints]
        boot.append(d + [np.mean(d)])
    lo, hi = np.quantile(np.array(boot), [0.025, 0.975], axis=0)
    for k, j in enumerate(joints + ["mean"]):
        (r,) = _rows(rec["additivity_pairs"], model_a=a, model_b=b, metric=m, joint=j)
        assert (r["ci_low"], r["ci_high"]) == pytest.approx((lo[k], hi[k]), abs=1e-12)


def test_additivity_pair_ci_with_undefined_resamples():
    """reject_precision is 0/0 in some resamples: those stay out of their own δ only."""
    qids, runs = evaluated(2, metrics=["hit@1", "reject_precision"], set_threshold=2.2)
    models = [ModelValues.from_stats(name, qids, {"M": {c: ev.stats for c, ev in evals.items()}})
              for name, evals, _ in runs]
    rec = compare_models(models, CFG).records()
    st = [{c: ev.stats["reject_precision"] for c, ev in evals.items()} for _, evals, _ in runs]
    counts = bootstrap_counts(Q, RESAMPLES, SEED)
    joints = ["joint/compression+char_add/s1", "joint/compression+char_add/s2"]

    def delta(m, w, j):
        with np.errstate(invalid="ignore", divide="ignore"):
            v = {c: (w @ st[m][c].num) / (w @ st[m][c].den) for c in CONDITIONS}
        return v["img/compression/s" + j[-1]] + v["txt/char_add"] - v[j] - v["clean"]

    boot = np.array([[delta(0, w, j) - delta(1, w, j) for j in joints] for w in counts])
    boot = np.concatenate([boot, boot.mean(axis=1, keepdims=True)], axis=1)
    assert np.isnan(boot).any()
    for k, j in enumerate(joints + ["mean"]):
        (r,) = _rows(rec["additivity_pairs"], metric="reject_precision", joint=j)
        col = boot[:, k][~np.isnan(boot[:, k])]
        assert (r["ci_low"], r["ci_high"]) == pytest.approx(tuple(np.quantile(col, [0.025, 0.975])), abs=1e-12)
