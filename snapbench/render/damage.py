"""Drops against measured damage: how much the model loses per unit of damage, operator by operator.

A severity level is a parameter, not an effect; the run records what each variant actually did
(``ssim`` of the image variant, ``drift_image`` / ``drift_text`` of the encoder's query embedding:
``<target>/per_query.csv``, :mod:`snapbench.app.stages.measured`).  This module relates the report
metric's per-query values to that damage, for the primary mode (:attr:`RunData.primary_mode`):

* **binned hit rate** -- per operator, the mean of the metric over the (query, severity) pairs
  whose measured damage falls in each bin: SSIM bins :data:`SSIM_BINS`, drift bins
  :data:`DRIFT_BINS` (image operators by ``drift_image``, text operators by ``drift_text``);
* **sensitivity** -- per operator, the slope b of the paired drop against the damage through the
  origin, over every query q and severity s of the operator:

      b = Σ_qs x_qs (y_qs − y_q,clean) / Σ_qs x_qs²

  with x the damage (SSIM loss 1 − SSIM, or drift) and y the metric (hit@1: 0 or 1).  b is the
  change of the metric per unit damage (negative: it drops), read at equal damage across
  operators; tables and findings show it per 0.1 of damage in points.  Zero damage is anchored to
  zero change because the clean query is the reference; a pair without a finite damage or metric
  value (a zero-GT query, an image under 11 px) is left out;
* **confidence intervals** -- a bootstrap over queries (:func:`snapbench.evaluate.bootstrap_counts`,
  the report's seed, key ``report.damage.<damage>``, at most :data:`~.aggregate.MAX_RESAMPLES`
  resamples, the report's CI level): each resample recomputes every slope from the same query
  draw, so the difference of two operators' slopes has a paired CI too.

The finding names the operators with the most negative and the least negative slope and says that
the model is more sensitive to the first only when the CI of the difference excludes 0 (the
report's verdict rule).

The damage figure of the report: the metric per damage bin and each operator's slope (:mod:`.damage`).

One row per damage measure (SSIM of the image variant; embedding drift): on the left the metric
(%) per bin as small multiples, one panel per operator group (a handful of lines in distinct colours
each, legends under the panels), bins of fewer than ``MIN_BIN_COUNT`` pairs hollow and not joined
(one query is a 0 or 100 % point); on the right each operator's slope per 0.1 of damage (points)
with its CI, sorted, so the operators the model loses most and least to at equal damage stand at
the ends -- only for operators whose damage reaches 0.1 (the others are named, not extrapolated).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core.conditions import parse_condition
from ..core.records import PerQuery, TargetOutcome
from ..evaluate import bootstrap_counts, percentile_ci
from ..evaluate.metrics import metric_sign
from ..store.rundir import TARGET_NAMES, RunData
from .aggregate import MAX_RESAMPLES, boot_params
from .figures import require_matplotlib, whiskers
from .fmt import ci_label, points
from .tables import Cell, Table, metric_label, operator_groups

__all__ = ['DRIFT_BINS', 'PER_DAMAGE', 'SSIM_BINS', 'DamageAnalysis', 'Sensitivity', 'damage_analysis', 'damage_tables', 'TARGET_FLAGGED', 'MIN_BIN_COUNT', 'damage_figure']

#: SSIM bin edges, high to low: a bin holds lo <= SSIM < hi (the first one up to 1 inclusive), so an
#: SSIM exactly on an edge counts in the bin above it.  The documented severity targets 0.9, 0.75 and
#: 0.6 sit in the middle of a bin (0.85–0.95, 0.7–0.8, 0.55–0.65), so the variants that reach one
#: (±0.01) fall in one column; the bins between them hold what missed.
SSIM_BINS: tuple[float, ...] = (1.0, 0.95, 0.85, 0.8, 0.7, 0.65, 0.55, -1.0)
#: Embedding drift (1 − cos) bin edges, low to high: lo <= drift < hi.
DRIFT_BINS: tuple[float, ...] = (-math.inf, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, math.inf)
#: Where a run marks an image variant that missed its severity target (the run's and the report's
#: :func:`~snapbench.corruptions.target.target_summary` line).
TARGET_FLAGGED = "target_reached 0 in per_query.csv"
#: Damage measures: per-query metric per kind of operator, and how the damage is read from it.
DAMAGES = {"ssim": "SSIM loss (1 − SSIM)", "drift": "embedding drift (1 − cos)"}
#: What the bin columns of each damage measure hold (the SSIM table's columns are SSIM, not its loss).
_BINNED = {"ssim": "measured SSIM", "drift": "embedding drift (1 − cos)"}
#: Slopes are shown per this much damage (0.1 SSIM loss, 0.1 drift), in points; an operator whose
#: measured damage never reaches it has no slope quoted (:attr:`Sensitivity.in_range`).
PER_DAMAGE = 0.1
#: A bin mean over fewer (query, severity) pairs is too noisy to read as a rate (one pair is 0 or
#: 100 %): the figure draws it hollow and does not join it into the operator's line.
MIN_BIN_COUNT = 5


@dataclass
class Sensitivity:
    """One operator's slope of the paired drop against a damage measure (see the module docstring)."""

    operator: str
    kind: str                       # "image" | "text"
    slope: float                    # metric change per unit damage (negative: it drops with damage)
    ci: tuple[float, float] | None
    n: int                          # (query, severity) pairs used
    mean_damage: float
    max_damage: float = math.inf    # the largest damage among those pairs

    @property
    def in_range(self) -> bool:
        """Whether the operator's measured damage reaches :data:`PER_DAMAGE`: only then is its slope
        quoted per that much damage (below, the value would extrapolate past its data)."""
        return self.max_damage >= PER_DAMAGE


@dataclass
class DamageAnalysis:
    """The damage view of one mode: binned metric means and slopes, per damage measure."""

    mode: str
    metric: str
    level: float
    #: damage -> operator -> one (mean, n) per bin (mean None for an empty bin)
    bins: dict[str, dict[str, list[tuple[float | None, int]]]] = field(default_factory=dict)
    #: damage -> operator -> its sensitivity
    slopes: dict[str, dict[str, Sensitivity]] = field(default_factory=dict)
    #: damage -> {"most", "least", "difference", "ci"} (least − most), when two operators have slopes
    extremes: dict[str, dict] = field(default_factory=dict)
    #: with a severity target: how the run's image variants met it, as run.json records it; None without one
    target: TargetOutcome | None = None


def _observations(pq: PerQuery, metric: str, damage: str) -> dict[str, tuple[str, list[tuple[np.ndarray, np.ndarray]]]]:
    """operator -> (kind, [(damage x, paired change d) per severity]), one value per query each."""
    clean = pq.array("clean", metric)
    out: dict[str, tuple[str, list[tuple[np.ndarray, np.ndarray]]]] = {}
    if clean is None:
        return out
    for cid in pq.values:
        c = parse_condition(cid)
        if c.kind not in ("image", "text"):
            continue
        key = "ssim" if damage == "ssim" else f"drift_{c.kind}"
        if damage == "ssim" and c.kind != "image":
            continue
        raw, y = pq.array(cid, key), pq.array(cid, metric)
        if raw is None or y is None:
            continue
        x = 1.0 - raw if damage == "ssim" else raw
        op = c.image_operator if c.kind == "image" else c.text_operator
        out.setdefault(op, (c.kind, []))[1].append((x, y - clean))
    return out


def _sensitivity_slopes(x: Sequence[np.ndarray], d: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per query, ``(Σ_s x·d, Σ_s x²)`` over an operator's severities (pairs with a non-finite value
    count 0): the slope over any multiset of queries is the ratio of the two sums."""
    xs, ds = np.stack([np.asarray(v, float) for v in x]), np.stack([np.asarray(v, float) for v in d])
    ok = np.isfinite(xs) & np.isfinite(ds)
    xs, ds = np.where(ok, xs, 0.0), np.where(ok, ds, 0.0)
    return (xs * ds).sum(axis=0), (xs * xs).sum(axis=0)


def _binned(x: np.ndarray, y: np.ndarray, edges: Sequence[float], descending: bool) -> list[tuple[float | None, int]]:
    out = []
    for a, b in zip(edges, edges[1:]):
        lo, hi = (b, a) if descending else (a, b)
        inside = (x >= lo) & ((x <= hi) if descending and hi == edges[0] else (x < hi))
        sel = y[inside & np.isfinite(y)]
        out.append((float(sel.mean()) if sel.size else None, int(sel.size)))
    return out


def _analyse(pq: PerQuery, metric: str, damage: str, res: DamageAnalysis, counts: np.ndarray) -> None:
    obs = _observations(pq, metric, damage)
    clean = pq.array("clean", metric)
    sums: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    res.bins[damage], res.slopes[damage] = {}, {}
    for op, (kind, pairs) in obs.items():
        a, b = _sensitivity_slopes([x for x, _ in pairs], [d for _, d in pairs])
        n = int(sum((np.isfinite(x) & np.isfinite(d)).sum() for x, d in pairs))
        if n == 0 or b.sum() <= 0:
            continue  # no measured damage at all: no slope to read
        sums[op] = (a, b)
        x_all = np.concatenate([x for x, _ in pairs])
        y_all = np.concatenate([d + clean for _, d in pairs])
        raw = 1.0 - x_all if damage == "ssim" else x_all
        res.bins[damage][op] = _binned(raw, y_all, SSIM_BINS if damage == "ssim" else DRIFT_BINS, damage == "ssim")
        boot = (counts @ a) / np.where(counts @ b > 0, counts @ b, np.nan)
        lo, hi = percentile_ci(boot, res.level)
        ci = (float(lo), float(hi)) if np.isfinite(lo) and np.isfinite(hi) else None
        finite_x = x_all[np.isfinite(x_all)]
        res.slopes[damage][op] = Sensitivity(op, kind, float(a.sum() / b.sum()), ci, n,
                                             float(np.mean(finite_x)), float(np.max(finite_x)))
    # most / least steep among the operators whose damage reaches the quoting unit only (steep in the metric's
    # bad direction: a rise of a higher-is-worse metric such as flip@k)
    sign = metric_sign(metric)
    ranked = sorted((s for s in res.slopes[damage].values() if s.in_range), key=lambda s: (sign * s.slope, s.operator))
    if len(ranked) >= 2:
        most, least = ranked[0], ranked[-1]
        (am, bm), (al, bl) = sums[most.operator], sums[least.operator]
        with np.errstate(invalid="ignore", divide="ignore"):
            diff = (counts @ al) / (counts @ bl) - (counts @ am) / (counts @ bm)
        lo, hi = percentile_ci(diff, res.level)
        res.extremes[damage] = {"most": most.operator, "least": least.operator,
                                "difference": least.slope - most.slope,
                                "ci": (float(lo), float(hi)) if np.isfinite(lo) and np.isfinite(hi) else None}


def damage_analysis(data: RunData, metric: str = "hit@1") -> DamageAnalysis | None:
    """The damage view of the run's primary mode, or None when its per-query table holds no measured
    damage (a run with ``--no-measure``, or from before measuring)."""
    mode = data.primary_mode
    pq = data.per_query.get(mode)
    if pq is None or not any(m in per for per in pq.values.values() for m in ("ssim", "drift_image", "drift_text")):
        return None
    rep = data.reports[mode]
    seed, resamples, level = boot_params(rep)
    counts = bootstrap_counts(len(pq.query_ids), min(resamples, MAX_RESAMPLES), seed, key="report.damage")
    res = DamageAnalysis(mode, metric, level, target=_recorded_target(data.run))
    for damage in DAMAGES:
        _analyse(pq, metric, damage, res, counts)
    return res


def _recorded_target(run: dict) -> TargetOutcome | None:
    """How the run's image variants met its severity target, as run.json records it; None without one."""
    if "severity_target_outcome" not in run:
        return None
    return TargetOutcome.from_json(run["severity_target_outcome"])


def _bin_labels(damage: str) -> list[str]:
    """Column labels of the bins of ``damage`` ("ssim" or "drift")."""
    if damage == "ssim":
        e = SSIM_BINS
        return [f"≥ {e[1]:g}"] + [f"{lo:g}–{hi:g}" for hi, lo in zip(e[1:-2], e[2:-1])] + [f"< {e[-2]:g}"]
    e = DRIFT_BINS
    return [f"< {e[1]:g}"] + [f"{lo:g}–{hi:g}" for lo, hi in zip(e[1:-2], e[2:-1])] + [f"≥ {e[-2]:g}"]


def _slope_cell(s: Sensitivity | None) -> Cell:
    if s is None:
        return Cell()
    if not s.in_range:
        return Cell(text=f"– (max {s.max_damage:.2g})")
    ci = None if s.ci is None else (s.ci[0] * PER_DAMAGE, s.ci[1] * PER_DAMAGE)
    return Cell(s.slope * PER_DAMAGE, ci, signed=True)


def _bin_cell(mean: float | None, n: int) -> Cell:
    return Cell(text="–" if mean is None else f"{points(mean)} ({n})")


def damage_tables(res: DamageAnalysis) -> list[Table]:
    """One table per damage measure: the metric per damage bin and the slope per 0.1 of damage."""
    lab, name = metric_label(res.metric), TARGET_NAMES.get(res.mode, res.mode)
    level = ci_label(res.level)
    out = []
    for damage, what in DAMAGES.items():
        bins, slopes = res.bins.get(damage, {}), res.slopes.get(damage, {})
        if not slopes:
            continue
        per = "SSIM loss" if damage == "ssim" else "drift"
        t = Table(f"damage_{damage}",
                  f"{name}: {lab} (%) by measured {'SSIM of the image variant' if damage == 'ssim' else what}, per "
                  f"operator; last column: Δ{lab} per {PER_DAMAGE:g} {per} (points, {level})",
                  ["operator", *_bin_labels(damage), f"Δ per {PER_DAMAGE:g} {per}"])
        for group, ops in operator_groups(sorted(slopes)):
            t.groups.append((group, [(op, [_bin_cell(m, n) for m, n in bins[op]] + [_slope_cell(slopes[op])])
                                     for op in ops]))
        edge = "a value on an edge counts in the bin above it" if damage == "ssim" else \
            "a value on an edge counts in the bin to its right"
        t.notes.append(f"Cells: mean {lab} (%) over the (query, severity) pairs whose {_BINNED[damage]} falls in the "
                       f"bin ({edge}), their number in brackets. Slope: the paired change (condition − clean) against "
                       f"the {what}, through the origin, over all of the operator's pairs; bootstrap over queries. "
                       f"'– (max x)': the operator's {what} never reaches {PER_DAMAGE:g} (largest x), so no slope "
                       f"per {PER_DAMAGE:g} is quoted for it: that would extrapolate past its data.")
        if damage == "ssim" and res.target is not None and res.target.missed:
            from ..corruptions.target import target_summary

            line = target_summary(res.target, TARGET_FLAGGED)
            t.notes.append(f"{line[0].upper()}{line[1:]}; each image variant is binned by the SSIM it measures.")
        out.append(t)
    return out


def _bins_panels(sub, res: DamageAnalysis, damage: str) -> None:
    """Small multiples: one panel per operator group (the tables' groups), a handful of lines each in
    colours of their own; bins of fewer than :data:`MIN_BIN_COUNT` pairs hollow and not joined."""
    labels = _bin_labels(damage)
    groups = operator_groups(sorted(res.slopes[damage]))
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
    err = np.nan_to_num(whiskers(v, lo, hi))
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
    heights = [1 + (len(operator_groups(sorted(res.slopes[d]))) - 1) // 4 for d in rows]
    fig = Figure(figsize=(13, sum(4.6 * h for h in heights)), layout="constrained")
    subs = np.atleast_1d(fig.subfigures(len(rows), 1, height_ratios=heights))
    for sub, damage in zip(subs, rows):
        left, right = sub.subfigures(1, 2, width_ratios=[3, 1.3])
        _bins_panels(left, res, damage)
        _slopes_panel(right.subplots(), res, damage)
        what = "SSIM loss" if damage == "ssim" else "embedding drift"
        binned = "measured SSIM of the image variant" if damage == "ssim" else "embedding drift (1 − cos)"
        left.suptitle(f"{TARGET_NAMES.get(res.mode, res.mode)}: {metric_label(res.metric)} by {binned} bin, per operator\n"
                      f"hollow: a bin of fewer than {MIN_BIN_COUNT} (query, severity) pairs, not joined to the line",
                      fontsize=9)
        right.suptitle(f"sensitivity at equal {what}", fontsize=10)
    return fig
