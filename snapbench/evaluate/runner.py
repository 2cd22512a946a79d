"""From score matrices (or runs) and labels to the full paired report -- the code path of the CLI.

Memory: conditions are processed one at a time, each in row blocks read from its memmap; only small
per-query vectors (one per metric) are kept per condition.  The bootstrap resamples are drawn once
and shared by all conditions, metrics, the additivity CIs and the rank-displacement CI.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._version import __version__
from ..conditions import parse_condition
from ..ranking import TIE_RULE, first_positive_rank, topk_indices
from .additivity import additivity_analysis, joint_parts
from .io import (
    ComposedScores,
    EvaluationInputError,
    RunRanking,
    ScoresDir,
    load_qrels,
    load_tags,
    query_groups,
    write_run,
)
from .metrics import (
    DEFAULT_KS,
    REJECT_METRICS,
    SET_METRICS,
    Labels,
    QueryStat,
    is_binary_metric,
    metric_k,
    parse_metrics,
    query_stats,
)
from .modes import MODE_LABELS, coarse_text_drag
from .paired import (
    CLIFF_RULE,
    DEFAULT_CI,
    DEFAULT_RESAMPLES,
    bootstrap_counts,
    bootstrap_values,
    cliff_label,
    paired_analysis,
    percentile_ci,
    rank_displacement,
    stability_classes,
    swap_matrix,
)

__all__ = [
    "ConditionEval",
    "EvaluationConfig",
    "evaluate_conditions",
    "evaluate_directory",
    "evaluate_matrix",
    "evaluate_ranking",
    "depth_limited_metrics",
]

REPORT_SCHEMA_VERSION = 1


@dataclass
class EvaluationConfig:
    """Settings of one evaluation (CLI flags: --k, --metrics, --resamples, --ci, --seed,
    --permutations, --include-zero-gt, --set-threshold, --stability-metric, --cliff-tol,
    --cliff-ratio, --workers)."""

    ks: tuple[int, ...] = DEFAULT_KS
    metrics: str | Sequence[str] | None = None  # default: hit, recall, ndcg over ks, and mrr
    resamples: int = DEFAULT_RESAMPLES
    ci: float = DEFAULT_CI
    seed: int = 0
    permutations: int | None = None  # default: = resamples
    include_zero_gt: bool = False
    set_threshold: float | None = None  # predicted set = items scoring >= threshold
    stability_metric: str = "hit@1"
    curve_tol: float = 0.01
    curve_ratio: float = 2.0
    block_rows: int = 256
    workers: int = field(default_factory=lambda: min(4, os.cpu_count() or 1))

    def metric_list(self) -> list[str]:
        ms = parse_metrics(self.metrics, self.ks)
        has_set = any(m in SET_METRICS or m in REJECT_METRICS for m in ms)
        if self.set_threshold is not None and self.metrics is None:
            ms += list(SET_METRICS + REJECT_METRICS)
        elif has_set and self.set_threshold is None:
            raise EvaluationInputError("set/reject metrics need set_threshold (the score that admits an item)")
        return ms


@dataclass
class ConditionEval:
    """Per-query results of one condition: metric stats, rank of the first positive, optional top-k."""

    stats: dict[str, QueryStat]
    first_rank: np.ndarray
    topk_idx: np.ndarray | None = None
    topk_scores: np.ndarray | None = None


def _depth(metrics: Sequence[str]) -> int:
    return max([metric_k(m) or 0 for m in metrics if not m.startswith("mrr")] + [1])


def evaluate_matrix(
    scores,
    labels: Labels,
    metrics: Sequence[str],
    *,
    name: str = "scores",
    query_ids: Sequence[str] | None = None,
    set_threshold: float | None = None,
    include_zero_gt: bool = False,
    export_depth: int = 0,
    block_rows: int = 256,
    workers: int = 1,
    executor: Executor | None = None,
) -> ConditionEval:
    """Evaluate one Q x N score matrix (array, memmap, or anything sliceable by row blocks).

    Rows are processed in blocks of ``block_rows`` (on ``workers`` threads; numpy releases the GIL
    in partition/compare), so at most ``workers x block_rows x N`` scores are materialised; pass an
    ``executor`` to reuse one thread pool across conditions.
    NaN/inf scores raise :class:`EvaluationInputError` naming ``name``, the row and the column.
    """
    n_q, n = scores.shape
    if n_q != labels.n_queries or n != labels.n_items:
        raise EvaluationInputError(
            f"{name}: shape {scores.shape} does not match labels ({labels.n_queries} x {labels.n_items})"
        )
    if n == 0:
        raise EvaluationInputError(f"{name}: empty gallery")
    depth = max(_depth(metrics), export_depth)

    def block(r0: int, r1: int):
        s = np.asarray(scores[r0:r1])
        if s.dtype.kind in "iu":
            s = s.astype(np.float64)
        if s.dtype.kind != "f":
            raise EvaluationInputError(f"{name}: scores must be real numbers, got dtype {s.dtype}")
        bad = ~np.isfinite(s)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            q = f" (query {query_ids[r0 + r]!r})" if query_ids is not None else ""
            raise EvaluationInputError(
                f"{name}: non-finite score {s[r, c]} at row {r0 + r}{q}, column {c}; "
                f"{int(bad.sum())} such value(s) in rows {r0}..{r1 - 1}"
            )
        lab = labels.rows(r0, r1)
        idx = topk_indices(s, depth)
        # The top-k list is the exact prefix of the full ranking: a positive found there has its
        # final rank; only the other rows need the full-gallery count.
        pos_k = lab.lookup(idx) > 0
        found = pos_k.any(axis=1)
        fr = np.where(found, np.argmax(pos_k, axis=1) + 1.0, np.nan)
        need = np.flatnonzero(~found & (lab.n_pos > 0))
        if need.size:
            sub = lab.select(need)
            fr[need] = first_positive_rank(s[need], sub.pos_rows, sub.items)
        pred = tp = None
        if set_threshold is not None:
            pred = np.count_nonzero(s >= set_threshold, axis=1)
            hit = s[lab.pos_rows, lab.items] >= set_threshold
            tp = np.bincount(lab.pos_rows[hit], minlength=r1 - r0)
        vals = None
        if export_depth:
            vals = np.take_along_axis(s, np.maximum(idx[:, :export_depth], 0), axis=1).astype(np.float64)
            vals[idx[:, :export_depth] < 0] = np.nan
        return idx, fr, pred, tp, vals

    bounds = [(a, min(a + block_rows, n_q)) for a in range(0, n_q, block_rows)]
    if executor is not None and len(bounds) > 1:
        parts = list(executor.map(lambda b: block(*b), bounds))
    elif workers > 1 and len(bounds) > 1:
        with ThreadPoolExecutor(max_workers=workers) as ex:
            parts = list(ex.map(lambda b: block(*b), bounds))
    else:
        parts = [block(*b) for b in bounds]
    idx = np.concatenate([p[0] for p in parts]) if parts else np.zeros((0, depth), dtype=np.int64)
    fr = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0)
    pred = tp = None
    if set_threshold is not None:
        pred = np.concatenate([p[2] for p in parts])
        tp = np.concatenate([p[3] for p in parts])
    stats = query_stats(idx, fr, labels, metrics, include_zero_gt=include_zero_gt, pred_size=pred, tp=tp)
    out = ConditionEval(stats, fr)
    if export_depth:
        out.topk_idx = idx[:, :export_depth]
        out.topk_scores = np.concatenate([p[4] for p in parts])
    return out


def evaluate_ranking(
    run: RunRanking,
    labels: Labels,
    metrics: Sequence[str],
    *,
    set_threshold: float | None = None,
    include_zero_gt: bool = False,
    export_depth: int = 0,
) -> ConditionEval:
    """Evaluate ranked lists (e.g. from a TREC run).  A positive that is not in a query's list has
    rank inf (reciprocal rank 0); metrics cut deeper than the list see empty slots."""
    depth = max(_depth(metrics), export_depth)
    idx = run.idx
    if idx.shape[1] < depth:
        pad = np.full((idx.shape[0], depth - idx.shape[1]), -1, dtype=np.int64)
        idx = np.concatenate([idx, pad], axis=1)
    rel = labels.lookup(run.idx)
    has = labels.n_pos > 0
    first = np.where((rel > 0).any(axis=1), np.argmax(rel > 0, axis=1) + 1.0, np.inf)
    first = np.where(has, first, np.nan)
    pred = tp = None
    if set_threshold is not None:
        inset = np.nan_to_num(run.scores, nan=-np.inf) >= set_threshold
        pred = np.count_nonzero(inset, axis=1)
        tp = np.count_nonzero(inset & (rel > 0), axis=1)
    stats = query_stats(idx, first, labels, metrics, include_zero_gt=include_zero_gt, pred_size=pred, tp=tp)
    out = ConditionEval(stats, first)
    if export_depth:
        out.topk_idx = idx[:, :export_depth]
        sc = np.full(out.topk_idx.shape, np.nan)
        w = min(export_depth, run.scores.shape[1])
        sc[:, :w] = run.scores[:, :w]
        out.topk_scores = sc
    return out


def _f(x) -> float | None:
    x = float(x)
    return None if math.isnan(x) else x


def _ci(lo, hi) -> list[float | None]:
    return [_f(lo), _f(hi)]


def evaluate_conditions(
    evals: Mapping[str, ConditionEval],
    labels: Labels,
    config: EvaluationConfig | None = None,
    *,
    groups: Mapping[str, np.ndarray] | None = None,
    clean: str = "clean",
) -> dict:
    """The report (SPEC §11 schema plus extras) from per-condition results sharing queries/labels."""
    cfg = config or EvaluationConfig()
    metrics = cfg.metric_list()
    if clean not in evals:
        raise EvaluationInputError(f"no {clean!r} condition: paired results are against clean")
    conds = [clean] + [c for c in evals if c != clean]
    others = conds[1:]
    for c in conds:
        missing = [m for m in metrics if m not in evals[c].stats]
        if missing:
            raise ValueError(f"condition {c!r} was evaluated without {', '.join(missing)}")
    n_q = labels.n_queries
    n_zero = int(np.count_nonzero(labels.n_pos == 0))
    counts = bootstrap_counts(n_q, cfg.resamples, cfg.seed)
    n_perm = cfg.permutations if cfg.permutations is not None else cfg.resamples
    swaps = swap_matrix(n_q, n_perm, cfg.seed) if any(not is_binary_metric(m) for m in metrics) else None
    joints, skipped = joint_parts(conds)

    report: dict = {
        "conditions": {c: {} for c in conds},
        "paired": {c: {} for c in others},
        "additivity": {j: {} for j in joints},
        "n_queries": n_q,
        "n_excluded_zero_gt": 0 if cfg.include_zero_gt else n_zero,
    }
    add_summary: dict = {}
    values_by_metric: dict[str, dict[str, float]] = {}
    n_c = len(conds)
    # One pass of matrix products for every metric x condition (the bulk of the statistics' cost),
    # shared by the paired deltas and the additivity CIs.
    boot_all = bootstrap_values([evals[c].stats[m] for m in metrics for c in conds], counts)
    boot_by_metric = {m: boot_all[:, mi * n_c : (mi + 1) * n_c] for mi, m in enumerate(metrics)}
    paired = paired_analysis(
        {c: {m: evals[c].stats[m] for m in metrics} for c in conds},
        clean=clean, ci=cfg.ci, counts=counts, swaps=swaps, boot=boot_by_metric,
    )
    for c in others:
        report["paired"][c] = {m: _clean_floats(paired[c][m]) for m in metrics}
    for m in metrics:
        stats = [evals[c].stats[m] for c in conds]
        boot = boot_by_metric[m]
        vals = {c: s.value for c, s in zip(conds, stats)}
        values_by_metric[m] = vals
        for c in conds:
            report["conditions"][c][m] = _f(vals[c])
        if joints:
            per, summ = additivity_analysis(
                vals, joints, {c: boot[:, i] for i, c in enumerate(conds)}, ci=cfg.ci, clean=clean
            )
            for j, e in per.items():
                report["additivity"][j][m] = _clean_floats(e)
            for section, d in summ.items():
                if section == "mean":
                    add_summary.setdefault("mean", {})[m] = _clean_floats(d)
                else:
                    for key, e in d.items():
                        add_summary.setdefault(section, {}).setdefault(key, {})[m] = _clean_floats(e)
    del boot_all
    report["additivity_summary"] = add_summary
    if skipped:
        report["additivity_skipped"] = skipped

    # severity curves per image operator (drops = clean - corrupted)
    curves: dict[str, dict] = {}
    by_op: dict[str, dict[int, str]] = {}
    for c in conds:
        pc = parse_condition(c)
        if pc.kind == "image":
            by_op.setdefault(pc.image_operator, {})[pc.severity] = c
    for op, sev in by_op.items():
        levels = sorted(sev)
        curves[op] = {}
        for m in metrics:
            drops = [values_by_metric[m][clean] - values_by_metric[m][sev[s]] for s in levels]
            curves[op][m] = {
                "drops": {f"s{s}": _f(d) for s, d in zip(levels, drops)},
                "label": cliff_label(drops, tol=cfg.curve_tol, ratio=cfg.curve_ratio),
            }
    report["severity_curves"] = curves

    # stability classes
    sm = cfg.stability_metric
    if sm in metrics and is_binary_metric(sm):
        s0 = evals[clean].stats[sm]
        report["stability"] = {
            c: {"metric": sm, **stability_classes(s0.num > 0, evals[c].stats[sm].num > 0, s0.den > 0)} for c in others
        }

    # first-positive rank and its displacement
    has = labels.n_pos > 0
    fpr: dict[str, dict] = {}
    for c in conds:
        r = evals[c].first_rank[has]
        fin = r[np.isfinite(r)]
        fpr[c] = {
            "mean": _f(fin.mean()) if fin.size else None,
            "median": _f(np.median(fin)) if fin.size else None,
            "n_not_retrieved": int(np.count_nonzero(~np.isfinite(r))),
        }
    report["first_positive_rank"] = fpr
    if others:
        disp = [rank_displacement(evals[clean].first_rank, evals[c].first_rank) for c in others]
        dboot = bootstrap_values(disp, counts)
        lo, hi = percentile_ci(dboot, cfg.ci)
        report["rank_displacement"] = {}
        for j, c in enumerate(others):
            ok = disp[j].den > 0
            report["rank_displacement"][c] = {
                "mean": _f(disp[j].value),
                "median": _f(np.median(disp[j].num[ok])) if ok.any() else None,
                "ci": _ci(lo[j], hi[j]),
                "n": int(ok.sum()),
            }

    if groups:
        report["groups"] = _group_reports(evals, conds, metrics, labels, groups, cfg)

    report["meta"] = {
        "snapbench_version": __version__,
        "schema_version": REPORT_SCHEMA_VERSION,
        "seed": cfg.seed,
        "resamples": cfg.resamples,
        "permutations": n_perm,
        "ci_level": cfg.ci,
        "ci_method": "paired bootstrap over queries, percentile interval",
        "ks": list(cfg.ks),
        "metrics": metrics,
        "tie_rule": TIE_RULE,
        "tests": {
            "hit@k": "exact two-sided McNemar (binomial on discordant queries)",
            "other": "two-sided paired permutation test (random per-query swap of the two conditions)",
        },
        "correction": "Holm over all paired conditions, per metric; 'p' = adjusted, 'p_raw' = unadjusted",
        "zero_gt": "included as 0 in ranking metrics" if cfg.include_zero_gt else "excluded from ranking metrics",
        "n_zero_gt": n_zero,
        "n_gallery": labels.n_items,
        "graded_labels": labels.graded,
        "set_threshold": cfg.set_threshold,
        "paired_delta": "condition - clean (negative = worse)",
        "additivity_drops": "clean - condition; delta = obs - exp (> 0 super-additive)",
        "cliff_rule": CLIFF_RULE,
        "cliff_tol": cfg.curve_tol,
        "cliff_ratio": cfg.curve_ratio,
        "stability_metric": sm,
    }
    return report


def _clean_floats(d: dict) -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, list):
            out[k] = [_f(x) for x in v]
        elif isinstance(v, (float, np.floating)):
            out[k] = _f(v)
        else:
            out[k] = v
    return out


def _group_reports(evals, conds, metrics, labels, groups, cfg) -> dict:
    out: dict = {}
    for name, rows in groups.items():
        rows = np.asarray(rows, dtype=np.int64)
        g: dict = {
            "n_queries": int(rows.size),
            "n_excluded_zero_gt": 0 if cfg.include_zero_gt else int(np.count_nonzero(labels.n_pos[rows] == 0)),
            "conditions": {c: {} for c in conds},
            "paired": {c: {} for c in conds[1:]},
        }
        if rows.size:
            # Resampling within the group: its own draws, keyed by the group name.
            counts = bootstrap_counts(rows.size, cfg.resamples, cfg.seed, key=f"group:{name}")
            for m in metrics:
                stats = [evals[c].stats[m].subset(rows) for c in conds]
                for c, s in zip(conds, stats):
                    g["conditions"][c][m] = _f(s.value)
                if len(conds) > 1:
                    boot = bootstrap_values(stats, counts)
                    lo, hi = percentile_ci(boot[:, 1:] - boot[:, :1], cfg.ci)
                    for j, c in enumerate(conds[1:]):
                        g["paired"][c][m] = {"delta": _f(stats[j + 1].value - stats[0].value), "ci": _ci(lo[j], hi[j])}
        out[name] = g
    return out


def evaluate_directory(
    scores_dir: str | Path,
    qrels: str | Path,
    config: EvaluationConfig | None = None,
    *,
    mode: str | None = None,
    conditions: Sequence[str] | None = None,
    tags: str | Path | None = None,
    group_by: str | None = None,
    unknown_items: str = "error",
    export_run: str | Path | None = None,
    export_depth: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Evaluate a SCORES_DIR (see :mod:`snapbench.evaluate.io`) against ``qrels``: the report dict.

    ``conditions`` restricts the evaluation to these ids (clean is always added).  With
    ``export_run`` the top ``export_depth`` (default: the largest k) of every condition is written
    to ``DIR/<condition file name>.run``.
    """
    cfg = config or EvaluationConfig()
    metrics = cfg.metric_list()
    sd = ScoresDir(scores_dir, mode=mode, qrels=qrels)
    if sd.kind == "npy":
        sd.scores("clean")  # a wrong id list shows up as a shape mismatch, not as unknown qrels ids
    dropped: list[str] = []
    labels, notes = load_qrels(qrels, sd.query_ids, sd.gallery_ids, unknown_items=unknown_items, dropped=dropped)
    notes = list(sd.warnings) + notes
    conds = list(sd.conditions)
    if conditions is not None:
        want = []
        for c in conditions:
            try:
                cid = parse_condition(c).id
            except ValueError as e:
                raise EvaluationInputError(str(e)) from None
            if cid not in conds:
                raise EvaluationInputError(f"{sd.path}: condition {cid!r} has no score file")
            want.append(cid)
        conds = ["clean"] + [c for c in conds if c in want and c != "clean"]
    depth = 0
    if export_run is not None:
        depth = export_depth or max(_depth(metrics), 1)
        try:
            Path(export_run).mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise EvaluationInputError(f"{export_run}: cannot create the run folder ({e.strerror or e})") from None
    evals: dict[str, ConditionEval] = {}
    depth_limited: dict[str, dict] = {}
    pool = ThreadPoolExecutor(max_workers=cfg.workers) if cfg.workers > 1 else None
    try:
        for c in conds:
            if progress:
                progress(c)
            if sd.kind == "npy":
                ev = evaluate_matrix(
                    sd.scores(c),
                    labels,
                    metrics,
                    name=sd.describe(c),
                    query_ids=sd.query_ids,
                    set_threshold=cfg.set_threshold,
                    include_zero_gt=cfg.include_zero_gt,
                    export_depth=depth,
                    block_rows=cfg.block_rows,
                    executor=pool,
                )
            else:
                run = sd.run(c)
                ev = evaluate_ranking(
                    run, labels, metrics, set_threshold=cfg.set_threshold,
                    include_zero_gt=cfg.include_zero_gt, export_depth=depth,
                )
                limited = depth_limited_metrics(metrics, run.idx.shape[1], labels.n_items)
                if limited:
                    depth_limited[c] = {"depth": int(run.idx.shape[1]), "metrics": limited}
            if export_run is not None:
                write_run(Path(export_run) / f"{sd.filename(c)}.run", sd.query_ids, sd.gallery_ids,
                          ev.topk_idx, ev.topk_scores)
                ev.topk_idx = ev.topk_scores = None  # keep only per-query vectors in memory
            evals[c] = ev
    finally:
        if pool is not None:
            pool.shutdown()
    groups = None
    if tags is not None:
        groups = query_groups(load_tags(tags, sd.query_ids, notes=notes), sd.query_ids, group_by, source=tags)
    elif group_by is not None:
        raise EvaluationInputError("group_by needs tags (a tags file)")
    report = evaluate_conditions(evals, labels, cfg, groups=groups)
    drag = _coarse_text_drag(sd, labels, evals["clean"], cfg)
    if drag is not None:
        report["coarse_text_drag"] = drag
    report["meta"].update(
        {
            "scores_dir": str(sd.path),
            "qrels": str(qrels),
            "input_format": sd.kind,
            "mode": MODE_LABELS.get(sd.mode, sd.mode) if sd.mode else None,
            "qrels_without_scores": dropped,
            "depth_limited_metrics": sorted({m for d in depth_limited.values() for m in d["metrics"]}),
        }
    )
    report["n_qrels_without_scores"] = len(dropped)
    if depth_limited:
        report["depth_limited"] = depth_limited
        # one line per (depth, metrics) group, not one per condition (a top-10 export limits them all)
        by_depth: dict[tuple[int, tuple[str, ...]], list[str]] = {}
        for c, d in depth_limited.items():
            by_depth.setdefault((d["depth"], tuple(d["metrics"])), []).append(c)
        for (depth, ms), conds_ in by_depth.items():
            which = sd.describe(conds_[0]) if len(conds_) == 1 else f"{len(conds_)} conditions ({conds_[0]}, ...)"
            notes.append(
                f"{which}: the runs list at most {depth} items per query, so {', '.join(ms)} are depth-limited "
                f"(lower bounds: positives below rank {depth} count as not retrieved)"
            )
    skipped = report.get("additivity_skipped") or {}
    for j in list(skipped):
        reason = sd.why_missing(j, set(evals))
        skipped[j] = reason
        notes.append(f"{j}: no additivity: {reason}")
    report["warnings"] = notes
    return report


def depth_limited_metrics(metrics: Sequence[str], depth: int, n_items: int) -> list[str]:
    """Ranking metrics a run of ``depth`` items per query cannot compute exactly: cut-offs deeper
    than the run, and an uncut MRR, unless the run ranks the whole gallery."""
    if depth >= n_items:
        return []
    out = []
    for m in metrics:
        if m in SET_METRICS or m in REJECT_METRICS:
            continue
        k = metric_k(m)
        if (k is None and m.startswith("mrr")) or (k is not None and k > depth):
            out.append(m)
    return out


def _coarse_text_drag(sd: ScoresDir, labels: Labels, clean_eval: ConditionEval, cfg: EvaluationConfig) -> dict | None:
    """hit@1(joint) − hit@1(I→I) on clean, when clean.II.npy exists (joint = the evaluated clean
    scores without --mode, or IT→IT composed from clean.II + clean.TT with --mode)."""
    if sd.kind != "npy":
        return None
    s_ii = sd.path_scores("clean", "II")
    if s_ii is None:
        return None
    common = dict(name=str(sd.path / "clean.II.npy"), query_ids=sd.query_ids, block_rows=cfg.block_rows, workers=cfg.workers)
    img = evaluate_matrix(s_ii, labels, ["hit@1"], **common).stats["hit@1"]
    if sd.mode is None:
        joint_src = "clean.npy (as given)"
        joint = clean_eval.stats.get("hit@1")
        if joint is None:
            joint = evaluate_matrix(sd.scores("clean"), labels, ["hit@1"], **common).stats["hit@1"]
    else:
        s_tt = sd.path_scores("clean", "TT")
        if s_tt is None:
            return None
        joint_src = "IT→IT = (clean.II + clean.TT) / 2"
        joint = evaluate_matrix(ComposedScores("IT2IT", {"II": s_ii, "TT": s_tt}), labels, ["hit@1"], **common).stats["hit@1"]
    counts = bootstrap_counts(labels.n_queries, cfg.resamples, cfg.seed)
    boot = bootstrap_values([img, joint], counts)
    lo, hi = percentile_ci(boot[:, 1] - boot[:, 0], cfg.ci)
    return {
        "metric": "hit@1",
        "value": _f(coarse_text_drag(joint, img)),
        "ci": _ci(lo, hi),
        "joint": joint_src,
        "joint_value": _f(joint.value),
        "image_value": _f(img.value),
    }

