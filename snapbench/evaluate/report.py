"""Report output: JSON (NaN -> null), rich tables on the terminal, CSV / markdown tables."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

__all__ = ["report_to_json", "write_report", "read_report", "print_report", "print_additivity", "write_table",
           "additivity_rows"]


def _plain(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return [_plain(v) for v in x.tolist()]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return None if math.isnan(x) or math.isinf(x) else x
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def report_to_json(report: dict, indent: int | None = 2) -> str:
    """Strict JSON (no NaN tokens): undefined values are ``null``."""
    return json.dumps(_plain(report), indent=indent, allow_nan=False, ensure_ascii=False)


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
    con = Console()
    # Piped output would be cut to 80 columns; a report table is worth its width.
    return con if con.is_terminal else Console(width=200)


def print_report(report: dict, *, primary: str = "hit@1", show: Sequence[str] | None = None, console=None) -> None:
    """Per-condition metric values (percent), Δ of ``primary`` with CI and Holm-adjusted p."""
    from rich.table import Table

    con = _console(console)
    metrics = _shown(report, show)
    if primary not in (report.get("meta", {}).get("metrics") or metrics):
        primary = metrics[0]
    t = Table(title=f"snapbench evaluate — values in %, Δ = condition − clean ({primary})", show_lines=False)
    t.add_column("condition", no_wrap=True)
    for m in metrics:
        t.add_column(m, justify="right")
    t.add_column(f"Δ{primary}", justify="right")
    t.add_column("CI", justify="right")
    t.add_column("p (Holm)", justify="right")
    for c, vals in report["conditions"].items():
        pr = report["paired"].get(c, {}).get(primary)
        t.add_row(
            c,
            *[_pct(vals.get(m)) for m in metrics],
            _pct(pr["delta"], True) if pr else "",
            _ci(pr["ci"]) if pr else "",
            _p(pr["p"]) if pr else "",
        )
    con.print(t)
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


def write_table(report: dict, path: str | Path, *, primary: str = "hit@1") -> None:
    """``.csv``: long format (condition, metric, value, delta, ci_lo, ci_hi, p, p_raw), complete.
    ``.md``: a readable wide table (values in %, Δ of ``primary`` with CI and p) + additivity.
    Written atomically."""
    from .io import atomic_writer

    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".csv":
        with atomic_writer(p, newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["condition", "metric", "value", "delta", "ci_lo", "ci_hi", "p", "p_raw"])
            for c, vals in report["conditions"].items():
                for m, v in vals.items():
                    pr = report["paired"].get(c, {}).get(m) or {}
                    ci = pr.get("ci") or [None, None]
                    w.writerow([c, m, v, pr.get("delta"), ci[0], ci[1], pr.get("p"), pr.get("p_raw")])
        return
    if suffix not in (".md", ".markdown"):
        from .io import EvaluationInputError

        raise EvaluationInputError(f"{p}: table format must be .csv or .md")
    metrics = report["meta"]["metrics"] if "meta" in report else _shown(report, None)
    if primary not in metrics:
        primary = metrics[0]
    lines = [
        "| condition | " + " | ".join(metrics) + f" | Δ{primary} | CI | p (Holm) |",
        "|---|" + "---:|" * (len(metrics) + 3),
    ]
    for c, vals in report["conditions"].items():
        pr = report["paired"].get(c, {}).get(primary)
        cells = [_pct(vals.get(m)) for m in metrics]
        tail = [_pct(pr["delta"], True), _ci(pr["ci"]), _p(pr["p"])] if pr else ["", "", ""]
        lines.append("| " + " | ".join([c] + cells + tail) + " |")
    rows = additivity_rows(report, primary)
    if rows:
        lines += ["", f"Additivity ({primary} drops in points; δ = Obs − Exp, > 0 super-additive)", "",
                  "| joint condition | Exp | Obs | δ | CI(δ) |", "|---|---:|---:|---:|---:|"]
        for r in rows:
            lines.append(f"| {r['joint']} | {_pct(r['exp'], True)} | {_pct(r['obs'], True)} | {_pct(r['delta'], True)} | {_ci(r['ci'])} |")
    with atomic_writer(p) as fh:
        fh.write("\n".join(lines) + "\n")
