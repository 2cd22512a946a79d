"""Numbers the report derives from the evaluate reports (and per-query values when present).

Everything here is a mean of numbers already in the reports, except the confidence intervals of
aggregates (a primitive's mean Δ, MOOR − fixed fusion, image vs text corruptions, drag of modes
other than IT→IT): those need per-query values and use a paired bootstrap over queries, seeded with
the run's seed (:func:`snapbench.evaluate.bootstrap_counts`, key ``report.<what>``) and at most
:data:`MAX_RESAMPLES` resamples, so a report stays quick on large runs.  Queries that do not count
(a NaN per-query value: zero-GT queries in ranking metrics) are left out before resampling.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..core.conditions import IMAGE_PRIMITIVES, PRIMITIVE_OF, parse_condition
from ..core.records import PerQuery, Report
from ..evaluate import bootstrap_counts, percentile_ci
from ..store.rundir import RunData
from .tables import image_id

__all__ = [
    "MAX_RESAMPLES",
    "boot_params",
    "image_vs_text",
    "mode_drags",
    "moor_gain",
    "moor_mean_gain_ci",
    "paired_mean_ci",
    "primitive_severity",
    "severity_means",
    "text_share_curve",
]

MAX_RESAMPLES = 2000


def _delta(report: Report, cond: str, metric: str) -> float | None:
    pr = report.paired.get(cond, {}).get(metric)
    return None if pr is None else pr.delta


def paired_mean_ci(
    a: Sequence[np.ndarray], b: Sequence[np.ndarray], *, seed: int, resamples: int, level: float = 0.95, key: str = "",
) -> tuple[float, float] | None:
    """CI of mean_q(mean_i a_i[q] − mean_j b_j[q]): the per-query difference of two averages of
    per-query values (each list averages conditions), bootstrapped over queries.  Queries with a NaN
    anywhere (zero-GT exclusions) are dropped.  None when fewer than two queries remain."""
    if not a or not b:
        return None
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
    seed, resamples, level = boot_params(report)
    out: dict[str, dict[int, dict]] = {}
    sevs = sorted({parse_condition(c).severity for c in report.conditions if parse_condition(c).kind == "image"})
    for prim, ops in IMAGE_PRIMITIVES.items():
        for s in sevs:
            deltas = {op: _delta(report, image_id(op, s), metric) for op in ops}
            deltas = {op: d for op, d in deltas.items() if d is not None}
            if not deltas:
                continue
            ci = None
            clean = _pq_values(pq, "clean", metric)
            vals = [_pq_values(pq, image_id(op, s), metric) for op in deltas]
            if clean is not None and all(v is not None for v in vals):
                ci = paired_mean_ci(vals, [clean], seed=seed, resamples=resamples, level=level, key=f"{prim}.s{s}")
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
    seed, resamples, level = boot_params(report)
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
        ci = None
        if all(v is not None for v in va + vb):
            ci = paired_mean_ci(vb, va, seed=seed, resamples=resamples, level=level, key=f"severity.s{a}.s{b}")
        steps.append({"from": a, "to": b, "difference": db - da, "ci": ci})
    return steps


def primitive_difference_ci(report: Report, metric: str, pq: PerQuery | None, severity: int,
                            first: str, second: str) -> tuple[float, float] | None:
    """CI of (mean Δ over ``first``'s operators) − (over ``second``'s) at ``severity``, per query."""
    if pq is None:
        return None
    vals = {prim: [_pq_values(pq, image_id(op, severity), metric) for op in IMAGE_PRIMITIVES[prim]
                   if _delta(report, image_id(op, severity), metric) is not None] for prim in (first, second)}
    if not vals[first] or not vals[second] or any(v is None for v in vals[first] + vals[second]):
        return None
    seed, resamples, level = boot_params(report)
    return paired_mean_ci(vals[first], vals[second], seed=seed, resamples=resamples, level=level,
                          key=f"primitives.s{severity}.{first}.{second}")


def image_vs_text(report: Report, metric: str, pq: PerQuery | None = None) -> tuple[float, float] | None:
    """CI of (mean Δ over image conditions) − (mean Δ over text conditions): negative = image
    corruptions hurt more.  Needs per-query values of every image and text condition."""
    if pq is None:
        return None
    kinds = {c: parse_condition(c).kind for c in report.paired}
    img = [_pq_values(pq, c, metric) for c, k in kinds.items() if k == "image"]
    txt = [_pq_values(pq, c, metric) for c, k in kinds.items() if k == "text"]
    if not img or not txt or any(v is None for v in img + txt):
        return None
    seed, resamples, level = boot_params(report)
    return paired_mean_ci(img, txt, seed=seed, resamples=resamples, level=level, key="image_vs_text")


def mode_drags(data: RunData, metric: str = "hit@1") -> dict[str, dict]:
    """Clean ``metric`` of each mode minus I→I's (coarse-text drag for IT→IT).  ``ci`` is the
    report's own interval for IT→IT (its ``coarse_text_drag``), a per-query bootstrap when both
    modes have per-query values, else None."""
    out: dict[str, dict] = {}
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
        ci = None
        pa, pb = data.per_query.get(mode), data.per_query.get("I2I")
        a, b = _pq_values(pa, "clean", metric), _pq_values(pb, "clean", metric)
        if a is not None and b is not None and pa.query_ids == pb.query_ids:  # type: ignore[union-attr]
            seed, resamples, level = boot_params(rep)
            ci = paired_mean_ci([a], [b], seed=seed, resamples=resamples, level=level, key=f"drag.{mode}")
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
    seed, resamples, level = boot_params(moor)
    out = {}
    for cond in moor.conditions:
        a, b = moor.value(cond, metric), other.value(cond, metric)
        if a is None or b is None:
            continue
        ci = None
        if same_q:
            x, y = _pq_values(pm, cond, metric), _pq_values(po, cond, metric)
            if x is not None and y is not None:
                ci = paired_mean_ci([x], [y], seed=seed, resamples=resamples, level=level, key=f"moor.{cond}")
        out[cond] = {"value": a - b, "ci": ci}
    return out


def moor_mean_gain_ci(data: RunData, metric: str = "hit@1", against: str = "IT2IT") -> tuple[float, float] | None:
    """CI of MOOR's mean gain over all conditions (per-query values of both, same queries)."""
    moor, pm, po = data.reports.get("MOOR"), data.per_query.get("MOOR"), data.per_query.get(against)
    other = data.target_report(against)
    if moor is None or other is None or pm is None or po is None or pm.query_ids != po.query_ids:
        return None
    conds = [c for c in moor.conditions if c in other.conditions]
    a, b = [pm.array(c, metric) for c in conds], [po.array(c, metric) for c in conds]
    if not conds or any(v is None for v in a + b):
        return None
    seed, resamples, level = boot_params(moor)
    return paired_mean_ci(a, b, seed=seed, resamples=resamples, level=level, key="moor.mean")


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
