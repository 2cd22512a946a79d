"""The findings say no more than the numbers: equal mean drops read as equal (a run compared with
itself), and an undefined mean corruption error is named with its reason, never dropped.  The
values are built by hand, so what must be equal or undefined is known without compare."""

from __future__ import annotations

import numpy as np

from snapbench.compare import CompareConfig, ModelValues, compare_models
from snapbench.render.compare import MetricView, compare_findings

CONDS = ["clean", "img/compression/s1", "img/compression/s2", "img/rotation/s1", "txt/char_add", "txt/char_swap"]
Q = 60


def _values(seed: int, perfect: tuple[str, ...] = ()) -> dict[str, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = {}
    for i, c in enumerate(CONDS):
        hit = (rng.random(Q) < 0.9 - 0.3 * (i > 0)).astype(float)
        out[c] = {"hit@1": np.ones(Q) if c in perfect else hit}
    return out


def _findings(named: dict[str, dict]) -> dict[str, str]:
    qids = [f"q{i:02d}" for i in range(Q)]
    models = [ModelValues.from_values(n, qids, {"IT2IT": v}) for n, v in named.items()]
    res = compare_models(models, CompareConfig(resamples=200, seed=0, workers=1))
    views = MetricView.all_of(res, 0.95, "holm")
    found = compare_findings([views[("IT2IT", "hit@1")]], [], res.meta["reference"], "Holm")
    return {f.id: f.text for f in found}


def test_a_model_compared_with_its_copy_drops_the_same():
    v = _values(0)
    text = _findings({"a": v, "b": {c: {m: x.copy() for m, x in per.items()} for c, per in v.items()}})["ranking:IT2IT"]
    assert "a and b drop the same (" in text, text
    assert "least" not in text and "most" not in text  # main: "a drops least (-1.4 …) and b most (-1.4 …)"


def test_models_of_different_drops_are_still_told_least_and_most():
    text = _findings({"a": _values(0), "b": _values(1)})["ranking:IT2IT"]
    assert "drops least" in text and "most" in text and "the same" not in text


def test_an_undefined_mce_is_said_with_its_reason():
    """The reference is perfect under char_add (no error to divide by): every model's CE there, and
    so its mean, is undefined."""
    text = _findings({"ref": _values(0, perfect=("txt/char_add",)), "other": _values(1)})["normalised:IT2IT"]
    assert text.count("(mCE undefined)") == 2, text  # main: "ref 0.9xx; other 0.9xx", the mCE silently gone
    assert "mean corruption error undefined for ref and other" in text
    assert "ref, the reference, makes no error under 1 operator(s) (char_add" in text


def test_an_undefined_relative_mce_is_said_with_its_reason():
    """The reference loses nothing under char_add (its values there are its clean ones): the relative
    CE, which divides by the reference's drop, is undefined there and so is its mean; the mCE is not."""
    ref = _values(0)
    ref["txt/char_add"] = {"hit@1": ref["clean"]["hit@1"].copy()}
    text = _findings({"ref": ref, "other": _values(1)})["normalised:IT2IT"]
    assert text.count("relative mCE undefined)") == 2 and "(mCE undefined)" not in text, text
    assert "relative mCE undefined for ref and other: ref, the reference, drops 0 under 1 operator(s) (char_add" in text


# --- trial findings: a gain said as a gain, a text operator's one level, the target of evaluate reports


def _shifted(p_clean: float, p_corrupted: float) -> dict[str, dict[str, np.ndarray]]:
    """hit@1 of exactly ``p_clean`` of the queries on clean and ``p_corrupted`` under every corruption."""
    def hits(p: float) -> np.ndarray:
        return (np.arange(Q) < round(p * Q)).astype(float)
    return {c: {"hit@1": hits(p_clean if c == "clean" else p_corrupted)} for c in CONDS}


def _mean_delta_points(v: dict[str, dict[str, np.ndarray]]) -> str:
    """The mean over the corrupted conditions of (corrupted − clean), in signed points: the formula, by hand."""
    clean = v["clean"]["hit@1"].mean()
    d = np.mean([v[c]["hit@1"].mean() - clean for c in CONDS if c != "clean"])
    return f"{100 * d:+.1f}"


def test_a_gain_is_said_as_a_gain_not_a_drop():
    """main: "fusion/rrf, toy drops least (+1.5 points …) and my_encoder most (-14.5 points …)"."""
    up, down = _shifted(0.5, 0.6), _shifted(0.8, 0.5)
    text = _findings({"up": up, "down": down})["ranking:IT2IT"]
    assert f"up gains ({_mean_delta_points(up)} points, " in text, text
    assert f"and down drops ({_mean_delta_points(down)} points, " in text, text
    assert "drops least" not in text and "most" not in text, text


def test_models_that_all_gain_are_said_to_gain_most_and_least():
    more, less = _shifted(0.5, 0.8), _shifted(0.5, 0.6)
    text = _findings({"more": more, "less": less})["ranking:IT2IT"]
    assert f"more gains most ({_mean_delta_points(more)} points, " in text, text
    assert f"and less least ({_mean_delta_points(less)} points, " in text, text
    assert "drop" not in text.split(";")[0], text


def test_a_text_operator_has_one_level_not_every_severity():
    """main: "(char_add: R@1 100% at every severity)" for a text operator, which has a single level."""
    text = _findings({"ref": _values(0, perfect=("txt/char_add",)), "other": _values(1)})["normalised:IT2IT"]
    assert "(char_add: R@1 100% at its one level)" in text and "every severity" not in text, text
    # an image operator of two severities (compression: s1, s2 in CONDS) keeps "every severity"
    both = ("img/compression/s1", "img/compression/s2")
    text = _findings({"ref": _values(0, perfect=both), "other": _values(1)})["normalised:IT2IT"]
    assert "(compression: R@1 100% at every severity)" in text, text


def test_the_target_of_evaluate_reports_without_a_mode_is_not_called_evaluate():
    """main: "In evaluate, by mean ΔR@1 …" for two evaluate reports that record no mode."""
    qids = [f"q{i:02d}" for i in range(Q)]
    models = [ModelValues.from_values(n, qids, {"evaluate": v}) for n, v in (("a", _values(0)), ("b", _values(1)))]
    res = compare_models(models, CompareConfig(resamples=200, seed=0, workers=1))
    views = MetricView.all_of(res, 0.95, "holm")
    found = {f.id: f.text for f in compare_findings([views[("evaluate", "hit@1")]], [], "a", "Holm")}
    assert found["ranking:evaluate"].startswith("In the scores (no mode recorded), by mean ΔR@1 over 5 "), found
    assert not any("evaluate" in t for t in found.values()), found
