"""A report on the terminal (rich tables that fit the width) and as a table file (CSV / Markdown).

Reports are :class:`snapbench.core.records.Report` objects, read and written by
:func:`snapbench.store.rundir.read_report` / :func:`~snapbench.store.rundir.write_report` (strict JSON, undefined values as null, atomic).  Sign conventions are said in
every table title: paired Δ = condition − clean (negative = worse); additivity drops = clean −
condition (positive = worse).

The table ``snapbench run`` prints when it is done: a run's headline (:func:`snapbench.render.aggregate.write_headline`) on the terminal.

Read from ``headline.json`` (never recomputed), so the printed numbers are the file's: values in %,
differences in points, one decimal (:func:`snapbench.render.fmt.pct`).  A number and its CI are two
lines of one cell, so that the table fits 120 columns; rows are ruled, columns split by ``│`` (a row
reads back by joining each column's lines).

What ``snapbench compare`` prints when it is done: per target, the ranking of the headline metric
with rank intervals and tiers, and the pairs of models that are told apart.

Everything comes from the comparison's records (the ones compare.json holds) through
:class:`~snapbench.render.compare.MetricView` and its one verdict rule (:meth:`MetricView.overall_apart`,
the rule of the tiers, the pairs table and the findings); nothing is recomputed.  Numbers are shown as
the page's tables show them: values in %, differences in points, one decimal.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..compare.groups import GROUP_ALL
from ..compare.records import Comparison
from ..core.conditions import parse_condition
from ..core.errors import EvaluationInputError
from ..core.records import Report
from ..store.atomic import check_output_file, open_text_atomic
from .compare import MetricView, finite, pairs_adjustment
from .console import stdout_console
from .fmt import DASH, DROP_SIGN, PAIRED_SIGN, ci_label, ci_text, p_text, pct, points
from .tables import kind_means, metric_label, report_labelled

__all__ = ['check_table_path', 'demo_table', 'print_additivity', 'print_report', 'write_table', 'headline_table', 'ranking_table', 'print_comparison', 'results_console']

#: What a table file may end in (:func:`write_table`).
_TABLE_SUFFIXES: tuple[str, ...] = (".csv", ".md", ".markdown")
#: Width of printed tables when the output is not a terminal (a pipe, a file) and COLUMNS is unset.
_PIPE_WIDTH = 120
_PREFERRED = ("hit@1", "hit@5", "recall@10", "ndcg@10", "mrr")
#: Condition kind -> its column in :func:`demo_table` (named as condition ids begin).
_KIND_COLUMNS = {"image": "img", "text": "txt", "joint": "joint"}
_LIMITED = "† depth-limited (the runs are shallower than the metric; values are lower bounds)"


def _shown(report: Report, show: Sequence[str] | None) -> list[str]:
    ms = report.metrics
    if show:
        return [m for m in show if m in ms]
    return [m for m in _PREFERRED if m in ms] or ms[:6]


def results_console(console=None):
    """``console``, else a console on stdout for result tables (a fixed width when piped)."""
    if console is not None:
        return console
    con = stdout_console(markup=False, highlight=False)
    if con.is_terminal or "COLUMNS" in os.environ:
        return con
    # piped output: rich would cut to 80 columns; one fixed, readable width instead
    return stdout_console(width=_PIPE_WIDTH, markup=False, highlight=False)


def _limited(report: Report) -> set[str]:
    return set(report.meta.get("depth_limited_metrics") or [])


def print_report(report: Report, *, primary: str = "hit@1", show: Sequence[str] | None = None, console=None) -> None:
    """The metric values per condition (percent), then per condition the Δ of ``primary`` with its CI,
    the Holm-adjusted p, the stability classes and the rank displacement; groups; additivity."""
    con = results_console(console)
    metrics = _shown(report, show)
    if primary not in report.metrics:
        primary = metrics[0]
    con.print(_values_table(report, metrics))
    if report.paired:
        con.print(_paired_table(report, primary))
    limited = _limited(report)
    if limited:
        con.print(f"{_LIMITED}: {', '.join(sorted(limited))}")
    if report.groups:
        con.print(_rich(f"per group — {primary} in %, {PAIRED_SIGN}, with CI", *_groups_grid(report, primary),
                        no_wrap=False))
    con.print(queries_line(report))
    labels: dict[str, list[str]] = {}
    for op, per in report.severity_curves.items():
        curve = per.get(primary)
        labels.setdefault(curve.label if curve else "n/a", []).append(op)
    if labels:
        con.print(f"severity response ({primary}): " + "; ".join(f"{k}: {', '.join(v)}" for k, v in labels.items()))
    drag = report.coarse_text_drag
    if drag:
        con.print(f"coarse-text drag (hit@1, clean): {pct(drag.value, True)} {ci_text(drag.ci)} — joint = {drag.joint}")
    if report.additivity:
        print_additivity(report, metric=primary, console=con)


def queries_line(report: Report) -> str:
    """``"11 of 12 queries count (1 has no relevant item)"``: the denominator of the ranking metrics."""
    n, ex, zero = report.n_queries, report.n_excluded_zero_gt, report.meta.n_zero_gt
    if not report_labelled(report):
        return (f"no relevance labels: all {n} queries count in the label-free measures (how far each ranking "
                "moved from the clean one: overlap@k, rbo, flip@1), which say nothing about correctness")
    if ex:
        return f"{n - ex} of {n} queries count ({ex} ha{'s' if ex == 1 else 've'} no relevant item)"
    if zero:
        return f"all {n} queries count ({zero} without a relevant item count{'s' if zero == 1 else ''} as 0)"
    return f"all {n} queries count"


def _rich(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]], *, no_wrap: bool = True):
    """A ``rich.table.Table``: the first column (row names, never wrapped) left, the numbers right."""
    from rich.table import Table

    t = Table(title=title)
    t.add_column(columns[0], no_wrap=True)
    for name in columns[1:]:
        t.add_column(name, justify="right", no_wrap=no_wrap)
    for r in rows:
        t.add_row(*r)
    return t


def _markdown(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The same table as Markdown lines (numbers right-aligned)."""
    return ["| " + " | ".join(columns) + " |", "|---|" + "---:|" * (len(columns) - 1),
            *("| " + " | ".join(r) + " |" for r in rows)]


def _values_table(report: Report, metrics: list[str]):
    limited = _limited(report)
    return _rich("snapbench evaluate — metric values in %", ["condition", *(m + (" †" if m in limited else "")
                                                                          for m in metrics)],
                 [[c, *(pct(vals.get(m)) for m in metrics)] for c, vals in report.conditions.items()], no_wrap=False)


def _has_displacement(report: Report) -> bool:
    """Rank displacement needs a first positive (labels): shown only when some condition has a mean."""
    return bool(report.rank_displacement) and report_labelled(report) and any(
        d.mean is not None for d in report.rank_displacement.values())  # type: ignore[union-attr]


def _extra_columns(report: Report) -> dict[str, dict[str, str]]:
    """Stability classes and rank displacement per condition, as printable cells (column -> cells)."""
    cols: dict[str, dict[str, str]] = {}
    if report.stability:
        m = next(iter(report.stability.values())).metric
        cols[f"stable/drag/\nwrong/boost\n({m})"] = {
            c: f"{s.stably_correct}/{s.drag}/{s.persistently_wrong}/{s.boost}" for c, s in report.stability.items()
        }
    if _has_displacement(report):
        cols["rank\ndisplacement\n(mean, CI)"] = {
            c: "" if d.mean is None else f"{points(d.mean, signed=True, scale=1)} {ci_text(d.ci, scale=1)}"
            for c, d in report.rank_displacement.items()
        }
    return cols


def _paired_title(report: Report, primary: str) -> str:
    """The paired table's title: the columns it has, no others (a report without labels has no
    stability classes or first-positive ranks, which need them)."""
    parts = [f"paired against clean — {primary}: {PAIRED_SIGN} (points), CI, Holm-adjusted p"]
    if report.stability:
        parts.append("stability: stably correct / drag / persistently wrong / boost (queries)")
    if _has_displacement(report):
        parts.append("rank displacement: corrupted − clean rank of the first positive")
    if not report_labelled(report):
        parts.append("no relevance labels: label-free measures of the corrupted ranking against the clean one")
    return "; ".join(parts)


def _paired_cells(report: Report, c: str, primary: str) -> list[str]:
    pr = report.paired.get(c, {}).get(primary)
    return [pct(pr.delta, True), ci_text(pr.ci), p_text(pr.p)] if pr else ["", "", ""]


def _paired_table(report: Report, primary: str):
    extra = _extra_columns(report)
    return _rich(_paired_title(report, primary), ["condition", f"Δ{primary}", "CI", "p\n(Holm)", *extra],
                 [[c, *_paired_cells(report, c, primary), *(e.get(c, "") for e in extra.values())]
                  for c in report.paired])


def _group_cell(report: Report, group: str, c: str, primary: str) -> str:
    g = report.groups[group]  # type: ignore[index]
    if c == "clean":
        return pct(g.conditions.get(c, {}).get(primary))
    pr = g.paired.get(c, {}).get(primary)
    return f"{pct(pr.delta, True)} {ci_text(pr.ci)}" if pr else ""


def _groups_grid(report: Report, primary: str) -> tuple[list[str], list[list[str]]]:
    """Per group: the primary metric on clean and its Δ (with CI) under each condition."""
    groups = report.groups or {}
    return (["condition", *(f"{g} (n={e.n_queries})" for g, e in groups.items())],
            [[c, *(_group_cell(report, g, c, primary) for g in groups)] for c in report.conditions])


def _additivity_grid(report: Report, metric: str = "hit@1") -> tuple[list[str], list[list[str]]]:
    """Rows (joint, Exp, Obs, δ, CI(δ)) then per-pair, per-severity and overall means (drops)."""
    def row(label: str, x) -> list[str]:
        return [label, pct(x.exp, True), pct(x.obs, True), pct(x.delta, True), ci_text(x.ci)]

    rows = [row(j, e[metric]) for j, e in report.additivity.items() if metric in e]
    summ = report.additivity_summary
    for section, label in ((summ.by_pair, "mean {} (over severities)"), (summ.by_severity, "mean {} (over pairs)")):
        rows += [row(label.format(key), e[metric]) for key, e in section.items() if metric in e]
    if summ.mean and metric in summ.mean:
        rows.append(row("mean (all joint conditions)", summ.mean[metric]))
    return ["joint condition", "Exp drop", "Obs drop", "δ", "CI(δ)"], rows


def _additivity_title(metric: str) -> str:
    return (f"additivity of joint corruptions — {metric} {DROP_SIGN} (points); Exp = Δ_I + Δ_T, "
            "Obs = the joint drop, δ = Obs − Exp (> 0 super-additive)")


def print_additivity(report: Report, *, metric: str = "hit@1", console=None) -> None:
    """The additivity table: Exp = Δ_I + Δ_T, Obs, δ = Obs − Exp with CI (drops in points)."""
    con = results_console(console)
    columns, rows = _additivity_grid(report, metric)
    skipped = report.additivity_skipped or {}
    if not rows:
        con.print("no joint condition with both parts present"
                  + (": " + "; ".join(f"{k} ({v})" for k, v in skipped.items()) if skipped else ""))
        return
    con.print(_rich(_additivity_title(metric), columns, rows))
    if skipped:
        con.print("skipped: " + "; ".join(f"{k} ({v})" for k, v in skipped.items()))


def demo_table(reports: Mapping[str, Report], metric: str = "hit@1") -> Any:
    """What ``snapbench demo`` prints when it is done: per target, the clean ``metric`` and its mean per
    condition kind over the conditions the target reads (:func:`~snapbench.render.tables.kind_means`,
    the report's summary table: an image condition cannot move T→T, nor a text condition I→I, so
    those cells are ``–``), the mean super-additivity gap and the coarse-text drag vs I→I; below it, how
    many queries count (:func:`queries_line`)."""
    from rich.table import Table

    kinds = [parse_condition(c).kind for c in dict.fromkeys(c for r in reports.values() for c in r.condition_ids)]
    first = next(iter(reports.values()), None)  # every target evaluates the same queries
    table = Table(title=f"demo: mean {metric} (SnapBench {metric_label(metric)}, %) by condition kind, over the "
                        "conditions each target reads (–: none); δ = super-additivity gap; drag vs I→I",
                  caption=None if first is None else queries_line(first), caption_justify="left")
    for col in ("mode", "clean", *(f"{name} ({kinds.count(k)})" for k, name in _KIND_COLUMNS.items()), "mean δ", "drag"):
        table.add_column(col, justify="right")
    for target, rep in reports.items():
        means = kind_means(rep, metric, target)
        add = (rep.additivity_summary.mean or {}).get(metric)
        drag = rep.coarse_text_drag  # a drag of hit@1 only: "–" in a table of another metric
        table.add_row(target, *(pct(means[k]) for k in ("clean", *_KIND_COLUMNS)), pct(add.delta if add else None),
                      pct(drag.value if drag and drag.metric == metric else None))
    return table


_CSV_HEADER = ["condition", "metric", "value", "delta", "ci_lo", "ci_hi", "p", "p_raw", "group", "depth_limited"]


def _csv_rows(report: Report) -> list[list]:
    """The long table: every condition x metric (value, Δ vs clean, CI, Holm p, raw p), then per group
    the same (column ``group``), then per condition the stability classes (metric
    ``stability:<class>``, value = number of queries), the rank displacement (metric
    ``rank_displacement``, value = mean, with CI) and per joint condition the additivity (metric
    ``additivity:<metric>``, value = Obs, delta = δ = Obs − Exp, with CI).  ``depth_limited`` is 1
    for a metric the runs were too shallow for."""
    limited = _limited(report)
    rows: list[list] = [_CSV_HEADER]

    def block(conds, paired, group: str) -> None:
        for c, vals in conds.items():
            for m, v in vals.items():
                pr = paired.get(c, {}).get(m)
                lo, hi = pr.ci if pr else (None, None)
                rows.append([c, m, v, pr.delta if pr else None, lo, hi, getattr(pr, "p", None),
                             getattr(pr, "p_raw", None), group, int(m in limited)])

    block(report.conditions, report.paired, "")
    for g, e in (report.groups or {}).items():
        block(e.conditions, e.paired, g)
    for c, s in (report.stability or {}).items():
        for cls in ("stably_correct", "drag", "persistently_wrong", "boost"):
            rows.append([c, f"stability:{cls}", getattr(s, cls), None, None, None, None, None, "", 0])
    for c, d in (report.rank_displacement or {}).items():
        rows.append([c, "rank_displacement", d.mean, None, d.ci[0], d.ci[1], None, None, "", 0])
    for j, per in report.additivity.items():
        for m, e in per.items():
            rows.append([j, f"additivity:{m}", e.obs, e.delta, e.ci[0], e.ci[1], None, None, "", int(m in limited)])
    return rows


def write_table(report: Report, path: str | Path, *, primary: str = "hit@1") -> None:
    """``.csv``: long format, complete (see :func:`_csv_rows`).  ``.md``: a readable wide table (values in
    %, Δ of ``primary`` with CI and p, stability classes, rank displacement; † marks depth-limited
    metrics), per-group Δ, additivity.  Written atomically."""
    p = check_table_path(path)
    if p.suffix.lower() == ".csv":
        with open_text_atomic(p, newline="") as fh:
            csv.writer(fh).writerows(_csv_rows(report))
        return
    with open_text_atomic(p) as fh:
        fh.write("\n".join(_markdown_lines(report, primary)) + "\n")


def check_table_path(path: str | Path) -> Path:
    """``path`` as a table file :func:`write_table` can write (``.csv`` or ``.md``, not a folder, in a
    writable place); checked before the evaluation, so a wrong name costs nothing."""
    p = Path(path)
    if p.suffix.lower() not in _TABLE_SUFFIXES:
        raise EvaluationInputError("a table file must end in .csv or .md", path=p, param="table_out")
    return check_output_file(p, param="table_out")


def _one_line(header: str) -> str:
    """A terminal header (wrapped with newlines) on one line."""
    return header.replace("/\n", "/").replace("\n", " ")


def _markdown_lines(report: Report, primary: str = "hit@1") -> list[str]:
    """The Markdown table file (see :func:`write_table`)."""
    metrics = report.metrics
    if primary not in metrics:
        primary = metrics[0]
    limited = _limited(report)
    extra = _extra_columns(report)
    lines = _markdown(["condition", *(m + (" †" if m in limited else "") for m in metrics), f"Δ{primary}", "CI",
                       "p (Holm)", *(_one_line(n) for n in extra)],
                      [[c, *(pct(vals.get(m)) for m in metrics), *_paired_cells(report, c, primary),
                        *(e.get(c, "") for e in extra.values())] for c, vals in report.conditions.items()])
    lines += ["", f"Values in %; Δ{primary} = condition − clean in points (negative = worse) with its paired "
                  f"bootstrap CI; {queries_line(report)}."]
    if limited:
        lines += ["", f"{_LIMITED}: {', '.join(sorted(limited))}"]
    groups = report.groups or {}
    if groups:
        lines += ["", f"Per group ({primary} in %, {PAIRED_SIGN}, with CI)", "",
                  *_markdown(*_groups_grid(report, primary))]
    columns, rows = _additivity_grid(report, primary)
    if rows:
        lines += ["", f"Additivity ({primary} {DROP_SIGN}, in points; Exp = Δ_I + Δ_T, δ = Obs − Exp, "
                      "> 0 super-additive)", "", *_markdown(columns, rows)]
    return lines


def _limit_line(limit: dict[str, Any] | None) -> str | None:
    """``"--limit: the first 5 of 12 queries only ..."`` when the run saw part of its dataset."""
    if not limit:
        return None
    return (f"--limit: the first {limit.get('queries')} of {limit.get('of')} queries only — a quick look, "
            "not the dataset's result")


def _with_ci(x: dict[str, Any] | None, key: str) -> str:
    if not x:
        return DASH
    return f"{pct(x.get(key), True)}\n{ci_text(x.get('ci'))}"


def _operator(x: dict[str, Any] | None) -> str:
    if not x:
        return DASH
    return f"{x['operator'] or 'all equal'}\n{pct(x.get('delta'), True)}"


def _moor(x: dict[str, Any] | None) -> str:
    if not x:
        return ""
    return f"{pct(x.get('gain'), True)}\n{ci_text(x.get('ci'))}\nvs {x['baseline']}"


def _n_conditions(rows: Sequence[dict[str, Any]]) -> str:
    """``"6 each"`` or ``"IT2IT 6, T2T 3, …"``: how many conditions each target's mean is over."""
    # a target that reads none of the run's conditions has no mean: over 0 conditions
    ns = {r["target"]: (r.get("mean_delta") or {}).get("n_conditions") or 0 for r in rows}
    if len(set(ns.values())) == 1:
        return f"{next(iter(ns.values()))} each"
    return ", ".join(f"{t} {n}" for t, n in ns.items())


def uneven_conditions_note(headlines: Mapping[str, dict[str, Any]]) -> str | None:
    """After the tables of one run of several encoders (``headlines``: encoder name -> its headline.json):
    a note when a target's mean Δ is over different conditions for different encoders (one without an
    image side runs no image or joint condition), so that the tables are not read side by side."""
    counts: dict[str, dict[str, Any]] = {}
    for name, headline in headlines.items():
        for row in headline.get("targets", []):
            counts.setdefault(row["target"], {})[name] = (row.get("mean_delta") or {}).get("n_conditions") or 0
    uneven = {t: ns for t, ns in counts.items() if len(ns) > 1 and len(set(ns.values())) > 1}
    if not uneven:
        return None
    which = "; ".join(f"{t}: " + ", ".join(f"{n} {k}" for n, k in ns.items()) for t, ns in uneven.items())
    return (f"note: the encoders' mean Δ are over different conditions ({which}), so their tables are not "
            "comparable row by row; 'snapbench compare' compares them over the conditions they share")


def _queries(headline: dict[str, Any], lab: str) -> str:
    """``"12 queries (11 count for R@1)"``; every query counts in a label-free measure."""
    n, counted = headline.get("n_queries"), headline.get("n_counted")
    if headline.get("labelled", True) and counted is not None and counted != n:
        k = n - counted
        return f"{n} queries ({counted} count for {lab}; {k} ha{'s' if k == 1 else 've'} no relevant item)"
    return f"{n} queries"


def headline_table(headline: dict[str, Any], *, title: str = "snapbench run") -> Any:
    """A ``rich.table.Table``: one row per target (see the module docstring).  A run without labels
    shows the label-free measures (overlap@10, then rbo and flip@1 when headline.json has them)."""
    from rich import box
    from rich.table import Table

    metric = headline.get("metric", "hit@1")
    labelled = headline.get("labelled", True) is not False
    extra = list(headline.get("extra") or [])
    lab = metric_label(metric)
    level = ci_label(float(headline.get("ci_level", 0.95)))
    rows = headline.get("targets", [])
    # a label-free measure of the clean ranking against itself is 100 (flip 0) by definition: not shown
    clean = list(dict.fromkeys(m for r in rows for m in r.get("clean", {}))) if labelled else []
    joint = any(r.get("additivity") for r in rows)
    moor = any(r.get("moor_vs_fixed") for r in rows)
    reads = ("mean Δ over the corrupted conditions that corrupt a side of the query the target reads (an image "
             f"condition cannot move T→T; joint conditions count): {_n_conditions(rows)}; ")
    ops = "worst/mildest: operator with the lowest/highest mean Δ over its severities; "
    # the caption explains the columns shown, no others
    if labelled:
        head = f"{_queries(headline, lab)}; values in %, Δ in points (condition − clean, negative = worse), [{level}]; "
    else:
        head = (f"{_queries(headline, lab)}, no relevance labels: the label-free measures ({', '.join([metric, *extra])}) "
                "of each corrupted ranking against the clean ranking of the same query (clean = 100 overlap and rbo, "
                f"0 flips); Δ in points (corrupted − clean; overlap/rbo: negative = the ranking moved, flip@1: the "
                f"share of top-1 items that changed), [{level}]; ")
    caption = [head + reads + ops
               + ("δ = super-additivity gap of the joint conditions (> 0: worse than the sum); " if joint else "")
               + (f"MOOR − best fixed fusion: mean {lab} gain over the shared conditions; " if moor else "")
               + f"primary target: {headline.get('primary_target')}"]
    limit = _limit_line(headline.get("limit"))
    if limit:
        caption.insert(0, limit)
    what = lab if labelled else f"{lab} (no labels: label-free measures)"
    t = Table(title=f"{title} — {what}" + (f" ({limit.split(' — ')[0]})" if limit else ""),
              caption="\n".join(caption), caption_justify="left", box=box.MINIMAL, show_lines=True)
    # numbers may wrap on a narrow terminal (fold), never be cut to "…"; a target name and an
    # operator name stay whole (an operator's name and its Δ are two lines of one cell)
    t.add_column("target", no_wrap=True)
    for m in clean:
        t.add_column(f"clean\n{metric_label(m)}", justify="right", overflow="fold", min_width=len(metric_label(m)))
    for m in (metric, *extra):  # a long name (overlap@10) on a line of its own
        name = metric_label(m)
        t.add_column(f"mean Δ{name}\n[CI]" if len(name) <= 4 else f"mean Δ\n{name}\n[CI]", justify="right",
                     overflow="fold", min_width=len(name))  # a metric's name is never cut in two
    for name in ("worst\noperator", "mildest\noperator"):
        t.add_column(name, justify="right", no_wrap=True)
    if joint:
        t.add_column("δ\n[CI]", justify="right", overflow="fold")
    if moor:
        t.add_column("MOOR − best\nfixed fusion", justify="right", overflow="fold")
    for r in rows:
        cells = [r["target"], *(pct(r.get("clean", {}).get(m)) for m in clean), _with_ci(r.get("mean_delta"), "value"),
                 *(_with_ci((r.get("extra") or {}).get(m), "value") for m in extra),
                 _operator(r.get("worst")), _operator(r.get("mildest"))]
        if joint:
            cells.append(_with_ci(r.get("additivity"), "delta"))
        if moor:
            cells.append(_moor(r.get("moor_vs_fixed")))
        t.add_row(*cells)
    return t


def _rank(x: float | None) -> str:
    x = finite(x)
    return "–" if x is None else f"{x:g}"


def _tier_footnote(views: Sequence[MetricView]) -> str:
    """When two models share a tier although their rank intervals do not overlap, what each column rests on
    (docs/compare.md: the rank interval is the bootstrap's alone, the tier needs the paired test too), so the
    two do not read as a contradiction; "" otherwise."""
    for v in views:
        r = [v.ranking[m] for m in v.ranked() if m in v.ranking]
        if any(a.group == b.group and (finite(a.rank_high) or 0) < (finite(b.rank_low) or 0) for a in r for b in r):
            return ("; rank intervals that do not overlap within one tier: the bootstrap's resamples never "
                    "swapped the two models, but their paired difference is not told apart (a tier needs its "
                    f"adjusted p < {1 - v.level:.2g} and its CI excluding 0; the tier is the statement to rely on)")
    return ""


def ranking_table(views: Sequence[MetricView]) -> Any:
    """A ``rich.table.Table``: per target (a section each), the models from the best rank down, with the
    clean value, the mean Δ over the corrupted conditions the target reads (the ranking's score) and its CI, the rank,
    its interval and the tier."""
    from rich import box
    from rich.table import Table

    lab = metric_label(views[0].metric)
    level = ci_label(views[0].level)
    t = Table(title=f"snapbench compare — ranking by mean Δ{lab} over the corrupted conditions each target reads "
                    f"(rank 1 = smallest drop{views[0].direction_note})",
              caption=f"values in %, Δ in points (condition − clean, {'negative' if views[0].sign > 0 else 'positive'} "
                      f"= worse); CI and rank interval: {level}; a tier holds the models not told apart from its first "
                      f"model{_tier_footnote(views)}",
              caption_justify="left", box=box.MINIMAL)
    t.add_column("target", no_wrap=True)
    t.add_column("rank", justify="right", no_wrap=True)
    t.add_column("model", overflow="fold")
    for name in (f"clean {lab}", f"mean Δ{lab}", "CI", "rank interval", "tier"):
        t.add_column(name, justify="right", no_wrap=True)
    for i, v in enumerate(views):
        if i:
            t.add_section()
        for m in v.ranked():
            r, clean, mean = v.ranking.get(m), v.values.get((m, "clean")), v.values.get((m, GROUP_ALL))
            t.add_row(
                v.target, _rank(r.rank if r else None), v.label(m), pct(finite(clean.value) if clean else None),
                pct(finite(mean.delta) if mean else None, True),
                ci_text([finite(mean.ci_low), finite(mean.ci_high)]) if mean else "–",
                "–" if r is None or finite(r.rank_low) is None or finite(r.rank_high) is None
                else f"{_rank(r.rank_low)}–{_rank(r.rank_high)}",
                "–" if r is None else str(r.group))
    return t


def _told_apart_lines(v: MetricView) -> list[str]:
    """For one target: one line per pair told apart on the mean over the corrupted conditions it reads (the more
    robust model first, with ΔA − ΔB and its CI), or one line saying none of its pairs is."""
    apart, total = [], 0
    for (a, b, c), r in v.pairs.items():
        if c != GROUP_ALL:
            continue
        total += 1
        if v.overall_apart(a, b):
            better, worse, sign = (a, b, 1) if v.sign * r.diff > 0 else (b, a, -1)
            lo, hi = sorted((sign * r.ci_low, sign * r.ci_high))
            apart.append(f"  {v.target}: {v.label(better)} > {v.label(worse)}  difference of mean Δ "
                         f"{pct(sign * r.diff, True)} points {ci_text([lo, hi])}")
    if not apart:
        return [f"  {v.target}: none of {total} pair{'s' if total != 1 else ''} told apart"]
    return apart


def print_comparison(comparison: Comparison, targets: Sequence[str], metric: str, level: float, correction: str,
                     console: Any) -> None:
    """The ranking table of ``metric`` (every target) and the pairs told apart."""
    all_views = MetricView.all_of(comparison, level, correction)
    views = [all_views[(t, metric)] for t in targets if (t, metric) in all_views]
    if not views:
        return
    console.print(ranking_table(views))
    adjusted = pairs_adjustment(len(views[0].overall_p), correction)  # one pair: nothing to adjust over
    console.print(f"pairs told apart on {metric_label(metric)} (more robust > less robust; mean over the corrupted "
                  f"conditions each target reads, p < {1 - level:.2g} {adjusted}, and CI excluding 0):",
                  markup=False, highlight=False)
    for v in views:
        for line in _told_apart_lines(v):
            console.print(line, markup=False, highlight=False)
