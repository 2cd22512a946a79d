"""The findings of `snapbench compare` say what the numbers say, on real runs of the demo: toy, a copy
of toy, and a "blind" model that ranks by the text alone (every image the same vector), so image
corruptions cannot hurt it but its clean R@1 is lower.

* a tier of two models is "the two models are not told apart", never "none of the 2 models is told
  apart from the best" (which counts the best);
* one pair of models has nothing to adjust its overall p over;
* effective robustness of three models whose points lie on one line (toy twice) is float noise:
  equal as written reads as equal;
* the model that drops least from a much lower clean value is said to have less to lose.

Expected clean values come from the runs' own reports, not from compare."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from snapbench.app.stages import RunOptions, run_encoders
from snapbench.cli import app
from snapbench.core.defaults import DEFAULT_DATA

runner = CliRunner()
CONDS = ["clean", "img/overexposure/s2", "img/overexposure/s3", "img/low_light/s2", "txt/char_add"]
BLIND = """
import numpy as np
from snapbench.models import get_encoder

class Blind:
    '''toy's text features; every image the same vector: it ranks by the text alone.'''
    name = fingerprint = "blind-v1"
    modalities = frozenset({"image", "text"})

    def __init__(self):
        self.inner = get_encoder("toy")

    def encode_images(self, xs):
        return np.repeat(self.inner.encode_images(xs[:1]), len(xs), axis=0)

    def encode_texts(self, xs):
        return self.inner.encode_texts(xs)
"""


@pytest.fixture(scope="module")
def multi(tmp_path_factory, user_code):
    root = tmp_path_factory.mktemp("words")
    (root / "snapbench_words_blind.py").write_text(BLIND)
    opts = RunOptions(conditions=CONDS, joint=False, resamples=200, report=False, progress=False, use_cache=False,
                      modes=["IT2IT"])
    with user_code(root, "snapbench_words_blind"):
        run_encoders(DEFAULT_DATA, ["toy", "toy", "snapbench_words_blind:Blind"], root / "multi", opts,
                     names=["toy", "toy2", "blind"])
    return root / "multi"


def _findings(tmp_path, *paths) -> dict[str, str]:
    r = runner.invoke(app, ["compare", *map(str, paths), "--out", str(tmp_path / "o"), "--modes", "IT2IT",
                            "--formats", "md", "--no-progress"])
    assert r.exit_code == 0, r.output
    return {f["id"]: f["text"] for f in json.loads((tmp_path / "o" / "findings.json").read_text())}


def _clean(multi, name) -> float:
    return json.loads((multi / name / "IT2IT" / "report.json").read_text())["conditions"]["clean"]["hit@1"]


def test_two_models_one_pair(multi, tmp_path):
    found = _findings(tmp_path, multi / "toy", multi / "toy2", "--name", "toy", "--name", "toy2")
    ranking = found["ranking:IT2IT"]
    assert "the two models are not told apart (p and 95% CI of their difference)" in ranking, ranking
    assert "none of the 2 models" not in ranking
    pair = found["pair:IT2IT:toy:toy2"]
    assert "unadjusted (one pair of models: nothing to adjust over)" in pair and "over the 1 pairs" not in pair
    note = (tmp_path / "o" / "tables" / "IT2IT_hit1_pairs.md").read_text()
    assert "The overall p (the test of the ranking's tiers) is unadjusted (one pair of models" in note


def test_the_least_drop_from_a_lower_clean_value_is_said(multi, tmp_path):
    ranking = _findings(tmp_path, multi / "toy", multi / "blind", "--name", "toy", "--name", "blind")["ranking:IT2IT"]
    clean_toy, clean_blind = _clean(multi, "toy"), _clean(multi, "blind")
    assert clean_blind < clean_toy - 0.2  # the set-up: the blind model gets fewer queries right
    assert "blind drops least" in ranking, ranking
    assert (f"blind starts from a lower clean R@1 than toy ({100 * clean_blind:.1f}% against {100 * clean_toy:.1f}%, "
            "a gap larger than the one between their drops): it has less to lose") in ranking, ranking


def test_three_models(multi, tmp_path):
    found = _findings(tmp_path, multi)
    ranking = found["ranking:IT2IT"]
    assert "none of the 3 models" not in ranking
    assert ("told apart from the best, blind" in ranking or "tiers" in ranking), ranking
    assert "over the 3 pairs of models" in found["pair:IT2IT:toy:toy2"]
    assert "starts from a lower clean R@1 than toy and toy2" in ranking, ranking
    cj = json.loads((tmp_path / "o" / "compare.json").read_text())
    er = [r["effective_robustness"] for r in cj["effective"] if r["condition"] == "group:all" and r["metric"] == "hit@1"]
    assert len(er) == 3 and max(abs(x) for x in er) < 5e-4  # on one line: every value +0.0 as written
    effective = found["effective:IT2IT"]
    assert "the same for all 3 models at the precision shown (+0.0 points)" in effective, effective
    assert "highest" not in effective and "lowest" not in effective
