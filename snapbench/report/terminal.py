"""The table ``snapbench run`` prints when it is done: a run's headline (:mod:`.headline`) on the terminal.

Read from ``headline.json`` (never recomputed), so the printed numbers are the file's: values in %,
differences in points, one decimal (:func:`snapbench.evaluate.fmt.pct`).  A number and its CI are two
lines of one cell, so that the table fits 120 columns; rows are ruled, columns split by ``│`` (a row
reads back by joining each column's lines).
"""

from __future__ import annotations

from typing import Any

from ..evaluate.fmt import DASH, ci_label, ci_text, pct
from .tables import metric_label

__all__ = ["headline_table", "limit_line"]


def limit_line(limit: dict[str, Any] | None) -> str | None:
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


def headline_table(headline: dict[str, Any], *, title: str = "snapbench run") -> Any:
    """A ``rich.table.Table``: one row per target (see the module docstring)."""
    from rich import box
    from rich.table import Table

    metric = headline.get("metric", "hit@1")
    lab = metric_label(metric)
    level = ci_label(float(headline.get("ci_level", 0.95)))
    rows = headline.get("targets", [])
    clean = list(dict.fromkeys(m for r in rows for m in r.get("clean", {})))
    n = headline.get("n_queries")
    joint = any(r.get("additivity") for r in rows)
    moor = any(r.get("moor_vs_fixed") for r in rows)
    # the caption explains the columns shown, no others
    caption = [f"{n} queries; values in %, Δ in points (condition − clean, negative = worse), [{level}]; "
               f"mean Δ over every corrupted condition; worst/mildest: operator with the lowest/highest mean Δ "
               f"over its severities; "
               + ("δ = super-additivity gap of the joint conditions (> 0: worse than the sum); " if joint else "")
               + (f"MOOR − best fixed fusion: mean {lab} gain over the shared conditions; " if moor else "")
               + f"primary target: {headline.get('primary_target')}"]
    limit = limit_line(headline.get("limit"))
    if limit:
        caption.insert(0, limit)
    t = Table(title=f"{title} — {lab}" + (f" ({limit.split(' — ')[0]})" if limit else ""),
              caption="\n".join(caption), caption_justify="left", box=box.MINIMAL, show_lines=True)
    # numbers may wrap on a narrow terminal (fold), never be cut to "…"; a target name stays whole
    t.add_column("target", no_wrap=True)
    for m in clean:
        t.add_column(f"clean\n{metric_label(m)}", justify="right", overflow="fold")
    for name in (f"mean Δ{lab}\n[CI]", "worst\noperator", "mildest\noperator"):
        t.add_column(name, justify="right", overflow="fold")
    if joint:
        t.add_column("δ\n[CI]", justify="right", overflow="fold")
    if moor:
        t.add_column("MOOR − best\nfixed fusion", justify="right", overflow="fold")
    for r in rows:
        cells = [r["target"], *(pct(r.get("clean", {}).get(m)) for m in clean),
                 _with_ci(r.get("mean_delta"), "value"), _operator(r.get("worst")), _operator(r.get("mildest"))]
        if joint:
            cells.append(_with_ci(r.get("additivity"), "delta"))
        if moor:
            cells.append(_moor(r.get("moor_vs_fixed")))
        t.add_row(*cells)
    return t
