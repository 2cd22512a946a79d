"""Inputs of a comparison: per-query values -> (num, den), and refusals that name what differs."""

from __future__ import annotations

import numpy as np
import pytest

from snapbench.compare import CompareConfig, ModelValues, compare_models
from snapbench.compare.inputs import align_models
from snapbench.core.errors import ConfigError, InputError


def _model(name, qids=("a", "b", "c"), conds=("clean", "img/compression/s1"), metrics=("hit@1",), mode="I2I", v=None):
    v = np.array([1.0, np.nan, 0.0]) if v is None else v
    return ModelValues.from_values(name, list(qids), {mode: {c: {m: v for m in metrics} for c in conds}})


def test_from_values_nan_is_not_counted():
    st = _model("A").stats["I2I"]["clean"]["hit@1"]
    assert st.num.tolist() == [1.0, 0.0, 0.0] and st.den.tolist() == [1.0, 0.0, 1.0]
    assert st.value == 0.5


@pytest.mark.parametrize("other,match", [
    (dict(qids=("a", "b", "d")), r"queries: 'B' lacks 1 of the queries of 'A' \(e.g. c\); 'B' has 1 queries 'A' lacks \(e.g. d\)$"),
    (dict(mode="T2T"), "modes"),
    (dict(conds=("clean", "img/compression/s2")), r"mode 'I2I'.*conditions.*img/compression/s1"),
    (dict(metrics=("hit@5",)), r"mode 'I2I'.*metrics"),
])
def test_differences_are_named(other, match):
    with pytest.raises(ConfigError, match=match):
        align_models([_model("A"), _model("B", **other)])


def test_other_refusals():
    with pytest.raises(ConfigError, match="at least two"):
        align_models([_model("A")])
    with pytest.raises(ConfigError, match="repeated: A"):
        align_models([_model("A"), _model("A")])
    with pytest.raises(ConfigError, match="no 'clean'"):
        align_models([_model("A", conds=("img/compression/s1",)), _model("B", conds=("img/compression/s1",))])
    with pytest.raises(ConfigError, match="use 'img/compression/s1'"):
        align_models([_model("A", conds=("clean", "img__compression__s1")), _model("B")])
    with pytest.raises(InputError, match=r"model 'A'.*'clean'/'hit@1': 2 values for 3 queries"):
        _model("A", v=np.array([1.0, 0.0]))
    with pytest.raises(InputError, match="non-finite"):
        _model("A", v=np.array([1.0, np.inf, 0.0]))
    with pytest.raises(InputError, match="occurs more than once"):
        _model("A", qids=("a", "a", "b"))
    bad = ModelValues("A", ("a", "b", "c"), {"I2I": {"clean": {"hit@1": _model("x").stats["I2I"]["clean"]["hit@1"]},
                                                    "img/compression/s1": {}}})
    with pytest.raises(ConfigError, match="conditions differ in their metrics"):
        align_models([bad, _model("B")])


def test_same_queries_in_another_order_are_aligned():
    a = _model("A")
    b = _model("B", qids=("c", "a", "b"), v=np.array([0.0, 1.0, np.nan]))
    _, b2 = align_models([a, b])
    assert b2.query_ids == a.query_ids
    np.testing.assert_array_equal(b2.stats["I2I"]["clean"]["hit@1"].den, [1.0, 0.0, 1.0])


def test_config_refusals():
    models = [_model("A"), _model("B")]
    with pytest.raises(ConfigError, match="reference: 'C' is not one of the models: A, B"):
        compare_models(models, CompareConfig(reference="C"))
    with pytest.raises(ConfigError, match="unknown correction 'bonf'; known: holm, bh"):
        compare_models(models, CompareConfig(correction="bonf"))
    with pytest.raises(ConfigError, match="ci"):
        compare_models(models, CompareConfig(ci=1.5))
