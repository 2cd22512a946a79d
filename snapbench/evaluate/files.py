"""Low-level evaluation files: score matrices and TREC runs; the error type every evaluation input
problem raises."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.errors import InputError
from ..store import read_trec_run, write_trec_run

__all__ = ["EvaluationInputError", "RunRanking", "load_score_matrix", "read_run", "write_run"]

_NPY_MAGIC = b"\x93NUMPY"


class EvaluationInputError(InputError):
    """Bad evaluation input (file, id, shape or value); the message names the file and the problem."""


def load_score_matrix(path: str | Path) -> np.ndarray:
    """Open a ``.npy`` score matrix as a read-only memmap, with clear errors for non-numeric data."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            magic = fh.read(6)
    except OSError as e:
        raise EvaluationInputError(f"{p}: cannot read ({e.strerror})") from None
    if magic != _NPY_MAGIC:
        raise EvaluationInputError(f"{p}: not a .npy file (bad header); save scores with numpy.save")
    try:
        arr = np.load(p, mmap_mode="r", allow_pickle=False)
    except ValueError as e:
        if "object" in str(e).lower() or "pickle" in str(e).lower():
            raise EvaluationInputError(
                f"{p}: holds a Python-object array; snapbench never unpickles files -- save a numeric "
                "array, e.g. np.save(path, scores.astype(np.float32))"
            ) from None
        raise EvaluationInputError(f"{p}: cannot load ({e})") from None
    except (OSError, EOFError) as e:
        raise EvaluationInputError(f"{p}: truncated or unreadable .npy file ({e})") from None
    if arr.dtype.kind not in "fiu":
        raise EvaluationInputError(f"{p}: scores must be a real numeric array, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise EvaluationInputError(f"{p}: scores must be 2-d (queries x gallery), got shape {arr.shape}")
    return arr


@dataclass
class RunRanking:
    """A condition read from a TREC run: per query the retrieved items in our order.

    ``idx`` (Q, L) gallery column indices (``-1`` padding), ``scores`` (Q, L) (NaN padding).
    """

    idx: np.ndarray
    scores: np.ndarray


def read_run(path: str | Path, query_ids: Sequence[str], gallery_ids: Sequence[str]) -> RunRanking:
    """Read a TREC run into a :class:`RunRanking` (order: score desc, then gallery order); see
    :func:`snapbench.store.read_trec_run`."""
    idx, sc = read_trec_run(path, query_ids, gallery_ids)
    return RunRanking(idx, sc)


def write_run(
    path: str | Path,
    query_ids: Sequence[str],
    gallery_ids: Sequence[str],
    idx: np.ndarray,
    scores: np.ndarray,
    tag: str = "snapbench",
) -> None:
    """Write a TREC run of the given top-k lists (``-1`` slots skipped); see
    :func:`snapbench.store.write_trec_run` (one float format for every run snapbench writes)."""
    write_trec_run(path, query_ids, gallery_ids, idx, scores, tag=tag)
