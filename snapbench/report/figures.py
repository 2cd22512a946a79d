"""Report figures (matplotlib, Agg, no pyplot state): each has a title, labelled axes with units and
a legend, so it reads without the surrounding text.  Built on ``matplotlib.figure.Figure`` directly,
which needs no GUI backend and leaves the caller's pyplot state alone.
"""

from __future__ import annotations

import io
from collections.abc import Mapping

import numpy as np

from ..conditions import JOINT_PAIRS
from ..errors import ConfigError
from .aggregate import mode_drags, moor_gain, primitive_severity, text_share_curve
from .rundir import MODE_NAMES, RunData
from .tables import PAIR_ABBREV, image_operators, metric_label, severities

__all__ = [
    "REPORT_HINT",
    "additivity_heatmap_figure",
    "drag_figure",
    "fig_to_bytes",
    "modes_severity_figure",
    "moor_gain_figure",
    "primitive_bars_figure",
    "require_matplotlib",
    "severity_curves_figure",
    "text_share_figure",
]

REPORT_HINT = "pip install 'snapbench[report]'"
_STYLE = {"cliff": ("--", "s"), "gradual": ("-", "o"), "flat": (":", ".")}
_SEV_COLOURS = ("#9ecae1", "#4292c6", "#08519c", "#08306b", "#041c40")
_KIND_COLOURS = {"clean": "#444444", "image": "#2b7bba", "text": "#e08214", "joint": "#7b3294"}


def require_matplotlib():
    """Import matplotlib's Figure class, or fail with the extra to install."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ConfigError(f"figures need matplotlib: {REPORT_HINT}") from None
    return Figure


def fig_to_bytes(fig, fmt: str, dpi: int) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=dpi, bbox_inches="tight", metadata={"Creator": "snapbench report"}
                if fmt == "pdf" else None)
    return buf.getvalue()


def _pts(x):
    return None if x is None else 100.0 * x


def severity_curves_figure(report: dict, mode: str, metric: str = "hit@1"):
    """One panel per primitive: Δ(metric) vs severity for each operator, 95% CI band, line style by
    the report's cliff/gradual label."""
    Figure = require_matplotlib()
    groups = image_operators(report)
    if not groups:
        return None
    sevs = severities(report)
    lab = metric_label(metric)
    curves = report.get("severity_curves") or {}
    ncol = 2
    nrow = (len(groups) + 1) // 2
    fig = Figure(figsize=(10, 3.4 * nrow), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False, sharey=True)
    for ax, (prim, ops) in zip(axes.flat, groups):
        for op in ops:
            xs, ys, lo, hi = [0], [0.0], [0.0], [0.0]
            for s in sevs:
                pr = (report["paired"].get(f"img/{op}/s{s}") or {}).get(metric)
                if not pr or pr.get("delta") is None:
                    continue
                xs.append(s)
                ys.append(100 * pr["delta"])
                ci = pr.get("ci") or [None, None]
                lo.append(100 * ci[0] if ci[0] is not None else np.nan)
                hi.append(100 * ci[1] if ci[1] is not None else np.nan)
            label = ((curves.get(op) or {}).get(metric) or {}).get("label") or "unlabelled"
            ls, mk = _STYLE.get(label, ("-.", "^"))
            line, = ax.plot(xs, ys, ls, marker=mk, label=f"{op} ({label})")
            ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.15, linewidth=0)
        ax.axhline(0, color="grey", linewidth=0.8)
        ax.set_title(prim)
        ax.set_xticks([0] + sevs, ["clean"] + [f"s{s}" for s in sevs])
        ax.set_xlabel("severity")
        ax.set_ylabel(f"Δ{lab} (points)")
        ax.legend(fontsize=7, loc="lower left")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(groups):]:
        ax.set_visible(False)
    fig.suptitle(f"{MODE_NAMES.get(mode, mode)}: Δ{lab} vs severity per image operator "
                 "(band = 95% paired-bootstrap CI; dashed = cliff, solid = gradual, dotted = flat)", fontsize=10)
    return fig


def primitive_bars_figure(report: dict, mode: str, metric: str = "hit@1", pq=None):
    """Mean Δ per primitive and severity (bars), each operator as a dot; CI whiskers when per-query
    values allow a bootstrap of the primitive mean."""
    Figure = require_matplotlib()
    ps = primitive_severity(report, metric, pq)
    if not ps:
        return None
    lab = metric_label(metric)
    prims = list(ps)
    sevs = sorted({s for d in ps.values() for s in d})
    fig = Figure(figsize=(8, 4.2), layout="constrained")
    ax = fig.subplots()
    width = 0.8 / len(sevs)
    any_ci = False
    for j, s in enumerate(sevs):
        x = np.arange(len(prims)) + (j - (len(sevs) - 1) / 2) * width
        means = [100 * ps[p][s]["mean"] if s in ps[p] else np.nan for p in prims]
        err = None
        cis = [ps[p].get(s, {}).get("ci") for p in prims]
        if all(c is not None for c in cis):
            any_ci = True
            err = np.array([[m - 100 * c[0] for m, c in zip(means, cis)], [100 * c[1] - m for m, c in zip(means, cis)]])
            err = np.clip(err, 0, None)
        ax.bar(x, means, width, yerr=err, capsize=3, color=_SEV_COLOURS[j % len(_SEV_COLOURS)], label=f"s{s}")
        for xi, p in zip(x, prims):
            ops = ps[p].get(s, {}).get("ops", {})
            ax.scatter([xi] * len(ops), [100 * v for v in ops.values()], s=9, color="black", zorder=3,
                       label="single operator" if (j == 0 and xi == x[0]) else None)
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set_xticks(np.arange(len(prims)), [p.capitalize() for p in prims])
    ax.set_xlabel("image primitive")
    ax.set_ylabel(f"mean Δ{lab} over its operators (points)")
    ax.legend(title="severity", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(f"{MODE_NAMES.get(mode, mode)}: Δ{lab} by primitive and severity"
                 + (" (whiskers: 95% CI)" if any_ci else " (no CI: needs per_query.csv)"), fontsize=10)
    return fig


def additivity_heatmap_figure(report: dict, mode: str, metric: str = "hit@1"):
    """Pairs x severities coloured by δ = Obs − Exp (points), each cell annotated with δ and its CI."""
    Figure = require_matplotlib()
    from matplotlib.colors import TwoSlopeNorm

    from ..conditions import parse_condition

    cells: dict[str, dict[int, dict]] = {}
    for jid, e in (report.get("additivity") or {}).items():
        if metric in e:
            c = parse_condition(jid)
            cells.setdefault(f"{c.image_operator}+{c.text_operator}", {})[c.severity] = e[metric]
    if not cells:
        return None
    lab = metric_label(metric)
    order = [f"{i}+{t}" for i, t in JOINT_PAIRS]
    pairs = sorted(cells, key=lambda p: (order.index(p) if p in order else len(order), p))
    sevs = sorted({s for d in cells.values() for s in d})
    m = np.full((len(pairs), len(sevs)), np.nan)
    for i, p in enumerate(pairs):
        for j, s in enumerate(sevs):
            if s in cells[p] and cells[p][s].get("delta") is not None:
                m[i, j] = 100 * cells[p][s]["delta"]
    fig = Figure(figsize=(6.5, 0.75 * len(pairs) + 1.8), layout="constrained")
    ax = fig.subplots()
    lim = max(float(np.nanmax(np.abs(m))) if np.isfinite(m).any() else 0.0, 1.0)
    im = ax.imshow(m, cmap="RdBu_r", norm=TwoSlopeNorm(0.0, -lim, lim), aspect="auto")
    for i, p in enumerate(pairs):
        for j, s in enumerate(sevs):
            e = cells[p].get(s)
            if not e or e.get("delta") is None:
                continue
            ci = e.get("ci") or [None, None]
            txt = f"{100 * e['delta']:+.1f}"
            if ci[0] is not None:
                txt += f"\n[{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"
            ax.text(j, i, txt, ha="center", va="center", fontsize=8,
                    color="white" if abs(m[i, j]) > 0.6 * lim else "black")
    ax.set_xticks(range(len(sevs)), [f"s{s}" for s in sevs])
    ax.set_yticks(range(len(pairs)), [f"{PAIR_ABBREV.get(p, '')} {p}".strip() for p in pairs])
    ax.set_xlabel("image severity")
    ax.set_ylabel("joint pair (image + text operator)")
    cb = fig.colorbar(im, ax=ax)
    cb.set_label(f"δ = Obs − Exp ({lab} drop, points)")
    ax.set_title(f"{MODE_NAMES.get(mode, mode)}: additivity δ with 95% CI (> 0 = super-additive)", fontsize=10)
    return fig


def drag_figure(data: RunData, metric: str = "hit@1"):
    """Clean metric of each mode minus image-only I→I (IT→IT's is the coarse-text drag)."""
    Figure = require_matplotlib()
    drags = mode_drags(data, metric)
    if not drags:
        return None
    lab = metric_label(metric)
    modes = list(drags)
    vals = [100 * drags[m]["value"] for m in modes]
    fig = Figure(figsize=(6.5, 3.8), layout="constrained")
    ax = fig.subplots()
    colours = ["#c51b7d" if m == "IT2IT" else "#7f7f7f" for m in modes]
    bars = ax.bar(range(len(modes)), vals, color=colours, label=f"clean {lab}(mode) − {lab}(I→I)")
    ax.bar_label(bars, labels=[f"{v:+.1f}" for v in vals], padding=2, fontsize=8)
    for i, m in enumerate(modes):
        ci = drags[m]["ci"]
        if ci and ci[0] is not None:
            ax.errorbar(i, vals[i], yerr=[[max(vals[i] - 100 * ci[0], 0)], [max(100 * ci[1] - vals[i], 0)]],
                        color="black", capsize=4, label="95% CI" if i == 0 or "95% CI" not in
                        ax.get_legend_handles_labels()[1] else None)
    ax.axhline(0, color="grey", linewidth=0.8)
    # room above and below for the value labels, whatever the sign of the bars and their CIs
    ext = vals + [0.0] + [100 * c for m in modes for c in (drags[m]["ci"] or []) if c is not None]
    pad = max(1.0, 0.15 * (max(ext) - min(ext)))
    ax.set_ylim(min(ext) - pad, max(ext) + pad)
    ax.set_xticks(range(len(modes)), [MODE_NAMES.get(m, m) for m in modes])
    ax.set_xlabel("retrieval mode (magenta: IT→IT = coarse-text drag)")
    ax.set_ylabel(f"Δ clean {lab} vs I→I (points)")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(f"Coarse-text drag: clean {lab} of each mode minus image-only I→I", fontsize=10)
    return fig


def modes_severity_figure(data: RunData, metric: str = "hit@1"):
    """Mean Δ over the image operators per severity, one line per mode; the mean Δ of the text
    conditions as a separate point per mode."""
    Figure = require_matplotlib()
    from .aggregate import severity_means
    from .tables import kind_means

    lab = metric_label(metric)
    curves = {m: severity_means(r, metric) for m, r in data.reports.items()}
    curves = {m: c for m, c in curves.items() if c}
    if not curves:
        return None
    sevs = sorted({s for c in curves.values() for s in c})
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.subplots()
    xt = max(sevs) + 1
    for m in data.modes:
        if m not in curves:
            continue
        c = curves[m]
        line, = ax.plot([0] + list(c), [0.0] + [100 * v for v in c.values()], marker="o", label=MODE_NAMES.get(m, m))
        dt = kind_means(data.reports[m], metric)["d_text"]
        if dt is not None:
            ax.plot([xt], [100 * dt], marker="D", linestyle="none", color=line.get_color())
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.axvline(xt - 0.5, color="grey", linewidth=0.6, linestyle=":")
    ax.set_xticks([0] + sevs + [xt], ["clean"] + [f"s{s}" for s in sevs] + ["text\n(mean)"])
    ax.set_xlabel("image severity (right: mean over text conditions, diamonds)")
    ax.set_ylabel(f"mean Δ{lab} (points)")
    ax.legend(title="mode", fontsize=8)
    ax.grid(alpha=0.3)
    ax.set_title(f"Mean Δ{lab} over image operators by severity, per mode", fontsize=10)
    return fig


def moor_gain_figure(data: RunData, metric: str = "hit@1"):
    """MOOR minus fixed fusion IT→IT per condition, coloured by condition kind."""
    Figure = require_matplotlib()
    from ..conditions import parse_condition

    gain = moor_gain(data, metric)
    if not gain:
        return None
    lab = metric_label(metric)
    conds = list(gain)
    kinds = [parse_condition(c).kind for c in conds]
    vals = np.array([100 * gain[c]["value"] for c in conds])
    fig = Figure(figsize=(max(8.0, 0.16 * len(conds) + 2), 4.6), layout="constrained")
    ax = fig.subplots()
    x = np.arange(len(conds))
    for kind, colour in _KIND_COLOURS.items():
        idx = [i for i, k in enumerate(kinds) if k == kind]
        if idx:
            ax.bar(x[idx], vals[idx], color=colour, label=kind)
    cis = [gain[c]["ci"] for c in conds]
    if all(ci is not None for ci in cis):
        lo = np.array([100 * c[0] for c in cis])
        hi = np.array([100 * c[1] for c in cis])
        ax.errorbar(x, vals, yerr=[np.clip(vals - lo, 0, None), np.clip(hi - vals, 0, None)], fmt="none",
                    ecolor="black", elinewidth=0.6, capsize=1.5, label="95% CI")
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.axhline(float(vals.mean()), color="#1a9850", linestyle="--", linewidth=1, label=f"mean {vals.mean():+.1f}")
    ax.set_xticks(x, conds, rotation=90, fontsize=6)
    ax.set_xlim(-0.7, len(conds) - 0.3)
    ax.set_xlabel("condition")
    ax.set_ylabel(f"{lab}(MOOR) − {lab}(IT→IT) (points)")
    ax.legend(fontsize=8, ncol=3)
    ax.grid(axis="y", alpha=0.3)
    ax.set_title("MOOR's gain over fixed fusion IT→IT (α = 0.5) per condition; > 0 = MOOR better", fontsize=10)
    return fig


def text_share_figure(share: Mapping[str, float]):
    """Mean text-path share of MOOR's weights vs image severity, per primitive and overall."""
    Figure = require_matplotlib()
    tc = text_share_curve(share)
    if not tc["by_severity"]:
        return None
    fig = Figure(figsize=(6.5, 4), layout="constrained")
    ax = fig.subplots()
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
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax.set_title("MOOR: mean text-path weight share as image severity rises", fontsize=10)
    return fig
