"""Embeddings and path-score files: ``<stem>.<modality>.npy`` and both PATHS_DIR layouts.

Fusion-specific file reading and writing: embedding matrices (.npy / .safetensors), the four path
matrices of a condition, per-query MOOR weights.

Formats
-------
* ``.npy`` — read with ``np.load(allow_pickle=False)`` (never unpickled); ``mmap=True`` maps it.
* ``.safetensors`` — the ``safetensors`` extra; a file with one tensor is read as is, a
  file with several needs a key: ``embeddings.safetensors#image`` (otherwise the error lists the keys).

The folders this reads and writes (SCORES_DIR, PATHS_DIR in both layouts, EMBEDDINGS_DIR, id lists,
TREC runs) are defined, with their one reader/writer each, in :mod:`snapbench.store`.

Per-query MOOR weights are written *outside* the condition files (``moor_weights/<condition>.csv`` or
``.npy``) so that the SCORES_DIR stays readable by ``snapbench evaluate``.  Every output file is written
atomically (temporary file + ``os.replace``), so an interrupted run leaves no truncated file.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import ConfigError, InputError
from ..core.userfiles import load_npy
from ..core.validate import check_finite
from .atomic import open_text_atomic, save_npy_atomic
from .folders import PATH_NAMES

__all__ = ['load_matrix', 'load_path_scores', 'write_weights']


from ..core.install_hint import import_extra


def _safetensors_load(path: Path, key: str | None, name: str) -> np.ndarray:
    load_file = import_extra("safetensors.numpy", "safetensors", f"{name}: reading {path} needs safetensors").load_file
    try:
        tensors = load_file(str(path))
    except Exception as exc:
        raise InputError(f"{name}: cannot read {path} as safetensors ({exc})") from exc
    if key is None:
        if len(tensors) != 1:
            raise InputError(
                f"{name}: {path} holds {len(tensors)} tensors ({', '.join(sorted(tensors))}); "
                f"name one as {path}#KEY"
            )
        return next(iter(tensors.values()))
    if key not in tensors:
        raise InputError(f"{name}: {path} has no tensor {key!r}; it holds {', '.join(sorted(tensors))}")
    return tensors[key]


def load_matrix(
    path: str | os.PathLike,
    name: str = "array",
    *,
    mmap: bool = False,
    ndim: int | None = 2,
    check: bool = True,
) -> np.ndarray:
    """Load a numeric matrix from ``.npy`` or ``.safetensors[#key]``; errors name ``name`` and the file.

    ``check=True`` verifies the shape (``ndim``), non-emptiness and finiteness (skip it for a huge
    memmap whose rows are checked chunk by chunk later).
    """
    spec = str(path)
    key = None
    if ".safetensors#" in spec:
        spec, key = spec.split("#", 1)
    p = Path(spec)
    if p.suffix == ".safetensors":
        if not p.is_file():
            raise InputError(f"{name}: file not found", path=p)
        arr = _safetensors_load(p, key, name)
        if not isinstance(arr, np.ndarray) or arr.dtype == object or not np.issubdtype(arr.dtype, np.number):
            raise InputError(f"{name}: does not hold a numeric array (dtype {getattr(arr, 'dtype', '?')})", path=p)
        if np.issubdtype(arr.dtype, np.complexfloating):
            raise InputError(f"{name}: holds complex values", path=p)
    elif p.suffix == ".npy":
        arr = load_npy(p, what=name, mmap=mmap)
    else:
        raise InputError(f"{name}: must be a .npy or .safetensors file", path=p)
    if check:
        if ndim is not None and arr.ndim != ndim:
            raise InputError(f"{name}: has shape {arr.shape}, expected {ndim} dimensions", path=p)
        if arr.size == 0:
            raise InputError(f"{name}: is empty (shape {arr.shape})", path=p)
        check_finite(arr, what=name, path=p)
    return arr


def load_path_scores(files: dict[str, Path], *, condition: str = "") -> dict[str, np.ndarray]:
    """Load the four path matrices of one condition; they must share one (Q, N) shape."""
    out: dict[str, np.ndarray] = {}
    for p in PATH_NAMES:
        out[p] = load_matrix(files[p], f"s_{p} of {condition}" if condition else f"s_{p}")
    shapes = {p: a.shape for p, a in out.items()}
    if len(set(shapes.values())) != 1:
        desc = ", ".join(f"{files[p].name} {s}" for p, s in shapes.items())
        raise InputError(f"path score matrices of {condition or 'the condition'} differ in shape: {desc}")
    return out


def write_weights(
    path: str | os.PathLike,
    weights: np.ndarray,
    correlations: np.ndarray,
    text_share: np.ndarray,
    fallback: np.ndarray,
    query_ids: Sequence[str] | None = None,
) -> None:
    """Per-query weights: ``.csv`` (query_id, w_II, w_TT, w_IT, w_TI, r_TT, r_IT, r_TI, text_share,
    fallback) or ``.npy`` (Q x 4 weights only, row order = query order)."""
    p = Path(path)
    w = np.asarray(weights)
    if p.suffix == ".npy":
        save_npy_atomic(p, w)
        return
    if p.suffix != ".csv":
        raise ConfigError(f"weights file {p} must end in .csv or .npy")
    qids: Sequence[Any] = query_ids if query_ids is not None else [str(i) for i in range(w.shape[0])]
    if len(qids) != w.shape[0]:
        raise InputError(f"{len(qids)} query ids for {w.shape[0]} weight rows")
    with open_text_atomic(p, newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["query_id", "w_II", "w_TT", "w_IT", "w_TI", "r_TT", "r_IT", "r_TI", "text_share", "fallback"])
        for i, q in enumerate(qids):
            wr.writerow(
                [q]
                + [repr(float(x)) for x in w[i]]
                + [repr(float(x)) for x in correlations[i]]
                + [repr(float(text_share[i])), int(bool(fallback[i]))]
            )
