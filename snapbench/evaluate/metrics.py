"""Retrieval metrics as small pure functions over rankings (vectorised over queries).

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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

__all__ = [
    "DEFAULT_KS",
    "RANKING_FAMILIES",
    "SET_METRICS",
    "REJECT_METRICS",
    "Labels",
    "QueryStat",
    "parse_metrics",
    "metric_k",
    "is_binary_metric",
    "hit_at_k",
    "recall_at_k",
    "ndcg_at_k",
    "dcg",
    "reciprocal_rank",
    "set_scores",
    "reject_counts",
    "reject_scores",
    "safe_ratio",
    "query_stats",
    "answer_set_metrics",
]

DEFAULT_KS: tuple[int, ...] = (1, 5, 10, 20)
RANKING_FAMILIES: tuple[str, ...] = ("hit", "recall", "ndcg", "mrr")
SET_METRICS: tuple[str, ...] = ("set_precision", "set_recall", "set_f1")
REJECT_METRICS: tuple[str, ...] = ("reject_precision", "reject_recall", "reject_f1")
_METRIC_RE = re.compile(r"^(hit|recall|ndcg|mrr)(?:@(\d+))?$")


# ----------------------------------------------------------------------------------- labels
@dataclass(frozen=True)
class Labels:
    """Relevance labels as a sparse query x gallery matrix (CSR; only grades > 0 are stored).

    ``indptr`` (Q + 1), ``items`` (column indices, ascending within a row) and ``grades`` (float).
    """

    n_queries: int
    n_items: int
    indptr: np.ndarray
    items: np.ndarray
    grades: np.ndarray

    @classmethod
    def from_lists(
        cls, gold: Sequence[Iterable[int] | Mapping[int, float]], n_items: int
    ) -> "Labels":
        """From one entry per query: an iterable of positive column indices (grade 1) or a mapping
        column -> grade.  Grades <= 0 are non-relevant and dropped; duplicates are an error."""
        indptr = [0]
        items: list[int] = []
        grades: list[float] = []
        for q, g in enumerate(gold):
            pairs = sorted(g.items()) if isinstance(g, Mapping) else sorted((int(j), 1.0) for j in g)
            cols = [int(j) for j, _ in pairs]
            if len(set(cols)) != len(cols):
                raise ValueError(f"query row {q}: duplicate gallery index in labels")
            for j, grade in pairs:
                if not 0 <= int(j) < n_items:
                    raise ValueError(f"query row {q}: gallery index {j} outside 0..{n_items - 1}")
                if float(grade) > 0:
                    items.append(int(j))
                    grades.append(float(grade))
            indptr.append(len(items))
        return cls(
            len(gold),
            int(n_items),
            np.asarray(indptr, dtype=np.int64),
            np.asarray(items, dtype=np.int64),
            np.asarray(grades, dtype=np.float64),
        )

    @classmethod
    def from_dense(cls, relevance: np.ndarray) -> "Labels":
        """From a dense (Q, N) matrix of grades (values <= 0 are non-relevant)."""
        rel = np.asarray(relevance, dtype=np.float64)
        rows, cols = np.nonzero(rel > 0)
        indptr = np.zeros(rel.shape[0] + 1, dtype=np.int64)
        np.add.at(indptr, rows + 1, 1)
        return cls(rel.shape[0], rel.shape[1], np.cumsum(indptr), cols.astype(np.int64), rel[rows, cols])

    @property
    def n_pos(self) -> np.ndarray:
        """Number of positives per query."""
        return np.diff(self.indptr)

    @property
    def graded(self) -> bool:
        return bool(self.grades.size) and bool(np.any(self.grades != 1.0))

    @property
    def pos_rows(self) -> np.ndarray:
        return np.repeat(np.arange(self.n_queries, dtype=np.int64), self.n_pos)

    def rows(self, start: int, stop: int) -> "Labels":
        """The labels of query rows ``start:stop`` (renumbered from 0)."""
        a, b = self.indptr[start], self.indptr[stop]
        return Labels(
            stop - start, self.n_items, self.indptr[start : stop + 1] - a, self.items[a:b], self.grades[a:b]
        )

    def select(self, rows: np.ndarray) -> "Labels":
        """The labels of the given query rows, in that order (renumbered from 0)."""
        rows = np.asarray(rows, dtype=np.int64)
        lo, hi = self.indptr[rows], self.indptr[rows + 1]
        take = np.concatenate([np.arange(a, b) for a, b in zip(lo, hi)]) if rows.size else np.zeros(0, np.int64)
        indptr = np.concatenate([[0], np.cumsum(hi - lo)]).astype(np.int64)
        return Labels(rows.size, self.n_items, indptr, self.items[take].astype(np.int64), self.grades[take])

    def lookup(self, idx: np.ndarray) -> np.ndarray:
        """Grades of the items ``idx`` (Q, K) of each query row; 0 for non-relevant or ``-1`` slots."""
        idx = np.asarray(idx, dtype=np.int64)
        out = np.zeros(idx.shape, dtype=np.float64)
        if self.items.size == 0 or idx.size == 0:
            return out
        n = self.n_items
        keys = self.pos_rows * n + self.items  # globally sorted: rows ascending, columns ascending
        q = np.arange(idx.shape[0], dtype=np.int64)[:, None]
        want = q * n + idx
        pos = np.searchsorted(keys, want).clip(max=keys.size - 1)
        hit = (keys[pos] == want) & (idx >= 0)
        out[hit] = self.grades[pos[hit]]
        return out

    def ideal(self, k: int) -> np.ndarray:
        """(Q, k) grades of each query sorted descending and cut at k (zero-padded): the IDCG list."""
        out = np.zeros((self.n_queries, k), dtype=np.float64)
        if self.items.size == 0 or k == 0:
            return out
        rows = self.pos_rows
        order = np.lexsort((-self.grades, rows))
        rank = np.arange(self.items.size) - self.indptr[rows[order]]
        keep = rank < k
        out[rows[order][keep], rank[keep]] = self.grades[order][keep]
        return out


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

    def subset(self, rows: np.ndarray) -> "QueryStat":
        return QueryStat(self.num[rows], self.den[rows])


def safe_ratio(num: float, den: float) -> float:
    """num / den, NaN when den == 0 (an undefined metric is not 0)."""
    return float(num) / float(den) if den != 0 else float("nan")


# ------------------------------------------------------------------------------ names
def parse_metrics(spec: str | Sequence[str] | None, ks: Sequence[int] = DEFAULT_KS) -> list[str]:
    """Expand a metric list: ``"hit,recall@3,ndcg,mrr"`` with ``ks`` -> ``["hit@1", ..., "mrr"]``.

    A family without ``@k`` (hit, recall, ndcg) expands over ``ks``; ``mrr`` stays uncut unless
    written ``mrr@k``.  ``set``/``reject`` expand to the three set/reject metrics.  Unknown names
    raise ``ValueError`` listing what is accepted.
    """
    if spec is None:
        spec = "hit,recall,ndcg,mrr"
    parts = [p.strip() for p in (spec.split(",") if isinstance(spec, str) else spec) if p.strip()]
    out: list[str] = []
    for p in parts:
        name = p.lower()
        if name in ("set", "reject"):
            out += list(SET_METRICS if name == "set" else REJECT_METRICS)
            continue
        if name in SET_METRICS or name in REJECT_METRICS:
            out.append(name)
            continue
        m = _METRIC_RE.match(name)
        if not m:
            raise ValueError(
                f"unknown metric {p!r}: use hit, recall, ndcg (optionally @k), mrr, mrr@k, "
                f"{', '.join(SET_METRICS + REJECT_METRICS)}, 'set' or 'reject'"
            )
        fam, k = m.group(1), m.group(2)
        if k is not None and int(k) < 1:
            raise ValueError(f"metric {p!r}: k must be >= 1")
        if k is not None or fam == "mrr":
            out.append(name)
        else:
            out += [f"{fam}@{int(x)}" for x in ks]
    seen: set[str] = set()
    return [m for m in out if not (m in seen or seen.add(m))]


def metric_k(name: str) -> int | None:
    """The cut-off of a ranking metric name (``None`` for uncut ``mrr`` and set/reject metrics)."""
    m = _METRIC_RE.match(name)
    return int(m.group(2)) if m and m.group(2) else None


def is_binary_metric(name: str) -> bool:
    """Per-query values are 0/1 by definition (hit@k): the exact McNemar test applies."""
    return name.startswith("hit@")


# ------------------------------------------------------------------------------ ranking metrics
def hit_at_k(rel_topk: np.ndarray, k: int) -> np.ndarray:
    """(Q,) 1.0 if any of the first ``k`` ranked items is relevant (grade > 0)."""
    return np.any(rel_topk[:, :k] > 0, axis=1).astype(np.float64)


def recall_at_k(rel_topk: np.ndarray, n_pos: np.ndarray, k: int) -> np.ndarray:
    """(Q,) relevant items in the top ``k`` / all relevant items (0 where a query has none)."""
    found = np.count_nonzero(rel_topk[:, :k] > 0, axis=1)
    n_pos = np.asarray(n_pos)
    return np.divide(found, n_pos, out=np.zeros(found.shape, dtype=np.float64), where=n_pos > 0)


def dcg(gains: np.ndarray) -> np.ndarray:
    """(Q,) linear-gain DCG: Σ_i gain_i / log2(i + 1), i = 1..K."""
    disc = 1.0 / np.log2(np.arange(2, gains.shape[1] + 2, dtype=np.float64))
    return gains @ disc


def ndcg_at_k(rel_topk: np.ndarray, ideal_topk: np.ndarray, k: int) -> np.ndarray:
    """(Q,) DCG@k / IDCG@k with linear gains (0 where IDCG is 0)."""
    num = dcg(rel_topk[:, :k])
    den = dcg(ideal_topk[:, :k])
    return np.divide(num, den, out=np.zeros(num.shape, dtype=np.float64), where=den > 0)


def reciprocal_rank(first_rank: np.ndarray, k: int | None = None) -> np.ndarray:
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
) -> dict[str, QueryStat]:
    """Per-query :class:`QueryStat` of every metric in ``metrics`` for one condition.

    ``topk_idx`` (Q, K) is the ranking (K >= the largest cut-off asked for; ``-1`` = empty slot),
    ``first_rank`` (Q,) the 1-based rank of the first positive (NaN: no positive, inf: not retrieved).
    Ranking metrics are averaged over queries with at least one positive, unless
    ``include_zero_gt`` (then zero-GT queries count as 0, like ranx).  Set metrics need the
    predicted set sizes ``pred_size`` and true positives ``tp`` per query.
    """
    n_pos = labels.n_pos
    has_gt = n_pos > 0
    inc = np.ones(labels.n_queries) if include_zero_gt else has_gt.astype(np.float64)
    ks = [metric_k(m) for m in metrics if metric_k(m) is not None and not m.startswith("mrr")]
    kmax = max(ks, default=0)
    if kmax > topk_idx.shape[1]:
        raise ValueError(f"ranking depth {topk_idx.shape[1]} < largest cut-off {kmax}")
    rel = labels.lookup(topk_idx[:, :kmax]) if kmax else np.zeros((labels.n_queries, 0))
    ideal = labels.ideal(kmax) if any(m.startswith("ndcg") for m in metrics) else None
    out: dict[str, QueryStat] = {}
    need_sets = any(m in SET_METRICS or m in REJECT_METRICS for m in metrics)
    if need_sets and (pred_size is None or tp is None):
        raise ValueError("set/reject metrics need predicted sets (give a set threshold)")
    sets = set_scores(tp, pred_size, n_pos) if need_sets else {}
    rej = reject_counts(np.asarray(pred_size) == 0, ~has_gt) if need_sets else {}
    normal = has_gt.astype(np.float64)
    for m in metrics:
        k = metric_k(m)
        if m.startswith("hit@"):
            v = hit_at_k(rel, k)
        elif m.startswith("recall@"):
            v = recall_at_k(rel, n_pos, k)
        elif m.startswith("ndcg@"):
            v = ndcg_at_k(rel, ideal, k)
        elif m.startswith("mrr"):
            v = reciprocal_rank(first_rank, k)
        elif m in SET_METRICS:
            out[m] = QueryStat(sets[m] * normal, normal)
            continue
        elif m == "reject_precision":
            out[m] = QueryStat(rej["a"], rej["a"] + rej["b"])
            continue
        elif m == "reject_recall":
            out[m] = QueryStat(rej["a"], rej["a"] + rej["c"])
            continue
        elif m == "reject_f1":
            out[m] = QueryStat(2 * rej["a"], 2 * rej["a"] + rej["b"] + rej["c"])
            continue
        else:  # pragma: no cover - parse_metrics rejects these first
            raise ValueError(f"unknown metric {m!r}")
        out[m] = QueryStat(v * inc, inc)
    return out


def answer_set_metrics(predicted: Sequence[Iterable], gold: Sequence[Iterable]) -> dict[str, float]:
    """Set and reject metrics for variable-length answers given directly as id collections.

    ``predicted[i]`` / ``gold[i]`` are the returned and the relevant ids of query i (an empty
    prediction is a rejection, an empty gold set a zero-GT query).  Set precision/recall/F1 are
    averaged over queries with gold; reject metrics count over all queries (NaN for 0/0).  Also
    returns the counts ``A``, ``B``, ``C``, ``D``.
    """
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predictions for {len(gold)} gold sets")
    p_sets = [set(p) for p in predicted]
    g_sets = [set(g) for g in gold]
    tp = np.array([len(p & g) for p, g in zip(p_sets, g_sets)], dtype=np.float64)
    ps = np.array([len(p) for p in p_sets], dtype=np.float64)
    gs = np.array([len(g) for g in g_sets], dtype=np.float64)
    per = set_scores(tp, ps, gs)
    normal = gs > 0
    out = {m: float(v[normal].mean()) if normal.any() else float("nan") for m, v in per.items()}
    c = reject_counts(ps == 0, gs == 0)
    sums = {k: float(v.sum()) for k, v in c.items()}
    out.update(reject_scores(sums["a"], sums["b"], sums["c"]))
    out.update({"A": sums["a"], "B": sums["b"], "C": sums["c"], "D": sums["d"]})
    return out
