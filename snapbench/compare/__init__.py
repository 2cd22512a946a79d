"""Compare models on the same queries: per-model deltas, paired model-vs-model differences with
exact or permutation tests and multiplicity adjustment, rankings with uncertainty, normalised
robustness (CE, relative CE, effective robustness) and super-additivity -- pure functions over
per-query values (docs/compare.md); the one entry point is :func:`compare_models`.

Per retrieval mode and metric it builds one :class:`~snapbench.compare.stats.MetricBlock` (all
models x conditions resampled with the run's own bootstrap counts) and derives from it the
``models``, ``pairs``, ``ranking``, ``normalised``, effective-robustness and additivity records.

Resampling is the run's (:class:`snapbench.evaluate.paired.QueryResamples`): a metric resamples
only the queries that count for it (:func:`~snapbench.compare.stats.counted_query_rows`; a zero-GT
query is never drawn for a ranking metric) with the draw of that number of queries, so every
per-model number equals the run's own report.  One counts matrix (B x Q') and one swap matrix
(R x Q') per number of counted queries Q' serve every mode, metric, model and pair.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from ..core.errors import ConfigError
from ..core.validate import choice, ci_level, positive_int
from ..evaluate.metrics import metric_sign
from ..evaluate.paired import DEFAULT_CI, DEFAULT_RESAMPLES, QueryResamples
from .additivity import additivity_records
from .groups import GROUP_ALL, condition_groups
from .inputs import ModelValues, align_models
from .normalised import DEFAULT_CLIP, effective_records, normalised_records
from .pairs import pair_records, pair_statistics
from .ranking import ranking_records
from .records import Comparison
from .stats import CORRECTIONS, counted_query_rows, metric_block, model_records

__all__ = ["CompareConfig", "ModelValues", "compare_models"]

_SWAP_KEY = "compare"  # the permutation tests' own stream (evaluate's tests use the key "")


@dataclass(frozen=True)
class CompareConfig:
    """Settings of a comparison.  ``resamples``/``seed``/``ci`` must be the runs' own for the
    per-model CIs to equal their reports; ``permutations`` defaults to ``resamples``;
    ``reference`` (a model name) defaults to the first model; ``correction`` is "holm" or "bh";
    ``clip`` is the eps of the logit in the effective-robustness fit; ``workers`` threads compute
    percentiles and permutation counts (results do not depend on it)."""

    resamples: int = DEFAULT_RESAMPLES
    permutations: int | None = None
    ci: float = DEFAULT_CI
    seed: int = 0
    correction: str = "holm"
    reference: str | None = None
    clip: float = DEFAULT_CLIP
    workers: int = field(default_factory=lambda: min(4, os.cpu_count() or 1))

    def check(self, names: Sequence[str] | None = None) -> int:
        """Validate the settings (the one check of them: ``snapbench compare`` calls it before it reads
        a run) and, given the model names, the reference; return the reference's index."""
        choice(self.correction, list(CORRECTIONS), "correction", what="correction")
        ci_level(self.ci, "ci")
        positive_int(self.resamples, "resamples")
        if self.permutations is not None:
            positive_int(self.permutations, "permutations")
        positive_int(self.workers, "workers")
        if not 0 < self.clip < 0.5:
            raise ConfigError(f"must be in (0, 0.5), got {self.clip}", param="clip")
        if self.reference is None or names is None:
            return 0
        if self.reference not in names:
            raise ConfigError(f"{self.reference!r} is not one of the models: {', '.join(names)}", param="reference")
        return list(names).index(self.reference)


def compare_models(models: Sequence[ModelValues], config: CompareConfig | None = None, *,
                   progress: Callable[[str, str], None] | None = None) -> Comparison:
    """Every record of the comparison of ``models`` (at least two, same queries, modes, conditions
    and metrics; see :func:`~snapbench.compare.inputs.align_models`).  ``progress(mode, metric)`` is
    called before each (mode, metric) is computed."""
    cfg = config or CompareConfig()
    aligned = align_models(models)
    names = [m.name for m in aligned]
    ref = cfg.check(names)
    n_q = len(aligned[0].query_ids)
    n_perm = cfg.permutations or cfg.resamples
    draws = _Draws(n_q, cfg.resamples, n_perm, cfg.seed)
    out = Comparison(meta=_meta(cfg, names, ref, n_q, n_perm))
    for mode, conds_of in aligned[0].stats.items():
        conds = ["clean"] + [c for c in conds_of if c != "clean"]
        groups = condition_groups(conds[1:], mode)
        for metric in conds_of["clean"]:
            if progress is not None:
                progress(mode, metric)
            _compare_metric(out, aligned, mode, metric, conds, groups, draws, cfg, ref)
    return out


class _Draws:
    """The run's bootstrap counts (key "") and compare's own swaps (key :data:`_SWAP_KEY`), drawn
    once per number of counted queries; the counts also in float32 (exact: small whole numbers)."""

    def __init__(self, n_queries: int, resamples: int, permutations: int, seed: int) -> None:
        self.boot = QueryResamples(n_queries, resamples, seed)
        self.perm = QueryResamples(n_queries, resamples, seed, permutations=permutations, key=_SWAP_KEY)
        self._f32: dict[int, np.ndarray] = {}

    def counts(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        if n not in self._f32:
            self._f32[n] = self.boot.counts(n).astype(np.float32)
        return self.boot.counts(n), self._f32[n]

    def swaps(self, n: int) -> np.ndarray:
        return self.perm.swaps(n)


def _compare_metric(out: Comparison, models, mode, metric, conds, groups, draws: _Draws, cfg, ref) -> None:
    rows = counted_query_rows(models, mode, metric)
    n = len(models[0].query_ids) if rows is None else rows.size
    block = metric_block(models, mode, metric, conds, groups, *draws.counts(n), rows=rows)
    swaps = draws.swaps(n)
    out.models += model_records(block, cfg.ci, cfg.workers)
    if len(conds) == 1:
        return
    ps = pair_statistics(block, swaps, cfg.ci, cfg.workers)
    out.pairs += pair_records(block, ps, cfg.correction)
    names = block.models
    n_cond = len(conds) - 1
    sign = metric_sign(metric)  # the score is the gain sign·Δ: higher = smaller drop, for flip@k too
    if GROUP_ALL in groups:
        col = n_cond + list(groups).index(GROUP_ALL)
        tests = {pair: (ps.p_raw[i, col], ps.ci_low[i, col], ps.ci_high[i, col]) for i, pair in enumerate(ps.pairs)}
        out.ranking += ranking_records(mode, metric, names, sign * block.col_deltas[:, col],
                                       sign * block.col_boot_deltas[:, col].T, tests, level=cfg.ci,
                                       correction=cfg.correction)
    clean = block.values[:, 0]
    out.normalised += normalised_records(mode, metric, names, clean, block.values[:, 1:], conds[1:], ref, sign)
    eff, fits = effective_records(mode, metric, names, clean, block.col_values[:, n_cond:], list(groups), cfg.clip,
                                  sign)
    out.effective += eff
    out.fits += fits
    add, add_pairs = additivity_records(block, ps.pairs, cfg.ci, cfg.workers)
    out.additivity += add
    out.additivity_pairs += add_pairs


def _meta(cfg: CompareConfig, names: list[str], ref: int, n_q: int, n_perm: int) -> dict:
    return {
        "models": names,
        "reference": names[ref],
        "correction": cfg.correction,
        "correction_method": CORRECTIONS[cfg.correction],
        "config": {k: v for k, v in asdict(cfg).items() if k != "workers"} | {"permutations": n_perm, "reference": names[ref]},
        "n_queries": n_q,
        "delta": ("value(condition) - value(clean); negative = worse, except for a metric where higher is worse "
                  "(flip@k: positive = worse; its drop is its rise)"),
        "pair_diff": ("delta(model_a) - delta(model_b) on the same queries; > 0 = model_a drops less (flip@k: "
                      "< 0 = model_a rises less)"),
        "ci_method": ("paired bootstrap over the queries that count for each metric (the run's own draw), percentile "
                      "interval; one resample set for all models"),
        "tests": {
            "mcnemar": "exact McNemar on per-query hit differences of drops (no query with |d| = 2)",
            "exact_signflip": "exact sign-flip test of d_q in -2..2 (convolution of binomials)",
            "permutation": "paired permutation test swapping the two models per query (sign-flip for means)",
        },
        "effect_size": {
            "mcnemar": "Cohen's g = n+/(n+ + n-) - 1/2",
            "exact_signflip": "generalised Cohen's g = sum(d) / (2 sum|d|)",
            "permutation": "d_z = mean(d_q) / SD(d_q)",
        },
        "families": ("p_adj over the conditions of one (mode, metric, model_a, model_b) that the mode reads; its groups "
                     "of them form a second family; a condition or group the mode cannot read has p_adj = p_raw"),
        "ranking_score": ("group:all delta (mean drop over the corrupted conditions that corrupt a side of the query "
                          "the mode reads; for flip@k, where higher is worse, the drop is the rise); rank 1 = smallest "
                          "drop"),
        "ranking_group": ("tiers, best first: walking down by score, a model joins the current tier unless it is told apart "
                          "from the tier's first model (group:all test adjusted over all pairs has p_adj < 1 - ci "
                          "and its CI excludes 0), else it opens the next tier"),
    }


