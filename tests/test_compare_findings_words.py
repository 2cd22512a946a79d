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
