"""diagnose.html: the pilot's table for the user's own traffic, one self-contained page.

Sections: the four-way split (clean / image only / text only / both / any, with CIs), the share
each detector flags, the query-set checks, examples of flagged queries (thumbnails inlined as
base64 JPEG, the question, the score; the most extreme scores first) and the skipped files.  Built
on :func:`snapbench.render.htmlpage.render_html` (inline CSS, no external resource).
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import cv2

from ..corruptions.io import load_image
from ..diagnose.detect import QueryResult
from ..diagnose.summary import FOUR_WAY
from ..diagnose.thresholds import DETECTORS
from .fmt import DASH, points
from .htmlpage import HtmlSection, html_table, render_html

__all__ = ["render_diagnose_html"]

#: Long side (px) of the example thumbnails.
_THUMB_SIDE = 160
_LABELS = {"clean": "clean (neither side flagged)", "image_only": "image side only", "text_only": "text side only",
           "both": "both sides", "any": "any issue"}
_STYLE = ("<style>div.ex{display:flex;flex-wrap:wrap;gap:.8em}div.ex figure{margin:0;width:170px;font-size:.8em}"
          "div.ex img{max-width:160px;max-height:160px;border:1px solid #ddd}div.ex .q{color:#333}</style>")


def _thumbnail_jpeg(path: str | Path, side: int = _THUMB_SIDE) -> bytes | None:
    """A JPEG thumbnail (long side ``side``) of an image file, ``None`` when it cannot be read."""
    try:
        rgb = load_image(path)
    except (ValueError, OSError):
        return None
    h, w = rgb.shape[:2]
    s = min(1.0, side / max(h, w))
    small = cv2.resize(rgb, (max(1, round(w * s)), max(1, round(h * s))), interpolation=cv2.INTER_AREA)
    ok, buf = cv2.imencode(".jpg", small[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, 80])
    return buf.tobytes() if ok else None


def _pct(x: float | None) -> str:
    s = points(x)
    return DASH if s is None else f"{s}%"


def _ci(ci: Sequence[float]) -> str:
    return f'<span class="ci">[{_pct(ci[0])}, {_pct(ci[1])}]</span>'


def _mix_cells(x: dict[str, Any]) -> list[str]:
    if x.get("not_applicable"):
        return [f"n/a ({html.escape(x['not_applicable'])})", "–"]
    return [f"{_pct(x['share'])} {_ci(x['ci'])}", f"{x['count']} / {x['n']}"]


def _mix_table(summary: dict[str, Any]) -> str:
    return html_table(["category", "share", "queries"],
                      [[html.escape(_LABELS[k]), *_mix_cells(summary[k])] for k in FOUR_WAY],
                      f"Queries by side flagged ({100 * summary['level']:g}% Wilson CIs)")


#: what a detector of each side needs: said when the query set has none ("n/a (no questions)")
_NEEDS = {"image": "no readable images", "text": "no questions"}


def _detector_table(summary: dict[str, Any]) -> str:
    rows = []
    for d, s in summary["shares"].items():
        # a detector with nothing to look at has no share: n/a, not 0% or a blank
        share = (f"{_pct(s['share'])} {_ci(s['ci'])}" if s["n"]
                 else f"n/a ({_NEEDS.get(s['side'], 'nothing to check')})")
        rows.append([html.escape(d), s["side"], share, f"{s['count']} / {s['n']}", html.escape(s["score"]),
                     html.escape(s["flagged_when"])])
    return html_table(["detector", "side", "share", "queries", "score", "flagged when"], rows,
                      "Share of queries each detector flags")


def _by_condition_table(summary: dict[str, Any]) -> str:
    """The share each detector flags per condition of a 'snapbench corrupt' output (summary.json's
    ``by_condition``): how much each corruption moves each detector."""
    by = summary["by_condition"]
    dets = list(summary["shares"])
    rows = [[html.escape(c), row.get("n", ""), *("n/a" if row.get(d) is None else _pct(row[d]) for d in dets)]
            for c, row in by.items()]
    return html_table(["condition", "variants", *dets], rows, "Share of each condition's variants each detector "
                      "flags (n/a: the condition's variants lack that side)")


def _checks_html(checks: dict[str, Any], limit: int = 20) -> str:
    out = []
    for name, c in checks.items():
        items = c.get("ids", c.get("groups", []))
        shown = []
        for it in items[:limit]:
            if isinstance(it, dict):
                shown.append(html.escape(str(it.get("id"))) + (
                    f" ({it['width']}x{it['height']})" if "width" in it
                    else f" ({html.escape(str(it['problem']))})" if "problem" in it else ""))
            elif isinstance(it, list):
                shown.append("{" + ", ".join(html.escape(str(x)) for x in it) + "}")
            else:
                shown.append(html.escape(str(it)))
        more = f" … and {len(items) - limit} more (summary.json)" if len(items) > limit else ""
        out.append(f"<li><b>{html.escape(name)}</b>: {c['count']} — {html.escape(c['rule'])}"
                   + (f"<br><code>{', '.join(shown)}{more}</code>" if shown else "") + "</li>")
    return "<ul>" + "".join(out) + "</ul>"


def _examples(results: Sequence[QueryResult], detector: str, k: int) -> list[QueryResult]:
    side = DETECTORS[detector].side
    flagged = [r for r in results if r.flags.get(detector)]
    key = (lambda r: (r.image_scores if side == "image" else r.text_scores)[detector])  # type: ignore[index]
    return sorted(flagged, key=key, reverse=DETECTORS[detector].flagged == "above")[:k]


def _example_html(r: QueryResult, detector: str) -> str:
    side = DETECTORS[detector].side
    score = (r.image_scores if side == "image" else r.text_scores)[detector]  # type: ignore[index]
    thumb = _thumbnail_jpeg(r.record.image) if r.record.image is not None else None
    img = (f'<img alt="{html.escape(r.id)}" src="data:image/jpeg;base64,{base64.b64encode(thumb).decode("ascii")}">'
           if thumb else "")
    q = f'<div class="q">{html.escape(r.record.question)}</div>' if r.record.question else ""
    return (f"<figure>{img}<figcaption><code>{html.escape(r.id)}</code><br>{detector} = {score:.4g}"
            f"</figcaption>{q}</figure>")


def render_diagnose_html(summary: dict[str, Any], results: Sequence[QueryResult], *, examples: int = 8,
                         source: str = "") -> str:
    """The whole diagnose.html page (UTF-8 text)."""
    head = [("queries", str(summary["n_queries"])), ("with an image", str(summary["n_images"])),
            ("with a question", str(summary["n_questions"])), ("unreadable images", str(summary["n_skipped_images"]))]
    if source:
        head.insert(0, ("input", source))
    mix = HtmlSection("mix", "Traffic mix", raw=[_STYLE, _mix_table(summary)])
    if not summary["n_questions"] or not summary["n_images"]:
        mix.missing.append("This query set has only one side: the other side counts as clean, so text_only/both "
                           "(or image_only/both) cannot occur and have no share (n/a).")
    sections = [mix, HtmlSection("detectors", "Detectors", raw=[_detector_table(summary)])]
    if summary.get("by_condition"):  # a 'snapbench corrupt' output: the shares per condition
        sections.append(HtmlSection("by-condition", "By condition", raw=[_by_condition_table(summary)]))
    if "checks" in summary:
        sections.append(HtmlSection("checks", "Query-set checks", raw=[_checks_html(summary["checks"])]))
    ex = HtmlSection("examples", "Flagged examples")
    for d in DETECTORS:
        chosen = _examples(results, d, examples)
        if chosen:
            ex.raw.append(f"<h3>{html.escape(d)} ({summary['shares'][d]['count']} flagged; most extreme first)</h3>"
                          '<div class="ex">' + "".join(_example_html(r, d) for r in chosen) + "</div>")
    if not ex.raw:
        ex.raw.append('<p class="note">No query was flagged.</p>')
    sections.append(ex)
    skips = summary.get("skips", [])
    if skips:
        items = "".join(f"<li><code>{html.escape(s['query_id'])}</code>: {html.escape(s['reason'])}</li>" for s in skips[:200])
        sections.append(HtmlSection("skips", f"Skipped ({len(skips)})", raw=[f"<ul>{items}</ul>"]))
    return render_html("snapbench diagnose", head, sections)
