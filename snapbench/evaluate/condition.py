"""One condition's per-query results, from a score matrix (in row blocks) or from a ranked run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ..core.errors import EvaluationInputError
from ..core.ranking import first_positive_rank, topk_indices
from .metrics import Labels, QueryStat, metric_family, metric_k, query_stats, ranking_depth
from .stability import DEFAULT_RBO_DEPTH, DEFAULT_RBO_P, is_stability_metric

__all__ = ["ConditionEval", "depth_limited_metrics", "evaluate_matrix", "evaluate_ranking", "per_query_values"]


@dataclass
class RunRanking:
    """A condition read from a TREC run: per query the retrieved items in our order.

    ``idx`` (Q, L) gallery column indices (``-1`` padding), ``scores`` (Q, L) (NaN padding).
    """

    idx: np.ndarray
    scores: np.ndarray


@dataclass
class ConditionEval:
    """Per-query results of one condition: metric stats, rank of the first positive, optional top-k.

    ``ranking``: the clean condition's top-d indices, kept (only when evaluated as the reference of
    stability measures) for the corrupted conditions to be compared with."""

    stats: dict[str, QueryStat]
    first_rank: np.ndarray
    topk_idx: np.ndarray | None = None
    topk_scores: np.ndarray | None = None
    ranking: np.ndarray | None = None


def listed_first_ranks(labels: Labels, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First-positive ranks read off ranked lists ``idx`` (Q, K) that are exact prefixes of the full
    rankings (NaN where no positive is listed), and the rows with a positive still to be ranked."""
    pos = labels.lookup(idx) > 0
    found = pos.any(axis=1)
    first = np.where(found, np.argmax(pos, axis=1) + 1.0, np.nan)
    return first, np.flatnonzero(~found & (labels.n_pos > 0))


def condition_eval(idx: np.ndarray, first_rank: np.ndarray, labels: Labels, metrics: Sequence[str], *,
                   include_zero_gt: bool, pred: np.ndarray | None, tp: np.ndarray | None,
                   reference: np.ndarray | None, rbo_p: float, rbo_depth: int, export_depth: int = 0,
                   export_scores: np.ndarray | None = None) -> ConditionEval:
    """The :class:`ConditionEval` of one condition's ranking ``idx`` and first-positive ranks.  The
    clean condition (no ``reference``) of an evaluation with stability measures keeps its ranking:
    the other conditions are compared with it."""
    stats = query_stats(idx, first_rank, labels, metrics, include_zero_gt=include_zero_gt, pred_size=pred, tp=tp,
                        reference=reference, rbo_p=rbo_p, rbo_depth=rbo_depth)
    keep = reference is None and any(is_stability_metric(m) for m in metrics)
    out = ConditionEval(stats, first_rank, ranking=idx if keep else None)
    if export_depth:
        out.topk_idx = idx[:, :export_depth]
        out.topk_scores = export_scores
    return out


def _rank_block(s: np.ndarray, lab: Labels, r0: int, depth: int, *, name: str, query_ids: Sequence[str] | None,
                set_threshold: float | None, export_depth: int):
    """Rows ``r0..`` of one score matrix: top-``depth`` indices, first-positive ranks, answer-set counts
    and exported top scores; :class:`EvaluationInputError` for non-numeric or non-finite scores."""
    if s.dtype.kind in "iu":
        s = s.astype(np.float64)
    if s.dtype.kind != "f":
        raise EvaluationInputError(f"{name}: scores must be real numbers, got dtype {s.dtype}")
    bad = ~np.isfinite(s)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        q = f" (query {query_ids[r0 + r]!r})" if query_ids is not None else ""
        raise EvaluationInputError(
            f"{name}: non-finite score {s[r, c]} at row {r0 + r}{q}, column {c}; "
            f"{int(bad.sum())} such value(s) in rows {r0}..{r0 + s.shape[0] - 1}"
        )
    idx = topk_indices(s, depth)
    # The top-k list is the exact prefix of the full ranking: a positive found there has its
    # final rank; only the other rows need the full-gallery count.
    fr, need = listed_first_ranks(lab, idx)
    if need.size:
        sub = lab.select(need)
        fr[need] = first_positive_rank(s[need], sub.pos_rows, sub.items)
    pred = tp = None
    if set_threshold is not None:
        pred = np.count_nonzero(s >= set_threshold, axis=1)
        hit = s[lab.pos_rows, lab.items] >= set_threshold
        tp = np.bincount(lab.pos_rows[hit], minlength=s.shape[0])
    vals = None
    if export_depth:
        vals = np.take_along_axis(s, np.maximum(idx[:, :export_depth], 0), axis=1).astype(np.float64)
        vals[idx[:, :export_depth] < 0] = np.nan
    return idx, fr, pred, tp, vals


def evaluate_matrix(
    scores,
    labels: Labels,
    metrics: Sequence[str],
    *,
    name: str = "scores",
    query_ids: Sequence[str] | None = None,
    set_threshold: float | None = None,
    include_zero_gt: bool = False,
    export_depth: int = 0,
    block_rows: int = 256,
    workers: int = 1,
    executor: Executor | None = None,
    reference: np.ndarray | None = None,
    rbo_p: float = DEFAULT_RBO_P,
    rbo_depth: int = DEFAULT_RBO_DEPTH,
) -> ConditionEval:
    """Evaluate one Q x N score matrix (array, memmap, or anything sliceable by row blocks).

    Rows are processed in blocks of ``block_rows`` (on ``workers`` threads; numpy releases the GIL
    in partition/compare), so at most ``workers x block_rows x N`` scores are materialised; pass an
    ``executor`` to reuse one thread pool across conditions.
    NaN/inf scores raise :class:`EvaluationInputError` naming ``name``, the row and the column.
    Stability measures (``overlap@k``, ``rbo``, ``flip@k``) compare with ``reference``, the clean
    condition's :attr:`ConditionEval.ranking`; without one this is the clean condition, which keeps
    its ranking for that.
    """
    n_q, n = scores.shape
    if n_q != labels.n_queries or n != labels.n_items:
        raise EvaluationInputError(
            f"{name}: shape {scores.shape} does not match labels ({labels.n_queries} x {labels.n_items})"
        )
    if n == 0:
        raise EvaluationInputError(f"{name}: empty gallery")
    depth = max(ranking_depth(metrics, rbo_depth), export_depth)

    def block(r0: int, r1: int):
        return _rank_block(np.asarray(scores[r0:r1]), labels.rows(r0, r1), r0, depth, name=name,
                           query_ids=query_ids, set_threshold=set_threshold, export_depth=export_depth)

    bounds = [(a, min(a + block_rows, n_q)) for a in range(0, n_q, block_rows)]
    if executor is not None and len(bounds) > 1:
        parts = list(executor.map(lambda b: block(*b), bounds))
    elif workers > 1 and len(bounds) > 1:
        with ThreadPoolExecutor(max_workers=workers) as ex:
            parts = list(ex.map(lambda b: block(*b), bounds))
    else:
        parts = [block(*b) for b in bounds]
    idx = np.concatenate([p[0] for p in parts]) if parts else np.zeros((0, depth), dtype=np.int64)
    fr = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0)
    pred = tp = None
    if set_threshold is not None:
        pred = np.concatenate([p[2] for p in parts])
        tp = np.concatenate([p[3] for p in parts])
    return condition_eval(idx, fr, labels, metrics, include_zero_gt=include_zero_gt, pred=pred, tp=tp,
                          reference=reference, rbo_p=rbo_p, rbo_depth=rbo_depth, export_depth=export_depth,
                          export_scores=np.concatenate([p[4] for p in parts]) if export_depth else None)


def evaluate_ranking(
    run: RunRanking,
    labels: Labels,
    metrics: Sequence[str],
    *,
    set_threshold: float | None = None,
    include_zero_gt: bool = False,
    export_depth: int = 0,
    reference: np.ndarray | None = None,
    rbo_p: float = DEFAULT_RBO_P,
    rbo_depth: int = DEFAULT_RBO_DEPTH,
) -> ConditionEval:
    """Evaluate ranked lists (e.g. from a TREC run).  A positive that is not in a query's list has
    rank inf (reciprocal rank 0); metrics cut deeper than the list see empty slots.  ``reference``:
    as in :func:`evaluate_matrix` (``rbo`` is then extrapolated from the lists' depth)."""
    depth = max(ranking_depth(metrics, rbo_depth), export_depth)
    idx = run.idx
    if idx.shape[1] < depth:
        pad = np.full((idx.shape[0], depth - idx.shape[1]), -1, dtype=np.int64)
        idx = np.concatenate([idx, pad], axis=1)
    first, unlisted = listed_first_ranks(labels, run.idx)
    first[unlisted] = np.inf
    pred = tp = None
    if set_threshold is not None:
        inset = np.nan_to_num(run.scores, nan=-np.inf) >= set_threshold
        pred = np.count_nonzero(inset, axis=1)
        tp = np.count_nonzero(inset & (labels.lookup(run.idx) > 0), axis=1)
    sc = None
    if export_depth:
        sc = np.full((idx.shape[0], export_depth), np.nan)
        w = min(export_depth, run.scores.shape[1])
        sc[:, :w] = run.scores[:, :w]
    return condition_eval(idx, first, labels, metrics, include_zero_gt=include_zero_gt, pred=pred, tp=tp,
                          reference=reference, rbo_p=rbo_p, rbo_depth=rbo_depth, export_depth=export_depth,
                          export_scores=sc)


def depth_limited_metrics(metrics: Sequence[str], depth: int, n_items: int) -> list[str]:
    """Ranking metrics a run of ``depth`` items per query cannot compute exactly: cut-offs deeper
    than the run, and an uncut MRR, unless the run ranks the whole gallery."""
    if depth >= n_items:
        return []
    out = []
    for m in metrics:
        fam, k = metric_family(m), metric_k(m)
        if fam.sets:
            continue
        if (k is None and fam.cutoff == "optional") or (k is not None and k > depth):
            out.append(m)
    return out


def per_query_values(evals: Mapping[str, ConditionEval], metrics: Sequence[str]) -> dict[str, dict[str, np.ndarray]]:
    """``{condition: {metric: one value per query}}``; NaN where the query does not count (a zero-GT
    query in a ranking metric)."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for cond, ev in evals.items():
        out[cond] = {}
        for m in metrics:
            num = np.asarray(ev.stats[m].num, dtype=np.float64)
            den = np.asarray(ev.stats[m].den, dtype=np.float64)
            out[cond][m] = np.divide(num, den, out=np.full(num.shape, np.nan), where=den > 0)
    return out
