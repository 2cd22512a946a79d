"""Per model x condition: value, delta vs clean and its paired bootstrap CI -- what a run reports.

All models and conditions of one (mode, metric) are resampled with **one** counts matrix
(:func:`snapbench.evaluate.paired.bootstrap_counts`, the run's own seed and draw), so a model's
delta and CI equal its run's report, and every paired difference between models comes from the
same resamples (queries resampled jointly for all models).  The resampled values of all M x C
columns are one matrix product (the formula of :func:`snapbench.evaluate.paired.bootstrap_values`).

Resampled numbers are kept as rows (column, resample) so that each percentile interval reads one
contiguous row; the intervals are numpy's "linear" quantiles, as in a run's report, computed on row
blocks in a few threads (numpy releases the GIL while it partitions).

Multiple-comparison adjustment of a family of p-values: Holm (default) or Benjamini–Hochberg.

* ``holm`` (Holm 1979, step-down Bonferroni; controls the family-wise error rate):
  with p_(1) <= ... <= p_(m), adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)).
* ``bh`` (Benjamini & Hochberg 1995, step-up; controls the false discovery rate):
  adj_(i) = min_{j >= i} min(1, m p_(j) / j).

Both equal ``statsmodels.stats.multitest.multipletests(p, method="holm" | "fdr_bh")`` (checked in
the tests).  NaN entries (an undefined test) are left out of the family and stay NaN.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from ..core.errors import ConfigError
from ..core.validate import choice, ci_level
from ..evaluate.metrics import metric_family
from ..evaluate.paired import percentile_ci
from .groups import exact_group_means, group_means
from .inputs import ModelValues
from .records import ModelRecord

__all__ = ['MetricBlock', 'counted_query_rows', 'metric_block', 'model_records', 'resampled_values', 'row_intervals', 'pair_intervals', 'CORRECTIONS', 'CORRECTION_NAMES', 'adjust_pvalues', 'alpha_of']

_ROWS_PER_TASK = 256


def _sorted_quantiles(s: np.ndarray, q: float) -> np.ndarray:
    """The ``q`` quantile of each row of ``s`` (R, B), rows sorted ascending without NaN: numpy's
    "linear" method (virtual index (B-1) q, its lerp), bit-identical to ``np.quantile`` -- which
    the tests check -- but without a second selection pass over the data."""
    n = s.shape[1]
    v = (n - 1) * np.float64(q)
    prev = np.floor(v)
    nxt = prev + 1
    if v >= n - 1:
        prev = nxt = n - 1
    gamma = np.float64(v - prev)
    a, b = s[:, int(prev)], s[:, int(nxt)]
    diff = b - a
    return b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma


def _block_intervals(block: np.ndarray, level: float, overwrite: bool = False) -> tuple[np.ndarray, np.ndarray]:
    bad = np.isnan(block).any(axis=1)
    if bad.all():
        return percentile_ci(block, level, axis=1)
    lo, hi = np.empty(block.shape[0]), np.empty(block.shape[0])
    # a sort (SIMD in numpy >= 2) is ~3x faster here than the partition inside np.quantile
    if overwrite and not bad.any():
        block.sort(axis=1)
        s = block
    else:
        s = np.sort(block[~bad] if bad.any() else block, axis=1)
    a = (1.0 - level) / 2.0
    lo[~bad], hi[~bad] = _sorted_quantiles(s, a), _sorted_quantiles(s, 1.0 - a)
    if bad.any():  # rows with undefined resamples: percentile_ci drops the NaNs
        lo[bad], hi[bad] = percentile_ci(block[bad], level, axis=1)
    return lo, hi


def row_intervals(rows: np.ndarray, level: float, workers: int = 1, *, overwrite: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of each row of ``rows`` (R, B): the numbers of :func:`percentile_ci`
    along axis 1, on blocks of rows in ``workers`` threads.  ``overwrite=True`` lets it sort a
    temporary float64 ``rows`` in place."""
    ci_level(level, "level")
    rows = np.asarray(rows, dtype=np.float64)
    if rows.shape[0] == 0:
        return np.empty(0), np.empty(0)
    blocks = [rows[a : a + _ROWS_PER_TASK] for a in range(0, rows.shape[0], _ROWS_PER_TASK)]
    if workers > 1 and len(blocks) > 1:
        with ThreadPoolExecutor(max_workers=workers) as ex:
            parts = list(ex.map(lambda b: _block_intervals(b, level, overwrite), blocks))
    else:
        parts = [_block_intervals(b, level, overwrite) for b in blocks]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


#: Pairs of models handled together: bounds the (pairs x columns x resamples) temporaries.
_PAIRS_PER_TASK = 4


def pair_intervals(boot: np.ndarray, pairs: Sequence[tuple[int, int]], ci: float, workers: int = 1,
                   each: Callable[[int, int, int], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi), each (P, K): the percentile interval of ``boot[a] - boot[b]`` (``boot`` (M, K, B): the
    shared resamples of every model, so both of a pair come from the same queries) of every pair
    (a, b), a few pairs at a time in ``workers`` threads; ``each(i, a, b)``, when given, is called for
    every pair in the thread of its interval (a pair's own work, such as its tests)."""
    lo, hi = np.empty((len(pairs), boot.shape[1])), np.empty((len(pairs), boot.shape[1]))

    def task(start: int) -> None:
        sel = slice(start, min(start + _PAIRS_PER_TASK, len(pairs)))
        a, b = np.array(pairs[sel], dtype=np.int64).reshape(-1, 2).T
        d = boot[a] - boot[b]
        lo_c, hi_c = row_intervals(d.reshape(-1, d.shape[2]), ci, overwrite=True)
        lo[sel], hi[sel] = lo_c.reshape(d.shape[:2]), hi_c.reshape(d.shape[:2])
        if each is not None:
            for i in range(sel.start, sel.stop):
                each(i, *pairs[i])

    starts = range(0, len(pairs), _PAIRS_PER_TASK)
    if workers > 1 and len(starts) > 1:
        with ThreadPoolExecutor(max_workers=workers) as ex:
            list(ex.map(task, starts))
    else:
        for s in starts:
            task(s)
    return lo, hi


@dataclass
class MetricBlock:
    """One (mode, metric) across models: per-query stats, point values and resampled values.

    ``conditions[0]`` is ``clean``; ``groups`` index ``conditions[1:]``.  Arrays are indexed
    [query, model, condition] (``num``, ``den``), [model, condition] (``values``) and
    [model, condition, resample] (``boot``)."""

    mode: str
    metric: str
    models: list[str]
    conditions: list[str]
    groups: dict[str, list[int]]
    num: np.ndarray
    den: np.ndarray
    values: np.ndarray
    boot: np.ndarray
    _col_boot: np.ndarray | None = field(default=None, repr=False)

    @property
    def columns(self) -> list[str]:
        """The corrupted conditions, then the group ids."""
        return self.conditions[1:] + list(self.groups)

    @property
    def deltas(self) -> np.ndarray:
        """(M, C-1) value(c) - value(clean)."""
        return self.values[:, 1:] - self.values[:, :1]

    @property
    def col_values(self) -> np.ndarray:
        """(M, K) value of each column (a group: the mean of its conditions' values, correctly rounded)."""
        v = self.values[:, 1:]
        return np.concatenate([v, exact_group_means(v, self.groups)], axis=1)

    @property
    def col_deltas(self) -> np.ndarray:
        """(M, K) delta of each column (a group: the mean of its conditions' deltas, correctly rounded,
        so models with equal deltas -- in any order of the conditions -- get equal scores and tie)."""
        return np.concatenate([self.deltas, exact_group_means(self.deltas, self.groups)], axis=1)

    @property
    def col_boot_deltas(self) -> np.ndarray:
        """(M, K, B) resampled deltas of every column (computed once)."""
        if self._col_boot is None:
            n_m, n_c, n_b = self.boot.shape
            out = np.empty((n_m, n_c - 1 + len(self.groups), n_b))
            d = np.subtract(self.boot[:, 1:], self.boot[:, :1], out=out[:, : n_c - 1])
            out[:, n_c - 1 :] = group_means(d, self.groups, axis=1)
            self._col_boot = out
        return self._col_boot


def _exact_in_float32(a: np.ndarray, n_queries: int) -> bool:
    """Whole numbers whose resampled sums stay below 2**24: a float32 product is then exact."""
    return bool(np.array_equal(a, np.round(a)) and np.abs(a).max(initial=0.0) * n_queries < 2.0**24)


def _distinct_columns(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct columns (Q, U), index of each column's distinct one): most metrics share one
    denominator (the counted queries), so the denominators need U << K products."""
    seen: dict[bytes, int] = {}
    where = np.array([seen.setdefault(np.ascontiguousarray(a[:, k]).tobytes(), len(seen)) for k in range(a.shape[1])])
    first = np.unique(where, return_index=True)[1]
    return a[:, first], where


def resampled_values(num: np.ndarray, den: np.ndarray, counts: np.ndarray, counts32: np.ndarray | None = None) -> np.ndarray:
    """(K, B) value Σ w·num / Σ w·den of each of K columns under each resample row w of ``counts``.

    The formula of :func:`snapbench.evaluate.paired.bootstrap_values` (NaN where a resample makes
    the denominator 0), computed as ``num.T @ counts.T`` so that each column's resamples come out as
    one contiguous row, and the distinct denominators once.  For whole-number columns (hit@k: 0/1
    per query) both products are exact in float32, twice as fast, with the same float64 sums."""
    dens, where = _distinct_columns(den)
    # equal columns (two models with the same values; a mode's conditions that leave its side of the
    # query clean) are resampled once: bit-equal outputs, whatever a matrix product does per row
    nums, num_of = _distinct_columns(num)
    if counts32 is not None and _exact_in_float32(nums, num.shape[0]) and _exact_in_float32(dens, den.shape[0]):
        tn = (nums.T.astype(np.float32) @ counts32.T).astype(np.float64)
        td = (dens.T.astype(np.float32) @ counts32.T).astype(np.float64)
    else:
        tn = nums.T.astype(np.float64) @ counts.T
        td = dens.T.astype(np.float64) @ counts.T
    if nums.shape[1] < num.shape[1]:
        tn = tn[num_of]
    with np.errstate(invalid="ignore", divide="ignore"):
        if td.shape[0] == 1:  # one denominator for all columns (every mean metric): in place
            tn /= td[0]
            tn[:, td[0] == 0] = np.nan
            return tn
        for u in range(td.shape[0]):
            rows = np.flatnonzero(where == u)
            part = tn[rows] / td[u]
            part[:, td[u] == 0] = np.nan
            tn[rows] = part
    return tn


def counted_query_rows(models: Sequence[ModelValues], mode: str, metric: str) -> np.ndarray | None:
    """The query rows that count for ``metric`` -- the rows a run's bootstrap resamples
    (:func:`snapbench.evaluate.metrics.counted_rows`) -- or ``None`` for every query.

    A metric counting every query (reject_*) resamples them all; any other (ranking and set
    metrics: queries with a positive, every query with ``include_zero_gt``) the queries where some
    model and condition has a non-zero denominator -- exactly the run's rows, since a run's
    denominator of such a metric is 1 on its counted queries and 0 elsewhere.  A metric no query
    counts for resamples every query (its values are undefined anyway)."""
    try:
        rule = metric_family(metric).counts
    except ConfigError:  # a metric name the evaluation does not know: count where it is defined
        rule = "defined"
    if rule == "all":
        return None
    mask = np.zeros(len(models[0].query_ids), dtype=bool)
    for m in models:
        for per in m.stats[mode].values():
            mask |= per[metric].den > 0
    rows = np.flatnonzero(mask)
    return None if rows.size in (0, mask.size) else rows


def metric_block(
    models: Sequence[ModelValues], mode: str, metric: str, conditions: Sequence[str],
    groups: dict[str, list[int]], counts: np.ndarray, counts32: np.ndarray | None = None,
    rows: np.ndarray | None = None,
) -> MetricBlock:
    """Stack the models' per-query stats of ``metric`` (conditions in the given order, clean first)
    and resample them all with ``counts`` (B x Q'; ``counts32`` = the same in float32, optional)
    over the query ``rows`` (Q' of them; default every query).  Values are over every query (the
    rows left out have a zero denominator)."""
    stats = [m.stats[mode][c][metric] for m in models for c in conditions]
    n_m, n_c = len(models), len(conditions)
    num = np.stack([s.num for s in stats], axis=1)
    den = np.stack([s.den for s in stats], axis=1)
    if rows is not None:
        num, den = num[rows], den[rows]
    boot = resampled_values(num, den, counts, counts32).reshape(n_m, n_c, counts.shape[0])
    values = np.array([s.value for s in stats], dtype=np.float64).reshape(n_m, n_c)
    return MetricBlock(mode, metric, [m.name for m in models], list(conditions), dict(groups),
                       num.reshape(-1, n_m, n_c), den.reshape(-1, n_m, n_c), values, boot)


def model_records(block: MetricBlock, ci: float, workers: int = 1) -> list[ModelRecord]:
    """Records of every model x (clean, each condition, each group).  A group's value / delta is
    the mean over its conditions; its CI = percentiles of the mean of the same resampled deltas."""
    n_m, k, n_b = block.col_boot_deltas.shape
    lo, hi = row_intervals(block.col_boot_deltas.reshape(n_m * k, n_b), ci, workers)
    lo, hi = lo.reshape(n_m, k), hi.reshape(n_m, k)
    values, deltas = block.col_values, block.col_deltas
    out: list[ModelRecord] = []
    nan = float("nan")
    for m, name in enumerate(block.models):
        clean = float(block.values[m, 0])
        ret = lambda v: float(v) / clean if clean != 0 and not np.isnan(clean) else nan
        out.append(ModelRecord(block.mode, name, block.conditions[0], block.metric, clean, nan, nan, nan, ret(clean)))
        for j, c in enumerate(block.columns):
            v = float(values[m, j])
            out.append(ModelRecord(block.mode, name, c, block.metric, v, float(deltas[m, j]),
                                   float(lo[m, j]), float(hi[m, j]), ret(v)))
    return out


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
