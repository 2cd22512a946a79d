"""The findings, in words: each is a sentence plus the numbers behind it (``findings.json``).

They follow the paper's claims (image vs text drops, severity growth, the worst and mildest
primitive at the top severity, cliff vs gradual operators, coarse-text drag, super-additivity,
MOOR vs fixed fusion, the text-path share), then relate drops to measured damage (the operators the
model loses most and least to per unit of SSIM loss and of embedding drift, :mod:`.damage`), and
state what this run shows, whichever way it goes.

A finding says only what the data supports: a comparison ("super-additive", "hurt more",
"better", "worse", "below") is made only when its confidence interval excludes 0; otherwise the
sentence says the effect is not distinguishable from none, and without a CI (no per-query values)
it gives the numbers without a verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..core.records import Report
from ..evaluate.drag import drag_applies
from ..evaluate.metrics import metric_sign
from ..store.rundir import TARGET_NAMES, RunData
from .aggregate import (
    image_vs_text,
    mode_drags,
    moor_gain,
    moor_mean_gain_ci,
    primitive_difference_ci,
    primitive_severity,
    severity_means,
    severity_steps,
    text_share_curve,
)
from .damage import DAMAGES, PER_DAMAGE, damage_analysis
from .fmt import ci_excludes_zero, ci_label, ci_verdict, ci_words, pct
from .tables import kind_means, metric_label

__all__ = ["Finding", "compute_findings"]


@dataclass
class Finding:
    id: str
    text: str
    values: dict = field(default_factory=dict)


def compute_findings(data: RunData, metric: str = "hit@1") -> list[Finding]:
    """Findings for the run; a claim whose inputs are missing is stated as not checkable."""
    steps: tuple[Callable[[RunData, str], list[Finding]], ...] = (
        _image_vs_text, _severity, _primitives, _cliff_gradual, _drag, _additivity, _moor, _text_share, _damage)
    return [f for step in steps for f in step(data, metric)]


def _primary(data: RunData) -> tuple[str, Report, str]:
    mode = data.primary_mode
    return mode, data.reports[mode], TARGET_NAMES.get(mode, mode)


def _image_vs_text(data: RunData, metric: str) -> list[Finding]:
    mode, rep, mname = _primary(data)
    lab = metric_label(metric)
    km = kind_means(rep, metric, mode)
    if km["d_image"] is not None and km["d_text"] is not None:
        ci = image_vs_text(rep, metric, data.per_query.get(mode))
        diff = km["d_image"] - km["d_text"]
        said = f"difference {pct(diff, True)} points{ci_words(ci, rep.meta.ci_level, ', ')}"
        verdict = ci_verdict(ci, f"{'image' if metric_sign(metric) * diff < 0 else 'text'} corruptions hurt more ({said})",
                             f"the two are not distinguishable ({said})",
                             f"difference {pct(diff, True)} points (no CI: needs per_query.csv)")
        text = (f"In {mname}, image corruptions change {lab} by {pct(km['d_image'], True)} points on average and text "
                f"corruptions by {pct(km['d_text'], True)} (clean {pct(km['clean'])}%): {verdict}.")
        return [Finding("image_vs_text", text, {"mode": mode, "mean_delta_image": km["d_image"],
                                                "mean_delta_text": km["d_text"], "clean": km["clean"],
                                                "difference": diff, "ci": ci})]
    if km["d_text"] is not None or km["d_image"] is not None:  # a run with one kind of corruption only
        kind, d = ("text", km["d_text"]) if km["d_text"] is not None else ("image", km["d_image"])
        return [Finding("image_vs_text",
            f"In {mname}, {kind} corruptions change {lab} by {pct(d, True)} points on average (clean "
            f"{pct(km['clean'])}%); this run has no {'image' if kind == 'text' else 'text'} conditions "
            f"(see the run's notes for why).",
            {"mode": mode, f"mean_delta_{kind}": d, "clean": km["clean"]})]
    return []


def _severity(data: RunData, metric: str) -> list[Finding]:
    mode, rep, _ = _primary(data)
    sm = severity_means(rep, metric)
    if not sm:
        return []
    steps = severity_steps(rep, metric, data.per_query.get(mode))
    step_words = "; ".join(f"s{st['from']}→s{st['to']} {pct(st['difference'], True)}{ci_words(st['ci'], rep.meta.ci_level, ', ')}"
                           for st in steps)
    verdicts = [ci_excludes_zero(st["ci"]) for st in steps]
    if not steps:
        grows, verdict = None, "."
    elif any(v is None for v in verdicts):
        grows, verdict = None, f" (steps: {step_words}; no CI, so no verdict on growth: needs per_query.csv)."
    elif all(v and metric_sign(metric) * st["difference"] < 0 for v, st in zip(verdicts, steps)):
        grows, verdict = True, f" — the drop grows with severity at every step ({step_words})."
    else:
        grows, verdict = False, f" — the drop is not shown to grow at every step ({step_words})."
    return [Finding("severity",
        f"Mean Δ{metric_label(metric)} over image operators by severity: "
        + ", ".join(f"s{s} {pct(v, True)}" for s, v in sm.items()) + verdict,
        {"mode": mode, "by_severity": {f"s{s}": v for s, v in sm.items()}, "monotone": grows,
         "steps": [{**st, "ci": list(st["ci"]) if st["ci"] else None} for st in steps]})]


def _primitives(data: RunData, metric: str) -> list[Finding]:
    mode, rep, _ = _primary(data)
    pq = data.per_query.get(mode)
    ps = primitive_severity(rep, metric, pq)
    if not ps:
        return []
    lab = metric_label(metric)
    top = max(s for d in ps.values() for s in d)
    at = {p: d[top]["mean"] for p, d in ps.items() if top in d}
    values = {"mode": mode, "severity": top, "by_primitive": at}
    sign = metric_sign(metric)  # worst = the largest drop: the lowest Δ, or the highest where higher is worse
    lowest, highest = min(at.values(), key=lambda x: sign * x), max(at.values(), key=lambda x: sign * x)
    if pct(lowest, True) == pct(highest, True):  # equal as written: no order to state
        return [Finding("primitive_top_severity",
            f"At s{top}, every primitive has the same mean Δ{lab} ({pct(lowest, True)} points).",
            {**values, "worst": None, "mildest": None})]
    worst = [p for p, v in at.items() if v == lowest]
    mild = [p for p, v in at.items() if v == highest]

    def names(ps_: list[str]) -> str:
        return " and ".join(p.upper() for p in ps_)

    ci = primitive_difference_ci(rep, metric, pq, top, worst[0], mild[0])
    level = rep.meta.ci_level
    diff = f"difference {pct(lowest - highest, True)} points{ci_words(ci, level, ', ')}"
    verdict = ci_verdict(ci, f": a {diff}", f"; the two are not distinguishable ({diff})",
                         " (no CI for their difference: needs per_query.csv)")
    low, high = ("lowest", "highest") if sign > 0 else ("highest (higher is worse)", "lowest")
    text = (f"At s{top}, {names(worst)} {'has' if len(worst) == 1 else 'have'} the {low} mean Δ{lab} "
            f"({pct(lowest, True)} points{ci_words(ps[worst[0]][top]['ci'], level, ', ')}) and {names(mild)} the {high} "
            f"({pct(highest, True)}{ci_words(ps[mild[0]][top]['ci'], level, ', ')}){verdict}.")
    return [Finding("primitive_top_severity", text,
                    {**values, "worst": worst[0], "mildest": mild[0], "difference_ci": list(ci) if ci else None})]


def _cliff_gradual(data: RunData, metric: str) -> list[Finding]:
    mode, rep, _ = _primary(data)
    groups: dict[str, list[str]] = {}
    for op, per in rep.severity_curves.items():
        curve = per.get(metric)
        if curve and curve.label:
            groups.setdefault(curve.label, []).append(op)
    if not groups:
        return []
    return [Finding("cliff_gradual",
        "Severity response: " + "; ".join(f"{k}: {', '.join(sorted(v))}" for k, v in sorted(groups.items())) + ".",
        {"mode": mode, "groups": groups})]


def _drag(data: RunData, metric: str) -> list[Finding]:
    if not drag_applies(metric):  # said once, where the drag figure would be (the report's "Across modes")
        return []
    drags = mode_drags(data, metric)
    lab = metric_label(metric)
    if "IT2IT" not in drags:
        return [Finding("drag", "Coarse-text drag not available: it needs the IT→IT report (with clean I→I "
                                "path scores) or both the IT2IT and I2I reports.", {})]
    d, level = drags["IT2IT"], data.reports["IT2IT"].meta.ci_level  # its CI is at the IT2IT report's level
    sure = ci_excludes_zero(d["ci"])
    if sure:
        rel = (f"is {'below' if d['value'] < 0 else 'above'} image-only I→I by {pct(abs(d['value']))} "
               f"points (drag {pct(d['value'], True)}{ci_words(d['ci'], level, ', ')})")
    elif sure is False or d["value"] == 0:
        rel = f"is not distinguishable from image-only I→I's (drag {pct(d['value'], True)}{ci_words(d['ci'], level, ', ')})"
    else:
        rel = f"minus image-only I→I's is {pct(d['value'], True)} points (no CI)"
    return [Finding("drag", f"Coarse-text drag: clean IT→IT {lab} {rel}.", {"value": d["value"], "ci": d["ci"]})]


def _additivity(data: RunData, metric: str) -> list[Finding]:
    mode, rep, mname = _primary(data)
    summ = (rep.additivity_summary.mean or {}).get(metric)
    if summ is None or summ.delta is None:
        return [Finding("additivity", f"No additivity in the {mname} report (no joint condition with both parts).",
                        {})]
    sign = metric_sign(metric)  # δ's drops are clean − corrupted: where higher is worse a drop is negative
    kind = ci_verdict(summ.ci, "super-additive" if sign * summ.delta > 0 else "sub-additive",
                      "not distinguishable from additive", "of unknown additivity (no CI)")
    entries = [e[metric] for e in rep.additivity.values() if metric in e]
    n_sup = sum(1 for e in entries if None not in e.ci and min(sign * e.ci[0], sign * e.ci[1]) > 0)
    n_sub = sum(1 for e in entries if None not in e.ci and max(sign * e.ci[0], sign * e.ci[1]) < 0)
    return [Finding("additivity",
        f"Joint corruptions in {mname} are {kind} on average: mean δ = {pct(summ.delta, True)} points{ci_words(summ.ci, rep.meta.ci_level, ' (', ')')} "
        f"(Exp drop {pct(summ.exp, True)}, Obs drop {pct(summ.obs, True)}); of {len(entries)} joint conditions, {n_sup} are "
        f"super-additive and {n_sub} sub-additive (CI excluding 0), the rest not distinguishable from additive.",
        {"mode": mode, "delta": summ.delta, "ci": list(summ.ci), "n_super": n_sup, "n_sub": n_sub})]


def _moor(data: RunData, metric: str) -> list[Finding]:
    gain = moor_gain(data, metric)
    if not gain:
        if "MOOR" in data.reports:
            return [Finding("moor", "MOOR was evaluated but IT→IT was not: no MOOR vs fixed-fusion comparison.", {})]
        return []
    lab, level = metric_label(metric), data.reports["MOOR"].meta.ci_level  # its CIs are at MOOR's level
    g = np.array([v["value"] for v in gain.values()])
    ci = moor_mean_gain_ci(data, metric)
    sure = [ci_excludes_zero(v["ci"]) for v in gain.values()]
    sign = metric_sign(metric)  # a gain of a higher-is-worse metric is a fall
    verdict = ("better" if ci_excludes_zero(ci) and sign * g.mean() > 0 else "worse" if ci_excludes_zero(ci)
               else "not distinguishable from it" if ci is not None else "(no CI: needs per_query.csv)")
    if any(s is not None for s in sure):
        better = sum(1 for s, v in zip(sure, g) if s and sign * v > 0)
        worse = sum(1 for s, v in zip(sure, g) if s and sign * v < 0)
        counts = f"better in {better}, worse in {worse}, not distinguishable in {len(g) - better - worse} by {ci_label(level)}s"
    else:
        better, worse = int((g > 0).sum()), int((g < 0).sum())
        counts = f"higher in {better}, lower in {worse} (point estimates; no CIs without per_query.csv)"
    txt = (f"MOOR vs fixed fusion IT→IT: {verdict} on average, mean {lab} gain {pct(float(g.mean()), True)} points"
           f"{ci_words(ci, level, ' (', ')')} over {len(g)} conditions ({counts}).")
    vals = {"mean_gain": float(g.mean()), "ci": ci, "better": better, "worse": worse}
    moor = data.reports["MOOR"]
    for name, frep in sorted(data.fusion.items()):
        diffs = [moor.value(c, metric) - frep.value(c, metric) for c in moor.conditions  # type: ignore[operator]
                 if c in frep.conditions and frep.value(c, metric) is not None and moor.value(c, metric) is not None]
        if diffs:
            vals[f"vs_{name}"] = float(np.mean(diffs))
            txt += f" Against {name}: {pct(vals[f'vs_{name}'], True)}."
    vals["moor_clean"] = kind_means(moor, metric)["clean"]
    return [Finding("moor", txt, vals)]


def _text_share(data: RunData, metric: str) -> list[Finding]:
    if not data.text_share:
        return []
    tc = text_share_curve(data.text_share)
    sev = tc["by_severity"]
    if tc["clean"] is None or not sev:
        return []
    top = max(sev)
    return [Finding("text_share",
        f"MOOR's text-path weight share is {tc['clean']:.3f} on clean queries and {sev[top]:.3f} on average at "
        f"image severity s{top} (paper: about 0.065 on average).",
        {"clean": tc["clean"], "by_severity": {f"s{s}": v for s, v in sev.items()}})]


def _damage_sentence(res, damage: str, lab: str) -> str:
    ext = res.extremes[damage]
    slopes = res.slopes[damage]
    most, least = slopes[ext["most"]], slopes[ext["least"]]
    per = f"{PER_DAMAGE:g} {'SSIM loss' if damage == 'ssim' else 'embedding drift'}"
    diff = ext["difference"] * PER_DAMAGE
    ci = None if ext["ci"] is None else (ext["ci"][0] * PER_DAMAGE, ext["ci"][1] * PER_DAMAGE)

    def one(s) -> str:
        sci = None if s.ci is None else (s.ci[0] * PER_DAMAGE, s.ci[1] * PER_DAMAGE)
        tied = sorted(o for o, t in slopes.items()
                      if o != s.operator and t.in_range and abs(t.slope - s.slope) <= 1e-12)
        also = f"; tied with {', '.join(tied)}" if tied else ""
        return f"{s.operator} ({pct(s.slope * PER_DAMAGE, True)} points{ci_words(sci, res.level, ', ')}{also})"

    verdict = ci_verdict(ci, f"the model is more sensitive to {most.operator} than to {least.operator}",
                         "the two are not distinguishable", "no verdict (no CI)")
    falls = "falls" if metric_sign(res.metric) > 0 else "rises"
    return (f"per {per}, Δ{lab} {falls} most steeply under {one(most)} and least under {one(least)}: {verdict} "
            f"(difference {pct(diff, True)} points{ci_words(ci, res.level, ', ')})")


def _damage(data: RunData, metric: str) -> list[Finding]:
    res = damage_analysis(data, metric)
    if res is None:
        return [Finding("damage", "Drops are not related to measured damage: the per-query values hold no measured "
                                  "SSIM or embedding drift (the run was made without measuring).", {})]
    lab, mname = metric_label(metric), TARGET_NAMES.get(res.mode, res.mode)
    parts = [_damage_sentence(res, d, lab) for d in DAMAGES if d in res.extremes]
    if not parts:
        return [Finding("damage", f"In {mname}, fewer than two operators have measured damage reaching "
                                  f"{PER_DAMAGE:g}: no comparison at equal damage (slopes are not read past the "
                                  "data).", {"mode": res.mode})]
    values = {"mode": res.mode, "per": PER_DAMAGE,
              **{d: {**res.extremes[d], "slopes": {op: {"slope": s.slope, "ci": s.ci, "n": s.n}
                                                   for op, s in res.slopes[d].items()}}
                 for d in DAMAGES if d in res.extremes}}
    return [Finding("damage", f"At equal measured damage in {mname}: " + "; ".join(parts) + ".", values)]
