"""``compare.html``: the comparison on one self-contained page (:func:`snapbench.htmlpage.render_html`:
inline CSS, figures as base64 PNG, no external resource).

Sections: findings, the models compared, then one section per target (headline metric): the paper
table, the Δ table, the ranking, the pairs, the figures; notes on what was left out; the files.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from ..evaluate.fmt import ci_level_text
from ..htmlpage import HtmlSection, details, render_html, ul
from ..report.tables import Cell, Table, metric_label
from .tables import target_label
from .view import display_names

if TYPE_CHECKING:
    from .runs import CompareResult
    from .write import Written

__all__ = ["render_page"]


def _summary(res: CompareResult) -> list[tuple[str, str]]:
    st, meta = res.settings, res.comparison.meta
    return [
        ("models", ", ".join(display_names([s.name for s in res.sources]).values())),
        ("targets", ", ".join(target_label(t) for t in st.targets)),
        ("metrics", ", ".join(st.metrics) + f"; headline {metric_label(st.metric)} ({st.metric}); values in %, "
                                            "differences in points"),
        ("queries", f"{meta.get('n_queries')} (the same in every run; a ranking metric resamples only those with a "
                    "relevant item)"),
        ("reference", f"{meta.get('reference')} (CE = 1)"),
        ("tests", f"exact McNemar / sign-flip for hit@k per condition, paired permutation otherwise; p adjusted with "
                  f"{meta.get('correction_method')} over the conditions of each pair"),
        ("bootstrap", f"{st.resamples} resamples of the queries, jointly for all models; {ci_level_text(st.ci)} "
                      f"percentile intervals; seed {st.seed}"),
        ("signs", "Δ = condition − clean (negative = worse); ΔA − ΔB > 0 = A drops less"),
        ("verdicts", f"a difference is called real only when its adjusted p < {1 - st.ci:.2g} and its CI excludes 0"),
    ]


def _models_table(res: CompareResult) -> Table:
    """Each model as the tables and figures name it, with where it came from and its full encoder spec."""
    t = Table("models", "The models compared", ["Model", "from", "encoder", "variants", "dataset"])
    label = display_names([s.name for s in res.sources])
    t.groups.append(("", [(label[s.name], [Cell(text=str(s.path)), Cell(text=str(s.run.get("encoder") or "–")),
                                    Cell(text=s.variants or "–"), Cell(text=str(s.run.get("dataset") or "–"))])
                          for s in res.sources]))
    return t


def _scroll(table: Table, hover: dict[str, str] | None = None) -> str:
    """A wide table (a column per primitive and severity, long paths) scrolls inside the page's width;
    a shortened model name shows its full name on hover (``hover``: short name -> full name)."""
    table.hover = {**table.hover, **(hover or {})}
    return f'<div class="table-scroll" style="overflow-x:auto;max-width:100%">{table.to_html()}</div>'


def _full_names(res: CompareResult) -> dict[str, str]:
    """Shortened model name -> full name, for the models whose page name is shortened; likewise the
    pairs table's "A vs B" labels."""
    label = display_names([s.name for s in res.sources])
    out = {short: full for full, short in label.items() if short != full}
    out.update({f"{label[a]} vs {label[b]}": f"{a} vs {b}" for a in label for b in label
                if a != b and (a in out.values() or b in out.values())})
    return out


def _target_section(res: CompareResult, written: Written, target: str) -> HtmlSection:
    sec = HtmlSection(f"target-{target.replace('/', '-')}", f"{target_label(target)}")
    tables = written.tables.get(target, [])
    if tables:
        value, delta, ranking, pairs = tables
        full = _full_names(res)
        sec.raw += [_scroll(ranking, full), _scroll(pairs, full), _scroll(value, full),
                    details(f"Δ{metric_label(res.settings.metric)} per model and column, with CIs", _scroll(delta, full))]
    sec.figures += written.figures.get(target, [])
    others = [m for m in res.settings.metrics if m != res.settings.metric]
    if others:
        sec.raw.append(f'<p class="note">Other metrics ({html.escape(", ".join(others))}): tables/ and compare.json.</p>')
    return sec


def render_page(res: CompareResult, written: Written, targets: list[str]) -> str:
    """The whole page (UTF-8 text)."""
    sections = [HtmlSection("findings", "Findings", raw=[ul([(f"finding-{f.id}", f.text) for f in written.findings],
                                                            "findings")]),
                HtmlSection("models", "Models", raw=[_scroll(_models_table(res), _full_names(res))])]
    sections += [_target_section(res, written, t) for t in targets]
    if res.notes:
        sections.append(HtmlSection("notes", "Notes", missing=list(res.notes)))
    files = [str(p.relative_to(res.out)) for p in res.files if p.is_relative_to(res.out)]
    sections.append(HtmlSection("files", "Files of this comparison",
                                raw=[ul([("", f) for f in files + ["compare.html", "run.json"]], code=True)]))
    names = ", ".join(display_names([s.name for s in res.sources]).values())
    return render_html(f"snapbench compare — {names}", _summary(res), sections)
