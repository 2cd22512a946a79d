"""Paired statistics over conditions that share queries, gallery and labels.

* **Bootstrap** (PAL-Bench style, paired): resample queries with replacement, the *same* resample for
  every condition and metric, so differences keep their pairing.  The resamples are drawn once per
  seed as a counts matrix ``W`` (B x Q, row b = how often each query occurs in resample b); a metric
  ``Σnum/Σden`` of every condition under every resample is then ``(W @ NUM) / (W @ DEN)`` -- two
  matrix products instead of B x C loops.  CI = percentile interval (numpy "linear" quantiles) of the
  resampled delta; resamples where a ratio metric is 0/0 are dropped.
* **Which queries are resampled**: only those that *count* for the metric
  (:func:`snapbench.evaluate.metrics.counted_rows`): a ranking metric excludes zero-GT queries, so
  they are never drawn and every resample counts the same number of queries (with a zero-GT query
  among 12, each resample draws 11, and the CI of hit@k moves in steps of 1/11).  The draw depends
  only on (seed, number of counted queries), so adding zero-GT queries to a data set changes no
  interval or test of a ranking metric.  Metrics that count the same queries share one draw
  (:class:`QueryResamples`); reject metrics count every query.
* **Significance**: ``hit@k`` (0/1 per query) -> exact two-sided McNemar test (binomial on the
  discordant pairs); every other metric -> paired permutation test that swaps the two conditions'
  per-query values at random (for a mean metric this is the sign-flip test), two-sided,
  p = (1 + #{|Δ*| >= |Δ|}) / (1 + R).  McNemar comes from ``scipy.stats.binomtest``; the permutation
  test is a matrix product over a seeded swap matrix (checked against ``scipy.stats.permutation_test``).
* **Multiple conditions**: Holm(-Bonferroni) over the paired conditions of the family, separately per
  metric: the conditions the report's target reads (:func:`snapbench.core.targets.target_reads`: an
  image condition cannot move T→T), every condition when the target is unknown.  Reports carry ``p``
  (Holm-adjusted) and ``p_raw``; a condition outside the family keeps ``p = p_raw`` (nothing to adjust).

All randomness comes from :func:`snapbench.core.seeding.derive_generator` keyed by the seed, so results
are identical in any process.
"""

from __future__ import annotations

import math
from typing import Collection, Mapping, Sequence

import numpy as np

from ..core.defaults import DEFAULT_CI, DEFAULT_CLIFF_RATIO, DEFAULT_CLIFF_TOL, DEFAULT_RESAMPLES
from ..core.errors import ConfigError, InputError
from ..core.seeding import derive_generator
from ..core.validate import ci_level
from .metrics import QueryStat, is_binary_metric

__all__ = [
    "DEFAULT_RESAMPLES",
    "DEFAULT_CI",
    "CLIFF_RULE",
    "bootstrap_counts",
    "swap_matrix",
    "bootstrap_values",
    "percentile_ci",
    "QueryResamples",
    "mcnemar_exact",
    "permutation_pvalues",
    "holm",
    "stability_classes",
    "cliff_label",
    "rank_displacement",
    "paired_analysis",
]

_CHUNK = 1024  # rows of resample indices drawn per call; fixed so results never depend on memory
CLIFF_RULE = (
    "drops d_s = metric(clean) - metric(s) per severity (metric(s) - metric(clean) where higher is worse: "
    "flip@k); 'flat' if no d_s exceeds tol; 'cliff' if the "
    "last drop exceeds tol and d_last - max(earlier d) > ratio * max(max(earlier d), 0) (default ratio 2: "
    "under a third of the final drop has happened before the last severity); else 'gradual'"
)


def bootstrap_counts(n: int, resamples: int = DEFAULT_RESAMPLES, seed: int = 0, *, key: str = "") -> np.ndarray:
    """(resamples, n) float64 matrix: how often each of ``n`` queries occurs in each resample.

    Row b comes from ``n`` indices drawn uniformly with replacement; the draw depends only on
    (seed, key, n), so the same seed gives the same resamples for every condition and metric.
    """
    if n < 1:
        raise InputError("the bootstrap needs at least one query")
    if resamples < 1:
        raise ConfigError(f"must be >= 1, got {resamples}", param="resamples")
    rng = derive_generator("evaluate.bootstrap", int(seed), str(key), int(n))
    out = np.empty((resamples, n), dtype=np.float64)
    for a in range(0, resamples, _CHUNK):
        b = min(a + _CHUNK, resamples)
        idx = rng.integers(0, n, size=(b - a, n), dtype=np.int64)
        idx += np.arange(b - a, dtype=np.int64)[:, None] * n
        out[a:b] = np.bincount(idx.ravel(), minlength=(b - a) * n).reshape(b - a, n)
    return out


def swap_matrix(n: int, permutations: int = DEFAULT_RESAMPLES, seed: int = 0, *, key: str = "") -> np.ndarray:
    """(permutations, n) float64 0/1 matrix: 1 = swap the two conditions' values of that query.

    Fair coin flips from the generator's raw bytes (8 per byte), determined by (seed, key, n)."""
    rng = derive_generator("evaluate.permutation", int(seed), str(key), int(n))
    out = np.empty((permutations, n), dtype=np.float64)
    for a in range(0, permutations, _CHUNK):
        b = min(a + _CHUNK, permutations)
        m = (b - a) * n
        bits = np.unpackbits(np.frombuffer(rng.bytes((m + 7) // 8), dtype=np.uint8), count=m)
        out[a:b] = bits.reshape(b - a, n)
    return out


class QueryResamples:
    """The resamples and swaps of one evaluation, drawn once per number of counted queries.

    ``counts(n)`` / ``swaps(n)`` are :func:`bootstrap_counts` / :func:`swap_matrix` for ``n`` queries
    (seed, key and resample counts fixed here); every metric and condition that counts ``n`` queries
    shares them, so deltas keep their pairing and additivity CIs combine the same resamples.
    ``rows(r)`` is ``None`` when ``r`` is every query (the full draw), else ``r``.
    """

    def __init__(self, n_queries: int, resamples: int = DEFAULT_RESAMPLES, seed: int = 0, *,
                 permutations: int | None = None, key: str = "") -> None:
        self.n_queries, self.resamples, self.seed, self.key = int(n_queries), int(resamples), int(seed), key
        self.permutations = self.resamples if permutations is None else int(permutations)
        self._counts: dict[int, np.ndarray] = {}
        self._swaps: dict[int, np.ndarray] = {}

    def rows(self, rows: np.ndarray | None) -> np.ndarray | None:
        return None if rows is None or len(rows) == self.n_queries else np.asarray(rows, dtype=np.int64)

    def counts(self, n: int) -> np.ndarray:
        if n not in self._counts:
            self._counts[n] = bootstrap_counts(n, self.resamples, self.seed, key=self.key)
        return self._counts[n]

    def swaps(self, n: int) -> np.ndarray:
        if n not in self._swaps:
            self._swaps[n] = swap_matrix(n, self.permutations, self.seed, key=self.key)
        return self._swaps[n]

    def values(self, stats: Sequence[QueryStat], rows: np.ndarray | None = None) -> np.ndarray:
        """:func:`bootstrap_values` of ``stats`` resampling only ``rows`` (default: every query); all
        NaN when no query counts."""
        r = self.rows(rows)
        if r is not None and not r.size:
            return np.full((self.resamples, len(stats)), np.nan)
        return bootstrap_values(stats, self.counts(self.n_queries if r is None else len(r)), r)


def _den_groups(stats: Sequence[QueryStat]) -> tuple[np.ndarray, np.ndarray]:
    """Distinct denominator vectors (Q, U) and, per stat, the index of its denominator.

    Most metrics share one denominator (the included-queries mask), so ``W @ DEN`` is a handful of
    columns instead of one per metric and condition."""
    uniq: list[np.ndarray] = []
    where = np.empty(len(stats), dtype=np.int64)
    for i, st in enumerate(stats):
        for u, d in enumerate(uniq):
            if st.den is d or np.array_equal(st.den, d):
                where[i] = u
                break
        else:
            uniq.append(st.den)
            where[i] = len(uniq) - 1
    return np.stack(uniq, axis=1).astype(np.float64, copy=False), where


def bootstrap_values(stats: Sequence[QueryStat], counts: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """(B, C) value of each of C metrics/conditions under each resample row of ``counts``.

    ``rows``: the query rows ``counts`` resamples (its columns, in order); default every query.
    One matrix product for all numerators, one for the distinct denominators.  NaN where a
    resample makes the denominator 0.
    """
    if rows is not None:
        stats = [s.subset(rows) for s in stats]
    num = np.stack([s.num for s in stats], axis=1).astype(np.float64, copy=False)
    dens, where = _den_groups(stats)
    out = counts @ num
    wd = (counts @ dens)[:, where]
    zero = wd == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        out /= wd
    out[zero] = np.nan
    return out


def percentile_ci(samples: np.ndarray, level: float = DEFAULT_CI, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval [(1-level)/2, 1-(1-level)/2] of ``samples`` along ``axis`` (NaNs ignored)."""
    ci_level(level, "ci")
    a = (1.0 - level) / 2.0
    s = np.asarray(samples, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        if np.isnan(s).any():
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns -> NaN, on purpose
                lo, hi = np.nanquantile(s, [a, 1.0 - a], axis=axis)
        else:
            lo, hi = np.quantile(s, [a, 1.0 - a], axis=axis)
    return lo, hi


def mcnemar_exact(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value from the discordant counts ``b`` (1->0) and ``c`` (0->1).

    The exact McNemar test is a binomial test of ``b`` successes in ``b + c`` trials at p = 1/2;
    computed by :func:`scipy.stats.binomtest` (two-sided), the maintained implementation, which for
    p = 1/2 equals min(1, 2 · P[X <= min(b, c)]).  1.0 when there is no discordant pair.
    """
    from scipy.stats import binomtest

    b, c = int(b), int(c)
    if b < 0 or c < 0:
        raise InputError(f"discordant counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    return float(binomtest(b, n, 0.5, alternative="two-sided").pvalue)


def permutation_pvalues(
    clean: QueryStat | Sequence[QueryStat], others: Sequence[QueryStat], swaps: np.ndarray
) -> np.ndarray:
    """Two-sided paired permutation p-value of value(other) - value(clean) for each of ``others``.

    ``clean`` is one :class:`QueryStat` or one per entry of ``others`` (to test many metrics in one
    matrix product).  Each row of ``swaps`` (from :func:`swap_matrix`) exchanges the two
    conditions' per-query (num, den) for the queries marked 1; for a mean metric that is the
    sign-flip test.  NaN where the observed difference is undefined.
    """
    bases = [clean] * len(others) if isinstance(clean, QueryStat) else list(clean)
    if len(bases) != len(others):
        raise InputError(f"{len(bases)} clean stats for {len(others)} other stats (give one, or one per other)",
                         param="clean")
    num0 = np.stack([b.num for b in bases], axis=1)
    num1 = np.stack([o.num for o in others], axis=1)
    den0 = np.stack([b.den for b in bases], axis=1)
    den1 = np.stack([o.den for o in others], axis=1)
    s_num = swaps @ (num0 - num1)
    tn0, tn1 = num0.sum(axis=0), num1.sum(axis=0)
    td0, td1 = den0.sum(axis=0), den1.sum(axis=0)
    d_den = den0 - den1
    varying = np.any(d_den != 0, axis=0)
    perm = np.empty_like(s_num)
    with np.errstate(invalid="ignore", divide="ignore"):
        obs = tn1 / td1 - tn0 / td0
        same = np.flatnonzero(~varying)
        if same.size:  # equal denominators (every mean metric): Δ* = (Δnum + 2 Σ swapped d) / den
            perm[:, same] = (tn1[same] - tn0[same] + 2.0 * s_num[:, same]) / td0[same]
        vary = np.flatnonzero(varying)
        if vary.size:  # ratio metrics whose denominators differ between the two conditions
            s_den = swaps @ d_den[:, vary]
            sn = s_num[:, vary]
            perm[:, vary] = (tn1[vary] + sn) / (td1[vary] + s_den) - (tn0[vary] - sn) / (td0[vary] - s_den)
    perm[~np.isfinite(perm)] = np.nan
    obs = np.where(np.isfinite(obs), obs, np.nan)
    # Exact ties with the observed statistic must count as extreme; allow float round-off.
    thr = np.abs(obs) * (1 - 1e-9) - 1e-12
    defined = ~np.isnan(perm)
    extreme = np.count_nonzero((np.abs(perm) >= thr) & defined, axis=0)
    n_def = np.count_nonzero(defined, axis=0)
    p = (1.0 + extreme) / (1.0 + n_def)
    p[np.isnan(obs)] = np.nan
    return p


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm(-Bonferroni) step-down adjusted p-values; ``None``/NaN entries are left out of the family.

    Sorted ascending p_(1) <= ... <= p_(m): adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)).
    """
    vals = [None if p is None or (isinstance(p, float) and math.isnan(p)) else float(p) for p in pvalues]
    idx = [i for i, p in enumerate(vals) if p is not None]
    m = len(idx)
    order = sorted(idx, key=lambda i: vals[i])
    out: list[float | None] = [None] * len(vals)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * vals[i]))
        out[i] = running
    return out


def stability_classes(
    clean_correct: np.ndarray, cond_correct: np.ndarray, included: np.ndarray | None = None
) -> dict[str, int]:
    """Counts of stably correct, drag (correct -> wrong), persistently wrong, boost (wrong -> correct)."""
    c0 = np.asarray(clean_correct, dtype=bool)
    c1 = np.asarray(cond_correct, dtype=bool)
    inc = np.ones(c0.shape, dtype=bool) if included is None else np.asarray(included, dtype=bool)
    return {
        "stably_correct": int(np.count_nonzero(c0 & c1 & inc)),
        "drag": int(np.count_nonzero(c0 & ~c1 & inc)),
        "persistently_wrong": int(np.count_nonzero(~c0 & ~c1 & inc)),
        "boost": int(np.count_nonzero(~c0 & c1 & inc)),
        "n": int(np.count_nonzero(inc)),
    }


def cliff_label(drops: Sequence[float], *, tol: float = DEFAULT_CLIFF_TOL, ratio: float = DEFAULT_CLIFF_RATIO) -> str:
    """'cliff', 'gradual' or 'flat' for drops ordered by severity (see :data:`CLIFF_RULE`).

    Drops are clean minus corrupted (positive = worse), in metric units (0.01 = 1 point).
    """
    d = [float(x) for x in drops]
    if len(d) < 2 or any(math.isnan(x) for x in d):
        return "n/a"
    if max(d) <= tol:
        return "flat"
    early = max(d[:-1])
    if d[-1] > tol and d[-1] - early > ratio * max(early, 0.0):
        return "cliff"
    return "gradual"


def rank_displacement(clean_rank: np.ndarray, cond_rank: np.ndarray) -> QueryStat:
    """Per-query (corrupted rank - clean rank) of the first positive as a mean :class:`QueryStat`
    over queries where both ranks are finite (positive = the first positive moved down)."""
    r0 = np.asarray(clean_rank, dtype=np.float64)
    r1 = np.asarray(cond_rank, dtype=np.float64)
    ok = np.isfinite(r0) & np.isfinite(r1)
    with np.errstate(invalid="ignore"):  # inf - inf on queries that are masked out anyway
        d = np.where(ok, r1 - r0, 0.0)
    return QueryStat(d, ok.astype(np.float64))


def paired_analysis(
    stats: Mapping[str, Mapping[str, QueryStat]],
    *,
    clean: str = "clean",
    resamples: int = DEFAULT_RESAMPLES,
    ci: float = DEFAULT_CI,
    seed: int = 0,
    permutations: int | None = None,
    counts: np.ndarray | None = None,
    swaps: np.ndarray | None = None,
    boot: Mapping[str, np.ndarray] | None = None,
    rows: Mapping[str, np.ndarray] | None = None,
    resampler: QueryResamples | None = None,
    family: Collection[str] | None = None,
) -> dict[str, dict[str, dict]]:
    """``{cond: {metric: {"delta", "ci", "p", "p_raw"}}}`` for every condition except ``clean``.

    ``stats[cond][metric]`` are per-query :class:`QueryStat` (same queries in the same order for all
    conditions).  delta = value(cond) - value(clean); CI from the paired bootstrap; ``p`` is
    Holm-adjusted over the conditions of ``family`` (per metric; default every condition), ``p_raw``
    unadjusted; a condition outside ``family`` has ``p`` = ``p_raw``.

    ``rows[metric]``: the query rows that count for the metric
    (:func:`~snapbench.evaluate.metrics.counted_rows`); only they are resampled and permuted
    (default: every query).  ``resampler`` shares its draws with other statistics (default: one for
    ``seed``, ``resamples`` and ``permutations``); ``counts``/``swaps`` drawn for every query may be
    passed instead.  ``boot[metric]`` may pass that metric's bootstrap values already computed from
    the same draws (R x (1 + conditions), ``clean`` first, then the conditions in ``stats`` order).
    """
    if clean not in stats:
        raise InputError(f"no {clean!r} condition: paired results are against it", param="clean")
    conds = [c for c in stats if c != clean]
    metrics = list(stats[clean])
    out: dict[str, dict[str, dict]] = {c: {} for c in conds}
    if not conds or not metrics:
        return out
    n = len(next(iter(stats[clean].values())).num)
    rs = resampler or QueryResamples(n, resamples if counts is None else counts.shape[0], seed,
                                     permutations=permutations or None)
    if counts is not None:
        rs._counts.setdefault(n, counts)
    if swaps is not None:
        rs._swaps.setdefault(n, swaps)
    counted = {m: rs.rows(rows.get(m) if rows else None) for m in metrics}
    perm_p = _permutation_tests(stats, clean, conds, metrics, counted, rs)
    for m in metrics:
        base = stats[clean][m]
        others = [stats[c][m] for c in conds]
        v0 = base.value
        b = boot[m] if boot is not None else rs.values([base] + others, counted[m])
        lo, hi = percentile_ci(b[:, 1:] - b[:, :1], ci)
        p_raw = perm_p[m] if m in perm_p else _mcnemar_pvalues(base, others)  # every other metric is hit@k
        in_family = [family is None or c in family for c in conds]
        adj = iter(holm([p for p, f in zip(p_raw, in_family) if f]))
        p_adj = [next(adj) if f else (None if math.isnan(p) else float(p)) for p, f in zip(p_raw, in_family)]
        for j, c in enumerate(conds):
            delta = others[j].value - v0
            out[c][m] = {
                "delta": delta,
                "ci": [float(lo[j]), float(hi[j])],
                "p": p_adj[j],
                "p_raw": None if math.isnan(p_raw[j]) else float(p_raw[j]),
            }
    return out


def _permutation_tests(stats, clean: str, conds: list[str], metrics: list[str],
                       counted: Mapping[str, np.ndarray | None], rs: QueryResamples) -> dict[str, np.ndarray]:
    """Raw permutation p-values of every non-hit metric: one matrix product per set of counted
    queries (~2x faster than one per metric); each set permutes only its own queries."""
    groups: dict[bytes | None, tuple[np.ndarray | None, list[str]]] = {}
    for m in metrics:
        if not is_binary_metric(m):
            r = counted[m]
            groups.setdefault(None if r is None else r.tobytes(), (r, []))[1].append(m)
    out: dict[str, np.ndarray] = {}
    for r, perm in groups.values():
        def sub(s: QueryStat, r=r) -> QueryStat:
            return s if r is None else s.subset(r)

        sw = rs.swaps(rs.n_queries if r is None else len(r))
        pp = permutation_pvalues([sub(stats[clean][m]) for m in perm for _ in conds],
                                 [sub(stats[c][m]) for m in perm for c in conds], sw)
        out.update({m: pp[i * len(conds) : (i + 1) * len(conds)] for i, m in enumerate(perm)})
    return out


def _mcnemar_pvalues(clean: QueryStat, others: Sequence[QueryStat]) -> np.ndarray:
    """Raw exact McNemar p-values of a 0/1 metric (hit@k) for ``others`` vs ``clean``."""
    out = []
    inc0 = clean.den > 0
    for o in others:
        inc = inc0 & (o.den > 0)
        x0 = clean.num[inc] > 0
        x1 = o.num[inc] > 0
        if not inc.any():
            out.append(float("nan"))
            continue
        out.append(mcnemar_exact(np.count_nonzero(x0 & ~x1), np.count_nonzero(~x0 & x1)))
    return np.asarray(out, dtype=np.float64)


# ------------------------------------------------------------------ does stability track the loss?
TRACKING_RULE = (
    "per condition: S_c = mean over queries of the stability measure, L_c = mean over the queries with a "
    "relevant item of metric(clean) - metric(c) (the drop); rho = Spearman correlation of S and L across the "
    "conditions (average ranks for ties); CI: percentile interval of rho over paired bootstrap resamples of the "
    "queries (the evaluation's seed and resample count), S and L recomputed on each"
)


def _spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho of each row pair of ``x``, ``y`` (R, C): Pearson of average ranks; NaN where a
    row is constant or holds a NaN."""
    from scipy.stats import rankdata

    rx = rankdata(x, axis=1, method="average")
    ry = rankdata(y, axis=1, method="average")
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    den = np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (rx * ry).sum(axis=1) / den
    bad = np.isnan(x).any(axis=1) | np.isnan(y).any(axis=1) | (den == 0)
    rho[bad] = np.nan
    return rho


def stability_tracks_loss(stability: np.ndarray, metric_clean: np.ndarray, metric: np.ndarray,
                          counts: np.ndarray, ci: float) -> dict:
    """Spearman correlation across conditions between mean stability and mean drop of a metric.

    ``stability`` (Q, C): one stability measure per query and corrupted condition; ``metric_clean``
    (Q,) and ``metric`` (Q, C): the labelled metric per query (NaN = the query does not count, e.g.
    no relevant item); ``counts`` (B, Q): the bootstrap resamples
    (:func:`~snapbench.evaluate.paired.bootstrap_counts`).  Returns ``{"rho", "ci", "n_conditions",
    "stability", "drop"}`` (the per-condition means); ``rho`` is NaN when fewer than 3 conditions or a
    constant side leave it undefined.  See :data:`TRACKING_RULE`.
    """


    s = np.asarray(stability, dtype=np.float64)
    m0 = np.asarray(metric_clean, dtype=np.float64)
    m1 = np.asarray(metric, dtype=np.float64)
    if s.ndim != 2 or m1.shape != s.shape or m0.shape != (s.shape[0],):
        raise InputError(f"stability {s.shape}, clean metric {m0.shape} and metric {m1.shape} must be (Q, C), (Q,), (Q, C)")
    counted = np.isfinite(m0)[:, None] & np.isfinite(m1)
    drop = np.where(counted, m0[:, None] - m1, 0.0)
    ok_s = np.isfinite(s)
    s0 = np.where(ok_s, s, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_s = s0.sum(axis=0) / ok_s.sum(axis=0)
        mean_l = drop.sum(axis=0) / counted.sum(axis=0)
        cnt = np.asarray(counts, dtype=np.float64)
        boot_s = (cnt @ s0) / (cnt @ ok_s.astype(np.float64))
        boot_l = (cnt @ drop) / (cnt @ counted.astype(np.float64))
    n_c = s.shape[1]
    rho = float(_spearman_rows(mean_s[None, :], mean_l[None, :])[0]) if n_c >= 3 else float("nan")
    if n_c >= 3:
        lo, hi = percentile_ci(_spearman_rows(boot_s, boot_l)[:, None], ci)
        lo, hi = float(lo[0]), float(hi[0])
    else:
        lo = hi = float("nan")
    return {"rho": rho, "ci": [lo, hi], "n_conditions": int(n_c), "stability": mean_s, "drop": mean_l}
