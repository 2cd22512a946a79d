"""`snapbench evaluate` and `snapbench additivity`: paired robustness reports from score files.

From a SCORES_DIR (or TREC runs) and qrels to the typed report -- the code path of ``snapbench evaluate``.

Memory: conditions are processed one at a time, each in row blocks read from its memmap; only small
per-query vectors (one per metric) are kept per condition.  The statistics are in
:mod:`snapbench.evaluate.summarize`, one condition's ranking in :mod:`snapbench.evaluate.condition`, the
settings in :mod:`snapbench.evaluate.config`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..core.conditions import parse_condition
from ..core.errors import EvaluationInputError, arg
from ..core.records import DepthLimit, PerQuery, Report
from ..core.validate import LIST_MAX, positive_int, unknown_name
from ..data.qrels import load_qrels, load_tags, query_groups
from ..evaluate.condition import ConditionEval, depth_limited_metrics, evaluate_matrix, evaluate_ranking, per_query_values
from ..evaluate.config import EvaluationConfig
from ..evaluate.drag import DRAG_METRIC, coarse_text_drag_ci
from ..evaluate.metrics import Labels, metric_k, ranking_depth
from ..evaluate.summarize import evaluate_conditions
from ..store import output_kind
from ..store.scores import ScoresDir, write_run

__all__ = ['ConditionEval', 'EvaluationConfig', 'evaluate_conditions', 'evaluate_directory', 'evaluate_matrix', 'evaluate_ranking', 'depth_limited_metrics']


from ..evaluate.stability import is_stability_metric, whole_gallery_notes


def evaluate_directory(
    scores_dir: str | Path,
    qrels: str | Path | None,
    config: EvaluationConfig | None = None,
    *,
    mode: str | None = None,
    conditions: Sequence[str] | None = None,
    tags: str | Path | None = None,
    group_by: str | None = None,
    unknown_items: str = "error",
    export_run: str | Path | None = None,
    export_depth: int | None = None,
    per_query: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Evaluate a SCORES_DIR (see :mod:`snapbench.store.scores`) against ``qrels``: the typed report.

    ``conditions`` restricts the evaluation to these ids (clean is always added).  With
    ``export_run`` the top ``export_depth`` (default: the depth the metrics rank to -- the largest k, or
    ``rbo_depth`` when rbo is computed) of every condition is written
    to ``DIR/<condition file name>.run``.  ``per_query`` adds every query's value of every condition
    and metric (:attr:`Report.per_query`).  ``report.warnings`` lists what was accepted with a doubt.

    ``qrels=None``: no relevance labels; only the label-free stability measures between each
    condition's ranking and the clean one are evaluated (:mod:`snapbench.evaluate.stability`).
    """
    cfg = config or EvaluationConfig()
    if qrels is None and cfg.labelled:
        cfg = dataclasses.replace(cfg, labelled=False)
    metrics = cfg.metric_list()
    if export_depth is not None:
        positive_int(export_depth, "export_depth")  # not 0 (the default) or -1 (one less than the default)
    sd = ScoresDir(scores_dir, mode=mode)
    if sd.kind == "npy":
        sd.scores("clean")  # a wrong id list shows up as a shape mismatch, not as unknown qrels ids
    dropped: list[str] = []
    if qrels is None:
        labels, notes = Labels.from_lists([[] for _ in sd.query_ids], len(sd.gallery_ids)), []
    else:
        labels, notes = load_qrels(qrels, sd.query_ids, sd.gallery_ids, unknown_items=unknown_items,
                                   dropped=dropped, id_lists=sd.id_lists)
    notes = list(sd.warnings) + notes
    conds = _selected(sd, conditions)
    depth = 0
    if export_run is not None:
        depth = export_depth or ranking_depth(metrics, cfg.rbo_depth)
        try:
            Path(export_run).mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise EvaluationInputError(f"cannot create the run folder ({e.strerror or e})", path=export_run) from None
    evals, limited = _evaluate_each(sd, conds, labels, metrics, cfg, depth, export_run, progress)
    groups = None
    if tags is not None:
        groups = query_groups(load_tags(tags, sd.query_ids, notes=notes), sd.query_ids, group_by, source=tags)
    elif group_by is not None:
        raise EvaluationInputError(f"{arg('group_by')} needs {arg('tags')} (a tags file)", param="group_by")
    report = evaluate_conditions(evals, labels, cfg, groups=groups, target=scores_target(sd))
    if qrels is not None:
        report.coarse_text_drag = _coarse_text_drag(sd, labels, evals["clean"], cfg)
    report.meta.scores_dir = str(sd.path)
    report.meta.qrels = None if qrels is None else str(qrels)
    report.meta.input_format = sd.kind
    report.meta.mode = scores_target(sd)
    report.meta.qrels_without_scores = dropped
    report.meta.depth_limited_metrics = sorted({m for d in limited.values() for m in d.metrics})
    report.n_qrels_without_scores = len(dropped)
    if limited:
        report.depth_limited = limited
        notes += _depth_notes(sd, limited)
    for j in list(report.additivity_skipped or {}):
        reason = sd.why_missing(j, set(evals))
        report.additivity_skipped[j] = reason  # type: ignore[index]
        notes.append(f"{j}: no additivity: {reason}")
    # an overlap@k whose top-k holds the whole gallery is 1 by construction: said as run says it
    notes += whole_gallery_notes(len(sd.gallery_ids), [metric_k(m) for m in metrics if m.startswith("overlap@")])
    why = _nothing_measured(report, labels, qrels) if qrels is not None else None
    if why:
        notes.append(why)
    report.warnings = notes
    if per_query:
        report.per_query = PerQuery.from_arrays(sd.query_ids, per_query_values(evals, metrics))
    return report


def scores_target(sd: ScoresDir) -> str | None:
    """Which retrieval target the evaluated scores are, when the SCORES_DIR says so (``meta.mode``):
    the id of ``mode`` (``IT2IT``, as ``snapbench run`` writes it), ``MOOR`` for a folder ``snapbench
    moor`` wrote (its run.json kind), else ``None`` (score files of unknown origin: a comparison names
    their target itself)."""
    if sd.mode:
        return sd.mode  # ScoresDir holds the canonical id (modes.normalize_mode)
    # a run.json that is not snapbench's (or unreadable) is no statement about the scores
    return "MOOR" if output_kind(sd.path) == "moor" else None


def _selected(sd: ScoresDir, conditions: Sequence[str] | None) -> list[str]:
    """The SCORES_DIR's conditions, or the requested ones (clean always first)."""
    conds = list(sd.conditions)
    if conditions is None:
        return conds
    want = []
    for c in conditions:
        try:
            cid = parse_condition(c).id
        except ValueError as e:
            raise EvaluationInputError(str(e), param="conditions") from None
        if cid not in conds:
            # the folder's conditions are the known ones: one misspelt or absent id, named with the close ones
            raise EvaluationInputError(unknown_name("condition", cid, conds, n=LIST_MAX, where=f" in {sd.path}"),
                                       param="conditions")
        want.append(cid)
    return ["clean"] + [c for c in conds if c in want and c != "clean"]


def _evaluate_each(sd: ScoresDir, conds: list[str], labels: Labels, metrics: list[str], cfg: EvaluationConfig,
                   depth: int, export_run: str | Path | None,
                   progress: Callable[[str], None] | None) -> tuple[dict[str, ConditionEval], dict[str, DepthLimit]]:
    """Per-query results of every condition (one at a time) and the runs too shallow for a metric."""
    evals: dict[str, ConditionEval] = {}
    limited: dict[str, DepthLimit] = {}
    pool = ThreadPoolExecutor(max_workers=cfg.workers) if cfg.workers > 1 else None
    reference = None  # the clean ranking, once evaluated: what the stability measures compare with
    try:
        for c in sorted(conds, key=lambda c: c != "clean"):  # clean first: the others are compared with it
            if progress:
                progress(c)
            rbo = dict(reference=reference, rbo_p=cfg.rbo_p, rbo_depth=cfg.rbo_depth)
            if sd.kind == "npy":
                ev = evaluate_matrix(sd.scores(c), labels, metrics, name=sd.describe(c), query_ids=sd.query_ids,
                                     set_threshold=cfg.set_threshold, include_zero_gt=cfg.include_zero_gt,
                                     export_depth=depth, block_rows=cfg.block_rows, executor=pool, **rbo)
            else:
                run = sd.run(c)
                ev = evaluate_ranking(run, labels, metrics, set_threshold=cfg.set_threshold,
                                      include_zero_gt=cfg.include_zero_gt, export_depth=depth, **rbo)
                shallow = depth_limited_metrics(metrics, run.idx.shape[1], labels.n_items)
                if shallow:
                    limited[c] = DepthLimit(int(run.idx.shape[1]), shallow)
            if export_run is not None:
                write_run(Path(export_run) / f"{sd.filename(c)}.run", sd.query_ids, sd.gallery_ids,
                          ev.topk_idx, ev.topk_scores)
                ev.topk_idx = ev.topk_scores = None  # keep only per-query vectors in memory
            if c == "clean":
                reference = ev.ranking
            evals[c] = ev
    finally:
        if pool is not None:
            pool.shutdown()
    return evals, limited


def _depth_notes(sd: ScoresDir, limited: dict[str, DepthLimit]) -> list[str]:
    """One warning per (depth, metrics) group, not one per condition (a top-10 export limits them all)."""
    by_depth: dict[tuple[int, tuple[str, ...]], list[str]] = {}
    for c, d in limited.items():
        by_depth.setdefault((d.depth, tuple(d.metrics)), []).append(c)
    notes = []
    for (depth, ms), conds in by_depth.items():
        which = sd.describe(conds[0]) if len(conds) == 1 else f"{len(conds)} conditions ({conds[0]}, ...)"
        stable = [m for m in ms if is_stability_metric(m)]
        also = f"; {', '.join(stable)} compare only the listed items" if stable else ""
        notes.append(f"{which}: the runs list at most {depth} items per query, so {', '.join(ms)} are depth-limited "
                     f"(lower bounds: positives below rank {depth} count as not retrieved{also})")
    return notes


def _nothing_measured(report: Report, labels: Labels, qrels: str | Path | None = None) -> str | None:
    """A warning when no query has a relevant item: ranking metrics then measure nothing (``None``
    when at least one query has a positive)."""
    if labels.n_queries == 0 or int(labels.n_pos.sum()) > 0:
        return None
    where = f" in {qrels}" if qrels is not None else ""
    # the label-free stability measures are defined without a single positive: they do not count here
    anything = any(v is not None for vals in report.conditions.values() for m, v in vals.items()
                   if not is_stability_metric(m))
    what = ("ranking metrics are undefined (null), so nothing was measured" if not anything else
            "ranking metrics measure nothing (only answer-set and reject metrics are defined)")
    if report.meta.zero_gt.startswith("included"):
        what = "ranking metrics are 0 for every query by definition, so nothing was measured"
    return (f"none of the {labels.n_queries} queries has a relevant item{where}: {what}; "
            "are the qrels and query_ids.txt from the same data set?")


def _coarse_text_drag(sd: ScoresDir, labels: Labels, clean_eval: ConditionEval, cfg: EvaluationConfig):
    """hit@1(evaluated) − hit@1(I→I) on clean, when clean.II.npy exists: the evaluated clean scores are
    the mode's (``--mode``, named by its id as ``snapbench run`` names the drag of its report of that
    mode, so both write the same report.json) or, without a mode, the scores as given.  I→I itself
    has no drag against itself."""
    if sd.kind != "npy" or sd.mode == "I2I":
        return None
    s_ii = sd.path_scores("clean", "II")
    if s_ii is None:
        return None
    common = dict(name=str(sd.path_file("clean", "II")), query_ids=sd.query_ids, block_rows=cfg.block_rows,
                  workers=cfg.workers, include_zero_gt=cfg.include_zero_gt)
    img = evaluate_matrix(s_ii, labels, [DRAG_METRIC], **common).stats[DRAG_METRIC]
    joint = clean_eval.stats.get(DRAG_METRIC)
    if joint is None:  # the evaluated metrics leave hit@1 out
        joint = evaluate_matrix(sd.scores("clean"), labels, [DRAG_METRIC], **common).stats[DRAG_METRIC]
    return coarse_text_drag_ci(joint, img, labels, cfg, joint_label=sd.mode or "clean.npy (as given)")
