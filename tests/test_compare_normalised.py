"""Retention, CE, relative CE and effective robustness against direct transcriptions of the
formulas, computed from the runs' own reports."""

from __future__ import annotations

import numpy as np
import pytest
from compare_helpers import CONDITIONS, evaluated, model_values
from scipy.special import expit, logit

from snapbench.compare import CompareConfig, compare_models
from snapbench.compare.normalised import corruption_errors, effective_robustness, logit_fit

OPERATORS = {  # operator -> its conditions (severities summed)
    "compression": ["img/compression/s1", "img/compression/s2"],
    "mosaic": ["img/mosaic/s1"],
    "rotation": ["img/rotation/s2"],
    "char_add": ["txt/char_add"],
    "compression+char_add": ["joint/compression+char_add/s1", "joint/compression+char_add/s2"],
}
MEANS = {"mean:img": ["compression", "mosaic", "rotation"], "mean:txt": ["char_add"],
         "mean:joint": ["compression+char_add"], "mean:all": list(OPERATORS)}


@pytest.fixture(scope="module")
def case():
    qids, runs = evaluated(4)
    cfg = CompareConfig(resamples=200, seed=7, reference="model1")
    return runs, compare_models(model_values(qids, runs), cfg).records()


def _ce_by_hand(reports, model, ref, metric):
    def err(name, c):
        return 1.0 - reports[name]["conditions"][c][metric]

    ce, rel = {}, {}
    for op, conds in OPERATORS.items():
        ce[op] = sum(err(model, c) for c in conds) / sum(err(ref, c) for c in conds)
        rel[op] = (sum(err(model, c) - err(model, "clean") for c in conds)
                   / sum(err(ref, c) - err(ref, "clean") for c in conds))
    for name, ops in MEANS.items():
        ce[name] = np.mean([ce[o] for o in ops])
        rel[name] = np.mean([rel[o] for o in ops])
    return ce, rel


def test_ce_and_relative_ce_equal_the_formulas_on_the_reports(case):
    runs, rec = case
    reports = {name: rep for name, _, rep in runs}
    assert rec["meta"]["reference"] == "model1"
    for name in reports:
        for metric in ("hit@1", "ndcg@5"):
            ce, rel = _ce_by_hand(reports, name, "model1", metric)
            got = {r["operator"]: r for r in rec["normalised"] if r["model"] == name and r["metric"] == metric}
            assert set(got) == set(ce)
            for op in ce:
                assert got[op]["ce"] == pytest.approx(ce[op], rel=1e-12)
                assert got[op]["relative_ce"] == pytest.approx(rel[op], rel=1e-12)
                if name == "model1":
                    assert got[op]["ce"] == pytest.approx(1.0) and got[op]["relative_ce"] == pytest.approx(1.0)


def test_retention(case):
    runs, rec = case
    for name, _, rep in runs:
        for c in CONDITIONS:
            (r,) = [r for r in rec["models"] if r["model"] == name and r["condition"] == c and r["metric"] == "mrr"]
            assert r["retention"] == pytest.approx(rep["conditions"][c]["mrr"] / rep["conditions"]["clean"]["mrr"], rel=1e-12)


def test_effective_robustness_equals_a_polyfit_in_logit_space(case):
    runs, rec = case
    eps = 1e-4
    clean = np.array([rep["conditions"]["clean"]["ndcg@5"] for _, _, rep in runs])
    corr = np.array([np.mean([rep["conditions"][c]["ndcg@5"] for c in CONDITIONS[1:]]) for _, _, rep in runs])
    slope, intercept = np.polyfit(logit(np.clip(clean, eps, 1 - eps)), logit(np.clip(corr, eps, 1 - eps)), 1)
    (fit,) = [f for f in rec["fits"] if f["metric"] == "ndcg@5" and f["condition"] == "group:all"]
    assert (fit["slope"], fit["intercept"], fit["n"]) == pytest.approx((slope, intercept, 4), rel=1e-9)
    for k, (name, _, _) in enumerate(runs):
        (e,) = [e for e in rec["effective"] if e["model"] == name and e["metric"] == "ndcg@5" and e["condition"] == "group:all"]
        want = corr[k] - expit(slope * logit(clean[k]) + intercept)
        assert e["effective_robustness"] == pytest.approx(want, abs=1e-12)
        assert e["clean"] == pytest.approx(clean[k]) and e["corrupted"] == pytest.approx(corr[k])


def test_effective_robustness_guards():
    # values of exactly 0 and 1 stay finite after clipping
    fitted, er, (slope, intercept, n) = effective_robustness(np.array([1.0, 0.5, 0.2]), np.array([0.9, 0.0, 0.1]))
    assert np.isfinite([slope, intercept]).all() and n == 3 and np.isfinite(er).all()
    assert np.isnan(logit_fit(np.array([0.5, 0.6]), np.array([0.4, 0.5]))[0])      # < 3 models
    assert np.isnan(logit_fit(np.array([0.5, 0.5, 0.5]), np.array([0.4, 0.3, 0.2]))[0])  # no spread


def test_two_models_have_no_effective_robustness():
    qids, runs = evaluated(2, metrics=["hit@1"])
    rec = compare_models(model_values(qids, runs, metrics=["hit@1"]), CompareConfig(resamples=50)).records()
    assert rec["effective"] == [] and rec["fits"] == []
    assert rec["meta"]["reference"] == "model0"  # default: the first model


def test_ce_undefined_when_the_reference_makes_no_error():
    names, ce, rel = corruption_errors(np.array([1.0, 0.9]), np.array([[1.0, 0.7], [0.8, 0.6]]),
                                       ["img/blur/s1", "txt/char_add"], reference=0)
    assert names == ["blur", "char_add", "mean:img", "mean:txt", "mean:all"]
    assert np.isnan(ce[1, 0]) and ce[1, 1] == pytest.approx(0.4 / 0.3)
    assert np.isnan(ce[1, 4])  # a mean over an undefined operator is undefined
