"""Exact paired test of a difference of drops on a 0/1 metric (hit@k), and its effect size.

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

import numpy as np

__all__ = ["discordance", "signflip_exact_pvalues", "cohens_g"]


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
