"""Paper tables: one table model rendered as Markdown, LaTeX (booktabs) and HTML.

Layout of the per-mode tables (the paper's): rows are image operators grouped by primitive (Degrade,
Transform, Remove, Add), then text operators grouped by level (char, word, sentence); columns are the
severities s1..s3.  A text operator has one level, so its value spans the severity columns (LaTeX
``\\multicolumn``; in Markdown it sits under s1).  Numbers are percentage points with one decimal
(:mod:`snapbench.render.fmt`: never ``-0.0``); a CI is the report's paired bootstrap interval.

Signs, said in every caption: the Δ tables show condition − clean (negative = worse); the
additivity tables show drops, clean − condition (positive = worse), as SPEC §8 defines them.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..core.conditions import IMAGE_PRIMITIVES, JOINT_PAIR_LABELS, JOINT_PAIRS, TEXT_LEVELS, Condition, parse_condition
from ..core.records import Additivity, Paired, Report
from ..core.targets import target_reads
from .fmt import DROP_SIGN, PAIRED_SIGN, ci_label, ci_text, minus, points

__all__ = [
    "Cell",
    "Table",
    "additivity_by_pair",
    "additivity_table",
    "corrupted_deltas",
    "image_id",
    "image_operators",
    "kind_means",
    "metric_label",
    "mode_delta_table",
    "mode_value_table",
    "operator_groups",
    "pair_label",
    "report_labelled",
    "severities",
    "summary_table",
    "tex_escape",
    "text_operators",
]

_PAIR_ABBREV: dict[str, str] = {f"{img}+{txt}": label for (img, txt), label in JOINT_PAIR_LABELS.items()}


def metric_label(metric: str) -> str:
    """SnapBench calls hit@k "R@k"; other metrics keep their own name."""
    m = re.fullmatch(r"hit@(\d+)", metric)
    return f"R@{m.group(1)}" if m else metric


@dataclass
class Cell:
    """A number in points (``value`` in [0, 1] units, shown x100) with an optional CI, or a text."""

    value: float | None = None
    ci: Sequence[float | None] | None = None
    signed: bool = False
    text: str | None = None
    span: int = 1

    def parts(self) -> tuple[str | None, str | None]:
        if self.text is not None:
            return self.text, None
        has_ci = self.ci and self.ci[0] is not None and self.ci[1] is not None
        return points(self.value, signed=self.signed), ci_text(self.ci, signed=self.signed) if has_ci else None

    def md(self) -> str:
        v, ci = self.parts()
        if v is None:
            return "–"
        return f"{v} {ci}" if ci else v

    def tex(self) -> str:
        v, ci = self.parts()
        if self.text is not None:
            return tex_escape(self.text)
        if v is None:
            return "--"
        out = f"${v}$"
        if ci:
            out += r" {\footnotesize $" + ci + "$}"
        return out

    def html(self) -> str:
        v, ci = self.parts()
        if v is None:
            return "–"
        if self.text is not None:
            return html.escape(v)
        out = html.escape(minus(v))
        if ci:
            out += f' <span class="ci">{html.escape(minus(ci))}</span>'
        return out


@dataclass
class Table:
    """Rows in groups; the first column holds row labels (plain text)."""

    name: str
    title: str
    columns: list[str]
    groups: list[tuple[str, list[tuple[str, list[Cell]]]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: HTML only: a row label or column header -> the text shown on hover (a shortened model name's full name)
    hover: dict[str, str] = field(default_factory=dict)

    def _th(self, text: str, attrs: str = "") -> str:
        full = self.hover.get(text)
        title = f' title="{html.escape(full)}"' if full and full != text else ""
        return f"<th{attrs}{title}>{html.escape(text)}</th>"

    def rows(self):
        for _, rows in self.groups:
            yield from rows

    def to_markdown(self) -> str:
        lines = [f"**{self.title}**", "", "| " + " | ".join(self.columns) + " |",
                 "|---|" + "---:|" * (len(self.columns) - 1)]
        for gname, rows in self.groups:
            if gname:
                lines.append(f"| **{gname}** |" + " |" * (len(self.columns) - 1))
            for label, cells in rows:
                out = []
                for c in cells:
                    out.append(c.md())
                    out += [""] * (c.span - 1)
                lines.append("| " + " | ".join([label] + out) + " |")
        if self.notes:
            lines += [""] + [f"{n}" for n in self.notes]
        return "\n".join(lines) + "\n"

    def to_latex(self) -> str:
        ncol = len(self.columns)
        lines = [f"% {tex_escape(self.title)}", "% needs \\usepackage{booktabs}",
                 r"\begin{tabular}{l" + "r" * (ncol - 1) + "}", r"\toprule",
                 " & ".join(tex_escape(c) for c in self.columns) + r" \\", r"\midrule"]
        for gi, (gname, rows) in enumerate(self.groups):
            if gi and rows:
                lines.append(r"\midrule")
            if gname:
                lines.append(r"\multicolumn{" + str(ncol) + r"}{l}{\textit{" + tex_escape(gname) + r"}} \\")
            for label, cells in rows:
                out = []
                for c in cells:
                    out.append(c.tex() if c.span == 1 else r"\multicolumn{" + str(c.span) + "}{c}{" + c.tex() + "}")
                lines.append(" & ".join([tex_escape(label)] + out) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}"]
        lines += [f"% {tex_escape(n)}" for n in self.notes]
        return "\n".join(lines) + "\n"

    def to_html(self) -> str:
        h = [f'<table class="paper" id="table-{html.escape(self.name)}"><caption>{html.escape(self.title)}</caption>',
             "<thead><tr>" + "".join(self._th(c) for c in self.columns) + "</tr></thead><tbody>"]
        for gname, rows in self.groups:
            if gname:
                h.append(f'<tr class="group"><th colspan="{len(self.columns)}">{html.escape(gname)}</th></tr>')
            for label, cells in rows:
                tds = "".join(
                    f'<td{"" if c.span == 1 else f" colspan={c.span!r}"}>{c.html()}</td>' for c in cells)
                h.append(f"<tr>{self._th(label)}{tds}</tr>")
        h.append("</tbody></table>")
        if self.notes:
            h.append("".join(f'<p class="note">{html.escape(n)}</p>' for n in self.notes))
        return "\n".join(h)


_TEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                 "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                 "→": r"$\rightarrow$", "δ": r"$\delta$", "Δ": r"$\Delta$", "α": r"$\alpha$", "−": "-",
                 "–": "--", "±": r"$\pm$"}


def tex_escape(text: str) -> str:
    """Escape LaTeX specials (and the few non-ASCII symbols the tables use) in plain text."""
    return "".join(_TEX_SPECIALS.get(ch, ch) for ch in str(text))


def image_id(op: str, severity: int) -> str:
    return Condition("image", image_operator=op, severity=severity).id


def _text_id(op: str) -> str:
    return Condition("text", text_operator=op).id


#: The paper's operator groups, in its order: image primitives, then text levels.
_OPERATOR_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    *((prim.capitalize(), tuple(ops)) for prim, ops in IMAGE_PRIMITIVES.items()),
    *((f"Text: {level}", tuple(ops)) for level, ops in TEXT_LEVELS.items()))


def operator_groups(present: Sequence[str], other: str = "Other") -> list[tuple[str, list[str]]]:
    """``[(group title, [operator, ...]), ...]``: the operators in ``present`` grouped as the paper's
    tables group them, in its order; operators outside the taxonomy (a custom grid) form a group
    ``other`` at the end, in the order of ``present``."""
    groups, known = [], set()
    for title, ops in _OPERATOR_GROUPS:
        known.update(ops)
        have = [op for op in ops if op in present]
        if have:
            groups.append((title, have))
    rest = [op for op in present if op not in known]
    return groups + ([(other, rest)] if rest else [])


def image_operators(report: Report) -> list[tuple[str, list[str]]]:
    """The image operators in the report by primitive (:func:`operator_groups`)."""
    present = dict.fromkeys(c.image_operator for c in map(parse_condition, report.conditions) if c.kind == "image")
    return operator_groups(list(present))


def text_operators(report: Report) -> list[tuple[str, list[str]]]:
    """The text operators in the report by level (:func:`operator_groups`; others by name)."""
    return operator_groups(sorted({c.text_operator for c in map(parse_condition, report.conditions)
                                   if c.kind == "text"}), other="Text: other")


def severities(report: Report) -> list[int]:
    sev = {parse_condition(c).severity for c in report.conditions if parse_condition(c).kind == "image"}
    return sorted(sev) or [1, 2, 3]


def _paired(report: Report, cond: str, metric: str) -> Paired | None:
    return report.paired.get(cond, {}).get(metric)


def _delta_cell(pr: Paired | None, span: int = 1) -> Cell:
    return Cell(pr.delta, pr.ci, signed=True, span=span) if pr else Cell(span=span)


def mode_delta_table(report: Report, mode_name: str, metric: str = "hit@1", key: str = "") -> Table:
    """Δ(metric) = condition − clean with the paired bootstrap CI, plus the cliff/gradual label."""
    lab = metric_label(metric)
    sevs = severities(report)
    clean = report.value("clean", metric)
    t = Table(name=f"{key or mode_name}_delta",
              title=f"{mode_name}: Δ{lab} in points ({PAIRED_SIGN}) with {ci_label(report.meta.ci_level)}; clean {lab} = "
                    + ("–" if clean is None else f"{points(clean)}%"),
              columns=["Operator"] + [f"s{s}" for s in sevs] + ["Response"])
    for prim, ops in image_operators(report):
        rows = []
        for op in ops:
            cells = [_delta_cell(_paired(report, image_id(op, s), metric)) for s in sevs]
            curve = report.severity_curves.get(op, {}).get(metric)
            cells.append(Cell(text=curve.label if curve else "–"))
            rows.append((op, cells))
        t.groups.append((prim, rows))
    for level, ops in text_operators(report):
        t.groups.append((level, [(op, [_delta_cell(_paired(report, _text_id(op), metric), len(sevs)), Cell(text="")])
                                 for op in ops]))
    t.notes.append("Text operators have one level: their value spans the severity columns (under s1 in Markdown).")
    if report.meta.cliff_rule:
        t.notes.append("Response: " + report.meta.cliff_rule)
    return t


def mode_value_table(report: Report, mode_name: str, metric: str = "hit@1", key: str = "") -> Table:
    """The metric itself (percent) per operator and severity."""
    lab = metric_label(metric)
    sevs = severities(report)
    t = Table(name=f"{key or mode_name}_{re.sub(r'[^A-Za-z0-9]+', '', lab).lower()}",
              title=f"{mode_name}: {lab} (%) per condition", columns=["Operator"] + [f"s{s}" for s in sevs])
    t.groups.append(("", [("clean", [Cell(report.value("clean", metric), span=len(sevs))])]))
    for prim, ops in image_operators(report):
        t.groups.append((prim, [(op, [Cell(report.value(image_id(op, s), metric)) for s in sevs]) for op in ops]))
    for level, ops in text_operators(report):
        t.groups.append((level, [(op, [Cell(report.value(_text_id(op), metric), span=len(sevs))]) for op in ops]))
    return t


def pair_label(pair: str) -> str:
    """A joint pair (``image_op+text_op``) as tables and figures name it: its abbreviation first."""
    ab = _PAIR_ABBREV.get(pair)
    return f"{ab} {pair}" if ab else pair


def additivity_by_pair(report: Report, metric: str) -> dict[str, dict[int, Additivity]]:
    """``{pair: {severity: additivity entry}}`` of the joint conditions with ``metric``, the paper's
    pairs in its order (:data:`~snapbench.core.conditions.JOINT_PAIRS`), then others by name."""
    cells: dict[str, dict[int, Additivity]] = {}
    for jid, entry in report.additivity.items():
        if metric in entry:
            c = parse_condition(jid)
            cells.setdefault(f"{c.image_operator}+{c.text_operator}", {})[c.severity] = entry[metric]
    order = [f"{i}+{j}" for i, j in JOINT_PAIRS]
    return {p: cells[p] for p in sorted(cells, key=lambda p: (order.index(p) if p in order else len(order), p))}


def _additivity_cells(x: Additivity) -> list[Cell]:
    return [Cell(x.exp, signed=True), Cell(x.obs, signed=True), Cell(x.delta, x.ci, signed=True)]


def additivity_table(report: Report, mode_name: str, metric: str = "hit@1", key: str = "") -> Table | None:
    """Pair x severity: Exp = Δ_I + Δ_T, Obs, δ = Obs − Exp with its CI (drops in points); None when
    the report has no additivity entry for ``metric``."""
    lab = metric_label(metric)
    by_pair = additivity_by_pair(report, metric)
    if not by_pair:
        return None
    t = Table(name=f"{key or mode_name}_additivity",
              title=f"{mode_name}: additivity of joint corruptions — {lab} {DROP_SIGN}, in points (the Δ tables "
                    "show condition − clean); δ = Obs − Exp, > 0 super-additive",
              columns=["Pair / severity", "Exp drop", "Obs drop", f"δ [{ci_label(report.meta.ci_level)}]"])
    for pair, by_sev in by_pair.items():
        t.groups.append((pair_label(pair), [(f"s{s}", _additivity_cells(e)) for s, e in sorted(by_sev.items())]))
    summ = report.additivity_summary
    rows = [(f"mean {sev}", _additivity_cells(e[metric])) for sev, e in summ.by_severity.items() if metric in e]
    if summ.mean and metric in summ.mean:
        rows.append(("mean (all)", _additivity_cells(summ.mean[metric])))
    if rows:
        t.groups.append(("Means", rows))
    t.notes.append("Exp = Δ_I + Δ_T (drops of the image and text parts alone), Obs = drop of the joint condition; "
                   "the CI resamples queries jointly across the four states.")
    return t


def report_labelled(report: Report) -> bool:
    """The report was evaluated against relevance labels (it says so, or is older than the label-free
    evaluation and says nothing)."""
    return report.meta.get("labelled", True) is not False


def corrupted_deltas(report: Report, metric: str, target: str | None = None) -> dict[str, float]:
    """Condition -> its paired Δ of ``metric`` (report.json), every corrupted condition that has a
    finite one; with ``target``, only the conditions that corrupt a side of the query the target
    reads (:func:`snapbench.core.targets.target_reads`: an image condition cannot move T→T)."""
    out = {}
    for c, per in report.paired.items():
        pr = per.get(metric)
        if c != "clean" and pr is not None and pr.delta is not None and math.isfinite(pr.delta):
            if target is None or target_reads(target, c):
                out[c] = float(pr.delta)
    return out


def kind_means(report: Report, metric: str, target: str | None = None) -> dict[str, float | None]:
    """Mean metric per condition kind (clean, image, text, joint) and mean paired Δ per kind; with
    ``target``, over the conditions it reads (:func:`corrupted_deltas`), as the headline's means."""
    vals: dict[str, list[float]] = {}
    deltas: dict[str, list[float]] = {}
    read = corrupted_deltas(report, metric, target)
    for cid, v in report.conditions.items():
        kind = parse_condition(cid).kind
        if target is not None and kind != "clean" and not target_reads(target, cid):
            continue
        if v.get(metric) is not None:
            vals.setdefault(kind, []).append(v[metric])  # type: ignore[arg-type]
        if cid in read:
            deltas.setdefault(kind, []).append(read[cid])
    out: dict[str, float | None] = {}
    for kind in ("clean", "image", "text", "joint"):
        out[kind] = sum(vals[kind]) / len(vals[kind]) if vals.get(kind) else None
        out["d_" + kind] = sum(deltas[kind]) / len(deltas[kind]) if deltas.get(kind) else None
    return out


def summary_table(rows: Sequence[tuple[str, str, Report]], metric: str = "hit@1") -> Table:
    """One row per ``(name, target, report)`` (a mode, MOOR, a fusion method): clean value, mean value
    per condition kind and mean Δ per kind, over the conditions the target reads (:func:`kind_means`)."""
    lab = metric_label(metric)
    t = Table(name="summary", title=f"Summary: {lab} (%) averaged over the conditions of each kind that each target "
                                    "reads (an image condition cannot move T→T, nor a text condition I→I: –); "
                                    f"Δ in points ({PAIRED_SIGN})",
              columns=["Mode", "clean", "image", "text", "joint", f"Δ{lab} image", f"Δ{lab} text", f"Δ{lab} joint"])
    body = []
    for name, target, rep in rows:
        m = kind_means(rep, metric, target)
        body.append((name, [Cell(m["clean"]), Cell(m["image"]), Cell(m["text"]), Cell(m["joint"]),
                            Cell(m["d_image"], signed=True), Cell(m["d_text"], signed=True),
                            Cell(m["d_joint"], signed=True)]))
    t.groups.append(("", body))
    return t
