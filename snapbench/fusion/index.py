"""The fitted MOOR index: gallery statistics once, then any number of query batches (dense scores,
streaming exact top-k, or an ANN index over the composed 2d-dim gallery).

The algebra (why one composed query vector per query reproduces Algorithm 1 exactly) and the
numerics are documented in :mod:`snapbench.fusion.moor`; this module holds the streaming machinery.

:meth:`MOORIndex.fit` runs two streaming passes over the gallery (the helpers at the end of this
module) and may write the whitened-gallery cache file.  Pass 1 fits each modality's standardiser
(per-dimension μ, σ); pass 2 whitens every row once and accumulates the mean and centred co-moment of
``[G~^I | G~^T]`` (float64 chunk merges), the per-row norms that streamed scoring folds into the query
side, and, when asked, the whitened rows in memory and/or in the cache file.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import InputError
from ..core.ranking import StreamingTopK
from ._validate import as_matrix
from .gates import GateLike, get_gate
from .moor import CONST_RTOL, DEFAULT_EPS, DEFAULT_FUSION_EPS, MOORResult, MOORTopK, fuse_stats, gate_name
from .search import ANNIndex, GallerySource, NpyRowReader
from .whitening import RunningMoments, Whitener

__all__ = ['MOORIndex', 'moor']

# ---------------------------------------------------------------------------------------------------
# the fitted index
# ---------------------------------------------------------------------------------------------------


def _rowdot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", a, b).astype(np.float64, copy=False)


@dataclass
class _QueryState:
    tI: np.ndarray  # q~^I
    tT: np.ndarray  # q~^T
    hI: np.ndarray  # q^^I
    hT: np.ndarray  # q^^T


class MOORIndex:
    """MOOR over one gallery, fitted once: whitening statistics, covariance blocks, whitened gallery.

    Parameters
    ----------
    whiten:
        Gallery-side whitening (SPEC §9 step 1); ``False`` only L2-normalises.
    gate:
        Default gate (name from :mod:`snapbench.fusion.gates` or a callable); each query method
        accepts ``gate=`` to override it without refitting.
    eps:
        Added to the per-dimension std (1e-6).
    fusion_eps:
        Σw below this → the fused score is s^II (1e-6).
    dtype:
        float64 (exact; default) or float32 (query-side products and gallery scoring in float32).
    chunk_size:
        Gallery rows per chunk when fitting and searching.
    keep_gallery:
        Keep the whitened gallery ``[G~^I | G~^T]`` (N x 2d, ``dtype``) in memory.  Default: yes for
        in-memory arrays, no for ``.npy`` paths, memmaps and chunk callables (then every search
        re-reads the raw gallery chunk by chunk — whitening folded into the query vectors and a stored
        per-row norm, see :meth:`score_chunks` — or reads ``cache_path``).
    cache_path:
        If given, :meth:`fit` also writes the whitened concatenated gallery there (``.npy``, ``dtype``),
        and searches read it instead of re-whitening.

    Attributes after :meth:`fit`: ``whitener_image``, ``whitener_text``, ``n_gallery``, ``dim``,
    ``mean_image`` / ``mean_text`` (m_I, m_T), ``cov_ii``, ``cov_tt``, ``cov_it`` (float64 d x d),
    ``gallery_`` (or ``None``).
    """

    def __init__(
        self,
        *,
        whiten: bool = True,
        gate: GateLike = "bell",
        eps: float = DEFAULT_EPS,
        fusion_eps: float = DEFAULT_FUSION_EPS,
        dtype: Any = np.float64,
        chunk_size: int = 8192,
        keep_gallery: bool | None = None,
        cache_path: str | os.PathLike | None = None,
    ) -> None:
        self.whiten = bool(whiten)
        get_gate(gate)  # fail early on an unknown name
        self.gate = gate
        self.eps = float(eps)
        self.fusion_eps = float(fusion_eps)
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise InputError(f"dtype must be float32 or float64, got {self.dtype}")
        if chunk_size < 1:
            raise InputError(f"chunk_size must be >= 1, got {chunk_size}")
        self.chunk_size = int(chunk_size)
        self.keep_gallery = keep_gallery
        self.cache_path = Path(cache_path) if cache_path is not None else None
        self._source: GallerySource | None = None
        self.gallery_: np.ndarray | None = None
        self.ann_: ANNIndex | None = None
        self.n_gallery = 0
        self.dim = 0

    # -- fitting ---------------------------------------------------------------------------------
    def fit(self, g_image: Any, g_text: Any = None) -> MOORIndex:
        """Fit on the gallery: arrays, memmaps, two ``.npy`` paths, or one callable returning an
        iterator of ``(image_chunk, text_chunk)`` pairs (called once per pass)."""
        src = GallerySource.from_any(g_image, g_text)
        wI, wT, N, d = _fit_standardisers(src, self.chunk_size, eps=self.eps, whiten=self.whiten)
        keep = src.in_memory if self.keep_gallery is None else bool(self.keep_gallery)
        gallery = np.empty((N, 2 * d), dtype=self.dtype) if keep else None
        # without a kept gallery or cache, searches fold the whitening into raw chunks (see score_chunks)
        folded = gallery is None and self.cache_path is None
        cache = None
        try:
            if self.cache_path is not None:
                cache = _CacheWriter(self.cache_path, self.dtype, (N, 2 * d))
            moments, norms_i, norms_t = _whiten_gallery(src, wI, wT, N, chunk_size=self.chunk_size, dtype=self.dtype,
                                                       folded=folded, gallery=gallery, cache=cache)
            if folded:
                _check_foldable(norms_i, norms_t, src.names, self.dtype)
        except BaseException:
            if cache is not None:
                cache.discard()
            raise
        if cache is not None:
            cache.commit()
        self._set_fitted(src, wI, wT, moments, norms_i, norms_t, gallery)
        return self

    def _set_fitted(self, src: GallerySource, wI: Whitener, wT: Whitener, moments: RunningMoments,
                    norms_i: np.ndarray, norms_t: np.ndarray, gallery: np.ndarray | None) -> None:
        """Keep what the passes measured: whiteners, means and covariance blocks of the whitened
        gallery, the scales of the constant-path test, the per-row ρ of folded scoring."""
        d = wI.dim
        C = moments.var
        self.whitener_image, self.whitener_text = wI, wT
        self.n_gallery, self.dim = int(moments.n), d
        self.mean_image, self.mean_text = moments.mean[:d].copy(), moments.mean[d:].copy()
        self.cov_ii = np.ascontiguousarray(C[:d, :d])
        self.cov_tt = np.ascontiguousarray(C[d:, d:])
        self.cov_it = np.ascontiguousarray(C[:d, d:])
        # per-coordinate std and rms of the whitened gallery: the scale of the constant-path test
        self._sd_i = np.sqrt(np.maximum(np.diag(self.cov_ii), 0.0))
        self._sd_t = np.sqrt(np.maximum(np.diag(self.cov_tt), 0.0))
        self._rms_i = np.sqrt(self._sd_i**2 + self.mean_image**2)
        self._rms_t = np.sqrt(self._sd_t**2 + self.mean_text**2)
        self._cov32 = None
        # ρ_n = 1 / ‖(g_n − μ) / σ‖ (0 for an all-zero standardised row, which whitens to zero)
        self._rho_i = np.divide(1.0, norms_i, out=np.zeros_like(norms_i), where=norms_i > 0)
        self._rho_t = np.divide(1.0, norms_t, out=np.zeros_like(norms_t), where=norms_t > 0)
        self._source = src
        self.gallery_ = gallery
        self.ann_ = None

    def _check_fitted(self) -> None:
        if self._source is None:
            raise RuntimeError("MOORIndex is not fitted: call fit(g_image, g_text) first")

    # -- query side ------------------------------------------------------------------------------
    def _prepare(self, q_image: Any, q_text: Any) -> _QueryState:
        self._check_fitted()
        # checked here once (finite, 2-D, non-empty); converted by the whitening below
        qI = as_matrix(q_image, "q_image", allow_vector=True, dtype=None)
        qT = as_matrix(q_text, "q_text", allow_vector=True, dtype=None)
        for q, nm in ((qI, "q_image"), (qT, "q_text")):
            if q.shape[1] != self.dim:
                raise InputError(f"{nm}: has dim {q.shape[1]}, the gallery has dim {self.dim}")
        if qI.shape[0] != qT.shape[0]:
            raise InputError(f"query counts differ: q_image has {qI.shape[0]} rows, q_text has {qT.shape[0]}")
        wI, wT = self.whitener_image, self.whitener_text
        # query-side work runs in the index dtype (float32: ~1e-7 relative, like the scoring itself)
        kw = {"dtype": self.dtype, "check": False}
        tI = wI.transform(qI, name="q_image", **kw)
        tT = wT.transform(qT, name="q_text", **kw)
        if self.whiten:
            hI = wT.transform(qI, name="q_image", **kw)  # cross-whitened with the *text* statistics
            hT = wI.transform(qT, name="q_text", **kw)
        else:
            hI, hT = tI, tT
        return _QueryState(tI, tT, hI, hT)

    def _stats(self, st: _QueryState, gate: GateLike | None):
        """Variances, covariances with s^II, constant flags -> weights etc. (see module docstring)."""
        if self.dtype == np.float32:
            if self._cov32 is None:
                self._cov32 = tuple(
                    c.astype(np.float32)
                    for c in (self.cov_ii, self.cov_tt, self.cov_it, np.stack([self._sd_i, self._rms_i], 1),
                              np.stack([self._sd_t, self._rms_t], 1))
                )
            Cii, Ctt, Cit, Si, St = self._cov32
        else:
            Cii, Ctt, Cit = self.cov_ii, self.cov_tt, self.cov_it
            Si, St = np.stack([self._sd_i, self._rms_i], 1), np.stack([self._sd_t, self._rms_t], 1)
        tI, tT, hI, hT = st.tI, st.tT, st.hI, st.hT
        A = tI @ Cii
        B = hT @ Cii
        Ct = tT @ Ctt
        D = hI @ Ctt
        E = tI @ Cit
        var = np.stack([_rowdot(A, tI), _rowdot(Ct, tT), _rowdot(D, hI), _rowdot(B, hT)], axis=1)
        cov = np.stack([_rowdot(E, tT), _rowdot(E, hI), _rowdot(A, hT)], axis=1)
        def bound(a: np.ndarray, sd_rms: np.ndarray) -> np.ndarray:
            b = (np.abs(a) @ sd_rms).astype(np.float64)
            return b[:, 0] * b[:, 1]

        scale = np.stack([bound(tI, Si), bound(tT, St), bound(hI, St), bound(hT, Si)], axis=1)
        const = var <= CONST_RTOL * scale
        g = self.gate if gate is None else gate
        weights, r, var, share, fallback = fuse_stats(var, cov, const, g, self.fusion_eps)
        return weights, r, var, share, fallback, gate_name(g)

    def _compose(self, st: _QueryState, weights: np.ndarray, fallback: np.ndarray) -> np.ndarray:
        """u_q = [w_II q~^I + w_TI q^^T, w_TT q~^T + w_IT q^^I] / Σw  (fallback rows: [q~^I, 0])."""
        total = weights.sum(axis=1, keepdims=True)
        total = np.where(fallback[:, None], 1.0, total)
        w = (weights / total).astype(st.tI.dtype, copy=False)
        uI = w[:, 0:1] * st.tI + w[:, 3:4] * st.hT
        uT = w[:, 1:2] * st.tT + w[:, 2:3] * st.hI
        uI[fallback] = st.tI[fallback]
        uT[fallback] = 0.0
        return np.concatenate([uI, uT], axis=1)

    def query_vectors(self, q_image: Any, q_text: Any, *, gate: GateLike | None = None) -> tuple[np.ndarray, MOORResult]:
        """The composed 2d-dim query vectors u (Q x 2d, in the index dtype) and the weights (``scores=None``).

        ``u @ [G~^I | G~^T].T`` are the MOOR scores: use them with any inner-product search.
        """
        st = self._prepare(q_image, q_text)
        weights, r, var, share, fallback, gname = self._stats(st, gate)
        u = self._compose(st, weights, fallback)
        return u, MOORResult(None, weights, r, var, share, fallback, gname)

    def weights(self, q_image: Any, q_text: Any, *, gate: GateLike | None = None) -> np.ndarray:
        """Per-query weights (Q x 4: II, TT, IT, TI), unnormalised."""
        return self.explain(q_image, q_text, gate=gate).weights

    def explain(self, q_image: Any, q_text: Any, *, gate: GateLike | None = None) -> MOORResult:
        """Weights, correlations, variances, text share, fallback — without scoring the gallery."""
        st = self._prepare(q_image, q_text)
        weights, r, var, share, fallback, gname = self._stats(st, gate)
        return MOORResult(None, weights, r, var, share, fallback, gname)

    # -- gallery side ----------------------------------------------------------------------------
    def whitened_chunks(self) -> Iterator[tuple[int, np.ndarray]]:
        """``(start, rows)`` chunks of the whitened concatenated gallery ``[G~^I | G~^T]`` in ``dtype``
        (from memory, from ``cache_path``, or re-whitened from the source)."""
        self._check_fitted()
        cs = self.chunk_size
        if self.gallery_ is not None:
            for start in range(0, self.n_gallery, cs):
                yield start, self.gallery_[start : start + cs]
            return
        if self.cache_path is not None and self.cache_path.exists():
            reader = NpyRowReader(self.cache_path, "whitened gallery cache")
            if reader.shape == (self.n_gallery, 2 * self.dim) and reader.dtype == self.dtype:
                yield from reader.chunks(cs)
                return
        assert self._source is not None
        d = self.dim
        name_i, name_t = self._source.names
        buf = None
        for start, ci, ct in self._source.chunks(cs):
            n = ci.shape[0]
            if buf is None or buf.shape[0] < n:
                buf = np.empty((n, 2 * d), dtype=self.dtype)
            z = buf[:n]
            # rows were checked for NaN/inf during the fit
            self.whitener_image.transform(ci, name=name_i, dtype=self.dtype, out=z[:, :d], check=False)
            self.whitener_text.transform(ct, name=name_t, dtype=self.dtype, out=z[:, d:], check=False)
            yield start, z

    def score_chunks(self, u: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
        """``(start, u @ [G~^I | G~^T][start:stop].T)`` score chunks (Q x chunk, ``dtype``) for composed
        query vectors ``u`` (Q x 2d), in gallery order.

        From memory or the whitened cache this is one product per chunk.  Streaming from the source,
        the whitening is folded: u · g~_n = (u_I / σ_I) · (x_n − μ_I) ρ^I_n + (u_T / σ_T) · (y_n − μ_T) ρ^T_n
        with ρ_n = 1/‖(g_n − μ)/σ‖ stored at fit time, so each chunk costs one subtract-and-scale pass
        (about what copying it into a concatenated buffer costs) instead of a full re-whitening.
        """
        self._check_fitted()
        U = np.ascontiguousarray(u, dtype=self.dtype)
        if self.gallery_ is not None or (self.cache_path is not None and self.cache_path.exists()):
            for start, z in self.whitened_chunks():
                yield start, U @ z.T
            return
        assert self._source is not None
        d = self.dim
        wI, wT = self.whitener_image, self.whitener_text
        V = U / np.concatenate([wI.divisor_, wT.divisor_]).astype(self.dtype)
        mu_i, mu_t = wI.center_.astype(self.dtype), wT.center_.astype(self.dtype)
        rho_i, rho_t = self._rho_i.astype(self.dtype), self._rho_t.astype(self.dtype)
        buf = None
        for start, ci, ct in self._source.chunks(self.chunk_size):
            n = ci.shape[0]
            if buf is None or buf.shape[0] < n:
                buf = np.empty((n, 2 * d), dtype=self.dtype)
            z = buf[:n]
            for half, x, mu, rho in ((z[:, :d], ci, mu_i, rho_i), (z[:, d:], ct, mu_t, rho_t)):
                if self.whiten:
                    np.subtract(x, mu, out=half, casting="unsafe")
                    np.multiply(half, rho[start : start + n, None], out=half)
                else:
                    np.multiply(x, rho[start : start + n, None], out=half, casting="unsafe")
            yield start, V @ z.T

    def query(
        self, q_image: Any, q_text: Any, *, gate: GateLike | None = None, out: np.ndarray | None = None
    ) -> MOORResult:
        """Dense MOOR: fused scores (Q x N) plus weights, correlations, text share.

        ``out``: a C-contiguous (Q x N) array of the index dtype to write the scores into (returned as
        ``.scores``).  A loop over the states of one evaluation that saves each state's scores before the
        next can reuse one buffer instead of allocating and page-faulting a fresh Q x N array per state.
        """
        u, res = self.query_vectors(q_image, q_text, gate=gate)
        U = u.astype(self.dtype, copy=False)
        shape = (U.shape[0], self.n_gallery)
        if out is None:
            out = np.empty(shape, dtype=self.dtype)
        elif out.shape != shape or out.dtype != self.dtype or not out.flags.c_contiguous or not out.flags.writeable:
            flaws = [w for w, bad in (("not C-contiguous", not out.flags.c_contiguous),
                                      ("read-only", not out.flags.writeable)) if bad]
            raise InputError(
                f"out: expected a writeable C-contiguous {shape} {self.dtype} array, got "
                f"{out.shape} {out.dtype}{' (' + ', '.join(flaws) + ')' if flaws else ''}"
            )
        if self.gallery_ is not None:
            np.matmul(U, self.gallery_.T, out=out)
        else:
            for start, S in self.score_chunks(u):
                out[:, start : start + S.shape[1]] = S
        res.scores = out
        return res

    def scores(self, q_image: Any, q_text: Any, *, gate: GateLike | None = None) -> np.ndarray:
        """Fused scores (Q x N)."""
        res = self.query(q_image, q_text, gate=gate)
        assert res.scores is not None
        return res.scores

    def topk(
        self,
        q_image: Any,
        q_text: Any,
        k: int = 10,
        *,
        gate: GateLike | None = None,
        ann: bool = False,
    ) -> MOORTopK:
        """Top-k gallery columns per query, streaming over gallery chunks (memory O(Q·chunk + Q·k)),
        or through the ANN index built by :meth:`build_ann` (``ann=True``)."""
        u, res = self.query_vectors(q_image, q_text, gate=gate)
        if ann:
            if self.ann_ is None:
                raise RuntimeError("no ANN index: call build_ann() first")
            top = self.ann_.search(u.astype(np.float32), k)
            return MOORTopK(top.indices, top.scores, res)
        acc = StreamingTopK(u.shape[0], k)
        for start, S in self.score_chunks(u):
            acc.push(S, start)
        top = acc.result()
        return MOORTopK(top.indices, top.scores, res)

    def build_ann(self, kind: str = "hnsw", **params: Any) -> ANNIndex:
        """Build a FAISS inner-product index over the whitened gallery (the ``ann`` extra);
        ``params`` go to :class:`~snapbench.fusion.search.ANNIndex` (M, ef_construction, ef_search,
        nlist, nprobe)."""
        self._check_fitted()
        index = ANNIndex(2 * self.dim, kind=kind, n_total=self.n_gallery, **params)
        for _, z in self.whitened_chunks():
            index.add(z)
        index.flush()
        self.ann_ = index
        return index

    def __repr__(self) -> str:
        if self._source is None:
            return f"MOORIndex(whiten={self.whiten}, gate={gate_name(self.gate)!r}; unfitted)"
        return (
            f"MOORIndex(whiten={self.whiten}, gate={gate_name(self.gate)!r}, dtype={self.dtype.name}; "
            f"N={self.n_gallery}, d={self.dim}, gallery {'in memory' if self.gallery_ is not None else 'streamed'})"
        )


# ---------------------------------------------------------------------------------------------------
# one-shot helpers
# ---------------------------------------------------------------------------------------------------


def moor(
    q_image: Any,
    q_text: Any,
    g_image: Any,
    g_text: Any,
    *,
    whiten: bool = True,
    gate: GateLike = "bell",
    eps: float = DEFAULT_EPS,
    fusion_eps: float = DEFAULT_FUSION_EPS,
    dtype: Any = np.float64,
) -> MOORResult:
    """MOOR (SnapBench Algorithm 1) of queries (Q x d image and text embeddings) against a gallery
    (N x d each): returns :class:`MOORResult` with ``.scores`` (Q x N), ``.weights`` (Q x 4: II, TT, IT,
    TI), ``.correlations`` (Q x 3: TT, IT, TI), ``.text_share`` (Q,).

    Fits a :class:`MOORIndex` on the gallery each call — fit one yourself to score many query batches.
    """
    index = MOORIndex(whiten=whiten, gate=gate, eps=eps, fusion_eps=fusion_eps, dtype=dtype)
    return index.fit(g_image, g_text).query(q_image, q_text)


def _fit_standardisers(src: GallerySource, chunk_size: int, *, eps: float, whiten: bool) -> tuple[Whitener, Whitener, int, int]:
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


class _CacheWriter:
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


def _whiten_gallery(
    src: GallerySource,
    wI: Whitener,
    wT: Whitener,
    N: int,
    *,
    chunk_size: int,
    dtype: np.dtype,
    folded: bool,
    gallery: np.ndarray | None = None,
    cache: _CacheWriter | None = None,
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


def _check_foldable(norms_i: np.ndarray, norms_t: np.ndarray, names: tuple[str, str], dtype: np.dtype) -> None:
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
