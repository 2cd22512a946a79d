"""Gallery sources for streaming, and approximate (FAISS) top-k search.

Exact top-k, its tie rule (**higher score first; equal scores in gallery column order**) and the
:class:`~snapbench.core.ranking.TopK` result type live in :mod:`snapbench.core.ranking`, shared with
``snapbench.evaluate``; TREC runs are written by :func:`snapbench.store.write_trec_run`.

Gallery sources (:class:`GallerySource`): a pair of in-memory arrays or ``np.memmap`` s, a pair of ``.npy``
paths (read with ``readinto`` into one reused buffer, so resident memory stays at one chunk rather than
growing with the pages of a memory map), or a zero-argument callable returning a fresh iterator of
``(image_chunk, text_chunk)`` pairs (fitting needs two passes and every search one more).

ANN: :class:`ANNIndex` wraps FAISS (the ``ann`` extra) with inner-product metric over the
concatenated whitened gallery ``[G~^I | G~^T]``.  Defaults: ``hnsw`` = ``IndexHNSWFlat(D, M=32)`` with
``efConstruction=100``, ``efSearch=128``; ``ivf`` = ``IndexIVFFlat`` with ``nlist = √N`` (at least 1),
``nprobe = 32``, k-means trained on the first ``max(40·nlist, 10000)`` rows streamed in (≥ the 39
points per centroid FAISS asks for; a larger nlist such as 4·√N trains far longer on 2 cores).  All gallery rows of the
concatenated whitened gallery have norm √2 (each half is unit-norm), so maximum inner product equals
nearest cosine neighbour on the gallery side, the regime graph indexes are built for.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import InputError, arg
from ..core.install_hint import import_extra
from ..core.ranking import TopK, pad_topk
from ..core.userfiles import load_npy
from ..core.validate import unknown_name
from ._validate import check_shape

__all__ = [
    "ANNIndex",
    "GallerySource",
    "NpyRowReader",
    "ann_available",
]

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
        mm = load_npy(self.path, what=name, mmap=True)
        if mm.ndim != 2:
            raise InputError(f"{name}: {self.path} holds shape {mm.shape}, expected (rows, dim)")
        if mm.shape[0] == 0 or mm.shape[1] == 0:
            raise InputError(f"{name}: {self.path} is empty (shape {mm.shape})")
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
            raise InputError(f"{self.name}: {self.path} is truncated (rows {start}..{stop})")
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
                    raise InputError(f"{self.name}: {self.path} is truncated near row {start}")
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
    def from_any(cls, g_image: Any, g_text: Any = None, *, names: tuple[str, str] = (arg("g_image"), arg("g_text"))) -> GallerySource:
        """Arrays/memmaps, ``.npy`` paths, or ``g_image`` = callable returning an iterator of chunk pairs."""
        if isinstance(g_image, GallerySource):
            return g_image
        if callable(g_image) and g_text is None:
            return cls("callable", g_image, None, None, None, names)
        if g_text is None:
            raise InputError("is required (or pass one callable yielding (image, text) chunk pairs)", param="g_text")
        if isinstance(g_image, (str, os.PathLike)) or isinstance(g_text, (str, os.PathLike)):
            if not (isinstance(g_image, (str, os.PathLike)) and isinstance(g_text, (str, os.PathLike))):
                raise InputError(f"{arg('g_image')} and {arg('g_text')} must both be paths or both be arrays")
            ri, rt = NpyRowReader(g_image, names[0]), NpyRowReader(g_text, names[1])
            src = cls("npy", ri, rt, len(ri), None, (f"{names[0]} ({ri.path})", f"{names[1]} ({rt.path})"))
            src._check_pair(ri.shape, rt.shape)
            return src
        mapped = isinstance(g_image, np.memmap) or isinstance(g_text, np.memmap)
        gi, gt = np.asarray(g_image), np.asarray(g_text)
        for arr, nm in ((gi, names[0]), (gt, names[1])):
            if arr.dtype == object or not np.issubdtype(arr.dtype, np.number):
                raise InputError(f"{nm}: expected a numeric array, got dtype {arr.dtype}")
            check_shape(arr, nm)  # values are checked chunk by chunk when the gallery is read
        src = cls("memmap" if mapped else "array", gi, gt, gi.shape[0], None, names)
        src._check_pair(gi.shape, gt.shape)
        return src

    def _check_pair(self, si: tuple[int, ...], st: tuple[int, ...]) -> None:
        if si[0] != st[0]:
            raise InputError(f"gallery row counts differ: {self.names[0]} has {si[0]} rows, {self.names[1]} has {st[0]}")
        if si[1] != st[1]:
            raise InputError(f"embedding dimensions differ: {self.names[0]} has dim {si[1]}, {self.names[1]} has dim {st[1]}")
        self.dim = int(si[1])

    @property
    def in_memory(self) -> bool:
        """True for plain in-memory ndarrays (not memmaps, files or callables)."""
        return self.kind == "array"

    def chunks(self, chunk_size: int) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        if chunk_size < 1:
            raise InputError(f"chunk_size must be >= 1, got {chunk_size}")
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
                    raise InputError("a gallery chunk callable must yield (image_chunk, text_chunk) pairs") from None
                ci, ct = np.asarray(ci), np.asarray(ct)
                if ci.ndim != 2 or ct.ndim != 2:
                    raise InputError(f"gallery chunks must be 2-D, got {ci.shape} and {ct.shape} at row {start}")
                if ci.shape[0] != ct.shape[0]:
                    raise InputError(f"gallery chunk at row {start}: image chunk has {ci.shape[0]} rows, text chunk {ct.shape[0]}")
                if ci.shape[1] != ct.shape[1]:
                    raise InputError(f"embedding dimensions differ: image chunk dim {ci.shape[1]}, text chunk dim {ct.shape[1]}")
                if self.dim is not None and ci.shape[1] != self.dim:
                    raise InputError(f"gallery chunk at row {start} has dim {ci.shape[1]}, earlier chunks {self.dim}")
                self.dim = int(ci.shape[1])
                # re-chunk so that callers see at most chunk_size rows at a time
                for s in range(0, ci.shape[0], chunk_size):
                    yield start + s, ci[s : s + chunk_size], ct[s : s + chunk_size]
                start += ci.shape[0]
            if self.n is None:
                self.n = start
            elif start != self.n:
                raise InputError(f"the gallery chunk callable yielded {start} rows this time, {self.n} before")


# ---------------------------------------------------------------------------------------------------
# approximate nearest neighbours (FAISS)
# ---------------------------------------------------------------------------------------------------


def _import_faiss():
    return import_extra("faiss", "ann", "approximate search needs FAISS (faiss-cpu)")


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
                    raise InputError("ivf needs n_total (gallery size) or an explicit nlist")
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
            raise InputError(unknown_name("ANN kind", kind, ("hnsw", "ivf")))

    def add(self, rows: np.ndarray) -> None:
        x = np.ascontiguousarray(rows, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise InputError(f"ANN rows must have shape (n, {self.dim}), got {x.shape}")
        if self._trained:
            self.index.add(x)
            self.ntotal += x.shape[0]
            return
        self._pending.append(x.copy())
        if sum(p.shape[0] for p in self._pending) >= self._train_rows:
            self.flush()

    def flush(self) -> None:
        """Add the rows buffered so far to the index (searches flush by themselves)."""
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
        than k found) hold index ``-1`` and score ``NaN``, like every :class:`~snapbench.core.ranking.TopK`."""
        self.flush()
        q = np.ascontiguousarray(queries, dtype=np.float32)
        if q.ndim != 2 or q.shape[1] != self.dim:
            raise InputError(f"ANN queries must have shape (Q, {self.dim}), got {q.shape}")
        k_eff = min(int(k), self.ntotal)
        if k_eff < 1:
            raise InputError("the ANN index is empty")
        D, I = self.index.search(q, k_eff)
        I = I.astype(np.int64)
        empty = I < 0
        # re-sort by our tie rule (FAISS orders equal scores arbitrarily); empty slots sort last
        D = np.where(empty, -np.inf, D).astype(np.float32)
        order = np.lexsort((np.where(empty, np.iinfo(np.int64).max, I), -D), axis=-1)
        D, I = np.take_along_axis(D, order, -1), np.take_along_axis(I, order, -1)
        D[I < 0] = np.nan
        return pad_topk(I, D, int(k))
