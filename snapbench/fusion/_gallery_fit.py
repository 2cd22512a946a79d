"""The two streaming passes over a gallery that :meth:`MOORIndex.fit
<snapbench.fusion.index.MOORIndex.fit>` runs, and the whitened-gallery cache file it writes.

Pass 1 fits each modality's standardiser (per-dimension μ, σ); pass 2 whitens every row once and
accumulates the mean and centred co-moment of ``[G~^I | G~^T]`` (float64 chunk merges), the per-row
norms that streamed scoring folds into the query side, and, when asked, the whitened rows in memory
and/or in the cache file.  Kept apart from ``index.py`` so the index reads as fit -> query -> search
and the gallery passes, with their checks and file handling, sit in one place.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from ..core.errors import InputError
from .search import GallerySource
from .whitening import RunningMoments, Whitener

__all__ = ["CacheWriter", "check_foldable", "fit_standardisers", "whiten_gallery"]


def fit_standardisers(src: GallerySource, chunk_size: int, *, eps: float, whiten: bool) -> tuple[Whitener, Whitener, int, int]:
    """Pass 1: per-dimension μ, σ of each modality (float64 chunk merge); returns the two whiteners,
    the row count N and the dimension d."""
    name_i, name_t = src.names
    wI = Whitener(eps=eps, enabled=whiten)
    wT = Whitener(eps=eps, enabled=whiten)
    seen = False
    for start, ci, ct in src.chunks(chunk_size):
        wI.partial_fit(ci, name=name_i, row_offset=start)
        wT.partial_fit(ct, name=name_t, row_offset=start)
        seen = True
    if not seen or src.n == 0:
        raise InputError(f"{name_i}: the gallery is empty (0 rows)")
    N, d = int(src.n or wI.n_samples_), wI.dim
    if wT.dim != d:
        raise InputError(f"embedding dimensions differ: {name_i} has dim {d}, {name_t} has dim {wT.dim}")
    return wI, wT, N, d


class CacheWriter:
    """The whitened gallery as a ``.npy`` file (N x 2d, ``dtype``), filled row chunk by row chunk.

    Written under a temporary name next to ``path`` and renamed by :meth:`commit` once the fit
    succeeds: a failed or interrupted (re)fit never leaves a partial cache that a search would read
    as the whitened gallery (:meth:`discard` removes it).
    """

    def __init__(self, path: Path, dtype: np.dtype, shape: tuple[int, int]) -> None:
        self.path, self.dtype = path, dtype
        self.tmp: Path | None = None
        self.file = None
        try:
            fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            os.close(fd)
            self.tmp = Path(tmp_name)
            mm = np.lib.format.open_memmap(self.tmp, mode="w+", dtype=dtype, shape=shape)
            self.offset = int(mm.offset)
            del mm
            self.file = open(self.tmp, "r+b")
        except BaseException:
            self.discard()
            raise
        self.row_bytes = shape[1] * dtype.itemsize

    def write(self, start: int, rows: np.ndarray) -> None:
        """Write ``rows`` as gallery rows ``start ...``."""
        assert self.file is not None
        self.file.seek(self.offset + start * self.row_bytes)
        self.file.write(np.ascontiguousarray(rows, dtype=self.dtype).tobytes())

    def commit(self) -> None:
        """Close the file and move it to ``path``."""
        assert self.file is not None and self.tmp is not None
        self.file.close()
        os.replace(self.tmp, self.path)

    def discard(self) -> None:
        """Close and remove the temporary file (whatever part of it exists)."""
        if self.file is not None:
            self.file.close()
            self.file = None
        if self.tmp is not None:
            self.tmp.unlink(missing_ok=True)


def whiten_gallery(
    src: GallerySource,
    wI: Whitener,
    wT: Whitener,
    N: int,
    *,
    chunk_size: int,
    dtype: np.dtype,
    folded: bool,
    gallery: np.ndarray | None = None,
    cache: CacheWriter | None = None,
) -> tuple[RunningMoments, np.ndarray, np.ndarray]:
    """Pass 2: whitened rows -> mean and centred co-moment of ``[x | y]`` (float64 chunk merge), and
    the norms of the standardised rows of each modality; the whitened rows also go into ``gallery``
    and ``cache`` when given.

    ``folded``: searches will fold the whitening into raw chunks in ``dtype`` (``(x - μ)·ρ``, see
    :meth:`~snapbench.fusion.index.MOORIndex.score_chunks`); in float32 that needs raw values well
    inside its range, checked here.
    """
    d = wI.dim
    name_i, name_t = src.names
    moments = RunningMoments(2 * d, cross=True)
    # norms of the standardised rows: streamed scoring applies 1/norm per row instead of re-whitening
    norms_i = np.empty(N, dtype=np.float64)
    norms_t = np.empty(N, dtype=np.float64)
    raw_limit = 1e37 if folded and dtype == np.float32 else np.inf
    buf = None
    for start, ci, ct in src.chunks(chunk_size):
        n = ci.shape[0]
        for chunk, nm in ((ci, name_i), (ct, name_t)):
            if raw_limit < np.inf and np.abs(chunk).max() > raw_limit:
                raise InputError(f"{nm}: values in rows {start}..{start + n - 1} reach "
                                 f"{float(np.abs(chunk).max()):.3g}, beyond what a float32 index streaming "
                                 "the raw gallery can fold; use a float64 index (dtype='float64') or an in-memory gallery")
        if buf is None or buf.shape[0] < n:
            buf = np.empty((n, 2 * d), dtype=np.float64)
        z = buf[:n]
        wI.transform(ci, name=name_i, out=z[:, :d], norms_out=norms_i[start : start + n])
        wT.transform(ct, name=name_t, out=z[:, d:], norms_out=norms_t[start : start + n])
        moments.update(z)
        if gallery is not None:
            gallery[start : start + n] = z
        if cache is not None:
            cache.write(start, z)
    if moments.n != N:
        raise InputError(f"the gallery yielded {moments.n} rows in the second pass, {N} in the first")
    return moments, norms_i, norms_t


def check_foldable(norms_i: np.ndarray, norms_t: np.ndarray, names: tuple[str, str], dtype: np.dtype) -> None:
    """ρ = 1/norm must be representable in the dtype the folded search runs in."""
    lo, hi = (1e-30, 1e30) if dtype == np.float32 else (1 / np.finfo(np.float64).max, np.finfo(np.float64).max)
    for norms, nm in ((norms_i, names[0]), (norms_t, names[1])):
        bad = np.flatnonzero((norms != 0) & ~((norms >= lo) & (norms <= hi)))
        if bad.size:
            raise InputError(
                f"{nm}: row {int(bad[0])} has norm {float(norms[bad[0]]):.3g} after standardising, outside "
                f"what a {dtype} index streaming the raw gallery can represent; rescale the "
                "embeddings, use a float64 index (dtype='float64'), or keep the gallery in memory / give cache_path"
            )
