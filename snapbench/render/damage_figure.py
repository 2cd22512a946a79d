"""The damage figure of the report: the metric per damage bin and each operator's slope (:mod:`.damage`).

One row per damage measure (SSIM of the image variant; embedding drift): on the left the metric
(%) per bin as small multiples, one panel per operator group (a handful of lines in distinct colours
each, legends under the panels), bins of fewer than ``MIN_BIN_COUNT`` pairs hollow and not joined
(one query is a 0 or 100 % point); on the right each operator's slope per 0.1 of damage (points)
with its CI, sorted, so the operators the model loses most and least to at equal damage stand at
the ends -- only for operators whose damage reaches 0.1 (the others are named, not extrapolated).
"""

from __future__ import annotations

import numpy as np

from .damage import DAMAGES, MIN_BIN_COUNT, PER_DAMAGE, DamageAnalysis, bin_labels, mode_label, operator_order
from .figures import require_matplotlib
from .fmt import ci_label
from .tables import metric_label

__all__ = ["damage_figure"]


def _bins_panels(sub, res: DamageAnalysis, damage: str) -> None:
    """Small multiples: one panel per operator group (the tables' groups), a handful of lines each in
    colours of their own; bins of fewer than :data:`MIN_BIN_COUNT` pairs hollow and not joined."""
    labels = bin_labels(damage)
    groups = operator_order(list(res.slopes[damage]))
    ncol = min(4, len(groups))
    nrow = -(-len(groups) // ncol)
    axes = np.atleast_1d(sub.subplots(nrow, ncol, sharey=True)).ravel()
    x = np.arange(len(labels))
    for ax, (group, ops) in zip(axes, groups):
        for i, op in enumerate(ops):
            colour = f"C{i % 10}"
            means = np.array([np.nan if m is None else 100.0 * m for m, _ in res.bins[damage][op]])
            counts = np.array([n for _, n in res.bins[damage][op]])
            enough = np.where(counts >= MIN_BIN_COUNT, means, np.nan)  # NaN breaks the line
            few = np.where((counts > 0) & (counts < MIN_BIN_COUNT), means, np.nan)
            ax.plot(x, enough, "-o", color=colour, markersize=3.5, linewidth=1.2, label=op)
            ax.plot(x, few, "o", color=colour, markersize=4, markerfacecolor="none", linewidth=0)
        ax.set_title(group, fontsize=8)
        ax.set_ylim(-3, 103)
        ax.set_xlim(-0.4, len(labels) - 0.6)  # the first and last bins' markers whole
        ax.grid(alpha=0.3)
        ax.set_xticks(x, labels, rotation=45, fontsize=6, ha="right")
        ax.tick_params(axis="y", labelsize=7)
        # the legend under the panel, never over the lines
        ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2, frameon=False,
                  handlelength=1.5, columnspacing=0.8)
    for ax in axes[len(groups):]:
        ax.set_visible(False)
    for ax in axes[::ncol]:
        ax.set_ylabel(f"{metric_label(res.metric)} (%)", fontsize=8)


def _slopes_panel(ax, res: DamageAnalysis, damage: str) -> None:
    # only slopes within the data: an operator whose damage stays under PER_DAMAGE is named below
    ranked = sorted((s for s in res.slopes[damage].values() if s.in_range), key=lambda s: (s.slope, s.operator))
    short = sorted(s.operator for s in res.slopes[damage].values() if not s.in_range)
    if not ranked:
        ax.set_axis_off()
        ax.text(0.5, 0.5, f"no operator's damage reaches {PER_DAMAGE:g}:\nno slope per {PER_DAMAGE:g} is read",
                ha="center", va="center", fontsize=8, transform=ax.transAxes)
        return
    y = np.arange(len(ranked))
    v = np.array([100.0 * PER_DAMAGE * s.slope for s in ranked])
    lo = np.array([np.nan if s.ci is None else 100.0 * PER_DAMAGE * s.ci[0] for s in ranked])
    hi = np.array([np.nan if s.ci is None else 100.0 * PER_DAMAGE * s.ci[1] for s in ranked])
    err = np.nan_to_num(np.clip(np.vstack([v - lo, hi - v]), 0, None))
    ax.errorbar(v, y, xerr=err, fmt="o", color="#2b7bba", ecolor="#7fb3d5", capsize=2, markersize=4)
    ax.axvline(0, color="grey", linewidth=0.8)
    ax.set_yticks(y, [s.operator for s in ranked], fontsize=7)
    per = "SSIM loss" if damage == "ssim" else "drift"
    xlabel = f"Δ{metric_label(res.metric)} per {PER_DAMAGE:g} {per} (points; {ci_label(res.level)})"
    if short:
        names = ", ".join(short[:6]) + (f" and {len(short) - 6} more" if len(short) > 6 else "")
        xlabel += f"\nnot shown, their {per} stays under {PER_DAMAGE:g}: {names}"
    ax.set_xlabel(xlabel, fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    ax.xaxis.get_major_formatter().set_useOffset(False)
    lo_x, hi_x = ax.get_xlim()
    if hi_x - lo_x < 2.0:  # all slopes 0 (or nearly): a readable -1..1 axis, not one scaled to float noise
        mid = (lo_x + hi_x) / 2
        ax.set_xlim(mid - 1.0, mid + 1.0)


def damage_figure(res: DamageAnalysis):
    """The figure, or None when no damage measure has a slope."""
    Figure = require_matplotlib()
    rows = [d for d in DAMAGES if res.slopes.get(d)]
    if not rows:
        return None
    heights = [1 + (len(operator_order(list(res.slopes[d]))) - 1) // 4 for d in rows]
    fig = Figure(figsize=(13, sum(4.6 * h for h in heights)), layout="constrained")
    subs = np.atleast_1d(fig.subfigures(len(rows), 1, height_ratios=heights))
    for sub, damage in zip(subs, rows):
        left, right = sub.subfigures(1, 2, width_ratios=[3, 1.3])
        _bins_panels(left, res, damage)
        _slopes_panel(right.subplots(), res, damage)
        what = "SSIM loss" if damage == "ssim" else "embedding drift"
        binned = "measured SSIM of the image variant" if damage == "ssim" else "embedding drift (1 − cos)"
        left.suptitle(f"{mode_label(res)}: {metric_label(res.metric)} by {binned} bin, per operator\n"
                      f"hollow: a bin of fewer than {MIN_BIN_COUNT} (query, severity) pairs, not joined to the line",
                      fontsize=9)
        right.suptitle(f"sensitivity at equal {what}", fontsize=10)
    return fig
