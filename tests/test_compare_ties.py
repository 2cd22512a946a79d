"""Ties are ties: models with the same per-query values, or with the same per-condition values in
another order of the conditions, get bit-equal scores, the average rank and a difference of exactly 0
(the docs: "ties share the average rank").  Expected values are exact by construction (a copy of a
model, a permutation of its conditions), never computed by compare."""

from __future__ import annotations

import math

import numpy as np

from snapbench.compare import CompareConfig, ModelValues, compare_models
from snapbench.compare.groups import exact_group_means, group_means
from snapbench.core.conditions import list_conditions

# many conditions of every kind: the sums over a group run over dozens of real-valued drops
OPS = ["low_light", "overexposure", "defocus_blur", "motion_blur", "compression", "rotation", "cropping", "mosaic",
       "watermark", "scribble", "perspective", "downscale"]
CONDS = (["clean"] + [f"img/{op}/s{s}" for op in OPS for s in (1, 2, 3)]
         + [f"txt/{t}" for t in ("char_add", "char_swap", "word_swap", "sent_add")]
         + [f"joint/compression+char_add/s{s}" for s in (1, 2, 3)])
Q = 97


def _values(seed: int) -> dict[str, dict[str, np.ndarray]]:
    """Per condition: hit@1 (0/1) and ndcg@5 (real values) per query, dropping with the condition."""
    rng = np.random.default_rng(seed)
    out = {}
    for i, c in enumerate(CONDS):
        p = 0.9 - 0.4 * rng.random() * (i > 0)
        out[c] = {"hit@1": (rng.random(Q) < p).astype(float), "ndcg@5": np.clip(rng.random(Q) * p * 1.3, 0, 1)}
    return out


def _models(values_of: dict[str, dict]) -> list[ModelValues]:
    qids = [f"q{i:03d}" for i in range(Q)]
    return [ModelValues.from_values(name, qids, {"IT2IT": v}) for name, v in values_of.items()]


def _by(records, **key):
    return [r for r in records if all(getattr(r, k) == v for k, v in key.items())]


def _trial_values(seed: int, conds: list[str], q: int = 40) -> dict[str, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return {c: {"hit@1": (rng.random(q) < 0.95 - 0.5 * rng.random() * (c != "clean")).astype(float),
                "ndcg@5": rng.random(q)} for c in conds}


def test_identical_models_tie_exactly():
    """The trial's case: the default 72 conditions, 40 queries, three models of which the last two
    have identical per-query values (the same encoder run twice)."""
    conds = ["clean"] + [c.id for c in list_conditions(joint=True)[1:]]
    same = _trial_values(1, conds)
    copy = {c: {m: v.copy() for m, v in per.items()} for c, per in same.items()}
    qids = [f"q{i:02d}" for i in range(40)]
    models = [ModelValues.from_values(n, qids, {"T2T": v}) for n, v in
              (("toy", _trial_values(0, conds)), ("mine", same), ("slow", copy))]
    res = compare_models(models, CompareConfig(resamples=300, seed=0, workers=1))
    for metric in ("hit@1", "ndcg@5"):
        rb = _by(res.ranking, metric=metric, model="mine")[0]
        rc = _by(res.ranking, metric=metric, model="slow")[0]
        assert rb.rank == rc.rank and rb.rank != int(rb.rank), (metric, rb, rc)  # the average of two ranks
        assert (rb.rank_low, rb.rank_high, rb.group) == (rc.rank_low, rc.rank_high, rc.group)
        for rec in _by(res.models, metric=metric, model="mine"):
            twin = _by(res.models, metric=metric, model="slow", condition=rec.condition)[0]
            assert np.array_equal([rec.value, rec.delta, rec.ci_low, rec.ci_high, rec.retention],
                                  [twin.value, twin.delta, twin.ci_low, twin.ci_high, twin.retention], equal_nan=True)
        for rec in _by(res.pairs, metric=metric, model_a="mine", model_b="slow"):
            assert rec.diff == 0.0 and rec.ci_low == 0.0 and rec.ci_high == 0.0, rec
        for rec in _by(res.additivity_pairs, metric=metric, model_a="mine", model_b="slow"):
            assert rec.diff == 0.0 and rec.ci_low == 0.0 and rec.ci_high == 0.0, rec
        for rec in _by(res.effective, metric=metric, model="mine"):
            twin = _by(res.effective, metric=metric, model="slow", condition=rec.condition)[0]
            assert np.array_equal([rec.corrupted, rec.effective_robustness], [twin.corrupted, twin.effective_robustness],
                                  equal_nan=True)


def test_same_values_in_another_order_of_the_conditions_tie():
    """Model b holds model a's per-query values with the corrupted conditions permuted: every group
    mean over all corrupted conditions is the same number, so both share a rank."""
    a = _values(5)
    perm = np.random.default_rng(9).permutation(len(CONDS) - 1) + 1
    b = {"clean": a["clean"]} | {CONDS[i]: a[CONDS[j]] for i, j in zip(range(1, len(CONDS)), perm)}
    res = compare_models(_models({"a": a, "other": _values(6), "b": b}), CompareConfig(resamples=200, workers=1))
    for metric in ("hit@1", "ndcg@5"):
        ra, rb = _by(res.ranking, metric=metric, model="a")[0], _by(res.ranking, metric=metric, model="b")[0]
        assert ra.rank == rb.rank, metric
        ga = _by(res.models, metric=metric, model="a", condition="group:all")[0]
        gb = _by(res.models, metric=metric, model="b", condition="group:all")[0]
        assert ga.delta == gb.delta and ga.value == gb.value
        deltas = [r.delta for r in _by(res.models, metric=metric, model="a") if not r.condition.startswith(("clean", "group"))]
        assert ga.delta == math.fsum(deltas) / len(deltas)  # the correctly rounded mean


def test_group_means_are_the_same_for_equal_rows_anywhere():
    rng = np.random.default_rng(0)
    groups = {"all": list(range(70)), "some": [3, 9, 27, 40], "one": [5]}
    x = rng.random((9, 70)) / 7
    x[[2, 5, 8]] = x[4]
    for got in (group_means(x, groups), exact_group_means(x, groups),
                np.moveaxis(group_means(np.moveaxis(np.stack([x] * 3), 0, 2)[:, :, :], groups, axis=1), 2, 0)[1]):
        for r in (2, 5, 8):
            assert np.array_equal(got[r], got[4])
    want = [[math.fsum(row[idx]) / len(idx) for idx in groups.values()] for row in x]
    assert np.array_equal(exact_group_means(x, groups), np.array(want))
    np.testing.assert_allclose(group_means(x, groups), want, rtol=1e-14)
