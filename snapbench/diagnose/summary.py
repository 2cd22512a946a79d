"""The traffic mix: shares of flagged queries per detector and per side, with confidence intervals.

Intervals are Wilson score intervals for a binomial proportion (Wilson 1927):

    centre = (k + z²/2) / (n + z²),   half-width = z / (n + z²) · sqrt(k (n - k) / n + z² / 4)

with z the normal quantile of (1 + level) / 2.  Chosen over a bootstrap because the queries of a log
are independent draws and the share is one proportion: Wilson is exact to compute, needs no seed,
and keeps a sensible width at 0 or n flagged queries (where a percentile bootstrap collapses to a
point).  The traffic-weighted view (:mod:`snapbench.app.traffic`), which combines the mix
with a benchmark's bootstrap, resamples the per-query flags of ``diagnose.csv`` instead.

Sides: a query's image side is flagged when any image detector flags it, its text side likewise.
The four-way split (``clean``, ``image_only``, ``text_only``, ``both``; ``any`` = all but clean)
counts the queries whose every present side could be read; a query with no question has a clean
text side, one with no image a clean image side (``inputs`` in summary.json says which sides the
query set has).  A category the query set cannot have (``text_only`` and ``both`` without any
question, ``image_only`` and ``both`` without any image) has no share: ``share`` and ``ci`` null,
``n`` 0 and ``not_applicable`` saying why ("no questions").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..core.defaults import DEFAULT_CI
from ..core.validate import ci_level
from .detect import QueryResult
from .thresholds import DETECTORS, Thresholds

__all__ = ["FOUR_WAY", "wilson_interval", "share", "summarize"]

#: The pilot's four-way split plus ``any``, in table order.
FOUR_WAY: tuple[str, ...] = ("clean", "image_only", "text_only", "both", "any")


def wilson_interval(k: int, n: int, level: float = DEFAULT_CI) -> tuple[float, float]:
    """Wilson score interval of the proportion ``k / n`` (NaNs when ``n == 0``)."""
    ci_level(level, "level")
    if n <= 0:
        return float("nan"), float("nan")
    if not 0 <= k <= n:
        raise ValueError(f"k must be in [0, n], got k={k}, n={n}")
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + level / 2.0))
    z2 = z * z
    centre = (k + z2 / 2.0) / (n + z2)
    half = z / (n + z2) * math.sqrt(k * (n - k) / n + z2 / 4.0)
    # At k = 0 (k = n) the bound is exactly 0 (1); the formula gives it up to rounding.
    lo = 0.0 if k == 0 else max(0.0, centre - half)
    hi = 1.0 if k == n else min(1.0, centre + half)
    return lo, hi


def share(k: int, n: int, level: float = DEFAULT_CI) -> dict[str, Any]:
    """``{"share", "ci", "count", "n"}`` for ``k`` of ``n`` queries (share NaN when n is 0)."""
    lo, hi = wilson_interval(k, n, level)
    return {"share": k / n if n else float("nan"), "ci": [lo, hi], "count": int(k), "n": int(n)}


def _not_applicable(results: Sequence[QueryResult]) -> dict[str, str]:
    """The four-way categories a one-sided query set cannot have, with why: without questions no
    query is ``text_only`` or ``both`` -- not "0% [0, 9.9]" (a CI of a share that cannot be nonzero)."""
    out: dict[str, str] = {}
    for side, why, cats in (("question", "no questions", ("text_only", "both")),
                            ("image", "no images", ("image_only", "both"))):
        if not any(getattr(r.record, side) is not None for r in results):
            for c in cats:
                out.setdefault(c, why)
    return out


def _four_way(results: Sequence[QueryResult], level: float) -> dict[str, Any]:
    usable = [r for r in results if r.image_skip is None]
    counts = dict.fromkeys(FOUR_WAY, 0)
    for r in usable:
        i, t = r.image_flagged, r.text_flagged
        counts["both" if i and t else "image_only" if i else "text_only" if t else "clean"] += 1
    counts["any"] = len(usable) - counts["clean"]
    na = _not_applicable(results)
    return {k: {**share(0, 0, level), "not_applicable": na[k]} if k in na else share(counts[k], len(usable), level)
            for k in FOUR_WAY}


def _by_condition(results: Sequence[QueryResult]) -> dict[str, dict[str, Any]]:
    conds: dict[str, list[QueryResult]] = {}
    for r in results:
        c = r.record.tags.get("condition")
        if isinstance(c, str):
            conds.setdefault(c, []).append(r)
    out = {}
    for c, rs in conds.items():
        row: dict[str, Any] = {"n": len(rs)}
        for d in DETECTORS:
            n = sum(1 for r in rs if d in r.flags)
            row[d] = sum(1 for r in rs if r.flags.get(d)) / n if n else None
        out[c] = row
    return out


def summarize(results: Sequence[QueryResult], thresholds: Thresholds, *, level: float = DEFAULT_CI) -> dict[str, Any]:
    """The summary.json body: ``shares`` per detector, the four-way split, ``by_condition`` when the
    queries are ``snapbench corrupt`` variants (share flagged per condition and detector)."""
    shares = {}
    for d, det in DETECTORS.items():
        n = sum(1 for r in results if d in r.flags)
        k = sum(1 for r in results if r.flags.get(d))
        t = thresholds[d]["threshold"]
        shares[d] = {**share(k, n, level), "side": det.side, "score": det.meaning,
                     "flagged_when": f"score {'<' if det.flagged == 'below' else '>'} {t:g}"}
    out: dict[str, Any] = {
        "n_queries": len(results),
        "n_images": sum(1 for r in results if r.record.image is not None),
        "n_questions": sum(1 for r in results if r.record.question is not None),
        "n_skipped_images": sum(1 for r in results if r.image_skip is not None),
        "level": level,
        "ci_method": "wilson",
        "shares": shares,
        **_four_way(results, level),
    }
    by_cond = _by_condition(results)
    if by_cond:
        out["by_condition"] = by_cond
    return out
