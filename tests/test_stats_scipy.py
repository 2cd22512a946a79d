"""The paired statistics against scipy.stats (binomtest, permutation_test, bootstrap) and textbook formulas."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from snapbench.evaluate.intervals import bca_interval
from snapbench.evaluate.metrics import QueryStat
from snapbench.evaluate.paired import (
    bootstrap_counts,
    bootstrap_values,
    mcnemar_exact,
    percentile_ci,
    permutation_pvalues,
    swap_matrix,
)


def test_mcnemar_equals_binomtest_and_the_exact_integer_formula():
    for b in range(40):
        for c in range(40):
            p = mcnemar_exact(b, c)
            if b + c == 0:
                assert p == 1.0
                continue
            ref = stats.binomtest(b, b + c, 0.5).pvalue
            assert abs(p - ref) <= 1e-12, (b, c)
            # literal transcription with exact integers (independent of scipy)
            n = b + c
            lit = min(1.0, 2 * sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n)
            assert abs(p - lit) <= 1e-12, (b, c)
    for b, c in [(0, 1000), (480, 530), (3, 2500)]:
        assert abs(mcnemar_exact(b, c) - stats.binomtest(b, b + c, 0.5).pvalue) <= 1e-12
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 3)


def _all_swaps(n: int) -> np.ndarray:
    return np.array(list(itertools.product((0.0, 1.0), repeat=n)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sign_flip_test_equals_scipy_exact_enumeration(seed):
    rng = np.random.default_rng(seed)
    n = 11
    x0 = rng.random(n).round(2)
    x1 = (x0 - rng.normal(0.08, 0.1, n)).round(2)
    ones = np.ones(n)
    swaps = _all_swaps(n)
    ours = permutation_pvalues(QueryStat(x0, ones), [QueryStat(x1, ones)], swaps)[0]
    ref = stats.permutation_test(
        (x0, x1), lambda a, b, axis=-1: np.mean(b, axis=axis) - np.mean(a, axis=axis),
        permutation_type="samples", vectorized=True, n_resamples=np.inf, alternative="two-sided",
    )
    # ours is (1 + E) / (1 + 2^n) over all 2^n patterns (identity included in E); scipy's exact p is E / 2^n
    extreme = round(ours * (1 + 2**n)) - 1
    assert extreme / 2**n == pytest.approx(ref.pvalue, abs=1e-12)


def test_ratio_metric_permutation_equals_scipy_exact_enumeration():
    # a ratio metric whose denominators differ between conditions (e.g. recall over included queries)
    rng = np.random.default_rng(5)
    n = 10
    num0, num1 = rng.integers(0, 4, n).astype(float), rng.integers(0, 3, n).astype(float)
    den0, den1 = rng.integers(1, 5, n).astype(float), rng.integers(1, 5, n).astype(float)
    num, den = np.concatenate([num0, num1]), np.concatenate([den0, den1])

    def statistic(i0, i1):  # indices into the stacked arrays: swapping pairs swaps (num, den)
        i0, i1 = i0.astype(int), i1.astype(int)
        return num[i1].sum() / den[i1].sum() - num[i0].sum() / den[i0].sum()

    ref = stats.permutation_test(
        (np.arange(n, dtype=float), np.arange(n, 2 * n, dtype=float)), statistic,
        permutation_type="samples", n_resamples=np.inf, alternative="two-sided",
    )
    ours = permutation_pvalues(QueryStat(num0, den0), [QueryStat(num1, den1)], _all_swaps(n))[0]
    extreme = round(ours * (1 + 2**n)) - 1
    # scipy's two-sided p is 2 min(P<=, P>=); the swap distribution of a ratio is not symmetric, so
    # compare with the |Δ*| >= |Δ| count scipy's null distribution gives
    null = ref.null_distribution
    obs = statistic(np.arange(n, dtype=float), np.arange(n, 2 * n, dtype=float))
    count = np.count_nonzero(np.abs(null) >= abs(obs) * (1 - 1e-9) - 1e-12)
    assert extreme == count


def test_sign_flip_monte_carlo_agrees_with_scipy():
    rng = np.random.default_rng(11)
    n = 300
    x0 = (rng.random(n) < 0.6).astype(float)
    x1 = np.where(rng.random(n) < 0.15, 1 - x0, x0)  # ~15 % of queries change
    x1[:6] = 0  # a small drop
    ones = np.ones(n)
    r = 20_000
    ours = permutation_pvalues(QueryStat(x0, ones), [QueryStat(x1, ones)], swap_matrix(n, r, seed=3))[0]
    ref = stats.permutation_test(
        (x0, x1), lambda a, b, axis=-1: np.mean(b, axis=axis) - np.mean(a, axis=axis),
        permutation_type="samples", vectorized=True, n_resamples=r, alternative="two-sided",
        random_state=np.random.default_rng(4),
    ).pvalue
    tol = 5 * math.sqrt(2 * ref * (1 - ref) / r) + 2e-3
    assert abs(ours - ref) < tol, (ours, ref)


def _paired_data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    x0 = (rng.random(n) < 0.62).astype(float)
    x1 = np.where(rng.random(n) < 0.25, (rng.random(n) < 0.45).astype(float), x0)
    return x0, x1


def test_our_percentile_bootstrap_agrees_with_scipy_percentile():
    x0, x1 = _paired_data()
    n, b = x0.size, 5000
    ones = np.ones(n)
    boot = bootstrap_values([QueryStat(x0, ones), QueryStat(x1, ones)], bootstrap_counts(n, b, seed=1))
    lo, hi = percentile_ci(boot[:, 1] - boot[:, 0], 0.95)
    ref = bca_interval(x0, x1, method="percentile", resamples=b, seed=2)
    se = ref.standard_error
    assert se > 0
    assert abs(lo - ref.low) < 0.25 * se and abs(hi - ref.high) < 0.25 * se, (lo, hi, ref)
    # and scipy's own percentile interval called directly (not through our wrapper)
    direct = stats.bootstrap(
        (x0, x1), lambda a, b, axis=-1: b.mean(axis=axis) - a.mean(axis=axis), paired=True,
        vectorized=True, n_resamples=b, method="percentile", random_state=np.random.default_rng(9),
    ).confidence_interval
    assert abs(lo - direct.low) < 0.25 * se and abs(hi - direct.high) < 0.25 * se


def _norm_ppf(p):
    return stats.norm.ppf(p)


def test_bca_matches_a_literal_efron_bca():
    # skewed per-query values (rank displacement-like) where BCa and percentile differ
    rng = np.random.default_rng(7)
    n = 60
    x0 = rng.exponential(1.0, n)
    x1 = x0 + rng.exponential(2.0, n) ** 1.5
    b = 20_000
    res = bca_interval(x0, x1, resamples=b, seed=0)
    d = x1 - x0
    theta = d.mean()
    assert res.delta == pytest.approx(theta)
    # Efron (1987): z0 from the share of resamples below theta, acceleration from the jackknife
    idx = np.random.default_rng(123).integers(0, n, size=(b, n))
    th = d[idx].mean(axis=1)
    z0 = _norm_ppf(np.mean(th < theta))
    jack = (d.sum() - d) / (n - 1)
    u = jack.mean() - jack
    a = (u**3).sum() / (6 * ((u**2).sum()) ** 1.5)
    zs = _norm_ppf([0.025, 0.975])
    alphas = stats.norm.cdf(z0 + (z0 + zs) / (1 - a * (z0 + zs)))
    lit_lo, lit_hi = np.quantile(th, alphas)
    se = th.std()
    assert abs(res.low - lit_lo) < 0.15 * se and abs(res.high - lit_hi) < 0.15 * se, (res, lit_lo, lit_hi)
    # the skew moves BCa away from the percentile interval (what it is for)
    pct = np.quantile(th, [0.025, 0.975])
    assert abs(lit_lo - pct[0]) > 0.05 * se


def test_bca_is_seeded_and_handles_degenerate_and_bad_input():
    x0, x1 = _paired_data(120, seed=3)
    a = bca_interval(x0, x1, resamples=999, seed=5)
    assert a == bca_interval(x0, x1, resamples=999, seed=5)
    assert a != bca_interval(x0, x1, resamples=999, seed=6)
    assert a.low <= a.delta <= a.high
    same = bca_interval(x0, x0, resamples=99)
    assert same.ci == [0.0, 0.0]
    med = bca_interval(x0, x1, metric_fn=np.median, resamples=199, seed=1)
    assert med.delta == float(np.median(x1)) - float(np.median(x0))
    with pytest.raises(ValueError, match="same length"):
        bca_interval(x0, x1[:-1])
    with pytest.raises(ValueError, match="finite"):
        bca_interval(np.array([0.0, np.nan]), np.array([1.0, 0.0]))
