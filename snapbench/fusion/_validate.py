"""Input checks shared by the fusion modules: every bad input fails early with the argument's name."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.errors import InputError
from ..core.validate import check_finite

__all__ = ["as_matrix", "check_same_dim", "check_shape"]


def as_matrix(x: Any, name: str, *, allow_vector: bool = False, dtype: Any = np.float64, copy: bool = False) -> np.ndarray:
    """``x`` as a finite, non-empty 2-D float array (a 1-D vector becomes one row if ``allow_vector``).

    Raises ``ValueError`` naming ``name`` for a wrong shape, an empty array, a non-numeric dtype or
    NaN/inf values (with the first offending row), so that no NaN ever flows silently into scores.
    """
    try:
        arr = np.asarray(x)
    except Exception as exc:  # pragma: no cover - exotic array-likes
        raise InputError(f"{name}: cannot be read as an array ({exc})") from exc
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise InputError(f"{name}: expected a numeric array, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise InputError(f"{name}: complex values are not supported")
    if arr.ndim == 1 and allow_vector:
        arr = arr[None, :]
    check_shape(arr, name, allow_vector=allow_vector)
    out = arr.astype(dtype, copy=copy) if dtype is not None else arr
    check_finite(out, what=name)
    return out


def check_shape(arr: np.ndarray, name: str, *, allow_vector: bool = False) -> None:
    """Raise naming ``name`` unless ``arr`` is a 2-D matrix with at least one row and one column (the
    shape half of :func:`as_matrix`, for galleries that are not read whole)."""
    if arr.ndim != 2:
        want = "a (rows, dim) matrix or one vector" if allow_vector else "a 2-D (rows, dim) matrix"
        raise InputError(f"{name}: expected {want}, got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise InputError(f"{name}: is empty (0 rows)")
    if arr.shape[1] == 0:
        raise InputError(f"{name}: has dimension 0")


def check_same_dim(named: dict[str, np.ndarray | tuple[int, ...]]) -> int:
    """All arrays share their last dimension; returns it or raises naming the mismatching ones."""
    dims = {k: (v.shape[-1] if hasattr(v, "shape") else v[-1]) for k, v in named.items()}
    values = set(dims.values())
    if len(values) != 1:
        desc = ", ".join(f"{k} has dim {d}" for k, d in dims.items())
        raise InputError(f"embedding dimensions differ: {desc} (all four must share one dimension)")
    return values.pop()
