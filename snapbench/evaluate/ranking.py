"""Rankings with one exact, documented tie rule.

Tie rule (used everywhere in snapbench): **higher score first; equal scores are ordered by ascending
gallery column index** (the column order of the score matrix, i.e. the order of ``gallery_ids.txt``).
This is exactly the order of ``np.argsort(-scores, axis=1, kind="stable")``.  ``-0.0`` and ``0.0``
are equal.  ranx and trec_eval break ties differently (trec_eval by document id, descending), so a
score matrix with ties can give different numbers there; see README "Evaluate".

Top-k uses ``np.partition`` (linear time) and then repairs the k-boundary: ``argpartition`` picks an
arbitrary subset of the items tied with the k-th score, so rows where more items share the k-th
score than there are free slots are resolved explicitly by column index.
"""

from __future__ import annotations

from typing import Callable, Union

import numpy as np

__all__ = ["TIE_RULE", "topk_indices", "streaming_topk", "first_positive_rank"]

TIE_RULE = (
    "higher score first; equal scores by ascending gallery column index "
    "(np.argsort(-scores, kind='stable') order)"
)

ScoreSource = Union[np.ndarray, Callable[[int, int], np.ndarray]]


def _sort_key(values: np.ndarray) -> np.ndarray:
    # Negating unsigned or small integer types would wrap around; compare in a signed/float type.
    if values.dtype.kind in "ub":
        return -values.astype(np.int64)
    return -values


def topk_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Column indices of the ``k`` best items per row, best first, under :data:`TIE_RULE`.

    ``scores`` is a 2-d array (queries x gallery); ``±inf`` ranks first/last, NaN raises
    ``ValueError`` (it has no place in a ranking).  Returns an ``int64`` array of shape ``(Q, k)``;
    when ``k`` exceeds the gallery size the missing slots are ``-1``.  Equal to
    ``np.argsort(-scores, axis=1, kind="stable")[:, :k]`` exactly, ties included.
    """
    s = np.asarray(scores)
    if s.ndim != 2:
        raise ValueError(f"scores must be 2-d (queries x gallery), got shape {s.shape}")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    n_q, n = s.shape
    kk = min(int(k), n)
    out = np.full((n_q, int(k)), -1, dtype=np.int64)
    if kk == 0 or n_q == 0:
        return out
    use_fast = n >= 4 * _CHUNKS_PER_K * kk
    if not use_fast:
        _refuse_nan(np.max(s, axis=1))  # the fast path checks its chunk maxima instead
    if kk == n:
        out[:, :kk] = np.argsort(_sort_key(s), axis=1, kind="stable")
        return out
    if use_fast:
        fast = _topk_via_chunk_maxima(s, kk)
        if fast is not None:
            out[:, :kk] = fast
            return out
    # k-th largest value per row; every item strictly above it is in, ties at it compete for slots.
    kth = np.partition(s, n - kk, axis=1)[:, n - kk]
    flat = np.flatnonzero(s >= kth[:, None])  # row-major: rows ascending, columns ascending
    starts = np.searchsorted(flat, np.arange(n_q + 1, dtype=np.int64) * n)
    exact = np.diff(starts) == kk  # common case: no surplus ties at the boundary
    if exact.all():
        sel = (flat % n).reshape(n_q, kk)
    else:
        sel = np.empty((n_q, kk), dtype=np.int64)
        rows = np.flatnonzero(exact)
        sel[rows] = flat[starts[rows, None] + np.arange(kk)] % n
        for r in np.flatnonzero(~exact):
            row = s[r]
            above = np.flatnonzero(row > kth[r])
            tied = np.flatnonzero(row == kth[r])[: kk - above.size]  # lowest column indices win
            sel[r] = np.sort(np.concatenate([above, tied]))
    # ``sel`` is in ascending column order, so a stable sort by score keeps the tie rule.
    vals = np.take_along_axis(s, sel, axis=1)
    order = np.argsort(_sort_key(vals), axis=1, kind="stable")
    out[:, :kk] = np.take_along_axis(sel, order, axis=1)
    return out


_CHUNKS_PER_K = 8


def _refuse_nan(row_maxima: np.ndarray) -> None:
    """Raise if any row holds a NaN (``np.max`` / ``np.maximum`` propagate NaN into the row maxima)."""
    if row_maxima.dtype.kind == "f":
        bad = np.isnan(row_maxima).reshape(row_maxima.shape[0], -1).any(axis=1)
        if bad.any():
            raise ValueError(
                f"scores contain NaN (first in row {int(np.argmax(bad))}); rankings need numbers, not NaN"
            )


def _topk_via_chunk_maxima(s: np.ndarray, kk: int) -> np.ndarray | None:
    """Top-kk through a cheap candidate filter; ``None`` when ties make the filter useless.

    Split each row into ``8·kk`` column chunks and let t = the kk-th largest chunk maximum.  At
    least kk items score >= t, so the kk-th best score is >= t and every item of the exact top-kk
    -- boundary ties included -- scores >= t.  Those candidates (typically ~kk per row) keep their
    column order, so the exact selection on them applies the same tie rule.
    """
    n_q, n = s.shape
    width = -(-n // (_CHUNKS_PER_K * kk))
    maxima = np.maximum.reduceat(s, np.arange(0, n, width), axis=1)
    _refuse_nan(maxima)
    nc = maxima.shape[1]
    t = np.partition(maxima, nc - kk, axis=1)[:, nc - kk]
    flat = np.flatnonzero(s >= t[:, None])
    starts = np.searchsorted(flat, np.arange(n_q + 1, dtype=np.int64) * n)
    count = np.diff(starts)
    w = int(count.max())
    if w > n // 4:  # massive ties: the filter keeps most of the row
        return None
    pos = np.minimum(starts[:-1, None] + np.arange(w), flat.size - 1)
    cols = flat[pos] % n
    cand = np.take_along_axis(s, cols, axis=1)
    if cand.dtype.kind != "f":
        cand = cand.astype(np.float64)
    cand = np.where(np.arange(w) < count[:, None], cand, -np.inf)  # padding ranks below every real score
    return np.take_along_axis(cols, topk_indices(cand, kk)[:, :kk], axis=1)


def streaming_topk(
    source: ScoreSource,
    k: int,
    *,
    chunk: int = 65536,
    n_items: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Top-k over gallery column blocks, never holding more than ``Q x (k + chunk)`` scores.

    ``source`` is either an array-like of shape ``(Q, N)`` (e.g. a ``np.load(..., mmap_mode="r")``
    memmap, read one column block at a time) or a function ``f(start, stop) -> (Q, stop - start)``
    that computes the scores of gallery columns ``start:stop`` (then ``n_items`` is required).

    Returns ``(indices, scores)``, both ``(Q, k)``: identical to :func:`topk_indices` on the dense
    matrix, ties included (slots beyond the gallery size are ``-1`` / ``NaN``).  Why it is exact: the
    running best list is kept sorted by (score desc, column asc) and every new block has larger
    column indices than anything already kept, so candidate position order agrees with column order
    among equal scores.
    """
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    if callable(source):
        if n_items is None:
            raise ValueError("n_items is required when source is a function")
        get = source
        n = int(n_items)
    else:
        arr = source
        if getattr(arr, "ndim", None) != 2:
            raise ValueError(f"source must be 2-d (queries x gallery), got shape {getattr(arr, 'shape', None)}")
        n = int(arr.shape[1]) if n_items is None else int(n_items)
        get = lambda a, b: arr[:, a:b]  # noqa: E731
    best_idx: np.ndarray | None = None
    best_val: np.ndarray | None = None
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        block = np.asarray(get(start, stop))
        if block.ndim != 2 or block.shape[1] != stop - start:
            raise ValueError(f"score block for columns {start}:{stop} has shape {block.shape}")
        if best_idx is None:
            cand_val = block
            cand_idx = np.broadcast_to(np.arange(start, stop, dtype=np.int64), block.shape)
        else:
            cand_val = np.concatenate([best_val, block.astype(best_val.dtype, copy=False)], axis=1)
            cols = np.broadcast_to(np.arange(start, stop, dtype=np.int64), block.shape)
            cand_idx = np.concatenate([best_idx, cols], axis=1)
        pos = topk_indices(cand_val, min(k, cand_val.shape[1]))
        best_idx = np.take_along_axis(cand_idx, pos, axis=1)
        best_val = np.take_along_axis(cand_val, pos, axis=1)
    if best_idx is None:
        raise ValueError("empty gallery: no columns to rank")
    n_q = best_idx.shape[0]
    idx = np.full((n_q, k), -1, dtype=np.int64)
    val = np.full((n_q, k), np.nan, dtype=np.result_type(best_val.dtype, np.float32))
    idx[:, : best_idx.shape[1]] = best_idx
    val[:, : best_val.shape[1]] = best_val
    return idx, val


def first_positive_rank(scores: np.ndarray, pos_rows: np.ndarray, pos_cols: np.ndarray) -> np.ndarray:
    """1-based rank of the best-ranked positive of each row over the whole gallery (tie rule applies).

    ``pos_rows``/``pos_cols`` list the positive (row, column) pairs (rows ascending).  Rows with no
    positive get ``NaN``.  rank = 1 + #(scores > s*) + #(scores == s* at a smaller column), where s*
    is the row's best positive score and the best positive is the lowest column among positives
    scoring s* -- no sort needed.
    """
    s = np.asarray(scores)
    n_q, n = s.shape
    out = np.full(n_q, np.nan)
    if pos_rows.size == 0:
        return out
    pv = s[pos_rows, pos_cols]
    rows = np.unique(pos_rows)
    starts = np.searchsorted(pos_rows, rows)
    best = np.maximum.reduceat(pv, starts)
    # lowest column among the positives that reach the row's best score
    best_rep = np.repeat(best, np.diff(np.append(starts, pos_rows.size)))
    cand_cols = np.where(pv == best_rep, pos_cols, n)
    best_col = np.minimum.reduceat(cand_cols, starts)
    sub = s if rows.size == n_q else s[rows]  # copy only when some rows have no positive
    n_gt = np.count_nonzero(sub > best[:, None], axis=1)
    eq = sub == best[:, None]
    n_eq = np.count_nonzero(eq, axis=1)
    before = np.zeros(rows.size, dtype=np.int64)
    tied = np.flatnonzero(n_eq > 1)
    if tied.size:
        cols = np.arange(n)
        before[tied] = np.count_nonzero(eq[tied] & (cols[None, :] < best_col[tied, None]), axis=1)
    out[rows] = 1 + n_gt + before
    return out
