"""Holm and Benjamini-Hochberg adjustments against statsmodels.stats.multitest.multipletests."""

from __future__ import annotations

import numpy as np
import pytest

from snapbench.compare.stats import adjust_pvalues
from snapbench.core.errors import ConfigError

multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests


@pytest.mark.parametrize("method,sm", [("holm", "holm"), ("bh", "fdr_bh")])
def test_equals_statsmodels(method, sm):
    rng = np.random.default_rng(1)
    for m in [1, 2, 5, 71, 300]:
        p = rng.random(m) ** 3
        p[: m // 4] = p[0]  # ties
        np.testing.assert_allclose(adjust_pvalues(p, method), multipletests(p, method=sm)[1], rtol=1e-12, atol=0)


@pytest.mark.parametrize("method,sm", [("holm", "holm"), ("bh", "fdr_bh")])
def test_nan_is_left_out_of_the_family(method, sm):
    p = np.array([0.01, np.nan, 0.04, 0.03, np.nan, 0.5])
    got = adjust_pvalues(p, method)
    ok = ~np.isnan(p)
    assert np.isnan(got[~ok]).all()
    np.testing.assert_allclose(got[ok], multipletests(p[ok], method=sm)[1], rtol=1e-12)
    assert np.isnan(adjust_pvalues([np.nan, np.nan], method)).all()


def test_unknown_method_lists_the_known_ones():
    with pytest.raises(ConfigError, match="holm, bh"):
        adjust_pvalues([0.1], "bonferroni")
