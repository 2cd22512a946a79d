"""Robustness without labels (SPEC §14): how far a corrupted query's ranking moved from its clean one.

Three per-query measures between the clean ranking ``a`` and the corrupted ranking ``b`` of the same
query, small pure functions over (Q, K) index matrices (best first, ``-1`` = empty slot):

* ``overlap@k`` = |top-k(a) ∩ top-k(b)| / k  (k = the number of filled slots of the clean top-k when
  the gallery is smaller than k, so two identical rankings always overlap 1);
* ``rbo`` = RBO_ext of Webber, Moffat & Zobel (2010), eq. 32, at depth d with persistence p:
  ``(X_d / d) · p^d + ((1 − p) / p) · Σ_{i=1..d} (X_i / i) · p^i`` with ``X_i = |a_{1:i} ∩ b_{1:i}|``;
  d = ``rbo_depth`` (default 100) cut to the ranking's filled depth (a gallery of 30 items gives d = 30);
* ``flip@k`` = 1 when the first k items differ (order or membership); ``flip@1`` = the top-1 item
  changed (ImageNet-P's flip probability, for retrieval).

Ties: both rankings are the project's one ranking (:data:`snapbench.core.ranking.TIE_RULE`: equal scores
in gallery order), so tied items sit in a fixed order and a tie never makes a ranking "move" by
itself.  This is the ``a``-priori tie breaking Corsi & Urbano (SIGIR 2024) call RBO with ties broken
by a deterministic rule, not their tie-aware RBO^w / RBO^a variants: the gallery order is the same in
both rankings, so an unchanged set of tied scores gives the same order in both.

Each measure becomes a :class:`~snapbench.evaluate.metrics.QueryStat` over every query (labels play
no part), so the paired bootstrap, the tests and every report treat it as any other metric: the
clean condition against itself is overlap 1, rbo 1, flip 0, and a paired delta of ``overlap@10`` is
its mean minus 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.defaults import DEFAULT_RBO_DEPTH, DEFAULT_RBO_P
from ..core.errors import ConfigError, InputError

__all__ = [
    "overlap_metric",
    "whole_gallery_notes",
    "DEFAULT_RBO_DEPTH",
    "DEFAULT_RBO_P",
    "STABILITY_RULE",
    "check_rbo",
    "flip_at_k",
    "is_stability_metric",
    "overlap_at_k",
    "rbo_ext",
]

#: The metric families that compare a condition's ranking with the clean one (no labels needed).
_STABILITY_FAMILIES: tuple[str, ...] = ("overlap", "rbo", "flip")
STABILITY_RULE = (
    "between the clean and the corrupted ranking of the same query: overlap@k = |top-k(clean) ∩ top-k(corrupted)| / k; "
    "rbo = RBO_ext (Webber, Moffat & Zobel 2010) at depth d with persistence p; flip@k = 1 when the first k items "
    "differ (flip@1: the top-1 item changed); both rankings follow the one tie rule (equal scores in gallery order)"
)


def overlap_metric(metrics: list[str]) -> str | None:
    """The overlap measure that speaks for a run without labels (the headline, the report's stability
    section): ``overlap@10`` when evaluated, else the deepest ``overlap@k`` (``None`` without one)."""
    ov = [m for m in metrics if m.startswith("overlap@")]
    if "overlap@10" in ov:
        return "overlap@10"
    return max(ov, key=lambda m: int(m.split("@")[1])) if ov else None


def whole_gallery_notes(n_gallery: int, ks: Any) -> list[str]:
    """A note when the gallery has at most k items for a reported overlap@k (``ks``: those k): the clean
    top-k then holds the whole gallery, so every corrupted top-k overlaps it fully (1 by construction).
    The one wording ``run`` (its plan's notes) and ``evaluate`` (the report's warnings) give."""
    small = sorted({int(k) for k in ks if n_gallery and int(k) >= n_gallery})
    if not small:
        return []
    names = ", ".join(f"overlap@{k}" for k in small)
    return [f"the gallery has {n_gallery} item{'s' if n_gallery != 1 else ''}: {names} "
            f"{'is' if len(small) == 1 else 'are'} 1 by construction (the top-k holds the whole gallery) and "
            f"{'says' if len(small) == 1 else 'say'} nothing about how far the ranking moved; use a smaller --k "
            "or rbo / flip@1"]


def is_stability_metric(name: str) -> bool:
    """``overlap@k``, ``rbo`` or ``flip@k``: a measure between two rankings, not against labels."""
    return name.split("@", 1)[0] in _STABILITY_FAMILIES


def check_rbo(p: float, depth: int) -> tuple[float, int]:
    """``(p, depth)`` checked: 0 < p < 1 and an integer depth >= 1 (:class:`ConfigError` naming the flag)."""
    try:
        p = float(p)
    except (TypeError, ValueError):
        raise ConfigError(f"must be a number in (0, 1), got {p!r}", param="rbo_p") from None
    if not 0.0 < p < 1.0:
        raise ConfigError(f"must be in (0, 1) (exclusive), got {p}", param="rbo_p")
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or int(depth) < 1:
        raise ConfigError(f"must be an integer >= 1, got {depth!r}", param="rbo_depth")
    return p, int(depth)


def _pair(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[0]:
        raise InputError(f"expected two (queries, depth) rankings of the same queries, got shapes {a.shape} and {b.shape}")
    return a, b


def _cumulative_overlap(a: np.ndarray, b: np.ndarray, depth: int) -> np.ndarray:
    """(Q, depth) ``X[:, i-1] = |a_{1:i} ∩ b_{1:i}|``, the agreement at every depth i = 1..depth.

    An item shared by both lists at ranks r_a and r_b joins the intersection at depth max(r_a, r_b);
    items are unique within a ranking, ``-1`` slots never match.  Vectorised over queries: one sort
    and one search, no Python loop.
    """
    a, b = _pair(a, b)
    d = int(depth)
    a, b = a[:, :d], b[:, :d]
    n_q = a.shape[0]
    out = np.zeros((n_q, d), dtype=np.int64)
    if n_q == 0 or d == 0:
        return out.astype(np.float64)
    span = int(max(a.max(initial=0), b.max(initial=0))) + 2  # keys q * span + item never collide across rows
    q = np.arange(n_q, dtype=np.int64)[:, None]
    kb = np.where(b >= 0, q * span + b, -1).ravel()
    order = np.argsort(kb, kind="stable")
    sorted_kb = kb[order]
    ka = np.where(a >= 0, q * span + a, -2)
    pos = np.searchsorted(sorted_kb, ka.ravel()).clip(max=sorted_kb.size - 1)
    found = (sorted_kb[pos] == ka.ravel()) & (ka.ravel() >= 0)
    rank_b = (order[pos] % b.shape[1]).reshape(a.shape)
    rank_a = np.broadcast_to(np.arange(a.shape[1]), a.shape)
    at = np.maximum(rank_a, rank_b)
    rows = np.broadcast_to(q, a.shape)
    f = found.reshape(a.shape)
    np.add.at(out, (rows[f], at[f]), 1)
    return np.cumsum(out, axis=1).astype(np.float64)


def _filled(a: np.ndarray, k: int) -> np.ndarray:
    """Per query, the filled slots of the first k (k, or fewer when the gallery/run is shorter)."""
    return np.count_nonzero(a[:, :k] >= 0, axis=1)


def overlap_at_k(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """(Q,) |top-k(a) ∩ top-k(b)| / k; k counts the filled slots of ``a`` (the clean ranking) when
    fewer than k items exist, and a query with none gets 1 (nothing could move)."""
    a, b = _pair(a, b)
    if k < 1 or k > min(a.shape[1], b.shape[1]):
        raise ConfigError(f"k={k} must be in 1..{min(a.shape[1], b.shape[1])} (the rankings' depth)", param="k")
    x = _cumulative_overlap(a, b, k)[:, k - 1]
    n = _filled(a, k)
    return np.divide(x, n, out=np.ones(x.shape), where=n > 0)


def flip_at_k(a: np.ndarray, b: np.ndarray, k: int = 1) -> np.ndarray:
    """(Q,) 1.0 when the first ``k`` items of ``b`` are not those of ``a`` in the same order."""
    a, b = _pair(a, b)
    if k < 1 or k > min(a.shape[1], b.shape[1]):
        raise ConfigError(f"k={k} must be in 1..{min(a.shape[1], b.shape[1])} (the rankings' depth)", param="k")
    return np.any(a[:, :k] != b[:, :k], axis=1).astype(np.float64)


def rbo_ext(a: np.ndarray, b: np.ndarray, p: float = DEFAULT_RBO_P, depth: int = DEFAULT_RBO_DEPTH) -> np.ndarray:
    """(Q,) RBO_ext (Webber, Moffat & Zobel 2010, eq. 32) of each query's two rankings at depth d.

    d = ``depth`` cut to the rankings' depth and to the filled slots of ``a`` (a gallery smaller than
    ``depth`` is ranked whole: d = its size, and two identical rankings give exactly 1).
    """
    p, depth = check_rbo(p, depth)
    a, b = _pair(a, b)
    d_max = min(depth, a.shape[1], b.shape[1])
    if d_max < 1:
        raise ConfigError("the rankings are empty: rbo needs at least one ranked item", param="rbo_depth")
    x = _cumulative_overlap(a, b, d_max)
    d = np.maximum(_filled(a, d_max), 1)  # per query: the depth its clean ranking fills
    i = np.arange(1, d_max + 1, dtype=np.float64)
    w = (x / i) * p ** i
    deeper = i[None, :] > d[:, None]
    w[deeper] = 0.0
    x_d = x[np.arange(x.shape[0]), d - 1]
    value = (x_d / d) * p ** d + ((1.0 - p) / p) * w.sum(axis=1)
    # the sum rounds p^d + ((1 - p) / p) Σ p^i = 1 to 1 ± ulp: rankings that agree at every depth
    # (X_i = i for i <= d, the identical top d) get the exact 1 the definition gives them
    same = np.all((x == i) | deeper, axis=1)
    return np.where(same, 1.0, value)


