"""The headline numbers of a run, per target: what ``snapbench run`` prints when it is done.

One record per target (each mode, MOOR, each fixed-fusion baseline), computed once from the run
folder's reports and per-query values and written to ``DIR/headline.json``
(:attr:`snapbench.layout.RunDir.headline`); the table on the terminal is read from that file, so
what a user sees is what a script reads.  Every number is either a value of a report.json or a mean
of such values; the only new intervals (mean Δ over all corrupted conditions, MOOR − best fixed
fusion) are the report's paired bootstrap over queries (:mod:`.aggregate`, the run's seed).

``headline.json``::

    kind "snapbench headline", metric, primary_target, n_queries, ci_level,
    limit        {"queries", "of"} when the run saw only the first queries (run --limit), else null
    targets      [{target, clean {metric: value}, mean_delta {value, ci, n_conditions},
                   worst {operator, delta}, mildest {operator, delta} (operator null: all equal), additivity {delta, ci} | null,
                   moor_vs_fixed {baseline, gain, ci, n_conditions} | null (MOOR only)}]

Values are fractions (0.5 = 50%), differences fractions too (the table shows points).  An operator
is an image operator over its severities (``img/<op>``) or a text operator (``txt/<op>``); joint
conditions belong to no single operator (their effect is δ).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..conditions import parse_condition
from ..jsonable import write_json
from ..layout import FUSION_PREFIX, RunDir
from ..schema import Report
from ..textio import read_json
from .aggregate import _pq_values, boot_params, moor_mean_gain_ci, paired_mean_ci
from .rundir import RunData, load_run_dir

__all__ = ["HEADLINE_KIND", "CLEAN_METRICS", "run_headline", "write_headline", "read_headline"]

HEADLINE_KIND = "snapbench headline"
#: The clean values shown: SnapBench's R@1 and the retrieval benchmarks' usual main score.
CLEAN_METRICS: tuple[str, ...] = ("hit@1", "ndcg@10")


def _operator(cond: str) -> str | None:
    pc = parse_condition(cond)
    if pc.kind == "image":
        return f"img/{pc.image_operator}"
    if pc.kind == "text":
        return f"txt/{pc.text_operator}"
    return None


def _corrupted(report: Report, metric: str) -> dict[str, float]:
    """Condition -> its paired Δ of ``metric`` (report.json), every corrupted condition that has one."""
    out = {}
    for c, per in report.paired.items():
        pr = per.get(metric)
        if c != "clean" and pr is not None and pr.delta is not None and np.isfinite(pr.delta):
            out[c] = float(pr.delta)
    return out


def _ci(ci: Any) -> list[float] | None:
    if ci is None or ci[0] is None or ci[1] is None or not (np.isfinite(ci[0]) and np.isfinite(ci[1])):
        return None
    return [float(ci[0]), float(ci[1])]


def _mean_delta(data: RunData, target: str, report: Report, metric: str) -> dict[str, Any] | None:
    deltas = _corrupted(report, metric)
    if not deltas:
        return None
    pq = data.per_query.get(target)
    clean = _pq_values(pq, "clean", metric)
    vals = [_pq_values(pq, c, metric) for c in deltas]
    ci = None
    if clean is not None and all(v is not None for v in vals):
        seed, resamples, level = boot_params(report)
        ci = paired_mean_ci(vals, [clean], seed=seed, resamples=resamples, level=level, key=f"headline.{target}")
    return {"value": float(np.mean(list(deltas.values()))), "ci": _ci(ci), "n_conditions": len(deltas)}


def _extremes(report: Report, metric: str) -> tuple[dict | None, dict | None]:
    """The operator with the lowest mean Δ (worst) and the highest (mildest); ties: the first listed."""
    by: dict[str, list[float]] = {}
    for c, d in _corrupted(report, metric).items():
        op = _operator(c)
        if op is not None:
            by.setdefault(op, []).append(d)
    if not by:
        return None, None
    means = {op: float(np.mean(v)) for op, v in by.items()}
    worst = min(means, key=lambda op: means[op])
    mild = max(means, key=lambda op: means[op])
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


def run_headline(data: RunData, metric: str = "hit@1") -> dict[str, Any]:
    """The headline record of a loaded run (see the module docstring)."""
    targets = [*data.modes, *(FUSION_PREFIX + n for n in sorted(data.fusion))]
    rows = []
    for t in targets:
        rep = data.target_report(t)
        if rep is None:
            continue
        worst, mild = _extremes(rep, metric)
        rows.append({
            "target": t,
            "clean": {m: rep.value("clean", m) for m in dict.fromkeys((metric, *CLEAN_METRICS)) if m in rep.metrics},
            "mean_delta": _mean_delta(data, t, rep, metric),
            "worst": worst,
            "mildest": mild,
            "additivity": _additivity(rep, metric),
            "moor_vs_fixed": _moor_vs_fixed(data, metric) if t == "MOOR" else None,
        })
    first = data.first_report
    limit = data.run.get("limit")
    return {"kind": HEADLINE_KIND, "metric": metric, "primary_target": data.primary_mode,
            "n_queries": first.n_queries, "ci_level": float(first.meta.ci_level),
            "limit": limit if isinstance(limit, dict) else None, "targets": rows}


def write_headline(run_dir: str | os.PathLike, metric: str = "hit@1") -> Path:
    """Compute the headline of the run in ``run_dir`` and write ``run_dir/headline.json`` (atomically)."""
    rd = RunDir(run_dir)
    write_json(rd.headline, run_headline(load_run_dir(rd.root), metric))
    return rd.headline


def read_headline(run_dir: str | os.PathLike) -> dict[str, Any]:
    """``run_dir/headline.json`` as written by :func:`write_headline`."""
    return read_json(RunDir(run_dir).headline, what="headline")
