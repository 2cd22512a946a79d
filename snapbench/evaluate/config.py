"""The settings of one evaluation, checked when they are made (each error names its parameter)."""

from __future__ import annotations

import operator
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..core.defaults import DEFAULT_CLIFF_RATIO, DEFAULT_CLIFF_TOL, DEFAULT_SEED
from ..core.errors import ConfigError, arg
from ..core.validate import answer_threshold, ci_level, finite_number, int_list, positive_int
from .metrics import DEFAULT_KS, REJECT_METRICS, SET_METRICS, metric_family, parse_metrics
from .paired import DEFAULT_CI, DEFAULT_RESAMPLES
from .stability import DEFAULT_RBO_DEPTH, DEFAULT_RBO_P, check_rbo, is_stability_metric

#: The stability measures evaluated by default (``overlap`` expands over the ks).
_STABILITY_DEFAULT = "overlap,rbo,flip@1"

__all__ = ["EvaluationConfig"]


@dataclass
class EvaluationConfig:
    """Settings of one evaluation (CLI flags: --k, --metrics, --resamples, --ci, --seed,
    --permutations, --include-zero-gt, --set-threshold, --stability-metric, --cliff-tol,
    --cliff-ratio, --workers, --rbo-p, --rbo-depth).

    ``labelled=False`` is an evaluation without relevance labels: only the stability measures
    (:mod:`.stability`) are defined, and the default metric list is theirs alone.

    ``ks`` may be given as a comma string (``"1,5,10"``); values are checked on creation
    (:class:`~snapbench.core.errors.ConfigError` naming the parameter).
    """

    ks: tuple[int, ...] = DEFAULT_KS
    metrics: str | Sequence[str] | None = None  # default: hit, recall, ndcg over ks, and mrr
    resamples: int = DEFAULT_RESAMPLES
    ci: float = DEFAULT_CI
    seed: int = DEFAULT_SEED
    permutations: int | None = None  # default: = resamples
    include_zero_gt: bool = False
    set_threshold: float | None = None  # predicted set = items scoring >= threshold
    stability_metric: str = "hit@1"
    curve_tol: float = DEFAULT_CLIFF_TOL
    curve_ratio: float = DEFAULT_CLIFF_RATIO
    block_rows: int = 256
    rbo_p: float = DEFAULT_RBO_P
    rbo_depth: int = DEFAULT_RBO_DEPTH
    labelled: bool = True
    workers: int = field(default_factory=lambda: min(4, os.cpu_count() or 1))

    def __post_init__(self) -> None:
        self.ks = int_list(self.ks, "ks") or DEFAULT_KS
        self.resamples = positive_int(self.resamples, "resamples")
        if self.permutations is not None:
            self.permutations = positive_int(self.permutations, "permutations", minimum=0)
        self.ci = ci_level(self.ci, "ci")
        try:
            self.seed = operator.index(self.seed)
        except TypeError:
            raise ConfigError(f"must be an integer, got {self.seed!r}", param="seed") from None
        self.set_threshold = answer_threshold(self.set_threshold, minus_inf=True)
        self.curve_tol = finite_number(self.curve_tol, "curve_tol")
        self.curve_ratio = finite_number(self.curve_ratio, "curve_ratio")
        self.block_rows = positive_int(self.block_rows, "block_rows")
        self.workers = positive_int(self.workers, "workers")
        self.rbo_p, self.rbo_depth = check_rbo(self.rbo_p, self.rbo_depth)
        self.metric_list()  # an unknown metric or a set metric without a threshold fails here

    def metric_list(self) -> list[str]:
        """The metric names evaluated, in report order (``metrics`` expanded over ``ks``; by default
        the labelled metrics, then the stability measures ``overlap@k``, ``rbo``, ``flip@1``)."""
        if not self.labelled:
            ms = parse_metrics(self.metrics or _STABILITY_DEFAULT, self.ks)
            need = [m for m in ms if not is_stability_metric(m)]
            if need:
                raise ConfigError(f"{', '.join(need)} need{'s' if len(need) == 1 else ''} relevance labels (give {arg('qrels')}); without them "
                                  "only overlap@k, rbo and flip@k are defined", param="metrics")
            return ms
        if self.metrics is None:
            ms = parse_metrics(None, self.ks) + parse_metrics(_STABILITY_DEFAULT, self.ks)
        else:
            ms = parse_metrics(self.metrics, self.ks)
        has_set = any(metric_family(m).sets for m in ms)
        if self.set_threshold is not None and self.metrics is None:
            ms += list(SET_METRICS + REJECT_METRICS)
        elif has_set and self.set_threshold is None:
            raise ConfigError(f"set/reject metrics need {arg('set_threshold')} (the score that admits an item)",
                              param="metrics")
        return ms
