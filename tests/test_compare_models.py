"""Per-model numbers of a comparison equal each run's own report (same seed and resamples), and
group rows equal the mean of their conditions."""

from __future__ import annotations

import numpy as np
import pytest
from compare_helpers import CONDITIONS, METRICS, RESAMPLES, SEED, evaluated, model_values

from snapbench.compare import CompareConfig, ModelValues, compare_models

CFG = CompareConfig(resamples=RESAMPLES, seed=SEED, workers=2)


@pytest.fixture(scope="module")
def runs():
    qids, runs = evaluated(3)
    return qids, runs, compare_models(model_values(qids, runs), CFG).records()


def _by(records, **key):
    out = [r for r in records if all(r[k] == v for k, v in key.items())]
    assert len(out) == 1, key
    return out[0]


def test_models_records_equal_each_runs_report(runs):
    _, runs, rec = runs
    for name, _, report in runs:
        for c in CONDITIONS:
            for m in METRICS:
                r = _by(rec["models"], model=name, condition=c, metric=m)
                assert r["value"] == report["conditions"][c][m]
                assert r["retention"] == pytest.approx(report["conditions"][c][m] / report["conditions"]["clean"][m])
                if c == "clean":
                    assert np.isnan(r["delta"]) and np.isnan(r["ci_low"])
                    continue
                p = report["paired"][c][m]
                assert r["delta"] == p["delta"]
                # the same counts matrix and the same quantiles: identical for 0/1 metrics (exact sums);
                # otherwise equal up to the summation order a BLAS may pick for a differently sized product
                if m.startswith("hit@"):
                    assert [r["ci_low"], r["ci_high"]] == p["ci"]
                else:
                    assert [r["ci_low"], r["ci_high"]] == pytest.approx(p["ci"], abs=1e-14)


def test_group_rows_are_means_of_their_conditions(runs):
    _, runs, rec = runs
    groups = {
        "group:all": CONDITIONS[1:],
        "group:img/degrade/s1": ["img/compression/s1"],
        "group:img/degrade/s2": ["img/compression/s2"],
        "group:img/add/s1": ["img/mosaic/s1"],
        "group:img/transform/s2": ["img/rotation/s2"],
        "group:txt": ["txt/char_add"],
        "group:joint": ["joint/compression+char_add/s1", "joint/compression+char_add/s2"],
    }
    got = {r["condition"] for r in rec["models"] if r["condition"].startswith("group:")}
    assert got == set(groups)
    for name, _, report in runs:
        for g, conds in groups.items():
            r = _by(rec["models"], model=name, condition=g, metric="ndcg@5")
            assert r["value"] == pytest.approx(np.mean([report["conditions"][c]["ndcg@5"] for c in conds]), abs=1e-15)
            assert r["delta"] == pytest.approx(np.mean([report["paired"][c]["ndcg@5"]["delta"] for c in conds]), abs=1e-15)
            assert r["ci_low"] <= r["delta"] <= r["ci_high"]


def test_additivity_records_equal_each_runs_report(runs):
    _, runs, rec = runs
    for name, _, report in runs:
        for j, per_metric in report["additivity"].items():
            for m, e in per_metric.items():
                r = _by(rec["additivity"], model=name, joint=j, metric=m)
                assert (r["exp"], r["obs"], r["delta"]) == (e["exp"], e["obs"], e["delta"])
                assert [r["ci_low"], r["ci_high"]] == pytest.approx(e["ci"], abs=1e-14)
        mean = report["additivity_summary"]["mean"]["hit@1"]
        r = _by(rec["additivity"], model=name, joint="mean", metric="hit@1")
        assert r["delta"] == mean["delta"]
        assert [r["ci_low"], r["ci_high"]] == pytest.approx(mean["ci"], abs=1e-14)


def test_ratio_metrics_from_stats_equal_the_report():
    """reject_f1 = Σ2a / Σ(2a + b + c): its per-query value alone cannot give it, its (num, den) can."""
    qids, runs = evaluated(2, metrics=["hit@1", "reject_f1", "reject_precision"], set_threshold=2.2)
    models = [ModelValues.from_stats(name, qids, {"IT2IT": {c: ev.stats for c, ev in evals.items()}})
              for name, evals, _ in runs]
    rec = compare_models(models, CFG).records()
    for name, _, report in runs:
        for c in CONDITIONS[1:]:
            for m in ("reject_f1", "reject_precision"):
                r = _by(rec["models"], model=name, condition=c, metric=m)
                want = report["conditions"][c][m]
                assert r["value"] == want or (want is None and np.isnan(r["value"]))
                p = report["paired"][c][m]
                if p["delta"] is not None:
                    assert r["delta"] == p["delta"]
                    assert [r["ci_low"], r["ci_high"]] == pytest.approx(p["ci"], abs=1e-14, nan_ok=True)


def test_query_order_does_not_matter(runs):
    qids, runs_, rec = runs
    models = model_values(qids, runs_)
    perm = np.random.default_rng(0).permutation(len(qids))
    shuffled = models[1].reordered([qids[i] for i in perm])
    rec2 = compare_models([models[0], shuffled, models[2]], CFG).records()
    for a, b in zip(rec["pairs"], rec2["pairs"]):
        assert a == b


def test_deterministic_and_independent_of_threads(runs):
    qids, runs_, rec = runs
    again = compare_models(model_values(qids, runs_), CompareConfig(resamples=RESAMPLES, seed=SEED, workers=1)).records()
    for key in ("models", "pairs", "ranking", "additivity_pairs"):
        a = [tuple(np.nan if isinstance(v, float) and np.isnan(v) else v for v in r.values()) for r in rec[key]]
        b = [tuple(np.nan if isinstance(v, float) and np.isnan(v) else v for v in r.values()) for r in again[key]]
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert all(u == v or (u is np.nan and v is np.nan) for u, v in zip(x, y)), (x, y)


def test_clean_only_gives_model_rows():
    qids, runs_ = evaluated(2, metrics=["hit@1"])
    models = [ModelValues.from_stats(name, qids, {"I2I": {"clean": ev["clean"].stats}}) for name, ev, _ in runs_]
    rec = compare_models(models, CompareConfig(resamples=50)).records()
    assert [r["condition"] for r in rec["models"]] == ["clean", "clean"]
    assert rec["pairs"] == rec["ranking"] == rec["normalised"] == []


def test_modes_are_compared_separately(runs):
    qids, runs_, _ = runs
    one = model_values(qids, runs_, metrics=["hit@1"], mode="I2I")
    two = model_values(qids, runs_[::-1], metrics=["hit@1"], mode="I2I")  # another mode: other values
    both = [ModelValues(a.name, a.query_ids, {"I2I": a.stats["I2I"], "T2T": b.stats["I2I"]}) for a, b in zip(one, two)]
    cfg = CompareConfig(resamples=200, seed=3)
    rec = compare_models(both, cfg).records()
    sep = {"I2I": compare_models(one, cfg).records(),
           "T2T": compare_models([ModelValues(a.name, a.query_ids, {"T2T": b.stats["I2I"]}) for a, b in zip(one, two)],
                                 cfg).records()}
    for mode in ("I2I", "T2T"):
        got = [r for r in rec["pairs"] if r["mode"] == mode]
        assert [(r["condition"], r["diff"], r["ci_low"], r["p_raw"]) for r in got] == \
               [(r["condition"], r["diff"], r["ci_low"], r["p_raw"]) for r in sep[mode]["pairs"]]
