"""The findings, in words: each is a sentence plus the numbers behind it (``findings.json``).

They follow the paper's claims (image vs text drops, severity growth, the worst and mildest
primitive at the top severity, cliff vs gradual operators, coarse-text drag, super-additivity,
MOOR vs fixed fusion, the text-path share) and state what this run shows, whichever way it goes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np

from .aggregate import (
    mode_drags,
    moor_gain,
    primitive_severity,
    severity_means,
    text_share_curve,
)
from .rundir import MODE_NAMES, RunData
from .tables import kind_means, metric_label

__all__ = ["Finding", "compute_findings"]


@dataclass
class Finding:
    id: str
    text: str
    values: dict = field(default_factory=dict)


def _pts(x: float | None, signed: bool = True) -> str:
    if x is None:
        return "–"
    v = round(100 * x, 1) + 0.0  # + 0.0 turns a rounded -0.0 into 0.0
    return f"{v:+.1f}" if signed else f"{v:.1f}"


def _ci_words(ci) -> str:
    if not ci or ci[0] is None or ci[1] is None:
        return ""
    return f"95% CI {_pts(ci[0])} to {_pts(ci[1])}"


def _ci(ci) -> str:
    """`` (95% CI a to b)`` or nothing."""
    w = _ci_words(ci)
    return f" ({w})" if w else ""


def _ci_tail(ci) -> str:
    """``, 95% CI a to b`` or nothing (inside an existing parenthesis)."""
    w = _ci_words(ci)
    return f", {w}" if w else ""


def compute_findings(data: RunData, metric: str = "hit@1") -> list[Finding]:
    """Findings for the run; a claim whose inputs are missing is stated as not checkable."""
    lab = metric_label(metric)
    mode = data.primary_mode
    rep = data.reports[mode]
    mname = MODE_NAMES.get(mode, mode)
    out: list[Finding] = []

    km = kind_means(rep, metric)
    if km["d_image"] is not None and km["d_text"] is not None:
        worse = "image" if km["d_image"] < km["d_text"] else "text"
        out.append(Finding("image_vs_text",
            f"In {mname}, image corruptions change {lab} by {_pts(km['d_image'])} points on average and text "
            f"corruptions by {_pts(km['d_text'])} (clean {_pts(km['clean'], False)}%): {worse} corruptions hurt more.",
            {"mode": mode, "mean_delta_image": km["d_image"], "mean_delta_text": km["d_text"], "clean": km["clean"]}))

    elif km["d_text"] is not None or km["d_image"] is not None:  # a run with one kind of corruption only
        kind, d = ("text", km["d_text"]) if km["d_text"] is not None else ("image", km["d_image"])
        out.append(Finding("image_vs_text",
            f"In {mname}, {kind} corruptions change {lab} by {_pts(d)} points on average (clean "
            f"{_pts(km['clean'], False)}%); this run has no {'image' if kind == 'text' else 'text'} conditions "
            f"(see the run's notes for why).",
            {"mode": mode, f"mean_delta_{kind}": d, "clean": km["clean"]}))

    sm = severity_means(rep, metric)
    if sm:
        vals = list(sm.values())
        grows = all(b < a for a, b in pairwise(vals))
        out.append(Finding("severity",
            f"Mean Δ{lab} over image operators by severity: "
            + ", ".join(f"s{s} {_pts(v)}" for s, v in sm.items())
            + (" — the drop grows with severity." if grows else " — the drop does not grow strictly with severity."),
            {"mode": mode, "by_severity": {f"s{s}": v for s, v in sm.items()}, "monotone": grows}))

    ps = primitive_severity(rep, metric, data.per_query.get(mode))
    if ps:
        top = max(s for d in ps.values() for s in d)
        at = {p: d[top]["mean"] for p, d in ps.items() if top in d}
        worst, mild = min(at, key=at.get), max(at, key=at.get)
        out.append(Finding("primitive_top_severity",
            f"At s{top}, {worst.upper()} is the most damaging primitive (mean Δ{lab} {_pts(at[worst])} points"
            f"{_ci_tail(ps[worst][top]['ci'])}) and {mild.upper()} the mildest "
            f"({_pts(at[mild])}{_ci_tail(ps[mild][top]['ci'])}).",
            {"mode": mode, "severity": top, "by_primitive": at, "worst": worst, "mildest": mild}))

    curves = rep.get("severity_curves") or {}
    groups: dict[str, list[str]] = {}
    for op, v in curves.items():
        lab_ = (v.get(metric) or {}).get("label")
        if lab_:
            groups.setdefault(lab_, []).append(op)
    if groups:
        out.append(Finding("cliff_gradual",
            "Severity response: " + "; ".join(f"{k}: {', '.join(sorted(v))}" for k, v in sorted(groups.items())) + ".",
            {"mode": mode, "groups": groups}))

    drags = mode_drags(data, metric)
    if "IT2IT" in drags:
        d = drags["IT2IT"]
        if d["value"] == 0:
            rel = f"equals image-only I→I's (drag 0.0 points{_ci_tail(d['ci'])})"
        else:
            rel = (f"is {'below' if d['value'] < 0 else 'above'} image-only I→I by {_pts(abs(d['value']), False)} "
                   f"points (drag {_pts(d['value'])}{_ci(d['ci'])})")
        out.append(Finding("drag", f"Coarse-text drag: clean IT→IT {lab} {rel}.",
            {"value": d["value"], "ci": d["ci"]}))
    else:
        out.append(Finding("drag", "Coarse-text drag not available: it needs the IT→IT report (with clean I→I "
                                   "path scores) or both the IT2IT and I2I reports.", {}))

    summ = ((rep.get("additivity_summary") or {}).get("mean") or {}).get(metric)
    if summ:
        n_sup = sum(1 for e in rep["additivity"].values() if (e.get(metric) or {}).get("delta", 0) and e[metric]["delta"] > 0)
        kind = "super-additive" if summ["delta"] > 0 else ("sub-additive" if summ["delta"] < 0 else "additive")
        ci = summ.get("ci") or [None, None]
        if ci[0] is not None and ci[0] <= 0 <= ci[1] and summ["delta"] != 0:
            kind += " (but the CI includes 0)"
        out.append(Finding("additivity",
            f"Joint corruptions in {mname} are {kind} on average: mean δ = {_pts(summ['delta'])} points{_ci(summ.get('ci'))} "
            f"(Exp {_pts(summ['exp'])}, Obs {_pts(summ['obs'])}); {n_sup} of {len(rep['additivity'])} joint conditions have δ > 0.",
            {"mode": mode, "delta": summ["delta"], "ci": summ.get("ci"), "n_super": n_sup}))
    else:
        out.append(Finding("additivity", f"No additivity in the {mname} report (no joint condition with both parts).", {}))

    gain = moor_gain(data, metric)
    if gain:
        g = np.array([v["value"] for v in gain.values()])
        better, worse = int((g > 0).sum()), int((g < 0).sum())
        txt = (f"MOOR vs fixed fusion IT→IT: mean {lab} gain {_pts(float(g.mean()))} points over {len(g)} conditions "
               f"(better in {better}, worse in {worse}).")
        vals = {"mean_gain": float(g.mean()), "better": better, "worse": worse}
        moor_mean = kind_means(data.reports["MOOR"], metric)
        for name, frep in sorted(data.fusion.items()):
            common = [c for c in data.reports["MOOR"]["conditions"] if c in frep["conditions"]]
            if not common:
                continue
            diff = float(np.mean([data.reports["MOOR"]["conditions"][c][metric] - frep["conditions"][c][metric]
                                  for c in common if frep["conditions"][c].get(metric) is not None]))
            vals[f"vs_{name}"] = diff
            txt += f" Against {name}: {_pts(diff)}."
        vals["moor_clean"] = moor_mean["clean"]
        out.append(Finding("moor", txt, vals))
    elif "MOOR" in data.reports:
        out.append(Finding("moor", "MOOR was evaluated but IT→IT was not: no MOOR vs fixed-fusion comparison.", {}))

    if data.text_share:
        tc = text_share_curve(data.text_share)
        sev = tc["by_severity"]
        if tc["clean"] is not None and sev:
            top = max(sev)
            out.append(Finding("text_share",
                f"MOOR's text-path weight share is {tc['clean']:.3f} on clean queries and {sev[top]:.3f} on average at "
                f"image severity s{top} (paper: about 0.065 on average).",
                {"clean": tc["clean"], "by_severity": {f"s{s}": v for s, v in sev.items()}}))
    return out
