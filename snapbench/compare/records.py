"""The flat records a comparison produces: one row each, ready for a data frame or compare.json.

Floats are plain Python floats; an undefined number is NaN (written as JSON ``null`` by
:func:`snapbench.core.jsonable.to_json`).  Field names are the compare.json schema.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

__all__ = [
    "ModelRecord",
    "PairRecord",
    "NormalisedRecord",
    "RankingRecord",
    "EffectiveRecord",
    "FitRecord",
    "AdditivityRecord",
    "AdditivityPairRecord",
    "Comparison",
]


@dataclass(frozen=True)
class ModelRecord:
    """One model x condition (or group): value, delta = value − clean with its paired bootstrap CI,
    retention = value / clean.  For ``clean`` itself delta and CI are NaN."""

    mode: str
    model: str
    condition: str
    metric: str
    value: float
    delta: float
    ci_low: float
    ci_high: float
    retention: float


@dataclass(frozen=True)
class PairRecord:
    """diff = ΔA − ΔB on the same queries (> 0: model_a dropped less), its joint bootstrap CI, the
    paired test (raw and adjusted within the family) and the effect size of that test."""

    mode: str
    metric: str
    condition: str
    model_a: str
    model_b: str
    diff: float
    ci_low: float
    ci_high: float
    p_raw: float
    p_adj: float
    effect_size: float
    test: str


@dataclass(frozen=True)
class NormalisedRecord:
    """Corruption error of one operator (over its severities) relative to the reference model."""

    mode: str
    model: str
    operator: str
    metric: str
    ce: float
    relative_ce: float


@dataclass(frozen=True)
class RankingRecord:
    """Rank by robustness (1 = smallest mean drop), its bootstrap rank interval and its tier."""

    mode: str
    metric: str
    model: str
    rank: float
    rank_low: float
    rank_high: float
    group: int


@dataclass(frozen=True)
class EffectiveRecord:
    """Effective robustness: corrupted value minus the logit-space fit across models at this clean value."""

    mode: str
    metric: str
    condition: str
    model: str
    clean: float
    corrupted: float
    fitted: float
    effective_robustness: float


@dataclass(frozen=True)
class FitRecord:
    """logit(corrupted) = slope · logit(clean) + intercept, least squares over n models."""

    mode: str
    metric: str
    condition: str
    slope: float
    intercept: float
    n: int


@dataclass(frozen=True)
class AdditivityRecord:
    """Super-additivity of one model: joint = a joint condition id, ``pair:<img>+<txt>``,
    ``severity:s<N>`` or ``mean``; δ = Obs − Exp with its bootstrap CI."""

    mode: str
    metric: str
    model: str
    joint: str
    exp: float
    obs: float
    delta: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class AdditivityPairRecord:
    """diff = δA − δB with a CI from the same joint resamples."""

    mode: str
    metric: str
    joint: str
    model_a: str
    model_b: str
    diff: float
    ci_low: float
    ci_high: float


@dataclass
class Comparison:
    """Everything a comparison computed, as lists of records, plus the settings used (``meta``)."""

    models: list[ModelRecord] = field(default_factory=list)
    pairs: list[PairRecord] = field(default_factory=list)
    normalised: list[NormalisedRecord] = field(default_factory=list)
    ranking: list[RankingRecord] = field(default_factory=list)
    effective: list[EffectiveRecord] = field(default_factory=list)
    fits: list[FitRecord] = field(default_factory=list)
    additivity: list[AdditivityRecord] = field(default_factory=list)
    additivity_pairs: list[AdditivityPairRecord] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def records(self) -> dict[str, Any]:
        """``{"models": [dict, ...], "pairs": [...], ..., "meta": {...}}`` (NaN kept as float NaN)."""
        out: dict[str, Any] = {}
        for name in ("models", "pairs", "normalised", "ranking", "effective", "fits", "additivity", "additivity_pairs"):
            recs = getattr(self, name)
            # the fields are scalars: a shallow dict per record (dataclasses.asdict deep-copies, ~10x slower)
            keys = [f.name for f in fields(recs[0])] if recs else []
            out[name] = [{k: getattr(r, k) for k in keys} for r in recs]
        out["meta"] = dict(self.meta)
        return out
