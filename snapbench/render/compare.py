"""``compare.html``: the comparison on one self-contained page (:func:`snapbench.render.htmlpage.render_html`:
inline CSS, figures as base64 PNG, no external resource).

Sections: findings, the models compared, then one section per target (headline metric): the paper
table, the Δ table, the ranking, the pairs, the figures; notes on what was left out; the files.

The records of a comparison, indexed for the tables, figures and findings of one (target, metric).
Every sentence, table and figure calls a difference real by the rule of the ranking's tiers
(:func:`snapbench.compare.ranking.told_apart`): its adjusted p-value is below 1 − ci **and** its
confidence interval excludes 0 (the rule of the run report's findings).

The comparison's tables in the paper's layout, as :class:`snapbench.render.tables.Table` (Markdown,
LaTeX booktabs, HTML from one model).

Models are rows, named by :func:`snapbench.render.compare.display_names`; columns are clean, each image
primitive at s1/s2/s3 (the mean over its operators), text and joint conditions (means) and all
corrupted conditions (the ``group:*`` records).  Per (target, metric):

* ``<stem>``          the metric (%) of every model per column;
* ``<stem>_delta``    Δ = column − clean (points) with its paired bootstrap CI;
* ``<stem>_ranking``  models by rank: rank and its bootstrap interval, tier, mean Δ over all
  corrupted conditions (the ranking score) with CI, retention, mean CE and relative CE against the
  reference, effective robustness (three or more models);
* ``<stem>_pairs``    each pair on all corrupted conditions the mode reads: ΔA − ΔB with CI, its p-value adjusted
  over all pairs (the family of the ranking's tiers), effect size, the verdict, and in how many
  conditions each model is told apart as better (per-condition p adjusted over the pair's conditions).

The comparison's findings in plain words (``findings.json`` and the report's first section).

Every sentence that calls one model more robust than another rests on the verdict rule of
:func:`snapbench.compare.ranking.told_apart`: its adjusted p-value is below 1 − ci **and** its CI
excludes 0; otherwise it says the two are not told apart and gives the numbers.  Statements without
a test (super-additivity differences, effective robustness) use the CI alone (the run report's rule,
:func:`snapbench.render.fmt.ci_excludes_zero`) or are called descriptive.

The comparison's figures (matplotlib, Agg, via :mod:`snapbench.render.figures`' helpers): each has
a title, labelled axes with units and a legend, so it reads without the surrounding text.  Models are
named by :func:`snapbench.render.compare.display_names` (a long spec path by its last parts).

Per (target, metric):

* ``effective``   clean vs corrupted value (mean over all corrupted conditions the mode reads) per model, with the
  effective-robustness fit (logit space, three or more models) and the line of no drop;
* ``heatmap``     models x conditions, Δ (points) coloured from red (drop) to blue (gain);
* ``primitives``  Δ per paper column (primitive x severity, text, joint, all) as grouped bars, one bar
  per model, whiskers = its CI, the legend right of the axes (inside it would cover whiskers);
* ``ranks``       each model's rank (dot) and bootstrap rank interval (bar), coloured by tier.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from ..compare.groups import GROUP_ALL, condition_groups, read_columns
from ..compare.normalised import operator_levels
from ..compare.ranking import told_apart
from ..compare.records import (
    AdditivityPairRecord,
    AdditivityRecord,
    Comparison,
    EffectiveRecord,
    FitRecord,
    ModelRecord,
    NormalisedRecord,
    PairRecord,
    RankingRecord,
)
from ..compare.stats import adjust_pvalues
from ..core.conditions import IMAGE_PRIMITIVES
from ..evaluate.metrics import metric_sign
from ..store.compare import COMPARE_FIGURES, RECORD_TYPES, UNNAMED, ModelSource
from ..store.folders import CompareDir
from ..store.rundir import TARGET_NAMES
from .figures import legend_outside, require_matplotlib, tidy_axes, to_points
from .findings import Finding
from .fmt import DASH, PAIRED_SIGN, ci_excludes_zero, ci_label, ci_level_text, ci_words, p_text, pct
from .htmlpage import HtmlFigure, HtmlSection, details, render_html, ul
from .tables import Cell, Table, metric_label

__all__ = ['render_page', 'MetricView', 'finite', 'pairs_adjustment', 'display_names', 'value_table', 'delta_table', 'ranking_table', 'pairs_table', 'compare_findings', 'FIGURES', 'heatmap_figure', 'primitive_bars_figure']


def _summary(res: CompareResult, label: dict[str, str]) -> list[tuple[str, str]]:
    st, meta = res.settings, res.comparison.meta
    return [
        ("models", ", ".join(label.values())),
        ("targets", ", ".join(_target_label(t) for t in st.targets)),
        ("metrics", ", ".join(st.metrics) + f"; headline {metric_label(st.metric)} ({st.metric}); values in %, "
                                            "differences in points"),
        ("queries", f"{meta.get('n_queries')} (the same in every run; a ranking metric resamples only those with a "
                    "relevant item)"),
        ("reference", f"{meta.get('reference')} (CE = 1)"),
        ("tests", f"exact McNemar / sign-flip for hit@k per condition, paired permutation otherwise; p adjusted with "
                  f"{meta.get('correction_method')} over the conditions of each pair"),
        ("bootstrap", f"{st.resamples} resamples of the queries, jointly for all models; {ci_level_text(st.ci)} "
                      f"percentile intervals; seed {st.seed}"),
        ("signs", "Δ = condition − clean (negative = worse); ΔA − ΔB > 0 = A drops less"
                  + "".join(f"; {metric_label(m)}: higher is worse, so Δ > 0 = worse (its drop is its rise) and "
                            "ΔA − ΔB < 0 = A rises less" for m in st.metrics if metric_sign(m) < 0)),
        ("verdicts", f"a difference is called real only when its adjusted p < {1 - st.ci:.2g} and its CI excludes 0"),
    ]


def _models_table(res: CompareResult, label: dict[str, str]) -> Table:
    """Each model as the tables and figures name it, with where it came from and its full encoder spec
    (compare.json's ``runs``)."""
    t = Table("models", "The models compared", ["Model", "from", "encoder", "variants", "dataset"])
    runs = [s.to_json() for s in res.sources]
    t.groups.append(("", [(label[r["name"]], [Cell(text=str(r[k] or "–")) for k in ("path", "encoder", "variants", "dataset")])
                          for r in runs]))
    return t


def _scroll(table: Table, hover: dict[str, str] | None = None) -> str:
    """A wide table (a column per primitive and severity, long paths) scrolls inside the page's width;
    a shortened model name shows its full name on hover (``hover``: short name -> full name)."""
    table.hover = {**table.hover, **(hover or {})}
    return f'<div class="table-scroll" style="overflow-x:auto;max-width:100%">{table.to_html()}</div>'


def _full_names(label: dict[str, str]) -> dict[str, str]:
    """Shortened model name -> full name, for the models whose page name is shortened (``label``: full
    name -> page name); likewise the pairs table's "A vs B" labels."""
    out = {short: full for full, short in label.items() if short != full}
    out.update({f"{label[a]} vs {label[b]}": f"{a} vs {b}" for a in label for b in label
                if a != b and (a in out.values() or b in out.values())})
    return out


def _target_section(res: CompareResult, written: Written, target: str, full: dict[str, str]) -> HtmlSection:
    sec = HtmlSection(f"target-{target.replace('/', '-')}", f"{_target_label(target)}")
    tables = written.tables.get(target, [])
    if tables:
        value, delta, ranking, pairs = tables
        sec.raw += [_scroll(ranking, full), _scroll(pairs, full), _scroll(value, full),
                    details(f"Δ{metric_label(res.settings.metric)} per model and column, with CIs", _scroll(delta, full))]
    sec.figures += written.figures.get(target, [])
    others = [m for m in res.settings.metrics if m != res.settings.metric]
    if others:
        sec.raw.append(f'<p class="note">Other metrics ({html.escape(", ".join(others))}): tables/ and compare.json.</p>')
    return sec


def render_page(res: CompareResult, written: Written, targets: list[str]) -> str:
    """The whole page (UTF-8 text)."""
    label = display_names([s.name for s in res.sources])
    full = _full_names(label)
    sections = [HtmlSection("findings", "Findings", raw=[ul([(f"finding-{f.id}", f.text) for f in written.findings],
                                                            "findings")]),
                HtmlSection("models", "Models", raw=[_scroll(_models_table(res, label), full)])]
    sections += [_target_section(res, written, t, full) for t in targets]
    if res.notes:
        sections.append(HtmlSection("notes", "Notes", missing=list(res.notes)))
    files = [str(p.relative_to(res.out)) for p in res.files if p.is_relative_to(res.out)]
    res_dir = CompareDir(res.out)
    sections.append(HtmlSection("files", "Files of this comparison",
                                raw=[ul([("", f) for f in files + [res_dir.html.name, res_dir.run_json.name]], code=True)]))
    return render_html(f"snapbench compare — {', '.join(label.values())}", _summary(res, label), sections)


#: The longest model name tables and figures show as it is.
_LABEL_MAX = 40
_ADAPTER = re.compile(r"^[A-Za-z][\w.+-]*:")


def _short(name: str) -> str:
    if len(name) <= _LABEL_MAX:
        return name
    # Shortened from the front only: the end of a spec (the model's folder or hub name) identifies it,
    # so whole trailing parts are kept, as many as fit, and none of the last two is ever cut.
    m = _ADAPTER.match(name)
    parts = [p for p in re.split(r"[/\\]+", name[m.end() if m else 0:]) if p]
    if len(parts) < 2:
        return name  # one word: all of it identifies the model
    least = 2  # the last two parts at least: a model's file or folder is often a generic "model"
    if len(parts) >= 3 and parts[-2] == "snapshots" and re.fullmatch(r"[0-9a-f]{40}", parts[-1]):
        parts[-1], least = parts[-1][:7], 3  # a Hugging Face cache snapshot: the folder above names the model
    kept = parts[-least:]
    for p in reversed(parts[:-least]):
        if len("…/" + "/".join([p, *kept])) > _LABEL_MAX:
            break
        kept.insert(0, p)
    return "…/" + "/".join(kept)


def display_names(models: Sequence[str]) -> dict[str, str]:
    """How the comparison's tables and figures name each model (the one rule): the name itself when
    it has at most :data:`_LABEL_MAX` characters (a ``--name``, ``toy``, a hub id); a longer spec that
    names a path or hub id, by as many of its last parts as fit in :data:`_LABEL_MAX`
    (``sentence-transformers:/home/me/models/minilm/model`` -> ``…/me/models/minilm/model``), the last
    two parts whole however long (a Hugging Face cache snapshot hash in git's 7-character form): a name is shortened from the front, never cut inside the part that
    identifies the model.  A long name without parts is kept whole.  Models whose short forms would
    coincide keep their full names.  compare.json, the record tables and the findings keep the full
    names; the page shows the full name on hover and in its table of models."""
    short = {m: _short(m) for m in models}
    taken = list(short.values())
    return {m: s if taken.count(s) == 1 and (s == m or s not in short) else m for m, s in short.items()}


def finite(x: float | None) -> float | None:
    """``x`` when it is a finite number, else ``None`` (the tables' and sentences' "undefined")."""
    return None if x is None or not math.isfinite(x) else float(x)


def _paper_columns(columns: Sequence[str]) -> list[tuple[str, str]]:
    """``[(header, condition or group id)]`` of the paper's layout among ``columns``: clean, each
    image primitive at s1/s2/s3, text, joint, then all corrupted conditions the mode reads."""
    out = [("clean", "clean")] if "clean" in columns else []
    for prim in IMAGE_PRIMITIVES:
        sev = sorted((c for c in columns if c.startswith(f"group:img/{prim}/s")), key=lambda c: int(c.rsplit("s", 1)[1]))
        out += [(f"{prim.capitalize()} {c.rsplit('/', 1)[1]}", c) for c in sev]
    out += [(h, g) for h, g in (("Text", "group:txt"), ("Joint", "group:joint"), ("All", GROUP_ALL)) if g in columns]
    return out


@dataclass
class MetricView:
    """Every record of one (target, metric), indexed."""

    target: str
    metric: str
    models: list[str]
    level: float
    values: dict[tuple[str, str], ModelRecord]
    pairs: dict[tuple[str, str, str], PairRecord]
    ranking: dict[str, RankingRecord]
    normalised: dict[tuple[str, str], NormalisedRecord]
    effective: dict[tuple[str, str], EffectiveRecord]
    fits: dict[str, FitRecord]
    additivity: dict[tuple[str, str], AdditivityRecord]
    additivity_pairs: dict[tuple[str, str, str], AdditivityPairRecord]
    columns: list[str]
    correction: str = "holm"
    #: model -> how tables and figures name it (:func:`display_names`; a model not in it: its name)
    labels: dict[str, str] = field(default_factory=dict)

    def label(self, model: str) -> str:
        """The model as tables and figures name it."""
        return self.labels.get(model, model)

    @property
    def sign(self) -> int:
        """The metric's direction (:func:`~snapbench.evaluate.metrics.metric_sign`): ``sign · Δ`` is a gain."""
        return metric_sign(self.metric)

    @property
    def drop_words(self) -> tuple[str, str]:
        """How a drop and a gain of the metric read: ("drop", "gain"), or ("rise", "fall") where higher is worse."""
        return ("drop", "gain") if self.sign > 0 else ("rise", "fall")

    @property
    def direction_note(self) -> str:
        """"" where higher is better; else a clause saying that the metric's drop is its rise."""
        return "" if self.sign > 0 else f"; {metric_label(self.metric)}: higher is worse, so its drop is its rise"

    @classmethod
    def all_of(cls, comparison: Comparison, level: float, correction: str = "holm") -> dict[tuple[str, str], MetricView]:
        """A view of every (target, metric) of ``comparison``, keyed so (records grouped in one pass)."""
        by: dict[tuple[str, str], dict[str, list]] = {}
        for name in RECORD_TYPES:
            for r in getattr(comparison, name):
                by.setdefault((r.mode, r.metric), {}).setdefault(name, []).append(r)
        labels = display_names(list(dict.fromkeys(r.model for r in comparison.models)))
        return {key: cls._of(key, recs, level, correction, labels) for key, recs in by.items()}

    @classmethod
    def _of(cls, key: tuple[str, str], recs: dict[str, list], level: float, correction: str,
            labels: dict[str, str]) -> MetricView:
        def get(name: str) -> list:
            return recs.get(name, [])

        values = {(r.model, r.condition): r for r in get("models")}
        models = list(dict.fromkeys(r.model for r in get("models")))
        cols = list(dict.fromkeys(c for (m, c) in values if m == models[0])) if models else []
        return cls(
            key[0], key[1], models, level, values,
            {(r.model_a, r.model_b, r.condition): r for r in get("pairs")},
            {r.model: r for r in get("ranking")},
            {(r.model, r.operator): r for r in get("normalised")},
            {(r.model, r.condition): r for r in get("effective")},
            {r.condition: r for r in get("fits")},
            {(r.model, r.joint): r for r in get("additivity")},
            {(r.model_a, r.model_b, r.joint): r for r in get("additivity_pairs")},
            cols, correction, labels,
        )

    @cached_property
    def overall_p(self) -> dict[tuple[str, str], float]:
        """Each pair's ``group:all`` p-value adjusted over all pairs of models (the family of the
        ranking's tiers), so that an overall verdict never contradicts the tiers' rule."""
        keys = [(a, b) for (a, b, c) in self.pairs if c == GROUP_ALL]
        adj = adjust_pvalues([self.pairs[(a, b, GROUP_ALL)].p_raw for a, b in keys], self.correction)
        return {k: float(p) for k, p in zip(keys, adj)}

    def overall_apart(self, a: str, b: str) -> bool | None:
        """Whether ``a`` and ``b`` are told apart on all corrupted conditions the mode reads (all-pairs family)."""
        rec = self.pairs.get((a, b, GROUP_ALL))
        if rec is None:
            return None
        return told_apart(self.overall_p.get((a, b)), (rec.ci_low, rec.ci_high), self.level)

    @property
    def conditions(self) -> list[str]:
        """The corrupted conditions (no groups), in the runs' order."""
        return [c for c in self.columns if c != "clean" and not c.startswith("group:")]

    @cached_property
    def read(self) -> dict[str, bool]:
        """Condition or group id -> whether the target reads it (:func:`~snapbench.compare.groups.read_columns`:
        an image condition, or an image group, cannot move T→T)."""
        conds = self.conditions
        groups = condition_groups(conds, self.target)
        return dict(zip(conds + list(groups), read_columns(conds, groups, self.target).tolist()))

    @property
    def read_conditions(self) -> list[str]:
        """The corrupted conditions the target reads: those ``group:all`` (the ranking's mean) is over."""
        return [c for c in self.conditions if self.read[c]]

    def pair(self, a: str, b: str, condition: str) -> tuple[PairRecord | None, int]:
        """The record of ``a`` vs ``b`` on ``condition`` and the sign (+1, or -1 when the record is b vs a)."""
        if (a, b, condition) in self.pairs:
            return self.pairs[(a, b, condition)], 1
        return self.pairs.get((b, a, condition)), -1

    def apart(self, rec: PairRecord | None) -> bool | None:
        return None if rec is None else told_apart(rec.p_adj, (rec.ci_low, rec.ci_high), self.level)

    def ranked(self) -> list[str]:
        """Models from the best rank down (input order without a ranking)."""
        if not self.ranking:
            return list(self.models)
        return sorted(self.models, key=lambda m: (self.ranking[m].rank, self.models.index(m)))


def pairs_adjustment(n_pairs: int, correction: str) -> str:
    """How the overall p of a pair of models is adjusted, in words: over the ``n_pairs`` pairs, or
    not at all when there is one pair (an adjustment over one p-value leaves it as it is)."""
    if n_pairs == 1:
        return "unadjusted (one pair of models: nothing to adjust over)"
    return f"{correction}-adjusted over the {n_pairs} pairs of models"


#: How sentences, tables and pages name the target of evaluate reports that record no mode (:data:`UNNAMED`).
_UNNAMED_LABEL = "the scores (no mode recorded)"


def _target_label(target: str) -> str:
    """``IT→IT`` for ``IT2IT``; MOOR and fusion baselines as they are; the target of evaluate reports
    that record no mode as :data:`_UNNAMED_LABEL` (not its placeholder id ``evaluate``)."""
    return _UNNAMED_LABEL if target == UNNAMED else TARGET_NAMES.get(target, target)


def value_table(v: MetricView, stem: str) -> Table:
    """The metric (%) of every model per paper column."""
    lab = metric_label(v.metric)
    cols = _paper_columns(v.columns)
    t = Table(stem, f"{_target_label(v.target)}: {lab} (%) per model — clean, image primitives by severity (mean over "
                    "their operators), text, joint and all corrupted conditions the mode reads (means)",
              ["Model"] + [h for h, _ in cols])
    t.groups.append(("", [(v.label(m), [Cell(finite(v.values[(m, c)].value)) if (m, c) in v.values else Cell()
                                        for _, c in cols]) for m in v.models]))
    return t


def delta_table(v: MetricView, stem: str) -> Table:
    """Δ = column − clean (points) with the CI, per model and paper column."""
    lab = metric_label(v.metric)
    cols = [(h, c) for h, c in _paper_columns(v.columns) if c != "clean"]
    t = Table(f"{stem}_delta", f"{_target_label(v.target)}: Δ{lab} in points ({PAIRED_SIGN}) with {ci_label(v.level)}, "
                               "per model", ["Model"] + [h for h, _ in cols])
    rows = []
    for m in v.models:
        cells = []
        for _, c in cols:
            r = v.values.get((m, c))
            if not v.read.get(c, True):
                cells.append(Cell(text="–"))
            else:
                cells.append(Cell(finite(r.delta), [finite(r.ci_low), finite(r.ci_high)], signed=True) if r else Cell())
        rows.append((v.label(m), cells))
    t.groups.append(("", rows))
    t.notes.append("A group's Δ is the mean over its conditions; its CI resamples queries jointly for every condition.")
    if any(not v.read.get(c, True) for _, c in cols):
        t.notes.append(f"–: a column of conditions {_target_label(v.target)} cannot read (they corrupt only a side "
                       "of the query it does not read, so its Δ is 0 by construction).")
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
    t = Table(f"{stem}_ranking", f"{_target_label(v.target)}: ranking by mean Δ{lab} over all corrupted conditions the mode reads "
                                 f"(rank 1 = smallest drop{v.direction_note}); CE against {reference}", cols)
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
    """Conditions the target reads where ``a`` is told apart as more robust, as less robust, and neither."""
    better = worse = 0
    for c in v.read_conditions:
        rec, sign = v.pair(a, b, c)
        if rec is not None and v.apart(rec):
            better, worse = (better + 1, worse) if v.sign * sign * rec.diff > 0 else (better, worse + 1)
    return better, worse, len(v.read_conditions) - better - worse


def pairs_table(v: MetricView, stem: str, correction: str) -> Table:
    """Each pair on all corrupted conditions the mode reads, and its condition-by-condition tally."""
    lab = metric_label(v.metric)
    one = len(v.overall_p) == 1  # one pair of models: its overall p is not adjusted (nothing to adjust over)
    t = Table(f"{stem}_pairs", f"{_target_label(v.target)}: pairs of models, ΔA − ΔB of {lab} over all corrupted conditions the mode reads "
                               f"({'>' if v.sign > 0 else '<'} 0: A {v.drop_words[0]}s less{v.direction_note}), "
                               f"{ci_label(v.level)}, {'p' if one else f'{correction}-adjusted p'}",
              ["A vs B", "ΔA − ΔB (points)", "p" if one else "p (adj. over pairs)", "effect", "verdict", "A better in",
               "B better in", "neither"])
    rows = []
    for (a, b, c), r in v.pairs.items():
        if c != GROUP_ALL:
            continue
        apart = v.overall_apart(a, b)
        verdict = "A more robust" if apart and v.sign * r.diff > 0 else "B more robust" if apart else "not told apart"
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


_MAX_PAIR_SENTENCES = 10


def _ci(lo: float | None, hi: float | None, level: float) -> str:
    return ci_words((lo, hi), level) or "no CI"


def _gains(delta: float, sign: int = 1) -> bool:
    """Whether a mean Δ (condition − clean) is a gain as written (``sign · Δ`` positive once rounded: ``+0.0``
    is none; ``sign`` the metric's direction)."""
    shown = pct(delta, True)
    return shown != DASH and sign * float(shown) > 0


def _extremes(rec: dict, order: list[str], level: float, sign: int = 1) -> str:
    """"X drops least (...) and Y most (...)", with models of equal mean Δ named together: equal
    values read as equal (a run compared with itself).  A positive mean Δ is a gain, said so: "X gains
    most (...) and Y least (...)" when every model gains, "X gains (...) and Y drops (...)" when one
    side gains and the other drops ("most" when others lie between).  Where higher is worse (``sign`` −1)
    a drop is a rise and a gain a fall, and the sentences say so."""
    word = {"drop": "drop", "gain": "gain"} if sign > 0 else {"drop": "rise", "gain": "fall"}

    def said(ms: list[str]) -> str:
        r = rec[ms[0]]
        return f"{pct(r.delta, True)} points, {_ci(r.ci_low, r.ci_high, level)}"

    def verb(ms: list[str], which: str) -> str:
        return f"{word[which]}s" if len(ms) == 1 else word[which]

    least = [m for m in order if rec[m].delta == rec[order[0]].delta]
    most = [m for m in order if rec[m].delta == rec[order[-1]].delta]
    if len(least) == len(order):
        same = word["gain" if _gains(rec[order[0]].delta, sign) else "drop"]
        if _same_ci(rec, order):
            return f"{_join(order)} {same} the same ({said(order)})"
        cis = ", ".join(f"{m}: {_ci(rec[m].ci_low, rec[m].ci_high, level)}" for m in order)
        return f"{_join(order)} {same} the same ({pct(rec[order[0]].delta, True)} points; {cis})"
    if _gains(rec[most[0]].delta, sign):
        text = f"{_join(least)} {verb(least, 'gain')} most ({said(least)}) and {_join(most)} least ({said(most)})"
    elif _gains(rec[least[0]].delta, sign):
        gainers = [m for m in order if _gains(rec[m].delta, sign)]
        most_word = " most" if len(order) - len(gainers) > len(most) else ""
        least_word = " most" if len(gainers) > len(least) else ""
        text = (f"{_join(least)} {verb(least, 'gain')}{least_word} ({said(least)}) and {_join(most)} "
                f"{verb(most, 'drop')}{most_word} ({said(most)})")
    else:
        text = f"{_join(least)} {verb(least, 'drop')} least ({said(least)}) and {_join(most)} most ({said(most)})"
    if pct(rec[least[0]].delta, True) == pct(rec[most[0]].delta, True):
        text += ", apart by less than the precision shown"
    return text


def _clean_context(v: MetricView, rec: dict, order: list[str]) -> str:
    """A drop is bounded by the clean value: when the model that drops least starts from a lower clean
    value than the one that drops most, by more than their drops differ, say so -- a model that gets
    fewer queries right to begin with has less to lose, and its smaller drop is no sign of
    robustness by itself ("" otherwise, and when the two drop the same as written)."""
    def clean(m: str) -> float | None:
        return finite(getattr(v.values.get((m, "clean")), "value", None))

    least, most = order[0], order[-1]
    ca, cb = clean(least), clean(most)
    da, db = finite(rec[least].delta), finite(rec[most].delta)
    if None in (ca, cb, da, db) or pct(da, True) == pct(db, True) or pct(ca) == pct(cb):
        return ""
    sign = v.sign  # where higher is worse, the headroom is below the clean value: a higher one has less to lose
    if not (sign * ca < sign * cb and abs(cb - ca) > abs(da - db)):
        return ""
    # the models named together as dropping most, when they start from the same clean value too
    alike = [m for m in order if rec[m].delta == rec[most].delta and pct(clean(m)) == pct(cb)]
    lab = metric_label(v.metric)
    return (f" {least} starts from a {'lower' if sign > 0 else 'higher'} clean {lab} than {_join(alike)} ({pct(ca)}% against "
            f"{pct(cb)}%, "
            f"a gap larger than the one between their drops): it has less to lose, so dropping less does not by "
            "itself make it more robust (retention and effective robustness take the clean value into account).")


def _join(ms: list[str]) -> str:
    return ms[0] if len(ms) == 1 else ", ".join(ms[:-1]) + " and " + ms[-1]


def _same_ci(rec: dict, ms: list[str]) -> bool:
    return len({(rec[m].ci_low, rec[m].ci_high) for m in ms}) == 1


def _ranking(v: MetricView, correction: str) -> Finding | None:
    if not v.ranking:
        return None
    lab, order = metric_label(v.metric), v.ranked()
    rec = {m: v.values[(m, GROUP_ALL)] for m in order if (m, GROUP_ALL) in v.values}
    if len(rec) < len(order):
        return None
    tiers: dict[int, list[str]] = {}
    for m in order:
        tiers.setdefault(v.ranking[m].group, []).append(m)
    if len(tiers) == 1:
        ci = ci_label(v.level)
        verdict = (f"the two models are not told apart (p and {ci} of their difference)" if len(order) == 2 else
                   f"none of the other {len(order) - 1} models is told apart from the best, {order[0]} "
                   f"({correction}-adjusted p and {ci} of each pair's difference)")
    else:
        verdict = "tiers (a model of a tier is not told apart from the tier's first): " + "; ".join(
            f"{t}: {', '.join(ms)}" for t, ms in sorted(tiers.items()))
    text = (f"In {_target_label(v.target)}, by mean Δ{lab} over {len(v.read_conditions)} corrupted conditions, "
            f"{_extremes(rec, order, v.level, v.sign)}; {verdict}.{_clean_context(v, rec, order)}")
    return Finding(f"ranking:{v.target}", text, {
        "target": v.target, "metric": v.metric, "order": order, "tiers": {str(k): m for k, m in tiers.items()},
        "mean_delta": {m: r.delta for m, r in rec.items()}})


def _pair_sentence(v: MetricView, a: str, b: str, correction: str) -> tuple[str, dict]:
    r = v.pairs[(a, b, GROUP_ALL)]
    apart = v.overall_apart(a, b)
    p_all = v.overall_p.get((a, b))
    nums = (f"{pct(r.diff, True)} points, {_ci(r.ci_low, r.ci_high, v.level)}, p = {p_text(finite(p_all))} "
            f"{pairs_adjustment(len(v.overall_p), correction)}, effect size {finite(r.effect_size) or 0:.2f}")
    if apart:
        more, less = (a, b) if v.sign * r.diff > 0 else (b, a)
        head = (f"{more} is more robust than {less}: its {metric_label(v.metric)} {v.drop_words[0]}s "
                f"{pct(abs(r.diff))} points less on average ({nums})")
    else:
        head = f"{a} and {b} are not told apart on average (ΔA − ΔB = {nums})"
    better, worse, neither = _wins(v, a, b)
    tally = f"; condition by condition, {a} is more robust in {better}, {b} in {worse}, neither told apart in {neither}"
    return head + tally + ".", {"model_a": a, "model_b": b, "diff": r.diff, "ci": [r.ci_low, r.ci_high],
                                "p_adj_over_pairs": p_all, "told_apart": apart, "a_better": better, "b_better": worse}


def _pairs(v: MetricView, correction: str) -> list[Finding]:
    keys = [(a, b) for (a, b, c) in v.pairs if c == GROUP_ALL]
    if not keys:
        return []
    if len(keys) <= _MAX_PAIR_SENTENCES:
        out = []
        for a, b in keys:
            text, vals = _pair_sentence(v, a, b, correction)
            out.append(Finding(f"pair:{v.target}:{a}:{b}", f"{_target_label(v.target)}, {metric_label(v.metric)}: {text}",
                               {"target": v.target, "metric": v.metric, **vals}))
        return out
    apart = [(a, b) for a, b in keys if v.overall_apart(a, b)]
    text = (f"{_target_label(v.target)}, {metric_label(v.metric)}: of {len(keys)} pairs of models, {len(apart)} are told "
            f"apart on the mean over all corrupted conditions the mode reads" + (": " + ", ".join(f"{a} vs {b}" for a, b in apart)
                                                                  if apart else "") + " (see the pairs table).")
    return [Finding(f"pairs:{v.target}", text, {"target": v.target, "metric": v.metric, "told_apart": apart})]


def _ratio_text(x: float | None) -> str:
    return "undefined" if finite(x) is None else f"{x:.2f}"


def _undefined_ops(v: MetricView, model: str, field: str) -> list[str]:
    """The operators under which ``model``'s ``field`` (``ce`` or ``relative_ce``) is undefined."""
    return [op for (m, op), n in v.normalised.items()
            if m == model and not op.startswith("mean:") and finite(getattr(n, field)) is None]


def _etc(ops: list[str]) -> str:
    return f"{', '.join(ops[:3])}{', …' if len(ops) > 3 else ''}"


def _undefined_mce(v: MetricView, reference: str, models: list[str], relative: bool = False) -> str:
    """Why the mean (relative) corruption error of ``models`` is undefined: the operators under which
    the reference makes no error (loses nothing, for a relative CE: the ratio divides by the
    reference's errors or drop), or where the model's own value (drop) is undefined."""
    field = "relative_ce" if relative else "ce"
    ref_ops = sorted(_undefined_ops(v, reference, field))
    parts = []
    # an operator of one condition (a text operator) has one level, not severities
    levels = operator_levels(v.conditions)
    single = [levels.get(op) == 1 for op in ref_ops]
    if ref_ops and relative:
        summed = ("at its one level" if all(single) else "summed over the severities" if not any(single) else
                  "summed over the severities (or at its one level)")
        parts.append(f"{reference}, the reference, drops 0 under {len(ref_ops)} operator(s) ({_etc(ref_ops)}: "
                     f"{metric_label(v.metric)} {summed} equals its clean value), and a relative "
                     "corruption error divides by the reference's drop")
    elif ref_ops:
        where = ("at its one level" if all(single) else "at every severity" if not any(single) else
                 "at every severity (or its one level)")
        parts.append(f"{reference}, the reference, makes no error under {len(ref_ops)} operator(s) ({_etc(ref_ops)}: "
                     f"{metric_label(v.metric)} {'100' if v.sign > 0 else '0'}% {where}), and a corruption error divides by the "
                     "reference's errors")
    for m in models:
        own = [op for op in _undefined_ops(v, m, field) if op not in ref_ops]
        if own:
            parts.append(f"{m}'s {'drop' if relative else 'value'} is undefined under {_etc(own)}")
    why = "; ".join(parts) or "see the per-operator records"
    if relative:
        return f"relative mCE undefined for {_join(models)}: {why} (the per-operator values are in compare.json)"
    return f"mean corruption error undefined for {_join(models)}: {why} (the per-operator CEs are in compare.json)"


def _normalised(v: MetricView, reference: str) -> Finding | None:
    rows = [(m, v.values.get((m, GROUP_ALL)), v.normalised.get((m, "mean:all"))) for m in v.ranked()]
    if any(r is None or n is None for _, r, n in rows):
        return None
    # a retention is undefined where the clean value is 0 (flip@1 of every model, a metric nothing scores)
    kept = {m: "undefined" if finite(r.retention) is None else f"{r.retention:.3f}" for m, r, _ in rows}
    parts = [f"{m} {kept[m]} (mCE {n.ce:.2f}, relative mCE {_ratio_text(n.relative_ce)})"
             if finite(n.ce) is not None else f"{m} {kept[m]} (mCE undefined)" for m, _, n in rows]
    undefined = [m for m, _, n in rows if finite(n.ce) is None]
    no_relative = [m for m, _, n in rows if finite(n.ce) is not None and finite(n.relative_ce) is None]
    text = (f"{_target_label(v.target)}, {metric_label(v.metric)}: retention (corrupted / clean, mean over the "
            f"corrupted conditions) and mean corruption error against {reference}: " + "; ".join(parts)
            + (f"; {_undefined_mce(v, reference, undefined)}" if undefined else "")
            + (f"; {_undefined_mce(v, reference, no_relative, relative=True)}" if no_relative else "") + ".")
    return Finding(f"normalised:{v.target}", text, {"target": v.target, "metric": v.metric, "reference": reference,
                                                   "retention": {m: r.retention for m, r, _ in rows},
                                                   "mce": {m: n.ce for m, _, n in rows}})


def _effective(v: MetricView) -> Finding | None:
    recs = {m: v.effective[(m, GROUP_ALL)] for m in v.models if (m, GROUP_ALL) in v.effective}
    fit = v.fits.get(GROUP_ALL)
    if not recs or fit is None or finite(fit.slope) is None:
        return None
    # values equal as written read as equal: float noise (0.0 against -1e-16) ranks no model
    written = {m: pct(r.effective_robustness, True) for m, r in recs.items()}
    hi = written[max(recs, key=lambda m: recs[m].effective_robustness)]
    lo = written[min(recs, key=lambda m: recs[m].effective_robustness)]
    if hi == lo:
        said = (f"the same for all {len(recs)} models at the precision shown ({hi} points): none holds up better "
                "than the others' trend predicts")
    else:
        said = (f"highest {_join([m for m in recs if written[m] == hi])} ({hi} points), "
                f"lowest {_join([m for m in recs if written[m] == lo])} ({lo})")
    text = (f"{_target_label(v.target)}, {metric_label(v.metric)}: effective robustness (corrupted value "
            f"{'above' if v.sign > 0 else 'below (higher is worse)'} the "
            f"logit-space fit across these {fit.n} models; descriptive, relative to this set): {said}.")
    return Finding(f"effective:{v.target}", text, {"target": v.target, "metric": v.metric, "slope": fit.slope,
                                                  "intercept": fit.intercept,
                                                  "effective": {m: r.effective_robustness for m, r in recs.items()}})


def _additivity(v: MetricView) -> Finding | None:
    pairs = [(a, b, r) for (a, b, j), r in v.additivity_pairs.items() if j == "mean"]
    if not pairs:
        return None
    parts = []
    for a, b, r in pairs[:_MAX_PAIR_SENTENCES]:
        sure = ci_excludes_zero([finite(r.ci_low), finite(r.ci_high)])
        word = ((f"{a}'s joint corruptions compound more" if v.sign * r.diff > 0 else f"{b}'s joint corruptions compound more")
                if sure else "not distinguishable")
        parts.append(f"{a} vs {b} δA − δB = {pct(r.diff, True)} points ({_ci(r.ci_low, r.ci_high, v.level)}): {word}")
    more = f" (and {len(pairs) - _MAX_PAIR_SENTENCES} more pairs in compare.json)" if len(pairs) > _MAX_PAIR_SENTENCES else ""
    text = (f"{_target_label(v.target)}, {metric_label(v.metric)}: super-additivity δ (Obs − Exp, mean over the joint "
            f"conditions) between models: " + "; ".join(parts) + more + ".")
    return Finding(f"additivity:{v.target}", text, {"target": v.target, "metric": v.metric,
                                                   "diffs": {f"{a} vs {b}": r.diff for a, b, r in pairs}})


def _variants(sources: Sequence) -> list[Finding]:
    """A warning when the recorded variant sources differ.  A source that is not recorded (an evaluate
    report: score files say nothing of how their queries were corrupted) is unknown, not different;
    it is named only beside released variants, as snapbench's own score files (corrupt, encode, moor)
    hold generated ones."""
    by = {s.name: s.variants or "not recorded" for s in sources}
    known = {v for v in by.values() if v != "not recorded"}
    unknown = [n for n, v in by.items() if v == "not recorded"]
    if len(known) >= 2:
        text = ("The runs' query variants come from different sources (" + ", ".join(f"{n}: {v}" for n, v in by.items())
                + "): a difference between them mixes the variant source with any model difference.")
    elif unknown and known == {"released"}:
        text = (f"{', '.join(n for n, v in by.items() if v == 'released')} evaluated the released query variants; "
                f"the variant source of {', '.join(unknown)} is not recorded (an evaluate report): if "
                f"{'its variants were' if len(unknown) == 1 else 'their variants were'} generated, a difference "
                "mixes the variant source with any model difference.")
    else:
        return []
    return [Finding("variants", text, {"variants": by})]


def compare_findings(views: Sequence[MetricView], sources: Sequence, reference: str, correction: str) -> list[Finding]:
    """Findings of the primary (first) view in full, and the ranking of every other view."""
    out = _variants(sources)
    for i, v in enumerate(views):
        steps = [_ranking(v, correction)]
        if i == 0:
            out += [f for f in steps if f]
            out += _pairs(v, correction)
            out += [f for f in (_normalised(v, reference), _effective(v), _additivity(v)) if f]
        else:
            out += [f for f in steps if f]
    return out


_TIER_COLOURS = ("#1b7837", "#2166ac", "#b2182b", "#762a83", "#e08214", "#35978f", "#555555")


def _point_labels(pts: list[tuple[str, float, float]], span: float) -> list[tuple[str, tuple[float, float], int]]:
    """One label per position (the names of coinciding models joined with '='), and labels of points
    closer than 2% of the axis stacked one line apart (k = the line) so that none overlaps."""
    at: dict[tuple[float, float], list[str]] = {}
    for m, x, y in pts:
        at.setdefault((round(x, 6), round(y, 6)), []).append(m)
    out: list[tuple[str, tuple[float, float], int]] = []
    for (x, y), names in sorted(at.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        near = [k for _, (x1, y1), k in out if abs(x1 - x) < 0.02 * span and abs(y1 - y) < 0.02 * span]
        out.append((" = ".join(names), (x, y), max(near) + 1 if near else 0))
    return out


def fitted(v: MetricView) -> bool:
    """Whether the effective-robustness plot draws a fit (three or more models, clean values that differ)."""
    fit = v.fits.get(GROUP_ALL)
    return fit is not None and bool(np.isfinite(fit.slope))


def effective_caption(v: MetricView) -> str:
    """The caption of :func:`_effective_figure`: the fit is named only when it is drawn."""
    if fitted(v):
        return ("Clean vs corrupted value per model; the curve is the logit-space fit across the models (effective "
                f"robustness = a model's {'height above' if v.sign > 0 else 'depth below'} it"
                f"{v.direction_note}).")
    return ("Clean vs corrupted value per model (no fit drawn: it needs three or more models whose clean values "
            "differ); the dotted line is no drop.")


def _effective_figure(v: MetricView):
    """Clean vs corrupted (group:all) per model; the logit-space fit across models when there is one."""
    Figure = require_matplotlib()
    pts = [(v.label(m), v.values.get((m, "clean")), v.values.get((m, GROUP_ALL))) for m in v.models]
    pts = [(m, to_points(c.value), to_points(g.value)) for m, c, g in pts if c is not None and g is not None]
    pts = [p for p in pts if np.isfinite(p[1]) and np.isfinite(p[2])]
    if not pts:
        return None
    lab = metric_label(v.metric)
    fig = Figure(figsize=(6.5, 5), layout="constrained")
    ax = fig.subplots()
    xs, ys = np.array([p[1] for p in pts]), np.array([p[2] for p in pts])
    lo, hi = max(0.0, min(xs.min(), ys.min()) - 5), min(100.0, max(xs.max(), ys.max()) + 5)
    ax.plot([lo, hi], [lo, hi], color="grey", linestyle=":", label="no drop (corrupted = clean)")
    fit = v.fits.get(GROUP_ALL)
    if fitted(v):
        x = np.linspace(max(lo, 0.5), min(hi, 99.5), 200) / 100
        z = fit.slope * np.log(x / (1 - x)) + fit.intercept
        ax.plot(100 * x, 100 / (1 + np.exp(-z)), color="#c51b7d",
                label=f"fit across models: logit(y) = {fit.slope:.2f} logit(x) {fit.intercept:+.2f}")
    for m, x0, y0 in pts:
        ax.scatter([x0], [y0], s=36, zorder=3)
    for label, (x0, y0), k in _point_labels(pts, hi - lo):
        right = x0 > (lo + hi) / 2  # labels of the right half go left of their point, inside the axes
        ax.annotate(label, (x0, y0), textcoords="offset points", xytext=(-6 if right else 6, 4 + 11 * k), fontsize=8,
                    ha="right" if right else "left")
    pad = 0.02 * (hi - lo)
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(lo - pad, hi + pad)
    ax.set_xlabel(f"clean {lab} (%)")
    ax.set_ylabel(f"corrupted {lab} (%), mean over all corrupted conditions the mode reads")
    legend_outside(ax, below=True, fontsize=8)
    ax.grid(alpha=0.3)
    tidy_axes(ax)
    what = ("effective robustness = height above the fit" if fitted(v) else "no fit: it needs three or more models"
            if fit is None else "no fit: the clean values do not differ")
    ax.set_title(f"{_target_label(v.target)}: clean vs corrupted {lab} per model ({what})", fontsize=10)
    return fig


_KIND_NAMES = {"img": "image", "txt": "text", "joint": "joint (image + text)"}
#: Width (inches) a character of a model's name takes at the figures' font sizes.
_NAME_INCH = 0.075


def _split(cid: str) -> tuple[str, str, str]:
    """(kind, operator, severity digit or '') of a condition id: ``img/low_light/s2`` ->
    ``("img", "low_light", "2")``, ``txt/char_add`` -> ``("txt", "char_add", "")``."""
    parts = cid.split("/")
    sev = parts[-1][1:] if len(parts) > 2 and parts[-1][:1] == "s" and parts[-1][1:].isdigit() else ""
    op = "/".join(parts[1:-1] if sev else parts[1:]) or cid
    return (parts[0] if len(parts) > 1 else ""), op, sev


def _runs(keys: list) -> list[tuple[object, int, int]]:
    """Consecutive runs of equal keys: (key, first index, last index + 1)."""
    out: list[tuple[object, int, int]] = []
    for i, k in enumerate(keys):
        if out and out[-1][0] == k:
            out[-1] = (k, out[-1][1], i + 1)
        else:
            out.append((k, i, i + 1))
    return out


def _group_axis(ax, conds: list[str]) -> None:
    """Conditions grouped on the x axis: each operator named once under its columns (its severities
    as small digits right under the cells), lines between operators and between kinds, the kinds
    named above the map."""
    parts = [_split(c) for c in conds]
    ops = _runs([(k, op) for k, op, _ in parts])
    ax.set_xticks([(a + b - 1) / 2 for _, a, b in ops], [op for (_, op), _, _ in ops], rotation=90, fontsize=8)
    sev = [i for i, p in enumerate(parts) if p[2]]
    ax.xaxis.remove_overlapping_locs = False  # a severity digit under the column its operator is named at
    ax.set_xticks(sev, [parts[i][2] for i in sev], minor=True, fontsize=7)
    ax.tick_params(axis="x", which="major", pad=10 if sev else 3, length=0)
    ax.tick_params(axis="x", which="minor", pad=1, length=2)
    for _, a, _ in ops[1:]:
        ax.axvline(a - 0.5, color="white", linewidth=1.2)
    kinds = _runs([k for k, _, _ in parts])
    for _, a, _ in kinds[1:]:
        ax.axvline(a - 0.5, color="black", linewidth=1.4)
    top = ax.secondary_xaxis("top")
    top.set_xticks([(a + b - 1) / 2 for _, a, b in kinds], [_KIND_NAMES.get(str(k), str(k)) for k, _, _ in kinds],
                   fontsize=9)
    top.tick_params(length=0)


def heatmap_figure(v: MetricView):
    """Models x corrupted conditions coloured by Δ (points), conditions grouped by kind and operator."""
    Figure = require_matplotlib()
    from matplotlib.colors import TwoSlopeNorm

    conds = list(v.conditions)
    if not conds:
        return None
    m = np.array([[to_points(v.values[(mod, c)].delta) if (mod, c) in v.values else np.nan for c in conds]
                  for mod in v.models])
    lab = metric_label(v.metric)
    longest = max(len(_split(c)[1]) for c in conds)
    names = [v.label(mod) for mod in v.models]
    # the model names take their own width: the map keeps its width however long they are
    fig = Figure(figsize=(max(8.0, 0.2 * len(conds) + 3.5) + _NAME_INCH * max(map(len, names)),
                          0.45 * len(v.models) + 2.2 + 0.075 * longest), layout="constrained")
    ax = fig.subplots()
    lim = max(float(np.nanmax(np.abs(m))) if np.isfinite(m).any() else 0.0, 1.0)
    im = ax.imshow(m, cmap="RdBu" if v.sign > 0 else "RdBu_r", norm=TwoSlopeNorm(0.0, -lim, lim), aspect="auto", interpolation="nearest")
    ax.set_yticks(range(len(v.models)), names, fontsize=9)
    _group_axis(ax, conds)
    ax.set_xlabel("condition: operator (severity 1–3 under its columns where it has them)")
    cb = fig.colorbar(im, ax=ax, shrink=0.9)
    cb.set_label(f"Δ{lab} (points, condition − clean)")
    ax.set_title(f"{_target_label(v.target)}: Δ{lab} per model and condition (red = drop{v.direction_note})", fontsize=11)
    return fig


_COLUMN_KINDS = (("group:img/", "image primitive × severity"), ("group:txt", "text conditions"),
                 ("group:joint", "joint conditions"), (GROUP_ALL, "all corrupted conditions the mode reads"))


def _bar_columns(v: MetricView) -> list[tuple[str, str]]:
    return [(h, c) for h, c in _paper_columns(v.columns) if c != "clean"]


def _columns_shown(cols: list[tuple[str, str]]) -> list[str]:
    """The kinds of paper column the bars show, in words (only those shown)."""
    return [words for prefix, words in _COLUMN_KINDS if any(c.startswith(prefix) for _, c in cols)]


def _primitives_caption(v: MetricView) -> str:
    """The caption of :func:`primitive_bars_figure`: the kinds of column it shows."""
    shown = _columns_shown(_bar_columns(v))
    return f"Δ per {', '.join(shown)}, one bar per model (each the mean over its conditions); whiskers: its CI."


def primitive_bars_figure(v: MetricView):
    """Δ per paper column, one bar per model, whiskers = CI."""
    Figure = require_matplotlib()
    cols = _bar_columns(v)
    if not cols:
        return None
    lab = metric_label(v.metric)
    names = [v.label(mod) for mod in v.models]
    fig = Figure(figsize=(max(8.0, 0.55 * len(cols) * max(1, len(v.models)) / 2 + 2) + _NAME_INCH * max(map(len, names)),
                          4.6), layout="constrained")
    ax = fig.subplots()
    width = 0.8 / len(v.models)
    for j, mod in enumerate(v.models):
        x = np.arange(len(cols)) + (j - (len(v.models) - 1) / 2) * width
        recs = [v.values.get((mod, c)) for _, c in cols]
        y = np.array([to_points(r.delta) if r else np.nan for r in recs])
        lo = np.array([to_points(r.ci_low) if r else np.nan for r in recs])
        hi = np.array([to_points(r.ci_high) if r else np.nan for r in recs])
        ax.bar(x, y, width, yerr=[np.clip(y - lo, 0, None), np.clip(hi - y, 0, None)], capsize=2, label=names[j],
               error_kw={"elinewidth": 0.7})
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set_xticks(np.arange(len(cols)), [h for h, _ in cols], rotation=45, ha="right", fontsize=8)
    shown = _columns_shown(cols)
    ax.set_xlabel(f"{', '.join(shown)} (each the mean over its conditions)")
    ax.set_ylabel(f"Δ{lab} (points, condition − clean)")
    # outside the axes, right of them: inside, it would cover bars and whiskers wherever it went
    ax.legend(title="model", fontsize=8, title_fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    ax.grid(axis="y", alpha=0.3)
    tidy_axes(ax)
    what = "primitive and severity" if any(c.startswith("group:img/") for _, c in cols) else "condition group"
    ax.set_title(f"{_target_label(v.target)}: Δ{lab} by {what} per model (whiskers: {ci_label(v.level)})", fontsize=10)
    return fig


def _rank_figure(v: MetricView):
    """Rank (dot) and bootstrap rank interval (bar) per model, coloured by tier."""
    Figure = require_matplotlib()
    if not v.ranking:
        return None
    order = v.ranked()
    fig = Figure(figsize=(6.5, 0.45 * len(order) + 1.8), layout="constrained")
    ax = fig.subplots()
    seen: set[int] = set()
    for i, mod in enumerate(order):
        r = v.ranking[mod]
        colour = _TIER_COLOURS[(r.group - 1) % len(_TIER_COLOURS)]
        label = None if r.group in seen else f"tier {r.group}"
        seen.add(r.group)
        if np.isfinite(r.rank_low) and np.isfinite(r.rank_high):
            ax.plot([r.rank_low, r.rank_high], [i, i], color=colour, linewidth=4, alpha=0.45, solid_capstyle="round")
        ax.scatter([r.rank], [i], color=colour, s=40, zorder=3, label=label)
    ax.set_yticks(range(len(order)), [v.label(m) for m in order], fontsize=8)
    ax.invert_yaxis()
    n = len(order)
    ax.set_xticks(range(1, n + 1))
    ax.set_xlim(0.5, n + 0.5)
    ax.set_xlabel(f"rank by mean Δ{metric_label(v.metric)} over all corrupted conditions the mode reads "
                  f"(1 = smallest {v.drop_words[0]})")
    legend_outside(ax, fontsize=8, title="not told apart\nwithin a tier", title_fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(f"{_target_label(v.target)}: rank and its bootstrap {ci_label(v.level)} per model", fontsize=10)
    return fig


#: name (:data:`snapbench.store.compare.COMPARE_FIGURES`, the file names) -> (function, caption or a function
#: of the view giving it); the order of the report.
FIGURES = dict(zip(COMPARE_FIGURES, (
    (_effective_figure, effective_caption),
    (heatmap_figure, "Δ per model and condition (points; red = drop)."),
    (primitive_bars_figure, _primitives_caption),
    (_rank_figure, "Rank (dot) and bootstrap rank interval (bar) per model; colours: tiers of models not told apart."),
), strict=True))


@dataclass
class Settings:
    """The comparison's resolved settings, and notes on what was left out or defaulted."""

    targets: list[str]
    metrics: list[str]
    metric: str
    resamples: int
    seed: int
    ci: float
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """compare.json ``settings`` (less what the statistics add) and run.json's: every field but the notes."""
        return {"targets": self.targets, "metrics": self.metrics, "metric": self.metric, "resamples": self.resamples,
                "seed": self.seed, "ci": self.ci}


@dataclass
class CompareResult:
    """What a comparison computed and wrote."""

    out: Path
    sources: list[ModelSource]
    settings: Settings
    comparison: Comparison
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)


@dataclass
class Written:
    """What the writer produced for the page: tables and figures per target (headline metric)."""

    tables: dict[str, list[Table]] = field(default_factory=dict)
    figures: dict[str, list[HtmlFigure]] = field(default_factory=dict)
    findings: list = field(default_factory=list)
