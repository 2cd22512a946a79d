"""The HTML page of ``snapbench stress`` (``DIR/report.html``), from its ``stress.json``.

Sections: findings in words (a drop or a gain is called one only when its CI excludes 0, as in the
run report's findings; otherwise "not distinguishable from none", or, when the change and its CI are exactly
0, that the metric did not move; a condition that changed no record's text says so instead; without a CI the
numbers are given without a verdict), the field x source-type table of micro deltas (which query types depend on which
field: PhotoBench's modality gap, measured), per-album results (micro and macro), the curves over
field availability (one row per condition that moves one field, in the order of availability; the
conditions left off -- several fields at once, caption_swap -- are listed with why), and the
caption-swap verdict.
"""

from __future__ import annotations

import html
import math

from ..core.errors import ConfigError
from ..data.photobench import album_sort_key
from .fmt import ci_excludes_zero, ci_label, ci_words, pct, points
from .htmlpage import HtmlFigure, HtmlSection, html_table, render_html, ul

__all__ = ["availability_points", "render_stress_report", "stress_findings"]

_SOURCES = ("V", "M", "F", "VM", "VF", "MF", "VMF")
#: Below this share of captions really changed by caption_swap the probe gives no verdict.
_MIN_SWAPPED_SHARE = 0.5
#: The caption-swap drop PAL-Bench measured (OFR 0.4041 -> 0.3498, paired delta -0.0543; SPEC section 13): a
#: CI around 0 that still holds a change this large cannot say the captions' content does not matter.
_SWAP_REFERENCE_DROP = 0.0543
#: The caption-swap match levels (albums.stress) in words, strictest first; any other level has no donor.
_MATCH_WORDS = {"month+length+faces": "by month, length and faces", "month+length": "by month and length only",
                "month": "by month only", "any": "by nothing (any other album's caption)"}
_PLURAL = {"query": "queries", "album": "albums"}


def _others_moved(groups: dict, summary: dict, metric: str) -> str:
    """The other metrics (not fixed by construction) whose CI excludes 0: a change the headline misses."""
    fixed = set(summary.get("fixed_metrics", ()))
    moved = [f"{m} {pct(e['delta'], True)} ({ci_words(e.get('ci'), summary['ci_level'])})"
             for m, e in groups.items() if m != metric and m not in fixed and ci_excludes_zero(e.get("ci"))]
    return f" Other metrics whose CI excludes 0: {'; '.join(moved)}." if moved else ""


def _verdict(entry: dict, level: float, metric: str, what: str) -> str:
    d, ci = entry.get("delta"), entry.get("ci")
    ex = ci_excludes_zero(ci)
    ci_w = ci_words(ci, level)
    unit = f"{metric} ({entry.get('resampled', 'query')} resampling)"
    if d is None or not math.isfinite(d):
        return f"{what}: {metric} is undefined (no query with ground truth)."
    if ex is None:
        return f"{what}: {metric} changed by {pct(d, True)} points (no CI)."
    if ex:
        word = "lowered" if d < 0 else "raised"
        return f"{what} {word} {unit} by {pct(abs(d), True)[1:]} points ({ci_w})."
    if d == 0 and ci[0] == 0 and ci[1] == 0:  # every resample gave exactly 0: nothing to distinguish
        return (f"{what}: {metric} did not move: its change is 0 on the counted queries and in every "
                f"resample ({entry.get('resampled', 'query')} resampling).")
    return f"{what}: the change in {unit}, {pct(d, True)} points ({ci_w}), is not distinguishable from none."


def stress_findings(summary: dict) -> list[tuple[str, str]]:
    """``(id, sentence)`` per condition on all queries, then the caption-swap verdict."""
    metric = summary["metric"]
    level = summary["ci_level"]
    out = []
    for cid, body in summary["conditions"].items():
        e = body["groups"]["all"][metric]
        if body.get("changed_records") == 0:
            out.append((f"finding-{cid}", f"Stress {cid} changed no record's text (see the notes): every query ranks "
                                          "as on the clean records; nothing to measure."))
            continue
        out.append((f"finding-{cid}", _verdict(e, level, metric, f"Stress {cid}")
                    + _others_moved(body["groups"]["all"], summary, metric)))
    swap = _swap_verdict(summary)
    if swap:
        out.append(("finding-caption-swap", swap))
    return out


def _donor_matching(sw: dict) -> str:
    """How the donors were matched, from the recorded counts: ``matched by month, length and faces for 9,
    by month only for 3`` (each level used, strictest first; then the records left without a donor)."""
    counts = sw.get("donor_match") or {}
    if not counts:
        return "matched by month, length and faces where a donor allows"
    used = [(words, counts[k]) for k, words in _MATCH_WORDS.items() if counts.get(k)]
    none = sum(n for k, n in counts.items() if k not in _MATCH_WORDS)
    text = (f"matched {used[0][0]} for all {used[0][1]}" if len(used) == 1 and not none else
            "matched " + ", ".join(f"{w} for {n}" for w, n in used) if used else "")
    return text + ("; " if text and none else "") + (f"no donor for {none}" if none else "")


def _swap_verdict(summary: dict) -> str | None:
    """The caption-swap probe in plain words, or ``None`` when it was not run."""
    metric = summary["metric"]
    for cid, body in summary["conditions"].items():
        if [n for n, _ in body["operators"]] != ["caption_swap"]:
            continue
        e = body["groups"]["all"][metric]
        ex = ci_excludes_zero(e.get("ci"))
        ci_w = ci_words(e.get("ci"), summary["ci_level"])
        sw = body.get("caption_swap", {})
        n_sw, n_cap = sw.get("swapped"), sw.get("captions")
        count = f"; {n_sw} of {n_cap} captions swapped" if n_sw is not None else ""
        head = (f"Caption swap (each caption replaced by one from another album, {_donor_matching(sw)}{count}): "
                f"{metric} {pct(e['delta'], True)} points" + (f" ({ci_w})" if ci_w else "") + ". ")
        if n_sw == 0:
            donors = sum(v for k, v in sw.get("donor_match", {}).items() if not k.startswith("no donor"))
            why = ("every donor caption from another album was the same text as the record's own" if donors else
                   "no donor from another album was found (month, length bin and face count, then looser)")
            return head + f"The swap changed no captions: {why}. No verdict on the captions' content."
        if n_sw is not None and n_cap and n_sw < _MIN_SWAPPED_SHARE * n_cap:
            return head + (f"Too few captions changed ({n_sw} of {n_cap}, under {_MIN_SWAPPED_SHARE:.0%}) for a verdict "
                           "on the captions' content.")
        if ex and e["delta"] < 0:
            return head + ("Retrieval depends on what each caption says about its own photo: the captions carry "
                           "album-specific content, not only generic statistics a donor shares.")
        if ex and e["delta"] > 0:
            return head + ("Foreign captions scored better than the photos' own: the own captions mislead this "
                           "encoder; look at their quality.")
        if ex is None:
            return head + "No CI: no verdict."
        lo, hi = e["ci"]
        ref = pct(_SWAP_REFERENCE_DROP)
        if lo <= -_SWAP_REFERENCE_DROP or hi >= _SWAP_REFERENCE_DROP:
            n = e.get("n_counted")
            queries = f"{n} counted quer{'y' if n == 1 else 'ies'}" if n is not None else "the counted queries"
            return head + (f"The data cannot tell: with {queries} the CI runs from {pct(lo, True)} to {pct(hi, True)} "
                           f"points, so it holds no change but also a change of {ref} points or more (the drop "
                           "PAL-Bench measured with this probe); too few queries for a verdict on the captions' "
                           "content.")
        return head + (f"No measurable effect (the CI excludes a change of {ref} points either way, the drop PAL-Bench "
                       "measured with this probe): retrieval does not depend on the captions' content (a shortcut via "
                       "time, place or people, or captions that carry little), so caption quality is not what "
                       "this benchmark measures.")
    return None


def _off_curve(b: dict) -> str | None:
    """Why a condition has no point on the availability curves (``None``: it has one)."""
    if any(n == "caption_swap" for n, _ in b["operators"]):
        return "caption_swap changes the captions' content, not how many records hold one"
    if len(b["fields"]) != 1:
        return (f"moves {', '.join(b['fields'])} at once: its change cannot be put down to one field's "
                "availability (see the findings and the field × source-type table)")
    return None


def availability_points(summary: dict, metric: str) -> dict[str, list[tuple[float, float, str]]]:
    """Per field: ``(share of records holding it, micro metric, condition)`` for clean, every
    condition that moves only that field (one operator or several, as ``faces-mild``), and
    ``drop=FIELD`` (share 0); by share.  For a condition with ``caption_truncate`` the share is that of
    the caption characters kept.  Conditions moving several fields, and ``caption_swap``, have no point
    (:func:`_off_curve` says why; the page lists them)."""
    clean_m = summary["conditions"] and next(iter(summary["conditions"].values()))["groups"]["all"][metric]["clean"]
    out: dict[str, list[tuple[float, float, str]]] = {}
    for cid, b in summary["conditions"].items():
        ops = [n for n, _ in b["operators"]]
        if _off_curve(b) is not None:
            continue
        f = b["fields"][0]
        pts = out.setdefault(f, [(summary["field_availability"]["clean"][f], clean_m, "clean")])
        share = b["field_availability"][f]
        if f == "caption" and "caption_truncate" in ops:
            share = b.get("caption_chars_kept", share)  # every caption is still there, shorter
        pts.append((share, b["groups"]["all"][metric]["stressed"], cid))
    return {f: sorted(p, key=lambda t: -t[0]) for f, p in out.items()}


def _availability_figure(summary: dict, metric: str, dpi: int = 100) -> bytes | None:
    """PNG of :func:`availability_points` (one line per field), or ``None`` without points."""
    from .figures import fig_to_bytes, one_axes, tidy_axes

    pts = availability_points(summary, metric)
    if not pts:
        return None
    fig, ax = one_axes((6.5, 4))
    for f, p in pts.items():
        ax.plot([100 * x for x, _, _ in p], [100 * y for _, y, _ in p], marker="o", label=f)
    ax.set_xlabel("records holding the field (%)")
    ax.set_ylabel(f"{metric} (micro, %)")
    ax.invert_xaxis()
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    tidy_axes(ax)
    ax.set_title(f"{metric} as record fields become sparser", fontsize=10)
    return fig_to_bytes(fig, "png", dpi)


def _table(head: list[str], rows: list[list[str]], caption: str) -> str:
    return html_table(head, [[html.escape(c) for c in r] for r in rows], html.escape(caption))


def _cell(e: dict | None, key: str = "delta", ci_key: str = "ci") -> str:
    if not e:
        return "–"
    d = e.get(key)
    star = "*" if ci_excludes_zero(e.get(ci_key)) else ""
    return f"{pct(d, True)}{star}"


def _intervals(summary: dict) -> str:
    """The header line on the CIs: the unit resampled, and the one asked when it was not possible."""
    done = summary["resample_by"]
    asked = summary.get("resample_by_requested", done)
    head = f"{ci_label(summary['ci_level'])}, {summary['resamples']} resamples; {_PLURAL.get(done, done + 's')} resampled"
    if asked != done:
        n = summary["n_albums"]
        head += f" ({asked} resampling asked; {n} album{'s are' if n != 1 else ' is'} too few)"
    return head


def render_stress_report(summary: dict) -> str:
    """The whole page (see the module docstring)."""
    metric = summary["metric"]
    level = summary["ci_level"]
    conds = summary["conditions"]
    sources = [s for s in _SOURCES if any(f"source={s}" in b["groups"] for b in conds.values())]
    info = [("dataset", summary["dataset"]), ("encoder", summary["encoder"]),
            ("albums", f"{summary['n_albums']} ({', '.join(sorted(summary['albums'], key=album_sort_key))})"),
            ("queries", f"{summary['n_queries']} ({summary['n_excluded_zero_gt']} zero-GT, excluded from ranking metrics)"),
            ("records", str(summary["n_records"])), ("mode", f"{summary['mode']}: {summary['modes_note']}"),
            ("intervals", _intervals(summary)),
            ("metric", f"{metric}; micro = over queries, macro = mean over albums")]
    if summary.get("set_threshold") is not None:
        info.append(("answer sets", f"--set-threshold {summary['set_threshold']:g}: a query's answer is the records "
                     "scoring at least this; an empty answer is a rejection, and reject_precision / reject_recall / "
                     "reject_f1 score the rejections against the zero-GT queries"))
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
        for gname in sorted((g for g in b["groups"] if g.startswith("album=")), key=lambda g: album_sort_key(g[6:])):
            e = b["groups"][gname][metric]
            arows.append([cid, gname[6:], points(e["clean"]) or "–", points(e["stressed"]) or "–", _cell(e)])
    sections.append(HtmlSection("albums", "Per album", [_table(["condition", "album", "clean", "stressed", "Δ"], arows,
                                                                f"{metric} per album (micro within the album)")]))
    curves = availability_points(summary, metric)
    crows = [[f, cid, f"{100 * x:.0f}%", points(y) or "–"] for f, p in curves.items() for x, y, cid in p]
    curve = HtmlSection("curves", "Curves over field availability", [
        _table(["field", "condition", "available", metric], crows,
               f"{metric} (micro) as a field becomes sparser (available: share of records holding it; "
               "for caption_truncate, share of caption characters kept)")] if crows else [],
        missing=[] if crows else ["no single-field condition was run (e.g. ocr_dropout=0.25 or drop=ocr)"])
    off = [(cid, why) for cid, b in conds.items() if (why := _off_curve(b)) is not None]
    if off:
        curve.raw.append('<p class="note">Not on the curves: ' + "; ".join(
            f"{html.escape(cid)} ({html.escape(why)})" for cid, why in off) + ".</p>")
    if crows:
        try:
            png = _availability_figure(summary, metric)
        except ConfigError as exc:  # no matplotlib: the table stands alone, and the page says why
            curve.missing.append(f"no figure: {exc}")
        else:
            if png:
                curve.figures.append(HtmlFigure("availability", f"{metric} against the share of records holding "
                                                "each field (clean, each single-field stress, drop=FIELD)", png))
    sections.append(curve)
    swap = _swap_verdict(summary)
    sections.append(HtmlSection("swap", "Caption-swap probe", [f"<p>{html.escape(swap)}</p>"] if swap else [],
                                missing=[] if swap else ["caption_swap was not run (add it to --stress)"]))
    sections.append(HtmlSection("notes", "Notes", [ul([("", n) for n in summary["notes"]])] if summary["notes"] else []))
    return render_html("snapbench stress: record-field stress suite", info, sections)
