"""The comparison's figures (matplotlib, Agg, via :mod:`snapbench.report.figures`' helpers): each has
a title, labelled axes with units and a legend, so it reads without the surrounding text.  Models are
named by :func:`snapbench.compare.view.display_names` (a long spec path by its last parts).

Per (target, metric):

* ``effective``   clean vs corrupted value (mean over all corrupted conditions) per model, with the
  effective-robustness fit (logit space, three or more models) and the line of no drop;
* ``heatmap``     models x conditions, Δ (points) coloured from red (drop) to blue (gain);
* ``primitives``  Δ per paper column (primitive x severity, text, joint, all) as grouped bars, one bar
  per model, whiskers = its CI, the legend right of the axes (inside it would cover whiskers);
* ``ranks``       each model's rank (dot) and bootstrap rank interval (bar), coloured by tier.
"""

from __future__ import annotations

import numpy as np

from ..evaluate.fmt import ci_label
from ..report.figures import legend_outside, require_matplotlib, tidy_axes, to_points
from ..report.tables import metric_label
from .groups import GROUP_ALL
from .tables import target_label
from .view import MetricView, paper_columns

__all__ = ["FIGURES", "effective_figure", "heatmap_figure", "primitive_bars_figure", "primitives_caption", "rank_figure"]

_TIER_COLOURS = ("#1b7837", "#2166ac", "#b2182b", "#762a83", "#e08214", "#35978f", "#555555")


def _point_labels(pts: list[tuple[str, float, float]], span: float) -> list[tuple[str, tuple[float, float], int]]:
    """One label per position (the names of coinciding models joined with '='), and labels of points
    closer than 2% of the axis stacked one line apart (k = the line) so that none overlaps."""
    at: dict[tuple[float, float], list[str]] = {}
    for m, x, y in pts:
        at.setdefault((round(x, 6), round(y, 6)), []).append(m)
    out: list[tuple[str, tuple[float, float], int]] = []
    for (x, y), names in sorted(at.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        near = [k for _, (x1, y1), k in out if abs(x1 - x) < 0.02 * span and abs(y1 - y) < 0.02 * span]
        out.append((" = ".join(names), (x, y), max(near) + 1 if near else 0))
    return out


def fitted(v: MetricView) -> bool:
    """Whether the effective-robustness plot draws a fit (three or more models, clean values that differ)."""
    fit = v.fits.get(GROUP_ALL)
    return fit is not None and bool(np.isfinite(fit.slope))


def effective_caption(v: MetricView) -> str:
    """The caption of :func:`effective_figure`: the fit is named only when it is drawn."""
    if fitted(v):
        return ("Clean vs corrupted value per model; the curve is the logit-space fit across the models (effective "
                "robustness = a model's height above it).")
    return ("Clean vs corrupted value per model (no fit drawn: it needs three or more models whose clean values "
            "differ); the dotted line is no drop.")


def effective_figure(v: MetricView):
    """Clean vs corrupted (group:all) per model; the logit-space fit across models when there is one."""
    Figure = require_matplotlib()
    pts = [(v.label(m), v.values.get((m, "clean")), v.values.get((m, GROUP_ALL))) for m in v.models]
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
    if fitted(v):
        x = np.linspace(max(lo, 0.5), min(hi, 99.5), 200) / 100
        z = fit.slope * np.log(x / (1 - x)) + fit.intercept
        ax.plot(100 * x, 100 / (1 + np.exp(-z)), color="#c51b7d",
                label=f"fit across models: logit(y) = {fit.slope:.2f} logit(x) {fit.intercept:+.2f}")
    for m, x0, y0 in pts:
        ax.scatter([x0], [y0], s=36, zorder=3)
    for label, (x0, y0), k in _point_labels(pts, hi - lo):
        right = x0 > (lo + hi) / 2  # labels of the right half go left of their point, inside the axes
        ax.annotate(label, (x0, y0), textcoords="offset points", xytext=(-6 if right else 6, 4 + 11 * k), fontsize=8,
                    ha="right" if right else "left")
    pad = 0.02 * (hi - lo)
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(lo - pad, hi + pad)
    ax.set_xlabel(f"clean {lab} (%)")
    ax.set_ylabel(f"corrupted {lab} (%), mean over all corrupted conditions")
    legend_outside(ax, below=True, fontsize=8)
    ax.grid(alpha=0.3)
    tidy_axes(ax)
    what = ("effective robustness = height above the fit" if fitted(v) else "no fit: it needs three or more models"
            if fit is None else "no fit: the clean values do not differ")
    ax.set_title(f"{target_label(v.target)}: clean vs corrupted {lab} per model ({what})", fontsize=10)
    return fig


_KIND_NAMES = {"img": "image", "txt": "text", "joint": "joint (image + text)"}
#: Width (inches) a character of a model's name takes at the figures' font sizes.
_NAME_INCH = 0.075


def _split(cid: str) -> tuple[str, str, str]:
    """(kind, operator, severity digit or '') of a condition id: ``img/low_light/s2`` ->
    ``("img", "low_light", "2")``, ``txt/char_add`` -> ``("txt", "char_add", "")``."""
    parts = cid.split("/")
    sev = parts[-1][1:] if len(parts) > 2 and parts[-1][:1] == "s" and parts[-1][1:].isdigit() else ""
    op = "/".join(parts[1:-1] if sev else parts[1:]) or cid
    return (parts[0] if len(parts) > 1 else ""), op, sev


def _runs(keys: list) -> list[tuple[object, int, int]]:
    """Consecutive runs of equal keys: (key, first index, last index + 1)."""
    out: list[tuple[object, int, int]] = []
    for i, k in enumerate(keys):
        if out and out[-1][0] == k:
            out[-1] = (k, out[-1][1], i + 1)
        else:
            out.append((k, i, i + 1))
    return out


def _group_axis(ax, conds: list[str]) -> None:
    """Conditions grouped on the x axis: each operator named once under its columns (its severities
    as small digits right under the cells), lines between operators and between kinds, the kinds
    named above the map."""
    parts = [_split(c) for c in conds]
    ops = _runs([(k, op) for k, op, _ in parts])
    ax.set_xticks([(a + b - 1) / 2 for _, a, b in ops], [op for (_, op), _, _ in ops], rotation=90, fontsize=8)
    sev = [i for i, p in enumerate(parts) if p[2]]
    ax.xaxis.remove_overlapping_locs = False  # a severity digit under the column its operator is named at
    ax.set_xticks(sev, [parts[i][2] for i in sev], minor=True, fontsize=7)
    ax.tick_params(axis="x", which="major", pad=10 if sev else 3, length=0)
    ax.tick_params(axis="x", which="minor", pad=1, length=2)
    for _, a, _ in ops[1:]:
        ax.axvline(a - 0.5, color="white", linewidth=1.2)
    kinds = _runs([k for k, _, _ in parts])
    for _, a, _ in kinds[1:]:
        ax.axvline(a - 0.5, color="black", linewidth=1.4)
    top = ax.secondary_xaxis("top")
    top.set_xticks([(a + b - 1) / 2 for _, a, b in kinds], [_KIND_NAMES.get(str(k), str(k)) for k, _, _ in kinds],
                   fontsize=9)
    top.tick_params(length=0)


def heatmap_figure(v: MetricView):
    """Models x corrupted conditions coloured by Δ (points), conditions grouped by kind and operator."""
    Figure = require_matplotlib()
    from matplotlib.colors import TwoSlopeNorm

    conds = list(v.conditions)
    if not conds:
        return None
    m = np.array([[to_points(v.values[(mod, c)].delta) if (mod, c) in v.values else np.nan for c in conds]
                  for mod in v.models])
    lab = metric_label(v.metric)
    longest = max(len(_split(c)[1]) for c in conds)
    names = [v.label(mod) for mod in v.models]
    # the model names take their own width: the map keeps its width however long they are
    fig = Figure(figsize=(max(8.0, 0.2 * len(conds) + 3.5) + _NAME_INCH * max(map(len, names)),
                          0.45 * len(v.models) + 2.2 + 0.075 * longest), layout="constrained")
    ax = fig.subplots()
    lim = max(float(np.nanmax(np.abs(m))) if np.isfinite(m).any() else 0.0, 1.0)
    im = ax.imshow(m, cmap="RdBu", norm=TwoSlopeNorm(0.0, -lim, lim), aspect="auto", interpolation="nearest")
    ax.set_yticks(range(len(v.models)), names, fontsize=9)
    _group_axis(ax, conds)
    ax.set_xlabel("condition: operator (severity 1–3 under its columns where it has them)")
    cb = fig.colorbar(im, ax=ax, shrink=0.9)
    cb.set_label(f"Δ{lab} (points, condition − clean)")
    ax.set_title(f"{target_label(v.target)}: Δ{lab} per model and condition (red = drop)", fontsize=11)
    return fig


_COLUMN_KINDS = (("group:img/", "image primitive × severity"), ("group:txt", "text conditions"),
                 ("group:joint", "joint conditions"), (GROUP_ALL, "all corrupted conditions"))


def _bar_columns(v: MetricView) -> list[tuple[str, str]]:
    return [(h, c) for h, c in paper_columns(v.columns) if c != "clean"]


def _columns_shown(cols: list[tuple[str, str]]) -> list[str]:
    """The kinds of paper column the bars show, in words (only those shown)."""
    return [words for prefix, words in _COLUMN_KINDS if any(c.startswith(prefix) for _, c in cols)]


def primitives_caption(v: MetricView) -> str:
    """The caption of :func:`primitive_bars_figure`: the kinds of column it shows."""
    shown = _columns_shown(_bar_columns(v))
    return f"Δ per {', '.join(shown)}, one bar per model (each the mean over its conditions); whiskers: its CI."


def primitive_bars_figure(v: MetricView):
    """Δ per paper column, one bar per model, whiskers = CI."""
    Figure = require_matplotlib()
    cols = _bar_columns(v)
    if not cols:
        return None
    lab = metric_label(v.metric)
    names = [v.label(mod) for mod in v.models]
    fig = Figure(figsize=(max(8.0, 0.55 * len(cols) * max(1, len(v.models)) / 2 + 2) + _NAME_INCH * max(map(len, names)),
                          4.6), layout="constrained")
    ax = fig.subplots()
    width = 0.8 / len(v.models)
    for j, mod in enumerate(v.models):
        x = np.arange(len(cols)) + (j - (len(v.models) - 1) / 2) * width
        recs = [v.values.get((mod, c)) for _, c in cols]
        y = np.array([to_points(r.delta) if r else np.nan for r in recs])
        lo = np.array([to_points(r.ci_low) if r else np.nan for r in recs])
        hi = np.array([to_points(r.ci_high) if r else np.nan for r in recs])
        ax.bar(x, y, width, yerr=[np.clip(y - lo, 0, None), np.clip(hi - y, 0, None)], capsize=2, label=names[j],
               error_kw={"elinewidth": 0.7})
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set_xticks(np.arange(len(cols)), [h for h, _ in cols], rotation=45, ha="right", fontsize=8)
    shown = _columns_shown(cols)
    ax.set_xlabel(f"{', '.join(shown)} (each the mean over its conditions)")
    ax.set_ylabel(f"Δ{lab} (points, condition − clean)")
    # outside the axes, right of them: inside, it would cover bars and whiskers wherever it went
    ax.legend(title="model", fontsize=8, title_fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    ax.grid(axis="y", alpha=0.3)
    tidy_axes(ax)
    what = "primitive and severity" if any(c.startswith("group:img/") for _, c in cols) else "condition group"
    ax.set_title(f"{target_label(v.target)}: Δ{lab} by {what} per model (whiskers: {ci_label(v.level)})", fontsize=10)
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
    ax.set_yticks(range(len(order)), [v.label(m) for m in order], fontsize=8)
    ax.invert_yaxis()
    n = len(order)
    ax.set_xticks(range(1, n + 1))
    ax.set_xlim(0.5, n + 0.5)
    ax.set_xlabel(f"rank by mean Δ{metric_label(v.metric)} over all corrupted conditions (1 = smallest drop)")
    legend_outside(ax, fontsize=8, title="not told apart\nwithin a tier", title_fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(f"{target_label(v.target)}: rank and its bootstrap {ci_label(v.level)} per model", fontsize=10)
    return fig


#: name -> (function, caption or a function of the view giving it); the order of the report.
FIGURES = {
    "effective": (effective_figure, effective_caption),
    "heatmap": (heatmap_figure, "Δ per model and condition (points; red = drop)."),
    "primitives": (primitive_bars_figure, primitives_caption),
    "ranks": (rank_figure, "Rank (dot) and bootstrap rank interval (bar) per model; colours: tiers of models not told "
                           "apart."),
}
