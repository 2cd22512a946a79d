"""Severity by target: search an operator's knob until the variant has a measured strength.

Prototype of issue #17 point 3 (not yet wired into ``corrupt``): :func:`search_knob` takes an
operator's pure ``apply(image, params)``, the parameters its ``sample`` drew (every random draw --
noise seed, offsets -- stays fixed), the name of the one continuous parameter that sets the strength
(the knob) and its range, and bisects the knob until the measured SSIM or PSNR of the variant
(:func:`~snapbench.corruptions.measure.measure_image`, the value ``corrupt`` records) is within
``tol`` of the target: ±0.01 SSIM, ±0.5 dB PSNR by default.

Rules (deterministic: the same inputs give the same evaluations in the same order):

* both ends of the range are measured first; the direction (does the metric rise or fall with the
  knob?) is read from them, so a knob may weaken (JPEG quality) or strengthen (blur σ) the damage;
* a target outside the measured values of the two ends is not reachable: the end closer to the
  target is returned, flagged ``reached=False``; so is a range end within ``tol`` of it, flagged
  reached;
* otherwise the bracket [a, b] (metric on opposite sides of the target) is halved at its midpoint
  -- arithmetic, or geometric with ``log=True`` for scale-like knobs (σ, gain); integer knobs
  (``integer=True``) stop when a and b are adjacent -- until a value is within ``tol``;
* when ``max_evals`` measurements or an integer bracket run out first, the evaluated knob value
  whose measure is closest to the target is returned (earliest on ties), ``reached=False``.

A knob is assumed monotone; where it is not (JPEG at some qualities), bisection still ends in
a bracket and the rules above still say what is returned.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ConfigError
from .measure import ImageReference, ImageStrength, image_reference, measure_image

__all__ = ["DEFAULT_TOLERANCE", "KnobSearch", "search_knob"]

#: Default tolerance per metric: the issue's ±0.01 SSIM, ±0.5 dB PSNR.
DEFAULT_TOLERANCE: dict[str, float] = {"ssim": 0.01, "psnr": 0.5}

ApplyFn = Callable[[np.ndarray, Mapping[str, Any]], np.ndarray]


@dataclass(frozen=True)
class KnobSearch:
    """Outcome of :func:`search_knob`: the variant, its complete parameters and how close it came."""

    image: np.ndarray
    params: dict[str, Any]
    strength: ImageStrength
    metric: str
    target: float
    achieved: float
    reached: bool
    knob: str
    knob_value: float | int
    evaluations: int

    def to_json(self) -> dict[str, Any]:
        """The manifest's ``"target"`` object: ``metric``, ``value``, ``achieved``, ``reached``,
        ``knob``, ``knob_value`` (``achieved`` rounded like the ``"measured"`` values)."""
        digits = 6 if self.metric == "ssim" else 4
        return {
            "metric": self.metric,
            "value": self.target,
            "achieved": round(self.achieved, digits) if math.isfinite(self.achieved) else None,
            "reached": self.reached,
            "knob": self.knob,
            "knob_value": self.knob_value,
        }


def _check(metric: str, lo: float, hi: float, integer: bool, log: bool, tol: float, max_evals: int) -> None:
    if metric not in DEFAULT_TOLERANCE:
        raise ConfigError(f"severity target: unknown metric {metric!r}; known: {', '.join(DEFAULT_TOLERANCE)}")
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ConfigError(f"severity target: the knob range must be finite with lo < hi, got [{lo}, {hi}]")
    if integer and (lo != int(lo) or hi != int(hi)):
        raise ConfigError(f"severity target: an integer knob needs integer ends, got [{lo}, {hi}]")
    if log and lo <= 0:
        raise ConfigError(f"severity target: a log-scale knob needs lo > 0, got {lo}")
    if not (tol > 0 and math.isfinite(tol)):
        raise ConfigError(f"severity target: tolerance must be a positive number, got {tol}")
    if max_evals < 2:
        raise ConfigError(f"severity target: max_evals must be at least 2 (the two range ends), got {max_evals}")


def _midpoint(a: float, b: float, integer: bool, log: bool) -> float:
    if integer:
        return (int(a) + int(b)) // 2
    return math.sqrt(a * b) if log else (a + b) / 2.0


def search_knob(
    apply_fn: ApplyFn,
    image: np.ndarray,
    params: Mapping[str, Any],
    knob: str,
    lo: float,
    hi: float,
    target: float,
    metric: str = "ssim",
    *,
    tol: float | None = None,
    integer: bool = False,
    log: bool = False,
    max_evals: int = 20,
    reference: ImageReference | None = None,
) -> KnobSearch:
    """Find the value of ``params[knob]`` in [``lo``, ``hi``] at which ``apply_fn(image, params)``
    measures ``target`` (``metric`` "ssim" or "psnr", within ``tol``); rules in the module docstring.

    ``params`` are the operator's sampled parameters (the knob's own entry, if any, is replaced);
    ``reference`` is the clean image's :func:`~.measure.image_reference` when already computed.
    """
    tol = DEFAULT_TOLERANCE.get(metric, math.nan) if tol is None else float(tol)
    _check(metric, float(lo), float(hi), integer, log, tol, max_evals)
    ref = reference if reference is not None else image_reference(image)
    target = float(target)
    seen: list[tuple[float, float, np.ndarray, dict[str, Any], ImageStrength]] = []

    def measure(value: float) -> float:
        p = {**params, knob: int(value) if integer else float(value)}
        out = apply_fn(image, p)
        strength = measure_image(ref, out)
        got = strength.ssim if metric == "ssim" else strength.psnr
        seen.append((value, got, out, p, strength))
        return got

    def done(reached: bool) -> KnobSearch:
        # the evaluation closest to the target; min() keeps the earliest on ties
        value, got, out, p, strength = min(seen, key=lambda e: abs(e[1] - target) if not math.isnan(e[1]) else math.inf)
        return KnobSearch(out, p, strength, metric, target, got, reached, knob, p[knob], len(seen))

    a, b = (int(lo), int(hi)) if integer else (float(lo), float(hi))
    fa, fb = measure(a), measure(b)
    if math.isnan(fa) or math.isnan(fb):
        return done(False)  # no SSIM for an image under 11 px
    if min(abs(fa - target), abs(fb - target)) <= tol:
        return done(True)
    if (fa > target) == (fb > target):
        return done(False)  # both ends on the same side: not reachable in this range
    while len(seen) < max_evals:
        if integer and b - a <= 1:
            break
        m = _midpoint(a, b, integer, log)
        fm = measure(m)
        if abs(fm - target) <= tol:
            return done(True)
        if (fm > target) == (fa > target):
            a, fa = m, fm
        else:
            b = m
    return done(False)
