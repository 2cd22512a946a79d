"""Top-k search: exact streaming top-k with a fixed tie rule, gallery chunk sources, TREC runs, FAISS ANN.

Tie rule (the same one ``snapbench evaluate`` uses): **higher score first; equal scores in gallery column
order** (smaller column index first).  :class:`StreamingTopK` keeps, per query, the k best
``(score, column)`` pairs under that total order while score chunks arrive in increasing column order,
so its result equals a dense sort of the whole row exactly, ties included.

Memory: ``O(Q·chunk + Q·k)`` — one chunk of scores and the running top-k — never ``O(Q·N)``.

Per chunk, after the first one, only entries *strictly* above the current k-th best score can enter
(an equal score has a larger column index than everything already kept, so it loses the tie), so the
work is one comparison pass over the chunk plus a small merge; when many entries qualify (the first
chunk, or a gallery sorted by ascending score) the chunk is first reduced to its own exact top-k with
``argpartition`` and boundary ties are resolved row by row.

Gallery sources (:class:`GallerySource`): a pair of in-memory arrays or ``np.memmap`` s, a pair of ``.npy``
paths (read with ``readinto`` into one reused buffer, so resident memory stays at one chunk rather than
growing with the pages of a memory map), or a zero-argument callable returning a fresh iterator of
``(image_chunk, text_chunk)`` pairs (fitting needs two passes and every search one more).

ANN: :class:`ANNIndex` wraps FAISS (``pip install snapbench[ann]``) with inner-product metric over the
concatenated whitened gallery ``[G~^I | G~^T]``.  Defaults: ``hnsw`` = ``IndexHNSWFlat(D, M=32)`` with
``efConstruction=100``, ``efSearch=128``; ``ivf`` = ``IndexIVFFlat`` with ``nlist = √N`` (at least 1),
``nprobe = 32``, k-means trained on the first ``max(40·nlist, 10000)`` rows streamed in (≥ the 39
points per centroid FAISS asks for; a larger nlist such as 4·√N trains far longer on 2 cores).  All gallery rows of the
concatenated whitened gallery have norm √2 (each half is unit-norm), so maximum inner product equals
nearest cosine neighbour on the gallery side, the regime graph indexes are built for.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from ._validate import check_finite
from .io import atomic_output

__all__ = [
    "StreamingTopK",
    "TopK",
    "topk",
    "rank_matrix",
    "GallerySource",
    "NpyRowReader",
    "write_trec_run",
    "ANNIndex",
    "recall_at_k",
    "ann_available",
]

_IDX_SENTINEL = np.iinfo(np.int64).max


@dataclass
class TopK:
    """Per-query top-k: ``indices`` (Q x k, gallery columns) and their ``scores``, best first."""

    indices: np.ndarray
    scores: np.ndarray


def _sorted_rows(vals: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort each row by (score desc, column asc)."""
    order = np.lexsort((idx, -vals), axis=-1)
    return np.take_along_axis(vals, order, -1), np.take_along_axis(idx, order, -1)


def _chunk_topk(S: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k of every row of ``S`` under the tie rule (columns local to ``S``), sorted."""
    Q, c = S.shape
    if c <= k:
        idx = np.broadcast_to(np.arange(c, dtype=np.int64), (Q, c)).copy()
        return _sorted_rows(S.copy(), idx)
    part = np.argpartition(S, c - k, axis=1)[:, c - k :].astype(np.int64)
    pv = np.take_along_axis(S, part, 1)
    kth = pv.min(axis=1)
    # argpartition picks arbitrary members among values equal to the k-th largest: fix those rows
    n_ge = np.count_nonzero(S >= kth[:, None], axis=1)
    for r in np.flatnonzero(n_ge > k):
        row = S[r]
        gt = np.flatnonzero(row > kth[r])
        eq = np.flatnonzero(row == kth[r])[: k - gt.size]
        sel = np.concatenate([gt, eq])
        part[r] = sel
        pv[r] = row[sel]
    return _sorted_rows(pv, part)


class StreamingTopK:
    """Running exact top-k over score chunks that arrive in increasing gallery-column order.

    ``push(scores_chunk, offset)`` with ``scores_chunk`` of shape (Q, c) holding columns
    ``offset .. offset + c - 1``; ``result()`` returns a :class:`TopK` (k or fewer columns if fewer
    were seen).  Non-finite scores raise ``ValueError``.
    """

    def __init__(self, n_queries: int, k: int) -> None:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if n_queries < 1:
            raise ValueError(f"n_queries must be >= 1, got {n_queries}")
        self.k = int(k)
        self.n_queries = int(n_queries)
        self._vals: np.ndarray | None = None
        self._idx = np.full((n_queries, self.k), _IDX_SENTINEL, dtype=np.int64)
        self._next = 0  # smallest column index a later chunk may hold

    def push(self, scores: np.ndarray, offset: int | None = None) -> None:
        S = np.asarray(scores)
        if S.ndim != 2 or S.shape[0] != self.n_queries:
            raise ValueError(f"score chunk must have shape ({self.n_queries}, c), got {S.shape}")
        if offset is None:
            offset = self._next
        if offset < self._next:
            raise ValueError(f"chunks must arrive in increasing column order (offset {offset} < {self._next})")
        c = S.shape[1]
        if c == 0:
            return
        rowmax = S.max(axis=1)
        # max and min propagate NaN and ±inf: two reductions instead of an isfinite pass per chunk
        if not (np.isfinite(rowmax).all() and np.isfinite(S.min(axis=1)).all()):
            check_finite(S, "scores")
        if self._vals is None:
            dtype = S.dtype if np.issubdtype(S.dtype, np.floating) else np.float64
            self._vals = np.full((self.n_queries, self.k), -np.inf, dtype=dtype)
        vals = self._vals
        S = S.astype(vals.dtype, copy=False)
        self._next = offset + c
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
            ci = ci + offset
            allv = np.concatenate([vals, cv], axis=1)
            alli = np.concatenate([self._idx, ci], axis=1)
            # running entries all precede the chunk's columns: a stable sort on score keeps column order
            order = np.argsort(-allv, axis=1, kind="stable")[:, : self.k]
            self._vals = np.take_along_axis(allv, order, 1)
            self._idx = np.take_along_axis(alli, order, 1)
            return
        rows, cols = np.nonzero(mask)
        if active.size != self.n_queries:
            rows = active[rows]
        Q, k = self.n_queries, self.k
        all_rows = np.concatenate([np.repeat(np.arange(Q), k), rows])
        all_vals = np.concatenate([vals.ravel(), S[rows, cols]])
        all_idx = np.concatenate([self._idx.ravel(), cols.astype(np.int64) + offset])
        order = np.lexsort((all_idx, -all_vals, all_rows))
        # every row has at least its k running entries, so row q's block starts at searchsorted(q)
        starts = np.searchsorted(all_rows[order], np.arange(Q))
        take = order[starts[:, None] + np.arange(k)[None, :]]
        self._vals = all_vals[take]
        self._idx = all_idx[take]

    def result(self) -> TopK:
        if self._vals is None:
            raise ValueError("no scores were pushed (empty gallery)")
        # a gallery smaller than k leaves sentinel slots (every row saw the same columns): drop them
        k_eff = int(np.count_nonzero(self._idx[0] != _IDX_SENTINEL))
        return TopK(indices=self._idx[:, :k_eff].copy(), scores=self._vals[:, :k_eff].copy())


def topk(scores: np.ndarray, k: int, *, chunk_size: int | None = None) -> TopK:
    """Exact top-k of a dense (Q x N) score matrix under the tie rule (optionally in column chunks)."""
    S = np.asarray(scores)
    if S.ndim != 2 or S.shape[0] == 0 or S.shape[1] == 0:
        raise ValueError(f"scores: expected a non-empty (queries, gallery) matrix, got shape {S.shape}")
    acc = StreamingTopK(S.shape[0], k)
    step = S.shape[1] if chunk_size is None else int(chunk_size)
    for start in range(0, S.shape[1], step):
        acc.push(S[:, start : start + step], start)
    return acc.result()


def rank_matrix(scores: np.ndarray) -> np.ndarray:
    """1-based rank of every gallery column per query under the tie rule (Q x N int64)."""
    S = np.asarray(scores, dtype=np.float64)
    check_finite(S, "scores")
    order = np.argsort(-S, axis=1, kind="stable")
    ranks = np.empty(S.shape, dtype=np.int64)
    np.put_along_axis(ranks, order, np.arange(1, S.shape[1] + 1, dtype=np.int64)[None, :].repeat(S.shape[0], 0), 1)
    return ranks


# ---------------------------------------------------------------------------------------------------
# gallery sources
# ---------------------------------------------------------------------------------------------------


class NpyRowReader:
    """Read row ranges of a C-order ``.npy`` matrix with ``readinto`` (no pickle, no growing map).

    Raises ``ValueError`` naming the file for object arrays, non-2-D arrays or empty files.
    """

    def __init__(self, path: str | os.PathLike, name: str = "array") -> None:
        self.path = Path(path)
        self.name = name
        try:
            mm = np.load(self.path, mmap_mode="r", allow_pickle=False)
        except FileNotFoundError:
            raise ValueError(f"{name}: file not found: {self.path}") from None
        except ValueError as exc:
            raise ValueError(f"{name}: cannot read {self.path} as a numeric .npy array ({exc})") from exc
        if not isinstance(mm, np.ndarray):
            raise ValueError(f"{name}: {self.path} is not a single .npy array")
        if mm.ndim != 2:
            raise ValueError(f"{name}: {self.path} holds shape {mm.shape}, expected (rows, dim)")
        if mm.shape[0] == 0 or mm.shape[1] == 0:
            raise ValueError(f"{name}: {self.path} is empty (shape {mm.shape})")
        if not np.issubdtype(mm.dtype, np.number) or np.issubdtype(mm.dtype, np.complexfloating):
            raise ValueError(f"{name}: {self.path} has non-real dtype {mm.dtype}")
        self.shape = mm.shape
        self.dtype = mm.dtype
        self._fortran = bool(mm.flags.f_contiguous and not mm.flags.c_contiguous)
        self._offset = int(getattr(mm, "offset", 0))
        self._mm = mm if self._fortran else None
        del mm
        self._row_bytes = self.shape[1] * self.dtype.itemsize

    def __len__(self) -> int:
        return int(self.shape[0])

    def read(self, start: int, stop: int, out: np.ndarray | None = None) -> np.ndarray:
        stop = min(stop, self.shape[0])
        n = stop - start
        if self._mm is not None:
            return np.ascontiguousarray(self._mm[start:stop])
        if out is None or out.shape[0] < n:
            out = np.empty((n, self.shape[1]), dtype=self.dtype)
        view = out[:n]
        with open(self.path, "rb") as f:
            f.seek(self._offset + start * self._row_bytes)
            got = f.readinto(memoryview(view).cast("B"))
        if got != n * self._row_bytes:
            raise ValueError(f"{self.name}: {self.path} is truncated (rows {start}..{stop})")
        return view

    def chunks(self, chunk_size: int) -> Iterator[tuple[int, np.ndarray]]:
        buf = None
        with open(self.path, "rb") as f:
            for start in range(0, self.shape[0], chunk_size):
                stop = min(start + chunk_size, self.shape[0])
                if self._mm is not None:
                    yield start, np.ascontiguousarray(self._mm[start:stop])
                    continue
                n = stop - start
                if buf is None:
                    buf = np.empty((min(chunk_size, self.shape[0]), self.shape[1]), dtype=self.dtype)
                view = buf[:n]
                f.seek(self._offset + start * self._row_bytes)
                if f.readinto(memoryview(view).cast("B")) != n * self._row_bytes:
                    raise ValueError(f"{self.name}: {self.path} is truncated near row {start}")
                yield start, view


class GallerySource:
    """A gallery of paired image/text embeddings that can be read several times in row chunks.

    Build with :meth:`from_any`.  ``chunks(chunk_size)`` yields ``(start, image_chunk, text_chunk)``;
    yielded arrays may be reused buffers — copy them to keep them.
    """

    def __init__(self, kind: str, image: Any, text: Any, n: int | None, dim: int | None, names: tuple[str, str]) -> None:
        self.kind = kind
        self._image = image
        self._text = text
        self.n = n
        self.dim = dim
        self.names = names

    @classmethod
    def from_any(cls, g_image: Any, g_text: Any = None, *, names: tuple[str, str] = ("g_image", "g_text")) -> "GallerySource":
        """Arrays/memmaps, ``.npy`` paths, or ``g_image`` = callable returning an iterator of chunk pairs."""
        if isinstance(g_image, GallerySource):
            return g_image
        if callable(g_image) and g_text is None:
            return cls("callable", g_image, None, None, None, names)
        if g_text is None:
            raise ValueError("g_text is required (or pass one callable yielding (image, text) chunk pairs)")
        if isinstance(g_image, (str, os.PathLike)) or isinstance(g_text, (str, os.PathLike)):
            if not (isinstance(g_image, (str, os.PathLike)) and isinstance(g_text, (str, os.PathLike))):
                raise ValueError("g_image and g_text must both be paths or both be arrays")
            ri, rt = NpyRowReader(g_image, names[0]), NpyRowReader(g_text, names[1])
            src = cls("npy", ri, rt, len(ri), None, (f"{names[0]} ({ri.path})", f"{names[1]} ({rt.path})"))
            src._check_pair(ri.shape, rt.shape)
            return src
        mapped = isinstance(g_image, np.memmap) or isinstance(g_text, np.memmap)
        gi, gt = np.asarray(g_image), np.asarray(g_text)
        for arr, nm in ((gi, names[0]), (gt, names[1])):
            if arr.dtype == object or not np.issubdtype(arr.dtype, np.number):
                raise ValueError(f"{nm}: expected a numeric array, got dtype {arr.dtype}")
            if arr.ndim != 2:
                raise ValueError(f"{nm}: expected a 2-D (rows, dim) matrix, got shape {arr.shape}")
            if arr.shape[0] == 0:
                raise ValueError(f"{nm}: is empty (0 rows)")
            if arr.shape[1] == 0:
                raise ValueError(f"{nm}: has dimension 0")
        src = cls("memmap" if mapped else "array", gi, gt, gi.shape[0], None, names)
        src._check_pair(gi.shape, gt.shape)
        return src

    def _check_pair(self, si: tuple[int, ...], st: tuple[int, ...]) -> None:
        if si[0] != st[0]:
            raise ValueError(f"gallery row counts differ: {self.names[0]} has {si[0]} rows, {self.names[1]} has {st[0]}")
        if si[1] != st[1]:
            raise ValueError(f"embedding dimensions differ: {self.names[0]} has dim {si[1]}, {self.names[1]} has dim {st[1]}")
        self.dim = int(si[1])

    @property
    def in_memory(self) -> bool:
        """True for plain in-memory ndarrays (not memmaps, files or callables)."""
        return self.kind == "array"

    def chunks(self, chunk_size: int) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
        if self.kind in ("array", "memmap"):
            for start in range(0, self.n or 0, chunk_size):
                yield start, self._image[start : start + chunk_size], self._text[start : start + chunk_size]
        elif self.kind == "npy":
            it_i = self._image.chunks(chunk_size)
            it_t = self._text.chunks(chunk_size)
            for (start, ci), (_, ct) in zip(it_i, it_t):
                yield start, ci, ct
        else:
            start = 0
            iterator = self._image()
            for pair in iterator:
                try:
                    ci, ct = pair
                except (TypeError, ValueError):
                    raise ValueError("a gallery chunk callable must yield (image_chunk, text_chunk) pairs") from None
                ci, ct = np.asarray(ci), np.asarray(ct)
                if ci.ndim != 2 or ct.ndim != 2:
                    raise ValueError(f"gallery chunks must be 2-D, got {ci.shape} and {ct.shape} at row {start}")
                if ci.shape[0] != ct.shape[0]:
                    raise ValueError(f"gallery chunk at row {start}: image chunk has {ci.shape[0]} rows, text chunk {ct.shape[0]}")
                if ci.shape[1] != ct.shape[1]:
                    raise ValueError(f"embedding dimensions differ: image chunk dim {ci.shape[1]}, text chunk dim {ct.shape[1]}")
                if self.dim is not None and ci.shape[1] != self.dim:
                    raise ValueError(f"gallery chunk at row {start} has dim {ci.shape[1]}, earlier chunks {self.dim}")
                self.dim = int(ci.shape[1])
                # re-chunk so that callers see at most chunk_size rows at a time
                for s in range(0, ci.shape[0], chunk_size):
                    yield start + s, ci[s : s + chunk_size], ct[s : s + chunk_size]
                start += ci.shape[0]
            if self.n is None:
                self.n = start
            elif start != self.n:
                raise ValueError(f"the gallery chunk callable yielded {start} rows this time, {self.n} before")


def write_trec_run(
    path: str | os.PathLike,
    result: TopK,
    query_ids: Sequence[str],
    gallery_ids: Sequence[str],
    *,
    run_name: str = "snapbench-moor",
) -> None:
    """Write a TREC run (``qid Q0 docid rank score run``), ranks 1-based in our tie order, atomically.

    Scores are written with enough digits to round-trip (17 significant for float64, 9 for float32).
    Empty slots (an ANN search that found fewer than k items) are skipped.
    Note: trec_eval re-sorts by score and breaks ties by document id, not by our rank column.
    """
    idx, sc = np.asarray(result.indices), np.asarray(result.scores)
    filled = idx != _IDX_SENTINEL
    if len(query_ids) != idx.shape[0]:
        raise ValueError(f"query_ids has {len(query_ids)} ids for {idx.shape[0]} result rows")
    for what, ids in (("query", query_ids), ("gallery", gallery_ids)):
        for i in ids:
            if not str(i) or any(ch.isspace() for ch in str(i)):
                raise ValueError(f"{what} id {i!r} is empty or contains whitespace (not allowed in TREC files)")
    if filled.any() and idx[filled].max() >= len(gallery_ids):
        raise ValueError(f"gallery_ids has {len(gallery_ids)} ids but results index column {idx[filled].max()}")
    digits = 9 if sc.dtype == np.float32 else 17
    with atomic_output(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        for qi, qid in enumerate(query_ids):
            for rank, (j, s) in enumerate(zip(idx[qi][filled[qi]], sc[qi][filled[qi]]), start=1):
                f.write(f"{qid} Q0 {gallery_ids[j]} {rank} {float(s):.{digits}g} {run_name}\n")


# ---------------------------------------------------------------------------------------------------
# approximate nearest neighbours (FAISS)
# ---------------------------------------------------------------------------------------------------


def _import_faiss():
    try:
        import faiss  # type: ignore
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("approximate search needs FAISS: pip install snapbench[ann]  (installs faiss-cpu)") from exc
    return faiss


def ann_available() -> bool:
    try:
        _import_faiss()
    except ImportError:
        return False
    return True


class ANNIndex:
    """Approximate maximum-inner-product index (FAISS) over float32 rows added in order.

    ``kind="hnsw"`` (default: M=32, efConstruction=100, efSearch=128) or ``kind="ivf"``
    (nlist = √N, nprobe = 32; trained on the first rows added, so pass ``n_total``).
    """

    def __init__(
        self,
        dim: int,
        *,
        kind: str = "hnsw",
        n_total: int | None = None,
        M: int = 32,
        ef_construction: int = 100,
        ef_search: int = 128,
        nlist: int | None = None,
        nprobe: int = 32,
        seed: int = 0,
    ) -> None:
        faiss = _import_faiss()
        self.dim = int(dim)
        self.kind = kind
        self._faiss = faiss
        self.ntotal = 0
        self._pending: list[np.ndarray] = []
        if kind == "hnsw":
            self.index = faiss.IndexHNSWFlat(self.dim, M, faiss.METRIC_INNER_PRODUCT)
            self.index.hnsw.efConstruction = ef_construction
            self.index.hnsw.efSearch = ef_search
            self._trained = True
        elif kind == "ivf":
            if nlist is None:
                if n_total is None:
                    raise ValueError("ivf needs n_total (gallery size) or an explicit nlist")
                nlist = max(1, int(np.sqrt(n_total)))
            self.nlist = int(nlist)
            self._quantizer = faiss.IndexFlatIP(self.dim)
            self.index = faiss.IndexIVFFlat(self._quantizer, self.dim, self.nlist, faiss.METRIC_INNER_PRODUCT)
            self.index.nprobe = min(nprobe, self.nlist)
            self.index.cp.seed = int(seed)
            self._train_rows = max(self.nlist * 40, 10_000)
            if n_total is not None:
                self._train_rows = min(self._train_rows, int(n_total))
            self._trained = False
        else:
            raise ValueError(f"unknown ANN kind {kind!r}; use 'hnsw' or 'ivf'")

    def add(self, rows: np.ndarray) -> None:
        x = np.ascontiguousarray(rows, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"ANN rows must have shape (n, {self.dim}), got {x.shape}")
        if self._trained:
            self.index.add(x)
            self.ntotal += x.shape[0]
            return
        self._pending.append(x.copy())
        if sum(p.shape[0] for p in self._pending) >= self._train_rows:
            self._flush()

    def _flush(self) -> None:
        if self._trained or not self._pending:
            return
        data = np.concatenate(self._pending)
        self._pending = []
        self.index.train(data[: self._train_rows])
        self._trained = True
        self.index.add(data)
        self.ntotal += data.shape[0]

    def search(self, queries: np.ndarray, k: int) -> TopK:
        """Top-k by inner product; results re-sorted by our tie rule.  Slots FAISS leaves empty (fewer
        than k found) hold index ``2**63 - 1`` and score ``-inf`` (sorted last; :func:`write_trec_run`
        skips them)."""
        self._flush()
        q = np.ascontiguousarray(queries, dtype=np.float32)
        if q.ndim != 2 or q.shape[1] != self.dim:
            raise ValueError(f"ANN queries must have shape (Q, {self.dim}), got {q.shape}")
        k_eff = min(int(k), self.ntotal)
        if k_eff < 1:
            raise ValueError("the ANN index is empty")
        D, I = self.index.search(q, k_eff)
        I = I.astype(np.int64)
        D = np.where(I < 0, -np.inf, D).astype(np.float32)
        I = np.where(I < 0, _IDX_SENTINEL, I)
        D, I = _sorted_rows(D, I)
        return TopK(indices=I, scores=D)


def recall_at_k(exact: Any, approx: Any, k: int | None = None) -> float:
    """Mean over queries of |approx top-k ∩ exact top-k| / k (the usual ANN recall@k).

    ``exact`` / ``approx``: (Q x k) index arrays or results with an ``.indices`` attribute."""
    e = np.asarray(getattr(exact, "indices", exact))
    a = np.asarray(getattr(approx, "indices", approx))
    if e.ndim != 2 or a.ndim != 2:
        raise ValueError(f"expected (queries, k) index matrices, got shapes {e.shape} and {a.shape}")
    if e.shape[0] != a.shape[0]:
        raise ValueError(f"exact has {e.shape[0]} queries, approx {a.shape[0]}")
    k = int(k or e.shape[1])
    if k < 1 or k > e.shape[1]:
        raise ValueError(f"k={k} must be in 1..{e.shape[1]}")
    hits = [len(set(e[i, :k].tolist()) & set(a[i, :k].tolist())) for i in range(e.shape[0])]
    return float(np.mean(hits) / k)
