"""Scores per row block for every mode, MOOR and the baselines, evaluated into one report each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from ..atomic import write_text_atomic
from ..conditions import Condition
from ..errors import ConfigError, InputError
from ..layout import RunDir
from ..modes import MODES as MODE_WEIGHTS
from ..modes import PATH_SIDES
from ..vectors import l2_normalize
from .gallery import ShardedArray
from .options import RunOptions
from .plan import image_source, text_source

# ------------------------------------------------------------------------------------------------
# scores per row block (the evaluator slices them; nothing Q x N is held)
# ------------------------------------------------------------------------------------------------


class BlockScores:
    """A Q x N score matrix computed on demand for row slices: ``fn(r0, r1) -> (r1 - r0) x N``."""

    def __init__(self, fn: Callable[[int, int], np.ndarray], shape: tuple[int, int]):
        self.fn, self.shape = fn, shape

    def __getitem__(self, rows: slice) -> np.ndarray:
        r0, r1, step = rows.indices(self.shape[0])
        if step != 1:
            raise ValueError("BlockScores supports contiguous row slices only")
        return self.fn(r0, r1)


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

    sharded = any(isinstance(arr, ShardedArray) for arr in gallery.values())
    g_norm = {} if sharded else {side: l2_normalize(arr) for side, arr in gallery.items()}
    q_norm: dict[tuple[str, str], np.ndarray] = {}

    def qside(side: str, source: str) -> np.ndarray:
        if (side, source) not in q_norm:
            q_norm[(side, source)] = l2_normalize(np.asarray(q_emb[(side, source)])[keep])
        return q_norm[(side, source)]

    def query_of(cond: Condition, path: str) -> np.ndarray:
        qs = PATH_SIDES[path][0]
        return qside(qs, image_source(cond) if qs == "image" else text_source(cond))

    def path_block(cond: Condition, path: str, r0: int, r1: int) -> np.ndarray:
        return query_of(cond, path)[r0:r1] @ g_norm[PATH_SIDES[path][1]].T

    def mode_block(mode: str, cond: Condition) -> Callable[[int, int], np.ndarray]:
        weights = MODE_WEIGHTS[mode]

        def fn(r0: int, r1: int) -> np.ndarray:
            return sum(w * path_block(cond, p, r0, r1) for p, w in weights.items())

        return fn

    def mode_chunks(mode: str, cond: Condition) -> Callable[[], Iterator[tuple[int, np.ndarray]]]:
        """Sharded gallery: all queries against one shard at a time (never Q x N)."""
        weights = MODE_WEIGHTS[mode]
        sides = sorted({PATH_SIDES[p][1] for p in weights})

        def chunks() -> Iterator[tuple[int, np.ndarray]]:
            for parts in zip(*(gallery[side].shards() for side in sides)):
                off = parts[0][0]
                shard = {side: l2_normalize(arr) for side, (_, arr) in zip(sides, parts)}
                yield off, sum(w * (query_of(cond, p) @ shard[PATH_SIDES[p][1]].T) for p, w in weights.items())

        return chunks

    written: dict[str, Path] = {}
    evaluated: dict[str, dict[str, Any]] = {}  # target name -> its report
    # each target maps a condition to its scores: row blocks (a gallery in memory) or gallery shards
    targets: list[tuple[str, Callable[[Condition], Any]]] = [
        (m, (lambda mm: (lambda c: mode_chunks(mm, c)) if sharded else (lambda c: mode_block(mm, c)))(m)) for m in modes
    ]
    index = None
    shares: dict[str, float] = {}
    if moor_ok:
        from ..fusion import MOORIndex

        if sharded:
            def gallery_pairs() -> Iterator[tuple[np.ndarray, np.ndarray]]:
                for (_, gi), (_, gt) in zip(gallery["image"].shards(), gallery["text"].shards()):
                    yield np.asarray(gi), np.asarray(gt)

            index = MOORIndex(keep_gallery=False)  # streams the shards: the whitened gallery is never held
            index.fit(gallery_pairs)
        else:
            index = MOORIndex().fit(gallery["image"], gallery["text"])

        def moor_fn(cond: Condition) -> Any:
            qi = np.asarray(q_emb[("image", image_source(cond))])[keep]
            qt = np.asarray(q_emb[("text", text_source(cond))])[keep]
            if sharded:
                u, res = index.query_vectors(qi, qt)
                shares[cond.id] = float(np.mean(res.text_share))
                return lambda: index.score_chunks(u)
            shares[cond.id] = float(np.mean(index.explain(qi, qt).text_share))
            return lambda r0, r1: index.scores(qi[r0:r1], qt[r0:r1])

        targets.append(("MOOR", moor_fn))
        if sharded:
            say("fixed-fusion baselines (comb_sum, rrf) are not computed on a sharded gallery: they normalise whole rows")
        else:
            from ..fusion import comb_sum, rrf

            for name, fuse in (("comb_sum", comb_sum), ("rrf", rrf)):
                def base_fn(cond: Condition, fuse=fuse) -> Callable[[int, int], np.ndarray]:
                    return lambda r0, r1: fuse([path_block(cond, p, r0, r1) for p in PATH_SIDES])

                targets.append((f"fusion/{name}", base_fn))

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
