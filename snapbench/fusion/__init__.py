"""Fusion: MOOR (whitening, four paths, Bell gating, variance-weighted fusion) and its baselines.

Quick use::

    from snapbench.fusion import moor, MOORIndex
    res = moor(q_image, q_text, g_image, g_text)          # .scores (Q x N), .weights (Q x 4), ...
    index = MOORIndex(dtype="float32").fit("gI.npy", "gT.npy")   # fit once per gallery (streams)
    top = index.topk(q_image, q_text, k=10)               # streaming exact top-k

See ``moor.py`` for the algebra, ``index.py`` for the fitted (streaming) index, ``gates.py`` for the gate
ablation, ``baselines.py`` / ``learned.py`` for the fusion baselines, ``search.py`` for gallery sources
and approximate (FAISS) top-k, :mod:`snapbench.app.moor` for :func:`~snapbench.app.moor.fuse_directory` (what ``snapbench moor`` runs).
Top-k results, the tie rule, streaming exact top-k, first-positive ranks and :func:`topk_overlap`
live one layer below, in :mod:`snapbench.core.ranking` (shared with ``snapbench.evaluate``).
"""

from .baselines import (
    borda,
    comb_mnz,
    comb_sum,
    fusion_baselines,
    joint,
    joint_alpha,
    minmax,
    oracle_alpha,
    rrf,
    text_share,
    wh_img,
    wh_uniform,
)
from .gates import GATES, get_gate
from .index import MOORIndex, moor
from .learned import MetaFusion, learned_fusion
from .moor import PathScores, moor_from_scores, path_scores

__all__ = [
    "GATES",
    "MOORIndex",
    "MetaFusion",
    "PathScores",
    "borda",
    "comb_mnz",
    "comb_sum",
    "fusion_baselines",
    "get_gate",
    "joint",
    "joint_alpha",
    "learned_fusion",
    "minmax",
    "moor",
    "moor_from_scores",
    "oracle_alpha",
    "path_scores",
    "rrf",
    "text_share",
    "wh_img",
    "wh_uniform",
]
