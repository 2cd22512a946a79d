"""Fusion: MOOR (whitening, four paths, Bell gating, variance-weighted fusion) and its baselines.

Quick use::

    from snapbench.fusion import moor, MOORIndex
    res = moor(q_image, q_text, g_image, g_text)          # .scores (Q x N), .weights (Q x 4), ...
    index = MOORIndex(dtype="float32").fit("gI.npy", "gT.npy")   # fit once per gallery (streams)
    top = index.topk(q_image, q_text, k=10)               # streaming exact top-k

See ``moor.py`` for the algebra, ``gates.py`` for the gate ablation, ``baselines.py`` / ``learned.py``
for the fusion baselines and ``search.py`` for streaming / approximate top-k.
"""

from .baselines import (
    OracleResult,
    borda,
    comb_mnz,
    comb_sum,
    first_positive_rank,
    fusion_baselines,
    joint,
    joint_alpha,
    minmax,
    oracle_alpha,
    relevance_matrix,
    rrf,
    text_share,
    uniform,
    wh_img,
    wh_uniform,
)
from .gates import GATES, get_gate
from .learned import LearnedResult, MetaFusion, learned_fusion
from .moor import (
    PATHS,
    MOORIndex,
    MOORResult,
    MOORTopK,
    PathScores,
    moor,
    moor_from_scores,
    moor_topk,
    path_scores,
)
from .search import ANNIndex, GallerySource, StreamingTopK, TopK, rank_matrix, recall_at_k, topk, write_trec_run
from .whitening import Whitener, l2_normalize

__all__ = [
    "moor",
    "moor_topk",
    "moor_from_scores",
    "MOORIndex",
    "MOORResult",
    "MOORTopK",
    "PathScores",
    "PATHS",
    "path_scores",
    "Whitener",
    "l2_normalize",
    "GATES",
    "get_gate",
    "joint_alpha",
    "joint",
    "minmax",
    "comb_sum",
    "comb_mnz",
    "borda",
    "rrf",
    "uniform",
    "wh_uniform",
    "wh_img",
    "text_share",
    "relevance_matrix",
    "first_positive_rank",
    "oracle_alpha",
    "OracleResult",
    "fusion_baselines",
    "MetaFusion",
    "LearnedResult",
    "learned_fusion",
    "StreamingTopK",
    "TopK",
    "topk",
    "rank_matrix",
    "GallerySource",
    "ANNIndex",
    "recall_at_k",
    "write_trec_run",
]
