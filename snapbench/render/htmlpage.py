"""The self-contained HTML page of ``report``, ``compare`` and ``diagnose``: inline CSS, figures as
base64 PNG, no external resource.  It sits below the three, so that none imports another for it.

A tiny inline script checks, once the page has loaded, that every ``<img>`` decoded
(``naturalWidth > 0``) and records the count on ``<body data-images-ok="k/n">`` — a headless browser
(``chromium --dump-dom``) can read it, and a failure is also logged as a console error.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

__all__ = ["HtmlFigure", "HtmlSection", "details", "html_table", "render_html", "ul"]

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0 auto;max-width:1180px;
padding:1.2em 2em 4em;color:#1b1b1b;line-height:1.45;background:#fff}
h1{font-size:1.7em;margin-bottom:.2em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}
h3{margin-top:1.6em}
dl.summary{display:grid;grid-template-columns:max-content auto;gap:.2em 1.2em;background:#f6f8fa;padding:.8em 1em;
border-radius:6px}
dl.summary dt{font-weight:600}dl.summary dd{margin:0}
ul.findings li{margin:.35em 0}
table.paper{border-collapse:collapse;margin:1em 0;font-size:.88em;font-variant-numeric:tabular-nums}
table.paper caption{caption-side:top;text-align:left;font-weight:600;padding-bottom:.4em}
table.paper th,table.paper td{padding:.18em .7em;text-align:right;border-bottom:1px solid #eee;white-space:nowrap}
table.paper th:first-child{text-align:left;font-weight:500}
table.paper td[colspan]{text-align:center}
table.paper thead th{border-top:2px solid #333;border-bottom:1px solid #333;font-weight:600}
table.paper tbody tr:last-child td,table.paper tbody tr:last-child th{border-bottom:2px solid #333}
table.paper tr.group th{text-align:left;font-style:italic;background:#f6f8fa;font-weight:600}
span.ci{color:#666;font-size:.85em}
p.note{color:#555;font-size:.85em;margin:.2em 0}
p.missing{background:#fff8e1;border-left:4px solid #f0b400;padding:.4em .8em;font-size:.9em}
figure{margin:1.4em 0;text-align:center}figure img{max-width:100%;height:auto;border:1px solid #eee}
figure.sheet img{max-width:640px}
figcaption{font-size:.88em;color:#444;margin-top:.3em;text-align:left}
details{margin:.8em 0}summary{cursor:pointer;font-weight:600}
nav.toc{font-size:.9em}nav.toc a{margin-right:1em}
code{background:#f3f3f3;padding:0 .25em;border-radius:3px}
"""

_SCRIPT = """
window.addEventListener('load', function () {
  var imgs = document.images, ok = 0;
  for (var i = 0; i < imgs.length; i++) {
    if (imgs[i].complete && imgs[i].naturalWidth > 0) { ok++; }
    else { console.error('snapbench report: image did not decode: ' + imgs[i].id); }
  }
  document.body.setAttribute('data-images-ok', ok + '/' + imgs.length);
});
"""


@dataclass
class HtmlFigure:
    name: str
    caption: str
    png: bytes


@dataclass
class HtmlSection:
    """A titled block: paragraphs (already escaped HTML allowed via ``raw``), tables, figures."""

    id: str
    title: str
    raw: list[str] = field(default_factory=list)
    figures: list[HtmlFigure] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def add_figure(self, fig: HtmlFigure | None, missing: str = "") -> None:
        """Show ``fig``; where there is none (it could not be drawn), list ``missing`` instead, if given."""
        if fig is not None:
            self.figures.append(fig)
        elif missing:
            self.missing.append(missing)


def ul(items: list[tuple[str, str]], cls: str = "", *, code: bool = False) -> str:
    """A list of ``(id, text)`` items (text escaped, in ``<code>`` with ``code``; ``id`` may be empty)."""
    wrap = (lambda t: f"<code>{html.escape(t)}</code>") if code else html.escape
    lis = "".join((f'<li id="{html.escape(i)}">' if i else "<li>") + f"{wrap(t)}</li>" for i, t in items)
    return f'<ul class="{html.escape(cls)}">{lis}</ul>' if cls else f"<ul>{lis}</ul>"


def html_table(columns: Sequence[str], rows: Iterable[Sequence[str]], caption_html: str, table_id: str = "") -> str:
    """A ``table.paper`` on one line: ``columns`` are text (escaped here), the cells of ``rows`` and the
    caption already HTML; each row's first cell is its header (``<th>``).  The paper tables of
    :class:`snapbench.render.tables.Table` are the report's other kind (groups, notes, LaTeX)."""
    tid = f' id="table-{table_id}"' if table_id else ""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(f"<tr><th>{r[0]}</th>" + "".join(f"<td>{c}</td>" for c in r[1:]) + "</tr>" for r in rows)
    return (f'<table class="paper"{tid}><caption>{caption_html}</caption><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table>")


def details(summary: str, body_html: str) -> str:
    """A collapsed block: ``summary`` (escaped) over ``body_html`` (already HTML)."""
    return f"<details><summary>{html.escape(summary)}</summary>{body_html}</details>"


def _figure(f: HtmlFigure) -> str:
    b64 = base64.b64encode(f.png).decode("ascii")
    cap = html.escape(f.caption)
    cls = ' class="sheet"' if f.name == "contact_sheet" else ""
    return (f'<figure id="fig-{html.escape(f.name)}"{cls}><img id="img-{html.escape(f.name)}" '
            f'alt="{cap}" src="data:image/png;base64,{b64}"><figcaption>{cap}</figcaption></figure>')


def render_html(title: str, summary: list[tuple[str, str]], sections: list[HtmlSection]) -> str:
    """The whole page as one string (UTF-8)."""
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{html.escape(title)}</title><style>{_CSS}</style><script>{_SCRIPT}</script></head><body>",
           f"<h1>{html.escape(title)}</h1>", '<dl class="summary">']
    for k, v in summary:
        out.append(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>")
    out.append("</dl>")
    out.append('<nav class="toc">' + "".join(f'<a href="#{html.escape(s.id)}">{html.escape(s.title)}</a>'
                                            for s in sections) + "</nav>")
    for s in sections:
        out.append(f'<section id="{html.escape(s.id)}"><h2>{html.escape(s.title)}</h2>')
        for m in s.missing:
            out.append(f'<p class="missing">{html.escape(m)}</p>')
        out.extend(s.raw)
        out.extend(_figure(f) for f in s.figures)
        out.append("</section>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
