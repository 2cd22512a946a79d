"""Numbers the report derives from the evaluate reports (and per-query values when present).

Everything here is a mean of numbers already in the reports, except the confidence intervals of
aggregates (a primitive's mean Δ, MOOR − fixed fusion, drag of modes other than IT→IT): those need
per-query values and use a paired bootstrap over queries, seeded with the run's seed
(:func:`snapbench.evaluate.bootstrap_counts`, key ``report.<what>``) and at most
:data:`MAX_RESAMPLES` resamples, so a report stays quick on large runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..conditions import IMAGE_PRIMITIVES, parse_condition
from ..evaluate import bootstrap_counts, percentile_ci
from .rundir import RunData

__all__ = [
    "MAX_RESAMPLES",
    "mode_drags",
    "moor_gain",
    "paired_mean_ci",
    "primitive_severity",
    "severity_means",
    "text_share_curve",
]

MAX_RESAMPLES = 2000

PerQuery = tuple[list[str], Mapping[str, Mapping[str, np.ndarray]]]


def _delta(report: dict, cond: str, metric: str) -> float | None:
    pr = (report.get("paired", {}).get(cond) or {}).get(metric)
    return None if not pr else pr.get("delta")


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


def _boot_params(report: dict) -> tuple[int, int, float]:
    meta = report.get("meta") or {}
    return int(meta.get("seed") or 0), int(meta.get("resamples") or 1000), float(meta.get("ci_level") or 0.95)


def _pq_values(pq: PerQuery | None, cond: str, metric: str) -> np.ndarray | None:
    if pq is None:
        return None
    v = (pq[1].get(cond) or {}).get(metric)
    return None if v is None else np.asarray(v, float)


def primitive_severity(report: dict, metric: str, pq: PerQuery | None = None) -> dict[str, dict[int, dict]]:
    """``{primitive: {severity: {"mean": mean Δ over its operators, "ops": {op: Δ}, "ci": (lo, hi) or None}}}``.

    The CI needs per-query values of clean and of every operator of the primitive at that severity."""
    seed, resamples, level = _boot_params(report)
    out: dict[str, dict[int, dict]] = {}
    sevs = sorted({parse_condition(c).severity for c in report["conditions"] if parse_condition(c).kind == "image"})
    for prim, ops in IMAGE_PRIMITIVES.items():
        for s in sevs:
            deltas = {op: _delta(report, f"img/{op}/s{s}", metric) for op in ops}
            deltas = {op: d for op, d in deltas.items() if d is not None}
            if not deltas:
                continue
            ci = None
            clean = _pq_values(pq, "clean", metric)
            vals = [_pq_values(pq, f"img/{op}/s{s}", metric) for op in deltas]
            if clean is not None and all(v is not None for v in vals):
                ci = paired_mean_ci(vals, [clean], seed=seed, resamples=resamples, level=level, key=f"{prim}.s{s}")
            out.setdefault(prim, {})[s] = {"mean": float(np.mean(list(deltas.values()))), "ops": deltas, "ci": ci}
    return out


def severity_means(report: dict, metric: str) -> dict[int, float]:
    """Mean Δ over all image operators per severity."""
    by: dict[int, list[float]] = {}
    for c in report.get("paired", {}):
        pc = parse_condition(c)
        d = _delta(report, c, metric)
        if pc.kind == "image" and d is not None:
            by.setdefault(pc.severity, []).append(d)
    return {s: float(np.mean(v)) for s, v in sorted(by.items())}


def mode_drags(data: RunData, metric: str = "hit@1") -> dict[str, dict]:
    """Clean ``metric`` of each mode minus I→I's (coarse-text drag for IT→IT).  ``ci`` is the
    report's own interval for IT→IT (its ``coarse_text_drag``), a per-query bootstrap when both
    modes have per-query values, else None."""
    out: dict[str, dict] = {}
    base = data.reports.get("I2I")
    base_v = None if base is None else base["conditions"]["clean"].get(metric)
    for mode, rep in data.reports.items():
        if mode == "I2I":
            continue
        v = rep["conditions"]["clean"].get(metric)
        own = rep.get("coarse_text_drag") if mode == "IT2IT" else None
        if own and own.get("metric") == metric and own.get("value") is not None:
            out[mode] = {"value": own["value"], "ci": own.get("ci"), "source": "report"}
            continue
        if base_v is None or v is None:
            continue
        ci = None
        a = _pq_values(data.per_query.get(mode), "clean", metric)
        b = _pq_values(data.per_query.get("I2I"), "clean", metric)
        if a is not None and b is not None and a.shape == b.shape and data.per_query[mode][0] == data.per_query["I2I"][0]:
            seed, resamples, level = _boot_params(rep)
            ci = paired_mean_ci([a], [b], seed=seed, resamples=resamples, level=level, key=f"drag.{mode}")
        out[mode] = {"value": v - base_v, "ci": ci, "source": "clean values"}
    return out


def moor_gain(data: RunData, metric: str = "hit@1", against: str = "IT2IT") -> dict[str, dict]:
    """Per condition: MOOR's ``metric`` minus the fixed fusion's (IT→IT by default, or a
    ``fusion/<name>`` baseline), with a per-query bootstrap CI when both have per-query values."""
    moor = data.reports.get("MOOR")
    other = data.reports.get(against) if not against.startswith("fusion/") else data.fusion.get(against[7:])
    if moor is None or other is None:
        return {}
    pm, po = data.per_query.get("MOOR"), data.per_query.get(against)
    same_q = pm is not None and po is not None and pm[0] == po[0]
    seed, resamples, level = _boot_params(moor)
    out = {}
    for cond, vals in moor["conditions"].items():
        a, b = vals.get(metric), (other["conditions"].get(cond) or {}).get(metric)
        if a is None or b is None:
            continue
        ci = None
        if same_q:
            x, y = _pq_values(pm, cond, metric), _pq_values(po, cond, metric)
            if x is not None and y is not None:
                ci = paired_mean_ci([x], [y], seed=seed, resamples=resamples, level=level, key=f"moor.{cond}")
        out[cond] = {"value": a - b, "ci": ci}
    return out


def text_share_curve(share: Mapping[str, float]) -> dict:
    """``{"clean": v, "by_severity": {s: mean over image operators}, "by_primitive": {prim: {s: mean}},
    "text": mean over text conditions, "joint": {s: mean}}`` from a text_share.json mapping."""
    out: dict = {"clean": share.get("clean"), "by_severity": {}, "by_primitive": {}, "text": None, "joint": {}}
    prim_of = {op: p for p, ops in IMAGE_PRIMITIVES.items() for op in ops}
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
            prim.setdefault(prim_of.get(c.image_operator, "other"), {}).setdefault(c.severity, []).append(v)
        elif c.kind == "text":
            txt.append(v)
        elif c.kind == "joint":
            joint.setdefault(c.severity, []).append(v)
    out["by_severity"] = {s: float(np.mean(v)) for s, v in sorted(sev.items())}
    out["by_primitive"] = {p: {s: float(np.mean(v)) for s, v in sorted(d.items())} for p, d in prim.items()}
    out["text"] = float(np.mean(txt)) if txt else None
    out["joint"] = {s: float(np.mean(v)) for s, v in sorted(joint.items())}
    return out
