"""From per-condition results to the typed report (:class:`snapbench.core.records.Report`): paired deltas
with CIs and tests, additivity, severity curves, stability classes, first-positive ranks and their
displacement, per-group results and the settings (``meta``).

The bootstrap resamples only the queries that count for each metric
(:func:`~snapbench.evaluate.metrics.counted_rows`), drawn once per number of counted queries and
shared by every condition, metric, additivity CI and rank-displacement CI
(:class:`~snapbench.evaluate.paired.QueryResamples`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from .._version import __version__
from ..core.conditions import parse_condition
from ..core.errors import EvaluationInputError
from ..core.ranking import TIE_RULE
from ..core.records import (
    REPORT_SCHEMA_VERSION,
    Additivity,
    AdditivitySummary,
    Displacement,
    FirstRank,
    GroupPaired,
    GroupReport,
    Paired,
    Report,
    ReportMeta,
    SeverityCurve,
    Stability,
)
from ..core.targets import target_reads
from .additivity import additivity_analysis, joint_parts
from .condition import ConditionEval
from .config import EvaluationConfig
from .metrics import Labels, counted_rows, is_binary_metric, metric_sign
from .paired import (
    CLIFF_RULE,
    QueryResamples,
    cliff_label,
    paired_analysis,
    percentile_ci,
    rank_displacement,
    stability_classes,
)
from .stability import STABILITY_RULE, is_stability_metric

__all__ = ["as_value", "evaluate_conditions"]


def as_value(x) -> float | None:
    """A report value: a Python float, ``None`` for an undefined (NaN) one."""
    x = float(x)
    return None if math.isnan(x) else x


def _ci(lo, hi) -> tuple[float | None, float | None]:
    return (as_value(lo), as_value(hi))


def evaluate_conditions(
    evals: Mapping[str, ConditionEval],
    labels: Labels,
    config: EvaluationConfig | None = None,
    *,
    groups: Mapping[str, np.ndarray] | None = None,
    clean: str = "clean",
    target: str | None = None,
) -> Report:
    """The report (SPEC §11 schema plus extras) from per-condition results sharing queries/labels.

    ``target``: the retrieval target the results are of (a mode, MOOR, ``fusion/<name>``), when known:
    the Holm family of its p-values is then the conditions it reads (:func:`target_reads`; an image
    condition cannot move T→T), else every corrupted condition."""
    cfg = config or EvaluationConfig()
    metrics = cfg.metric_list()
    if clean not in evals:
        raise EvaluationInputError(f"no {clean!r} condition: paired results are against clean")
    conds = [clean] + [c for c in evals if c != clean]
    for c in conds:
        missing = [m for m in metrics if m not in evals[c].stats]
        if missing:
            raise EvaluationInputError(f"condition {c!r} was evaluated without {', '.join(missing)}")
    if any(is_stability_metric(m) for m in metrics):
        # a corrupted condition evaluated without the clean ranking compared itself with itself
        # (overlap 1 everywhere): refuse it instead of reporting perfect stability
        selfref = [c for c in conds[1:] if evals[c].ranking is not None]
        if selfref:
            raise EvaluationInputError(
                f"{selfref[0]!r} was evaluated without the clean ranking, so its stability measures compare it with "
                "itself: evaluate clean first and pass its ConditionEval.ranking as reference=")
    n_q = labels.n_queries
    n_perm = cfg.permutations if cfg.permutations is not None else cfg.resamples
    rs = QueryResamples(n_q, cfg.resamples, cfg.seed, permutations=n_perm)
    rows = {m: rs.rows(counted_rows(m, labels.n_pos, cfg.include_zero_gt)) for m in metrics}
    boot = _metric_bootstrap(evals, conds, metrics, rows, rs)
    family = None if target is None else [c for c in conds[1:] if target_reads(target, c)]
    paired = paired_analysis({c: {m: evals[c].stats[m] for m in metrics} for c in conds},
                             clean=clean, ci=cfg.ci, boot=boot, rows=rows, resampler=rs, family=family)
    values = {m: {c: evals[c].stats[m].value for c in conds} for m in metrics}
    n_zero = int(np.count_nonzero(labels.n_pos == 0))
    report = Report(
        conditions={c: {m: as_value(values[m][c]) for m in metrics} for c in conds},
        paired={c: {m: _paired(paired[c][m]) for m in metrics} for c in conds[1:]},
        additivity={},
        n_queries=n_q,
        n_excluded_zero_gt=0 if cfg.include_zero_gt or not cfg.labelled else n_zero,
        meta=_meta(cfg, metrics, n_perm, n_zero, labels),
    )
    report.meta.labelled = cfg.labelled
    _add_label_free(report, conds, metrics, values, boot, cfg)
    _add_additivity(report, conds, metrics, values, boot, cfg.ci, clean)
    del boot
    report.severity_curves = _severity_curves(conds, metrics, values, cfg, clean)
    sm = cfg.stability_metric
    if sm in metrics and is_binary_metric(sm):
        s0 = evals[clean].stats[sm]
        report.stability = {c: Stability(metric=sm, **stability_classes(s0.num > 0, evals[c].stats[sm].num > 0,
                                                                         s0.den > 0)) for c in conds[1:]}
    report.first_positive_rank = _first_ranks(evals, conds, labels)
    if len(conds) > 1:
        report.rank_displacement = _displacement(evals, conds, labels, rs, cfg.ci)
    if groups:
        report.groups = _group_reports(evals, conds, metrics, labels, groups, cfg)
    return report


def _metric_bootstrap(evals, conds: list[str], metrics: list[str], rows: Mapping[str, np.ndarray | None],
                      rs: QueryResamples) -> dict[str, np.ndarray]:
    """``{metric: (B, conditions) resampled values}`` -- one pair of matrix products (the bulk of the
    statistics' cost) per set of counted queries, shared by the paired deltas and the additivity CIs."""
    by_rows: dict[bytes | None, list[str]] = {}
    for m in metrics:
        by_rows.setdefault(None if rows[m] is None else rows[m].tobytes(), []).append(m)
    n_c = len(conds)
    out: dict[str, np.ndarray] = {}
    for ms in by_rows.values():
        b = rs.values([evals[c].stats[m] for m in ms for c in conds], rows[ms[0]])
        out.update({m: b[:, i * n_c : (i + 1) * n_c] for i, m in enumerate(ms)})
    return out


def _add_label_free(report: Report, conds: list[str], metrics: list[str], values, boot, cfg: EvaluationConfig) -> None:
    """Each stability measure's mean per condition with its own percentile interval, from the same
    resamples as every paired delta (so the interval of ``overlap@10`` is that of its delta + 1)."""
    stable = [m for m in metrics if is_stability_metric(m)]
    if not stable:
        return
    report.meta.stability_measures = {"rule": STABILITY_RULE, "rbo_p": cfg.rbo_p, "rbo_depth": cfg.rbo_depth}
    out: dict[str, dict[str, dict]] = {c: {} for c in conds}
    for m in stable:
        lo, hi = percentile_ci(boot[m], cfg.ci)
        for j, c in enumerate(conds):
            out[c][m] = {"mean": as_value(values[m][c]), "ci": list(_ci(lo[j], hi[j]))}
    report.label_free = out


def _paired(d: Mapping) -> Paired:
    return Paired(as_value(d["delta"]), _ci(*d["ci"]), None if d["p"] is None else as_value(d["p"]),
                  None if d["p_raw"] is None else as_value(d["p_raw"]))


def _additivity(e: Mapping) -> Additivity:
    return Additivity(*(as_value(e[k]) for k in ("delta_image", "delta_text", "exp", "obs", "delta")),
                      _ci(*e["ci"]), e.get("n"))


def _add_additivity(report: Report, conds: list[str], metrics: list[str], values, boot, ci: float,
                    clean: str) -> None:
    """Per joint condition and metric: Exp, Obs, δ with the CI over the shared resamples; summaries."""
    joints, skipped = joint_parts(conds)
    report.additivity = {j: {} for j in joints}
    if skipped:
        report.additivity_skipped = skipped
    if not joints:
        return
    summary = AdditivitySummary(mean={})
    for m in metrics:
        b = boot[m]
        per, summ = additivity_analysis(values[m], joints, {c: b[:, i] for i, c in enumerate(conds)}, ci=ci, clean=clean)
        for j, e in per.items():
            report.additivity[j][m] = _additivity(e)
        for key, e in summ["by_pair"].items():
            summary.by_pair.setdefault(key, {})[m] = _additivity(e)
        for key, e in summ["by_severity"].items():
            summary.by_severity.setdefault(key, {})[m] = _additivity(e)
        summary.mean[m] = _additivity(summ["mean"])  # type: ignore[index]
    report.additivity_summary = summary


def _severity_curves(conds: list[str], metrics: list[str], values, cfg: EvaluationConfig,
                     clean: str) -> dict[str, dict[str, SeverityCurve]]:
    """Per image operator and metric: drops (clean − corrupted, corrupted − clean where higher is worse)
    by severity and the cliff label."""
    by_op: dict[str, dict[int, str]] = {}
    for c in conds:
        pc = parse_condition(c)
        if pc.kind == "image":
            by_op.setdefault(pc.image_operator, {})[pc.severity] = c
    curves: dict[str, dict[str, SeverityCurve]] = {}
    for op, sev in by_op.items():
        levels = sorted(sev)
        curves[op] = {}
        for m in metrics:
            sign = metric_sign(m)  # the drop of a higher-is-worse metric (flip@k) is its rise
            drops = [sign * (values[m][clean] - values[m][sev[s]]) for s in levels]
            curves[op][m] = SeverityCurve({f"s{s}": as_value(d) for s, d in zip(levels, drops)},
                                          cliff_label(drops, tol=cfg.curve_tol, ratio=cfg.curve_ratio))
    return curves


def _first_ranks(evals, conds: list[str], labels: Labels) -> dict[str, FirstRank]:
    has = labels.n_pos > 0
    out: dict[str, FirstRank] = {}
    for c in conds:
        r = evals[c].first_rank[has]
        fin = r[np.isfinite(r)]
        out[c] = FirstRank(as_value(fin.mean()) if fin.size else None, as_value(np.median(fin)) if fin.size else None,
                           int(np.count_nonzero(~np.isfinite(r))))
    return out


def _displacement(evals, conds: list[str], labels: Labels, rs: QueryResamples, ci: float) -> dict[str, Displacement]:
    """Corrupted − clean rank of the first positive, over the queries with a positive."""
    clean, others = conds[0], conds[1:]
    disp = [rank_displacement(evals[clean].first_rank, evals[c].first_rank) for c in others]
    lo, hi = percentile_ci(rs.values(disp, np.flatnonzero(labels.n_pos > 0)), ci)
    out: dict[str, Displacement] = {}
    for j, c in enumerate(others):
        ok = disp[j].den > 0
        out[c] = Displacement(as_value(disp[j].value), as_value(np.median(disp[j].num[ok])) if ok.any() else None,
                              _ci(lo[j], hi[j]), int(ok.sum()))
    return out


def _group_reports(evals, conds: list[str], metrics: list[str], labels: Labels, groups: Mapping[str, np.ndarray],
                   cfg: EvaluationConfig) -> dict[str, GroupReport]:
    """Values and paired deltas within each query group; its own resamples (keyed by the group name)
    over the group's queries that count for each metric."""
    out: dict[str, GroupReport] = {}
    for name, rows in groups.items():
        rows = np.asarray(rows, dtype=np.int64)
        g = GroupReport(int(rows.size), 0 if cfg.include_zero_gt or not cfg.labelled else int(np.count_nonzero(labels.n_pos[rows] == 0)),
                        {c: {} for c in conds}, {c: {} for c in conds[1:]})
        out[name] = g
        if not rows.size:
            continue
        rs = QueryResamples(rows.size, cfg.resamples, cfg.seed, key=f"group:{name}")
        for m in metrics:
            stats = [evals[c].stats[m].subset(rows) for c in conds]
            for c, s in zip(conds, stats):
                g.conditions[c][m] = as_value(s.value)
            if len(conds) > 1:
                counted = np.flatnonzero(np.isin(rows, counted_rows(m, labels.n_pos, cfg.include_zero_gt)))
                boot = rs.values(stats, counted)
                lo, hi = percentile_ci(boot[:, 1:] - boot[:, :1], cfg.ci)
                for j, c in enumerate(conds[1:]):
                    g.paired[c][m] = GroupPaired(as_value(stats[j + 1].value - stats[0].value), _ci(lo[j], hi[j]))
    return out


def _meta(cfg: EvaluationConfig, metrics: Sequence[str], n_perm: int, n_zero: int, labels: Labels) -> ReportMeta:
    return ReportMeta(
        snapbench_version=__version__,
        schema_version=REPORT_SCHEMA_VERSION,
        seed=cfg.seed,
        resamples=cfg.resamples,
        permutations=n_perm,
        ci_level=cfg.ci,
        ci_method="paired bootstrap over queries, percentile interval",
        ks=list(cfg.ks),
        metrics=list(metrics),
        tie_rule=TIE_RULE,
        tests={
            "hit@k": "exact two-sided McNemar (binomial on discordant queries)",
            "other": "two-sided paired permutation test (random per-query swap of the two conditions)",
        },
        correction=("Holm over the paired conditions the target reads (all of them when the target is unknown), per "
                    "metric; 'p' = adjusted, 'p_raw' = unadjusted; a condition the target cannot read has p = p_raw"),
        zero_gt=_zero_gt_rule(cfg),
        n_zero_gt=n_zero if cfg.labelled else None,
        n_gallery=labels.n_items,
        graded_labels=labels.graded if cfg.labelled else None,
        set_threshold=cfg.set_threshold,
        paired_delta="condition - clean (negative = worse)",
        additivity_drops="clean - condition; delta = obs - exp (> 0 super-additive)",
        cliff_rule=CLIFF_RULE,
        cliff_tol=cfg.curve_tol,
        cliff_ratio=cfg.curve_ratio,
        stability_metric=cfg.stability_metric if cfg.labelled else None,
    )


#: meta.zero_gt of a report evaluated without relevance labels (meta.labelled false): no query is a
#: zero-GT query to exclude or count as 0, every query counts in the label-free measures
NO_LABELS_ZERO_GT = "not applicable: no relevance labels (every query counts in the label-free measures)"


def _zero_gt_rule(cfg: EvaluationConfig) -> str:
    """meta.zero_gt: what the report did with the queries that have no relevant item."""
    if not cfg.labelled:
        return NO_LABELS_ZERO_GT
    return "included as 0 in ranking metrics" if cfg.include_zero_gt else "excluded from ranking metrics"
