"""Robustness without labels in a run's report: the label-free measures' table, and -- where labels
exist -- whether they track the labelled loss (SPEC §14).

:func:`stability_vs_loss` reads every target's ``per_query.csv`` (the one source: a recomputation
from that file gives the same numbers) and, per retrieval mode, correlates across conditions the
mean ``overlap@k`` (and ``rbo``) with the mean drop of the primary metric (hit@1), with a bootstrap
CI over queries, over the corrupted conditions the mode reads
(:func:`snapbench.core.targets.target_reads`: an image condition cannot move T→T, so its point would
sit at stability 1, drop 0 and inflate the correlation) (:func:`snapbench.evaluate.paired.stability_tracks_loss`).  The result is the
run's ``stability.json``, a finding and a scatter figure (one point per condition, coloured by
operator family).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.conditions import PRIMITIVE_OF, parse_condition
from ..core.targets import target_reads
from ..evaluate.paired import TRACKING_RULE, bootstrap_counts, stability_tracks_loss
from ..evaluate.stability import is_stability_metric, overlap_metric
from ..store.rundir import TARGET_NAMES, RunData
from .fmt import ci_label
from .tables import report_labelled

__all__ = ["labelled", "stability_finding",
           "stability_vs_loss"]

#: Operator family of a condition -> its colour in the scatter figure.
_FAMILY_COLOURS: dict[str, str] = {"degrade": "#2b7bba", "transform": "#1a9850", "remove": "#d73027",
                                  "add": "#984ea3", "image": "#2b7bba", "text": "#e08214", "joint": "#666666"}


def _condition_family(cid: str) -> str:
    """The operator family a condition belongs to: its image primitive (degrade, transform, remove,
    add), ``text`` or ``joint``."""
    c = parse_condition(cid)
    if c.kind == "image":
        return PRIMITIVE_OF.get(c.image_operator, "image")
    return c.kind


def labelled(data: RunData) -> bool:
    """Every report of the run was evaluated against relevance labels (:func:`report_labelled`)."""
    return all(report_labelled(r) for r in data.reports.values())


def stability_vs_loss(data: RunData, metric: str = "hit@1") -> dict[str, Any] | None:
    """Per mode: Spearman rho across the corrupted conditions the mode reads (:func:`target_reads`)
    between each stability measure and the drop of ``metric``, with its CI and ``n_conditions``;
    ``None`` for a run without labels, stability measures or ``metric``."""
    if not data.reports or not labelled(data):
        return None
    out: dict[str, Any] = {"metric": metric, "rule": TRACKING_RULE, "modes": {}}
    for mode in data.modes:
        rep, pq = data.reports[mode], data.per_query.get(mode)
        ov = overlap_metric(rep.metrics)
        measures = [m for m in (ov, "rbo") if m is not None and m in rep.metrics]
        if pq is None or metric not in rep.metrics or not measures:
            continue
        conds = [c for c in rep.condition_ids
                 if c != "clean" and target_reads(mode, c) and pq.array(c, metric) is not None]
        m0 = pq.array("clean", metric)
        if len(conds) < 3 or m0 is None:
            continue
        counts = bootstrap_counts(len(pq.query_ids), rep.meta.resamples, rep.meta.seed)
        hit = np.stack([pq.array(c, metric) for c in conds], axis=1)
        per_mode: dict[str, Any] = {}
        for s in measures:
            cols = [pq.array(c, s) for c in conds]
            if any(col is None for col in cols):
                continue
            r = stability_tracks_loss(np.stack(cols, axis=1), m0, hit, counts, rep.meta.ci_level)
            per_mode[s] = {
                "rho": _num(r["rho"]), "ci": [_num(r["ci"][0]), _num(r["ci"][1])], "n_conditions": r["n_conditions"],
                "points": {c: {"stability": _num(r["stability"][j]), "drop": _num(r["drop"][j]),
                               "family": _condition_family(c)} for j, c in enumerate(conds)},
            }
        if per_mode:
            out["modes"][mode] = per_mode
    out["ci_level"] = next(iter(data.reports.values())).meta.ci_level
    return out if out["modes"] else None


def _num(x: float) -> float | None:
    x = float(x)
    return None if np.isnan(x) else x


def stability_finding(body: dict[str, Any] | None, mode: str) -> str | None:
    """The finding in plain words for ``mode`` (``None`` when it has no correlation)."""
    if not body or mode not in body["modes"]:
        return None
    name = TARGET_NAMES.get(mode, mode)
    parts = []
    for s, e in body["modes"][mode].items():
        rho, (lo, hi) = e["rho"], e["ci"]
        if rho is None:
            parts.append(f"{s}: undefined (a constant side)")
            continue
        ci = f"{ci_label(body['ci_level'])} {lo:+.2f} to {hi:+.2f}" if lo is not None and hi is not None else "no CI"
        parts.append(f"{s} ρ = {rho:+.2f} ({ci})")
    first = next(iter(body["modes"][mode].values()))
    lo, hi = first["ci"]
    if first["rho"] is None or lo is None or hi is None:
        verdict = "could not be measured"
    elif hi < 0:
        verdict = ("tracks the loss: conditions that move the ranking more also lose more " + body["metric"]
                   + " — ranking the conditions by stability alone ranks them by damage here")
    elif lo > 0:
        verdict = "runs against the loss (more movement, less loss): stability alone would mislead here"
    else:
        verdict = "is not shown to track the loss (the CI includes 0): do not read stability alone as damage here"
    return (f"{name}: across the {first['n_conditions']} corrupted conditions it reads, the Spearman correlation "
            f"between how much the ranking stays (mean over queries) and the drop of {body['metric']} is "
            f"{'; '.join(parts)}. Stability {verdict}.")


def label_free_rows(report) -> list[tuple[str, dict[str, Any]]]:
    """``(condition, {measure: {"mean", "ci"}})`` of a report's label-free section, report order."""
    lf = report.label_free or {}
    return [(c, {m: e for m, e in lf[c].items() if is_stability_metric(m)}) for c in report.condition_ids if c in lf]


def stability_scatter_figure(body: dict[str, Any], mode: str):
    """Mean stability (x) against the mean drop of the metric (y), one point per condition coloured by
    operator family, one panel per stability measure; ``None`` when the mode has no correlation."""
    from .figures import require_matplotlib

    if not body or mode not in body["modes"]:
        return None
    Figure = require_matplotlib()
    per = body["modes"][mode]
    fig = Figure(figsize=(4.2 * len(per), 3.6))
    axes = fig.subplots(1, len(per), squeeze=False)[0]
    for ax, (s, e) in zip(axes, per.items()):
        seen: set[str] = set()
        for c, pt in e["points"].items():
            if pt["stability"] is None or pt["drop"] is None:
                continue
            fam = pt["family"]
            ax.scatter(100 * pt["stability"], 100 * pt["drop"], s=18, color=_FAMILY_COLOURS.get(fam, "#444444"),
                       label=None if fam in seen else fam)
            seen.add(fam)
        rho = "undefined" if e["rho"] is None else f"{e['rho']:+.2f}"
        ax.set_title(f"{TARGET_NAMES.get(mode, mode)}: Spearman ρ = {rho}", fontsize=9)
        ax.set_xlabel(f"mean {s} (%)")
        ax.set_ylabel(f"drop of {body['metric']} (points)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig
