"""The comparison's tables in the paper's layout, as :class:`snapbench.render.tables.Table` (Markdown,
LaTeX booktabs, HTML from one model).

Models are rows, named by :func:`snapbench.compare.view.display_names`; columns are clean, each image
primitive at s1/s2/s3 (the mean over its operators), text and joint conditions (means) and all
corrupted conditions (the ``group:*`` records).  Per (target, metric):

* ``<stem>``          the metric (%) of every model per column;
* ``<stem>_delta``    Δ = column − clean (points) with its paired bootstrap CI;
* ``<stem>_ranking``  models by rank: rank and its bootstrap interval, tier, mean Δ over all
  corrupted conditions (the ranking score) with CI, retention, mean CE and relative CE against the
  reference, effective robustness (three or more models);
* ``<stem>_pairs``    each pair on all corrupted conditions: ΔA − ΔB with CI, its p-value adjusted
  over all pairs (the family of the ranking's tiers), effect size, the verdict, and in how many
  conditions each model is told apart as better (per-condition p adjusted over the pair's conditions).
"""

from __future__ import annotations

from ..compare.groups import GROUP_ALL
from ..compare.view import MetricView, finite, paper_columns
from .fmt import PAIRED_SIGN, ci_label, p_text
from .rundir import TARGET_NAMES
from .tables import Cell, Table, metric_label

__all__ = ["value_table", "delta_table", "ranking_table", "pairs_table", "pairs_adjustment", "target_label"]


def pairs_adjustment(n_pairs: int, correction: str) -> str:
    """How the overall p of a pair of models is adjusted, in words: over the ``n_pairs`` pairs, or
    not at all when there is one pair (an adjustment over one p-value leaves it as it is)."""
    if n_pairs == 1:
        return "unadjusted (one pair of models: nothing to adjust over)"
    return f"{correction}-adjusted over the {n_pairs} pairs of models"


def target_label(target: str) -> str:
    """``IT→IT`` for ``IT2IT``; MOOR and fusion baselines as they are."""
    return TARGET_NAMES.get(target, target)


def value_table(v: MetricView, stem: str) -> Table:
    """The metric (%) of every model per paper column."""
    lab = metric_label(v.metric)
    cols = paper_columns(v.columns)
    t = Table(stem, f"{target_label(v.target)}: {lab} (%) per model — clean, image primitives by severity (mean over "
                    "their operators), text, joint and all corrupted conditions (means)",
              ["Model"] + [h for h, _ in cols])
    t.groups.append(("", [(v.label(m), [Cell(finite(v.values[(m, c)].value)) if (m, c) in v.values else Cell()
                                        for _, c in cols]) for m in v.models]))
    return t


def delta_table(v: MetricView, stem: str) -> Table:
    """Δ = column − clean (points) with the CI, per model and paper column."""
    lab = metric_label(v.metric)
    cols = [(h, c) for h, c in paper_columns(v.columns) if c != "clean"]
    t = Table(f"{stem}_delta", f"{target_label(v.target)}: Δ{lab} in points ({PAIRED_SIGN}) with {ci_label(v.level)}, "
                               "per model", ["Model"] + [h for h, _ in cols])
    rows = []
    for m in v.models:
        cells = []
        for _, c in cols:
            r = v.values.get((m, c))
            cells.append(Cell(finite(r.delta), [finite(r.ci_low), finite(r.ci_high)], signed=True) if r else Cell())
        rows.append((v.label(m), cells))
    t.groups.append(("", rows))
    t.notes.append("A group's Δ is the mean over its conditions; its CI resamples queries jointly for every condition.")
    return t


def _rank_text(v: MetricView, m: str) -> list[Cell]:
    r = v.ranking.get(m)
    if r is None:
        return [Cell(text="–")] * 3
    lo, hi = finite(r.rank_low), finite(r.rank_high)
    interval = "–" if lo is None or hi is None else f"{lo:g}–{hi:g}"
    return [Cell(text=f"{r.rank:g}"), Cell(text=interval), Cell(text=str(r.group))]


def _num(x: float | None, digits: int = 2) -> Cell:
    x = finite(x)
    return Cell(text="–" if x is None else f"{x:.{digits}f}")


def ranking_table(v: MetricView, stem: str, reference: str) -> Table:
    """Models by rank, with the numbers the rank rests on and the normalised robustness."""
    lab = metric_label(v.metric)
    has_er = any(k[1] == GROUP_ALL for k in v.effective)
    cols = ["Model", "rank", f"rank {ci_label(v.level)}", "tier", f"mean Δ{lab} (points)", "retention",
            "mCE", "relative mCE"] + (["eff. robustness (points)"] if has_er else [])
    t = Table(f"{stem}_ranking", f"{target_label(v.target)}: ranking by mean Δ{lab} over all corrupted conditions "
                                 f"(rank 1 = smallest drop); CE against {reference}", cols)
    rows = []
    for m in v.ranked():
        r = v.values.get((m, GROUP_ALL))
        cells = _rank_text(v, m)
        cells.append(Cell(finite(r.delta), [finite(r.ci_low), finite(r.ci_high)], signed=True) if r else Cell())
        cells.append(_num(r.retention if r else None, 3))
        n = v.normalised.get((m, "mean:all"))
        cells += [_num(n.ce if n else None), _num(n.relative_ce if n else None)]
        if has_er:
            e = v.effective.get((m, GROUP_ALL))
            cells.append(Cell(finite(e.effective_robustness), signed=True) if e else Cell())
        rows.append((v.label(m), cells))
    t.groups.append(("", rows))
    t.notes.append("Tier: models of one tier are not told apart from its first model (adjusted p >= "
                   f"{1 - v.level:.2g} or CI including 0); a tier is not a strict order.")
    return t


def _wins(v: MetricView, a: str, b: str) -> tuple[int, int, int]:
    """Conditions where ``a`` is told apart as more robust, as less robust, and neither."""
    better = worse = 0
    for c in v.conditions:
        rec, sign = v.pair(a, b, c)
        if rec is not None and v.apart(rec):
            better, worse = (better + 1, worse) if sign * rec.diff > 0 else (better, worse + 1)
    return better, worse, len(v.conditions) - better - worse


def pairs_table(v: MetricView, stem: str, correction: str) -> Table:
    """Each pair on all corrupted conditions, and its condition-by-condition tally."""
    lab = metric_label(v.metric)
    t = Table(f"{stem}_pairs", f"{target_label(v.target)}: pairs of models, ΔA − ΔB of {lab} over all corrupted "
                               f"conditions (> 0: A drops less), {ci_label(v.level)}, {correction}-adjusted p",
              ["A vs B", "ΔA − ΔB (points)", "p (adj. over pairs)", "effect", "verdict", "A better in", "B better in",
               "neither"])
    rows = []
    for (a, b, c), r in v.pairs.items():
        if c != GROUP_ALL:
            continue
        apart = v.overall_apart(a, b)
        verdict = "A more robust" if apart and r.diff > 0 else "B more robust" if apart else "not told apart"
        better, worse, neither = _wins(v, a, b)
        rows.append((f"{v.label(a)} vs {v.label(b)}", [
            Cell(finite(r.diff), [finite(r.ci_low), finite(r.ci_high)], signed=True),
            Cell(text=p_text(finite(v.overall_p.get((a, b))))), _num(r.effect_size), Cell(text=verdict),
            Cell(text=str(better)), Cell(text=str(worse)), Cell(text=str(neither))]))
    t.groups.append(("", rows))
    t.notes.append(f"The overall p (the test of the ranking's tiers) is {pairs_adjustment(len(v.overall_p), correction)}"
                   f"; per condition, a difference counts when its {correction}-adjusted p (family: the conditions of the pair) "
                   f"is below {1 - v.level:.2g} and its CI excludes 0. Effect size: d_z of the per-query differences.")
    return t
