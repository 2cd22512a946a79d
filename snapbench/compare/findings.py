"""The comparison's findings in plain words (``findings.json`` and the report's first section).

Every sentence that calls one model more robust than another rests on the verdict rule of
:func:`snapbench.compare.view.told_apart`: its adjusted p-value is below 1 − ci **and** its CI
excludes 0; otherwise it says the two are not told apart and gives the numbers.  Statements without
a test (super-additivity differences, effective robustness) use the CI alone (the run report's rule,
:func:`snapbench.evaluate.fmt.ci_excludes_zero`) or are called descriptive.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..evaluate.fmt import ci_excludes_zero, p_text, points
from ..report.findings import Finding
from ..report.tables import metric_label
from .groups import GROUP_ALL
from .tables import target_label
from .view import MetricView, finite

__all__ = ["compare_findings"]

_MAX_PAIR_SENTENCES = 10


def _pts(x: float | None, signed: bool = True) -> str:
    s = points(finite(x), signed=signed)
    return "–" if s is None else s


def _ci(lo: float | None, hi: float | None, level: float) -> str:
    if finite(lo) is None or finite(hi) is None:
        return "no CI"
    return f"{round(100 * level, 1):g}% CI {_pts(lo)} to {_pts(hi)}"


def _ranking(v: MetricView, correction: str) -> Finding | None:
    if not v.ranking:
        return None
    lab, order = metric_label(v.metric), v.ranked()
    rec = {m: v.values[(m, GROUP_ALL)] for m in order if (m, GROUP_ALL) in v.values}
    if len(rec) < len(order):
        return None
    best, worst = order[0], order[-1]
    tiers: dict[int, list[str]] = {}
    for m in order:
        tiers.setdefault(v.ranking[m].group, []).append(m)
    if len(tiers) == 1:
        verdict = (f"none of the {len(order)} models is told apart from the best ({correction}-adjusted p and "
                   f"{round(100 * v.level, 1):g}% CI of each pair's difference)")
    else:
        verdict = "tiers (a model of a tier is not told apart from the tier's first): " + "; ".join(
            f"{t}: {', '.join(ms)}" for t, ms in sorted(tiers.items()))
    text = (f"In {target_label(v.target)}, by mean Δ{lab} over {len(v.conditions)} corrupted conditions, {best} drops "
            f"least ({_pts(rec[best].delta)} points, {_ci(rec[best].ci_low, rec[best].ci_high, v.level)}) and {worst} "
            f"most ({_pts(rec[worst].delta)}, {_ci(rec[worst].ci_low, rec[worst].ci_high, v.level)}); {verdict}.")
    return Finding(f"ranking:{v.target}", text, {
        "target": v.target, "metric": v.metric, "order": order, "tiers": {str(k): m for k, m in tiers.items()},
        "mean_delta": {m: r.delta for m, r in rec.items()}})


def _pair_sentence(v: MetricView, a: str, b: str, correction: str) -> tuple[str, dict]:
    r = v.pairs[(a, b, GROUP_ALL)]
    apart = v.overall_apart(a, b)
    p_all = v.overall_p.get((a, b))
    nums = (f"{_pts(r.diff)} points, {_ci(r.ci_low, r.ci_high, v.level)}, p = {p_text(finite(p_all))} "
            f"{correction}-adjusted over the {len(v.overall_p)} pairs, effect size {finite(r.effect_size) or 0:.2f}")
    if apart:
        more, less = (a, b) if r.diff > 0 else (b, a)
        head = f"{more} is more robust than {less}: it drops {_pts(abs(r.diff), False)} points less on average ({nums})"
    else:
        head = f"{a} and {b} are not told apart on average (ΔA − ΔB = {nums})"
    better = worse = 0
    for c in v.conditions:
        rec, _ = v.pair(a, b, c)
        if rec is not None and v.apart(rec):
            better, worse = (better + 1, worse) if rec.diff > 0 else (better, worse + 1)
    tally = (f"; condition by condition, {a} is more robust in {better}, {b} in {worse}, neither told apart in "
             f"{len(v.conditions) - better - worse}")
    return head + tally + ".", {"model_a": a, "model_b": b, "diff": r.diff, "ci": [r.ci_low, r.ci_high],
                                "p_adj_over_pairs": p_all, "told_apart": apart, "a_better": better, "b_better": worse}


def _pairs(v: MetricView, correction: str) -> list[Finding]:
    keys = [(a, b) for (a, b, c) in v.pairs if c == GROUP_ALL]
    if not keys:
        return []
    if len(keys) <= _MAX_PAIR_SENTENCES:
        out = []
        for a, b in keys:
            text, vals = _pair_sentence(v, a, b, correction)
            out.append(Finding(f"pair:{v.target}:{a}:{b}", f"{target_label(v.target)}, {metric_label(v.metric)}: {text}",
                               {"target": v.target, "metric": v.metric, **vals}))
        return out
    apart = [(a, b) for a, b in keys if v.overall_apart(a, b)]
    text = (f"{target_label(v.target)}, {metric_label(v.metric)}: of {len(keys)} pairs of models, {len(apart)} are told "
            f"apart on the mean over all corrupted conditions" + (": " + ", ".join(f"{a} vs {b}" for a, b in apart)
                                                                  if apart else "") + " (see the pairs table).")
    return [Finding(f"pairs:{v.target}", text, {"target": v.target, "metric": v.metric, "told_apart": apart})]


def _normalised(v: MetricView, reference: str) -> Finding | None:
    rows = [(m, v.values.get((m, GROUP_ALL)), v.normalised.get((m, "mean:all"))) for m in v.ranked()]
    if any(r is None or n is None for _, r, n in rows):
        return None
    parts = [f"{m} {r.retention:.3f} (mCE {n.ce:.2f}, relative mCE {n.relative_ce:.2f})" if finite(n.ce) is not None
             else f"{m} {r.retention:.3f}" for m, r, n in rows]
    text = (f"{target_label(v.target)}, {metric_label(v.metric)}: retention (corrupted / clean, mean over the "
            f"corrupted conditions) and mean corruption error against {reference}: " + "; ".join(parts) + ".")
    return Finding(f"normalised:{v.target}", text, {"target": v.target, "metric": v.metric, "reference": reference,
                                                   "retention": {m: r.retention for m, r, _ in rows},
                                                   "mce": {m: n.ce for m, _, n in rows}})


def _effective(v: MetricView) -> Finding | None:
    recs = {m: v.effective[(m, GROUP_ALL)] for m in v.models if (m, GROUP_ALL) in v.effective}
    fit = v.fits.get(GROUP_ALL)
    if not recs or fit is None or finite(fit.slope) is None:
        return None
    hi = max(recs, key=lambda m: recs[m].effective_robustness)
    lo = min(recs, key=lambda m: recs[m].effective_robustness)
    text = (f"{target_label(v.target)}, {metric_label(v.metric)}: effective robustness (corrupted value above the "
            f"logit-space fit across these {fit.n} models; descriptive, relative to this set): highest {hi} "
            f"({_pts(recs[hi].effective_robustness)} points), lowest {lo} ({_pts(recs[lo].effective_robustness)}).")
    return Finding(f"effective:{v.target}", text, {"target": v.target, "metric": v.metric, "slope": fit.slope,
                                                  "intercept": fit.intercept,
                                                  "effective": {m: r.effective_robustness for m, r in recs.items()}})


def _additivity(v: MetricView) -> Finding | None:
    pairs = [(a, b, r) for (a, b, j), r in v.additivity_pairs.items() if j == "mean"]
    if not pairs:
        return None
    parts = []
    for a, b, r in pairs[:_MAX_PAIR_SENTENCES]:
        sure = ci_excludes_zero([finite(r.ci_low), finite(r.ci_high)])
        word = ((f"{a}'s joint corruptions compound more" if r.diff > 0 else f"{b}'s joint corruptions compound more")
                if sure else "not distinguishable")
        parts.append(f"{a} vs {b} δA − δB = {_pts(r.diff)} points ({_ci(r.ci_low, r.ci_high, v.level)}): {word}")
    more = f" (and {len(pairs) - _MAX_PAIR_SENTENCES} more pairs in compare.json)" if len(pairs) > _MAX_PAIR_SENTENCES else ""
    text = (f"{target_label(v.target)}, {metric_label(v.metric)}: super-additivity δ (Obs − Exp, mean over the joint "
            f"conditions) between models: " + "; ".join(parts) + more + ".")
    return Finding(f"additivity:{v.target}", text, {"target": v.target, "metric": v.metric,
                                                   "diffs": {f"{a} vs {b}": r.diff for a, b, r in pairs}})


def _variants(sources: Sequence) -> list[Finding]:
    by = {s.name: s.variants or "not recorded" for s in sources}
    if len(set(by.values())) < 2:
        return []
    text = ("The runs' query variants come from different sources (" + ", ".join(f"{n}: {v}" for n, v in by.items())
            + "): a difference between them mixes the variant source with any model difference.")
    return [Finding("variants", text, {"variants": by})]


def compare_findings(views: Sequence[MetricView], sources: Sequence, reference: str, correction: str) -> list[Finding]:
    """Findings of the primary (first) view in full, and the ranking of every other view."""
    out = _variants(sources)
    for i, v in enumerate(views):
        steps = [_ranking(v, correction)]
        if i == 0:
            out += [f for f in steps if f]
            out += _pairs(v, correction)
            out += [f for f in (_normalised(v, reference), _effective(v), _additivity(v)) if f]
        else:
            out += [f for f in steps if f]
    return out
