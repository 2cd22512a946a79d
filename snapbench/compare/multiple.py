"""Multiple-comparison adjustment of a family of p-values: Holm (default) or Benjamini–Hochberg.

* ``holm`` (Holm 1979, step-down Bonferroni; controls the family-wise error rate):
  with p_(1) <= ... <= p_(m), adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)).
* ``bh`` (Benjamini & Hochberg 1995, step-up; controls the false discovery rate):
  adj_(i) = min_{j >= i} min(1, m p_(j) / j).

Both equal ``statsmodels.stats.multitest.multipletests(p, method="holm" | "fdr_bh")`` (checked in
the tests).  NaN entries (an undefined test) are left out of the family and stay NaN.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.validate import choice

__all__ = ["CORRECTIONS", "CORRECTION_NAMES", "adjust_pvalues", "alpha_of"]

CORRECTIONS: dict[str, str] = {
    "holm": "Holm step-down (family-wise error rate)",
    "bh": "Benjamini-Hochberg step-up (false discovery rate)",
}
#: How sentences and captions name each correction ("Holm-adjusted p").
CORRECTION_NAMES: dict[str, str] = {"holm": "Holm", "bh": "BH"}


def alpha_of(ci: float) -> float:
    """The significance level that goes with a CI level: 1 − ci, rounded so that 0.95 gives exactly
    0.05 (1.0 - 0.95 is 0.05000000000000004 in floating point: p = 0.05 must not pass)."""
    return round(1.0 - float(ci), 12)


def adjust_pvalues(pvalues: Sequence[float] | np.ndarray, method: str = "holm") -> np.ndarray:
    """Adjusted p-values of one family (same order as ``pvalues``); NaN entries are not counted."""
    choice(method, CORRECTIONS, "correction", what="correction")
    p = np.asarray(pvalues, dtype=np.float64).reshape(-1)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = ok.size
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    ps = p[order]
    if method == "holm":
        adj = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * ps))
    else:
        adj = np.minimum.accumulate((m * ps / np.arange(1, m + 1))[::-1])[::-1]
        adj = np.minimum(adj, 1.0)
    out[order] = adj
    return out
