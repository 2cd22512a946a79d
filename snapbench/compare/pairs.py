"""Paired model-vs-model differences of drops: diff = ΔA − ΔB per condition and per group.

* **CI**: the percentile interval of ΔA* − ΔB* over the shared bootstrap resamples (queries
  resampled jointly for both models: both deltas of one resample come from the same queries).
* **Test** per condition, two-sided, null = the two models are exchangeable on each query:
  - 0/1 metrics (hit@k) with the same counted queries for every model and condition: the exact
    sign-flip test of :mod:`snapbench.compare.pairs` on d_q ∈ {-2..2} -- ``test = "mcnemar"`` when no
    query has |d_q| = 2 (then it *is* the exact McNemar test), else ``"exact_signflip"``; effect size
    = generalised Cohen's g.
  - every other metric (and every group): a paired permutation test that swaps the two models'
    per-query (num, den) on a random subset of queries -- for all conditions of the query at once,
    clean included -- with a seeded swap matrix (:func:`snapbench.evaluate.paired.swap_matrix`);
    for a mean metric this is the sign-flip test of d_q.  p = (1 + #{|diff*| >= |diff|}) / (1 + R).
    ``test = "permutation"``; effect size d_z = mean(d_q) / SD(d_q) (ddof 1) over the queries where
    d_q is defined, d_q from the per-query values num/den (for a group, d_q averaged over its
    conditions).
* **Families**: p_adj adjusts the conditions of one (mode, metric, model_a, model_b) that the mode
  reads together, and that pair's groups of them together as a second family
  (:mod:`snapbench.compare.stats`); a condition or group the mode cannot read keeps p_adj = p_raw.

Exact paired test of a difference of drops on a 0/1 metric (hit@k), and its effect size.

For models A and B on query q, with x = hit@k in {0, 1}, the per-query difference of drops is

    d_q = (x_A(c) - x_A(clean)) - (x_B(c) - x_B(clean))   in {-2, -1, 0, 1, 2},

and the observed statistic is T = Σ_q d_q (= n · (ΔA − ΔB) over the n counted queries).  Under the
null hypothesis that the two models are exchangeable on every query, swapping A and B on a query
flips the sign of d_q, each sign with probability 1/2, independently.  The exact null distribution
(all 2^n sign patterns) conditions on |d_q|: with n1 queries at |d| = 1 and n2 at |d| = 2,

    T = (2 K1 − n1) + 2 (2 K2 − n2),   K1 ~ Binomial(n1, 1/2),  K2 ~ Binomial(n2, 1/2) independent,

so the two-sided p-value P(|T| >= |t|) is a finite sum over K2 of binomial tails of K1 (the
convolution of the two distributions) -- exact, no Monte Carlo.  When n2 = 0 it is the exact McNemar
test on the n1 discordant queries (``scipy.stats.binomtest(n+, n1, 1/2)``, two-sided); both are
checked against ``binomtest`` and against enumeration of every sign pattern in the tests.

Effect size: Cohen's g generalised to weights, g = T / (2 Σ|d_q|) = (share of the discordant weight
in A's favour) − 1/2, in [−1/2, 1/2]; with n2 = 0 it is Cohen's (1988) g for McNemar, n+/(n+ + n−)
− 1/2 (0.05 small, 0.15 medium, 0.25 large).  0 when no query is discordant.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..evaluate.metrics import is_binary_metric
from .groups import group_means, read_columns
from .records import PairRecord
from .stats import MetricBlock, adjust_pvalues, pair_intervals

__all__ = ['pair_statistics', 'pair_records', 'discordance', 'signflip_exact_pvalues', 'cohens_g']

_REL_TOL, _ABS_TOL = 1e-9, 1e-12  # a permuted statistic equal to the observed one counts as extreme


@dataclass
class _PairStats:
    """One (mode, metric): per pair and column (conditions, then groups) the diff, its CI, the raw
    p-value, the effect size and the test's name."""

    pairs: list[tuple[int, int]]
    columns: list[str]
    diff: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    p_raw: np.ndarray
    effect: np.ndarray
    test: np.ndarray


def _model_pairs(n_models: int) -> list[tuple[int, int]]:
    """Every unordered pair (a, b), a < b, in input order."""
    return [(a, b) for a in range(n_models) for b in range(a + 1, n_models)]


def _exact_mask(block: MetricBlock) -> np.ndarray | None:
    """The counted-query mask when the metric is 0/1 on the same counted queries everywhere."""
    if not is_binary_metric(block.metric):
        return None
    inc = block.den[:, 0, 0]
    if not (np.isin(inc, (0.0, 1.0)).all() and (block.den == inc[:, None, None]).all()):
        return None
    return inc > 0 if np.isin(block.num[inc > 0], (0.0, 1.0)).all() else None


def _d_z(d: np.ndarray) -> np.ndarray:
    """mean / SD (ddof 1) along axis 0 over non-NaN entries; 0 when every d is 0, NaN if undefined."""
    ok = ~np.isnan(d)
    n = ok.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(ok, d, 0.0).sum(axis=0) / n
        var = (np.where(ok, d - mean, 0.0) ** 2).sum(axis=0) / (n - 1)
        out = mean / np.sqrt(var)
    out = np.where((n >= 1) & (mean == 0) & (var == 0), 0.0, out)
    return np.where(np.isfinite(out), out, np.nan)


def _effect_dz(block: MetricBlock, pairs: list[tuple[int, int]]) -> np.ndarray:
    """(P, K) d_z of the per-query differences of drops (a group: d_q averaged over its conditions)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        v = np.where(block.den > 0, block.num / block.den, np.nan)
    d = v[:, :, 1:] - v[:, :, :1]
    d = np.concatenate([d, group_means(d, block.groups)], axis=2)  # (Q, M, K)
    a, b = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    return _d_z(d[:, a] - d[:, b])


def _count_extreme(perm: np.ndarray, obs: np.ndarray) -> np.ndarray:
    """p = (1 + #{|perm| >= |obs|}) / (1 + #defined) along the last axis of ``perm``."""
    thr = np.abs(obs) * (1 - _REL_TOL) - _ABS_TOL
    defined = ~np.isnan(perm)
    with np.errstate(invalid="ignore"):
        extreme = np.count_nonzero((np.abs(perm) >= thr[..., None]) & defined, axis=-1)
    p = (1.0 + extreme) / (1.0 + np.count_nonzero(defined, axis=-1))
    return np.where(np.isnan(obs), np.nan, p)


def _count_shifted(obs: np.ndarray, dx: np.ndarray) -> np.ndarray:
    """:func:`_count_extreme` of perm = obs − 2 dx without forming perm: |obs − 2 dx| >= thr
    <=> dx <= (obs − thr) / 2 or dx >= (obs + thr) / 2 (thr > 0; thr <= 0 makes every swap extreme)."""
    thr = np.abs(obs) * (1 - _REL_TOL) - _ABS_TOL
    r = dx.shape[-1]
    with np.errstate(invalid="ignore"):
        extreme = (np.count_nonzero(dx <= ((obs - thr) / 2)[:, None], axis=-1)
                   + np.count_nonzero(dx >= ((obs + thr) / 2)[:, None], axis=-1))
    extreme = np.where(thr <= 0, r, extreme)
    return np.where(np.isnan(obs), np.nan, (1.0 + extreme) / (1.0 + r))


def _swapped_shift(block: MetricBlock, swaps: np.ndarray, groups_only: bool) -> list[tuple[slice, np.ndarray]] | None:
    """[(columns, X)] with X (M, columns, R) such that diff*(a, b) = diff(a, b) − 2 (X_a − X_b)
    under each swap row; None when the models' or conditions' counted queries differ (then
    :func:`_ratio_pvalues` applies).

    With one denominator vector for everything, a swap of A and B on query q moves Σ num_A(c) −
    Σ num_A(clean) by −(d_A,q − d_B,q), so every pair's permuted diffs come from one product
    ``swaps @ (num(c) − num(clean)) / Σden`` over all models; a group's X is the mean of its
    conditions' X (linear)."""
    den0 = block.den[:, 0, 0]
    if not ((block.den == den0[:, None, None]).all() and den0.sum() > 0):
        return None
    dnum = (block.num[:, :, 1:] - block.num[:, :, :1]) / den0.sum()  # (Q, M, C-1)
    q, m, n_cond = dnum.shape
    r = swaps.shape[0]
    groups = slice(n_cond, n_cond + len(block.groups))
    if groups_only:  # average each group's conditions per query first: G columns instead of C
        g = group_means(dnum, block.groups)
        return [(groups, (g.reshape(q, -1).T @ swaps.T).reshape(m, -1, r))]
    x = (dnum.reshape(q, -1).T @ swaps.T).reshape(m, n_cond, r)
    return [(slice(0, n_cond), x), (groups, group_means(x, block.groups, axis=1))]


def _ratio_pvalues(block: MetricBlock, swaps: np.ndarray, a: int, b: int, obs: np.ndarray) -> np.ndarray:
    """Permutation p-values of one pair when denominators differ (ratio metrics such as reject_*):
    the swapped sums of numerators and denominators give each permuted value directly."""
    q, m, c = block.num.shape
    s_n = swaps @ (block.num[:, a] - block.num[:, b])
    s_d = swaps @ (block.den[:, a] - block.den[:, b])
    n, d = block.num.sum(axis=0), block.den.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        va = (n[a] - s_n) / (d[a] - s_d)
        vb = (n[b] + s_n) / (d[b] + s_d)
    perm = (va[:, 1:] - va[:, :1]) - (vb[:, 1:] - vb[:, :1])
    perm[~np.isfinite(perm)] = np.nan
    perm = np.concatenate([perm, group_means(perm, block.groups)], axis=1)
    return _count_extreme(perm.T, obs)


def _exact_tests(block: MetricBlock, mask: np.ndarray, pairs: list[tuple[int, int]]):
    """(p, g, test names), each (P, C-1), of the exact test of every pair x condition."""
    x = (block.num[mask][:, :, 1:] - block.num[mask][:, :, :1]).astype(np.int8)  # (Q', M, C-1)
    a, b = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    n1, n2, t = discordance(x[:, a] - x[:, b])  # each (P, C-1)
    p = signflip_exact_pvalues(n1.ravel(), n2.ravel(), t.ravel()).reshape(n1.shape)
    return p, cohens_g(n1, n2, t), np.where(n2 == 0, "mcnemar", "exact_signflip")


def pair_statistics(block: MetricBlock, swaps: np.ndarray, ci: float, workers: int = 1) -> _PairStats:
    """Diffs, joint-bootstrap CIs, raw p-values and effect sizes of every pair of ``block``'s models."""
    pairs = _model_pairs(len(block.models))
    n_cond = len(block.conditions) - 1
    deltas = block.col_deltas
    diff = np.stack([deltas[a] - deltas[b] for a, b in pairs])
    effect = _effect_dz(block, pairs)
    p_raw = np.full(diff.shape, np.nan)
    test = np.full(diff.shape, "permutation", dtype=object)
    mask = _exact_mask(block)
    if mask is not None:
        p_raw[:, :n_cond], effect[:, :n_cond], test[:, :n_cond] = _exact_tests(block, mask, pairs)
    shift = _swapped_shift(block, swaps, groups_only=mask is not None)
    tested = slice(n_cond if mask is not None else 0, diff.shape[1])  # columns the permutation test covers

    def permutation_test(i: int, a: int, b: int) -> None:
        if shift is None:
            p_raw[i, tested] = _ratio_pvalues(block, swaps, a, b, diff[i])[tested]
            return
        for cols, x in shift:
            p_raw[i, cols] = _count_shifted(diff[i, cols], x[a] - x[b])

    lo, hi = pair_intervals(block.col_boot_deltas, pairs, ci, workers, permutation_test)
    return _PairStats(pairs, block.columns, diff, lo, hi, p_raw, effect, test)


def pair_records(block: MetricBlock, ps: _PairStats, correction: str) -> list[PairRecord]:
    """One record per pair x column; p_adj within (conditions) and within (groups) of each pair, over
    the columns the mode reads (:func:`~snapbench.compare.groups.read_columns`); a column it cannot
    read (the difference of two zero drops) keeps p_adj = p_raw."""
    n_cond = len(block.conditions) - 1
    read = read_columns(block.conditions[1:], block.groups, block.mode)
    out: list[PairRecord] = []
    for i, (a, b) in enumerate(ps.pairs):
        p_adj = ps.p_raw[i].copy()
        for family in (np.flatnonzero(read[:n_cond]), n_cond + np.flatnonzero(read[n_cond:])):
            p_adj[family] = adjust_pvalues(ps.p_raw[i, family], correction)
        for j, col in enumerate(ps.columns):
            out.append(PairRecord(
                block.mode, block.metric, col, block.models[a], block.models[b], float(ps.diff[i, j]),
                float(ps.ci_low[i, j]), float(ps.ci_high[i, j]), float(ps.p_raw[i, j]), float(p_adj[j]),
                float(ps.effect[i, j]), str(ps.test[i, j]),
            ))
    return out


def discordance(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n1, n2, t) per column of the integer per-query differences ``d`` (Q, K), values in {-2..2}."""
    d = np.asarray(d)
    a = np.abs(d)
    if (a > 2).any():
        raise ValueError("per-query differences of a 0/1 metric's drops must lie in -2..2")
    n1 = np.count_nonzero(a == 1, axis=0).astype(np.int64)
    n2 = np.count_nonzero(a == 2, axis=0).astype(np.int64)
    t = d.sum(axis=0, dtype=np.int64)
    return n1, n2, t


def signflip_exact_pvalues(n1, n2, t) -> np.ndarray:
    """Two-sided exact sign-flip p-values P(|T| >= |t|) for each (n1, n2, t) (see the module doc)."""
    from scipy.stats import binom

    n1 = np.atleast_1d(np.asarray(n1, dtype=np.int64))
    n2 = np.atleast_1d(np.asarray(n2, dtype=np.int64))
    t = np.abs(np.atleast_1d(np.asarray(t, dtype=np.int64)))
    if not (n1.shape == n2.shape == t.shape):
        raise ValueError("n1, n2 and t must have the same shape")
    if (n1 < 0).any() or (n2 < 0).any() or (t > n1 + 2 * n2).any():
        raise ValueError("need n1, n2 >= 0 and |t| <= n1 + 2 n2")
    out = np.ones(n1.shape, dtype=np.float64)
    test = np.flatnonzero(t > 0)  # t = 0: every pattern is at least as extreme, p = 1
    if test.size == 0:
        return out
    # one row per (test, k2): K2 = k2 shifts T by c = 4 k2 - 2 n2
    reps = n2[test] + 1
    owner = np.repeat(np.arange(test.size), reps)
    k2 = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    nn1, nn2, tt = n1[test][owner], n2[test][owner], t[test][owner]
    c = 4 * k2 - 2 * nn2
    # 2 K1 - n1 + c >= t  <=>  K1 >= ceil((t + n1 - c) / 2);   2 K1 - n1 + c <= -t  <=>  K1 <= floor((n1 - c - t) / 2)
    upper = binom.sf(-((-(tt + nn1 - c)) // 2) - 1, nn1, 0.5)
    lower = binom.cdf((nn1 - c - tt) // 2, nn1, 0.5)
    w = binom.pmf(k2, nn2, 0.5)
    p = np.bincount(owner, weights=w * (upper + lower), minlength=test.size)
    out[test] = np.minimum(p, 1.0)
    return out


def cohens_g(n1, n2, t) -> np.ndarray:
    """Generalised Cohen's g = t / (2 (n1 + 2 n2)) (0 when nothing is discordant)."""
    n1 = np.asarray(n1, dtype=np.float64)
    w = n1 + 2.0 * np.asarray(n2, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)
    return np.divide(t, 2.0 * w, out=np.zeros(np.broadcast(t, w).shape), where=w > 0)
