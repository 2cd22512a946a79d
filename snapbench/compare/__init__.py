"""Compare models on the same queries: per-model deltas, paired model-vs-model differences with
exact or permutation tests and multiplicity adjustment, rankings with uncertainty, normalised
robustness (CE, relative CE, effective robustness) and super-additivity -- pure functions over
per-query values (docs/compare.md); and :func:`compare_runs`, the comparison of run folders that
``snapbench compare`` writes as a report."""

from .core import CompareConfig, compare_models
from .groups import GROUP_ALL, condition_groups, exact_group_means, group_means
from .inputs import ModelValues, align_models
from .normalised import corruption_errors, effective_robustness, logit_fit, operator_conditions
from .pairs import cohens_g, discordance, signflip_exact_pvalues
from .ranking import rank_intervals, ranks, tiers
from .records import (
    AdditivityPairRecord,
    AdditivityRecord,
    Comparison,
    EffectiveRecord,
    FitRecord,
    ModelRecord,
    NormalisedRecord,
    PairRecord,
    RankingRecord,
)
from .stats import CORRECTIONS, adjust_pvalues

__all__ = [
    "CompareConfig",
    "compare_models",
    "ModelValues",
    "align_models",
    "GROUP_ALL",
    "condition_groups",
    "group_means",
    "exact_group_means",
    "CORRECTIONS",
    "adjust_pvalues",
    "discordance",
    "signflip_exact_pvalues",
    "cohens_g",
    "ranks",
    "rank_intervals",
    "tiers",
    "operator_conditions",
    "corruption_errors",
    "logit_fit",
    "effective_robustness",
    "Comparison",
    "ModelRecord",
    "PairRecord",
    "NormalisedRecord",
    "RankingRecord",
    "EffectiveRecord",
    "FitRecord",
    "AdditivityRecord",
    "AdditivityPairRecord",
]
