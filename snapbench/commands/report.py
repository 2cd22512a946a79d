"""`snapbench report DIR`: the paper report of a run directory (HTML, tables, figures, per-query)."""

from __future__ import annotations

from pathlib import Path

import typer


def report(
    run_dir: Path = typer.Argument(..., help="Run directory (DIR/<MODE>/report.json, DIR/MOOR/..., DIR/run.json)."),
    out: Path | None = typer.Option(None, "--out", help="Output folder (default: the run directory)."),
    formats: str = typer.Option(
        "html,md,tex,csv,parquet,png,pdf", "--formats",
        help="Comma-separated outputs: html (report.html), md/tex (tables/), csv/parquet (per_query.*), "
             "png/pdf (figures/; need the 'report' extra)."),
    metric: str = typer.Option("hit@1", "--metric", help="Metric of tables, figures and findings (hit@1 = SnapBench R@1)."),
    dpi: int = typer.Option(120, "--dpi", help="Resolution of the PNG figures (50 to 600)."),
    traffic: Path | None = typer.Option(
        None, "--traffic", help="A 'snapbench diagnose' output folder: write traffic.json (expected R@k under that "
                                "traffic mix) into the run folder, or into --out when given (the run is left "
                                "untouched), and show it in the report."),
) -> None:
    """Write report.html, tables/*.md|tex, figures/*.png|pdf, per_query.csv|parquet and findings.json.

    Optional inputs (per-query values, MOOR's text share, fusion baselines, run.json, a contact
    sheet) that are missing are named in the report, never fatal.
    """
    from ..console import stderr_console
    from ..report import build_report

    err = stderr_console()
    if traffic is not None:
        from ..report.traffic import write_traffic

        elsewhere = out is not None and out.resolve() != run_dir.resolve()
        if elsewhere:  # the report's folder first (a run to read, then never another command's folder)
            from ..layout import claim_output_dir, open_run_dir

            open_run_dir(run_dir)
            claim_output_dir(out, "report")
        typer.echo(f"traffic: {write_traffic(run_dir, traffic, out_dir=out if elsewhere else None)}")
    fmts = [f.strip().lower() for f in formats.split(",") if f.strip()]
    with err.status("building report") as status:
        res = build_report(run_dir, out, formats=fmts, metric=metric, dpi=dpi,
                           progress=lambda msg: status.update(f"report: {msg}"))
    for topic, msgs in res.notes.items():
        for m in msgs:
            err.print(f"note ({topic}): {m}", highlight=False, markup=False)
    html = res.out / "report.html"
    typer.echo(f"wrote {len(res.files)} files under {res.out}" + (f"; open {html}" if html in res.files else ""))
