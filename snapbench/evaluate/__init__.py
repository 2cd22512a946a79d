"""Paired evaluation: metrics, exact tie-aware rankings, paired bootstrap and tests, additivity,
retrieval modes, input/output and the report (SPEC §6-§8, §11)."""

from .additivity import additivity_analysis, additivity_terms, joint_parts
from .io import (
    EvaluationInputError,
    RunRanking,
    ScoresDir,
    load_qrels,
    load_score_matrix,
    load_tags,
    query_groups,
    read_ids,
    read_run,
    write_run,
)
from .metrics import (
    DEFAULT_KS,
    REJECT_METRICS,
    SET_METRICS,
    Labels,
    QueryStat,
    answer_set_metrics,
    dcg,
    hit_at_k,
    ndcg_at_k,
    parse_metrics,
    query_stats,
    recall_at_k,
    reciprocal_rank,
    reject_counts,
    reject_scores,
    set_scores,
)
from .modes import MODES, PATHS, all_mode_scores, coarse_text_drag, mode_scores
from .paired import (
    CLIFF_RULE,
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
from ..ranking import TIE_RULE, first_positive_rank, streaming_topk, topk_indices
from .report import print_additivity, print_report, read_report, report_to_json, write_report, write_table
from .runner import (
    ConditionEval,
    EvaluationConfig,
    evaluate_conditions,
    evaluate_directory,
    evaluate_matrix,
    evaluate_ranking,
)

__all__ = [
    "additivity_analysis", "additivity_terms", "joint_parts",
    "EvaluationInputError", "RunRanking", "ScoresDir", "load_qrels", "load_score_matrix", "load_tags",
    "query_groups", "read_ids", "read_run", "write_run",
    "DEFAULT_KS", "REJECT_METRICS", "SET_METRICS", "Labels", "QueryStat", "answer_set_metrics", "dcg", "hit_at_k", "ndcg_at_k",
    "parse_metrics", "query_stats", "recall_at_k", "reciprocal_rank", "reject_counts", "reject_scores",
    "set_scores",
    "MODES", "PATHS", "all_mode_scores", "coarse_text_drag", "mode_scores",
    "CLIFF_RULE", "bootstrap_counts", "bootstrap_values", "cliff_label", "holm", "mcnemar_exact",
    "paired_analysis", "percentile_ci", "permutation_pvalues", "rank_displacement", "stability_classes",
    "swap_matrix",
    "TIE_RULE", "first_positive_rank", "streaming_topk", "topk_indices",
    "print_additivity", "print_report", "read_report", "report_to_json", "write_report", "write_table",
    "ConditionEval", "EvaluationConfig", "evaluate_conditions", "evaluate_directory", "evaluate_matrix",
    "evaluate_ranking",
]
