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
R@1(IT→IT) − R@1(I→I) on clean queries (negative: the question hurts), computed with its CI by
:func:`snapbench.evaluate.drag.coarse_text_drag_ci`.

On disk (``snapbench evaluate --mode``, mode names in any case): a SCORES_DIR may hold the paths as
``<condition>.II.npy``, ``<condition>.TT.npy``, ``<condition>.IT.npy``, ``<condition>.TI.npy`` or in
sub-folders ``II/<condition>.npy`` ... (both layouts, see :mod:`snapbench.store`); a mode's matrix is
composed from them one condition at a time.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..core.errors import ConfigError
from ..core.targets import MODE_LABELS, MODES, PATHS, compose, normalize_mode

__all__ = [
    "MODES",
    "MODE_LABELS",
    "PATHS",
    "mode_paths",
    "mode_scores",
    "normalize_mode",
]

# the table itself lives in snapbench.core.targets (below every layer); re-exported here for the evaluator's API


def mode_paths(mode: str) -> tuple[str, ...]:
    """The similarity paths a mode needs (ConfigError for an unknown mode; any case)."""
    return tuple(MODES[normalize_mode(mode)])


def mode_scores(mode: str, paths: Mapping[str, np.ndarray]) -> np.ndarray:
    """Scores of ``mode`` from the path matrices in ``paths`` (keys among :data:`PATHS`), weighted as
    :data:`snapbench.core.targets.MODES` says."""
    arrays = {p: np.asarray(a) for p, a in paths.items()}
    need = mode_paths(mode)
    shapes = {arrays[p].shape for p in need if p in arrays}
    if len(shapes) > 1:
        raise ConfigError(f"mode {normalize_mode(mode)}: path shapes differ {' vs '.join(map(str, sorted(shapes)))}")
    return compose(mode, arrays)
