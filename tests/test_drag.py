"""Coarse-text drag: one computation (snapbench.evaluate.drag) for `run` and `evaluate`, checked
against a bootstrap recomputed here from the per-query values the run wrote."""

from __future__ import annotations

import json

import numpy as np
import pytest

from snapbench.commands.demo import DEFAULT_DATA
from snapbench.evaluate import bootstrap_counts
from snapbench.pipeline import RunOptions, run_benchmark
from snapbench.report import read_target_per_query


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
