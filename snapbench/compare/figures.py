"""The comparison's figures (matplotlib, Agg, via :mod:`snapbench.report.figures`' helpers): each has
a title, labelled axes with units and a legend, so it reads without the surrounding text.

Per (target, metric):

* ``effective``   clean vs corrupted value (mean over all corrupted conditions) per model, with the
  effective-robustness fit (logit space, three or more models) and the line of no drop;
* ``heatmap``     models x conditions, Δ (points) coloured from red (drop) to blue (gain);
* ``primitives``  Δ per paper column (primitive x severity, text, joint) as grouped bars, one bar
  per model, whiskers = its CI;
* ``ranks``       each model's rank (dot) and bootstrap rank interval (bar), coloured by tier.
"""

from __future__ import annotations

import numpy as np

from ..report.figures import require_matplotlib, tidy_axes, to_points
from ..report.tables import metric_label
from .groups import GROUP_ALL
from .tables import target_label
from .view import MetricView, paper_columns

__all__ = ["FIGURES", "effective_figure", "heatmap_figure", "primitive_bars_figure", "rank_figure"]

_TIER_COLOURS = ("#1b7837", "#2166ac", "#b2182b", "#762a83", "#e08214", "#35978f", "#555555")


def _ci(level: float) -> str:
    return f"{round(100 * level, 1):g}% CI"


def effective_figure(v: MetricView):
    """Clean vs corrupted (group:all) per model; the logit-space fit across models when there is one."""
    Figure = require_matplotlib()
    pts = [(m, v.values.get((m, "clean")), v.values.get((m, GROUP_ALL))) for m in v.models]
    pts = [(m, to_points(c.value), to_points(g.value)) for m, c, g in pts if c is not None and g is not None]
    pts = [p for p in pts if np.isfinite(p[1]) and np.isfinite(p[2])]
    if not pts:
        return None
    lab = metric_label(v.metric)
    fig = Figure(figsize=(6.5, 5), layout="constrained")
    ax = fig.subplots()
    xs, ys = np.array([p[1] for p in pts]), np.array([p[2] for p in pts])
    lo, hi = max(0.0, min(xs.min(), ys.min()) - 5), min(100.0, max(xs.max(), ys.max()) + 5)
    ax.plot([lo, hi], [lo, hi], color="grey", linestyle=":", label="no drop (corrupted = clean)")
    fit = v.fits.get(GROUP_ALL)
    fitted = fit is not None and bool(np.isfinite(fit.slope))
    if fitted:
        x = np.linspace(max(lo, 0.5), min(hi, 99.5), 200) / 100
        z = fit.slope * np.log(x / (1 - x)) + fit.intercept
        ax.plot(100 * x, 100 / (1 + np.exp(-z)), color="#c51b7d",
                label=f"fit across models: logit(y) = {fit.slope:.2f} logit(x) {fit.intercept:+.2f}")
    for m, x0, y0 in pts:
        ax.scatter([x0], [y0], s=36, zorder=3)
        ax.annotate(m, (x0, y0), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xlabel(f"clean {lab} (%)")
    ax.set_ylabel(f"corrupted {lab} (%), mean over all corrupted conditions")
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    tidy_axes(ax)
    what = ("effective robustness = height above the fit" if fitted else "no fit: it needs three or more models"
            if fit is None else "no fit: the clean values do not differ")
    ax.set_title(f"{target_label(v.target)}: clean vs corrupted {lab} per model ({what})", fontsize=10)
    return fig


def heatmap_figure(v: MetricView):
    """Models x corrupted conditions coloured by Δ (points)."""
    Figure = require_matplotlib()
    from matplotlib.colors import TwoSlopeNorm

    conds = v.conditions
    if not conds:
        return None
    m = np.array([[to_points(v.values[(mod, c)].delta) if (mod, c) in v.values else np.nan for c in conds]
                  for mod in v.models])
    lab = metric_label(v.metric)
    fig = Figure(figsize=(max(8.0, 0.17 * len(conds) + 3), 0.42 * len(v.models) + 2.6), layout="constrained")
    ax = fig.subplots()
    lim = max(float(np.nanmax(np.abs(m))) if np.isfinite(m).any() else 0.0, 1.0)
    im = ax.imshow(m, cmap="RdBu", norm=TwoSlopeNorm(0.0, -lim, lim), aspect="auto", interpolation="nearest")
    ax.set_yticks(range(len(v.models)), v.models, fontsize=8)
    ax.set_xticks(range(len(conds)), conds, rotation=90, fontsize=5 if len(conds) > 40 else 7)
    ax.set_xlabel("condition")
    cb = fig.colorbar(im, ax=ax, shrink=0.9)
    cb.set_label(f"Δ{lab} (points, condition − clean)")
    ax.set_title(f"{target_label(v.target)}: Δ{lab} per model and condition (red = drop)", fontsize=10)
    return fig


def primitive_bars_figure(v: MetricView):
    """Δ per paper column, one bar per model, whiskers = CI."""
    Figure = require_matplotlib()
    cols = [(h, c) for h, c in paper_columns(v.columns) if c != "clean"]
    if not cols:
        return None
    lab = metric_label(v.metric)
    fig = Figure(figsize=(max(8.0, 0.55 * len(cols) * max(1, len(v.models)) / 2 + 2), 4.6), layout="constrained")
    ax = fig.subplots()
    width = 0.8 / len(v.models)
    for j, mod in enumerate(v.models):
        x = np.arange(len(cols)) + (j - (len(v.models) - 1) / 2) * width
        recs = [v.values.get((mod, c)) for _, c in cols]
        y = np.array([to_points(r.delta) if r else np.nan for r in recs])
        lo = np.array([to_points(r.ci_low) if r else np.nan for r in recs])
        hi = np.array([to_points(r.ci_high) if r else np.nan for r in recs])
        ax.bar(x, y, width, yerr=[np.clip(y - lo, 0, None), np.clip(hi - y, 0, None)], capsize=2, label=mod,
               error_kw={"elinewidth": 0.7})
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set_xticks(np.arange(len(cols)), [h for h, _ in cols], rotation=45, ha="right", fontsize=8)
    ax.set_xlabel("image primitive x severity (mean over its operators), text, joint, all")
    ax.set_ylabel(f"Δ{lab} (points, condition − clean)")
    ax.legend(title="model", fontsize=8, title_fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    tidy_axes(ax)
    ax.set_title(f"{target_label(v.target)}: Δ{lab} by primitive and severity per model (whiskers: {_ci(v.level)})",
                 fontsize=10)
    return fig


def rank_figure(v: MetricView):
    """Rank (dot) and bootstrap rank interval (bar) per model, coloured by tier."""
    Figure = require_matplotlib()
    if not v.ranking:
        return None
    order = v.ranked()
    fig = Figure(figsize=(6.5, 0.45 * len(order) + 1.8), layout="constrained")
    ax = fig.subplots()
    seen: set[int] = set()
    for i, mod in enumerate(order):
        r = v.ranking[mod]
        colour = _TIER_COLOURS[(r.group - 1) % len(_TIER_COLOURS)]
        label = None if r.group in seen else f"tier {r.group}"
        seen.add(r.group)
        if np.isfinite(r.rank_low) and np.isfinite(r.rank_high):
            ax.plot([r.rank_low, r.rank_high], [i, i], color=colour, linewidth=4, alpha=0.45, solid_capstyle="round")
        ax.scatter([r.rank], [i], color=colour, s=40, zorder=3, label=label)
    ax.set_yticks(range(len(order)), order, fontsize=8)
    ax.invert_yaxis()
    n = len(order)
    ax.set_xticks(range(1, n + 1))
    ax.set_xlim(0.5, n + 0.5)
    ax.set_xlabel(f"rank by mean Δ{metric_label(v.metric)} over all corrupted conditions (1 = smallest drop)")
    ax.legend(fontsize=8, title="not told apart within a tier", title_fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(f"{target_label(v.target)}: rank and its bootstrap {_ci(v.level)} per model", fontsize=10)
    return fig


#: name -> (function, caption); the order of the report.
FIGURES = {
    "effective": (effective_figure, "Clean vs corrupted value per model; the curve is the logit-space fit across the "
                                    "models (effective robustness = a model's height above it)."),
    "heatmap": (heatmap_figure, "Δ per model and condition (points; red = drop)."),
    "primitives": (primitive_bars_figure, "Δ per image primitive and severity, text, joint and all conditions, one bar "
                                          "per model; whiskers: its CI."),
    "ranks": (rank_figure, "Rank (dot) and bootstrap rank interval (bar) per model; colours: tiers of models not told "
                           "apart."),
}
