"""How numbers of a report are written in tables, figures and sentences (one rule everywhere).

Values in [0, 1] are shown as percent / points with one decimal; a value that rounds to zero is
``0.0`` (``+0.0`` signed), never ``-0.0``; an undefined value is ``–``.  Sign conventions, said in
every caption that shows them: a paired Δ is condition − clean (negative = worse); an additivity
drop is clean − condition (positive = worse).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["DASH", "PAIRED_SIGN", "DROP_SIGN", "ci_excludes_zero", "ci_label", "ci_level_text", "ci_text", "ci_verdict",
           "ci_words", "minus", "p_text", "points", "pct"]

DASH = "–"
#: Caption fragments: the sign convention of paired deltas and of additivity drops.
PAIRED_SIGN = "Δ = condition − clean, negative = worse"
DROP_SIGN = "drops = clean − condition, positive = worse"


def points(x: float | None, *, signed: bool = False, digits: int = 1, scale: float = 100.0) -> str | None:
    """``x`` (in [0, 1] units) as points with ``digits`` decimals; ``None`` when undefined.  A value
    that rounds to zero prints as ``0.0`` / ``+0.0``."""
    if x is None or not math.isfinite(float(x)):
        return None
    v = round(scale * float(x), digits) + 0.0  # + 0.0 turns a rounded -0.0 into 0.0
    return f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"


def pct(x: float | None, signed: bool = False) -> str:
    """:func:`points`, with ``–`` for an undefined value."""
    s = points(x, signed=signed)
    return DASH if s is None else s


def ci_text(ci: Sequence[float | None] | None, *, scale: float = 100.0, signed: bool = True) -> str:
    """``[lo, hi]`` in signed points (``scale=1`` for numbers shown as they are); ``–`` if undefined.
    ``signed=False`` for the CI of a level (a value, not a difference): signs only on differences."""
    if not ci or ci[0] is None or ci[1] is None:
        return DASH
    return f"[{points(ci[0], signed=signed, scale=scale)}, {points(ci[1], signed=signed, scale=scale)}]"


def ci_words(ci: Sequence[float | None] | None, level: float, before: str = "", after: str = "") -> str:
    """``95% CI -1.2 to +0.4`` (signed points, at ``level``) between ``before`` and ``after``, as a sentence
    says it; empty when there is no finite CI."""
    if not ci or ci[0] is None or ci[1] is None or not all(math.isfinite(v) for v in ci):  # type: ignore[arg-type]
        return ""
    return f"{before}{ci_label(level)} {pct(ci[0], True)} to {pct(ci[1], True)}{after}"


def minus(text: str) -> str:
    """``text`` with the typographic minus sign (−) for every hyphen: how the HTML pages write numbers."""
    return text.replace("-", "−")


def ci_level_text(level: float) -> str:
    """A CI level as a percentage with at most one decimal: ``95%`` for 0.95, ``97.5%`` for 0.975."""
    return f"{round(100 * float(level), 1):g}%"


def ci_label(level: float) -> str:
    """``95% CI`` for a level of 0.95: how tables, figures and sentences name an interval."""
    return f"{ci_level_text(level)} CI"


def p_text(p: float | None) -> str:
    if p is None:
        return DASH
    return f"{p:.1e}" if p < 1e-3 else f"{p:.3f}"


def ci_excludes_zero(ci: Sequence[float | None] | None) -> bool | None:
    """Whether a CI lies entirely above or below 0 (``None`` when there is no CI)."""
    if not ci or ci[0] is None or ci[1] is None:
        return None
    return ci[0] > 0 or ci[1] < 0


def ci_verdict(ci: Sequence[float | None] | None, excludes: str, includes: str, no_ci: str) -> str:
    """The verdict rule of every sentence: ``excludes`` when the CI excludes 0, ``includes`` when it
    holds 0 (not distinguishable from none), ``no_ci`` without a CI (the numbers, no verdict)."""
    sure = ci_excludes_zero(ci)
    return excludes if sure else includes if sure is False else no_ci
