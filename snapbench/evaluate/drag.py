"""Coarse-text drag with its paired CI: hit@1 of a fused mode minus hit@1 of image-only I→I on clean
queries (SnapBench's −11.21 points for IT→IT).  The one computation ``evaluate`` (from
``clean.II.npy`` beside the scores) and ``run`` (every fused mode against I→I) both use.
"""

from __future__ import annotations

from ..core.records import CoarseTextDrag
from .config import EvaluationConfig
from .metrics import Labels, QueryStat, counted_rows
from .paired import QueryResamples, percentile_ci
from .stability import is_stability_metric
from .summarize import as_value

__all__ = ["DRAG_METRIC", "NO_DRAG_WITHOUT_LABELS", "coarse_text_drag_ci", "drag_applies"]

DRAG_METRIC = "hit@1"
#: Why a label-free measure has no drag: the one sentence every output that leaves it out says.
NO_DRAG_WITHOUT_LABELS = ("it compares the clean values of two modes, and a label-free measure (overlap@k, rbo, "
                          "flip@k) of a clean ranking against itself is 100 (flip: 0) in every mode by construction")


def drag_applies(metric: str) -> bool:
    """Whether a drag (clean ``metric`` of a mode minus I→I's) of ``metric`` says anything: not for a
    label-free stability measure, whose clean value is the same in every mode by construction."""
    return not is_stability_metric(metric)


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
