"""Bias-corrected and accelerated (BCa) bootstrap intervals for one condition, via scipy.

The full report uses the fast vectorised *percentile* bootstrap of :mod:`snapbench.evaluate.paired`
(one resample-count matrix shared by every condition and metric, two matrix products).  That is the
right tool for hundreds of condition x metric cells.  For a single headline number -- one condition's
ΔR@1 in a paper table, say -- a BCa interval corrects the percentile interval for bias and skew of
the bootstrap distribution (Efron 1987), which matters for small query sets and for metrics near 0
or 1.  It needs a jackknife (n extra evaluations of the statistic) and is computed here with
:func:`scipy.stats.bootstrap`, the maintained implementation, rather than re-derived.

Pairing: queries are resampled jointly (``paired=True``), so the interval is for
``metric_fn(cond) - metric_fn(clean)`` on the same resampled queries, as in the report.  The
resampling generator comes from :func:`snapbench.core.seeding.derive_generator` keyed by
(seed, key, n), so the interval is identical in any process.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..core.defaults import DEFAULT_CI
from ..core.errors import InputError, arg
from ..core.seeding import derive_generator
from ..core.validate import ci_level, positive_int

__all__ = ["BootstrapInterval", "bca_interval"]

_MetricFn = Callable[[np.ndarray], float]


@dataclass(frozen=True)
class BootstrapInterval:
    """``delta`` = metric(cond) - metric(clean) on all queries, its interval and how it was made."""

    delta: float
    low: float
    high: float
    level: float
    method: str
    resamples: int
    standard_error: float

    @property
    def ci(self) -> list[float]:
        return [self.low, self.high]


def _prepare(clean_values, cond_values) -> tuple[np.ndarray, np.ndarray]:
    x0 = np.asarray(clean_values, dtype=np.float64)
    x1 = np.asarray(cond_values, dtype=np.float64)
    if x0.ndim != 1 or x1.ndim != 1 or x0.shape != x1.shape:
        raise InputError(f"{arg('clean_values')} and {arg('cond_values')} must be 1-D per-query values of the same "
                         f"length, got {x0.shape} and {x1.shape}")
    if x0.size < 2:
        raise InputError(f"a bootstrap interval needs at least 2 queries, got {x0.size}", param="clean_values")
    if not (np.isfinite(x0).all() and np.isfinite(x1).all()):
        raise InputError("per-query values must be finite (drop excluded queries first)", param="cond_values")
    return x0, x1


def bca_interval(
    clean_values,
    cond_values,
    metric_fn: _MetricFn | None = None,
    level: float = DEFAULT_CI,
    resamples: int = 9999,
    seed: int = 0,
    *,
    key: str = "",
    method: Literal["BCa", "percentile", "basic"] = "BCa",
) -> BootstrapInterval:
    """Paired BCa interval of ``metric_fn(cond) - metric_fn(clean)`` for one condition, by
    :func:`scipy.stats.bootstrap` (``method`` picks scipy's percentile or basic interval instead).

    ``clean_values`` / ``cond_values``: per-query values (same queries, same order), e.g. hit@1 in
    {0, 1}; ``metric_fn`` maps a 1-D array of per-query values to the metric (default: the mean, so
    per-query hit@1 gives R@1).  When every query's difference is the same (no variability) the
    interval is the point ``[delta, delta]`` instead of scipy's NaN.
    """
    from scipy.stats import bootstrap

    level = ci_level(level, "level")
    resamples = positive_int(resamples, "resamples")
    x0, x1 = _prepare(clean_values, cond_values)
    if metric_fn is None:

        def statistic(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
            return np.mean(b, axis=axis) - np.mean(a, axis=axis)

        vectorized = True
        delta = float(x1.mean() - x0.mean())
    else:

        def statistic(a: np.ndarray, b: np.ndarray) -> float:
            return float(metric_fn(b)) - float(metric_fn(a))

        vectorized = False
        delta = float(metric_fn(x1)) - float(metric_fn(x0))
    if np.all(x1 - x0 == (x1 - x0)[0]) and metric_fn is None:
        return BootstrapInterval(delta, delta, delta, level, method, resamples, 0.0)
    rng = derive_generator("evaluate.scipy_bootstrap", int(seed), str(key), int(x0.size))
    with warnings.catch_warnings():
        # DegenerateDataWarning: a constant bootstrap distribution; handled below as a point interval.
        warnings.simplefilter("ignore")
        res = bootstrap(
            (x0, x1),
            statistic,
            paired=True,
            vectorized=vectorized,
            n_resamples=int(resamples),
            confidence_level=float(level),
            method=method,
            random_state=rng,
        )
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    se = float(res.standard_error)
    if (np.isnan(lo) or np.isnan(hi)) and (se == 0.0 or np.isnan(se)):
        lo = hi = delta
    return BootstrapInterval(delta, lo, hi, level, method, int(resamples), se)

