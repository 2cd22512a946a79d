"""Retrieval modes of a dual encoder from its four similarity paths (SPEC §6).

Query = (image, question), gallery item = (image, caption):
``s_II`` = sim(query image, gallery image), ``s_TT`` = sim(question, caption),
``s_IT`` = sim(query image, caption), ``s_TI`` = sim(question, gallery image).

=========  ======================  =====================
mode       scores                  SnapBench name
=========  ======================  =====================
``I2I``    s_II                    I→I
``T2T``    s_TT                    T→T
``IT2IT``  (s_II + s_TT) / 2       IT→IT (fixed joint)
``I2IT``   (s_II + s_IT) / 2       I→IT
``T2IT``   (s_TI + s_TT) / 2       T→IT
=========  ======================  =====================

A model with a native joint embedding supplies its own IT→IT matrix instead.  Coarse-text drag =
R@1(IT→IT) − R@1(I→I) on clean queries (negative: the question hurts).

On disk (``snapbench evaluate --mode``, mode names in any case): a SCORES_DIR may hold the paths as
``<condition>.II.npy``, ``<condition>.TT.npy``, ``<condition>.IT.npy``, ``<condition>.TI.npy`` or in
sub-folders ``II/<condition>.npy`` ... (both layouts, see :mod:`snapbench.layout`); a mode's matrix is
composed from them one condition at a time.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..errors import ConfigError, arg
from ..modes import MODE_LABELS, MODES, PATHS, compose, normalize_mode
from ..ranking import topk_indices
from .metrics import Labels, QueryStat, hit_at_k

__all__ = [
    "MODES",
    "MODE_LABELS",
    "PATHS",
    "all_mode_scores",
    "coarse_text_drag",
    "mode_paths",
    "mode_scores",
    "normalize_mode",
]

# the table itself lives in snapbench.modes (below every layer); re-exported here for the evaluator's API


def mode_paths(mode: str) -> tuple[str, ...]:
    """The similarity paths a mode needs (ConfigError for an unknown mode; any case)."""
    return tuple(MODES[normalize_mode(mode)])


def mode_scores(mode: str, paths: Mapping[str, np.ndarray]) -> np.ndarray:
    """Scores of ``mode`` from the path matrices in ``paths`` (keys among :data:`PATHS`), weighted as
    :data:`snapbench.modes.MODES` says."""
    arrays = {p: np.asarray(a) for p, a in paths.items()}
    need = mode_paths(mode)
    shapes = {arrays[p].shape for p in need if p in arrays}
    if len(shapes) > 1:
        raise ConfigError(f"mode {normalize_mode(mode)}: path shapes differ {' vs '.join(map(str, sorted(shapes)))}")
    return compose(mode, arrays)


def all_mode_scores(
    s_ii: np.ndarray, s_tt: np.ndarray, s_it: np.ndarray | None = None, s_ti: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """Every mode computable from the given paths (I2I, T2T, IT2IT always; I2IT / T2IT when the
    cross paths are given)."""
    paths = {"II": s_ii, "TT": s_tt}
    if s_it is not None:
        paths["IT"] = s_it
    if s_ti is not None:
        paths["TI"] = s_ti
    return {m: mode_scores(m, paths) for m in MODES if all(p in paths for p in MODES[m])}


def coarse_text_drag(joint_scores: np.ndarray | QueryStat, image_scores: np.ndarray | QueryStat,
                     labels: Labels | None = None) -> float:
    """R@1(joint) − R@1(image-only) = hit@1 difference on the given (clean) queries, queries
    without positives excluded.

    Pass either the two score matrices and ``labels``, or the two per-query hit@1
    :class:`~snapbench.evaluate.metrics.QueryStat` already computed (what the runner does, so that
    the matrices are ranked once)."""
    if isinstance(joint_scores, QueryStat) and isinstance(image_scores, QueryStat):
        return float(joint_scores.value - image_scores.value)
    if labels is None:
        raise ConfigError(f"score matrices need {arg('labels')} (or pass two hit@1 QueryStats)", param="labels")
    inc = labels.n_pos > 0
    if not inc.any():
        return float("nan")
    h = [hit_at_k(labels.lookup(topk_indices(s, 1)), 1)[inc].mean() for s in (joint_scores, image_scores)]
    return float(h[0] - h[1])
