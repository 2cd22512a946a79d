"""The comparison's figures and page read: the heatmap names each operator once in a legible font
(severities as digits under their columns), labels of coinciding points in the effective plot are
merged, the caption names the fit only when it is drawn, and wide tables scroll inside the page."""

from __future__ import annotations

import numpy as np
import pytest

from snapbench.compare import CompareConfig, ModelValues, compare_models
from snapbench.compare.figures import _point_labels, effective_caption, heatmap_figure
from snapbench.compare.view import MetricView
from snapbench.conditions import list_conditions

pytest.importorskip("matplotlib")
CONDS = ["clean"] + [c.id for c in list_conditions(joint=True)[1:]]
Q = 40


def _values(seed: int, clean: float = 0.9) -> dict[str, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return {c: {"hit@1": (rng.random(Q) < (clean if c == "clean" else clean - 0.3 * rng.random())).astype(float)}
            for c in CONDS}


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
