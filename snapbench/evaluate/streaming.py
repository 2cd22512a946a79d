"""Evaluate scores that arrive as gallery-column chunks (shards): exact, never holding Q x N.

For galleries too large for one score matrix per row block (millions of items), the scores of all
queries come shard by shard in gallery order.  :func:`evaluate_column_chunks` keeps, per query, a
running exact top-k (:class:`snapbench.core.ranking.StreamingTopK`, the one tie rule), the best positive
seen so far and, for set metrics, running counts.  The rank of the first positive is exact: from
the top-k when a positive is there, otherwise from a second pass that counts the items ranked above
the best positive (higher score, or the same score at a smaller gallery column).  The result is the
:class:`~snapbench.app.evaluate.ConditionEval` that :func:`evaluate_matrix` gives for the same
scores.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

import numpy as np

from ..core.errors import EvaluationInputError
from ..core.ranking import StreamingTopK
from .condition import ConditionEval, condition_eval, listed_first_ranks
from .metrics import Labels, ranking_depth
from .stability import DEFAULT_RBO_DEPTH, DEFAULT_RBO_P

__all__ = ["evaluate_column_chunks"]

_ChunkSource = Callable[[], Iterable[tuple[int, np.ndarray]]]


def _check(S: np.ndarray, name: str, offset: int) -> np.ndarray:
    S = np.asarray(S)
    if S.dtype.kind not in "fiu":
        raise EvaluationInputError(f"{name}: scores must be real numbers, got dtype {S.dtype}")
    bad = ~np.isfinite(S)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise EvaluationInputError(f"{name}: non-finite score {S[r, c]} at row {r}, column {offset + c}")
    return S


def evaluate_column_chunks(
    chunks: _ChunkSource,
    labels: Labels,
    metrics: Sequence[str],
    *,
    name: str = "scores",
    set_threshold: float | None = None,
    include_zero_gt: bool = False,
    reference: np.ndarray | None = None,
    rbo_p: float = DEFAULT_RBO_P,
    rbo_depth: int = DEFAULT_RBO_DEPTH,
) -> ConditionEval:
    """Per-query results of one condition from ``chunks()``, an iterable of ``(first column, Q x n_c
    scores)`` covering the gallery in order.  ``chunks`` is called once, and a second time only when
    some query's first positive lies below the top-k.  ``reference``: the clean ranking the stability
    measures compare with, as in :func:`~snapbench.evaluate.condition.evaluate_matrix`."""
    n_q = labels.n_queries
    depth = ranking_depth(metrics, rbo_depth)
    acc = StreamingTopK(n_q, depth)
    best = np.full(n_q, -np.inf)
    best_col = np.full(n_q, np.iinfo(np.int64).max, dtype=np.int64)
    pos_rows, pos_cols = labels.pos_rows, labels.items
    pred = np.zeros(n_q, dtype=np.int64) if set_threshold is not None else None
    tp = np.zeros(n_q, dtype=np.int64) if set_threshold is not None else None
    seen = 0
    for off, S in chunks():
        S = _check(S, name, off)
        if S.shape[0] != n_q:
            raise EvaluationInputError(f"{name}: a chunk has {S.shape[0]} rows for {n_q} queries")
        if off != seen:
            raise EvaluationInputError(f"{name}: chunks must cover the gallery in order (got column {off}, expected {seen})")
        seen += S.shape[1]
        acc.push(S, off)
        inside = (pos_cols >= off) & (pos_cols < off + S.shape[1])
        r, c = pos_rows[inside], pos_cols[inside]
        if r.size:
            v = S[r, c - off].astype(np.float64)
            order = np.lexsort((c, -v, r))  # per row: best score first, then the smaller column
            r, c, v = r[order], c[order], v[order]
            first = np.r_[True, r[1:] != r[:-1]]
            r, c, v = r[first], c[first], v[first]
            better = (v > best[r]) | ((v == best[r]) & (c < best_col[r]))
            best[r[better]], best_col[r[better]] = v[better], c[better]
        if set_threshold is not None:
            pred += np.count_nonzero(S >= set_threshold, axis=1)
            hit_rows = pos_rows[inside][S[pos_rows[inside], pos_cols[inside] - off] >= set_threshold]
            np.add.at(tp, hit_rows, 1)
    if seen != labels.n_items:
        raise EvaluationInputError(f"{name}: the chunks cover {seen} gallery items, the labels {labels.n_items}")
    idx = acc.result().indices
    first_rank, need = listed_first_ranks(labels, idx)
    if need.size:
        above = np.zeros(need.size, dtype=np.int64)
        b, bc = best[need][:, None], best_col[need][:, None]
        for off, S in chunks():
            Sn = np.asarray(S)[need]
            cols = off + np.arange(Sn.shape[1])[None, :]
            above += np.count_nonzero((Sn > b) | ((Sn == b) & (cols < bc)), axis=1)
        first_rank[need] = above + 1.0
    return condition_eval(idx, first_rank, labels, metrics, include_zero_gt=include_zero_gt, pred=pred, tp=tp,
                          reference=reference, rbo_p=rbo_p, rbo_depth=rbo_depth)
