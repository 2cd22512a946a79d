"""Coarse-text drag with its paired CI: hit@1 of a fused mode minus hit@1 of image-only I→I on clean
queries (SnapBench's −11.21 points for IT→IT).  The one computation ``evaluate`` (from
``clean.II.npy`` beside the scores) and ``run`` (every fused mode against I→I) both use.
"""

from __future__ import annotations

from ..core.records import CoarseTextDrag
from .config import EvaluationConfig
from .metrics import Labels, QueryStat, counted_rows
from .paired import QueryResamples, percentile_ci
from .summarize import as_value

__all__ = ["DRAG_METRIC", "coarse_text_drag_ci"]

DRAG_METRIC = "hit@1"


def coarse_text_drag_ci(joint: QueryStat, image: QueryStat, labels: Labels, config: EvaluationConfig, *,
                        joint_label: str, resampler: QueryResamples | None = None) -> CoarseTextDrag:
    """Drag = value(joint) − value(image) of two per-query hit@1 stats of the same clean queries,
    with the percentile CI of the paired bootstrap that resamples the queries hit@1 counts
    (``resampler``: share the report's draws; default: the same draws made afresh from ``config``).
    ``joint_label`` says what the joint scores are (e.g. ``"IT2IT"``)."""
    rs = resampler or QueryResamples(labels.n_queries, config.resamples, config.seed)
    rows = counted_rows(DRAG_METRIC, labels.n_pos, config.include_zero_gt)
    boot = rs.values([image, joint], rows)
    lo, hi = percentile_ci(boot[:, 1] - boot[:, 0], config.ci)
    return CoarseTextDrag(metric=DRAG_METRIC, value=as_value(joint.value - image.value), ci=(as_value(lo), as_value(hi)),
                          joint=joint_label, joint_value=as_value(joint.value), image_value=as_value(image.value))
