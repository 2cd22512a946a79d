"""Vector helpers shared by every layer (fusion's whitening, the model adapters, user code).

``l2_normalize`` is the one row normaliser of snapbench.  Decisions: an all-zero row stays the zero
vector (``x / max(‖x‖, tiny)``, ``tiny`` = the smallest normal float of the dtype), so it scores 0
against everything instead of producing NaN; rows whose sum of squares would overflow or underflow
are rescaled by their largest magnitude first, so their direction survives.
"""

from __future__ import annotations

import numpy as np

__all__ = ["l2_normalize"]


def l2_normalize(x: np.ndarray, *, out: np.ndarray | None = None, norms_out: np.ndarray | None = None) -> np.ndarray:
    """Divide each row by its L2 norm; all-zero rows stay zero (documented above).

    ``norms_out`` (rows,) receives the norms before normalisation.  Rows whose sum of squares would
    overflow (|x| above ~1e19 in float32, ~1e154 in float64) or underflow are normalised in float64
    after dividing by their largest magnitude, so their direction survives instead of collapsing to
    the zero vector or NaN; their norm is then computed in float64 (inf only beyond ~1.8e308)."""
    x = np.asarray(x)
    dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.dtype(np.float64)
    info = np.finfo(dtype)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        norms = np.sqrt(np.einsum("ij,ij->i", x, x, dtype=dtype))
    # sqrt(tiny) / eps: below it the squares of the entries may have lost precision to underflow
    risky = ~(norms >= np.sqrt(info.tiny) / info.eps) | ~np.isfinite(norms)
    unit = None
    if risky.any():
        rows = np.asarray(x[risky], dtype=np.float64)
        big = np.abs(rows).max(axis=1)
        big[big == 0] = 1.0
        scaled = rows / big[:, None]
        n = np.sqrt(np.einsum("ij,ij->i", scaled, scaled))
        unit = np.divide(scaled, n[:, None], out=np.zeros_like(scaled), where=n[:, None] > 0)
        norms = norms.astype(np.float64)
        with np.errstate(over="ignore"):
            norms[risky] = big * n
    if norms_out is not None:
        norms_out[...] = norms
    if out is None:
        out = np.empty(x.shape, dtype=dtype)
    with np.errstate(over="ignore", invalid="ignore"):  # risky rows are overwritten just below
        safe = np.maximum(norms, info.tiny).astype(dtype, copy=False)
        np.divide(x, safe[:, None], out=out)
    if unit is not None:
        out[risky] = unit
    return out
