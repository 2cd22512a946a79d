"""Fusion baselines MOOR is compared against (SnapBench Table 13 and §9), on path score matrices.

Every function takes score matrices of shape (Q x N) — one row per query, one column per gallery
item — and returns a fused (Q x N) float64 matrix; higher is better.  Ranks use the project tie rule
(higher score first, ties by gallery column order), 1-based.

===============  ===================================================================================
baseline         definition
===============  ===================================================================================
joint_alpha      α·s^II + (1−α)·s^TT.  α = 0.5 is the paper's "Joint" (fixed equal-weight fusion,
                 Table 10).  The paper's Joint is the IT→IT retrieval mode of Table 2 / SPEC §6, i.e.
                 plain (unwhitened) cosine similarities: use :func:`joint` (``whiten=False``), or pass
                 your own cosine matrices.
comb_sum         Σ_p minmax(s^p): per-query min-max normalisation to [0, 1] (a constant row → 0), summed.
comb_mnz         comb_sum × (number of paths that "retrieve" the item).  With full score lists every
                 path scores every item, so "retrieved" means: in that path's top-``depth`` (default
                 100, a common run depth); the sum runs over the retrieving paths only (a path that
                 does not retrieve the item contributes 0, as in Fox & Shaw's truncated runs).
                 ``depth=None`` counts the items with a min-max score > 0.
borda            Σ_p (N − rank_p): N − 1 points for rank 1 down to 0 for rank N.
rrf              Σ_p 1 / (k + rank_p), k = 60, ranks 1-based (Cormack et al. 2009).
uniform          mean of the paths (``wh_uniform`` = the four *whitened* paths, equal weights).
wh_img           the whitened image path s^II alone.
oracle_alpha     per query, the α on a grid in [0, 1] for α·a + (1−α)·b that puts the first positive
                 highest (minimal rank of the first positive, so hit@1 is maximised); an upper bound
                 that needs labels.  Ties between α values → the one closest to 0.5 (the Joint
                 baseline), then the smaller α.
===============  ===================================================================================

The rank-based fusions (CombSUM, CombMNZ, Borda, RRF, uniform) use **all four paths** by default in
:func:`fusion_baselines` — the same information MOOR sees; pass two matrices to fuse only II and TT.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.errors import InputError
from ..core.ranking import first_positive_rank, rank_matrix
from ..core.registry import Table
from ._validate import as_matrix
from .moor import PathScores, path_scores

__all__ = [
    "OracleResult",
    "ROW_BASELINES",
    "borda",
    "comb_mnz",
    "comb_sum",
    "fusion_baselines",
    "joint",
    "joint_alpha",
    "minmax",
    "oracle_alpha",
    "relevance_matrix",
    "rrf",
    "text_share",
    "uniform",
    "wh_img",
    "wh_uniform",
]


def _paths(paths: Sequence[Any] | PathScores, name: str = "paths") -> list[np.ndarray]:
    if isinstance(paths, PathScores):
        return paths.as_list()
    if isinstance(paths, np.ndarray) and paths.ndim == 2:
        raise InputError(f"{name}: pass a list of score matrices (one per path), not a single matrix")
    mats = [as_matrix(p, f"{name}[{i}]") for i, p in enumerate(paths)]
    if not mats:
        raise InputError(f"{name}: no score matrices given")
    shapes = {m.shape for m in mats}
    if len(shapes) != 1:
        raise InputError(f"{name}: score matrices differ in shape: {[m.shape for m in mats]}")
    return mats


def joint_alpha(s_II: Any, s_TT: Any, alpha: float = 0.5) -> np.ndarray:
    """Fixed fusion α·s^II + (1−α)·s^TT (α = 0.5: the paper's "Joint")."""
    if not 0.0 <= alpha <= 1.0:
        raise InputError(f"alpha must be in [0, 1], got {alpha}")
    a, b = _paths([s_II, s_TT], "joint_alpha")
    return alpha * a + (1.0 - alpha) * b


def joint(q_image: Any, q_text: Any, g_image: Any, g_text: Any, *, alpha: float = 0.5, whiten: bool = False) -> np.ndarray:
    """The paper's Joint baseline from embeddings: α·cos(q^I, G^I) + (1−α)·cos(q^T, G^T) (unwhitened)."""
    ps = path_scores(q_image, q_text, g_image, g_text, whiten=whiten)
    return joint_alpha(ps.II, ps.TT, alpha)


def minmax(scores: Any) -> np.ndarray:
    """Per-query min-max normalisation to [0, 1]; a constant row becomes all zeros."""
    S = as_matrix(scores, "scores")
    lo = S.min(axis=1, keepdims=True)
    span = S.max(axis=1, keepdims=True) - lo
    return np.divide(S - lo, span, out=np.zeros_like(S), where=span > 0)


def comb_sum(paths: Sequence[Any] | PathScores) -> np.ndarray:
    """CombSUM: sum of per-query min-max-normalised path scores."""
    return np.sum([minmax(p) for p in _paths(paths, "comb_sum")], axis=0)


def comb_mnz(paths: Sequence[Any] | PathScores, *, depth: int | None = 100) -> np.ndarray:
    """CombMNZ: (Σ over retrieving paths of the min-max score) × (number of retrieving paths).

    A path retrieves an item if the item is in its top-``depth`` (tie rule); ``depth=None``: if its
    min-max score is > 0.
    """
    mats = _paths(paths, "comb_mnz")
    total = np.zeros_like(mats[0])
    count = np.zeros(mats[0].shape, dtype=np.int64)
    for m in mats:
        norm = minmax(m)
        retrieved = (rank_matrix(m) <= depth) if depth is not None else norm > 0
        total += np.where(retrieved, norm, 0.0)
        count += retrieved
    return total * count


def borda(paths: Sequence[Any] | PathScores) -> np.ndarray:
    """Borda count: Σ_p (N − rank_p) with 1-based ranks."""
    mats = _paths(paths, "borda")
    N = mats[0].shape[1]
    return np.sum([(N - rank_matrix(m)).astype(np.float64) for m in mats], axis=0)


def rrf(paths: Sequence[Any] | PathScores, *, k: float = 60.0) -> np.ndarray:
    """Reciprocal rank fusion Σ_p 1 / (k + rank_p), ranks 1-based, k = 60."""
    if k < 0:
        raise InputError(f"k must be >= 0, got {k}")
    return np.sum([1.0 / (k + rank_matrix(m)) for m in _paths(paths, "rrf")], axis=0)


def uniform(paths: Sequence[Any] | PathScores) -> np.ndarray:
    """Equal-weight mean of the paths."""
    return np.mean(_paths(paths, "uniform"), axis=0)


def wh_uniform(paths: PathScores) -> np.ndarray:
    """wh-Uniform: equal weights over the four *whitened* paths (build ``paths`` with
    :func:`~snapbench.fusion.moor.path_scores` and ``whiten=True``)."""
    return uniform(paths)


def wh_img(paths: PathScores) -> np.ndarray:
    """wh-Img: the whitened image path s^II alone."""
    return np.array(paths.II, dtype=np.float64)


def text_share(weights: Any) -> np.ndarray:
    """(w_TT + w_IT + w_TI) / Σw per query from a (Q x 4) weight matrix (0 where Σw = 0)."""
    w = as_matrix(weights, "weights")
    if w.shape[1] != 4:
        raise InputError(f"weights: expected 4 columns (II, TT, IT, TI), got {w.shape[1]}")
    total = w.sum(axis=1)
    return np.divide(w[:, 1:].sum(axis=1), total, out=np.zeros_like(total), where=total > 0)


# ---------------------------------------------------------------------------------------------------
# labels, oracle
# ---------------------------------------------------------------------------------------------------


def relevance_matrix(relevance: Any, shape: tuple[int, int]) -> np.ndarray:
    """Boolean (Q x N) relevance from a boolean/0-1 matrix or a sequence of column-index collections."""
    Q, N = shape
    if isinstance(relevance, np.ndarray) and relevance.ndim == 2:
        if relevance.shape != (Q, N):
            raise InputError(f"relevance: shape {relevance.shape} does not match the scores {(Q, N)}")
        return relevance.astype(bool)
    rel = list(relevance)
    if len(rel) != Q:
        raise InputError(f"relevance: {len(rel)} entries for {Q} queries")
    out = np.zeros((Q, N), dtype=bool)
    for q, cols in enumerate(rel):
        idx = np.asarray(list(cols), dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= N):
            raise InputError(f"relevance: query {q} names column {int(idx.max() if idx.max() >= N else idx.min())} outside 0..{N - 1}")
        out[q, idx] = True
    return out


@dataclass
class OracleResult:
    """Per-query oracle: ``alpha`` (NaN for queries without positives), ``rank`` of the first positive
    at that α (NaN without positives: :func:`snapbench.core.ranking.first_positive_rank`'s contract), and
    the fused ``scores`` at the chosen α (0.5 where undefined)."""

    alpha: np.ndarray
    rank: np.ndarray
    scores: np.ndarray


def oracle_alpha(
    s_a: Any,
    s_b: Any,
    relevance: Any,
    *,
    grid: Iterable[float] | None = None,
) -> OracleResult:
    """Per-query oracle α for α·s_a + (1−α)·s_b (default grid 0, 0.05, ..., 1): minimal rank of the
    first positive; ties → α closest to 0.5, then the smaller α.  Needs labels: an upper bound."""
    A, B = _paths([s_a, s_b], "oracle_alpha")
    alphas = np.round(np.linspace(0.0, 1.0, 21), 10) if grid is None else np.asarray(list(grid), dtype=np.float64)
    if alphas.size == 0 or alphas.min() < 0 or alphas.max() > 1:
        raise InputError("oracle grid must be non-empty and within [0, 1]")
    R = relevance_matrix(relevance, A.shape)
    # evaluate candidates in preference order, so a strict improvement test keeps the preferred α
    pref = sorted(range(alphas.size), key=lambda i: (abs(alphas[i] - 0.5), alphas[i]))
    Q = A.shape[0]
    pos_rows, pos_cols = np.nonzero(R)
    best_rank = np.full(Q, np.inf)
    best_alpha = np.full(Q, np.nan)
    for i in pref:
        a = alphas[i]
        rank = first_positive_rank(a * A + (1 - a) * B, pos_rows, pos_cols)
        better = rank < best_rank  # NaN (no positive) is never better
        best_rank = np.where(better, rank, best_rank)
        best_alpha = np.where(better, a, best_alpha)
    has = R.any(axis=1)
    best_alpha[~has] = np.nan
    best_rank[~has] = np.nan
    use = np.where(has, best_alpha, 0.5)
    return OracleResult(best_alpha, best_rank, use[:, None] * A + (1 - use[:, None]) * B)


def fusion_baselines(paths: PathScores, *, raw_paths: PathScores | None = None, alpha: float = 0.5) -> dict[str, np.ndarray]:
    """All label-free baselines at once from whitened ``paths`` (and unwhitened ``raw_paths`` for the
    paper's Joint; if omitted, Joint uses ``paths``): joint, comb_sum, comb_mnz, borda, rrf,
    wh_uniform, wh_img."""
    jp = raw_paths if raw_paths is not None else paths
    four = paths.as_list()
    return {
        "joint": joint_alpha(jp.II, jp.TT, alpha),
        "comb_sum": comb_sum(four),
        "comb_mnz": comb_mnz(four),
        "borda": borda(four),
        "rrf": rrf(four),
        "wh_uniform": wh_uniform(paths),
        "wh_img": wh_img(paths),
    }


#: The label-free baselines that fuse the four cosine path matrices of one row block (``snapbench run``
#: evaluates those named in :data:`snapbench.core.targets.DEFAULT_RUN_BASELINES` beside MOOR): name ->
#: ``fuse(list of the four (rows x N) path blocks) -> scores``.  Each normalises per query row only, so a
#: row block gives the rows of the whole matrix.
ROW_BASELINES: Table[Callable[[Sequence[np.ndarray]], np.ndarray]] = Table("fusion baseline", param="baselines")
for _name, _fuse in (("comb_sum", comb_sum), ("comb_mnz", comb_mnz), ("borda", borda), ("rrf", rrf),
                     ("uniform", uniform)):
    ROW_BASELINES.register(_name, _fuse)
