"""The report's figures read without the text (issue 28 point 6): the damage figure as small
multiples with few lines a panel, bins of too few pairs hollow and not joined, legends off the data,
and no slope quoted for an operator whose damage never reaches the quoting unit.  The analysis is
built by hand, so which bins are thin and which slopes are out of range is known here."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402

from snapbench.render.damage import (
    MIN_BIN_COUNT,
    PER_DAMAGE,
    DamageAnalysis,
    Sensitivity,
    damage_figure,  # noqa: E402
    damage_tables,
)

IMAGE_OPS = ["low_light", "overexposure", "defocus_blur", "motion_blur", "compression", "low_resolution",
             "rotation", "perspective", "lens_distortion", "cropping", "downscale", "watermark", "mosaic",
             "scribble", "ui_elements"]


def _analysis() -> tuple[DamageAnalysis, dict[str, list[int]]]:
    rng = np.random.default_rng(0)
    res = DamageAnalysis("IT2IT", "hit@1", 0.95)
    counts = {op: [int(c) for c in rng.integers(0, 12, 7)] for op in IMAGE_OPS}
    counts["low_light"] = [9, 1, 0, 7, 2, 8, 1]  # thin bins at 1, 4 and 6
    res.bins["ssim"] = {op: [(None if n == 0 else float(rng.uniform()), n) for n in c] for op, c in counts.items()}
    res.slopes["ssim"] = {op: Sensitivity(op, "image", -0.5 * (i + 1) / len(IMAGE_OPS), (-1.0, 0.0), 30, 0.2,
                                          0.05 if op == "compression" else 0.4)
                          for i, op in enumerate(IMAGE_OPS)}
    return res, counts


def _draw(fig):
    FigureCanvasAgg(fig).draw()
    return fig.canvas.get_renderer()


def test_the_bins_are_small_multiples_with_distinct_colours_and_thin_bins_not_joined():
    res, counts = _analysis()
    fig = damage_figure(res)
    _draw(fig)
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.get_title() in ("Degrade", "Transform", "Remove", "Add")]
    assert sorted(ax.get_title() for ax in panels) == ["Add", "Degrade", "Remove", "Transform"]
    for ax in panels:
        lines = [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]
        assert len(lines) <= 6
        assert len({ln.get_color() for ln in lines}) == len(lines)  # no colour reused within a panel
    degrade = next(ax for ax in panels if ax.get_title() == "Degrade")
    line = next(ln for ln in degrade.get_lines() if ln.get_label() == "low_light")
    y = np.asarray(line.get_ydata(), dtype=float)
    thin = [i for i, n in enumerate(counts["low_light"]) if n < MIN_BIN_COUNT]
    assert thin == [1, 2, 4, 6]
    assert all(math.isnan(y[i]) for i in thin)  # never joined into the line
    assert all(not math.isnan(y[i]) for i in range(7) if i not in thin)
    # the thin non-empty bins are still drawn, hollow, in the operator's colour
    hollow = [ln for ln in degrade.get_lines() if ln.get_color() == line.get_color() and ln is not line]
    assert len(hollow) == 1 and hollow[0].get_markerfacecolor() == "none"
    hy = np.asarray(hollow[0].get_ydata(), dtype=float)
    assert [i for i in range(7) if not math.isnan(hy[i])] == [1, 4, 6]


def test_legends_lie_off_the_data():
    res, _ = _analysis()
    fig = damage_figure(res)
    renderer = _draw(fig)
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is None or not ax.get_visible():
            continue
        box, area = leg.get_window_extent(renderer), ax.get_window_extent(renderer)
        assert box.y1 <= area.y0 + 1, ax.get_title()  # under the panel, not on it


def test_no_slope_is_quoted_beyond_the_range_of_the_data():
    res, _ = _analysis()
    fig = damage_figure(res)
    _draw(fig)
    slopes = next(ax for ax in fig.axes if "per 0.1 SSIM loss" in ax.get_xlabel())
    shown = [t.get_text() for t in slopes.get_yticklabels()]
    assert "compression" not in shown and len(shown) == len(IMAGE_OPS) - 1
    assert "compression" in slopes.get_xlabel()  # named as not shown
    (table,) = damage_tables(res)
    row = dict(table.groups[0][1] + table.groups[1][1] + table.groups[2][1] + table.groups[3][1])
    assert row["compression"][-1].text == "– (max 0.05)"
    assert row["low_light"][-1].value == pytest.approx(-0.5 / len(IMAGE_OPS) * PER_DAMAGE)
