"""The damage figure of the report: the metric per damage bin and each operator's slope (:mod:`.damage`).

One row per damage measure (SSIM of the image variant; embedding drift): on the left the metric
(%) per bin, one line per operator; on the right each operator's slope per 0.1 of damage (points)
with its CI, sorted, so the operators the model loses most and least to at equal damage stand at
the ends.
"""

from __future__ import annotations

import numpy as np

from .damage import DAMAGES, PER_DAMAGE, DamageAnalysis, bin_labels, mode_label, operator_order
from .figures import require_matplotlib
from .fmt import ci_label
from .tables import metric_label

__all__ = ["damage_figure"]


def _bins_panel(ax, res: DamageAnalysis, damage: str) -> None:
    labels = bin_labels(damage)
    ops = [op for _, group in operator_order(list(res.slopes[damage])) for op in group]
    colours = [f"C{i % 10}" for i in range(len(ops))]
    styles = ["-", "--", ":"]
    for i, op in enumerate(ops):
        y = [np.nan if m is None else 100.0 * m for m, _ in res.bins[damage][op]]
        ax.plot(range(len(labels)), y, styles[(i // 10) % 3], marker="o", markersize=3, color=colours[i],
                label=op, linewidth=1)
    ax.set_xticks(range(len(labels)), labels, rotation=30, fontsize=7)
    ax.set_xlabel("measured SSIM of the image variant" if damage == "ssim" else "embedding drift 1 − cos")
    ax.set_ylabel(f"{metric_label(res.metric)} (%)")
    ax.set_ylim(-3, 103)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, ncol=2, loc="lower left" if damage == "ssim" else "lower right")


def _slopes_panel(ax, res: DamageAnalysis, damage: str) -> None:
    ranked = sorted(res.slopes[damage].values(), key=lambda s: (s.slope, s.operator))
    y = np.arange(len(ranked))
    v = np.array([100.0 * PER_DAMAGE * s.slope for s in ranked])
    lo = np.array([np.nan if s.ci is None else 100.0 * PER_DAMAGE * s.ci[0] for s in ranked])
    hi = np.array([np.nan if s.ci is None else 100.0 * PER_DAMAGE * s.ci[1] for s in ranked])
    err = np.nan_to_num(np.clip(np.vstack([v - lo, hi - v]), 0, None))
    ax.errorbar(v, y, xerr=err, fmt="o", color="#2b7bba", ecolor="#7fb3d5", capsize=2, markersize=4)
    ax.axvline(0, color="grey", linewidth=0.8)
    ax.set_yticks(y, [s.operator for s in ranked], fontsize=7)
    per = "SSIM loss" if damage == "ssim" else "drift"
    ax.set_xlabel(f"Δ{metric_label(res.metric)} per {PER_DAMAGE:g} {per} (points; {ci_label(res.level)})")
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
    fig = Figure(figsize=(11, 4.2 * len(rows)), layout="constrained")
    axes = np.atleast_2d(fig.subplots(len(rows), 2, gridspec_kw={"width_ratios": [3, 2]}))
    for (left, right), damage in zip(axes, rows):
        _bins_panel(left, res, damage)
        _slopes_panel(right, res, damage)
        what = "SSIM loss" if damage == "ssim" else "embedding drift"
        binned = "measured SSIM" if damage == "ssim" else "embedding drift"
        left.set_title(f"{mode_label(res)}: {metric_label(res.metric)} by {binned} bin, per operator", fontsize=10)
        right.set_title(f"sensitivity at equal {what}", fontsize=10)
    return fig
