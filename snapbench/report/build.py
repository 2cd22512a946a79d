"""``build_report``: from a run directory to report.html, tables/, figures/, per_query.{csv,parquet}
and findings.json.  Every optional input that is missing shows up as a note in the section that
needed it (and in :attr:`ReportResult.notes`); nothing optional makes the report fail.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..atomic import write_bytes_atomic, write_text_atomic
from ..errors import ConfigError
from .findings import compute_findings
from .perquery import write_combined_per_query
from .rundir import MODE_NAMES, RunData, load_run_dir
from .tables import (
    Table,
    additivity_table,
    metric_label,
    mode_delta_table,
    mode_value_table,
    summary_table,
)

__all__ = ["FORMATS", "ReportResult", "build_report"]

FORMATS: tuple[str, ...] = ("html", "md", "tex", "csv", "parquet", "png", "pdf")


@dataclass
class ReportResult:
    """What was written (paths) and what could not be (notes, by topic)."""

    out: Path
    files: list[Path] = field(default_factory=list)
    notes: dict[str, list[str]] = field(default_factory=dict)
    figures: list[str] = field(default_factory=list)


def _contact_sheet(data: RunData, res: ReportResult) -> bytes | None:
    """A ready DIR/contact_sheet.png, else one built from run.json's ``contact_sheet`` entry."""
    if data.contact_sheet is not None:
        try:
            return data.contact_sheet.read_bytes()
        except OSError as e:
            res.notes.setdefault("contact_sheet", []).append(f"{data.contact_sheet}: unreadable ({e})")
            return None
    spec = data.run.get("contact_sheet")
    if not isinstance(spec, dict) or not spec.get("image"):
        res.notes.setdefault("contact_sheet", []).append(
            "no contact sheet: put contact_sheet.png in the run directory, or "
            '"contact_sheet": {"image": ..., "key": ..., "seed": ...} in run.json')
        return None
    from ..corruptions.io import encode_png, load_image
    from ..corruptions.preview import contact_sheet

    img_path = Path(spec["image"])
    if not img_path.is_absolute():
        img_path = data.path / img_path
    try:
        sheet = contact_sheet(load_image(img_path), question=spec.get("question"), entity=spec.get("entity"),
                              seed=int(spec.get("seed", data.run.get("seed", 0)) or 0),
                              key=str(spec.get("key", img_path.stem)), cell=(160, 120))
    except (ValueError, OSError, TypeError) as e:
        res.notes.setdefault("contact_sheet", []).append(f"contact sheet of {img_path} failed: {e}")
        return None
    return encode_png(sheet.image)


def _summary(data: RunData, metric: str) -> list[tuple[str, str]]:
    rep = data.first_report
    meta = rep.get("meta") or {}
    run = data.run
    nconds = len(rep["conditions"])
    rows = [
        ("dataset", str(run.get("dataset", "not recorded (no run.json)"))),
        ("encoder", str(run.get("encoder", "not recorded (no run.json)"))),
        ("modes", ", ".join(MODE_NAMES.get(m, m) for m in data.modes)
         + (f"; fixed-fusion baselines: {', '.join(sorted(data.fusion))}" if data.fusion else "")),
        ("queries", (f"{rep.get('n_queries', '?')} evaluated; {rep.get('n_excluded_zero_gt', 0)} zero-GT excluded "
                     "from ranking metrics")),
        ("gallery", str(meta.get("n_gallery", "?")) + " items"),
        ("conditions", f"{nconds} (clean included)"),
        ("primary metric", f"{metric_label(metric)} ({metric}); values in %, differences in points"),
        ("seed", str(run.get("seed", meta.get("seed", "?")))),
        ("bootstrap", (f"{meta.get('resamples', '?')} resamples, {int(100 * float(meta.get('ci_level', 0.95)))}% "
                       f"{meta.get('ci_method', 'paired bootstrap over queries')}")),
        ("snapbench", str(run.get("snapbench_version", meta.get("snapbench_version", "?")))),
    ]
    # what the run could not do and why (absent images, skipped modes, dropped queries): the reader
    # of a paper table must see it next to the numbers
    for note in run.get("notes") or []:
        rows.append(("note", str(note)))
    return rows


def build_report(
    run_dir: str | Path,
    out: str | Path | None = None,
    *,
    formats: Sequence[str] = FORMATS,
    metric: str = "hit@1",
    dpi: int = 120,
    progress: Callable[[str], None] | None = None,
) -> ReportResult:
    """Write the report of ``run_dir`` into ``out`` (default: ``run_dir``).

    ``formats`` picks among :data:`FORMATS`; ``png``/``pdf`` are the figures (matplotlib: without it,
    a note with the install hint replaces them); ``csv``/``parquet`` the combined per-query table.
    ``metric`` is the report metric the tables, figures and findings use (SnapBench's R@1 = hit@1).
    """
    bad = [f for f in formats if f not in FORMATS]
    if bad:
        raise ConfigError(f"unknown report format(s) {', '.join(bad)}; choose among {', '.join(FORMATS)}")
    data = load_run_dir(run_dir)
    missing_metric = [m for m, r in data.reports.items() if metric not in r["conditions"]["clean"]]
    if len(missing_metric) == len(data.reports):
        raise ConfigError(f"metric {metric!r} is in none of the reports of {data.path}")
    outdir = Path(out) if out is not None else data.path
    res = ReportResult(out=outdir, notes={k: list(v) for k, v in data.missing.items()})
    say = progress or (lambda msg: None)
    fmts = set(formats)

    def write(rel: str, payload: bytes | str) -> Path:
        p = outdir / rel
        if isinstance(payload, str):
            write_text_atomic(p, payload)
        else:
            write_bytes_atomic(p, payload)
        res.files.append(p)
        return p

    def save_table(t: Table | None) -> str:
        if t is None:
            return ""
        if "md" in fmts:
            write(f"tables/{t.name}.md", t.to_markdown())
        if "tex" in fmts:
            write(f"tables/{t.name}.tex", t.to_latex())
        return t.to_html()

    # Figures: matplotlib is optional; a missing one costs the figures, not the report.
    want_figs = bool(fmts & {"png", "pdf", "html"})
    plot = None
    if want_figs:
        try:
            from . import figures as plot
            plot.require_matplotlib()
        except ConfigError as e:
            plot = None
            res.notes.setdefault("figures", []).append(str(e))

    def figure(name: str, make, caption: str):
        from .html import HtmlFigure

        if plot is None:
            return None
        fig = make()
        if fig is None:
            return None
        png = plot.fig_to_bytes(fig, "png", dpi)
        if "png" in fmts or "html" in fmts:
            write(f"figures/{name}.png", png)
        if "pdf" in fmts:
            write(f"figures/{name}.pdf", plot.fig_to_bytes(fig, "pdf", dpi))
        res.figures.append(name)
        return HtmlFigure(name, caption, png)

    from .html import HtmlSection, render_html

    lab = metric_label(metric)
    sections: list[HtmlSection] = []

    say("findings")
    finds = compute_findings(data, metric)
    write("findings.json", json.dumps([{"id": f.id, "text": f.text, "values": f.values} for f in finds],
                                      indent=2, ensure_ascii=False, default=float) + "\n")
    sec = HtmlSection("findings", "Findings")
    sec.raw.append('<ul class="findings">' + "".join(
        f'<li id="finding-{html.escape(f.id)}">{html.escape(f.text)}</li>' for f in finds) + "</ul>")
    sections.append(sec)

    say("tables")
    rows = [(MODE_NAMES.get(m, m), data.reports[m]) for m in data.modes]
    rows += [(f"fusion: {name}", rep) for name, rep in sorted(data.fusion.items())]
    sec = HtmlSection("summary", "All modes at a glance")
    sec.raw.append(save_table(summary_table(rows, metric)))
    if "MOOR" in data.reports and not data.fusion:
        sec.missing.append("no fixed-fusion baselines (fusion/<name>/report.json): MOOR is compared with IT→IT only")
    sections.append(sec)

    say("figures")
    sec = HtmlSection("across", "Across modes")
    f = figure("modes_severity", lambda: plot.modes_severity_figure(data, metric),
               f"Mean Δ{lab} over the image operators at each severity, per mode; diamonds: text conditions.")
    sec.figures += [f] if f else []
    f = figure("drag", lambda: plot.drag_figure(data, metric),
               f"Clean {lab} of each mode minus image-only I→I; for IT→IT this is the coarse-text drag.")
    sec.figures += [f] if f else []
    if f is None and plot is not None:
        sec.missing.append("drag: needs the I2I report, or an IT2IT report with coarse_text_drag")
    f = figure("moor_gain", lambda: plot.moor_gain_figure(data, metric),
               f"{lab}(MOOR) − {lab}(IT→IT) per condition (points); whiskers when per-query values exist.")
    sec.figures += [f] if f else []
    if f is None and plot is not None:
        sec.missing.append("MOOR gain: needs both MOOR/report.json and IT2IT/report.json")
    if data.text_share:
        f = figure("text_share", lambda: plot.text_share_figure(data.text_share),
                   "MOOR's mean text-path weight share (w_TT + w_IT + w_TI)/Σw by image severity.")
        sec.figures += [f] if f else []
    else:
        sec.missing.append("text-path share: MOOR/text_share.json not found")
    sec.missing += res.notes.get("figures", [])
    sections.append(sec)

    from ..diagnose.traffic_html import traffic_fragment  # the traffic view, when RUN_DIR/traffic.json exists

    if (frag := traffic_fragment(data.path, metric=metric, label=lab, names=MODE_NAMES)) is not None:
        sections.append(HtmlSection("traffic", "Under your traffic", raw=[frag]))

    for mode in data.modes:
        rep = data.reports[mode]
        name = MODE_NAMES.get(mode, mode)
        sec = HtmlSection(f"mode-{mode}", f"Mode {name}")
        if metric not in rep["conditions"]["clean"]:
            sec.missing.append(f"the {name} report has no {metric}")
            sections.append(sec)
            continue
        say(f"mode {mode}")
        sec.raw.append(save_table(mode_delta_table(rep, name, metric, key=mode)))
        add = additivity_table(rep, name, metric, key=mode)
        if add is None:
            sec.missing.append("no additivity: the report has no joint condition with both parts present")
        sec.raw.append(save_table(add))
        sec.raw.append("<details><summary>" + html.escape(f"{lab} per condition (%)") + "</summary>"
                       + save_table(mode_value_table(rep, name, metric, key=mode)) + "</details>")
        for fname, make, cap in (
            ("severity_curves", lambda rep=rep, mode=mode: plot.severity_curves_figure(rep, mode, metric),
             f"{name}: Δ{lab} vs severity per operator, 95% CI band; cliff/gradual from the report."),
            ("primitives",
             lambda rep=rep, mode=mode: plot.primitive_bars_figure(rep, mode, metric, data.per_query.get(mode)),
             f"{name}: mean Δ{lab} by primitive and severity; dots = single operators."),
            ("additivity", lambda rep=rep, mode=mode: plot.additivity_heatmap_figure(rep, mode, metric),
             f"{name}: additivity δ = Obs − Exp per pair and severity, with 95% CI."),
        ):
            f = figure(f"{mode}_{fname}", make, cap)
            sec.figures += [f] if f else []
        if mode not in data.per_query:
            sec.missing.append(f"{mode}/per_query.csv not found: no CIs for aggregated bars, no per-query table")
        sections.append(sec)

    sec = HtmlSection("contact-sheet", "One query under every condition")
    sheet = _contact_sheet(data, res) if ("html" in fmts or "png" in fmts) else None
    if sheet is not None:
        from .html import HtmlFigure

        write("figures/contact_sheet.png", sheet)
        res.figures.append("contact_sheet")
        sec.figures.append(HtmlFigure("contact_sheet", "One query under every image condition (clean first, "
                                      "then one row per operator, severities left to right; questions below).", sheet))
    sec.missing += res.notes.get("contact_sheet", [])
    sections.append(sec)

    if fmts & {"csv", "parquet"}:
        if data.per_query:
            _, note = write_combined_per_query(data.per_query, outdir / "per_query.csv",
                                               outdir / "per_query.parquet" if "parquet" in fmts else None)
            res.files.append(outdir / "per_query.csv")
            if note:
                res.notes.setdefault("per_query", []).append(note)
            elif "parquet" in fmts:
                res.files.append(outdir / "per_query.parquet")
        else:
            res.notes.setdefault("per_query", []).append("no <MODE>/per_query.csv in the run: no per_query.csv/.parquet")

    other = {k: v for k, v in res.notes.items() if k not in ("contact_sheet", "figures")}
    if other:
        sec = HtmlSection("missing", "Inputs not found or not used")
        sec.missing += [f"{k}: {m}" for k, msgs in other.items() for m in msgs]
        sections.append(sec)
    files = HtmlSection("files", "Files of this report")
    files.raw.append("<ul>" + "".join(f"<li><code>{html.escape(str(p.relative_to(outdir)))}</code></li>"
                                      for p in res.files) + "</ul>")
    sections.append(files)
    if "html" in fmts:
        title = f"snapbench report — {data.run.get('dataset', data.path.name)}"
        write("report.html", render_html(title, _summary(data, metric), sections))
    return res
