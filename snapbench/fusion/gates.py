"""Gate functions g(r) for MOOR's text-involving paths (SPEC §9 step 3 and the gate ablation).

``r`` is the Pearson correlation of a path's scores with the image anchor ``s^II`` over the gallery;
the path's weight is ``g(r) · Var(s^path)``.  The paper names six gates (Fig. 7: Bell / Linear /
Sigmoid / Inverse Bell / Pure-r² / No Gate) but defines only Bell; the others are defined here:

=============  =========================================  =============================================
name           g(r)                                       why
=============  =========================================  =============================================
bell           max(0,r)² · max(0,1−r)²                    the paper's gate: 0 for r ≤ 0 and r ≥ 1,
                                                          peak 1/16 at r = 0.5 (neither conflicting nor
                                                          redundant)
linear         max(0, r)                                  trusts a path in proportion to agreement;
                                                          no penalty for redundancy
sigmoid        1 / (1 + exp(−κ (r − 0.5))), κ = 10         a soft step at r = 0.5: ≈0.007 at r = 0,
                                                          ≈0.993 at r = 1 (κ = 10 makes the transition
                                                          span about r ∈ [0.2, 0.8])
inverse_bell   1/16 − bell(r)                             the bell turned upside down *at the same
                                                          amplitude* (so weights stay on the bell's
                                                          scale): 1/16 outside (0, 1), 0 at r = 0.5 —
                                                          favours redundant or conflicting paths
pure_r2        max(0, r)²                                 agreement squared; negative r gives 0 (like
                                                          bell and linear) so an anti-correlated path
                                                          never gains weight
none           1                                          variance weighting only (no gating)
=============  =========================================  =============================================

A constant path has ``r = 0`` by convention (its variance is 0, so its weight is 0 under every gate).
Custom gates: any callable mapping an array of r to non-negative, finite gate values of the same shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Union

import numpy as np

from ..core.errors import ConfigError, InputError
from ..core.registry import Table

__all__ = [
    "GATES",
    "GateLike",
    "bell",
    "get_gate",
    "inverse_bell",
    "linear",
    "no_gate",
    "pure_r2",
    "sigmoid",
]

_SIGMOID_KAPPA = 10.0

_GateFn = Callable[[np.ndarray], np.ndarray]
GateLike = Union[str, _GateFn]


def bell(r: np.ndarray) -> np.ndarray:
    """MOOR's Bell gate ``max(0,r)² · max(0,1−r)²``."""
    r = np.asarray(r, dtype=np.float64)
    return np.maximum(0.0, r) ** 2 * np.maximum(0.0, 1.0 - r) ** 2


def linear(r: np.ndarray) -> np.ndarray:
    """``max(0, r)``."""
    return np.maximum(0.0, np.asarray(r, dtype=np.float64))


def sigmoid(r: np.ndarray, kappa: float = _SIGMOID_KAPPA) -> np.ndarray:
    """``1 / (1 + exp(−κ (r − 0.5)))`` with κ = 10 by default."""
    r = np.asarray(r, dtype=np.float64)
    return 1.0 / (1.0 + np.exp(-kappa * (r - 0.5)))


def inverse_bell(r: np.ndarray) -> np.ndarray:
    """``1/16 − bell(r)``: zero at r = 0.5, 1/16 for r ≤ 0 or r ≥ 1."""
    return 1.0 / 16.0 - bell(r)


def pure_r2(r: np.ndarray) -> np.ndarray:
    """``max(0, r)²``."""
    return np.maximum(0.0, np.asarray(r, dtype=np.float64)) ** 2


def no_gate(r: np.ndarray) -> np.ndarray:
    """``1`` for every r (variance weighting only)."""
    return np.ones_like(np.asarray(r, dtype=np.float64))


#: The gates by name: one table (unknown names are errors listing the known ones).
GATES: Table[_GateFn] = Table("gate", param="gate")
for _name, _fn, _aliases in (
    ("bell", bell, ()),
    ("linear", linear, ()),
    ("sigmoid", sigmoid, ()),
    ("inverse_bell", inverse_bell, ("inversebell",)),
    ("pure_r2", pure_r2, ("r2", "pure_r²")),
    ("none", no_gate, ("no_gate", "nogate")),
):
    GATES.register(_name, _fn, aliases=_aliases)


def get_gate(gate: GateLike) -> _GateFn:
    """Resolve a gate name (``bell``, ``linear``, ``sigmoid``, ``inverse_bell``, ``pure_r2``, ``none``;
    case and ``-``/``_`` insensitive) or pass a callable through (its output is checked when used)."""
    if callable(gate):
        return _checked(gate)
    if not isinstance(gate, str):
        raise ConfigError(f"must be a name or a callable, got {type(gate).__name__}", param="gate")
    return GATES.get(gate.strip().lower().replace("-", "_").replace(" ", "_"))


def _checked(fn: _GateFn) -> _GateFn:
    def wrapped(r: np.ndarray) -> np.ndarray:
        r = np.asarray(r, dtype=np.float64)
        g = np.asarray(fn(r), dtype=np.float64)
        if g.shape != r.shape:
            g = np.broadcast_to(g, r.shape).astype(np.float64)
        if not np.isfinite(g).all() or (g < 0).any():
            raise InputError("custom gate returned a negative or non-finite value")
        return g

    wrapped.__name__ = getattr(fn, "__name__", "custom_gate")
    return wrapped
