"""The HTML page of ``snapbench stress`` (``DIR/report.html``), from its ``stress.json``.

Sections: findings in words (a drop or a gain is called one only when its CI excludes 0, as in the
run report's findings; otherwise "not distinguishable from none"; without a CI the numbers are given
without a verdict), the field x source-type table of micro deltas (which query types depend on which
field: PhotoBench's modality gap, measured), per-album results (micro and macro), the curves over
field availability (one row per single-operator condition, in the order of availability), and the
caption-swap verdict.
"""

from __future__ import annotations

import html
import math
from typing import Any

from ..evaluate.fmt import ci_excludes_zero, ci_label, points
from ..htmlpage import HtmlSection, render_html, ul

__all__ = ["primary_metric", "render_stress_report", "stress_findings"]

_SOURCES = ("V", "M", "F", "VM", "VF", "MF", "VMF")


def primary_metric(metrics: list[str]) -> str:
    """The metric the page speaks of: recall@10 (PhotoBench's) when evaluated, else the first recall@k."""
    for m in ("recall@10", *[m for m in metrics if m.startswith("recall@")], *metrics):
        if m in metrics:
            return m
    return metrics[0]


def _pts(x: Any) -> str:
    s = points(x, signed=True)
    return "–" if s is None else s


def _ci_text(ci: Any, level: float) -> str:
    if not ci or ci[0] is None or ci[1] is None or not all(math.isfinite(v) for v in ci):
        return ""
    return f"{ci_label(level)} {_pts(ci[0])} to {_pts(ci[1])}"


def _verdict(entry: dict, level: float, metric: str, what: str) -> str:
    d, ci = entry.get("delta"), entry.get("ci")
    ex = ci_excludes_zero(ci)
    ci_w = _ci_text(ci, level)
    unit = f"{metric} ({entry.get('resampled', 'query')} resampling)"
    if d is None or not math.isfinite(d):
        return f"{what}: {metric} is undefined (no query with ground truth)."
    if ex is None:
        return f"{what}: {metric} changed by {_pts(d)} points (no CI)."
    if ex:
        word = "lowered" if d < 0 else "raised"
        return f"{what} {word} {unit} by {_pts(abs(d))[1:]} points ({ci_w})."
    return f"{what}: the change in {unit}, {_pts(d)} points ({ci_w}), is not distinguishable from none."


def stress_findings(summary: dict) -> list[tuple[str, str]]:
    """``(id, sentence)`` per condition on all queries, then the caption-swap verdict."""
    metric = primary_metric(summary["metrics"])
    level = summary["ci_level"]
    out = []
    for cid, body in summary["conditions"].items():
        e = body["groups"]["all"][metric]
        out.append((f"finding-{cid}", _verdict(e, level, metric, f"Stress {cid}")))
    swap = swap_verdict(summary)
    if swap:
        out.append(("finding-caption-swap", swap))
    return out


def swap_verdict(summary: dict) -> str | None:
    """The caption-swap probe in plain words, or ``None`` when it was not run."""
    metric = primary_metric(summary["metrics"])
    for cid, body in summary["conditions"].items():
        if [n for n, _ in body["operators"]] != ["caption_swap"]:
            continue
        e = body["groups"]["all"][metric]
        ex = ci_excludes_zero(e.get("ci"))
        ci_w = _ci_text(e.get("ci"), summary["ci_level"])
        head = (f"Caption swap (each caption replaced by one from another album, matched by month, length and "
                f"faces): {metric} {_pts(e['delta'])} points" + (f" ({ci_w})" if ci_w else "") + ". ")
        if ex and e["delta"] < 0:
            return head + ("Retrieval depends on what each caption says about its own photo: the captions carry "
                           "album-specific content, not only generic statistics a donor shares.")
        if ex and e["delta"] > 0:
            return head + ("Foreign captions scored better than the photos' own: the own captions mislead this "
                           "encoder; look at their quality.")
        if ex is None:
            return head + "No CI: no verdict."
        return head + ("No measurable effect: retrieval does not depend on the captions' content (a shortcut via "
                       "time, place or people, or captions that carry little), so caption quality is not what "
                       "this benchmark measures.")
    return None


def _table(head: list[str], rows: list[list[str]], caption: str) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" if i else f"<th>{html.escape(c)}</th>"
                                    for i, c in enumerate(r)) + "</tr>" for r in rows)
    return (f'<table class="paper"><caption>{html.escape(caption)}</caption><thead><tr>{th}</tr></thead>'
            f"<tbody>{body}</tbody></table>")


def _cell(e: dict | None, key: str = "delta", ci_key: str = "ci") -> str:
    if not e:
        return "–"
    d = e.get(key)
    star = "*" if ci_excludes_zero(e.get(ci_key)) else ""
    return f"{_pts(d)}{star}"


def render_stress_report(summary: dict) -> str:
    """The whole page (see the module docstring)."""
    metric = primary_metric(summary["metrics"])
    level = summary["ci_level"]
    conds = summary["conditions"]
    sources = [s for s in _SOURCES if any(f"source={s}" in b["groups"] for b in conds.values())]
    info = [("dataset", summary["dataset"]), ("encoder", summary["encoder"]),
            ("albums", f"{summary['n_albums']} ({', '.join(summary['albums'])})"),
            ("queries", f"{summary['n_queries']} ({summary['n_excluded_zero_gt']} zero-GT, excluded from ranking metrics)"),
            ("records", str(summary["n_records"])), ("mode", f"{summary['mode']}: {summary['modes_note']}"),
            ("intervals", f"{ci_label(level)}, {summary['resamples']} resamples of {summary['resample_by']}s requested"),
            ("metric", f"{metric}; micro = over queries, macro = mean over albums")]
    sections = [HtmlSection("findings", "Findings", [ul(stress_findings(summary), "findings")],
                            missing=[n for n in summary["notes"] if "too few" in n])]
    rows = []
    for cid, b in conds.items():
        g = b["groups"]
        rows.append([cid, ", ".join(b["fields"]), _cell(g["all"][metric]), _cell(g["all"][metric], "delta_macro", "ci_macro"),
                     *[_cell(g.get(f"source={s}", {}).get(metric)) for s in sources]])
    sections.append(HtmlSection("fields", "Which query types depend on which field", [
        _table(["condition", "fields", "all (micro)", "all (macro)", *[f"source {s}" for s in sources]], rows,
               f"Δ {metric} (points, stressed − clean) per PhotoBench source type (V visual, M metadata, F faces); "
               f"* = {ci_label(level)} excludes 0"),
        '<p class="note">' + html.escape(summary["modes_note"]) + "</p>"]))
    arows = []
    for cid, b in conds.items():
        for gname, g in b["groups"].items():
            if gname.startswith("album="):
                e = g[metric]
                arows.append([cid, gname[6:], points(e["clean"]) or "–", points(e["stressed"]) or "–", _cell(e)])
    sections.append(HtmlSection("albums", "Per album", [_table(["condition", "album", "clean", "stressed", "Δ"], arows,
                                                                f"{metric} per album (micro within the album)")]))
    crows = []
    for cid, b in conds.items():
        if len(b["operators"]) == 1 and b["operators"][0][0] not in ("caption_swap", "drop"):
            for f in b["fields"]:
                crows.append([f, cid, f"{100 * summary['field_availability']['clean'][f]:.0f}%",
                              f"{100 * b['field_availability'][f]:.0f}%",
                              points(b["groups"]["all"][metric]["stressed"]) or "–", _cell(b["groups"]["all"][metric])])
    crows.sort(key=lambda r: (r[0], -float(r[3].rstrip("%"))))
    sections.append(HtmlSection("curves", "Curves over field availability", [
        _table(["field", "condition", "available (clean)", "available (stressed)", metric, "Δ"], crows,
               f"{metric} as a field becomes sparser (share of records holding it)")]
        if crows else [], missing=[] if crows else ["no single-operator rate condition was run (e.g. ocr_dropout=0.25)"]))
    swap = swap_verdict(summary)
    sections.append(HtmlSection("swap", "Caption-swap probe", [f"<p>{html.escape(swap)}</p>"] if swap else [],
                                missing=[] if swap else ["caption_swap was not run (add it to --stress)"]))
    sections.append(HtmlSection("notes", "Notes", [ul([("", n) for n in summary["notes"]])] if summary["notes"] else []))
    return render_html("snapbench stress: record-field stress suite", info, sections)
