"""Ranking with uncertainty: ranks under resampling, rank intervals, tiers of models not told apart.

* **Score** of a model = its robustness: the mean delta over all corrupted conditions the mode reads (the
  ``group:all`` delta, value − clean averaged over conditions, times the metric's sign
  (:func:`snapbench.evaluate.metrics.metric_sign`: −1 for flip@k, where higher is worse, so its rise is
  its drop); higher = smaller drop = better).  The caller passes the signed scores.
* **rank** = the model's rank by the observed score (1 = best; ties share the average rank).
* **rank_low, rank_high**: the model's rank in each bootstrap resample (the shared resamples, so all
  models are ranked on the same queries each time); the interval is the (1−level)/2 and
  1−(1−level)/2 quantiles of those ranks (numpy "lower" and "higher" quantiles, so both ends are ranks
  that occurred).  Resamples where a score is undefined are left out.
* **group** (tier, 1 = best): two models are *told apart* when the paired test of their
  ``group:all`` diff, adjusted over all model pairs of the (mode, metric) with the chosen correction,
  has p_adj < 1 − level **and** the joint-bootstrap CI of that diff excludes 0 (:func:`told_apart`).
  Walking the models from the best score down, a model joins the current tier when it is not told
  apart from the tier's first (best) model, and otherwise opens the next tier.  So every model of a tier is statistically
  indistinguishable from the tier's leader; a tier number says "not separable from these", not a
  strict order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from .records import RankingRecord
from .stats import adjust_pvalues, alpha_of

__all__ = ["ranks", "rank_intervals", "tiers", "told_apart", "ranking_records"]


def ranks(scores: np.ndarray) -> np.ndarray:
    """Ranks along the last axis, 1 = highest score, ties averaged."""
    from scipy.stats import rankdata

    return rankdata(-np.asarray(scores, dtype=np.float64), axis=-1, method="average")


def rank_intervals(boot_scores: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Per model (columns of ``boot_scores`` (B, M)): the rank interval over the resamples."""
    b = np.asarray(boot_scores, dtype=np.float64)
    b = b[~np.isnan(b).any(axis=1)]
    if b.shape[0] == 0:
        nan = np.full(b.shape[1], np.nan)
        return nan, nan.copy()
    r = ranks(b)
    a = (1.0 - level) / 2.0
    return np.quantile(r, a, axis=0, method="lower"), np.quantile(r, 1.0 - a, axis=0, method="higher")


def tiers(scores: Sequence[float], apart: np.ndarray) -> np.ndarray:
    """Tier (1 = best) of each model from its score and the symmetric (M, M) bool matrix ``apart``
    (True = the two models are told apart); see the module docstring."""
    s = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-np.where(np.isnan(s), -np.inf, s), kind="stable")
    out = np.zeros(s.size, dtype=np.int64)
    tier, leader = 0, None
    for m in order:
        if leader is None or apart[leader, m]:
            tier, leader = tier + 1, m
        out[m] = tier
    return out


def told_apart(p_adj: float | None, ci: Sequence[float | None], level: float) -> bool | None:
    """The one verdict rule of a comparison (its tiers, and every table and sentence that calls a
    difference real): ``True`` when the adjusted p-value is below 1 − ``level`` **and** the CI
    excludes 0; ``False`` when not; ``None`` when neither a p-value nor a CI is defined (``None`` or
    NaN)."""
    lo, hi = (None if x is None or not math.isfinite(x) else float(x) for x in ci)
    p = None if p_adj is None or not math.isfinite(p_adj) else float(p_adj)
    sure = None if lo is None or hi is None else lo > 0 or hi < 0
    if sure is None and p is None:
        return None
    return bool(sure) and p is not None and p < alpha_of(level)


def ranking_records(
    mode: str,
    metric: str,
    models: Sequence[str],
    scores: np.ndarray,
    boot_scores: np.ndarray,
    pair_tests: Mapping[tuple[int, int], tuple[float, float, float]],
    *,
    level: float,
    correction: str,
) -> list[RankingRecord]:
    """Records of one (mode, metric).  ``pair_tests[(a, b)] = (p_raw, ci_low, ci_high)`` of the
    ``group:all`` diff of each pair (a < b)."""
    n = len(models)
    keys = list(pair_tests)
    p_adj = adjust_pvalues([pair_tests[k][0] for k in keys], correction)
    apart = np.zeros((n, n), dtype=bool)
    for (a, b), p in zip(keys, p_adj):
        apart[a, b] = apart[b, a] = bool(told_apart(p, pair_tests[(a, b)][1:], level))
    r = ranks(scores)
    lo_r, hi_r = rank_intervals(boot_scores, level)
    t = tiers(scores, apart)
    return [RankingRecord(mode, metric, models[m], float(r[m]), float(lo_r[m]), float(hi_r[m]), int(t[m]))
            for m in range(n)]
