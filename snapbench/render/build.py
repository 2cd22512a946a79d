"""``build_report``: from a run directory to report.html, tables/, figures/, per_query.{csv,parquet}
and findings.json.  Every optional input that is missing shows up as a note in the section that
needed it (and in :attr:`ReportResult.notes`); nothing optional makes the report fail.

The page is a list of sections, each built by one function below from the run's data; the files
it writes are named by :class:`snapbench.store.RunDir` (of the output folder).

The traffic view of report.html: an HTML fragment from ``RUN_DIR/traffic.json``.

:func:`traffic_fragment` returns ``None`` when the run has no traffic.json, and a fragment that says
so (never an exception) when the file is unreadable, and only a note with the command that refreshes
it (no numbers) when it is older than the run's reports: the report must not fail on an optional
input, nor show numbers of other reports as this run's.  Tables use the report's ``table.paper`` style.
"""

from __future__ import annotations

import html
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError, SnapbenchError
from ..core.jsonable import dumps
from ..core.targets import FUSION_PREFIX
from ..core.userfiles import read_json
from ..core.validate import choice, hint_and_known
from ..evaluate.drag import NO_DRAG_WITHOUT_LABELS, drag_applies
from ..evaluate.stability import overlap_metric
from ..store import RunDir, claim_output_dir, write_run_json
from ..store.atomic import write_bytes_atomic, write_text_atomic
from ..store.folders import TRAFFIC_JSON, check_schema_version, remove_stale
from ..store.perquery import write_combined_per_query
from ..store.rundir import TARGET_NAMES, RunData, load_run_dir
from .damage import TARGET_FLAGGED, damage_analysis, damage_figure, damage_tables
from .figures import check_dpi
from .findings import Finding, compute_findings
from .fmt import ci_label, ci_level_text, minus, pct
from .htmlpage import HtmlFigure, HtmlSection, details, html_table, render_html, ul
from .scope import RunScope, run_scope
from .stability import (
    label_free_rows,
    labelled,
    stability_finding,
    stability_scatter_figure,
    stability_vs_loss,
)
from .tables import Cell, Table, additivity_table, metric_label, mode_delta_table, mode_value_table, summary_table
from .terminal import queries_line

__all__ = ['FORMATS', 'ReportResult', 'build_report', 'traffic_fragment']

FORMATS: tuple[str, ...] = ("html", "md", "tex", "csv", "parquet", "png", "pdf")


@dataclass
class ReportResult:
    """What was written (paths), what could not be (notes, by topic) and what the reader must know
    about the numbers shown (warnings: an unfinished run)."""

    out: Path
    files: list[Path] = field(default_factory=list)
    notes: dict[str, list[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)


@dataclass
class _Writer:
    """Writes the report's files into ``out`` (only the formats asked for) and records them."""

    out: RunDir
    formats: set[str]
    res: ReportResult
    dpi: int
    plot: Any = None  # the figures module, None without matplotlib
    limit: str = ""  # run --limit: words added to every table's caption (" — only the first N of ...")
    findings: list[Finding] = field(default_factory=list)  # what findings.json holds

    def write(self, path: Path, payload: bytes | str) -> Path:
        if isinstance(payload, str):
            write_text_atomic(path, payload)
        else:
            write_bytes_atomic(path, payload)
        self.res.files.append(path)
        return path

    def table(self, t: Table | None) -> str:
        """Write ``t`` as .md / .tex (as asked); its HTML for the page."""
        if t is None:
            return ""
        if self.limit and not t.title.endswith(self.limit):
            t.title += self.limit
        if "md" in self.formats:
            self.write(self.out.table(t.name, "md"), t.to_markdown())
        if "tex" in self.formats:
            self.write(self.out.table(t.name, "tex"), t.to_latex())
        return t.to_html()

    def figure(self, name: str, make: Callable[[], Any], caption: str) -> HtmlFigure | None:
        """Draw, write as .png / .pdf (as asked); the page's figure (``None`` without matplotlib or data)."""
        if self.plot is None:
            return None
        fig = make()
        if fig is None:
            return None
        png = self.plot.fig_to_bytes(fig, "png", self.dpi)
        if self.formats & {"png", "html"}:
            self.write(self.out.figure(name, "png"), png)
        if "pdf" in self.formats:
            self.write(self.out.figure(name, "pdf"), self.plot.fig_to_bytes(fig, "pdf", self.dpi))
        self.res.figures.append(name)
        return HtmlFigure(name, caption, png)

    def note(self, topic: str, message: str) -> None:
        self.res.notes.setdefault(topic, []).append(message)


def _load_plot(w: _Writer) -> None:
    """Figures: matplotlib is optional; a missing one costs the figures, not the report."""
    if not w.formats & {"png", "pdf", "html"}:
        return
    try:
        from . import figures as plot

        plot.require_matplotlib()
        w.plot = plot
    except ConfigError as e:  # said as compare says it: that the figures were skipped, and the install
        w.note("figures", f"no figures: {e}")


def _contact_sheet(data: RunData, w: _Writer) -> bytes | None:
    """A ready DIR/contact_sheet.png, else one built from run.json's ``contact_sheet`` entry."""
    if data.contact_sheet is not None:
        try:
            return data.contact_sheet.read_bytes()
        except OSError as e:
            w.note("contact_sheet", f"{data.contact_sheet}: unreadable ({e})")
            return None
    spec = data.run.get("contact_sheet")
    if not isinstance(spec, dict) or not spec.get("image"):
        w.note("contact_sheet", "no contact sheet: put contact_sheet.png in the run directory, or "
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
                              key=str(spec.get("key", img_path.stem)), cell=(160, 120),
                              severity_target=spec.get("severity_target"))
    except (ValueError, OSError, TypeError) as e:
        w.note("contact_sheet", f"contact sheet of {img_path} failed: {e}")
        return None
    return encode_png(sheet.image)


def _limit(run: dict) -> tuple[Any, Any] | None:
    """``(N, of)`` when the run saw only the dataset's first N queries (``run --limit``), else None: the
    summary says so next to the number of queries, every table caption ends with it, and findings.json
    says it first."""
    lim = run.get("limit")
    return (lim.get("queries"), lim.get("of")) if isinstance(lim, dict) else None


def _limit_caption(run: dict) -> str:
    """``run --limit``: what every table caption of the report ends with."""
    n, of = _limit(run) or (None, None)
    return "" if n is None else f" — only the first {n} of the dataset's {of} queries (run --limit {n})"


def _summary(data: RunData, metric: str, scope: RunScope) -> list[tuple[str, str]]:
    rep = data.first_report
    meta = rep.meta
    run = data.run
    lim = _limit(run)
    ci = ci_level_text(meta.ci_level)
    rows = [
        *([("unfinished", data.unfinished)] if data.unfinished else []),
        ("dataset", str(run.get("dataset", "not recorded (no run.json)"))),
        ("encoder", str(run.get("encoder", "not recorded (no run.json)"))),
        ("modes", ", ".join(TARGET_NAMES.get(m, m) for m in data.modes)
         + (f"; fixed-fusion baselines: {', '.join(sorted(data.fusion))}" if data.fusion else "")),
        ("queries", queries_line(rep) + (f"; percentages of ranking metrics are out of "
                                         f"{rep.n_queries - rep.n_excluded_zero_gt}" if rep.n_excluded_zero_gt else "")
         + (f" — only the first {lim[0]} of the dataset's {lim[1]} (run --limit)" if lim else "")),
        ("gallery", f"{meta.n_gallery} items"),
        ("conditions", f"{len(rep.conditions)} (clean included)"),
        ("primary metric", f"{metric_label(metric)} ({metric}); values in %, differences in points"),
        ("signs", "Δ = condition − clean (negative = worse); additivity drops = clean − condition (positive = worse)"),
        ("seed", str(run.get("seed", meta.seed))),
        *([("severity", f"s1, s2, ... are measured targets: {fp['severity_target']}{_target_missed(run)}")]
          if isinstance(fp := run.get("fingerprint"), dict) and fp.get("severity_target") else []),
        ("bootstrap", f"{meta.resamples} resamples, {ci} {meta.ci_method}; only the queries that count for a "
                      "metric are resampled"),
        ("snapbench", str(run.get("snapbench_version", meta.snapbench_version))),
    ]
    # what the run could not do and why (absent images, skipped modes, dropped queries): the reader
    # of a paper table must see it next to the numbers
    said = scope.sentence()
    rows += [("note", str(note)) for note in run.get("notes") or [] if not (said and note in scope.reasons)]
    # what the run did not set out to make, and why, once: not a "not found" box per section
    return rows + ([("not in this run", said)] if said else [])


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
    for f in formats:
        choice(f, FORMATS, "formats", what="report format")
    check_dpi(dpi)
    data = load_run_dir(run_dir)
    metric = _label_free_metric(data, metric)
    if all(metric not in r.conditions["clean"] for r in data.reports.values()):
        known = dict.fromkeys(m for r in data.reports.values() for m in r.conditions["clean"])
        raise ConfigError(f"metric {metric!r} is in none of the reports of {data.path}{hint_and_known(metric, known)}",
                          param="metric")
    outdir = Path(out) if out is not None else data.path
    separate = outdir.resolve() != data.path.resolve()
    # stale tables and figures are removed only from folders that are snapbench's: the run itself, or
    # a report folder an earlier `snapbench report --out` made (never a folder of the user's own files)
    ours = not separate or not outdir.is_dir()
    if separate:  # a folder of its own: never another command's (a run, a corrupt output...) nor inside one
        ours = claim_output_dir(outdir, "report") is not None or ours
    res = ReportResult(out=outdir, notes={k: list(v) for k, v in data.missing.items()},
                       warnings=[data.unfinished] if data.unfinished else [])
    w = _Writer(RunDir(outdir), set(formats), res, dpi, limit=_limit_caption(data.run))
    _load_plot(w)
    scope = run_scope(data)
    say = progress or (lambda msg: None)
    say("findings")
    sections = [_findings_section(data, metric, w)]
    sections.append(_stability_section(data, w, sections[0]))
    say("tables")
    sections.append(_summary_section(data, metric, w))
    say("figures")
    sections.append(_across_section(data, metric, w, scope))
    sections += _traffic_section(data, metric, outdir if separate else None)
    say("damage")
    sections.append(_damage_section(data, metric, w))
    for mode in data.modes:
        say(f"mode {mode}")
        sections.append(_mode_section(data, mode, metric, w, scope))
    if not scope.no_contact_sheet:
        sections.append(_contact_section(data, w))
    _per_query_files(data, w)
    if ours:
        _remove_stale_files(w)
    sections += _missing_section(res)
    sections.append(HtmlSection("files", "Files of this report",
                                raw=[ul([("", str(p.relative_to(outdir))) for p in res.files], code=True)]))
    if "html" in w.formats:
        title = f"snapbench report — {data.run.get('dataset', data.path.name)}"
        w.write(w.out.report_html, render_html(title, _summary(data, metric, scope), sections))
    if separate:
        write_run_json(outdir, "report", {"run_dir": str(data.path.resolve()), "metric": metric})
    return res


def _remove_stale_files(w: _Writer) -> None:
    """``tables/`` and ``figures/`` hold this report's files only: a table or figure an earlier report
    wrote (of a mode the run no longer has) is removed, in the formats written now (files of other
    formats are left alone; figures only when matplotlib drew this report's)."""
    kinds = [(w.out.tables, s) for s in ("md", "tex") if s in w.formats]
    if w.plot is not None:
        kinds += [(w.out.figures, s) for s, wanted in (("png", {"png", "html"}), ("pdf", {"pdf"})) if w.formats & wanted]
    remove_stale([f for folder, suffix in kinds for f in folder.glob(f"*.{suffix}")], w.res.files)


def _traffic_section(data: RunData, metric: str, outdir: Path | None = None) -> list[HtmlSection]:
    """The traffic-weighted view, when RUN_DIR/traffic.json exists (snapbench report/run --traffic), or,
    for a report written elsewhere, its own OUT/traffic.json (report --traffic --out: the run untouched)."""
    own = outdir if outdir is not None and RunDir(outdir).traffic.is_file() else None
    frag = traffic_fragment(data.path, metric=metric, traffic_dir=own)
    return [] if frag is None else [HtmlSection("traffic", "Under your traffic", raw=[frag])]


def _label_free_metric(data: RunData, metric: str) -> str:
    """The default hit@1 of a run without labels is its overlap@10 (the report speaks of what exists)."""
    if metric != "hit@1" or not data.reports or labelled(data):
        return metric
    return overlap_metric(data.first_report.metrics) or metric


def _stability_section(data: RunData, w: _Writer, findings: HtmlSection) -> HtmlSection:
    """Robustness without labels: each label-free measure with its CI for the primary mode, and where
    labels exist whether they track the loss (stability.json, a finding, a scatter figure)."""
    sec = HtmlSection("stability", "Robustness without labels")
    if not data.reports:
        return sec
    mode = data.primary_mode
    rep = data.reports[mode]
    if not labelled(data):
        text = ("This run has no relevance labels: nothing here says whether a result is right. "
                "The numbers say how far each condition moves the ranking away from the clean "
                "query's own ranking: overlap@k = share of the clean top k still in the corrupted "
                "top k; rbo = rank-biased overlap (RBO_ext, persistence p, top-weighted agreement of "
                "the two rankings, 1 = identical); flip@1 = share of queries whose top-1 item "
                "changed. 100 / 100 / 0 = the corruption changed nothing.")
        sec.raw.append(ul([("", text)]))
        findings.raw.insert(0, ul([("finding-no-labels", text)], "findings"))
        _extra_findings(w, Finding("no_labels", text, {"labelled": False}))
    else:
        sec.raw.append(ul([("", "How far each condition moves the ranking from the clean query's own ranking, "
                                "without using the labels: overlap@k, rbo (RBO_ext) and flip@1 (top-1 changed).")]))
    rows = label_free_rows(rep)
    if not rows:
        sec.missing.append(f"the {mode} report has no label-free measures (its metrics include no overlap@k, rbo or flip@1)")
        return sec
    measures = list(rows[0][1])
    t = Table(f"{mode}_label_free", f"{TARGET_NAMES.get(mode, mode)}: label-free stability per condition (%, CI)",
              ["condition"] + measures)
    t.groups.append(("", [(c, [Cell(e[m]["mean"], e[m]["ci"]) if m in e else Cell() for m in measures])
                          for c, e in rows]))
    sec.raw.append(w.table(t))
    body = stability_vs_loss(data)
    if body is None:
        w.out.stability.unlink(missing_ok=True)  # an earlier report's, of other reports
        if labelled(data):
            # not a missing file: the run is too small for the question (a plain note, no warning box)
            sec.raw.append(ul([("", "Whether stability tracks the loss is not computed here: it needs hit@1, a "
                                    "stability measure and per-query values for at least 3 corrupted conditions.")]))
        return sec
    w.write(w.out.stability, dumps(body) + "\n")
    for m in body["modes"]:
        text = stability_finding(body, m)
        if text:
            sec.raw.append(ul([(f"finding-stability-{m}", text)], "findings"))
            findings.raw.append(ul([(f"finding-stability-{m}", text)], "findings"))
            _extra_findings(w, Finding(f"stability_tracks_loss_{m}", text, body["modes"][m]))
        fig = w.figure(f"{m}_stability_vs_loss", lambda m=m: stability_scatter_figure(body, m),
                       f"{TARGET_NAMES.get(m, m)}: mean stability against the drop of {body['metric']} per "
                       "condition, coloured by operator family.")
        sec.add_figure(fig)
    return sec


def _extra_findings(w: _Writer, f: Finding) -> None:
    """Add a finding to findings.json (written by the findings section just before, already listed)."""
    w.findings.append(f)
    write_text_atomic(w.out.findings, _findings_json(w.findings))


def _findings_json(finds: list[Finding]) -> str:
    return dumps([{"id": f.id, "text": f.text, "values": f.values} for f in finds]) + "\n"


def _findings_section(data: RunData, metric: str, w: _Writer) -> HtmlSection:
    finds = compute_findings(data, metric)
    if (lim := _limit(data.run)) is not None:
        finds.insert(0, Finding("limit", f"Only the first {lim[0]} of the dataset's {lim[1]} queries were evaluated "
                                         f"(run --limit {lim[0]}): a quick look, not the dataset's result.",
                                {"queries": lim[0], "of": lim[1]}))
    w.findings = finds
    w.write(w.out.findings, _findings_json(finds))
    return HtmlSection("findings", "Findings", raw=[ul([(f"finding-{f.id}", f.text) for f in finds], "findings")])


def _summary_section(data: RunData, metric: str, w: _Writer) -> HtmlSection:
    rows = [(TARGET_NAMES.get(m, m), m, data.reports[m]) for m in data.modes]
    rows += [(f"fusion: {name}", FUSION_PREFIX + name, rep) for name, rep in sorted(data.fusion.items())]
    sec = HtmlSection("summary", "All modes at a glance", raw=[w.table(summary_table(rows, metric))])
    if "MOOR" in data.reports and not data.fusion:
        sec.missing.append("no fixed-fusion baselines (fusion/<name>/report.json): MOOR is compared with IT→IT only")
    return sec


def _across_section(data: RunData, metric: str, w: _Writer, scope: RunScope) -> HtmlSection:
    lab, plot = metric_label(metric), w.plot
    sec = HtmlSection("across", "Across modes")

    def add(fig: HtmlFigure | None, missing: str = "") -> None:
        sec.add_figure(fig, missing if plot is not None else "")  # no matplotlib: said once, in the figures note

    add(w.figure("modes_severity", lambda: plot.modes_severity_figure(data, metric),
                 f"Mean Δ{lab} over the image operators at each severity, per mode; diamonds: text conditions."))
    if drag_applies(metric):
        add(w.figure("drag", lambda: plot.drag_figure(data, metric),
                     f"Clean {lab} of each mode minus image-only I→I; for IT→IT this is the coarse-text drag."),
            "" if scope.no_drag else "drag: needs the I2I report, or an IT2IT report with coarse_text_drag")
    elif not scope.no_drag:  # not a missing file: said once, as a plain note (no warning box)
        sec.raw.append(ul([("", f"No coarse-text drag without relevance labels: {NO_DRAG_WITHOUT_LABELS}.")]))
    add(w.figure("moor_gain", lambda: plot.moor_gain_figure(data, metric),
                 f"{lab}(MOOR) − {lab}(IT→IT) per condition (points), grouped by kind; whiskers when per-query "
                 "values exist."),
        "" if scope.left_out("MOOR") else "MOOR gain: needs both MOOR/report.json and IT2IT/report.json")
    if data.text_share:
        add(w.figure("text_share", lambda: plot.text_share_figure(data.text_share),
                     "MOOR's mean text-path weight share (w_TT + w_IT + w_TI)/Σw by image severity."))
    elif not scope.left_out("MOOR"):
        sec.missing.append("text-path share: MOOR/text_share.json not found")
    sec.missing += w.res.notes.get("figures", [])
    return sec


def _mode_section(data: RunData, mode: str, metric: str, w: _Writer, scope: RunScope) -> HtmlSection:
    rep, name, lab, plot = data.reports[mode], TARGET_NAMES.get(mode, mode), metric_label(metric), w.plot
    sec = HtmlSection(f"mode-{mode}", f"Mode {name}")
    if metric not in rep.conditions["clean"]:
        sec.missing.append(f"the {name} report has no {metric}")
        return sec
    sec.raw.append(w.table(mode_delta_table(rep, name, metric, key=mode)))
    add = additivity_table(rep, name, metric, key=mode)
    if add is None and not scope.no_additivity:
        sec.missing.append("no additivity: the report has no joint condition with both parts present")
    sec.raw.append(w.table(add))
    sec.raw.append(details(f"{lab} per condition (%)", w.table(mode_value_table(rep, name, metric, key=mode))))
    for fname, make, cap in (
        ("severity_curves", lambda: plot.severity_curves_figure(rep, mode, metric),
         f"{name}: Δ{lab} vs severity per operator, CI band; cliff/gradual from the report."),
        ("primitives", lambda: plot.primitive_bars_figure(rep, mode, metric, data.per_query.get(mode)),
         f"{name}: mean Δ{lab} by primitive and severity; dots = single operators."),
        ("additivity", lambda: plot.additivity_heatmap_figure(rep, mode, metric),
         f"{name}: additivity δ = Obs − Exp per pair and severity (drops), with CI."),
    ):
        sec.add_figure(w.figure(f"{mode}_{fname}", make, cap))
    if mode not in data.per_query:
        sec.missing.append(f"{mode}/per_query.csv not found: no CIs for aggregated bars, no per-query table")
    return sec


def _target_missed(run: dict) -> str:
    """How the image variants met the severity target, as run.json records it (empty when it does not)."""
    from ..core.records import TargetOutcome
    from ..corruptions.target import target_summary

    outcome = TargetOutcome.from_json(run.get("severity_target_outcome"))
    if outcome is None or not outcome.variants:
        return ""
    return f"; {target_summary(outcome, TARGET_FLAGGED)}"


def _damage_section(data: RunData, metric: str, w: _Writer) -> HtmlSection:
    """Drops against measured damage (SSIM, embedding drift) for the primary mode (:mod:`.damage`)."""
    sec = HtmlSection("damage", "Drops against measured damage")
    res = damage_analysis(data, metric)
    if res is None:
        sec.missing.append(f"{data.primary_mode}/per_query.csv holds no measured damage (ssim, drift_image, "
                           "drift_text rows): the run was made without measuring")
        return sec
    sec.raw += [w.table(t) for t in damage_tables(res)]
    if w.plot is not None:
        f = w.figure("damage", lambda: damage_figure(res),
                     f"{TARGET_NAMES.get(res.mode, res.mode)}: {metric_label(metric)} per bin of measured damage and "
                     "each operator's change per 0.1 of damage (paired with clean; bootstrap CI over queries).")
        sec.add_figure(f)
    return sec


def _contact_section(data: RunData, w: _Writer) -> HtmlSection:
    sec = HtmlSection("contact-sheet", "One query under every condition")
    sheet = _contact_sheet(data, w) if w.formats & {"html", "png"} else None
    if sheet is not None:
        w.write(w.out.figure("contact_sheet", "png"), sheet)
        w.res.figures.append("contact_sheet")
        sec.figures.append(HtmlFigure("contact_sheet", "One query under every image condition (clean first, "
                                      "then one row per operator, severities left to right; questions below).", sheet))
    sec.missing += w.res.notes.get("contact_sheet", [])
    return sec


def _per_query_files(data: RunData, w: _Writer) -> None:
    if not w.formats & {"csv", "parquet"}:
        return
    if not data.per_query:
        w.note("per_query", "no <MODE>/per_query.csv in the run: no per_query.csv/.parquet")
        return
    tables = {t: (pq.query_ids, {c: {m: pq.array(c, m) for m in per} for c, per in pq.values.items()})
              for t, pq in data.per_query.items()}
    parquet = w.out.combined_per_query_parquet if "parquet" in w.formats else None
    _, note = write_combined_per_query(tables, w.out.combined_per_query, parquet)
    w.res.files.append(w.out.combined_per_query)
    if note:
        w.note("per_query", note)
    elif parquet is not None:
        w.res.files.append(parquet)


def _missing_section(res: ReportResult) -> list[HtmlSection]:
    other = {k: v for k, v in res.notes.items() if k not in ("contact_sheet", "figures")}
    if not other:
        return []
    return [HtmlSection("missing", "Inputs not found or not used",
                        missing=[f"{k}: {m}" for k, msgs in other.items() for m in msgs])]


_KINDS = (("clean", "clean"), ("image_only", "image only"), ("text_only", "text only"), ("both", "both sides"))


def _with_ci(entry: Mapping[str, Any] | None, signed: bool = False) -> str:
    if not entry or entry.get("value") is None:
        return "–"
    out = minus(pct(entry["value"], signed))
    if entry.get("ci_low") is not None:
        out += f' <span class="ci">[{minus(pct(entry["ci_low"], signed))}, {minus(pct(entry["ci_high"], signed))}]</span>'
    return out


def _span(ci: Any) -> str:
    return "–" if not ci else f'<span class="ci">[{minus(pct(ci[0]))}, {minus(pct(ci[1]))}]</span>'


def _expected_table(body: Mapping[str, Any], metric: str, label: str, names: Mapping[str, str]) -> str:
    rows = []
    for t, per_metric in body.get("expected", {}).items():
        e = per_metric.get(metric)
        if e is None:
            continue
        d = body.get("delta_vs_clean", {}).get(t, {}).get(metric, {})
        name = names.get(t) or (f"fusion: {t[len(FUSION_PREFIX):]}" if t.startswith(FUSION_PREFIX) else t)
        rows.append([html.escape(name), minus(pct(d.get("clean"))), _with_ci(e), _with_ci(d, signed=True),
                     _span(e.get("ci_benchmark")), _span(e.get("ci_traffic"))])
    level = (body.get("ci") or {}).get("level")
    ci = "CI" if level is None else ci_label(level)
    return html_table(["target", f"clean {label}", f"expected {label}", "vs clean (points)", "CI, benchmark only",
                       "CI, traffic only"], rows, html.escape(f"{label} under your traffic (%): expected value with {ci}"),
                      "traffic-expected")


def _mix_table(body: Mapping[str, Any]) -> str:
    est = body.get("estimated", {})
    rows = []
    for c, w in sorted(body.get("weights", {}).items(), key=lambda kv: (kv[0] != "clean", -kv[1])):
        note = (f"estimated additively from {html.escape(est[c]['image'])} and {html.escape(est[c]['text'])}"
                if c in est else "")
        rows.append([f"<code>{html.escape(c)}</code>", minus(pct(w)), note])
    return html_table(["condition", "weight", ""], rows, "The mix: share of your traffic at each condition (%)",
                      "traffic-mix")


def _render_traffic(body: Mapping[str, Any], metric: str) -> str:
    """The fragment for a traffic.json body: the mix, the expected ``metric`` per target, MOOR's gain."""
    label, names = metric_label(metric), TARGET_NAMES
    q = body.get("queries", {})
    n = q.get("n") or 0
    split = ", ".join(f"{name} {minus(pct(q.get(k, 0) / n))}%" for k, name in _KINDS) if n else ""
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


def _stale_note(body: Mapping[str, Any], run_dir: str | os.PathLike) -> str:
    """What the view shows when traffic.json no longer matches the run's reports: no numbers (they
    would be read as this run's), only that it is stale and the command that refreshes it."""
    where = html.escape(str(run_dir))
    diag = html.escape(str(body.get("diagnose_dir") or "DIAGNOSE_DIR"))
    return ('<p class="missing">The traffic view is out of date: traffic.json was computed from other reports than '
            "the ones in this run directory (the run was redone since), so its numbers are not shown. Refresh it "
            f"with <code>snapbench report {where} --traffic {diag}</code>.</p>")


def traffic_fragment(run_dir: str | os.PathLike, *, metric: str = "hit@1",
                     traffic_dir: str | os.PathLike | None = None) -> str | None:
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
        check_schema_version(body, TRAFFIC_JSON, path)
        stale = body.get("reports") != report_digests(run_dir)
    except (SnapbenchError, OSError) as exc:
        return f'<p class="missing">{html.escape(str(exc))}</p>'
    if stale:
        return _stale_note(body, run_dir)
    return _render_traffic(body, metric)
