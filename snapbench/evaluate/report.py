"""Report output: JSON (NaN -> null), rich tables on the terminal, CSV / markdown tables."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path

from ..jsonable import to_json

__all__ = [
    "additivity_rows",
    "print_additivity",
    "print_report",
    "read_report",
    "report_to_json",
    "write_report",
    "write_table",
]


def report_to_json(report: dict, indent: int | None = 2) -> str:
    """Strict JSON (no NaN tokens): undefined values are ``null``."""
    return json.dumps(to_json(report), indent=indent, allow_nan=False, ensure_ascii=False)


def write_report(report: dict, path: str | Path) -> None:
    """Write the JSON report atomically (parent folders are created)."""
    from .io import atomic_writer

    text = report_to_json(report) + "\n"
    with atomic_writer(path) as fh:
        fh.write(text)


def read_report(path: str | Path) -> dict:
    from .io import EvaluationInputError

    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise EvaluationInputError(f"{p}: not a readable JSON report ({e})") from None
    for key in ("conditions", "paired", "additivity"):
        if key not in data:
            raise EvaluationInputError(f"{p}: not a snapbench evaluate report (no {key!r} key)")
    return data


def _pct(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "–"
    return f"{100 * x:+.1f}" if signed else f"{100 * x:.1f}"


def _ci(ci: Sequence[float | None] | None) -> str:
    if not ci or ci[0] is None or ci[1] is None:
        return "–"
    return f"[{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"


def _p(p: float | None) -> str:
    if p is None:
        return "–"
    return f"{p:.1e}" if p < 1e-3 else f"{p:.3f}"


def _shown(report: dict, show: Sequence[str] | None) -> list[str]:
    ms = report["meta"]["metrics"] if "meta" in report else list(next(iter(report["conditions"].values())))
    if show:
        return [m for m in show if m in ms]
    pref = ["hit@1", "hit@5", "recall@10", "ndcg@10", "mrr"]
    picked = [m for m in pref if m in ms]
    return picked or ms[:6]


def _console(console=None):
    from rich.console import Console

    if console is not None:
        return console
    con = Console(markup=False)
    # Piped output would be cut to 80 columns; a report table is worth its width.
    return con if con.is_terminal else Console(width=200, markup=False)


def print_report(report: dict, *, primary: str = "hit@1", show: Sequence[str] | None = None, console=None) -> None:
    """Per-condition metric values (percent), Δ of ``primary`` with CI and Holm-adjusted p."""
    from rich.table import Table

    con = _console(console)
    metrics = _shown(report, show)
    if primary not in (report.get("meta", {}).get("metrics") or metrics):
        primary = metrics[0]
    t = Table(title=f"snapbench evaluate — values in %, Δ = condition − clean ({primary})", show_lines=False)
    t.add_column("condition", no_wrap=True)
    limited = set((report.get("meta") or {}).get("depth_limited_metrics") or [])
    for m in metrics:
        t.add_column(m + (" †" if m in limited else ""), justify="right")
    t.add_column(f"Δ{primary}", justify="right")
    t.add_column("CI", justify="right")
    t.add_column("p (Holm)", justify="right")
    extra = _extra_columns(report)
    for name in extra:
        t.add_column(name, justify="right")
    for c, vals in report["conditions"].items():
        pr = report["paired"].get(c, {}).get(primary)
        t.add_row(
            c,
            *[_pct(vals.get(m)) for m in metrics],
            _pct(pr["delta"], True) if pr else "",
            _ci(pr["ci"]) if pr else "",
            _p(pr["p"]) if pr else "",
            *[cells.get(c, "") for cells in extra.values()],
        )
    con.print(t)
    if limited:
        con.print(f"† depth-limited (the runs are shallower than the metric; values are lower bounds): {', '.join(sorted(limited))}")
    if report.get("groups"):
        con.print(_groups_table(report, primary))
    n_ex = report.get("n_excluded_zero_gt", 0)
    con.print(
        f"{report['n_queries']} queries; {n_ex} zero-GT quer{'y' if n_ex == 1 else 'ies'} excluded from ranking metrics"
    )
    curves = report.get("severity_curves") or {}
    if curves:
        labels = {op: v.get(primary, {}).get("label") for op, v in curves.items()}
        groups: dict[str, list[str]] = {}
        for op, lab in labels.items():
            groups.setdefault(str(lab), []).append(op)
        con.print("severity response (" + primary + "): " + "; ".join(f"{k}: {', '.join(v)}" for k, v in groups.items()))
    drag = report.get("coarse_text_drag")
    if drag:
        con.print(f"coarse-text drag (hit@1, clean): {_pct(drag['value'], True)} {_ci(drag['ci'])} — joint = {drag['joint']}")
    if report.get("additivity"):
        print_additivity(report, metric=primary, console=con)


def _extra_columns(report: dict) -> dict[str, dict[str, str]]:
    """Stability classes and rank displacement per condition, as printable cells (column -> cells)."""
    cols: dict[str, dict[str, str]] = {}
    stab = report.get("stability") or {}
    if stab:
        m = next(iter(stab.values())).get("metric", "hit@1")
        cols[f"stable/drag/wrong/boost ({m})"] = {
            c: f"{s['stably_correct']}/{s['drag']}/{s['persistently_wrong']}/{s['boost']}" for c, s in stab.items()
        }
    disp = report.get("rank_displacement") or {}
    if disp:
        cols["rank displacement (mean, CI)"] = {
            c: ("" if d.get("mean") is None else f"{d['mean']:+.1f} {_num_ci(d.get('ci'))}") for c, d in disp.items()
        }
    return cols


def _num_ci(ci: Sequence[float | None] | None) -> str:
    if not ci or ci[0] is None or ci[1] is None:
        return ""
    return f"[{ci[0]:+.1f}, {ci[1]:+.1f}]"


def _groups_table(report: dict, primary: str):
    """Per group: the primary metric on clean and its Δ (with CI) under each condition."""
    from rich.table import Table

    groups = report["groups"]
    t = Table(title=f"per group — {primary} in %, Δ = condition − clean with CI")
    t.add_column("condition", no_wrap=True)
    for g, e in groups.items():
        t.add_column(f"{g} (n={e['n_queries']})", justify="right")
    for c in report["conditions"]:
        cells = []
        for e in groups.values():
            if c == "clean":
                cells.append(_pct(e["conditions"].get(c, {}).get(primary)))
            else:
                pr = e["paired"].get(c, {}).get(primary)
                cells.append(f"{_pct(pr['delta'], True)} {_ci(pr['ci'])}" if pr else "")
        t.add_row(c, *cells)
    return t


def additivity_rows(report: dict, metric: str = "hit@1") -> list[dict]:
    """Rows (joint, exp, obs, delta, ci_lo, ci_hi) then per-pair, per-severity and overall means."""
    rows = []
    for j, e in report.get("additivity", {}).items():
        if metric in e:
            x = e[metric]
            rows.append({"joint": j, "exp": x["exp"], "obs": x["obs"], "delta": x["delta"], "ci": x["ci"]})
    summ = report.get("additivity_summary", {})
    for section, label in (("by_pair", "mean {} (over severities)"), ("by_severity", "mean {} (over pairs)")):
        for key, e in summ.get(section, {}).items():
            if metric in e:
                x = e[metric]
                rows.append({"joint": label.format(key), "exp": x["exp"], "obs": x["obs"], "delta": x["delta"], "ci": x["ci"]})
    if metric in summ.get("mean", {}):
        x = summ["mean"][metric]
        rows.append({"joint": "mean (all joint conditions)", "exp": x["exp"], "obs": x["obs"], "delta": x["delta"], "ci": x["ci"]})
    return rows


def print_additivity(report: dict, *, metric: str = "hit@1", console=None) -> None:
    """The additivity table: Exp = Δ_I + Δ_T, Obs, δ = Obs − Exp with CI (drops in points)."""
    from rich.table import Table

    con = _console(console)
    rows = additivity_rows(report, metric)
    if not rows:
        skipped = report.get("additivity_skipped") or {}
        msg = "no joint condition with both parts present"
        if skipped:
            msg += ": " + "; ".join(f"{k} ({v})" for k, v in skipped.items())
        con.print(msg)
        return
    t = Table(title=f"additivity of joint corruptions ({metric} drops in points; δ > 0 = super-additive)")
    for name in ("joint condition", "Exp", "Obs", "δ", "CI(δ)"):
        t.add_column(name, justify="left" if name == "joint condition" else "right", no_wrap=name == "joint condition")
    for r in rows:
        t.add_row(r["joint"], _pct(r["exp"], True), _pct(r["obs"], True), _pct(r["delta"], True), _ci(r["ci"]))
    con.print(t)
    skipped = report.get("additivity_skipped") or {}
    if skipped:
        con.print("skipped: " + "; ".join(f"{k} ({v})" for k, v in skipped.items()))


CSV_HEADER = ["condition", "metric", "value", "delta", "ci_lo", "ci_hi", "p", "p_raw", "group", "depth_limited"]


def csv_rows(report: dict) -> list[list]:
    """The long table: every condition x metric (value, Δ vs clean, CI, Holm p, raw p), then per group
    the same (column ``group``), then per condition the stability classes (metric
    ``stability:<class>``, value = number of queries), the rank displacement (metric
    ``rank_displacement``, value = mean, with CI) and per joint condition the additivity (metric
    ``additivity:<metric>``, value = Obs, delta = δ = Obs − Exp, with CI).  ``depth_limited`` is 1
    for a metric the runs were too shallow for."""
    limited = set((report.get("meta") or {}).get("depth_limited_metrics") or [])
    rows: list[list] = [CSV_HEADER]

    def block(conds: dict, paired: dict, group: str) -> None:
        for c, vals in conds.items():
            for m, v in vals.items():
                pr = paired.get(c, {}).get(m) or {}
                ci = pr.get("ci") or [None, None]
                rows.append([c, m, v, pr.get("delta"), ci[0], ci[1], pr.get("p"), pr.get("p_raw"), group,
                             int(m in limited)])

    block(report["conditions"], report["paired"], "")
    for g, e in (report.get("groups") or {}).items():
        block(e["conditions"], e["paired"], g)
    for c, s in (report.get("stability") or {}).items():
        for cls in ("stably_correct", "drag", "persistently_wrong", "boost"):
            rows.append([c, f"stability:{cls}", s[cls], None, None, None, None, None, "", 0])
    for c, d in (report.get("rank_displacement") or {}).items():
        ci = d.get("ci") or [None, None]
        rows.append([c, "rank_displacement", d.get("mean"), None, ci[0], ci[1], None, None, "", 0])
    for j, per in (report.get("additivity") or {}).items():
        for m, e in per.items():
            ci = e.get("ci") or [None, None]
            rows.append([j, f"additivity:{m}", e.get("obs"), e.get("delta"), ci[0], ci[1], None, None, "", int(m in limited)])
    return rows


def write_table(report: dict, path: str | Path, *, primary: str = "hit@1") -> None:
    """``.csv``: long format, complete (see :func:`csv_rows`).  ``.md``: a readable wide table (values in
    %, Δ of ``primary`` with CI and p, stability classes, rank displacement; † marks depth-limited
    metrics), per-group Δ, additivity.  Written atomically."""
    from .io import atomic_writer

    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".csv":
        with atomic_writer(p, newline="") as fh:
            w = csv.writer(fh)
            w.writerows(csv_rows(report))
        return
    if suffix not in (".md", ".markdown"):
        from .io import EvaluationInputError

        raise EvaluationInputError(f"{p}: table format must be .csv or .md")
    metrics = report["meta"]["metrics"] if "meta" in report else _shown(report, None)
    if primary not in metrics:
        primary = metrics[0]
    limited = set((report.get("meta") or {}).get("depth_limited_metrics") or [])
    extra = _extra_columns(report)
    lines = [
        "| condition | " + " | ".join(m + (" †" if m in limited else "") for m in metrics)
        + f" | Δ{primary} | CI | p (Holm) |" + "".join(f" {n} |" for n in extra),
        "|---|" + "---:|" * (len(metrics) + 3 + len(extra)),
    ]
    for c, vals in report["conditions"].items():
        pr = report["paired"].get(c, {}).get(primary)
        cells = [_pct(vals.get(m)) for m in metrics]
        tail = [_pct(pr["delta"], True), _ci(pr["ci"]), _p(pr["p"])] if pr else ["", "", ""]
        lines.append("| " + " | ".join([c] + cells + tail + [e.get(c, "") for e in extra.values()]) + " |")
    if limited:
        lines += ["", f"† depth-limited (the runs are shallower than the metric; values are lower bounds): "
                      f"{', '.join(sorted(limited))}"]
    groups = report.get("groups") or {}
    if groups:
        names = list(groups)
        lines += ["", f"Per group ({primary} in %, Δ = condition − clean with CI)", "",
                  "| condition | " + " | ".join(f"{g} (n={groups[g]['n_queries']})" for g in names) + " |",
                  "|---|" + "---:|" * len(names)]
        for c in report["conditions"]:
            cells = []
            for g in names:
                if c == "clean":
                    cells.append(_pct(groups[g]["conditions"].get(c, {}).get(primary)))
                else:
                    pr = groups[g]["paired"].get(c, {}).get(primary)
                    cells.append(f"{_pct(pr['delta'], True)} {_ci(pr['ci'])}" if pr else "")
            lines.append("| " + " | ".join([c] + cells) + " |")
    rows = additivity_rows(report, primary)
    if rows:
        lines += ["", f"Additivity ({primary} drops in points; δ = Obs − Exp, > 0 super-additive)", "",
                  "| joint condition | Exp | Obs | δ | CI(δ) |", "|---|---:|---:|---:|---:|"]
        for r in rows:
            lines.append(f"| {r['joint']} | {_pct(r['exp'], True)} | {_pct(r['obs'], True)} | {_pct(r['delta'], True)} | {_ci(r['ci'])} |")
    with atomic_writer(p) as fh:
        fh.write("\n".join(lines) + "\n")
