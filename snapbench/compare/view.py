"""The records of a comparison, indexed for the tables, figures and findings of one (target, metric).

Also the one verdict rule every sentence, table and figure of the comparison report uses
(:func:`told_apart`): a difference is called real only when its adjusted p-value is below 1 − ci
**and** its confidence interval excludes 0 (:func:`snapbench.evaluate.fmt.ci_excludes_zero`, the
rule of the run report's findings).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

from ..conditions import IMAGE_PRIMITIVES
from ..evaluate.fmt import ci_excludes_zero
from .groups import GROUP_ALL
from .multiple import adjust_pvalues, alpha_of
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

__all__ = ["MetricView", "told_apart", "paper_columns", "finite", "display_names"]

#: The longest model name tables and figures show as it is.
LABEL_MAX = 40
_ADAPTER = re.compile(r"^[A-Za-z][\w.+-]*:")


def _short(name: str) -> str:
    if len(name) <= LABEL_MAX:
        return name
    # Shortened from the front only: the end of a spec (the model's folder or hub name) identifies it,
    # so whole trailing parts are kept, as many as fit, and none of the last two is ever cut.
    m = _ADAPTER.match(name)
    parts = [p for p in re.split(r"[/\\]+", name[m.end() if m else 0:]) if p]
    if len(parts) < 2:
        return name  # one word: all of it identifies the model
    least = 2  # the last two parts at least: a model's file or folder is often a generic "model"
    if len(parts) >= 3 and parts[-2] == "snapshots" and re.fullmatch(r"[0-9a-f]{40}", parts[-1]):
        parts[-1], least = parts[-1][:7], 3  # a Hugging Face cache snapshot: the folder above names the model
    kept = parts[-least:]
    for p in reversed(parts[:-least]):
        if len("…/" + "/".join([p, *kept])) > LABEL_MAX:
            break
        kept.insert(0, p)
    return "…/" + "/".join(kept)


def display_names(models: Sequence[str]) -> dict[str, str]:
    """How the comparison's tables and figures name each model (the one rule): the name itself when
    it has at most :data:`LABEL_MAX` characters (a ``--name``, ``toy``, a hub id); a longer spec that
    names a path or hub id, by as many of its last parts as fit in :data:`LABEL_MAX`
    (``sentence-transformers:/home/me/models/minilm/model`` -> ``…/me/models/minilm/model``), the last
    two parts whole however long (a Hugging Face cache snapshot hash in git's 7-character form): a name is shortened from the front, never cut inside the part that
    identifies the model.  A long name without parts is kept whole.  Models whose short forms would
    coincide keep their full names.  compare.json, the record tables and the findings keep the full
    names; the page shows the full name on hover and in its table of models."""
    short = {m: _short(m) for m in models}
    taken = list(short.values())
    return {m: s if taken.count(s) == 1 and (s == m or s not in short) else m for m, s in short.items()}


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
    return bool(sure) and p is not None and p < alpha_of(level)


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
    correction: str = "holm"
    #: model -> how tables and figures name it (:func:`display_names`; a model not in it: its name)
    labels: dict[str, str] = field(default_factory=dict)

    def label(self, model: str) -> str:
        """The model as tables and figures name it."""
        return self.labels.get(model, model)

    @classmethod
    def all_of(cls, comparison: Comparison, level: float, correction: str = "holm") -> dict[tuple[str, str], MetricView]:
        """A view of every (target, metric) of ``comparison``, keyed so (records grouped in one pass)."""
        by: dict[tuple[str, str], dict[str, list]] = {}
        for name in ("models", "pairs", "ranking", "normalised", "effective", "fits", "additivity", "additivity_pairs"):
            for r in getattr(comparison, name):
                by.setdefault((r.mode, r.metric), {}).setdefault(name, []).append(r)
        labels = display_names(list(dict.fromkeys(r.model for r in comparison.models)))
        return {key: cls._of(key, recs, level, correction, labels) for key, recs in by.items()}

    @classmethod
    def _of(cls, key: tuple[str, str], recs: dict[str, list], level: float, correction: str,
            labels: dict[str, str]) -> MetricView:
        def get(name: str) -> list:
            return recs.get(name, [])

        values = {(r.model, r.condition): r for r in get("models")}
        models = list(dict.fromkeys(r.model for r in get("models")))
        cols = list(dict.fromkeys(c for (m, c) in values if m == models[0])) if models else []
        return cls(
            key[0], key[1], models, level, values,
            {(r.model_a, r.model_b, r.condition): r for r in get("pairs")},
            {r.model: r for r in get("ranking")},
            {(r.model, r.operator): r for r in get("normalised")},
            {(r.model, r.condition): r for r in get("effective")},
            {r.condition: r for r in get("fits")},
            {(r.model, r.joint): r for r in get("additivity")},
            {(r.model_a, r.model_b, r.joint): r for r in get("additivity_pairs")},
            cols, correction, labels,
        )

    @cached_property
    def overall_p(self) -> dict[tuple[str, str], float]:
        """Each pair's ``group:all`` p-value adjusted over all pairs of models (the family of the
        ranking's tiers), so that an overall verdict never contradicts the tiers' rule."""
        keys = [(a, b) for (a, b, c) in self.pairs if c == GROUP_ALL]
        adj = adjust_pvalues([self.pairs[(a, b, GROUP_ALL)].p_raw for a, b in keys], self.correction)
        return {k: float(p) for k, p in zip(keys, adj)}

    def overall_apart(self, a: str, b: str) -> bool | None:
        """Whether ``a`` and ``b`` are told apart on all corrupted conditions (all-pairs family)."""
        rec = self.pairs.get((a, b, GROUP_ALL))
        if rec is None:
            return None
        return told_apart(self.overall_p.get((a, b)), (rec.ci_low, rec.ci_high), self.level)

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
