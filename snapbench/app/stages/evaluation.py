"""Stage 6, evaluate: every target's scores (:mod:`.score`) evaluated into one report each, written to the
run folder (:class:`snapbench.store.RunDir`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ...core.conditions import Condition
from ...core.errors import ConfigError, InputError
from ...store import RunDir
from ...store.atomic import write_json
from ...store.folders import remove_stale
from .options import RunOptions
from .score import BlockScores, score_targets


def evaluate_all(ds, out: Path, conds: list[Condition], modes: list[str], moor_ok: bool, gallery, q_emb, keep: np.ndarray,
                  opts: RunOptions, bar: Any, say: Callable[[str], None],
                  measured: Mapping[str, Mapping[str, np.ndarray]] | None = None) -> dict[str, Path]:
    """Evaluate every mode, MOOR and the baselines on the kept queries; write the reports.  ``measured``
    (condition -> metric -> one value per kept query, :mod:`.measured`) joins every target's per-query
    table after the evaluation metrics."""
    from ...evaluate import (
        EvaluationConfig,
        QueryResamples,
        coarse_text_drag_ci,
        evaluate_conditions,
        evaluate_matrix,
        per_query_values,
    )
    from ...evaluate.drag import DRAG_METRIC
    from ...evaluate.metrics import Labels
    from ...evaluate.streaming import evaluate_column_chunks
    from ...store.perquery import write_per_query
    from ...store.rundir import write_report

    qids = [ds.queries[i].id for i in keep]
    gids = [g.id for g in ds.gallery]
    gpos = {g: j for j, g in enumerate(gids)}
    gold = []
    for q in qids:
        rel = ds.qrels.get(q, {})
        unknown = [g for g in rel if g not in gpos]
        if unknown:
            raise InputError(f"qrels of query {q!r} name gallery id(s) not in the gallery: {', '.join(unknown[:5])}")
        gold.append({gpos[g]: float(r) for g, r in rel.items()})
    labels = Labels.from_lists(gold, len(gids))
    # a dataset without any ground truth is evaluated by the label-free stability measures alone
    cfg = EvaluationConfig(ks=tuple(opts.ks), resamples=opts.resamples, seed=opts.seed,
                           labelled=bool(ds.has_ground_truth))
    metrics = cfg.metric_list()
    groups = _tag_groups(ds, keep, opts.group_by)
    N = len(gids)

    scores = score_targets(gallery, q_emb, keep, modes, moor_ok, say)
    targets, sharded, shares = scores.targets, scores.sharded, scores.shares
    run_dir = RunDir(out)
    gone = _remove_other_targets(run_dir, [name for name, _ in targets])
    if gone:
        say(f"removed {', '.join(gone)}: an earlier run's targets this run does not evaluate")
    written: dict[str, Path] = {}
    evaluated: dict[str, Any] = {}  # target name -> its report (snapbench.core.records.Report)
    drag_stats: dict[str, Any] = {}  # target name -> per-query hit@1 on clean (the coarse-text drag)

    task = bar.add("evaluate", len(targets) * len(conds))
    for name, make in targets:
        evals = {}
        reference = None  # the clean ranking, once evaluated: what the stability measures compare with
        for c in sorted(conds, key=lambda c: c.id != "clean"):
            rbo = dict(reference=reference, rbo_p=cfg.rbo_p, rbo_depth=cfg.rbo_depth)
            if sharded:
                evals[c.id] = evaluate_column_chunks(make(c), labels, metrics, name=f"{name} {c.id}", **rbo)
            else:
                evals[c.id] = evaluate_matrix(BlockScores(make(c), (keep.size, N)), labels, metrics,
                                              name=f"{name} {c.id}", query_ids=qids, block_rows=cfg.block_rows, **rbo)
            if c.id == "clean":
                reference = evals[c.id].ranking
            bar.advance(task)
        report = evaluate_conditions(evals, labels, cfg, groups=groups, target=name)
        report.meta.mode = name
        report.meta.dataset = ds.name
        report.meta.n_dropped_queries = int(len(ds.queries) - keep.size)
        limited_from = getattr(ds, "limited_from", None)
        if limited_from is not None:  # run --limit: said in every report, not only in run.json
            report.meta.notes = [f"--limit {len(ds.queries)}: only the first {len(ds.queries)} of the dataset's "
                                 f"{int(limited_from)} queries were evaluated; a quick look, not the dataset's result"]
        run_dir.target_dir(name).mkdir(parents=True, exist_ok=True)
        if name == "MOOR":
            write_json(run_dir.text_share, shares)
        values = per_query_values(evals, metrics)
        for cid, rows in (measured or {}).items():
            values.setdefault(cid, {}).update(rows)
        write_per_query(run_dir.per_query(name), qids, values)
        written[name] = run_dir.report(name)
        drag_stats[name] = evals["clean"].stats.get(DRAG_METRIC)
        evaluated[name] = report
    # coarse-text drag of every fused target against I->I, with a paired CI over the report's resamples
    base = drag_stats.get("I2I")
    if base is not None:
        resampler = QueryResamples(labels.n_queries, cfg.resamples, cfg.seed)
        for name, st in drag_stats.items():
            if name != "I2I" and st is not None:
                evaluated[name].coarse_text_drag = coarse_text_drag_ci(st, base, labels, cfg, joint_label=name,
                                                                       resampler=resampler)
    for name, report in evaluated.items():
        write_report(report, written[name])
    return written


def _remove_other_targets(run_dir: RunDir, targets: list[str]) -> list[str]:
    """Remove the target folders (a mode, MOOR, ``fusion/<name>``) an earlier run left in ``run_dir`` that
    this run does not write (another ``--modes``): they are the run's own outputs, and the folder must
    hold exactly the targets its run.json lists.  Returns the targets removed."""
    gone = [t for t in run_dir.targets() if t not in targets]
    remove_stale([run_dir.target_dir(t) for t in gone], [])
    return gone


def check_group_by(ds: Any, group_by: str | None) -> None:
    """``group_by`` must be a field some query has: checked when the dataset is loaded, not after the
    whole run was encoded."""
    if group_by is not None and not any(group_by in (q.tags or {}) for q in ds.queries):
        fields = sorted({k for q in ds.queries for k in (q.tags or {})})
        raise ConfigError(f"no query has the field {group_by!r} (fields: {', '.join(fields) or 'none'})",
                          param="group_by")


def _tag_groups(ds: Any, keep: np.ndarray, group_by: str | None) -> dict[str, np.ndarray] | None:
    if group_by is None:
        return None
    rows: dict[str, list[int]] = {}
    for r, i in enumerate(keep):
        value = (ds.queries[i].tags or {}).get(group_by)
        if value is not None:
            rows.setdefault(str(value), []).append(r)
    if not rows:
        fields = sorted({k for q in ds.queries for k in (q.tags or {})})
        raise ConfigError(f"no query has the field {group_by!r} (fields: {', '.join(fields) or 'none'})")
    return {k: np.asarray(v, dtype=np.int64) for k, v in sorted(rows.items())}
