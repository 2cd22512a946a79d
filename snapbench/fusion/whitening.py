"""Gallery-side whitening (SPEC §9 step 1) with an explicit fit / transform split.

A :class:`Whitener` is fitted once on one gallery modality: per-dimension mean ``μ`` and population
standard deviation ``σ`` (ddof 0), then ``σ += eps`` (``eps = 1e-6``, the authors' convention).
``transform`` standardises ``(x - μ) / σ`` and L2-normalises each row.  With ``enabled=False`` the
transform only L2-normalises (some models degrade with whitening; then MOOR's cross-whitened queries
equal the plain ones).

Zero rows.  A row whose standardised vector is exactly zero (e.g. the single row of a one-item gallery)
cannot be normalised; it is left as the zero vector (``x / max(‖x‖, tiny)``, ``tiny`` = the smallest
normal float of the dtype), so it scores 0 against everything instead of producing NaN.

Streaming.  ``partial_fit`` merges per-chunk statistics with the pairwise update of Chan, Golub and
LeVeque (each chunk's mean and centred sum of squares are computed in float64, then combined), so a
gallery larger than memory is fitted in one pass without the cancellation of the naive
``E[x²] − E[x]²`` formula; ``fit`` on an in-memory array gives the same values as ``np.mean``/``np.std``
up to float64 rounding.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.errors import InputError
from ..core.validate import check_finite
from ..core.vectors import l2_normalize
from ._validate import as_matrix

__all__ = ["RunningMoments", "Whitener", "l2_normalize"]  # l2_normalize re-exported from snapbench.core.vectors


class RunningMoments:
    """Chunk-merged mean and centred second moment (sum of squares or full co-moment matrix).

    ``cross=False`` keeps per-column sums of squared deviations (for μ, σ); ``cross=True`` keeps the
    full ``d x d`` co-moment ``Σ (x - m)(x - m)ᵀ`` (for the covariance blocks of the whitened gallery).
    Everything is float64.
    """

    def __init__(self, dim: int, *, cross: bool = False) -> None:
        self.n = 0
        self.mean = np.zeros(dim, dtype=np.float64)
        self.m2 = np.zeros((dim, dim) if cross else dim, dtype=np.float64)
        self.cross = cross

    def update(self, chunk: np.ndarray) -> None:
        x = np.asarray(chunk, dtype=np.float64)
        nb = x.shape[0]
        if nb == 0:
            return
        mb = x.mean(axis=0)
        xc = x - mb
        m2b = xc.T @ xc if self.cross else np.einsum("ij,ij->j", xc, xc)
        if self.n == 0:
            self.n, self.mean, self.m2 = nb, mb, m2b
            return
        n = self.n + nb
        delta = mb - self.mean
        self.mean = self.mean + delta * (nb / n)
        corr = (self.n * nb / n)
        self.m2 = self.m2 + m2b + (np.outer(delta, delta) if self.cross else delta * delta) * corr
        self.n = n

    @property
    def var(self) -> np.ndarray:
        """Population (ddof 0) variance / covariance."""
        if self.n == 0:
            raise InputError("no rows were seen")
        return self.m2 / self.n


class Whitener:
    """Standardise with a gallery's per-dimension mean and std (+eps), then L2-normalise rows.

    Parameters
    ----------
    eps:
        Added to the population std (ddof 0) of every dimension (authors' convention: 1e-6), which
        keeps zero-variance dimensions finite.
    enabled:
        ``False`` turns whitening off: ``transform`` only L2-normalises.

    Attributes after fitting: ``mean_`` and ``scale_`` (= std + eps), float64 vectors of length d,
    and ``n_samples_``.
    """

    def __init__(self, *, eps: float = 1e-6, enabled: bool = True) -> None:
        if not (eps >= 0 and np.isfinite(eps)):
            raise InputError(f"eps must be a finite number >= 0, got {eps}")
        self.eps = float(eps)
        self.enabled = bool(enabled)
        self._moments: RunningMoments | None = None
        self.mean_: np.ndarray | None = None
        self.scale_: np.ndarray | None = None
        self.n_samples_: int = 0

    # -- fitting ---------------------------------------------------------------------------------
    def fit(self, gallery: Any, *, name: str = "gallery", chunk_size: int = 65536) -> Whitener:
        """Fit on a whole gallery (array or memmap; read in chunks of ``chunk_size`` rows)."""
        g = np.asarray(gallery)
        if g.ndim != 2 or g.shape[0] == 0 or g.shape[1] == 0:
            as_matrix(g, name)  # raises the descriptive error
        self._moments = None
        for start in range(0, g.shape[0], chunk_size):
            self.partial_fit(g[start : start + chunk_size], name=name, row_offset=start)
        return self

    def partial_fit(self, chunk: Any, *, name: str = "gallery", row_offset: int = 0) -> Whitener:
        """Add one chunk of gallery rows to the running statistics."""
        x = np.asarray(chunk)
        if x.ndim != 2 or x.shape[1] == 0:
            raise InputError(f"{name}: expected 2-D chunks (rows, dim), got shape {x.shape}")
        if self._moments is not None and x.shape[1] != self._moments.mean.shape[0]:
            raise InputError(f"{name}: chunk dimension {x.shape[1]} differs from {self._moments.mean.shape[0]}")
        check_finite(x, what=name, row_offset=row_offset)
        if self._moments is None:
            self._moments = RunningMoments(x.shape[1])
        # huge values overflow the running statistics: reported just below when whitening needs them,
        # harmless (unused) with whitening off
        with np.errstate(over="ignore", invalid="ignore"):
            self._moments.update(x)
            scale = np.sqrt(self._moments.var) + self.eps if self._moments.n else None
        if scale is not None:
            if self.enabled and not (np.isfinite(scale).all() and np.isfinite(self._moments.mean).all()):
                big = float(np.abs(x).max())
                raise InputError(
                    f"{name}: values are too large to standardise in float64 (largest |value| in rows "
                    f"{row_offset}..{row_offset + x.shape[0] - 1}: {big:.3g}); rescale the embeddings"
                )
            self.mean_ = self._moments.mean.copy()
            self.scale_ = scale
            self.n_samples_ = self._moments.n
        return self

    @property
    def dim(self) -> int:
        self._check_fitted()
        assert self.mean_ is not None
        return int(self.mean_.shape[0])

    def _check_fitted(self) -> None:
        if self.mean_ is None:
            raise RuntimeError("Whitener is not fitted: call fit(gallery) first")

    # -- transforming ------------------------------------------------------------------------------
    def transform(
        self,
        x: Any,
        *,
        name: str = "x",
        dtype: Any = np.float64,
        out: np.ndarray | None = None,
        check: bool = True,
        norms_out: np.ndarray | None = None,
    ) -> np.ndarray:
        """Whitened, row-normalised copy of ``x`` (rows, d) in ``dtype`` (float64 by default).

        ``out`` (rows, d) may be a strided view (e.g. one half of a concatenated buffer).  ``check=False``
        skips the NaN/inf scan (for gallery chunks already validated during the fit).  ``norms_out``
        receives each row's norm after standardising (before the L2 normalisation).
        """
        self._check_fitted()
        arr = np.asarray(x)
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2:
            raise InputError(f"{name}: expected a 2-D (rows, dim) matrix, got shape {arr.shape}")
        if arr.shape[1] != self.dim:
            raise InputError(f"{name}: has dim {arr.shape[1]}, the whitener was fitted on dim {self.dim}")
        if check:
            check_finite(arr, what=name)
        dtype = np.dtype(dtype)
        if out is None:
            out = np.empty(arr.shape, dtype=dtype)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            self._standardize(arr, out)
            redo = rows = None
            if dtype.itemsize < 8:
                # a narrow dtype (float32) is fast but overflows beyond ~3e38 and flushes tiny values to 0:
                # rows whose standardised norm left a comfortable range are redone in float64, then cast
                n2 = np.einsum("ij,ij->i", out, out)
                redo = np.flatnonzero(~((n2 >= 1e-30) & (n2 <= 1e30)))
                if redo.size:
                    rows = np.empty((redo.size, arr.shape[1]), dtype=np.float64)
                    self._standardize(arr[redo], rows)
                    self._check_standardized(rows, arr, name, redo)
            else:
                self._check_standardized(out, arr, name)
            l2_normalize(out, out=out, norms_out=norms_out)
            if rows is not None:
                row_norms = np.empty(rows.shape[0], dtype=np.float64)
                out[redo] = l2_normalize(rows, out=rows, norms_out=row_norms)
                if norms_out is not None:
                    norms_out[redo] = row_norms
        return out

    def _check_standardized(self, z: np.ndarray, arr: np.ndarray, name: str, rows: np.ndarray | None = None) -> None:
        """Finite input, non-finite ``(x - μ) / σ`` (σ << 1 with |x| near float64's limit, or σ = 0 with
        ``eps=0``): a clear error."""
        if np.isfinite(z).all():
            return
        i, j = (int(v) for v in np.argwhere(~np.isfinite(z))[0])
        row = int(rows[i]) if rows is not None else i
        if self.enabled and self.scale_ is not None and self.scale_[j] == 0:
            raise InputError(
                f"{name}: (x - μ) / σ is undefined in dimension {j} (row {row}): the gallery is constant there "
                f"and eps={self.eps} leaves σ = 0; use eps > 0 (the authors' 1e-6)"
            )
        raise InputError(
            f"{name}: row {row} overflows float64 when standardised (largest |value| "
            f"{float(np.abs(arr[row]).max()):.3g}); rescale the embeddings"
        )

    def _standardize(self, arr: np.ndarray, out: np.ndarray) -> None:
        """``(arr - μ) / σ`` (or a copy with whitening off) into ``out``, computed in ``out``'s dtype."""
        dtype = out.dtype
        if self.enabled:
            assert self.mean_ is not None and self.scale_ is not None
            np.subtract(arr, self.mean_.astype(dtype, copy=False), out=out, casting="unsafe")
            # divide (not multiply by 1/σ) so the float64 path is the literal (x - μ) / σ
            np.divide(out, self.scale_.astype(dtype, copy=False), out=out)
        else:
            np.copyto(out, arr, casting="unsafe")

    @property
    def center_(self) -> np.ndarray:
        """The vector subtracted by ``transform`` (μ, or 0 with whitening off)."""
        self._check_fitted()
        assert self.mean_ is not None
        return self.mean_ if self.enabled else np.zeros_like(self.mean_)

    @property
    def divisor_(self) -> np.ndarray:
        """The per-dimension divisor used by ``transform`` (σ + eps, or 1 with whitening off)."""
        self._check_fitted()
        assert self.scale_ is not None
        return self.scale_ if self.enabled else np.ones_like(self.scale_)

    def __repr__(self) -> str:
        state = f"fitted on {self.n_samples_} rows, d={self.dim}" if self.mean_ is not None else "unfitted"
        return f"Whitener(eps={self.eps}, enabled={self.enabled}; {state})"
