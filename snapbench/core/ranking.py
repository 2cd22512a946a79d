"""Rankings shared by evaluate/ and fusion/: one tie rule, one top-k type, one first-positive rank.

Tie rule (used everywhere in snapbench): **higher score first; equal scores are ordered by ascending
gallery column index** (the column order of the score matrix, i.e. the order of ``gallery_ids.txt``).
This is exactly the order of ``np.argsort(-scores, axis=1, kind="stable")``.  ``-0.0`` and ``0.0``
are equal; ``±inf`` rank first/last; **NaN is refused** (:class:`~snapbench.core.errors.InputError`): it
has no place in a ranking.  ranx and trec_eval break ties differently (trec_eval by document id,
descending), so a score matrix with ties can give different numbers there.

One result type, :class:`TopK` (``indices`` and ``scores``, Q x k, best first).  When fewer than k
items exist (k larger than the gallery, or an ANN search that found fewer), the missing slots hold
index ``-1`` and score ``NaN`` -- every exact and approximate top-k here pads the same way, and every
writer/consumer skips ``-1`` slots.

Exact top-k (:func:`topk_indices`, :func:`topk`) uses ``np.partition`` (linear time) and then repairs
the k boundary: ``argpartition`` picks an arbitrary subset of the items tied with the k-th score, so
rows where more items share the k-th score than there are free slots are resolved explicitly by
column index.  Streaming top-k (:class:`StreamingTopK`, :func:`streaming_topk`) gives the identical
result from column blocks.

First-positive rank (:func:`first_positive_rank`): the 1-based rank of the best-ranked positive over
the whole gallery; **a query without any positive gets NaN** (not 0: 0 would read as a rank and
would average into means), so means and medians must skip NaN explicitly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import ConfigError, InputError

__all__ = [
    "TIE_RULE",
    "StreamingTopK",
    "TopK",
    "first_positive_rank",
    "pad_topk",
    "rank_matrix",
    "streaming_topk",
    "topk",
    "topk_indices",
    "topk_overlap",
]

TIE_RULE = (
    "higher score first; equal scores by ascending gallery column index "
    "(np.argsort(-scores, kind='stable') order)"
)

_ScoreSource = np.ndarray | Callable[[int, int], np.ndarray]


@dataclass
class TopK:
    """Per-query top-k: ``indices`` (Q x k gallery columns, int64) and their ``scores``, best first
    under :data:`TIE_RULE`.  Missing slots (fewer than k items) are ``-1`` / ``NaN``.

    Unpacks as ``indices, scores = topk``.
    """

    indices: np.ndarray
    scores: np.ndarray

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter((self.indices, self.scores))

    @property
    def k(self) -> int:
        return int(self.indices.shape[1])


def _sort_key(values: np.ndarray) -> np.ndarray:
    # Negating unsigned or small integer types would wrap around; compare in a signed/float type.
    if values.dtype.kind in "ub":
        return -values.astype(np.int64)
    return -values


def topk_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Column indices of the ``k`` best items per row, best first, under :data:`TIE_RULE`.

    ``scores`` is a 2-d array (queries x gallery); ``±inf`` ranks first/last, NaN raises
    :class:`~snapbench.core.errors.InputError` (it has no place in a ranking).  Returns an ``int64`` array of shape ``(Q, k)``;
    when ``k`` exceeds the gallery size the missing slots are ``-1``.  Equal to
    ``np.argsort(-scores, axis=1, kind="stable")[:, :k]`` exactly, ties included.
    """
    s = np.asarray(scores)
    if s.ndim != 2:
        raise InputError(f"scores must be 2-d (queries x gallery), got shape {s.shape}")
    if k < 0:
        raise ConfigError(f"k must be >= 0, got {k}")
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
            raise InputError(
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


def pad_topk(idx: np.ndarray, val: np.ndarray, k: int) -> TopK:
    """``TopK`` of exactly ``k`` columns: slots beyond ``idx.shape[1]`` become ``-1`` / ``NaN``."""
    n_q, w = idx.shape
    if w == k:
        return TopK(idx, val)
    out_i = np.full((n_q, k), -1, dtype=np.int64)
    dtype = val.dtype if val.dtype.kind == "f" else np.dtype(np.float64)
    out_v = np.full((n_q, k), np.nan, dtype=dtype)
    out_i[:, :w] = idx[:, :k]
    out_v[:, :w] = val[:, :k]
    return TopK(out_i, out_v)


def topk(scores: Any, k: int, *, chunk_size: int | None = None) -> TopK:
    """Exact top-k of a dense (Q x N) score matrix under :data:`TIE_RULE`, as a :class:`TopK`.

    With ``chunk_size`` the matrix is consumed in column blocks through :class:`StreamingTopK` (same
    result).  ``k`` larger than the gallery pads with ``-1`` / ``NaN``.
    """
    s = np.asarray(scores)
    if s.ndim != 2 or s.shape[0] == 0 or s.shape[1] == 0:
        raise InputError(f"scores: expected a non-empty (queries, gallery) matrix, got shape {s.shape}")
    if k < 1:
        raise ConfigError(f"k must be >= 1, got {k}")
    if chunk_size is not None:
        return streaming_topk(s, k, chunk=int(chunk_size))
    kk = min(int(k), s.shape[1])
    idx = topk_indices(s, kk)
    return pad_topk(idx, np.take_along_axis(s, idx, axis=1), int(k))


def _chunk_topk(S: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k of every row of ``S`` (columns local to ``S``), sorted under the tie rule."""
    kk = min(k, S.shape[1])
    idx = topk_indices(S, kk)
    return np.take_along_axis(S, idx, axis=1), idx


class StreamingTopK:
    """Running exact top-k over score chunks that arrive in increasing gallery-column order.

    ``push(scores_chunk, offset)`` with ``scores_chunk`` of shape (Q, c) holding columns
    ``offset .. offset + c - 1``; ``result()`` returns a :class:`TopK` of exactly ``k`` columns
    (``-1`` / ``NaN`` slots when fewer than k columns were pushed).  Memory ``O(Q·(k + chunk))``.

    Why it is exact: the running list is kept sorted by (score desc, column asc), and every new chunk
    has larger column indices than anything kept, so after the list is full only entries *strictly*
    above the current k-th best score can enter (an equal score loses the tie).  The work per chunk
    is then one comparison pass plus a small merge; when many entries qualify (the first chunk, or a
    gallery sorted by ascending score) the chunk is first reduced to its own exact top-k.
    NaN raises :class:`~snapbench.core.errors.InputError`; ``±inf`` rank last/first like any number.
    """

    def __init__(self, n_queries: int, k: int) -> None:
        if k < 1:
            raise ConfigError(f"k must be >= 1, got {k}")
        if n_queries < 1:
            raise ConfigError(f"n_queries must be >= 1, got {n_queries}")
        self.k = int(k)
        self.n_queries = int(n_queries)
        self._vals: np.ndarray | None = None
        self._idx: np.ndarray | None = None
        self._seen = 0  # columns pushed so far (the running list is full once this reaches k)
        self._next = 0  # smallest column index a later chunk may hold

    def push(self, scores: Any, offset: int | None = None) -> None:
        S = np.asarray(scores)
        if S.ndim != 2 or S.shape[0] != self.n_queries:
            raise InputError(f"score chunk must have shape ({self.n_queries}, c), got {S.shape}")
        if offset is None:
            offset = self._next
        if offset < self._next:
            raise ConfigError(f"chunks must arrive in increasing column order (offset {offset} < {self._next})")
        c = S.shape[1]
        if c == 0:
            return
        if S.dtype.kind != "f":
            S = S.astype(np.float64)
        rowmax = S.max(axis=1)  # max propagates NaN: one reduction instead of an isnan pass
        _refuse_nan(rowmax)
        self._next = offset + c
        if self._vals is None or self._seen < self.k:
            cv, ci = _chunk_topk(S, self.k)
            ci = ci + offset
            if self._vals is None:
                self._vals, self._idx = cv, ci
            else:
                self._merge(cv.astype(self._vals.dtype, copy=False), ci)
            self._seen += c
            return
        self._seen += c
        vals = self._vals
        S = S.astype(vals.dtype, copy=False)
        thr = vals[:, -1]
        # rows whose chunk maximum beats their k-th best: after the first few chunks these are few
        active = np.flatnonzero(rowmax > thr)
        if active.size == 0:
            return
        if active.size == self.n_queries:
            mask = S > thr[:, None]
        else:
            mask = S[active] > thr[active, None]
        n_cand = int(np.count_nonzero(mask))
        if n_cand > 4 * self.n_queries * self.k:
            cv, ci = _chunk_topk(S, self.k)
            self._merge(cv, ci + offset)
            return
        rows, cols = np.nonzero(mask)
        if active.size != self.n_queries:
            rows = active[rows]
        Q, k = self.n_queries, self.k
        all_rows = np.concatenate([np.repeat(np.arange(Q), k), rows])
        all_vals = np.concatenate([vals.ravel(), S[rows, cols]])
        all_idx = np.concatenate([self._idx.ravel(), cols.astype(np.int64) + offset])
        order = np.lexsort((all_idx, -all_vals, all_rows))
        # every row has its k running entries, so row q's block starts at searchsorted(q)
        starts = np.searchsorted(all_rows[order], np.arange(Q))
        take = order[starts[:, None] + np.arange(k)[None, :]]
        self._vals = all_vals[take]
        self._idx = all_idx[take]

    def _merge(self, cv: np.ndarray, ci: np.ndarray) -> None:
        # running entries all precede the chunk's columns: a stable sort on score keeps column order
        assert self._vals is not None and self._idx is not None
        allv = np.concatenate([self._vals, cv.astype(self._vals.dtype, copy=False)], axis=1)
        alli = np.concatenate([self._idx, ci], axis=1)
        order = np.argsort(-allv, axis=1, kind="stable")[:, : self.k]
        self._vals = np.take_along_axis(allv, order, 1)
        self._idx = np.take_along_axis(alli, order, 1)

    def result(self) -> TopK:
        if self._vals is None or self._idx is None:
            raise InputError("no scores were pushed (empty gallery)")
        return pad_topk(self._idx.copy(), self._vals.copy(), self.k)


def streaming_topk(
    source: _ScoreSource,
    k: int,
    *,
    chunk: int = 65536,
    n_items: int | None = None,
) -> TopK:
    """Top-k over gallery column blocks, never holding more than ``Q x (k + chunk)`` scores.

    ``source`` is either an array-like of shape ``(Q, N)`` (e.g. a ``np.load(..., mmap_mode="r")``
    memmap, read one column block at a time) or a function ``f(start, stop) -> (Q, stop - start)``
    that computes the scores of gallery columns ``start:stop`` (then ``n_items`` is required).
    Returns a :class:`TopK` (unpacks as ``indices, scores``) identical to :func:`topk` on the dense
    matrix, ties included.
    """
    if chunk < 1:
        raise ConfigError(f"chunk must be >= 1, got {chunk}")
    if callable(source):
        if n_items is None:
            raise ConfigError("n_items is required when source is a function")
        get = source
        n = int(n_items)
    else:
        arr = source
        if getattr(arr, "ndim", None) != 2:
            raise InputError(f"source must be 2-d (queries x gallery), got shape {getattr(arr, 'shape', None)}")
        n = int(arr.shape[1]) if n_items is None else int(n_items)
        get = lambda a, b: arr[:, a:b]
    acc: StreamingTopK | None = None
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        block = np.asarray(get(start, stop))
        if block.ndim != 2 or block.shape[1] != stop - start:
            raise InputError(f"score block for columns {start}:{stop} has shape {block.shape}")
        if acc is None:
            acc = StreamingTopK(block.shape[0], k)
        acc.push(block, start)
    if acc is None:
        raise InputError("empty gallery: no columns to rank")
    return acc.result()


def rank_matrix(scores: Any) -> np.ndarray:
    """1-based rank of every gallery column per query under :data:`TIE_RULE` (Q x N int64)."""
    S = np.asarray(scores, dtype=np.float64)
    if S.ndim != 2:
        raise InputError(f"scores must be 2-d (queries x gallery), got shape {S.shape}")
    if S.size:
        _refuse_nan(S.max(axis=1))
    order = np.argsort(-S, axis=1, kind="stable")
    ranks = np.empty(S.shape, dtype=np.int64)
    np.put_along_axis(ranks, order, np.broadcast_to(np.arange(1, S.shape[1] + 1, dtype=np.int64), S.shape), 1)
    return ranks


def topk_overlap(exact: Any, approx: Any, k: int | None = None) -> float:
    """Mean over queries of |approx top-k ∩ exact top-k| / k: how much of the *exact* top-k an
    approximate search returns (what ANN libraries call "recall@k"; named differently here so it
    is never confused with the retrieval metric ``recall@k`` against relevance labels).

    ``exact`` / ``approx``: (Q x k) index arrays or :class:`TopK` results; ``-1`` slots never match.
    """
    e = np.asarray(getattr(exact, "indices", exact))
    a = np.asarray(getattr(approx, "indices", approx))
    if e.ndim != 2 or a.ndim != 2:
        raise InputError(f"expected (queries, k) index matrices, got shapes {e.shape} and {a.shape}")
    if e.shape[0] != a.shape[0]:
        raise InputError(f"exact has {e.shape[0]} queries, approx {a.shape[0]}")
    k = int(k or e.shape[1])
    if k < 1 or k > e.shape[1]:
        raise ConfigError(f"k={k} must be in 1..{e.shape[1]}")
    hits = [len(set(e[i, :k].tolist()) & set(a[i, :k].tolist()) - {-1}) for i in range(e.shape[0])]
    return float(np.mean(hits) / k)


def first_positive_rank(scores: np.ndarray, pos_rows: np.ndarray, pos_cols: np.ndarray) -> np.ndarray:
    """1-based rank of the best-ranked positive of each row over the whole gallery (tie rule applies).

    ``pos_rows``/``pos_cols`` list the positive (row, column) pairs, rows ascending (e.g.
    ``np.nonzero(relevance_matrix)``).  Rows with no positive get ``NaN`` (the one contract: see the
    module docstring).  rank = 1 + #(scores > s*) + #(scores == s* at a smaller column), where s*
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
