"""Exact paired test of a difference of drops: scipy's binomtest (McNemar) and brute-force enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import binomtest

from snapbench.compare.pairs import cohens_g, discordance, signflip_exact_pvalues


def _brute(d) -> float:
    """P(|Σ s_q d_q| >= |Σ d_q|) over all 2^n sign patterns, counted exactly."""
    d = np.asarray(d, dtype=np.int64)
    t = abs(int(d.sum()))
    signs = np.array(list(itertools.product((1, -1), repeat=d.size)), dtype=np.int64)
    return float(np.count_nonzero(np.abs(signs @ d) >= t)) / signs.shape[0]


@pytest.mark.parametrize("n1", [1, 2, 5, 12, 31, 200])
def test_no_double_discordance_is_mcnemar(n1):
    for k in range(n1 + 1):  # k queries in A's favour (+1), n1 - k in B's
        t = k - (n1 - k)
        want = binomtest(k, n1, 0.5, alternative="two-sided").pvalue
        assert signflip_exact_pvalues(n1, 0, t)[0] == pytest.approx(want, rel=1e-10, abs=1e-300)


def test_equals_brute_force_enumeration_with_twos():
    rng = np.random.default_rng(0)
    for _ in range(60):
        n = int(rng.integers(1, 15))
        d = rng.choice([-2, -1, 0, 1, 2], size=n, p=[0.15, 0.25, 0.2, 0.25, 0.15])
        n1, n2, t = discordance(d[:, None])
        assert signflip_exact_pvalues(n1, n2, t)[0] == pytest.approx(_brute(d), rel=1e-12, abs=1e-15), d


def test_vectorised_over_tests_and_edge_cases():
    ds = [[], [2, 2, 2], [2, 2, -2], [1, 1, -1, -1], [-2, -2, 1, -1, -1], [2, 1], [2, 2, 2, 2] + [-1] * 7]
    n1, n2, t = (np.array(x) for x in zip(*[(sum(abs(v) == 1 for v in d), sum(abs(v) == 2 for v in d), sum(d)) for d in ds]))
    got = signflip_exact_pvalues(n1, n2, t)  # all tests in one call
    for d, p in zip(ds, got):
        assert p == pytest.approx(_brute(d) if d else 1.0, rel=1e-12)
    assert signflip_exact_pvalues(0, 0, 0)[0] == 1.0


def test_discordance_counts_and_checks():
    d = np.array([[1, -2], [0, 2], [-1, 2], [2, 0]])
    n1, n2, t = discordance(d)
    assert n1.tolist() == [2, 0] and n2.tolist() == [1, 3] and t.tolist() == [2, 2]
    with pytest.raises(ValueError):
        discordance(np.array([[3]]))
    with pytest.raises(ValueError):
        signflip_exact_pvalues(2, 0, 5)  # |t| larger than possible


def test_cohens_g():
    # McNemar: n+ = 8, n- = 2 -> g = 8/10 - 1/2 = 0.3
    assert cohens_g(10, 0, 6) == pytest.approx(0.3)
    # weighted: d = [2, 2, -1] -> Σd = 3, Σ|d| = 5 -> (4/5) - 1/2 = 0.3
    assert cohens_g(1, 2, 3) == pytest.approx(0.3)
    assert cohens_g(0, 0, 0) == 0.0
