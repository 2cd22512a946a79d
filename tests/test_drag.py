"""Coarse-text drag: one computation (snapbench.evaluate.paired) for `run` and `evaluate`, checked
against a bootstrap recomputed here from the per-query values the run wrote."""

from __future__ import annotations

import json

import numpy as np
import pytest

from snapbench.app.stages import RunOptions, run_benchmark
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.evaluate import EvaluationConfig, Labels, bootstrap_counts, coarse_text_drag_ci, evaluate_matrix
from snapbench.store.rundir import read_target_per_query


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("drag")
    run_benchmark(DEFAULT_DATA, "toy", out, RunOptions(conditions=["clean", "txt/char_add"], joint=False, resamples=300,
                                                       seed=5, report=False, progress=False, use_cache=False))
    return out


@pytest.mark.parametrize("mode", ["T2T", "IT2IT", "MOOR"])
def test_run_drag_is_the_paired_bootstrap_of_clean_hit1_against_i2i(run, mode):
    rep = json.loads((run / mode / "report.json").read_text())
    drag = rep["coarse_text_drag"]
    joint = read_target_per_query(run, mode).array("clean", "hit@1")
    image = read_target_per_query(run, "I2I").array("clean", "hit@1")
    counted = np.isfinite(image)  # the zero-GT query of the demo does not count (and is never drawn)
    assert counted.sum() == 11 and np.array_equal(counted, np.isfinite(joint))
    x = joint[counted] - image[counted]
    w = bootstrap_counts(int(counted.sum()), 300, seed=5)
    lo, hi = np.quantile(w @ x / counted.sum(), [0.025, 0.975])
    assert drag["value"] == pytest.approx(x.mean(), abs=1e-12)
    assert drag["ci"] == pytest.approx([lo, hi], abs=1e-12)
    assert (drag["joint"], drag["metric"]) == (mode, "hit@1")
    assert "coarse_text_drag" not in json.loads((run / "I2I" / "report.json").read_text())


def _top1_scores(top: list[int], n_items: int) -> np.ndarray:
    """Scores whose top-1 item of row q is top[q] (the others lower, distinct)."""
    s = np.tile(np.linspace(0.1, 0.2, n_items), (len(top), 1))
    s[np.arange(len(top)), top] = 0.9
    return s


@pytest.mark.parametrize("include_zero_gt", [False, True])
def test_drag_of_two_score_matrices_by_hand(include_zero_gt):
    """hit@1 read off the top-1 items by hand; the zero-GT query q5 follows --include-zero-gt like every
    ranking metric (left out, or counted as a miss of both)."""
    positives = [[0], [1], [2], [1], [0], []]
    image_hits = np.array([1, 1, 1, 0, 0, 0.0])  # top-1 items 0, 1, 2, 0, 2, 1
    joint_hits = np.array([0, 1, 0, 1, 0, 0.0])  # top-1 items 1, 1, 0, 1, 1, 0
    labels = Labels.from_lists(positives, 3)
    cfg = EvaluationConfig(resamples=500, seed=11, include_zero_gt=include_zero_gt, workers=1)

    def hit1(top):
        return evaluate_matrix(_top1_scores(top, 3), labels, ["hit@1"], include_zero_gt=include_zero_gt).stats["hit@1"]

    drag = coarse_text_drag_ci(hit1([1, 1, 0, 1, 1, 0]), hit1([0, 1, 2, 0, 2, 1]), labels, cfg, joint_label="IT2IT")
    n = 6 if include_zero_gt else 5
    x = (joint_hits - image_hits)[:n]
    assert drag.value == pytest.approx(-1 / 6 if include_zero_gt else -1 / 5, abs=1e-12)
    assert (drag.image_value, drag.joint_value) == pytest.approx((3 / n, 2 / n), abs=1e-12)
    lo, hi = np.quantile(bootstrap_counts(n, 500, seed=11) @ x / n, [0.025, 0.975])
    assert drag.ci == pytest.approx((lo, hi), abs=1e-12)
    assert (drag.metric, drag.joint) == ("hit@1", "IT2IT")
