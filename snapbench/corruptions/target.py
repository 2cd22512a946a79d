"""Severity by target: an operator's knob searched until the variant has a measured strength.

:func:`search_knob` takes an operator's pure ``apply(image, params)``, the parameters its ``sample``
drew (every random draw -- noise seed, offsets -- stays fixed), the name of the one continuous
parameter that sets the strength (the knob), its range and, where other parameters follow the
knob, its ``update`` (:class:`~.image.base.Knob`), and bisects the knob until the measured SSIM or
PSNR of the variant (:func:`~snapbench.corruptions.measure.measure_image`, the value ``corrupt``
records) is within ``tol`` of the target: ±0.01 SSIM, ±0.5 dB PSNR by default.
:func:`target_variant` does it for a registered operator with its declared knob, and
:class:`SeverityTarget` (``--severity-target ssim=0.90,0.75,0.60``) says which target each
severity level means.

Rules (deterministic: the same inputs give the same evaluations in the same order):

* both ends of the range are measured first (a range end within ``tol`` is returned, reached);
  the direction (does the metric rise or fall with the knob?) is read from them, so a knob may
  weaken (JPEG quality) or strengthen (blur σ) the damage;
* when the target lies between the two ends' measures, the bracket [a, b] (measures on opposite
  sides of the target) is halved at its midpoint -- arithmetic, or geometric with ``log=True``
  for scale-like knobs (σ, gain) -- until a value is within ``tol``, or the bracket cannot be split
  any more: integer knobs (``integer=True``) at adjacent values, others at 2^-12 of the range (the
  measure jumps over the tolerance band there: JPEG quality, a crop just under 1);
* otherwise -- the target is outside the ends' measures, or bisection met a jump -- six values
  spread evenly over the range (on the knob's scale) are measured, and every bracket among all
  the values measured so far is bisected in turn, starting from the weak end (the end whose
  measure is closer to the clean image's), so the mildest knob value that reaches the target is
  found first on a knob that is not monotone (a rotation by 180° may look more like the photo
  than one by 45°);
* when ``max_evals`` measurements run out, or no bracket is left, the evaluated knob value whose
  measure is closest to the target is returned (earliest on ties), ``reached=False``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.errors import ConfigError, InputError
from ..core.records import TargetOutcome
from ..core.validate import unknown_name
from .measure import SSIM_MIN_SIDE, ImageReference, ImageStrength, image_reference, measure_image

__all__ = ["DEFAULT_TOLERANCE", "KnobSearch", "SeverityTarget", "parse_severity_target", "search_knob",
           "target_outcome", "target_summary", "target_variant"]

#: Default tolerance per metric: the issue's ±0.01 SSIM, ±0.5 dB PSNR.
DEFAULT_TOLERANCE: dict[str, float] = {"ssim": 0.01, "psnr": 0.5}

ApplyFn = Callable[[np.ndarray, Mapping[str, Any]], np.ndarray]
UpdateFn = Callable[[Mapping[str, Any], Any, tuple[int, int]], dict[str, Any]]


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
    knob: str | None
    knob_value: float | int | None
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
        raise ConfigError(f"severity target: {unknown_name('metric', metric, DEFAULT_TOLERANCE)}")
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


class _Search:
    """The state of one search: every evaluation's measure by knob value, the closest one's variant."""

    def __init__(self, evaluate: Callable[[float], tuple[float, Any]], target: float, tol: float, lo: float, hi: float,
                 integer: bool, log: bool, max_evals: int) -> None:
        self.evaluate, self.target, self.tol = evaluate, target, tol
        self.lo, self.hi, self.integer, self.log, self.max_evals = lo, hi, integer, log, max_evals
        self.seen: dict[float, float] = {}
        self.best: tuple[float, float, float, Any] | None = None  # (distance, value, measure, payload)

    @property
    def budget(self) -> int:
        return self.max_evals - len(self.seen)

    def measure(self, value: float) -> float:
        value = int(value) if self.integer else float(value)
        if value not in self.seen:
            got, payload = self.evaluate(value)
            self.seen[value] = got
            dist = math.inf if math.isnan(got) else abs(got - self.target)
            if self.best is None or dist < self.best[0]:  # strictly closer: the earliest wins ties
                self.best = (dist, value, got, payload)
        return self.seen[value]

    def hit(self, got: float) -> bool:
        return abs(got - self.target) <= self.tol

    def _narrow(self, a: float, b: float) -> bool:
        # the bracket can no longer be split: adjacent integers, or 2**-12 of the range (a jump)
        if self.integer:
            return abs(b - a) <= 1
        width = abs(math.log(b / a)) / math.log(self.hi / self.lo) if self.log else abs(b - a) / (self.hi - self.lo)
        return width < 2.0 ** -12

    def bisect(self, a: float, b: float) -> bool:
        """Halve [a, b] (measures on opposite sides of the target) until a hit; False when it cannot."""
        fa = self.seen[a]
        while self.budget > 0 and not self._narrow(a, b):
            m = _midpoint(a, b, self.integer, self.log)
            fm = self.measure(m)
            if self.hit(fm):
                return True
            if (fm > self.target) == (fa > self.target):
                a, fa = m, fm
            else:
                b = m
        return False

    def scan(self, points: int) -> bool:
        """Measure ``points`` values spread evenly over the range (on the knob's scale); True on a hit."""
        for i in range(1, points + 1):
            t = i / (points + 1)
            v = self.lo * (self.hi / self.lo) ** t if self.log else self.lo + (self.hi - self.lo) * t
            if self.budget <= 0:
                return False
            if self.hit(self.measure(round(v) if self.integer else v)):
                return True
        return False

    def brackets(self, weak_first: bool) -> list[tuple[float, float]]:
        """Adjacent evaluated values whose measures lie on opposite sides of the target, from the weak end."""
        values = sorted(self.seen, reverse=not weak_first)
        return [(a, b) for a, b in zip(values, values[1:])
                if not (math.isnan(self.seen[a]) or math.isnan(self.seen[b]))
                and (self.seen[a] > self.target) != (self.seen[b] > self.target)]


#: Values measured across the range when bisection between the two ends does not reach the target.
_SCAN_POINTS = 6


def _measurable(ref: ImageReference, metric: str) -> ImageReference:
    """``ref``, or :class:`InputError` when ``metric`` cannot be measured on it: where every knob value
    measures NaN, a search would hand back its first try whatever the target (a variant that looks
    searched and is not)."""
    h, w = ref.luma.shape
    if metric == "ssim" and min(h, w) < SSIM_MIN_SIDE:
        raise InputError(f"the image is {w}x{h} px (at the comparison size): an SSIM needs both sides of at least "
                         f"{SSIM_MIN_SIDE} px, so an ssim severity target cannot be searched (a psnr target can)")
    return ref


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
    max_evals: int = 24,
    reference: ImageReference | None = None,
    update: UpdateFn | None = None,
    operator: str | None = None,
) -> KnobSearch:
    """Find the value of ``params[knob]`` in [``lo``, ``hi``] at which ``apply_fn(image, params)``
    measures ``target`` (``metric`` "ssim" or "psnr", within ``tol``); rules in the module docstring.

    ``params`` are the operator's sampled parameters (the knob's own entry, if any, is replaced);
    ``update(params, value, (height, width))``, when given, returns the complete parameters at a
    knob value instead (parameters derived from the knob follow it).  ``reference`` is the clean
    image's :func:`~.measure.image_reference` when already computed; ``operator`` is passed to
    :func:`~.measure.measure_image` (``cropping``'s ``area_kept``).
    """
    tol = DEFAULT_TOLERANCE.get(metric, math.nan) if tol is None else float(tol)
    _check(metric, float(lo), float(hi), integer, log, tol, max_evals)
    ref = _measurable(reference if reference is not None else image_reference(image), metric)
    target = float(target)
    shape = (int(image.shape[0]), int(image.shape[1]))

    def evaluate(value: float) -> tuple[float, Any]:
        p = {**params, knob: value} if update is None else update(params, value, shape)
        out = np.ascontiguousarray(apply_fn(image, p), dtype=np.uint8)
        strength = measure_image(ref, out, operator=operator, params=p)
        return (strength.ssim if metric == "ssim" else strength.psnr), (out, p, strength)

    s = _Search(evaluate, target, tol, int(lo) if integer else float(lo), int(hi) if integer else float(hi),
                integer, log, max_evals)
    reached = _run_search(s)
    assert s.best is not None
    _, value, got, (out, p, strength) = s.best
    return KnobSearch(out, p, strength, metric, target, got, reached, knob, value, len(s.seen))


def _run_search(s: _Search) -> bool:
    """Ends, bisection between them, then (not reached) a scan and bisection of the brackets it finds,
    the one nearest the weak end (the end closer to the clean image) first.  True when reached."""
    fa, fb = s.measure(s.lo), s.measure(s.hi)
    if math.isnan(fa) or math.isnan(fb):
        return False  # no SSIM for an image under 11 px
    if s.hit(fa) or s.hit(fb):
        return True
    if (fa > s.target) != (fb > s.target) and s.bisect(s.lo, s.hi):
        return True
    if s.scan(_SCAN_POINTS):
        return True
    return any(s.bisect(a, b) for a, b in s.brackets(weak_first=fa >= fb))


# ------------------------------------------------------------------------------------------------
# severity levels as targets


@dataclass(frozen=True)
class SeverityTarget:
    """What ``s1``, ``s2``, ... mean under ``--severity-target``: the measured ``metric`` ("ssim" or
    "psnr") each level's variant is searched to, ``values[level - 1]``, within ``tol`` (default
    :data:`DEFAULT_TOLERANCE`) and at most ``max_evals`` evaluations per variant."""

    metric: str
    values: tuple[float, ...]
    tol: float | None = None
    max_evals: int = 24

    @property
    def tolerance(self) -> float:
        return DEFAULT_TOLERANCE[self.metric] if self.tol is None else float(self.tol)

    @property
    def levels(self) -> int:
        return len(self.values)

    def check_levels(self, levels: int) -> None:
        """:class:`ConfigError` unless there is exactly one value per severity level of the grid
        (``levels``: its highest severity): a value beyond the last level would be silently unused."""
        if len(self.values) != int(levels):
            raise ConfigError(f"{self.spec} gives {len(self.values)} value(s) but the severity grid has {levels} "
                              f"level(s) (s1..s{levels}); give exactly one value per level, s1 first",
                              param="severity_target")

    def value_at(self, severity: int) -> float:
        """The target of severity level ``severity`` (1-based); :class:`ConfigError` beyond the last."""
        if not 1 <= int(severity) <= len(self.values):
            raise ConfigError(f"severity target {self.spec} gives {len(self.values)} level(s); a condition at s{severity} "
                              "has no target (give one value per severity level)", param="severity_target")
        return self.values[int(severity) - 1]

    @property
    def spec(self) -> str:
        """The command-line form, ``ssim=0.9,0.75,0.6``."""
        return f"{self.metric}=" + ",".join(f"{v:g}" for v in self.values)

    def to_json(self) -> dict[str, Any]:
        """How run.json and the fingerprints record it."""
        return {"metric": self.metric, "values": list(self.values), "tolerance": self.tolerance,
                "max_evals": int(self.max_evals)}


def _target_value(metric: str, raw: str, spec: str) -> float:
    try:
        v = float(raw)
    except ValueError:
        v = math.nan
    ok = 0.0 < v <= 1.0 if metric == "ssim" else 0.0 < v < math.inf
    if not ok:
        want = "a number in (0, 1]" if metric == "ssim" else "a positive number of dB"
        raise ConfigError(f"{spec!r}: each {metric} target must be {want}, got {raw.strip()!r}",
                          param="severity_target")
    return v


def _check_order(metric: str, values: tuple[float, ...], spec: str) -> None:
    # s1 is the mildest level: a higher SSIM / PSNR is a milder variant, so the values must fall
    for k, (a, b) in enumerate(zip(values, values[1:]), start=1):
        if not b < a:
            raise ConfigError(f"{spec!r}: the values go from the mildest level (s1) to the harshest, so each {metric} "
                              f"target must be lower than the one before; s{k + 1} ({b:g}) is not below s{k} ({a:g})",
                              param="severity_target")


def parse_severity_target(spec: str | SeverityTarget | None) -> SeverityTarget | None:
    """``"ssim=0.90,0.75,0.60"`` or ``"psnr=30,25,20"`` (one value per severity level, s1 first, each
    lower than the one before: s1 is the mildest) as a :class:`SeverityTarget`; None and a valid
    SeverityTarget pass through.  :class:`ConfigError` otherwise.  That the number of values is the
    grid's number of levels is checked against the grid (:meth:`SeverityTarget.check_levels`)."""
    if spec is None or isinstance(spec, SeverityTarget):
        if isinstance(spec, SeverityTarget):
            _check(spec.metric, 0.0, 1.0, False, False, spec.tolerance, spec.max_evals)
            for v in spec.values:
                _target_value(spec.metric, str(v), spec.spec)
            _check_order(spec.metric, tuple(spec.values), spec.spec)
        return spec
    text = str(spec).strip()
    metric, sep, rest = text.partition("=")
    metric = metric.strip().lower()
    if not sep or not rest.strip():
        raise ConfigError(f"{text!r} must look like ssim=0.90,0.75,0.60 or psnr=30,25,20 (a metric among "
                          f"{', '.join(DEFAULT_TOLERANCE)}, then one value per severity level)", param="severity_target")
    if metric not in DEFAULT_TOLERANCE:
        raise ConfigError(unknown_name("metric", metric, DEFAULT_TOLERANCE, where=f" in {text!r}")
                          + " (e.g. ssim=0.90,0.75,0.60 or psnr=30,25,20)", param="severity_target")
    values = tuple(_target_value(metric, part, text) for part in rest.split(","))
    _check_order(metric, values, text)
    return SeverityTarget(metric, values)


def target_variant(operator: Any, image: np.ndarray, params: Mapping[str, Any], value: float, metric: str = "ssim", *,
                   tol: float | None = None, max_evals: int = 24,
                   reference: ImageReference | None = None) -> KnobSearch:
    """The variant of ``operator`` (an :class:`~.image.base.ImageOperator` record) whose measured
    ``metric`` is ``value``: its declared knob searched from the drawn ``params``
    (:func:`search_knob`).  An operator without a knob is applied once as drawn: the outcome is
    flagged reached only if that happens to be within ``tol``, with ``knob`` and ``knob_value`` None."""
    knob = operator.knob
    if knob is not None:
        return search_knob(operator.apply, image, params, knob.name, knob.lo, knob.hi, value, metric, tol=tol,
                           integer=knob.integer, log=knob.log, max_evals=max_evals, reference=reference,
                           update=lambda p, v, shape: knob.params_at(p, v, shape, operator.sample),
                           operator=operator.name)
    tol = DEFAULT_TOLERANCE.get(metric, math.nan) if tol is None else float(tol)
    _check(metric, 0.0, 1.0, False, False, tol, max_evals)
    ref = _measurable(reference if reference is not None else image_reference(image), metric)
    out = np.ascontiguousarray(operator.apply(image, params), dtype=np.uint8)
    strength = measure_image(ref, out, operator=operator.name, params=params)
    got = strength.ssim if metric == "ssim" else strength.psnr
    reached = not math.isnan(got) and abs(got - float(value)) <= tol
    return KnobSearch(out, dict(params), strength, metric, float(value), got, reached, None, None, 1)


# ------------------------------------------------------------------------------------------------
# what a run's targets came to


def target_outcome(entries: Iterable[tuple[str, str, int, Mapping[str, Any]]]) -> TargetOutcome:
    """The :class:`TargetOutcome` of ``(query id, image operator, severity, outcome)`` entries, one per
    image variant (``outcome`` holds ``reached`` and ``achieved``, as the manifest's ``"target"``)."""
    n = missed = 0
    achieved: dict[tuple[str, str], dict[int, float]] = {}
    for qid, op, sev, t in entries:
        n += 1
        missed += not t.get("reached")
        got = t.get("achieved")
        if got is not None and math.isfinite(float(got)):
            achieved.setdefault((qid, op), {})[int(sev)] = float(got)
    inverted = 0
    for by_level in achieved.values():
        vals = [by_level[s] for s in sorted(by_level)]
        inverted += any(b > a for a, b in zip(vals, vals[1:]))
    return TargetOutcome(n, missed, inverted)


def target_summary(outcome: TargetOutcome, flagged: str) -> str:
    """The one line ``corrupt`` and ``run`` print about a severity target; ``flagged`` says where the
    missed variants are marked (``'"reached": false in manifest.jsonl'``)."""
    line = f"severity target: {outcome.variants - outcome.missed} of {outcome.variants} image variants reached it"
    if outcome.missed:  # the causes of a miss, said only where some variant missed
        line += (f"; {outcome.missed} missed it by more than the tolerance ({flagged}): the knob's range ended first, "
                 "or the measure jumps over the target")
    if outcome.inverted:
        line += (f"; for {outcome.inverted} (query, operator) pair(s) a harsher level measures milder than the one "
                 "before it")
    return line
