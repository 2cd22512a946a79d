"""Writing the comparison report into its folder (names: :class:`snapbench.layout.CompareDir`).

Always ``compare.json`` and ``findings.json``; per the formats asked (those of ``snapbench
report``): ``md``/``tex`` tables of every (target, metric), ``csv``/``parquet`` of every record
list, ``png``/``pdf`` figures of every target for the headline metric (matplotlib: without it a
note replaces them), ``html`` the self-contained page (:mod:`.page`).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..atomic import atomic_path, write_bytes_atomic, write_text_atomic
from ..errors import ConfigError
from ..htmlpage import HtmlFigure
from ..install_hint import install_hint
from ..jsonable import dumps
from ..layout import CompareDir, primary_target
from ..report.tables import Table
from .findings import compare_findings
from .jsonfile import RECORD_TYPES, compare_json, write_compare_json
from .multiple import CORRECTION_NAMES
from .tables import delta_table, pairs_table, ranking_table, value_table
from .view import MetricView

if TYPE_CHECKING:
    from .options import CompareOptions
    from .runs import CompareResult

__all__ = ["Written", "write_outputs"]



@dataclass
class Written:
    """What the writer produced for the page: tables and figures per target (headline metric)."""

    tables: dict[str, list[Table]] = field(default_factory=dict)
    figures: dict[str, list[HtmlFigure]] = field(default_factory=dict)
    findings: list = field(default_factory=list)


def ordered_targets(targets: Sequence[str]) -> list[str]:
    """``targets`` with the primary one first (:func:`snapbench.layout.primary_target`)."""
    first = primary_target(targets)
    return [first] + [t for t in targets if t != first]


def _runs(res: CompareResult) -> list[dict[str, Any]]:
    return [{"name": s.name, "path": str(s.path), "kind": s.kind, "encoder": s.run.get("encoder"),
             "variants": s.variants, "dataset": s.run.get("dataset"),
             "parent": None if s.parent is None else str(s.parent)} for s in res.sources]


def _settings(res: CompareResult) -> dict[str, Any]:
    st = res.settings
    return {"targets": st.targets, "metrics": st.metrics, "metric": st.metric, "resamples": st.resamples,
            "seed": st.seed, "ci": st.ci}


def _cell(v: Any) -> Any:
    return "" if isinstance(v, float) and math.isnan(v) else repr(v) if isinstance(v, float) else v


def _write_records(rec: dict[str, Any], out: CompareDir, fmts: set[str], files: list[Path], notes: list[str]) -> None:
    """One CSV (and Parquet with pyarrow) per record list: every per-model and per-pair number."""
    pa = pq = None
    if "parquet" in fmts:
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            notes.append(f"pyarrow is not installed, so no Parquet copies were written ({install_hint('report')})")
    for name, rtype in RECORD_TYPES.items():
        cols = [f.name for f in fields(rtype)]
        if "csv" in fmts:
            buf = io.StringIO()
            w = csv.writer(buf, lineterminator="\n")
            w.writerow(cols)
            w.writerows([_cell(r[c]) for c in cols] for r in rec[name])
            write_text_atomic(out.record_file(name, "csv"), buf.getvalue())
            files.append(out.record_file(name, "csv"))
        if pa is not None:
            types = {"float": pa.float64(), "int": pa.int64(), "str": pa.string()}
            schema = pa.schema([(f.name, types[str(f.type)]) for f in fields(rtype)])
            table = pa.table({c: [r[c] for r in rec[name]] for c in cols}, schema=schema)
            with atomic_path(out.record_file(name, "parquet")) as tmp:
                pq.write_table(table, tmp)
            files.append(out.record_file(name, "parquet"))


def _write_tables(views: dict, res: CompareResult, out: CompareDir, fmts: set[str], files: list[Path],
                  written: Written, opts: CompareOptions) -> None:
    reference = res.comparison.meta.get("reference", "")
    for (t, m), v in views.items():
        stem = CompareDir.stem(t, m)
        tables = [value_table(v, stem), delta_table(v, stem), ranking_table(v, stem, reference),
                  pairs_table(v, stem, CORRECTION_NAMES[opts.correction])]
        for tab in tables:
            for ext, render in (("md", tab.to_markdown), ("tex", tab.to_latex)):
                if ext in fmts:
                    write_text_atomic(out.table(tab.name, ext), render())
                    files.append(out.table(tab.name, ext))
        if m == res.settings.metric:
            written.tables[t] = tables


def _write_figures(views: dict, res: CompareResult, out: CompareDir, fmts: set[str], files: list[Path],
                   written: Written, notes: list[str], dpi: int) -> None:
    if not fmts & {"png", "pdf", "html"}:
        return
    try:
        from ..report.figures import fig_to_bytes, require_matplotlib
        from .figures import FIGURES

        require_matplotlib()
    except ConfigError as e:
        notes.append(f"no figures: {e}")
        return
    for t in res.settings.targets:
        v = views[(t, res.settings.metric)]
        figs = written.figures.setdefault(t, [])
        for name, (make, caption) in FIGURES.items():
            fig = make(v)
            if fig is None:
                continue
            stem = f"{CompareDir.stem(t, v.metric)}_{name}"
            png = fig_to_bytes(fig, "png", dpi)
            if fmts & {"png", "html"}:
                write_bytes_atomic(out.figure(stem, "png"), png)
                files.append(out.figure(stem, "png"))
            if "pdf" in fmts:
                write_bytes_atomic(out.figure(stem, "pdf"), fig_to_bytes(fig, "pdf", dpi))
                files.append(out.figure(stem, "pdf"))
            figs.append(HtmlFigure(stem, caption(v) if callable(caption) else caption, png))


def write_outputs(res: CompareResult, opts: CompareOptions) -> Written:
    """Write every output of ``res`` into ``res.out`` (appending to ``res.files`` and ``res.notes``)."""
    from .page import render_page

    out, fmts, st = CompareDir(res.out), set(opts.formats), res.settings
    views = MetricView.all_of(res.comparison, st.ci, opts.correction)
    written = Written()
    rec = res.comparison.records()
    _write_records(rec, out, fmts, res.files, res.notes)
    _write_tables(views, res, out, fmts, res.files, written, opts)
    _write_figures(views, res, out, fmts, res.files, written, res.notes, opts.dpi)
    primary = [views[(t, st.metric)] for t in ordered_targets(st.targets)]
    written.findings = compare_findings(primary, res.sources, res.comparison.meta.get("reference", ""),
                                        CORRECTION_NAMES[opts.correction])
    write_text_atomic(out.findings, dumps([{"id": f.id, "text": f.text, "values": f.values}
                                           for f in written.findings]) + "\n")
    res.files.append(out.findings)
    write_compare_json(out.compare_json, compare_json(res.comparison, _runs(res), _settings(res), res.notes, rec))
    res.files.append(out.compare_json)
    if "html" in fmts:
        write_text_atomic(out.html, render_page(res, written, ordered_targets(st.targets)))
        res.files.append(out.html)
    return written
