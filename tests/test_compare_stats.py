"""Building blocks: percentile intervals on rows (identical to a run's percentile_ci), group means,
condition groups, rank intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import rankdata

from snapbench.compare.groups import condition_groups, group_means
from snapbench.compare.ranking import rank_intervals, ranks
from snapbench.compare.stats import row_intervals
from snapbench.evaluate import percentile_ci


@pytest.mark.parametrize("n", [1, 2, 3, 40, 401, 10_000])
@pytest.mark.parametrize("level", [0.5, 0.9, 0.95, 0.99])
def test_row_intervals_are_bit_identical_to_percentile_ci(n, level):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((700, n)) * 10.0 ** rng.integers(-3, 3, size=(700, 1))
    x[:200] = np.round(x[:200], 1)  # ties
    x[5, 0] = np.nan                # a row with an undefined resample
    x[6] = np.nan
    want_lo, want_hi = percentile_ci(x.T, level)
    for workers, overwrite in ((1, False), (2, False), (2, True)):
        lo, hi = row_intervals(x.copy() if overwrite else x, level, workers, overwrite=overwrite)
        assert np.array_equal(lo, want_lo, equal_nan=True) and np.array_equal(hi, want_hi, equal_nan=True)


def test_condition_groups():
    conds = ["img/motion_blur/s1", "img/rotation/s1", "img/compression/s1", "txt/char_add", "img/my_op/s2",
             "joint/compression+char_add/s3", "img/mosaic/s3"]
    g = condition_groups(conds)
    assert g == {
        "group:all": [0, 1, 2, 3, 4, 5, 6],
        "group:img/degrade/s1": [0, 2],
        "group:img/transform/s1": [1],
        "group:img/add/s3": [6],
        "group:txt": [3],
        "group:joint": [5],
    }
    assert condition_groups(["clean"]) == {}


def test_group_means_nan_stays_in_its_groups():
    groups = {"a": [0, 1], "b": [2], "c": [1, 2]}
    x = np.array([[1.0, 3.0, 5.0], [1.0, np.nan, 2.0]])
    got = group_means(x, groups)
    np.testing.assert_allclose(got[0], [2.0, 5.0, 4.0])
    assert np.isnan(got[1, 0]) and got[1, 1] == 2.0 and np.isnan(got[1, 2])
    y = np.moveaxis(np.stack([x, 2 * x]), 2, 1)  # the condition axis in the middle
    np.testing.assert_allclose(group_means(y, groups, axis=1)[1], np.moveaxis(2 * got, 1, 0), equal_nan=True)


def test_ranks_and_rank_intervals_by_hand():
    assert ranks(np.array([0.3, 0.9, 0.3, -1.0])).tolist() == [2.5, 1.0, 2.5, 4.0]
    rng = np.random.default_rng(2)
    boot = rng.standard_normal((11, 4))
    boot[3, 1] = np.nan  # a resample with an undefined score is left out
    lo, hi = rank_intervals(boot, 0.9)
    r = np.sort(rankdata(-boot[~np.isnan(boot).any(axis=1)], axis=1), axis=0)  # 10 resamples
    # lower quantile at (10 - 1) * 0.05 = 0.45 -> index 0; higher at 9 * 0.95 = 8.55 -> index 9
    assert lo.tolist() == r[math.floor(9 * 0.05)].tolist()
    assert hi.tolist() == r[math.ceil(9 * 0.95)].tolist()


def test_resampled_values_equal_bootstrap_values():
    from snapbench.compare.stats import resampled_values
    from snapbench.evaluate import QueryStat, bootstrap_counts, bootstrap_values

    rng = np.random.default_rng(4)
    q = 50
    counts = bootstrap_counts(q, 300, seed=2)
    inc = (rng.random(q) > 0.1).astype(float)
    hits = (rng.random((q, 6)) < 0.4) * inc[:, None]
    ratio_den = (rng.random((q, 6)) < 0.1).astype(float)  # rare denominators: some resamples are 0/0
    cases = {
        "0/1, float32 path": (hits, np.repeat(inc[:, None], 6, axis=1), True),
        "real values": (rng.random((q, 6)) * inc[:, None], np.repeat(inc[:, None], 6, axis=1), False),
        "ratio, varying denominators": (ratio_den * (rng.random((q, 6)) < 0.5), ratio_den, True),
    }
    for name, (num, den, exact) in cases.items():
        want = bootstrap_values([QueryStat(num[:, k], den[:, k]) for k in range(6)], counts).T
        got = resampled_values(num, den, counts, counts.astype(np.float32))
        if exact:
            assert np.array_equal(got, want, equal_nan=True), name
        else:
            np.testing.assert_allclose(got, want, rtol=1e-14, err_msg=name)
    assert np.isnan(resampled_values(*cases["ratio, varying denominators"][:2], counts)).any()


def test_ranking_records_need_both_p_and_ci_to_tell_models_apart():
    from snapbench.compare.ranking import ranking_records

    scores = np.array([0.0, -0.1, -0.2])
    boot = np.tile(scores, (20, 1))
    # (0, 1): tiny p but CI containing 0 -> not apart; (0, 2): apart; (1, 2): CI excludes 0 but large p
    tests = {(0, 1): (1e-6, -0.01, 0.2), (0, 2): (1e-6, 0.1, 0.3), (1, 2): (0.5, 0.01, 0.2)}
    recs = ranking_records("M", "hit@1", ["a", "b", "c"], scores, boot, tests, level=0.95, correction="holm")
    assert [r.group for r in recs] == [1, 1, 2]
    assert [r.rank for r in recs] == [1.0, 2.0, 3.0]
    assert [(r.rank_low, r.rank_high) for r in recs] == [(1.0, 1.0), (2.0, 2.0), (3.0, 3.0)]
    # Holm over the three pairs: p = 0.02 is 0.06 adjusted -> not apart at level 0.95
    tests[(0, 2)] = (0.02, 0.1, 0.3)
    tests[(0, 1)] = (0.02, 0.1, 0.3)
    recs = ranking_records("M", "hit@1", ["a", "b", "c"], scores, boot, tests, level=0.95, correction="holm")
    assert [r.group for r in recs] == [1, 1, 1]
