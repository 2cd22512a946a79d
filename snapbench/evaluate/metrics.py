"""Retrieval metrics as small pure functions over rankings (vectorised over queries), and the table
of metric families every metric name is looked up in.

Conventions (SPEC §7):

* ``hit@k``   1 if any positive is in the top k (what SnapBench calls "R@k").
* ``recall@k`` |top-k ∩ gold| / |gold| (PhotoBench, trec_eval ``recall_k``, ranx ``recall@k``).
* ``ndcg@k``  linear gain rel / log2(i + 1), IDCG from the query's labels sorted and cut at k
  (trec_eval ``ndcg_cut_k``, ranx ``ndcg@k``); binary labels give gain 1.
* ``mrr``     1 / rank of the first positive over the whole gallery (``mrr@k``: 0 beyond rank k).
* a positive is a label with grade > 0 (trec_eval's default relevance level 1 for integer grades).
* set metrics (variable-length answers) on queries with gold: precision = tp/|pred| (0 for an empty
  prediction), recall = tp/|gold|, F1 = 2PR/(P+R) (0 when P + R = 0) -- PhotoBench's recipe.
* reject metrics (PhotoBench appendix B.2) over all queries, an empty prediction = a rejection:
  A correct rejection (gold and prediction empty), B false rejection (gold non-empty, prediction
  empty), C missed rejection (gold empty, prediction non-empty); RP = A/(A+B), RR = A/(A+C),
  RF1 = 2A/(2A+B+C).  **0/0 is undefined and reported as NaN (JSON null)**, never as 0 or 1: RP is
  undefined when nothing was rejected, RR when there is no zero-GT query.

Every aggregate is a ratio of sums of per-query vectors (:class:`QueryStat`): a mean metric is
``Σ value·included / Σ included``; a reject metric is ``Σ a / Σ (a + b)`` etc.  That one form lets
the paired bootstrap and the permutation test treat every metric the same way.

Each family (the name before ``@k``) is one entry of :data:`METRIC_FAMILIES`: how its per-query
values are computed, whether it takes a cut-off, whether its values are 0/1 (exact McNemar test)
and which queries *count* for it (:func:`counted_rows`) -- the queries the bootstrap resamples.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..core.defaults import DEFAULT_KS
from ..core.errors import ConfigError
from ..core.registry import Table
from ..core.validate import hint_and_known
from .labels import Labels
from .stability import DEFAULT_RBO_DEPTH, DEFAULT_RBO_P, flip_at_k, overlap_at_k, rbo_ext

__all__ = [
    "DEFAULT_KS",
    "METRIC_FAMILIES",
    "SET_METRICS",
    "REJECT_METRICS",
    "Labels",
    "MetricFamily",
    "QueryStat",
    "parse_metrics",
    "metric_family",
    "metric_k",
    "is_binary_metric",
    "metric_sign",
    "counted_rows",
    "ranking_depth",
    "set_scores",
    "reject_counts",
    "reject_scores",
    "safe_ratio",
    "query_stats",
]

SET_METRICS: tuple[str, ...] = ("set_precision", "set_recall", "set_f1")
REJECT_METRICS: tuple[str, ...] = ("reject_precision", "reject_recall", "reject_f1")
#: Names that stand for several metrics in a metric list.
_METRIC_GROUPS: dict[str, tuple[str, ...]] = {"set": SET_METRICS, "reject": REJECT_METRICS}
_NAME_RE = re.compile(r"^([a-z][a-z0-9_]*?)(?:@(-?\d+))?$")


# ------------------------------------------------------------------------------ aggregation
@dataclass(frozen=True)
class QueryStat:
    """A metric as a ratio of sums of per-query vectors: value = Σ num / Σ den.

    For a mean metric ``num = value_q · included_q`` and ``den = included_q``.  Keeping the two
    vectors (instead of the mean) is what makes resampling and permutation uniform across metrics.
    """

    num: np.ndarray
    den: np.ndarray

    @property
    def value(self) -> float:
        return safe_ratio(float(np.sum(self.num)), float(np.sum(self.den)))

    def subset(self, rows: np.ndarray) -> QueryStat:
        return QueryStat(self.num[rows], self.den[rows])


def safe_ratio(num: float, den: float) -> float:
    """num / den, NaN when den == 0 (an undefined metric is not 0)."""
    return float(num) / float(den) if den != 0 else float("nan")


# ------------------------------------------------------------------------------ ranking metrics
def _hit_at_k(rel_topk: np.ndarray, k: int) -> np.ndarray:
    """(Q,) 1.0 if any of the first ``k`` ranked items is relevant (grade > 0)."""
    return np.any(rel_topk[:, :k] > 0, axis=1).astype(np.float64)


def _recall_at_k(rel_topk: np.ndarray, n_pos: np.ndarray, k: int) -> np.ndarray:
    """(Q,) relevant items in the top ``k`` / all relevant items (0 where a query has none)."""
    found = np.count_nonzero(rel_topk[:, :k] > 0, axis=1)
    n_pos = np.asarray(n_pos)
    return np.divide(found, n_pos, out=np.zeros(found.shape, dtype=np.float64), where=n_pos > 0)


def _dcg(gains: np.ndarray) -> np.ndarray:
    """(Q,) linear-gain DCG: Σ_i gain_i / log2(i + 1), i = 1..K."""
    disc = 1.0 / np.log2(np.arange(2, gains.shape[1] + 2, dtype=np.float64))
    return gains @ disc


def _ndcg_at_k(rel_topk: np.ndarray, ideal_topk: np.ndarray, k: int) -> np.ndarray:
    """(Q,) DCG@k / IDCG@k with linear gains (0 where IDCG is 0)."""
    num = _dcg(rel_topk[:, :k])
    den = _dcg(ideal_topk[:, :k])
    return np.divide(num, den, out=np.zeros(num.shape, dtype=np.float64), where=den > 0)


def _reciprocal_rank(first_rank: np.ndarray, k: int | None = None) -> np.ndarray:
    """(Q,) 1 / rank of the first positive; 0 when not retrieved (rank inf), beyond ``k``, or no
    positive (NaN rank)."""
    r = np.asarray(first_rank, dtype=np.float64)
    ok = np.isfinite(r) & (r >= 1)
    if k is not None:
        ok &= r <= k
    return np.divide(1.0, r, out=np.zeros(r.shape, dtype=np.float64), where=ok)


# ------------------------------------------------------------------------------ set / reject
def set_scores(tp: np.ndarray, pred_size: np.ndarray, gold_size: np.ndarray) -> dict[str, np.ndarray]:
    """Per-query set precision / recall / F1 from counts (PhotoBench's recipe; see module doc)."""
    tp = np.asarray(tp, dtype=np.float64)
    pred = np.asarray(pred_size, dtype=np.float64)
    gold = np.asarray(gold_size, dtype=np.float64)
    p = np.divide(tp, pred, out=np.zeros_like(tp), where=pred > 0)
    r = np.divide(tp, gold, out=np.zeros_like(tp), where=gold > 0)
    f = np.divide(2 * p * r, p + r, out=np.zeros_like(tp), where=(p + r) > 0)
    return {"set_precision": p, "set_recall": r, "set_f1": f}


def reject_counts(pred_empty: np.ndarray, gold_empty: np.ndarray) -> dict[str, np.ndarray]:
    """Per-query 0/1 indicators a (correct rejection), b (false rejection), c (missed rejection),
    d (correct non-rejection); their sums are PhotoBench's A, B, C, D."""
    pe = np.asarray(pred_empty, dtype=bool)
    ge = np.asarray(gold_empty, dtype=bool)
    f = np.float64
    return {"a": (ge & pe).astype(f), "b": (~ge & pe).astype(f), "c": (ge & ~pe).astype(f), "d": (~ge & ~pe).astype(f)}


def reject_scores(a: float, b: float, c: float) -> dict[str, float]:
    """Reject-Precision A/(A+B), Reject-Recall A/(A+C), Reject-F1 2A/(2A+B+C); NaN for 0/0."""
    return {
        "reject_precision": safe_ratio(a, a + b),
        "reject_recall": safe_ratio(a, a + c),
        "reject_f1": safe_ratio(2 * a, 2 * a + b + c),
    }


# ------------------------------------------------------------------------------ the family table
class _Inputs:
    """What one condition's rankings give the metric families (each part computed on first use)."""

    def __init__(self, topk_idx, first_rank, labels: Labels, include_zero_gt: bool, kmax: int, pred_size, tp,
                 reference=None, rbo_p: float = DEFAULT_RBO_P, rbo_depth: int = DEFAULT_RBO_DEPTH):
        self.topk_idx, self.first_rank, self.labels, self.kmax = topk_idx, first_rank, labels, kmax
        self.pred_size, self.tp = pred_size, tp
        # the clean ranking the stability measures compare with (None: this is the clean one)
        self.reference = topk_idx if reference is None else reference
        self.rbo_p, self.rbo_depth = rbo_p, rbo_depth
        self.every = np.ones(labels.n_queries)
        self.n_pos = labels.n_pos
        self.has_gt = (self.n_pos > 0).astype(np.float64)
        self.inc = np.ones(labels.n_queries) if include_zero_gt else self.has_gt

    @cached_property
    def rel(self) -> np.ndarray:
        return self.labels.lookup(self.topk_idx[:, : self.kmax]) if self.kmax else np.zeros((self.labels.n_queries, 0))

    @cached_property
    def ideal(self) -> np.ndarray:
        return self.labels.ideal(self.kmax)

    @cached_property
    def sets(self) -> dict[str, np.ndarray]:
        return set_scores(self.tp, self.pred_size, self.n_pos)

    @cached_property
    def rejects(self) -> dict[str, np.ndarray]:
        return reject_counts(np.asarray(self.pred_size) == 0, self.n_pos == 0)


def _mean(per_query: Callable[[_Inputs, int | None], np.ndarray]) -> Callable[[_Inputs, int | None], QueryStat]:
    """A ranking metric: the mean of its per-query values over the included queries."""
    return lambda x, k: QueryStat(per_query(x, k) * x.inc, x.inc)


def _set(name: str) -> Callable[[_Inputs, int | None], QueryStat]:
    return lambda x, _k: QueryStat(x.sets[name] * x.has_gt, x.has_gt)


def _reject(a: float, b: float, c: float) -> Callable[[_Inputs, int | None], QueryStat]:
    """Σ(a·A) / Σ(a·A + b·B + c·C) over all queries (A, B, C the per-query reject indicators)."""

    def stat(x: _Inputs, _k: int | None) -> QueryStat:
        r = x.rejects
        return QueryStat(a * r["a"], a * r["a"] + b * r["b"] + c * r["c"])

    return stat


def _stable(per_query: Callable[[_Inputs, int | None], np.ndarray]) -> Callable[[_Inputs, int | None], QueryStat]:
    """A stability measure (:mod:`.stability`): the mean over every query, labels play no part."""
    return lambda x, k: QueryStat(per_query(x, k) * x.every, x.every)


@dataclass(frozen=True)
class MetricFamily:
    """One metric family (the name before ``@k``).

    ``cutoff``: ``"expand"`` (a bare name expands over the cut-offs ks: hit, recall, ndcg),
    ``"optional"`` (bare = uncut: mrr) or ``"none"`` (no ``@k``).  ``topk``: needs the top-k list
    (else the first-positive rank or the answer sets).  ``binary``: per-query values are 0/1 (exact
    McNemar test instead of the permutation test).  ``counts``: the queries that count, and that the
    bootstrap resamples -- ``"ranking"`` (queries with a positive; every query with
    ``include_zero_gt``), ``"positives"`` (queries with a positive) or ``"all"``.  ``sets``: needs
    answer sets (a set threshold).  ``higher_is_better``: the direction of the metric, the one place it
    is declared (False for ``flip@k``, the share of queries whose top k changed): every reading of a Δ
    as a drop or a gain, every ranking by robustness and every error rate goes through
    :func:`metric_sign`.
    """

    name: str
    stat: Callable[[_Inputs, int | None], QueryStat]
    cutoff: str = "none"
    topk: bool = False
    binary: bool = False
    counts: str = "all"
    sets: bool = False
    higher_is_better: bool = True


#: Every metric family by name; an unknown name is an error listing the known ones.
METRIC_FAMILIES: Table[MetricFamily] = Table("metric", param="metrics")
for _fam in (
    MetricFamily("hit", _mean(lambda x, k: _hit_at_k(x.rel, k)), "expand", topk=True, binary=True, counts="ranking"),
    MetricFamily("recall", _mean(lambda x, k: _recall_at_k(x.rel, x.n_pos, k)), "expand", topk=True, counts="ranking"),
    MetricFamily("ndcg", _mean(lambda x, k: _ndcg_at_k(x.rel, x.ideal, k)), "expand", topk=True, counts="ranking"),
    MetricFamily("mrr", _mean(lambda x, k: _reciprocal_rank(x.first_rank, k)), "optional", counts="ranking"),
    *(MetricFamily(m, _set(m), counts="positives", sets=True) for m in SET_METRICS),
    MetricFamily("reject_precision", _reject(1, 1, 0), sets=True),
    MetricFamily("reject_recall", _reject(1, 0, 1), sets=True),
    MetricFamily("reject_f1", _reject(2, 1, 1), sets=True),
    # label-free: the corrupted ranking against the clean one of the same query (SPEC §14)
    MetricFamily("overlap", _stable(lambda x, k: overlap_at_k(x.reference, x.topk_idx, k)), "expand", topk=True),
    MetricFamily("rbo", _stable(lambda x, _k: rbo_ext(x.reference, x.topk_idx, x.rbo_p, x.rbo_depth))),
    MetricFamily("flip", _stable(lambda x, k: flip_at_k(x.reference, x.topk_idx, k)), "expand", topk=True, binary=True,
                 higher_is_better=False),
):
    METRIC_FAMILIES.register(_fam.name, _fam)


# ------------------------------------------------------------------------------ names
def _split(name: str) -> tuple[MetricFamily, int | None]:
    """The family and cut-off of a metric name; :class:`ConfigError` for an unknown or malformed one."""
    m = _NAME_RE.match(name)
    fam_name = m.group(1) if m else name
    if fam_name not in METRIC_FAMILIES:
        spelled = {"expand": "{}[@k]", "optional": "{}[@k]", "none": "{}"}
        known = [spelled[f.cutoff].format(f.name) for _, f in METRIC_FAMILIES.items()]
        raise ConfigError(f"unknown metric {name!r}{hint_and_known(fam_name, known, among=METRIC_FAMILIES.names())}, "
                          f"or the groups {', '.join(repr(g) for g in _METRIC_GROUPS)}", param="metrics")
    fam = METRIC_FAMILIES.get(fam_name)
    k = None if m is None or m.group(2) is None else int(m.group(2))
    if k is not None and fam.cutoff == "none":
        raise ConfigError(f"metric {name!r}: {fam.name} takes no @k", param="metrics")
    if k is not None and k < 1:
        raise ConfigError(f"metric {name!r}: k must be >= 1", param="metrics")
    return fam, k


def parse_metrics(spec: str | Sequence[str] | None, ks: Sequence[int] = DEFAULT_KS) -> list[str]:
    """Expand a metric list: ``"hit,recall@3,ndcg,mrr"`` with ``ks`` -> ``["hit@1", ..., "mrr"]``.

    A family without ``@k`` (hit, recall, ndcg) expands over ``ks``; ``mrr`` stays uncut unless
    written ``mrr@k``.  ``set``/``reject`` expand to the three set/reject metrics.  Unknown names
    raise :class:`~snapbench.core.errors.ConfigError` listing what is accepted.
    """
    if spec is None:
        spec = "hit,recall,ndcg,mrr"
    parts = [p.strip() for p in (spec.split(",") if isinstance(spec, str) else spec) if p.strip()]
    out: list[str] = []
    for p in parts:
        name = p.lower()
        if name in _METRIC_GROUPS:
            out += list(_METRIC_GROUPS[name])
            continue
        fam, k = _split(name)
        if k is None and fam.cutoff == "expand":
            out += [f"{fam.name}@{int(x)}" for x in ks]
        else:
            out.append(fam.name if k is None else f"{fam.name}@{k}")
    seen: set[str] = set()
    return [m for m in out if not (m in seen or seen.add(m))]


def metric_family(name: str) -> MetricFamily:
    """The :class:`MetricFamily` of a metric name (``hit@5`` -> hit)."""
    return _split(name)[0]


def metric_k(name: str) -> int | None:
    """The cut-off of a metric name (``None`` for uncut ``mrr`` and set/reject metrics)."""
    m = _NAME_RE.match(name)
    return int(m.group(2)) if m and m.group(2) else None


def is_binary_metric(name: str) -> bool:
    """Per-query values are 0/1 by definition (hit@k): the exact McNemar test applies."""
    try:
        return metric_family(name).binary
    except ConfigError:
        return False


def metric_sign(name: str) -> int:
    """+1 when a higher value of ``name`` is better, -1 when higher is worse (``flip@k``): ``sign · Δ``
    (Δ = condition − clean) is a gain, ``−sign · Δ`` the drop (the drop of a higher-is-worse metric is
    its rise).  +1 for a name that is no metric (as :func:`is_binary_metric`, it raises nothing)."""
    try:
        return 1 if metric_family(name).higher_is_better else -1
    except ConfigError:
        return 1


def ranking_depth(metrics: Sequence[str], rbo_depth: int = DEFAULT_RBO_DEPTH) -> int:
    """The top-k depth the metrics need (at least 1; ``rbo_depth`` when ``rbo`` is among them)."""
    rbo = [int(rbo_depth)] if "rbo" in metrics else []
    return max([k for m in metrics if metric_family(m).topk and (k := metric_k(m)) is not None] + rbo + [1])


def counted_rows(metric: str, n_pos: np.ndarray, include_zero_gt: bool = False) -> np.ndarray:
    """The query rows that count for ``metric`` (see :class:`MetricFamily` ``counts``): the queries the
    bootstrap resamples, so that every resample counts the same queries (a query that cannot count --
    a zero-GT query in a ranking metric -- is never drawn)."""
    rule = metric_family(metric).counts
    n_pos = np.asarray(n_pos)
    if rule == "all" or (rule == "ranking" and include_zero_gt):
        return np.arange(n_pos.size)
    return np.flatnonzero(n_pos > 0)


# ------------------------------------------------------------------------------ bridge
def query_stats(
    topk_idx: np.ndarray,
    first_rank: np.ndarray,
    labels: Labels,
    metrics: Sequence[str],
    *,
    include_zero_gt: bool = False,
    pred_size: np.ndarray | None = None,
    tp: np.ndarray | None = None,
    reference: np.ndarray | None = None,
    rbo_p: float = DEFAULT_RBO_P,
    rbo_depth: int = DEFAULT_RBO_DEPTH,
) -> dict[str, QueryStat]:
    """Per-query :class:`QueryStat` of every metric in ``metrics`` for one condition.

    ``topk_idx`` (Q, K) is the ranking (K >= the largest cut-off asked for; ``-1`` = empty slot),
    ``first_rank`` (Q,) the 1-based rank of the first positive (NaN: no positive, inf: not retrieved).
    Ranking metrics are averaged over queries with at least one positive, unless
    ``include_zero_gt`` (then zero-GT queries count as 0, like ranx).  Set metrics need the
    predicted set sizes ``pred_size`` and true positives ``tp`` per query.  The stability measures
    (``overlap@k``, ``rbo``, ``flip@k``) compare ``topk_idx`` with ``reference``, the clean ranking of
    the same queries (``None``: ``topk_idx`` is the clean ranking, compared with itself).
    """
    parsed = {m: _split(m) for m in metrics}
    kmax = max([k for fam, k in parsed.values() if fam.topk and k is not None], default=0)
    if kmax > topk_idx.shape[1]:
        raise ValueError(f"ranking depth {topk_idx.shape[1]} < largest cut-off {kmax}")  # a caller's bug
    if any(fam.sets for fam, _ in parsed.values()) and (pred_size is None or tp is None):
        raise ConfigError("set/reject metrics need predicted sets (give a set threshold)", param="set_threshold")
    if reference is not None and reference.shape[0] != topk_idx.shape[0]:
        raise ValueError(f"reference ranking of {reference.shape[0]} queries for {topk_idx.shape[0]}")  # a caller's bug
    x = _Inputs(topk_idx, first_rank, labels, include_zero_gt, kmax, pred_size, tp, reference, rbo_p, rbo_depth)
    return {m: fam.stat(x, k) for m, (fam, k) in parsed.items()}
