"""Paired evaluation: metrics, exact tie-aware rankings, paired bootstrap and tests, additivity,
input/output and the typed report (SPEC §6-§8, §11); the retrieval modes and their composition from
the paths are :mod:`snapbench.core.targets`.

Modules, in the order data flows: :mod:`.labels` (qrels as arrays), :mod:`.metrics` (the metric-family
table), :mod:`.condition` and :mod:`.streaming` (one condition's per-query results), :mod:`.stability`
(the label-free measures), :mod:`.paired` and :mod:`.intervals` (bootstrap, tests), :mod:`.additivity`,
:mod:`.summarize` (per-condition results -> :class:`snapbench.core.records.Report`), :mod:`.drag`.
Reading the files is :mod:`snapbench.store.scores` (SCORES_DIR) and :mod:`snapbench.data.qrels`;
the command, ``evaluate_directory``, is :mod:`snapbench.app.evaluate`; its output, :mod:`snapbench.render.terminal`.
"""

from ..core.ranking import first_positive_rank, streaming_topk, topk_indices
from .additivity import additivity_analysis, additivity_terms, joint_parts
from .condition import ConditionEval, evaluate_matrix, evaluate_ranking, per_query_values
from .config import EvaluationConfig
from .drag import coarse_text_drag_ci
from .metrics import (
    METRIC_FAMILIES,
    Labels,
    MetricFamily,
    QueryStat,
    counted_rows,
    parse_metrics,
    query_stats,
    reject_counts,
    reject_scores,
    set_scores,
)
from .paired import (
    QueryResamples,
    bootstrap_counts,
    bootstrap_values,
    cliff_label,
    holm,
    mcnemar_exact,
    paired_analysis,
    percentile_ci,
    permutation_pvalues,
    rank_displacement,
    stability_classes,
    swap_matrix,
)
from .summarize import evaluate_conditions

__all__ = [
    "ConditionEval",
    "EvaluationConfig",
    "Labels",
    "METRIC_FAMILIES",
    "MetricFamily",
    "QueryResamples",
    "QueryStat",
    "additivity_analysis",
    "additivity_terms",
    "bootstrap_counts",
    "bootstrap_values",
    "cliff_label",
    "coarse_text_drag_ci",
    "counted_rows",
    "evaluate_conditions",
    "evaluate_matrix",
    "evaluate_ranking",
    "first_positive_rank",
    "holm",
    "joint_parts",
    "mcnemar_exact",
    "paired_analysis",
    "parse_metrics",
    "percentile_ci",
    "per_query_values",
    "permutation_pvalues",
    "query_stats",
    "rank_displacement",
    "reject_counts",
    "reject_scores",
    "set_scores",
    "stability_classes",
    "streaming_topk",
    "swap_matrix",
    "topk_indices",
]
