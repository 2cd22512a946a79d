"""The records of a comparison, indexed for the tables, figures and findings of one (target, metric).

Also the one verdict rule every sentence, table and figure of the comparison report uses
(:func:`told_apart`): a difference is called real only when its adjusted p-value is below 1 − ci
**and** its confidence interval excludes 0 (:func:`snapbench.evaluate.fmt.ci_excludes_zero`, the
rule of the run report's findings).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..conditions import IMAGE_PRIMITIVES
from ..evaluate.fmt import ci_excludes_zero
from .groups import GROUP_ALL
from .records import (
    AdditivityPairRecord,
    AdditivityRecord,
    Comparison,
    EffectiveRecord,
    FitRecord,
    ModelRecord,
    NormalisedRecord,
    PairRecord,
    RankingRecord,
)

__all__ = ["MetricView", "told_apart", "paper_columns", "finite"]


def finite(x: float | None) -> float | None:
    """``x`` when it is a finite number, else ``None`` (the tables' and sentences' "undefined")."""
    return None if x is None or not math.isfinite(x) else float(x)


def told_apart(p_adj: float | None, ci: Sequence[float | None], level: float) -> bool | None:
    """``True`` when the difference is real by both its adjusted test and its CI; ``False`` when it
    is not; ``None`` when neither a p-value nor a CI is defined."""
    sure = ci_excludes_zero([finite(ci[0]), finite(ci[1])])
    p = finite(p_adj)
    if sure is None and p is None:
        return None
    return bool(sure) and p is not None and p < 1.0 - level


def paper_columns(columns: Sequence[str]) -> list[tuple[str, str]]:
    """``[(header, condition or group id)]`` of the paper's layout among ``columns``: clean, each
    image primitive at s1/s2/s3, text, joint, then all corrupted conditions."""
    out = [("clean", "clean")] if "clean" in columns else []
    for prim in IMAGE_PRIMITIVES:
        sev = sorted((c for c in columns if c.startswith(f"group:img/{prim}/s")), key=lambda c: int(c.rsplit("s", 1)[1]))
        out += [(f"{prim.capitalize()} {c.rsplit('/', 1)[1]}", c) for c in sev]
    out += [(h, g) for h, g in (("Text", "group:txt"), ("Joint", "group:joint"), ("All", GROUP_ALL)) if g in columns]
    return out


@dataclass
class MetricView:
    """Every record of one (target, metric), indexed."""

    target: str
    metric: str
    models: list[str]
    level: float
    values: dict[tuple[str, str], ModelRecord]
    pairs: dict[tuple[str, str, str], PairRecord]
    ranking: dict[str, RankingRecord]
    normalised: dict[tuple[str, str], NormalisedRecord]
    effective: dict[tuple[str, str], EffectiveRecord]
    fits: dict[str, FitRecord]
    additivity: dict[tuple[str, str], AdditivityRecord]
    additivity_pairs: dict[tuple[str, str, str], AdditivityPairRecord]
    columns: list[str]

    @classmethod
    def of(cls, comparison: Comparison, target: str, metric: str, level: float) -> MetricView:
        def mine(r) -> bool:
            return r.mode == target and r.metric == metric

        values = {(r.model, r.condition): r for r in comparison.models if mine(r)}
        models = list(dict.fromkeys(r.model for r in comparison.models if mine(r)))
        cols = list(dict.fromkeys(c for (m, c) in values if m == models[0])) if models else []
        return cls(
            target, metric, models, level, values,
            {(r.model_a, r.model_b, r.condition): r for r in comparison.pairs if mine(r)},
            {r.model: r for r in comparison.ranking if mine(r)},
            {(r.model, r.operator): r for r in comparison.normalised if mine(r)},
            {(r.model, r.condition): r for r in comparison.effective if mine(r)},
            {r.condition: r for r in comparison.fits if mine(r)},
            {(r.model, r.joint): r for r in comparison.additivity if mine(r)},
            {(r.model_a, r.model_b, r.joint): r for r in comparison.additivity_pairs if mine(r)},
            cols,
        )

    @property
    def conditions(self) -> list[str]:
        """The corrupted conditions (no groups), in the runs' order."""
        return [c for c in self.columns if c != "clean" and not c.startswith("group:")]

    def pair(self, a: str, b: str, condition: str) -> tuple[PairRecord | None, int]:
        """The record of ``a`` vs ``b`` on ``condition`` and the sign (+1, or -1 when the record is b vs a)."""
        if (a, b, condition) in self.pairs:
            return self.pairs[(a, b, condition)], 1
        return self.pairs.get((b, a, condition)), -1

    def apart(self, rec: PairRecord | None) -> bool | None:
        return None if rec is None else told_apart(rec.p_adj, (rec.ci_low, rec.ci_high), self.level)

    def ranked(self) -> list[str]:
        """Models from the best rank down (input order without a ranking)."""
        if not self.ranking:
            return list(self.models)
        return sorted(self.models, key=lambda m: (self.ranking[m].rank, self.models.index(m)))
