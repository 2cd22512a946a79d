"""Stage 6, evaluate: every target's scores (:mod:`.score`) evaluated into one report each, written to the
run folder (:class:`snapbench.layout.RunDir`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..atomic import write_text_atomic
from ..conditions import Condition
from ..errors import ConfigError, InputError
from ..layout import RunDir
from .options import RunOptions
from .score import BlockScores, score_targets


def evaluate_all(ds, out: Path, conds: list[Condition], modes: list[str], moor_ok: bool, gallery, q_emb, keep: np.ndarray,
                  opts: RunOptions, bar: Any, say: Callable[[str], None]) -> dict[str, Path]:
    """Evaluate every mode, MOOR and the baselines on the kept queries; write the reports."""
    from ..evaluate import (
        EvaluationConfig,
        evaluate_conditions,
        evaluate_matrix,
        write_report,
    )
    from ..evaluate.metrics import Labels
    from ..evaluate.streaming import evaluate_column_chunks
    from ..report import write_per_query

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
    cfg = EvaluationConfig(ks=tuple(opts.ks), resamples=opts.resamples, seed=opts.seed)
    metrics = cfg.metric_list()
    groups = tag_groups(ds, keep, opts.group_by)
    N = len(gids)

    scores = score_targets(gallery, q_emb, keep, modes, moor_ok, say)
    targets, sharded, shares = scores.targets, scores.sharded, scores.shares
    written: dict[str, Path] = {}
    evaluated: dict[str, dict[str, Any]] = {}  # target name -> its report

    task = bar.add("evaluate", len(targets) * len(conds))
    for name, make in targets:
        evals = {}
        for c in conds:
            if sharded:
                evals[c.id] = evaluate_column_chunks(make(c), labels, metrics, name=f"{name} {c.id}")
            else:
                evals[c.id] = evaluate_matrix(BlockScores(make(c), (keep.size, N)), labels, metrics,
                                              name=f"{name} {c.id}", query_ids=qids, block_rows=cfg.block_rows)
            bar.advance(task)
        report = evaluate_conditions(evals, labels, cfg, groups=groups)
        report["meta"].update({"mode": name, "dataset": ds.name, "n_dropped_queries": int(len(ds.queries) - keep.size)})
        rundir = RunDir(out)
        rundir.target_dir(name).mkdir(parents=True, exist_ok=True)
        if name == "MOOR":
            write_text_atomic(rundir.text_share, json.dumps(shares, indent=2) + "\n")
        write_per_query(rundir.per_query(name), qids, per_query_values(evals, metrics))
        written[name] = rundir.report(name)
        report["_drag_stats"] = evals["clean"].stats.get("hit@1")
        evaluated[name] = report
    # coarse-text drag of every fused mode against I->I, with a paired CI over the same resamples
    if "I2I" in evaluated:
        from ..evaluate.paired import bootstrap_counts, bootstrap_values, percentile_ci

        base = evaluated["I2I"]["_drag_stats"]
        counts = bootstrap_counts(labels.n_queries, cfg.resamples, cfg.seed)
        for name, report in evaluated.items():
            st = report["_drag_stats"]
            if name == "I2I" or st is None or base is None:
                continue
            boot = bootstrap_values([base, st], counts)
            lo, hi = percentile_ci(boot[:, 1] - boot[:, 0], cfg.ci)
            report["coarse_text_drag"] = {
                "metric": "hit@1", "value": float(st.value - base.value), "ci": [float(lo), float(hi)],
                "joint": name, "joint_value": float(st.value), "image_value": float(base.value),
            }
    for name, report in evaluated.items():
        report.pop("_drag_stats", None)
        write_report(report, written[name])
    return written


def tag_groups(ds: Any, keep: np.ndarray, group_by: str | None) -> dict[str, np.ndarray] | None:
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


def per_query_values(evals: Mapping[str, Any], metrics: Sequence[str]) -> dict[str, dict[str, np.ndarray]]:
    """{condition: {metric: one value per query}}; NaN where the metric is undefined (a zero-GT query)."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for cond, ev in evals.items():
        out[cond] = {}
        for m in metrics:
            num = np.asarray(ev.stats[m].num, dtype=np.float64)
            den = np.asarray(ev.stats[m].den, dtype=np.float64)
            out[cond][m] = np.divide(num, den, out=np.full(num.shape, np.nan), where=den > 0)
    return out
