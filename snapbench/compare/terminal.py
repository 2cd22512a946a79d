"""What ``snapbench compare`` prints when it is done: per target, the ranking of the headline metric
with rank intervals and tiers, and the pairs of models that are told apart.

Everything comes from the comparison's records (the ones compare.json holds) through
:class:`~snapbench.compare.view.MetricView` and its one verdict rule (:meth:`MetricView.overall_apart`,
the rule of the tiers, the pairs table and the findings); nothing is recomputed.  Numbers are shown as
the page's tables show them: values in %, differences in points, one decimal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..evaluate.fmt import ci_label, ci_text, pct
from ..report.tables import metric_label
from .groups import GROUP_ALL
from .records import Comparison
from .view import MetricView, finite

__all__ = ["ranking_table", "told_apart_lines", "print_comparison"]


def _rank(x: float | None) -> str:
    x = finite(x)
    return "–" if x is None else f"{x:g}"


def ranking_table(views: Sequence[MetricView]) -> Any:
    """A ``rich.table.Table``: per target (a section each), the models from the best rank down, with the
    clean value, the mean Δ over all corrupted conditions (the ranking's score) and its CI, the rank,
    its interval and the tier."""
    from rich import box
    from rich.table import Table

    lab = metric_label(views[0].metric)
    level = ci_label(views[0].level)
    t = Table(title=f"snapbench compare — ranking by mean Δ{lab} over all corrupted conditions (rank 1 = smallest drop)",
              caption=f"values in %, Δ in points (condition − clean, negative = worse); CI and rank interval: {level}; "
                      "a tier holds the models not told apart from its first model",
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


def told_apart_lines(v: MetricView) -> list[str]:
    """For one target: one line per pair told apart on the mean over all corrupted conditions (the more
    robust model first, with ΔA − ΔB and its CI), or one line saying none of its pairs is."""
    apart, total = [], 0
    for (a, b, c), r in v.pairs.items():
        if c != GROUP_ALL:
            continue
        total += 1
        if v.overall_apart(a, b):
            better, worse, sign = (a, b, 1) if r.diff > 0 else (b, a, -1)
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
    console.print(f"pairs told apart on {metric_label(metric)} (more robust > less robust; mean over all corrupted "
                  f"conditions, {correction}-adjusted p < {1 - level:.2g} over the pairs and CI excluding 0):",
                  markup=False, highlight=False)
    for v in views:
        for line in told_apart_lines(v):
            console.print(line, markup=False, highlight=False)
