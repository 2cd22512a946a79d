"""Paired statistics: bootstrap (reproducibility, second code path, coverage), tests, Holm, classes."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import numpy as np
import pytest

from snapbench.evaluate import (
    QueryStat,
    bootstrap_counts,
    bootstrap_values,
    cliff_label,
    holm,
    mcnemar_exact,
    paired_analysis,
    percentile_ci,
    permutation_pvalues,
    rank_displacement,
    stability_classes,
    swap_matrix,
)


def _mean_stat(values, included=None) -> QueryStat:
    v = np.asarray(values, dtype=np.float64)
    inc = np.ones_like(v) if included is None else np.asarray(included, dtype=np.float64)
    return QueryStat(v * inc, inc)


# ------------------------------------------------------------------------------ bootstrap
def test_bootstrap_counts_shape_sums_and_seed():
    w = bootstrap_counts(37, 500, seed=3)
    assert w.shape == (500, 37)
    assert (w.sum(axis=1) == 37).all()
    np.testing.assert_array_equal(w, bootstrap_counts(37, 500, seed=3))
    assert not np.array_equal(w, bootstrap_counts(37, 500, seed=4))
    # the first rows do not depend on how many resamples were asked for
    np.testing.assert_array_equal(bootstrap_counts(37, 2000, seed=3)[:500], w)


def test_bootstrap_values_equal_explicit_resampling():
    """Second code path: rebuild each resample as an explicit list of query indices and average."""
    rng = np.random.default_rng(0)
    x = rng.random(25)
    inc = (rng.random(25) > 0.2).astype(float)
    st = QueryStat(x * inc, inc)
    w = bootstrap_counts(25, 200, seed=1)
    got = bootstrap_values([st], w)[:, 0]
    for b in range(200):
        idx = np.repeat(np.arange(25), w[b].astype(int))
        sel = idx[inc[idx] > 0]
        want = x[sel].mean() if sel.size else np.nan
        assert got[b] == pytest.approx(want, abs=1e-12) or (np.isnan(want) and np.isnan(got[b]))


def test_percentile_ci_is_numpy_quantile_and_drops_nan():
    s = np.arange(1001, dtype=float)
    lo, hi = percentile_ci(s, 0.9)
    assert (lo, hi) == (pytest.approx(50.0), pytest.approx(950.0))
    s2 = np.concatenate([s, [np.nan] * 10])
    assert percentile_ci(s2, 0.9) == (pytest.approx(50.0), pytest.approx(950.0))


def test_paired_results_reproducible_across_processes():
    code = r"""
import json, numpy as np
from snapbench.evaluate import QueryStat, paired_analysis
rng = np.random.default_rng(7)
a = (rng.random(80) < 0.6).astype(float); b = (rng.random(80) < 0.5).astype(float)
r = rng.random(80); r2 = r - rng.random(80) * 0.3
one = np.ones(80)
stats = {"clean": {"hit@1": QueryStat(a, one), "ndcg@5": QueryStat(r, one)},
         "img/x/s1": {"hit@1": QueryStat(b, one), "ndcg@5": QueryStat(r2, one)}}
print(json.dumps(paired_analysis(stats, resamples=2000, seed=11)))
"""
    outs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
            for _ in range(2)]
    assert outs[0] == outs[1]
    res = json.loads(outs[0])["img/x/s1"]
    assert res["hit@1"]["ci"][0] < res["hit@1"]["delta"] < res["hit@1"]["ci"][1]
    # and in this process, with PYTHONHASHSEED-independent derivation, the same numbers
    rng = np.random.default_rng(7)
    a = (rng.random(80) < 0.6).astype(float)
    b = (rng.random(80) < 0.5).astype(float)
    r = rng.random(80)
    r2 = r - rng.random(80) * 0.3
    one = np.ones(80)
    here = paired_analysis({"clean": {"hit@1": QueryStat(a, one), "ndcg@5": QueryStat(r, one)},
                            "img/x/s1": {"hit@1": QueryStat(b, one), "ndcg@5": QueryStat(r2, one)}},
                           resamples=2000, seed=11)
    assert json.loads(json.dumps(here)) == json.loads(outs[0])


def test_bootstrap_ci_coverage_near_nominal():
    """200 simulated paired datasets with a known mean difference: the 95% CI covers it ~95%."""
    rng = np.random.default_rng(2024)
    n, true_delta, covered = 120, -0.1, 0
    w = None
    for rep in range(200):
        base = rng.normal(0.6, 0.2, n)
        corrupted = base + true_delta + rng.normal(0, 0.25, n)  # E[corrupted - base] = true_delta
        stats = {"clean": {"m": _mean_stat(base)}, "c": {"m": _mean_stat(corrupted)}}
        if w is None or rep % 20 == 0:
            w = bootstrap_counts(n, 1000, seed=rep)
        lo, hi = paired_analysis(stats, counts=w, swaps=np.zeros((1, n)))["c"]["m"]["ci"]
        covered += lo <= true_delta <= hi
    assert 0.90 <= covered / 200 <= 0.99


# ------------------------------------------------------------------------------ tests
def test_mcnemar_exact_hand_values():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(1, 6) == pytest.approx(2 * (1 + 7) / 2**7)  # P[X<=1], X~Bin(7, .5) = 8/128
    assert mcnemar_exact(6, 1) == mcnemar_exact(1, 6)
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32)
    assert mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(0, 10) == pytest.approx(2 / 1024)


def test_permutation_pvalue_matches_exact_enumeration():
    rng = np.random.default_rng(5)
    n = 10
    clean = rng.random(n)
    other = clean - 0.15 + rng.normal(0, 0.1, n)
    d = other - clean
    obs = abs(d.mean())
    flips = np.array(list(itertools.product([1, -1], repeat=n)))
    exact = np.mean(np.abs((flips * d).mean(axis=1)) >= obs - 1e-12)
    sw = swap_matrix(n, 40000, seed=1)
    p = permutation_pvalues(_mean_stat(clean), [_mean_stat(other)], sw)[0]
    assert p == pytest.approx(exact, abs=0.006)


def test_permutation_pvalue_for_ratio_metric_matches_enumeration():
    """A reject-style ratio metric (Σa / Σ(a+b)): swapping per-query (num, den) pairs."""
    rng = np.random.default_rng(9)
    n = 9
    a0, b0 = (rng.random(n) < 0.5).astype(float), (rng.random(n) < 0.3).astype(float)
    a1, b1 = (rng.random(n) < 0.2).astype(float), (rng.random(n) < 0.6).astype(float)
    s0, s1 = QueryStat(a0, a0 + b0), QueryStat(a1, a1 + b1)

    def diff(swap):
        n0 = np.where(swap, s1.num, s0.num).sum()
        d0 = np.where(swap, s1.den, s0.den).sum()
        n1 = np.where(swap, s0.num, s1.num).sum()
        d1 = np.where(swap, s0.den, s1.den).sum()
        return n1 / d1 - n0 / d0 if d0 and d1 else np.nan

    obs = abs(diff(np.zeros(n, bool)))
    all_d = np.array([diff(np.array(s, bool)) for s in itertools.product([0, 1], repeat=n)])
    ok = ~np.isnan(all_d)
    exact = np.mean(np.abs(all_d[ok]) >= obs - 1e-12)
    p = permutation_pvalues(s0, [s1], swap_matrix(n, 40000, seed=2))[0]
    assert p == pytest.approx(exact, abs=0.008)


def test_holm_hand_transcription():
    # sorted: .005 (x4 = .02), .01 (x3 = .03), .03 (x2 = .06), .04 (x1 = .04 -> running max .06)
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, None, 0.01]) == [pytest.approx(0.5), None, pytest.approx(0.02)]
    assert holm([0.9, 0.8]) == [1.0, 1.0]  # .8 x 2 capped at 1; .9 x 1 < running max
    assert holm([0.6, 0.7, 0.8]) == pytest.approx([1.0, 1.0, 1.0])


def test_paired_analysis_uses_mcnemar_for_hit_and_holm():
    clean = np.array([1] * 10 + [0] * 10, float)
    worse = clean.copy()
    worse[:7] = 0  # 7 queries 1 -> 0, none 0 -> 1
    same = clean.copy()
    one = np.ones(20)
    res = paired_analysis(
        {"clean": {"hit@1": QueryStat(clean, one)}, "a": {"hit@1": QueryStat(worse, one)},
         "b": {"hit@1": QueryStat(same, one)}}, resamples=500, seed=0)
    assert res["a"]["hit@1"]["delta"] == pytest.approx(-7 / 20)
    assert res["a"]["hit@1"]["p_raw"] == pytest.approx(2 / 2**7)
    assert res["a"]["hit@1"]["p"] == pytest.approx(2 * 2 / 2**7)  # Holm, smallest of 2
    assert res["b"]["hit@1"]["p"] == 1.0 and res["b"]["hit@1"]["ci"] == [0.0, 0.0]


# ------------------------------------------------------------------------------ classes, curves
def test_stability_classes_hand_case():
    c0 = [1, 1, 0, 0, 1, 0]
    c1 = [1, 0, 0, 1, 0, 0]
    assert stability_classes(c0, c1) == {"stably_correct": 1, "drag": 2, "persistently_wrong": 2, "boost": 1, "n": 6}
    assert stability_classes(c0, c1, [1, 1, 1, 1, 0, 0])["n"] == 4


@pytest.mark.parametrize(
    "drops,label",
    [
        ((0.0, 0.01, 0.20), "cliff"),      # nothing until s3
        ((0.03, 0.06, 0.09), "gradual"),   # linear
        ((0.02, 0.05, 0.16), "cliff"),     # 0.11 > 2 * 0.05
        ((0.02, 0.06, 0.16), "gradual"),   # 0.10 = 2 * 0.05 ... not above 2 * 0.06
        ((0.0, 0.005, 0.008), "flat"),
        ((0.10, 0.0, 0.10), "gradual"),    # early max counts, not only s2
        ((-0.02, -0.01, 0.05), "cliff"),   # improvements before the last step
    ],
)
def test_cliff_label_rule(drops, label):
    assert cliff_label(drops) == label


def test_rank_displacement_hand_case():
    st = rank_displacement(np.array([1, 3, 2, np.nan, 5.0]), np.array([4, 3, 1, 2, np.inf]))
    np.testing.assert_array_equal(st.den, [1, 1, 1, 0, 0])
    assert st.value == pytest.approx((3 + 0 - 1) / 3)


# ------------------------------------------------------------------------------ which queries are resampled
def _zero_gt_case(n_zero: int, seed: int = 4):
    """Evaluations of 4 conditions on 23 queries with positives, plus ``n_zero`` zero-GT queries."""
    from snapbench.evaluate import Labels, evaluate_matrix

    rng = np.random.default_rng(seed)
    n, g = 23, 15
    gold = [[int(rng.integers(g))] for _ in range(n)] + [[] for _ in range(n_zero)]
    labels = Labels.from_lists(gold, g)
    conds = ["clean", "img/mosaic/s1", "txt/char_add", "joint/mosaic+char_add/s1"]
    base = rng.standard_normal((n, g))
    extra = np.random.default_rng(seed + 1)  # the zero-GT rows: their own stream
    evals = {}
    for k, c in enumerate(conds):
        s = base + (0.5 + 0.7 * k) * rng.standard_normal((n, g))
        s[np.arange(n), [q[0] for q in gold[:n]]] += 1.5
        s = np.vstack([s, extra.standard_normal((n_zero, g))])
        evals[c] = evaluate_matrix(s, labels, ["hit@1", "hit@3", "ndcg@5", "mrr"])
    return evals, labels


def test_zero_gt_queries_change_no_interval_or_test_of_a_ranking_metric():
    """The bootstrap and the permutation test draw only queries that count: a report with three
    zero-GT queries appended equals the report without them in every paired number."""
    from snapbench.evaluate import EvaluationConfig, evaluate_conditions

    cfg = EvaluationConfig(metrics="hit@1,hit@3,ndcg@5,mrr", resamples=500, seed=2, workers=1)
    a = evaluate_conditions(*_zero_gt_case(0), cfg).to_json()
    b = evaluate_conditions(*_zero_gt_case(3), cfg).to_json()
    assert (a["n_queries"], b["n_queries"], b["n_excluded_zero_gt"]) == (23, 26, 3)
    for key in ("conditions", "paired", "additivity", "additivity_summary", "rank_displacement"):
        _assert_same_numbers(a[key], b[key], key)  # sums over 23 vs 26 entries may differ in the last bit


def _assert_same_numbers(x, y, path: str) -> None:
    if isinstance(x, dict):
        assert list(x) == list(y), path
        for k in x:
            _assert_same_numbers(x[k], y[k], f"{path}.{k}")
    elif isinstance(x, list):
        assert len(x) == len(y), path
        for i, (u, v) in enumerate(zip(x, y)):
            _assert_same_numbers(u, v, f"{path}[{i}]")
    elif isinstance(x, float) and isinstance(y, float):
        assert x == pytest.approx(y, rel=1e-12, abs=1e-12), path
    else:
        assert x == y, path


def test_ranking_ci_resamples_only_the_counted_queries():
    """Second code path: resample the 23 counted queries by hand (numpy, counts of 23 draws), average
    hit@1 per resample and take numpy percentiles: the report's CI of Δhit@1.  Every bound is a
    multiple of 1/23 here (the resampled difference moves in steps of one query)."""
    from snapbench.evaluate import EvaluationConfig, evaluate_conditions

    evals, labels = _zero_gt_case(3)
    rep = evaluate_conditions(evals, labels, EvaluationConfig(metrics="hit@1", resamples=800, seed=6, workers=1))
    w = bootstrap_counts(23, 800, seed=6)
    hits = {c: evals[c].stats["hit@1"].num[:23] for c in evals}
    d = (w @ hits["img/mosaic/s1"] - w @ hits["clean"]) / 23
    lo, hi = np.quantile(d, [0.025, 0.975])
    assert rep.paired["img/mosaic/s1"]["hit@1"].ci == pytest.approx((lo, hi), abs=1e-12)
    for c in list(evals)[1:]:
        for bound in rep.paired[c]["hit@1"].ci:
            assert abs(bound * 23 - round(bound * 23)) < 1e-9, (c, bound)


def test_reject_metrics_keep_every_query():
    """Reject metrics count every query (a zero-GT query is a possible correct rejection): their
    resamples draw from all queries, as :func:`bootstrap_counts` over all of them."""
    from snapbench.evaluate import Labels, QueryResamples, counted_rows

    n_pos = np.array([2, 0, 1, 0, 3])
    assert counted_rows("reject_recall", n_pos).tolist() == [0, 1, 2, 3, 4]
    assert counted_rows("set_f1", n_pos).tolist() == [0, 2, 4]
    assert counted_rows("hit@1", n_pos).tolist() == [0, 2, 4]
    assert counted_rows("hit@1", n_pos, include_zero_gt=True).tolist() == [0, 1, 2, 3, 4]
    rs = QueryResamples(5, 50, seed=1)
    np.testing.assert_array_equal(rs.counts(5), bootstrap_counts(5, 50, seed=1))
    assert rs.rows(np.arange(5)) is None and rs.rows(np.array([0, 2])).tolist() == [0, 2]
    assert np.isnan(rs.values([QueryStat(np.zeros(5), np.zeros(5))], np.array([], dtype=int))).all()
    assert Labels.from_lists([[0], []], 2).n_pos.tolist() == [1, 0]


def _level_errors():
    from snapbench.app.compare import CompareOptions
    from snapbench.compare import CompareConfig
    from snapbench.compare.stats import row_intervals
    from snapbench.diagnose import wilson_interval
    from snapbench.evaluate import EvaluationConfig
    from snapbench.evaluate.intervals import bca_interval

    return {
        "ci": [lambda v: EvaluationConfig(ci=v), lambda v: percentile_ci(np.arange(5.0), v),
               lambda v: CompareOptions(ci=v).check(), lambda v: CompareConfig(ci=v).check(["a", "b"])],
        "level": [lambda v: bca_interval(np.zeros(4), np.ones(4), level=v), lambda v: row_intervals(np.ones((2, 3)), v),
                  lambda v: wilson_interval(1, 4, level=v)],
    }


@pytest.mark.parametrize("bad", [1.5, 0, 1, -0.2])
def test_every_ci_level_is_checked_in_one_wording(bad):
    from snapbench.core.errors import ConfigError

    for param, calls in _level_errors().items():
        for call in calls:
            with pytest.raises(ConfigError) as err:
                call(bad)
            assert err.value.param == param
            assert err.value.problem == f"must be in (0, 1), e.g. 0.95; got {float(bad)!r}"
