"""Report figures (matplotlib, Agg, no pyplot state): each has a title, labelled axes with units and
a legend, so it reads without the surrounding text.  Built on ``matplotlib.figure.Figure`` directly,
which needs no GUI backend and leaves the caller's pyplot state alone.

Figures say only what the numbers say: values are plotted in points with float noise below
:data:`_NOISE` points shown as 0 (no ``1e-17`` axis offset on an all-zero curve, no axis offsets at
all), every annotation goes through :func:`snapbench.render.fmt.points` (never ``-0.0``), and
per-condition bars are grouped (image operators x severity, text operators, joint pairs x severity)
so that labels stay readable at the page's width.
"""

from __future__ import annotations

import io
from collections.abc import Mapping

import numpy as np

from ..core.conditions import parse_condition
from ..core.errors import ConfigError
from ..core.install_hint import import_extra
from ..core.records import Report
from ..core.validate import positive_int
from ..store.folders import PER_QUERY_CSV
from ..store.rundir import TARGET_NAMES, RunData
from .aggregate import mode_drags, moor_gain, primitive_severity, severity_means, text_share_curve
from .fmt import DROP_SIGN, ci_label, ci_text, points
from .tables import additivity_by_pair, image_id, image_operators, kind_means, metric_label, pair_label, severities

__all__ = [
    "check_dpi",
    "additivity_heatmap_figure",
    "drag_figure",
    "fig_to_bytes",
    "legend_outside",
    "one_axes",
    "modes_severity_figure",
    "moor_gain_figure",
    "primitive_bars_figure",
    "require_matplotlib",
    "severity_curves_figure",
    "text_share_figure",
    "whiskers",
]

_STYLE = {"cliff": ("--", "s"), "gradual": ("-", "o"), "flat": (":", ".")}
_SEV_COLOURS = ("#9ecae1", "#4292c6", "#08519c", "#08306b", "#041c40")
_KIND_COLOURS = {"clean": "#444444", "image": "#2b7bba", "text": "#e08214", "joint": "#7b3294"}


def require_matplotlib():
    """Import matplotlib's Figure class, or fail with the extra to install."""
    return import_extra("matplotlib.figure", "report", "figures need matplotlib", error=ConfigError).Figure


#: The resolutions (dots per inch) a PNG figure may have (``--dpi`` of report and compare).
_DPI_RANGE: tuple[int, int] = (50, 600)


def check_dpi(dpi: int) -> int:
    """``dpi`` when it is an integer in :data:`_DPI_RANGE`; ConfigError (``param="dpi"``) otherwise."""
    return positive_int(dpi, "dpi", minimum=_DPI_RANGE[0], maximum=_DPI_RANGE[1])


def one_axes(figsize: tuple[float, float]):
    """``(fig, ax)``: a figure of ``figsize`` inches (constrained layout) with one axes."""
    fig = require_matplotlib()(figsize=figsize, layout="constrained")
    return fig, fig.subplots()


def whiskers(y, lo, hi) -> np.ndarray:
    """``yerr`` of error bars from values ``y`` and their CI bounds (the same units), never negative."""
    y = np.asarray(y, float)
    return np.clip(np.vstack([y - np.asarray(lo, float), np.asarray(hi, float) - y]), 0, None)


def fig_to_bytes(fig, fmt: str, dpi: int) -> bytes:
    # no CreationDate in a PDF: a figure is a function of the run's numbers, so a resumed or repeated
    # run writes the same bytes
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=dpi, bbox_inches="tight",
                metadata={"Creator": "snapbench report", "CreationDate": None} if fmt == "pdf" else None)
    return buf.getvalue()


#: Differences smaller than this (in points) are float noise, plotted as 0.
_NOISE = 1e-9


def to_points(x: float | None) -> float:
    """``x`` in points for plotting: NaN when undefined, 0 for float noise."""
    if x is None:
        return np.nan
    v = 100.0 * float(x)
    return 0.0 if abs(v) < _NOISE else v


def legend_outside(ax, *, below: bool = False, **kw):
    """The legend right of the axes, top-aligned (``below``: under the x label, for a figure whose
    width the plot needs): off the data, whatever the data (a legend inside the axes covers lines,
    bands or whiskers somewhere)."""
    if below:
        return ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), borderaxespad=0, **kw)
    return ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, **kw)


def tidy_axes(ax, *, min_span: float = 1.0) -> None:
    """No offset/scientific notation on the axes, and at least ``min_span`` points of y range (a
    flat curve at 0 gets a readable -1..1 axis instead of one scaled to float noise).  With a shared
    y axis, call it once after every panel is drawn."""
    for a in [ax, *ax.get_shared_y_axes().get_siblings(ax)]:
        for axis in (a.xaxis, a.yaxis):
            fmt = axis.get_major_formatter()
            if hasattr(fmt, "set_useOffset"):
                fmt.set_useOffset(False)
                fmt.set_scientific(False)
    lo, hi = ax.get_ylim()
    if hi - lo < 2 * min_span:
        mid = (lo + hi) / 2
        ax.set_ylim(mid - min_span, mid + min_span)


def severity_curves_figure(report: Report, mode: str, metric: str = "hit@1"):
    """One panel per primitive: Δ(metric) vs severity for each operator, CI band, line style by
    the report's cliff/gradual label."""
    Figure = require_matplotlib()
    groups = image_operators(report)
    if not groups:
        return None
    sevs = severities(report)
    lab = metric_label(metric)
    nrow = (len(groups) + 1) // 2
    fig = Figure(figsize=(12, 3.4 * nrow), layout="constrained")  # wide enough for the legends beside the panels
    axes = fig.subplots(nrow, 2, squeeze=False, sharey=True)
    for ax, (prim, ops) in zip(axes.flat, groups):
        for op in ops:
            xs, ys, lo, hi = [0], [0.0], [0.0], [0.0]
            for s in sevs:
                pr = report.paired.get(image_id(op, s), {}).get(metric)
                if pr is None or pr.delta is None:
                    continue
                xs.append(s)
                ys.append(to_points(pr.delta))
                lo.append(to_points(pr.ci[0]))
                hi.append(to_points(pr.ci[1]))
            curve = report.severity_curves.get(op, {}).get(metric)
            label = curve.label if curve else "unlabelled"
            ls, mk = _STYLE.get(label, ("-.", "^"))
            line, = ax.plot(xs, ys, ls, marker=mk, label=f"{op} ({label})")
            ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.15, linewidth=0)
        ax.axhline(0, color="grey", linewidth=0.8)
        ax.set_title(prim)
        ax.set_xticks([0] + sevs, ["clean"] + [f"s{s}" for s in sevs])
        ax.set_xlabel("severity")
        ax.set_ylabel(f"Δ{lab} (points, condition − clean)")
        legend_outside(ax, fontsize=7)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(groups):]:
        ax.set_visible(False)
    tidy_axes(axes.flat[0])  # after every panel is drawn: the y axis is shared
    fig.suptitle(f"{TARGET_NAMES.get(mode, mode)}: Δ{lab} vs severity per image operator "
                 f"(band = {ci_label(report.meta.ci_level)}, paired bootstrap; dashed = cliff, solid = gradual, dotted = flat)",
                 fontsize=10)
    return fig


def primitive_bars_figure(report: Report, mode: str, metric: str = "hit@1", pq=None):
    """Mean Δ per primitive and severity (bars), each operator as a dot; CI whiskers when per-query
    values allow a bootstrap of the primitive mean."""
    ps = primitive_severity(report, metric, pq)
    if not ps:
        return None
    lab = metric_label(metric)
    prims = list(ps)
    sevs = sorted({s for d in ps.values() for s in d})
    fig, ax = one_axes((8, 4.2))
    width = 0.8 / len(sevs)
    any_ci = False
    for j, s in enumerate(sevs):
        x = np.arange(len(prims)) + (j - (len(sevs) - 1) / 2) * width
        means = [to_points(ps[p][s]["mean"]) if s in ps[p] else np.nan for p in prims]
        err = None
        cis = [ps[p].get(s, {}).get("ci") for p in prims]
        if all(c is not None for c in cis):
            any_ci = True
            err = whiskers(means, [to_points(c[0]) for c in cis], [to_points(c[1]) for c in cis])
        ax.bar(x, means, width, yerr=err, capsize=3, color=_SEV_COLOURS[j % len(_SEV_COLOURS)], label=f"s{s}")
        for xi, p in zip(x, prims):
            ops = ps[p].get(s, {}).get("ops", {})
            ax.scatter([xi] * len(ops), [to_points(v) for v in ops.values()], s=9, color="black", zorder=3,
                       label="single operator" if (j == 0 and xi == x[0]) else None)
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set_xticks(np.arange(len(prims)), [p.capitalize() for p in prims])
    ax.set_xlabel("image primitive")
    ax.set_ylabel(f"mean Δ{lab} over its operators (points)")
    legend_outside(ax, title="severity", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    tidy_axes(ax)
    ax.set_title(f"{TARGET_NAMES.get(mode, mode)}: Δ{lab} by primitive and severity"
                 + (f" (whiskers: {ci_label(report.meta.ci_level)})" if any_ci else " (no CI: needs per_query.csv)"), fontsize=10)
    return fig


def additivity_heatmap_figure(report: Report, mode: str, metric: str = "hit@1"):
    """Pairs x severities coloured by δ = Obs − Exp (points), each cell annotated with δ and its CI."""
    require_matplotlib()  # before importing from matplotlib: a missing one is a ConfigError
    from matplotlib.colors import TwoSlopeNorm

    cells = additivity_by_pair(report, metric)
    if not cells:
        return None
    lab = metric_label(metric)
    pairs = list(cells)
    sevs = sorted({s for d in cells.values() for s in d})
    m = np.array([[to_points(cells[p][s].delta) if s in cells[p] else np.nan for s in sevs] for p in pairs])
    fig, ax = one_axes((6.5, 0.75 * len(pairs) + 1.8))
    lim = max(float(np.nanmax(np.abs(m))) if np.isfinite(m).any() else 0.0, 1.0)
    im = ax.imshow(m, cmap="RdBu_r", norm=TwoSlopeNorm(0.0, -lim, lim), aspect="auto")
    for i, p in enumerate(pairs):
        for j, s in enumerate(sevs):
            e = cells[p].get(s)
            if e is None or e.delta is None:
                continue
            txt = points(e.delta, signed=True)
            if e.ci[0] is not None:
                txt += "\n" + ci_text(e.ci)
            ax.text(j, i, txt, ha="center", va="center", fontsize=8,
                    color="white" if abs(m[i, j]) > 0.6 * lim else "black")
    ax.set_xticks(range(len(sevs)), [f"s{s}" for s in sevs])
    ax.set_yticks(range(len(pairs)), [pair_label(p) for p in pairs])
    ax.set_xlabel("image severity")
    ax.set_ylabel("joint pair (image + text operator)")
    cb = fig.colorbar(im, ax=ax)
    cb.set_label(f"δ = Obs − Exp (points; {lab} {DROP_SIGN})")
    ax.set_title(f"{TARGET_NAMES.get(mode, mode)}: additivity δ with {ci_label(report.meta.ci_level)} (> 0 = super-additive)",
                 fontsize=10)
    return fig


def drag_figure(data: RunData, metric: str = "hit@1"):
    """Clean metric of each mode minus image-only I→I (IT→IT's is the coarse-text drag)."""
    require_matplotlib()  # before importing from matplotlib: a missing one is a ConfigError
    from matplotlib.patches import Patch

    drags = mode_drags(data, metric)
    if not drags:
        return None
    lab = metric_label(metric)
    modes = list(drags)
    vals = [to_points(drags[m]["value"]) for m in modes]
    fig, ax = one_axes((6.5, 3.8))
    drag_colour, other_colour = "#c51b7d", "#7f7f7f"
    colours = [drag_colour if m == "IT2IT" else other_colour for m in modes]
    ax.bar(range(len(modes)), vals, color=colours)
    # a bar of height 0 is invisible: each value is also a thick line in its bar's colour
    ax.hlines(vals, [i - 0.4 for i in range(len(modes))], [i + 0.4 for i in range(len(modes))], colors=colours, linewidth=3)
    for i, m in enumerate(modes):  # beside the CI whisker (at the bar's centre), not on it
        ax.annotate(points(drags[m]["value"], signed=True), (i + 0.08, vals[i]), xytext=(0, 3 if vals[i] >= 0 else -3),
                    textcoords="offset points", ha="left", va="bottom" if vals[i] >= 0 else "top", fontsize=8)
    handles = [Patch(color=drag_colour, label="IT→IT: the coarse-text drag"), Patch(color=other_colour, label="other modes")]
    for i, m in enumerate(modes):
        ci = drags[m]["ci"]
        if ci and ci[0] is not None:
            eb = ax.errorbar(i, vals[i], yerr=whiskers([vals[i]], [to_points(ci[0])], [to_points(ci[1])]),
                             color="black", capsize=4)
            if len(handles) == 2:
                eb.set_label(ci_label(data.reports[m].meta.ci_level))
                handles.append(eb)
    ax.axhline(0, color="grey", linewidth=0.8)
    # room above and below for the value labels, whatever the sign of the bars and their CIs
    ext = vals + [0.0] + [to_points(c) for m in modes for c in (drags[m]["ci"] or []) if c is not None]
    pad = max(1.0, 0.15 * (max(ext) - min(ext)))
    ax.set_ylim(min(ext) - pad, max(ext) + pad)
    ax.set_xticks(range(len(modes)), [TARGET_NAMES.get(m, m) for m in modes])
    ax.set_xlabel("retrieval mode")
    ax.set_ylabel(f"clean {lab}(mode) − {lab}(I→I) (points)")
    legend_outside(ax, handles=handles, fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    tidy_axes(ax)
    ax.set_title(f"Coarse-text drag: clean {lab} of each mode minus image-only I→I", fontsize=10)
    return fig


def modes_severity_figure(data: RunData, metric: str = "hit@1"):
    """Mean Δ over the image operators per severity, one line per mode; the mean Δ of the text
    conditions as a separate point per mode."""
    lab = metric_label(metric)
    curves = {m: severity_means(r, metric) for m, r in data.reports.items()}
    curves = {m: c for m, c in curves.items() if c}
    if not curves:
        return None
    sevs = sorted({s for c in curves.values() for s in c})
    fig, ax = one_axes((7, 4))
    xt = max(sevs) + 1
    for m in data.modes:
        if m not in curves:
            continue
        c = curves[m]
        line, = ax.plot([0] + list(c), [0.0] + [to_points(v) for v in c.values()], marker="o", label=TARGET_NAMES.get(m, m))
        dt = kind_means(data.reports[m], metric, m)["d_text"]
        if dt is not None:
            ax.plot([xt], [to_points(dt)], marker="D", linestyle="none", color=line.get_color())
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.axvline(xt - 0.5, color="grey", linewidth=0.6, linestyle=":")
    ax.set_xticks([0] + sevs + [xt], ["clean"] + [f"s{s}" for s in sevs] + ["text\n(mean)"])
    ax.set_xlabel("image severity (right: mean over text conditions, diamonds)")
    ax.set_ylabel(f"mean Δ{lab} (points, condition − clean)")
    legend_outside(ax, title="mode", fontsize=8)
    ax.grid(alpha=0.3)
    tidy_axes(ax)
    ax.set_title(f"Mean Δ{lab} over image operators by severity, per mode", fontsize=10)
    return fig


def _gain_panels(gain: Mapping[str, dict]) -> list[tuple[str, list[str], list[int | None], dict]]:
    """MOOR's gains grouped for plotting: ``(title, group labels, severities, {(label, sev): entry})``
    for image operators, text operators and joint pairs -- a few dozen readable labels, not one per
    condition."""
    panels: dict[str, tuple[list[str], set, dict]] = {}
    for cid, e in gain.items():
        c = parse_condition(cid)
        if c.kind == "clean":
            key, label, sev = "clean", "clean", None
        elif c.kind == "image":
            key, label, sev = "image operators", c.image_operator, c.severity
        elif c.kind == "text":
            key, label, sev = "text operators", c.text_operator, None
        else:
            key, label, sev = "joint pairs", pair_label(f"{c.image_operator}+{c.text_operator}"), c.severity
        labels, sevs, cells = panels.setdefault(key, ([], set(), {}))
        if label not in labels:
            labels.append(label)
        sevs.add(sev)
        cells[(label, sev)] = e
    order = ("clean", "image operators", "text operators", "joint pairs")
    return [(k, panels[k][0], sorted(panels[k][1], key=lambda s: s or 0), panels[k][2]) for k in order if k in panels]


def moor_gain_figure(data: RunData, metric: str = "hit@1"):
    """MOOR minus fixed fusion IT→IT per condition: one panel per condition kind, bars per operator
    (one per severity), so every label is readable."""
    Figure = require_matplotlib()
    gain = moor_gain(data, metric)
    if not gain:
        return None
    lab = metric_label(metric)
    panels = _gain_panels(gain)
    level = ci_label(data.reports["MOOR"].meta.ci_level)
    widths = [len(labels) + 1 for _, labels, _, _ in panels]
    fig = Figure(figsize=(max(8.0, 0.3 * sum(widths) + 1.5), 4.8), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False, sharey=True, width_ratios=widths)[0]
    with_ci = all(e["ci"] is not None for e in gain.values())
    for ax, (title, labels, sevs, cells) in zip(axes, panels):
        width = 0.8 / len(sevs)
        for j, s in enumerate(sevs):
            x = np.arange(len(labels)) + (j - (len(sevs) - 1) / 2) * width
            es = [cells.get((lb, s)) for lb in labels]
            ys = np.array([to_points(e["value"]) if e else np.nan for e in es])
            colour = _KIND_COLOURS["text"] if s is None else _SEV_COLOURS[j % len(_SEV_COLOURS)]
            ax.bar(x, ys, width, color=colour, label=None if s is None else f"s{s}")
            if with_ci:
                lo = np.array([to_points(e["ci"][0]) if e else np.nan for e in es])
                hi = np.array([to_points(e["ci"][1]) if e else np.nan for e in es])
                ax.errorbar(x, ys, yerr=whiskers(ys, lo, hi), fmt="none",
                            ecolor="black", elinewidth=0.6, capsize=1.5)
        ax.axhline(0, color="grey", linewidth=0.8)
        ax.set_xticks(np.arange(len(labels)), labels, rotation=45, ha="right", fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    # one severity legend, right of the last panel (inside a panel it covers bars)
    with_sev = [ax for ax, (_, _, sevs, _) in zip(axes, panels) if any(s is not None for s in sevs)]
    if with_sev:
        legend_outside(axes[-1], handles=with_sev[0].get_legend_handles_labels()[0], title="severity", fontsize=7,
                       title_fontsize=7)
    tidy_axes(axes[0])  # after every panel is drawn: the y axis is shared
    axes[0].set_ylabel(f"{lab}(MOOR) − {lab}(IT→IT) (points)")
    mean = float(np.mean([e["value"] for e in gain.values()]))
    fig.suptitle(f"MOOR's gain over fixed fusion IT→IT (α = 0.5) per condition; > 0 = MOOR higher; mean "
                 f"{points(mean, signed=True)} points"
                 + (f"; whiskers: {level}" if with_ci else f"; no CI without {PER_QUERY_CSV}"), fontsize=10)
    return fig


def text_share_figure(share: Mapping[str, float]):
    """Mean text-path share of MOOR's weights vs image severity, per primitive and overall."""
    tc = text_share_curve(share)
    if not tc["by_severity"]:
        return None
    fig, ax = one_axes((6.5, 4))
    clean = tc["clean"]
    for prim, d in tc["by_primitive"].items():
        xs = ([0] if clean is not None else []) + list(d)
        ys = ([clean] if clean is not None else []) + list(d.values())
        ax.plot(xs, ys, marker="o", linewidth=1, alpha=0.8, label=prim.capitalize())
    d = tc["by_severity"]
    xs = ([0] if clean is not None else []) + list(d)
    ys = ([clean] if clean is not None else []) + list(d.values())
    ax.plot(xs, ys, color="black", linewidth=2.5, marker="D", label="all image operators")
    if tc["joint"]:
        ax.plot(list(tc["joint"]), list(tc["joint"].values()), color="#7b3294", linestyle="--", marker="^",
                label="joint conditions")
    if tc["text"] is not None:
        ax.axhline(tc["text"], color="#e08214", linestyle=":", label="text conditions (mean)")
    ax.set_xticks([0] + list(d), ["clean"] + [f"s{s}" for s in d])
    ax.set_xlabel("image severity")
    ax.set_ylabel("text-path share (w_TT + w_IT + w_TI) / Σw")
    legend_outside(ax, fontsize=8)
    ax.grid(alpha=0.3)
    tidy_axes(ax, min_span=0.0)
    ax.set_title("MOOR: mean text-path weight share as image severity rises", fontsize=10)
    return fig
