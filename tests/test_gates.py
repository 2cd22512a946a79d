"""Gate functions: the Bell gate's defining values and the ablation gates' documented shapes."""

from __future__ import annotations

import numpy as np
import pytest

from snapbench.core.seeding import derive_generator
from snapbench.fusion import GATES, get_gate, moor
from snapbench.fusion.gates import bell, inverse_bell, linear, no_gate, pure_r2, sigmoid


def test_bell_zero_outside_unit_interval_and_peak():
    r = np.array([-1.0, -0.3, -1e-12, 0.0, 1.0, 1.0 + 1e-12, 1.7, 3.0])
    assert np.array_equal(bell(r), np.zeros_like(r))
    assert bell(np.array([0.5]))[0] == 1.0 / 16.0
    grid = np.linspace(-0.5, 1.5, 2001)
    assert bell(grid).max() == pytest.approx(1.0 / 16.0) and grid[np.argmax(bell(grid))] == pytest.approx(0.5)
    x = np.linspace(0, 0.5, 51)
    assert np.allclose(bell(0.5 + x), bell(0.5 - x))  # symmetric about 0.5
    # hand values: r = 0.25 -> 0.0625 * 0.5625
    assert bell(np.array([0.25]))[0] == pytest.approx(0.0625 * 0.5625)


def test_ablation_gates():
    r = np.array([-0.5, 0.0, 0.25, 0.5, 1.0, 1.5])
    assert np.array_equal(linear(r), [0, 0, 0.25, 0.5, 1.0, 1.5])
    assert np.array_equal(pure_r2(r), [0, 0, 0.0625, 0.25, 1.0, 2.25])
    assert np.array_equal(no_gate(r), np.ones(6))
    assert inverse_bell(np.array([0.5]))[0] == 0.0
    assert np.allclose(inverse_bell(np.array([-0.5, 0.0, 1.0, 2.0])), 1 / 16)
    assert np.allclose(inverse_bell(r) + bell(r), 1 / 16)
    s = sigmoid(r)
    assert s[3] == 0.5 and np.all(np.diff(s) > 0)
    assert s[1] == pytest.approx(1 / (1 + np.exp(5.0))) and s[4] == pytest.approx(1 / (1 + np.exp(-5.0)))


def test_get_gate_names_aliases_and_errors():
    assert set(GATES) == {"bell", "linear", "sigmoid", "inverse_bell", "pure_r2", "none"}
    assert get_gate("Inverse-Bell") is inverse_bell and get_gate("no_gate") is no_gate and get_gate("r2") is pure_r2
    with pytest.raises(ValueError, match="unknown gate"):
        get_gate("tanh")
    with pytest.raises(ValueError):
        get_gate(3)  # type: ignore[arg-type]


def _data():
    rng = derive_generator("test-gates")
    gI = rng.standard_normal((40, 6))
    gT = gI + rng.standard_normal((40, 6))
    qI = gI[:5] + 0.5 * rng.standard_normal((5, 6))
    qT = gT[:5] + 0.5 * rng.standard_normal((5, 6))
    return qI, qT, gI, gT


def test_custom_gate_callable_and_checks():
    qI, qT, gI, gT = _data()
    a = moor(qI, qT, gI, gT, gate=lambda r: np.maximum(0.0, r))
    b = moor(qI, qT, gI, gT, gate="linear")
    assert np.allclose(a.scores, b.scores, atol=1e-15)
    with pytest.raises(ValueError, match="negative or non-finite"):
        moor(qI, qT, gI, gT, gate=lambda r: r - 2.0)


def test_no_gate_weights_are_path_variances():
    qI, qT, gI, gT = _data()
    res = moor(qI, qT, gI, gT, gate="none")
    assert np.allclose(res.weights, res.variances, rtol=1e-12)
    bell_res = moor(qI, qT, gI, gT, gate="bell")
    expected = bell_res.variances[:, 1:] * bell(bell_res.correlations)
    assert np.allclose(bell_res.weights[:, 1:], expected, rtol=1e-12, atol=0)
