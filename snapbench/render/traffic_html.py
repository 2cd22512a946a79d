"""The traffic view of report.html: an HTML fragment from ``RUN_DIR/traffic.json``.

:func:`traffic_fragment` returns ``None`` when the run has no traffic.json, and a fragment that says
so (never an exception) when the file is unreadable, and only a note with the command that refreshes
it (no numbers) when it is older than the run's reports: the report must not fail on an optional
input, nor show numbers of other reports as this run's.  Tables use the report's ``table.paper`` style.
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping
from typing import Any

from ..core.errors import SnapbenchError
from ..core.targets import MODE_LABELS
from ..core.userfiles import read_json
from ..store.folders import FUSION_PREFIX, RunDir
from .fmt import ci_label

__all__ = ["traffic_fragment", "render_traffic", "stale_note"]

_KINDS = (("clean", "clean"), ("image_only", "image only"), ("text_only", "text only"), ("both", "both sides"))


def _pct(x: Any, signed: bool = False) -> str:
    if x is None:
        return "–"
    v = round(100 * float(x), 1) + 0.0  # + 0.0: never "-0.0"
    return (f"{v:+.1f}" if signed else f"{v:.1f}").replace("-", "−")  # the report's minus sign


def _with_ci(entry: Mapping[str, Any] | None, signed: bool = False) -> str:
    if not entry or entry.get("value") is None:
        return "–"
    out = _pct(entry["value"], signed)
    if entry.get("ci_low") is not None:
        out += f' <span class="ci">[{_pct(entry["ci_low"], signed)}, {_pct(entry["ci_high"], signed)}]</span>'
    return out


def _span(ci: Any) -> str:
    return "–" if not ci else f'<span class="ci">[{_pct(ci[0])}, {_pct(ci[1])}]</span>'


def _table(tid: str, caption: str, columns: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr><th>" + r[0] + "</th>" + "".join(f"<td>{c}</td>" for c in r[1:]) + "</tr>" for r in rows)
    return (f'<table class="paper" id="table-{tid}"><caption>{html.escape(caption)}</caption>'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def _expected_table(body: Mapping[str, Any], metric: str, label: str, names: Mapping[str, str]) -> str:
    rows = []
    for t, per_metric in body.get("expected", {}).items():
        e = per_metric.get(metric)
        if e is None:
            continue
        d = body.get("delta_vs_clean", {}).get(t, {}).get(metric, {})
        name = names.get(t) or (f"fusion: {t[len(FUSION_PREFIX):]}" if t.startswith(FUSION_PREFIX) else t)
        rows.append([html.escape(name), _pct(d.get("clean")), _with_ci(e), _with_ci(d, signed=True),
                     _span(e.get("ci_benchmark")), _span(e.get("ci_traffic"))])
    level = (body.get("ci") or {}).get("level")
    ci = "CI" if level is None else ci_label(level)
    return _table("traffic-expected", f"{label} under your traffic (%): expected value with {ci}",
                  ["target", f"clean {label}", f"expected {label}", "vs clean (points)",
                   "CI, benchmark only", "CI, traffic only"], rows)


def _mix_table(body: Mapping[str, Any]) -> str:
    est = body.get("estimated", {})
    rows = []
    for c, w in sorted(body.get("weights", {}).items(), key=lambda kv: (kv[0] != "clean", -kv[1])):
        note = (f"estimated additively from {html.escape(est[c]['image'])} and {html.escape(est[c]['text'])}"
                if c in est else "")
        rows.append([f"<code>{html.escape(c)}</code>", _pct(w), note])
    return _table("traffic-mix", "The mix: share of your traffic at each condition (%)",
                  ["condition", "weight", ""], rows)


def render_traffic(body: Mapping[str, Any], *, metric: str = "hit@1", label: str | None = None,
                   names: Mapping[str, str] | None = None, stale: bool = False) -> str:
    """The fragment for a traffic.json body: the mix, the expected ``metric`` per target, MOOR's gain
    (``stale``: only :func:`stale_note`)."""
    if stale:
        return stale_note(body)
    label = label or metric
    names = {**MODE_LABELS, **(names or {})}
    q = body.get("queries", {})
    n = q.get("n") or 0
    split = ", ".join(f"{name} {_pct(q.get(k, 0) / n)}%" for k, name in _KINDS) if n else ""
    parts = []
    parts.append(f"<p>{n} diagnosed queries from <code>{html.escape(str(body.get('diagnose_dir', '?')))}</code> "
                 f"(sides: {html.escape(', '.join(q.get('sides', [])) or 'none')}): {split}. Each target's "
                 f"expected {html.escape(label)} is Σ<sub>c</sub> w<sub>c</sub> R(c) over the mix below; the CI "
                 "resamples both the run's queries and the diagnosed ones.</p>")
    parts.append(_expected_table(body, metric, label, names))
    gain = (body.get("moor_gain") or {}).get("by_metric", {}).get(metric)
    if gain:
        against = names.get(body["moor_gain"].get("against", ""), body["moor_gain"].get("against", ""))
        parts.append(f"<p>Expected gain of MOOR over {html.escape(against)} under this mix: "
                     f"{_with_ci(gain, signed=True)} points.</p>")
    parts.append(_mix_table(body))
    parts += [f'<p class="note">{html.escape(str(m))}</p>' for m in body.get("notes", [])]
    return "\n".join(parts)


def stale_note(body: Mapping[str, Any], run_dir: str | os.PathLike | None = None) -> str:
    """What the view shows when traffic.json no longer matches the run's reports: no numbers (they
    would be read as this run's), only that it is stale and the command that refreshes it."""
    where = html.escape(str(run_dir if run_dir is not None else body.get("run_dir") or "RUN_DIR"))
    diag = html.escape(str(body.get("diagnose_dir") or "DIAGNOSE_DIR"))
    return ('<p class="missing">The traffic view is out of date: traffic.json was computed from other reports than '
            "the ones in this run directory (the run was redone since), so its numbers are not shown. Refresh it "
            f"with <code>snapbench report {where} --traffic {diag}</code>.</p>")


def traffic_fragment(run_dir: str | os.PathLike, *, metric: str = "hit@1", label: str | None = None,
                     names: Mapping[str, str] | None = None, traffic_dir: str | os.PathLike | None = None) -> str | None:
    """The traffic view of ``run_dir`` for report.html; ``None`` when it has no traffic.json.  The file is
    ``traffic_dir/traffic.json`` when given (a report written elsewhere keeps its own), else the run's."""
    from ..store.rundir import report_digests

    path = RunDir(run_dir if traffic_dir is None else traffic_dir).traffic
    if not path.is_file():
        return None
    try:
        body = read_json(path, what="traffic view")
        if not isinstance(body, dict) or body.get("kind") != "traffic":
            raise SnapbenchError("not a traffic.json written by snapbench", path=path)
        stale = body.get("reports") != report_digests(run_dir)
    except (SnapbenchError, OSError) as exc:
        return f'<p class="missing">{html.escape(str(exc))}</p>'
    if stale:
        return stale_note(body, run_dir)
    return render_traffic(body, metric=metric, label=label, names=names)
