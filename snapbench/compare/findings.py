"""The comparison's findings in plain words (``findings.json`` and the report's first section).

Every sentence that calls one model more robust than another rests on the verdict rule of
:func:`snapbench.compare.view.told_apart`: its adjusted p-value is below 1 − ci **and** its CI
excludes 0; otherwise it says the two are not told apart and gives the numbers.  Statements without
a test (super-additivity differences, effective robustness) use the CI alone (the run report's rule,
:func:`snapbench.evaluate.fmt.ci_excludes_zero`) or are called descriptive.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..evaluate.fmt import ci_excludes_zero, ci_label, p_text, points
from ..report.findings import Finding
from ..report.tables import metric_label
from .groups import GROUP_ALL
from .tables import pairs_adjustment, target_label
from .view import MetricView, finite

__all__ = ["compare_findings"]

_MAX_PAIR_SENTENCES = 10


def _pts(x: float | None, signed: bool = True) -> str:
    s = points(finite(x), signed=signed)
    return "–" if s is None else s


def _ci(lo: float | None, hi: float | None, level: float) -> str:
    if finite(lo) is None or finite(hi) is None:
        return "no CI"
    return f"{ci_label(level)} {_pts(lo)} to {_pts(hi)}"


def _extremes(rec: dict, order: list[str], level: float) -> str:
    """"X drops least (...) and Y most (...)", with models of equal mean Δ named together: equal
    values read as equal (a run compared with itself)."""
    def said(ms: list[str]) -> str:
        r = rec[ms[0]]
        return f"{_pts(r.delta)} points, {_ci(r.ci_low, r.ci_high, level)}"

    least = [m for m in order if rec[m].delta == rec[order[0]].delta]
    most = [m for m in order if rec[m].delta == rec[order[-1]].delta]
    if len(least) == len(order):
        if _same_ci(rec, order):
            return f"{_join(order)} drop the same ({said(order)})"
        cis = ", ".join(f"{m}: {_ci(rec[m].ci_low, rec[m].ci_high, level)}" for m in order)
        return f"{_join(order)} drop the same ({_pts(rec[order[0]].delta)} points; {cis})"
    verb = "drops" if len(least) == 1 else "drop"
    text = f"{_join(least)} {verb} least ({said(least)}) and {_join(most)} most ({said(most)})"
    if _pts(rec[least[0]].delta) == _pts(rec[most[0]].delta):
        text += ", apart by less than the precision shown"
    return text


def _clean_context(v: MetricView, rec: dict, order: list[str]) -> str:
    """A drop is bounded by the clean value: when the model that drops least starts from a lower clean
    value than the one that drops most, by more than their drops differ, say so -- a model that gets
    fewer queries right to begin with has less to lose, and its smaller drop is no sign of
    robustness by itself ("" otherwise, and when the two drop the same as written)."""
    def clean(m: str) -> float | None:
        return finite(getattr(v.values.get((m, "clean")), "value", None))

    least, most = order[0], order[-1]
    ca, cb = clean(least), clean(most)
    da, db = finite(rec[least].delta), finite(rec[most].delta)
    if None in (ca, cb, da, db) or _pts(da) == _pts(db) or _pts(ca, False) == _pts(cb, False):
        return ""
    if not (ca < cb and cb - ca > abs(da - db)):
        return ""
    # the models named together as dropping most, when they start from the same clean value too
    alike = [m for m in order if rec[m].delta == rec[most].delta and _pts(clean(m), False) == _pts(cb, False)]
    lab = metric_label(v.metric)
    return (f" {least} starts from a lower clean {lab} than {_join(alike)} ({_pts(ca, False)}% against "
            f"{_pts(cb, False)}%, "
            f"a gap larger than the one between their drops): it has less to lose, so dropping less does not by "
            "itself make it more robust (retention and effective robustness take the clean value into account).")


def _join(ms: list[str]) -> str:
    return ms[0] if len(ms) == 1 else ", ".join(ms[:-1]) + " and " + ms[-1]


def _same_ci(rec: dict, ms: list[str]) -> bool:
    return len({(rec[m].ci_low, rec[m].ci_high) for m in ms}) == 1


def _ranking(v: MetricView, correction: str) -> Finding | None:
    if not v.ranking:
        return None
    lab, order = metric_label(v.metric), v.ranked()
    rec = {m: v.values[(m, GROUP_ALL)] for m in order if (m, GROUP_ALL) in v.values}
    if len(rec) < len(order):
        return None
    tiers: dict[int, list[str]] = {}
    for m in order:
        tiers.setdefault(v.ranking[m].group, []).append(m)
    if len(tiers) == 1:
        ci = ci_label(v.level)
        verdict = (f"the two models are not told apart (p and {ci} of their difference)" if len(order) == 2 else
                   f"none of the other {len(order) - 1} models is told apart from the best, {order[0]} "
                   f"({correction}-adjusted p and {ci} of each pair's difference)")
    else:
        verdict = "tiers (a model of a tier is not told apart from the tier's first): " + "; ".join(
            f"{t}: {', '.join(ms)}" for t, ms in sorted(tiers.items()))
    text = (f"In {target_label(v.target)}, by mean Δ{lab} over {len(v.conditions)} corrupted conditions, "
            f"{_extremes(rec, order, v.level)}; {verdict}.{_clean_context(v, rec, order)}")
    return Finding(f"ranking:{v.target}", text, {
        "target": v.target, "metric": v.metric, "order": order, "tiers": {str(k): m for k, m in tiers.items()},
        "mean_delta": {m: r.delta for m, r in rec.items()}})


def _pair_sentence(v: MetricView, a: str, b: str, correction: str) -> tuple[str, dict]:
    r = v.pairs[(a, b, GROUP_ALL)]
    apart = v.overall_apart(a, b)
    p_all = v.overall_p.get((a, b))
    nums = (f"{_pts(r.diff)} points, {_ci(r.ci_low, r.ci_high, v.level)}, p = {p_text(finite(p_all))} "
            f"{pairs_adjustment(len(v.overall_p), correction)}, effect size {finite(r.effect_size) or 0:.2f}")
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


def _ratio_text(x: float | None) -> str:
    return "undefined" if finite(x) is None else f"{x:.2f}"


def _undefined_mce(v: MetricView, reference: str, models: list[str]) -> str:
    """Why the mean corruption error of ``models`` is undefined: the operators whose CE is (the
    reference makes no error under them, or the model's value is undefined there)."""
    def ops(m: str) -> list[str]:
        return [op for (mm, op), n in v.normalised.items()
                if mm == m and not op.startswith("mean:") and finite(n.ce) is None]

    ref_ops = set(ops(reference))
    own = {m: [op for op in ops(m) if op not in ref_ops] for m in models}
    parts = []
    if ref_ops:
        named = sorted(ref_ops)
        parts.append(f"{reference}, the reference, makes no error under {len(named)} operator(s) "
                     f"({', '.join(named[:3])}{', …' if len(named) > 3 else ''}: {metric_label(v.metric)} 100% at "
                     "every severity), and a corruption error divides by the reference's errors")
    for m, o in own.items():
        if o:
            parts.append(f"{m}'s value is undefined under {', '.join(o[:3])}{', …' if len(o) > 3 else ''}")
    why = "; ".join(parts) or "see the per-operator records"
    return f"mean corruption error undefined for {_join(models)}: {why} (the per-operator CEs are in compare.json)"


def _undefined_relative_mce(v: MetricView, reference: str, models: list[str]) -> str:
    """Why the mean relative corruption error of ``models`` is undefined: the operators under which
    the reference loses nothing (a relative CE divides by the reference's drop), or where the
    model's own drop is undefined."""
    def ops(m: str) -> list[str]:
        return [op for (mm, op), n in v.normalised.items()
                if mm == m and not op.startswith("mean:") and finite(n.relative_ce) is None]

    ref_ops = sorted(ops(reference))
    parts = []
    if ref_ops:
        parts.append(f"{reference}, the reference, drops 0 under {len(ref_ops)} operator(s) "
                     f"({', '.join(ref_ops[:3])}{', …' if len(ref_ops) > 3 else ''}: {metric_label(v.metric)} "
                     "summed over the severities equals its clean value), and a relative corruption error divides "
                     "by the reference's drop")
    for m in models:
        own = [op for op in ops(m) if op not in ref_ops]
        if own:
            parts.append(f"{m}'s drop is undefined under {', '.join(own[:3])}{', …' if len(own) > 3 else ''}")
    why = "; ".join(parts) or "see the per-operator records"
    return f"relative mCE undefined for {_join(models)}: {why} (the per-operator values are in compare.json)"


def _normalised(v: MetricView, reference: str) -> Finding | None:
    rows = [(m, v.values.get((m, GROUP_ALL)), v.normalised.get((m, "mean:all"))) for m in v.ranked()]
    if any(r is None or n is None for _, r, n in rows):
        return None
    parts = [f"{m} {r.retention:.3f} (mCE {n.ce:.2f}, relative mCE {_ratio_text(n.relative_ce)})"
             if finite(n.ce) is not None else f"{m} {r.retention:.3f} (mCE undefined)" for m, r, n in rows]
    undefined = [m for m, _, n in rows if finite(n.ce) is None]
    no_relative = [m for m, _, n in rows if finite(n.ce) is not None and finite(n.relative_ce) is None]
    text = (f"{target_label(v.target)}, {metric_label(v.metric)}: retention (corrupted / clean, mean over the "
            f"corrupted conditions) and mean corruption error against {reference}: " + "; ".join(parts)
            + (f"; {_undefined_mce(v, reference, undefined)}" if undefined else "")
            + (f"; {_undefined_relative_mce(v, reference, no_relative)}" if no_relative else "") + ".")
    return Finding(f"normalised:{v.target}", text, {"target": v.target, "metric": v.metric, "reference": reference,
                                                   "retention": {m: r.retention for m, r, _ in rows},
                                                   "mce": {m: n.ce for m, _, n in rows}})


def _effective(v: MetricView) -> Finding | None:
    recs = {m: v.effective[(m, GROUP_ALL)] for m in v.models if (m, GROUP_ALL) in v.effective}
    fit = v.fits.get(GROUP_ALL)
    if not recs or fit is None or finite(fit.slope) is None:
        return None
    # values equal as written read as equal: float noise (0.0 against -1e-16) ranks no model
    written = {m: _pts(r.effective_robustness) for m, r in recs.items()}
    hi = written[max(recs, key=lambda m: recs[m].effective_robustness)]
    lo = written[min(recs, key=lambda m: recs[m].effective_robustness)]
    if hi == lo:
        said = (f"the same for all {len(recs)} models at the precision shown ({hi} points): none holds up better "
                "than the others' trend predicts")
    else:
        said = (f"highest {_join([m for m in recs if written[m] == hi])} ({hi} points), "
                f"lowest {_join([m for m in recs if written[m] == lo])} ({lo})")
    text = (f"{target_label(v.target)}, {metric_label(v.metric)}: effective robustness (corrupted value above the "
            f"logit-space fit across these {fit.n} models; descriptive, relative to this set): {said}.")
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
    """A warning when the recorded variant sources differ.  A source that is not recorded (an evaluate
    report: score files say nothing of how their queries were corrupted) is unknown, not different;
    it is named only beside released variants, as snapbench's own score files (corrupt, encode, moor)
    hold generated ones."""
    by = {s.name: s.variants or "not recorded" for s in sources}
    known = {v for v in by.values() if v != "not recorded"}
    unknown = [n for n, v in by.items() if v == "not recorded"]
    if len(known) >= 2:
        text = ("The runs' query variants come from different sources (" + ", ".join(f"{n}: {v}" for n, v in by.items())
                + "): a difference between them mixes the variant source with any model difference.")
    elif unknown and known == {"released"}:
        text = (f"{', '.join(n for n, v in by.items() if v == 'released')} evaluated the released query variants; "
                f"the variant source of {', '.join(unknown)} is not recorded (an evaluate report): if "
                f"{'its variants were' if len(unknown) == 1 else 'their variants were'} generated, a difference "
                "mixes the variant source with any model difference.")
    else:
        return []
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
