"""Numbers the report derives from the evaluate reports (and per-query values when present).

Everything here is a mean of numbers already in the reports, except the confidence intervals of
aggregates (a primitive's mean Δ, MOOR − fixed fusion, image vs text corruptions, drag of modes
other than IT→IT): those need per-query values and use a paired bootstrap over queries, seeded with
the run's seed (:func:`snapbench.evaluate.bootstrap_counts`, key ``report.<what>``) and at most
:data:`MAX_RESAMPLES` resamples, so a report stays quick on large runs.  Queries that do not count
(a NaN per-query value: zero-GT queries in ranking metrics) are left out before resampling.

The headline numbers of a run, per target: what ``snapbench run`` prints when it is done.

One record per target (each mode, MOOR, each fixed-fusion baseline), computed once from the run
folder's reports and per-query values and written to ``DIR/headline.json``
(:attr:`snapbench.store.RunDir.headline`); the table on the terminal is read from that file, so
what a user sees is what a script reads.  Every number is either a value of a report.json or a mean
of such values.  A target's mean Δ, worst and mildest operator are over the corrupted conditions it
reads (:func:`snapbench.core.targets.target_reads`: the condition corrupts a side of the query the
mode reads; a joint condition counts when either part is read; MOOR and fusion read both sides),
``n_conditions`` of them: an image condition cannot move T→T and would only dilute its mean.  The CI
of that mean is the run's own paired bootstrap (the draw of its report.json, key "", all its
resamples, over the queries that count) of the mean of the per-condition resampled Δ -- the number
``compare`` gives the same run for ``group:all``, same draws, same conditions.  MOOR − best fixed
fusion uses :mod:`.aggregate`'s capped bootstrap (the run's seed).

``metric`` is hit@1 when the run has labels, else the label-free primary overlap@10 (the first
``overlap@k`` of the reports), with ``extra`` = rbo and flip@1 (label-free runs only): the same
mean / CI per target under ``targets[].extra[metric]``.

``headline.json``::

    kind "snapbench headline", metric, labelled, extra [metrics], primary_target, n_queries, ci_level,
    limit        {"queries", "of"} when the run saw only the first queries (run --limit), else null
    targets      [{target, clean {metric: value}, mean_delta {value, ci, n_conditions}, extra {metric: mean_delta},
                   worst {operator, delta}, mildest {operator, delta} (operator null: all equal), additivity {delta, ci} | null,
                   moor_vs_fixed {baseline, gain, ci, n_conditions} | null (MOOR only)}]

Values are fractions (0.5 = 50%), differences fractions too (the table shows points).  An operator
is an image operator over its severities (``img/<op>``) or a text operator (``txt/<op>``); joint
conditions belong to no single operator (their effect is δ).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.conditions import IMAGE_PRIMITIVES, PRIMITIVE_OF, parse_condition
from ..core.records import PerQuery, Report
from ..core.targets import FUSION_PREFIX
from ..core.userfiles import read_json
from ..evaluate import bootstrap_counts, percentile_ci
from ..evaluate.drag import drag_applies
from ..evaluate.metrics import metric_sign
from ..evaluate.stability import overlap_metric
from ..store import RunDir
from ..store.atomic import write_json
from ..store.rundir import RunData, load_run_dir
from .tables import corrupted_deltas, image_id, report_labelled, severities

__all__ = ['MAX_RESAMPLES', 'boot_params', 'image_vs_text', 'mode_drags', 'moor_gain', 'moor_mean_gain_ci', 'primitive_severity', 'severity_means', 'text_share_curve', 'headline_metric', 'write_headline', 'read_headline']

MAX_RESAMPLES = 2000


def _delta(report: Report, cond: str, metric: str) -> float | None:
    pr = report.paired.get(cond, {}).get(metric)
    return None if pr is None else pr.delta


def _paired_mean_ci(a: Sequence[np.ndarray | None], b: Sequence[np.ndarray | None], report: Report,
                    key: str) -> tuple[float, float] | None:
    """CI of mean_q(mean_i a_i[q] − mean_j b_j[q]): the per-query difference of two averages of
    per-query values (each list averages conditions), bootstrapped over queries with ``report``'s
    settings (:func:`boot_params`).  Queries with a NaN anywhere (zero-GT exclusions) are dropped.
    None when a list is empty or lacks a condition's values (None), or fewer than two queries remain."""
    if not a or not b or any(v is None for v in [*a, *b]):
        return None
    seed, resamples, level = boot_params(report)
    x = np.mean(np.stack([np.asarray(v, float) for v in a]), axis=0) - np.mean(np.stack([np.asarray(v, float) for v in b]), axis=0)
    x = x[np.isfinite(x)]
    if x.size < 2:
        return None
    counts = bootstrap_counts(x.size, min(int(resamples), MAX_RESAMPLES), int(seed), key=f"report.{key}")
    boot = counts @ x / x.size
    lo, hi = percentile_ci(boot, level)
    return float(lo), float(hi)


def boot_params(report: Report) -> tuple[int, int, float]:
    """``(seed, resamples, CI level)`` of ``report``: the report's own intervals use its settings
    (resamples at most :data:`MAX_RESAMPLES`, which the callers apply); reading the report checked them."""
    m = report.meta
    return int(m.seed), int(m.resamples), float(m.ci_level)


def _pq_values(pq: PerQuery | None, cond: str, metric: str) -> np.ndarray | None:
    return None if pq is None else pq.array(cond, metric)


def primitive_severity(report: Report, metric: str, pq: PerQuery | None = None) -> dict[str, dict[int, dict]]:
    """``{primitive: {severity: {"mean": mean Δ over its operators, "ops": {op: Δ}, "ci": (lo, hi) or None}}}``.

    The CI needs per-query values of clean and of every operator of the primitive at that severity."""
    out: dict[str, dict[int, dict]] = {}
    for prim, ops in IMAGE_PRIMITIVES.items():
        for s in severities(report):
            deltas = {op: _delta(report, image_id(op, s), metric) for op in ops}
            deltas = {op: d for op, d in deltas.items() if d is not None}
            if not deltas:
                continue
            vals = [_pq_values(pq, image_id(op, s), metric) for op in deltas]
            ci = _paired_mean_ci(vals, [_pq_values(pq, "clean", metric)], report, f"{prim}.s{s}")
            out.setdefault(prim, {})[s] = {"mean": float(np.mean(list(deltas.values()))), "ops": deltas, "ci": ci}
    return out


def severity_means(report: Report, metric: str) -> dict[int, float]:
    """Mean Δ over all image operators per severity."""
    by: dict[int, list[float]] = {}
    for c in report.paired:
        pc = parse_condition(c)
        d = _delta(report, c, metric)
        if pc.kind == "image" and d is not None:
            by.setdefault(pc.severity, []).append(d)
    return {s: float(np.mean(v)) for s, v in sorted(by.items())}


def severity_steps(report: Report, metric: str, pq: PerQuery | None = None) -> list[dict]:
    """Each step between consecutive severities: ``{"from", "to", "difference", "ci"}``, where
    difference = (mean Δ over image operators at ``to``) − (at ``from``) (negative: the drop grows)
    and ``ci`` its per-query bootstrap interval (None without per-query values of every operator
    present at both severities)."""
    by: dict[int, dict[str, str]] = {}
    for c in report.paired:
        pc = parse_condition(c)
        if pc.kind == "image" and _delta(report, c, metric) is not None:
            by.setdefault(pc.severity, {})[pc.image_operator] = c
    sevs = sorted(by)
    steps = []
    for a, b in zip(sevs, sevs[1:]):
        ops = sorted(set(by[a]) & set(by[b]))
        if not ops:
            continue
        da = float(np.mean([_delta(report, by[a][op], metric) for op in ops]))
        db = float(np.mean([_delta(report, by[b][op], metric) for op in ops]))
        va = [_pq_values(pq, by[a][op], metric) for op in ops]
        vb = [_pq_values(pq, by[b][op], metric) for op in ops]
        ci = _paired_mean_ci(vb, va, report, f"severity.s{a}.s{b}")
        steps.append({"from": a, "to": b, "difference": db - da, "ci": ci})
    return steps


def primitive_difference_ci(report: Report, metric: str, pq: PerQuery | None, severity: int,
                            first: str, second: str) -> tuple[float, float] | None:
    """CI of (mean Δ over ``first``'s operators) − (over ``second``'s) at ``severity``, per query."""
    if pq is None:
        return None
    vals = {prim: [_pq_values(pq, image_id(op, severity), metric) for op in IMAGE_PRIMITIVES[prim]
                   if _delta(report, image_id(op, severity), metric) is not None] for prim in (first, second)}
    return _paired_mean_ci(vals[first], vals[second], report, f"primitives.s{severity}.{first}.{second}")


def image_vs_text(report: Report, metric: str, pq: PerQuery | None = None) -> tuple[float, float] | None:
    """CI of (mean Δ over image conditions) − (mean Δ over text conditions): negative = image
    corruptions hurt more.  Needs per-query values of every image and text condition."""
    if pq is None:
        return None
    kinds = {c: parse_condition(c).kind for c in report.paired}
    img = [_pq_values(pq, c, metric) for c, k in kinds.items() if k == "image"]
    txt = [_pq_values(pq, c, metric) for c, k in kinds.items() if k == "text"]
    return _paired_mean_ci(img, txt, report, "image_vs_text")


def mode_drags(data: RunData, metric: str = "hit@1") -> dict[str, dict]:
    """Clean ``metric`` of each mode minus I→I's (coarse-text drag for IT→IT).  ``ci`` is the
    report's own interval for IT→IT (its ``coarse_text_drag``), a per-query bootstrap when both
    modes have per-query values, else None.  Nothing for a label-free measure
    (:func:`~snapbench.evaluate.drag.drag_applies`: its clean value is the same in every mode)."""
    out: dict[str, dict] = {}
    if not drag_applies(metric):
        return out
    base = data.reports.get("I2I")
    base_v = None if base is None else base.value("clean", metric)
    for mode, rep in data.reports.items():
        if mode == "I2I":
            continue
        v = rep.value("clean", metric)
        own = rep.coarse_text_drag if mode == "IT2IT" else None
        if own and own.metric == metric and own.value is not None:
            out[mode] = {"value": own.value, "ci": own.ci, "source": "report"}
            continue
        if base_v is None or v is None:
            continue
        pa, pb = data.per_query.get(mode), data.per_query.get("I2I")
        same_q = pa is not None and pb is not None and pa.query_ids == pb.query_ids
        a, b = _pq_values(pa, "clean", metric), _pq_values(pb, "clean", metric)
        ci = _paired_mean_ci([a], [b], rep, f"drag.{mode}") if same_q else None
        out[mode] = {"value": v - base_v, "ci": ci, "source": "clean values"}
    return out


def moor_gain(data: RunData, metric: str = "hit@1", against: str = "IT2IT") -> dict[str, dict]:
    """Per condition: MOOR's ``metric`` minus the fixed fusion's (IT→IT by default, or a
    ``fusion/<name>`` baseline), with a per-query bootstrap CI when both have per-query values."""
    moor, other = data.reports.get("MOOR"), data.target_report(against)
    if moor is None or other is None:
        return {}
    pm, po = data.per_query.get("MOOR"), data.per_query.get(against)
    same_q = pm is not None and po is not None and pm.query_ids == po.query_ids
    out = {}
    for cond in moor.conditions:
        a, b = moor.value(cond, metric), other.value(cond, metric)
        if a is None or b is None:
            continue
        x, y = _pq_values(pm, cond, metric), _pq_values(po, cond, metric)
        ci = _paired_mean_ci([x], [y], moor, f"moor.{cond}") if same_q else None
        out[cond] = {"value": a - b, "ci": ci}
    return out


def moor_mean_gain_ci(data: RunData, metric: str = "hit@1", against: str = "IT2IT") -> tuple[float, float] | None:
    """CI of MOOR's mean gain over all conditions (per-query values of both, same queries)."""
    moor, pm, po = data.reports.get("MOOR"), data.per_query.get("MOOR"), data.per_query.get(against)
    other = data.target_report(against)
    if moor is None or other is None or pm is None or po is None or pm.query_ids != po.query_ids:
        return None
    conds = [c for c in moor.conditions if c in other.conditions]
    return _paired_mean_ci([pm.array(c, metric) for c in conds], [po.array(c, metric) for c in conds], moor, "moor.mean")


def text_share_curve(share: Mapping[str, float]) -> dict:
    """``{"clean": v, "by_severity": {s: mean over image operators}, "by_primitive": {prim: {s: mean}},
    "text": mean over text conditions, "joint": {s: mean}}`` from a text_share.json mapping."""
    out: dict = {"clean": share.get("clean"), "by_severity": {}, "by_primitive": {}, "text": None, "joint": {}}
    sev: dict[int, list[float]] = {}
    prim: dict[str, dict[int, list[float]]] = {}
    txt, joint = [], {}
    for cid, v in share.items():
        try:
            c = parse_condition(cid)
        except ValueError:
            continue
        if c.kind == "image":
            sev.setdefault(c.severity, []).append(v)
            prim.setdefault(PRIMITIVE_OF.get(c.image_operator, "other"), {}).setdefault(c.severity, []).append(v)
        elif c.kind == "text":
            txt.append(v)
        elif c.kind == "joint":
            joint.setdefault(c.severity, []).append(v)
    out["by_severity"] = {s: float(np.mean(v)) for s, v in sorted(sev.items())}
    out["by_primitive"] = {p: {s: float(np.mean(v)) for s, v in sorted(d.items())} for p, d in prim.items()}
    out["text"] = float(np.mean(txt)) if txt else None
    out["joint"] = {s: float(np.mean(v)) for s, v in sorted(joint.items())}
    return out


_HEADLINE_KIND = "snapbench headline"
#: The clean values shown: SnapBench's R@1 and the retrieval benchmarks' usual main score.
_CLEAN_METRICS: tuple[str, ...] = ("hit@1", "ndcg@10")


def _operator(cond: str) -> str | None:
    pc = parse_condition(cond)
    if pc.kind == "image":
        return f"img/{pc.image_operator}"
    if pc.kind == "text":
        return f"txt/{pc.text_operator}"
    return None


def _ci(ci: Any) -> list[float] | None:
    if ci is None or ci[0] is None or ci[1] is None or not (np.isfinite(ci[0]) and np.isfinite(ci[1])):
        return None
    return [float(ci[0]), float(ci[1])]


def _run_draw_mean_ci(clean: np.ndarray, vals: Sequence[np.ndarray], report: Report) -> list[float] | None:
    """CI of mean_c(value(c) − value(clean)) with the run's own draw: the counts of the report's paired
    bootstrap (key "", all its resamples) over the queries that count (finite everywhere); each
    condition's resampled value is Σ w·x / n and the resampled Δ are averaged in the conditions'
    order -- the arithmetic of ``compare``'s ``group:all``, so both print the same interval."""
    x = np.stack([np.asarray(clean, float), *(np.asarray(v, float) for v in vals)])
    x = x[:, np.isfinite(x).all(axis=0)]
    n = x.shape[1]
    if n < 2:
        return None
    seed, resamples, level = boot_params(report)
    counts = bootstrap_counts(n, int(resamples), int(seed))
    boot = x @ counts.T / n  # (1 + C, B)
    acc = boot[1] - boot[0]
    for row in boot[2:]:
        acc += row - boot[0]
    acc /= len(vals)
    lo, hi = percentile_ci(acc, level)
    return _ci((float(lo), float(hi)))


def _mean_delta(data: RunData, target: str, report: Report, metric: str) -> dict[str, Any] | None:
    deltas = corrupted_deltas(report, metric, target)
    if not deltas:
        return None
    pq = data.per_query.get(target)
    clean = _pq_values(pq, "clean", metric)
    vals = [_pq_values(pq, c, metric) for c in deltas]
    ci = None
    if clean is not None and all(v is not None for v in vals):
        ci = _run_draw_mean_ci(clean, vals, report)  # type: ignore[arg-type]
    return {"value": float(np.mean(list(deltas.values()))), "ci": ci, "n_conditions": len(deltas)}


def _extremes(report: Report, metric: str, target: str | None = None) -> tuple[dict | None, dict | None]:
    """The operator with the lowest mean Δ (worst) and the highest (mildest) among the conditions
    ``target`` reads (the other way round where higher is worse); ties: the first listed."""
    by: dict[str, list[float]] = {}
    for c, d in corrupted_deltas(report, metric, target).items():
        op = _operator(c)
        if op is not None:
            by.setdefault(op, []).append(d)
    if not by:
        return None, None
    means = {op: float(np.mean(v)) for op, v in by.items()}
    sign = metric_sign(metric)  # worst = largest drop; the drop of a higher-is-worse metric (flip@k) is its rise
    worst = min(means, key=lambda op: sign * means[op])
    mild = max(means, key=lambda op: sign * means[op])
    if means[worst] == means[mild]:  # no order to state: every operator has the same mean Δ
        return {"operator": None, "delta": means[worst]}, {"operator": None, "delta": means[mild]}
    return {"operator": worst, "delta": means[worst]}, {"operator": mild, "delta": means[mild]}


def _additivity(report: Report, metric: str) -> dict[str, Any] | None:
    summ = (report.additivity_summary.mean or {}).get(metric)
    if summ is None or summ.delta is None or not np.isfinite(summ.delta):
        return None
    return {"delta": float(summ.delta), "ci": _ci(summ.ci)}


def _mean_value(report: Report, conds: list[str], metric: str) -> float | None:
    vals = [report.value(c, metric) for c in conds]
    vals = [v for v in vals if v is not None and np.isfinite(v)]
    return float(np.mean(vals)) if vals else None


def _moor_vs_fixed(data: RunData, metric: str) -> dict[str, Any] | None:
    """MOOR minus the best fixed fusion (IT→IT and every fusion baseline; best = the highest mean
    ``metric`` over the conditions it shares with MOOR), averaged over those conditions."""
    moor = data.reports.get("MOOR")
    if moor is None:
        return None
    fixed = (["IT2IT"] if "IT2IT" in data.reports else []) + [FUSION_PREFIX + n for n in sorted(data.fusion)]
    best, best_mean, best_conds = None, -np.inf, []
    for t in fixed:
        rep = data.target_report(t)
        conds = [c for c in moor.conditions if rep is not None and c in rep.conditions
                 and moor.value(c, metric) is not None and rep.value(c, metric) is not None]
        m = _mean_value(rep, conds, metric) if rep is not None and conds else None
        if m is not None and m > best_mean:
            best, best_mean, best_conds = t, m, conds
    if best is None:
        return None
    moor_mean = _mean_value(moor, best_conds, metric)
    if moor_mean is None:
        return None
    ci = moor_mean_gain_ci(data, metric, against=best)
    return {"baseline": best, "gain": moor_mean - best_mean, "ci": _ci(ci), "n_conditions": len(best_conds)}


def headline_metric(metrics: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """``(primary, extra)`` of a run whose reports hold ``metrics``: hit@1 when present (labels), else the
    label-free overlap measure (:func:`snapbench.evaluate.stability.overlap_metric`) with rbo and flip@1 as extras."""
    if "hit@1" in metrics or not metrics:
        return "hit@1", ()
    primary = overlap_metric(list(metrics)) or metrics[0]
    return primary, tuple(m for m in ("rbo", "flip@1") if m in metrics and m != primary)


def _run_headline(data: RunData, metric: str | None = None) -> dict[str, Any]:
    """The headline record of a loaded run (see the module docstring)."""
    targets = [*data.modes, *(FUSION_PREFIX + n for n in sorted(data.fusion))]
    first = data.first_report
    labelled = report_labelled(first)
    extra: tuple[str, ...] = ()
    if metric is None:
        metric, extra = headline_metric(first.metrics)
    rows = []
    for t in targets:
        rep = data.target_report(t)
        if rep is None:
            continue
        worst, mild = _extremes(rep, metric, t)
        rows.append({
            "target": t,
            "clean": {m: rep.value("clean", m) for m in dict.fromkeys((metric, *_CLEAN_METRICS)) if m in rep.metrics},
            "mean_delta": _mean_delta(data, t, rep, metric),
            "extra": {m: _mean_delta(data, t, rep, m) for m in extra if m in rep.metrics},
            "worst": worst,
            "mildest": mild,
            "additivity": _additivity(rep, metric),
            "moor_vs_fixed": _moor_vs_fixed(data, metric) if t == "MOOR" else None,
        })
    limit = data.run.get("limit")
    return {"kind": _HEADLINE_KIND, "metric": metric, "labelled": labelled, "extra": list(extra),
            "primary_target": data.primary_mode,
            "n_queries": first.n_queries, "n_counted": first.n_queries - first.n_excluded_zero_gt,
            "ci_level": float(first.meta.ci_level),
            "limit": limit if isinstance(limit, dict) else None, "targets": rows}


def write_headline(run_dir: str | os.PathLike, metric: str | None = None) -> Path:
    """Compute the headline of the run in ``run_dir`` and write ``run_dir/headline.json`` (atomically);
    ``metric`` defaults to :func:`headline_metric` of the reports."""
    rd = RunDir(run_dir)
    write_json(rd.headline, _run_headline(load_run_dir(rd.root), metric))
    return rd.headline


def read_headline(run_dir: str | os.PathLike) -> dict[str, Any]:
    """``run_dir/headline.json`` as written by :func:`write_headline`."""
    return read_json(RunDir(run_dir).headline, what="headline")
