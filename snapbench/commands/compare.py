"""`snapbench compare RUN_DIR... --out DIR`: which model is more robust, by how much, and is the difference real."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def compare(
    run_dirs: list[Path] = typer.Argument(
        ..., metavar="RUN_DIR...",
        help="Run folders (snapbench run), a folder of a several-encoder run (expands to its encoders), or "
             "'snapbench evaluate --per-query' report files; at least two models in all."),
    out: Path = typer.Option(..., "--out", help="Output folder: compare.json, compare.html, tables/, records/, figures/."),
    name: Optional[list[str]] = typer.Option(
        None, "--name", metavar="NAME",
        help="Model names, one per model in order (default: the encoder folder of a several-encoder run, the run's "
             "encoder, or the report file's stem)."),
    reference: Optional[str] = typer.Option(None, "--reference", help="Reference model of the corruption errors (CE = 1); default: the first."),
    correction: str = typer.Option("holm", "--correction", help="p-value adjustment across conditions: holm (family-wise) or bh (false discovery rate)."),
    modes: Optional[str] = typer.Option(
        None, "--modes", help="Comma-separated targets (I2I, T2T, IT2IT, I2IT, T2IT, MOOR, fusion/<name>); default: every "
                              "mode and MOOR all runs have. One target also names the target of evaluate reports "
                              "that record none (scores evaluated without --mode)."),
    metrics: Optional[str] = typer.Option(
        None, "--metrics", help="Comma-separated metrics or families (hit, recall@5, ndcg, mrr), or 'all'; default: the "
                                "runs' hit@k (R@k), the fastest to compare."),
    metric: Optional[str] = typer.Option(None, "--metric", help="Headline metric of the page, figures and findings (default: hit@1)."),
    resamples: Optional[int] = typer.Option(None, "--resamples", help="Bootstrap resamples (default: the runs' own)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed of the resamples (default: the runs' seed)."),
    ci: Optional[float] = typer.Option(None, "--ci", help="Confidence level of the intervals (default: the runs' own, e.g. 0.95)."),
    formats: str = typer.Option(
        "html,md,tex,csv,parquet,png,pdf", "--formats",
        help="Comma-separated outputs besides compare.json and findings.json: html (compare.html), md/tex (tables/), "
             "csv/parquet (records/), png/pdf (figures/; need the 'report' extra)."),
    dpi: int = typer.Option(120, "--dpi", help="Resolution of the PNG figures (50 to 600)."),
    no_progress: bool = typer.Option(False, "--no-progress", help="Do not show progress."),
    quiet: bool = typer.Option(
        False, "--quiet", "-q",
        help="For scripts: no progress, no notes, no tables; stdout lists compare.json (and compare.html when "
             "written), one path per line. Errors and warnings still go to stderr."),
) -> None:
    """Compare models on the same corrupted queries: paired differences of drops with CIs and exact or
    permutation tests (adjusted across conditions), rankings with rank intervals and tiers, corruption
    errors, effective robustness and super-additivity, per retrieval mode.

    Refuses runs whose queries, gallery, qrels, planned conditions, seed or metric settings differ (the
    variant source may differ: released vs generated variants of one model is a valid comparison). A
    run that reads one side of the query only (a text-only encoder) is compared with the others on the
    conditions every run has, with a warning naming the conditions left out.

    When it is done it prints, per target, the ranking by the headline metric (--metric) with rank
    intervals and tiers, and the pairs of models told apart: the records of compare.json.
    """
    from ..compare import CompareOptions, compare_runs
    from ..console import stderr_console
    from ..validate import comma_list

    opts = CompareOptions(
        names=name or None, reference=reference, correction=correction, modes=comma_list(modes, "modes"),
        metrics=comma_list(metrics, "metrics"), metric=metric, resamples=resamples, seed=seed, ci=ci,
        formats=comma_list(formats, "formats") or [], dpi=dpi,
    )
    err = stderr_console()
    if no_progress or quiet:
        res = compare_runs(run_dirs, out, opts)
    else:
        with err.status("compare") as status:
            res = compare_runs(run_dirs, out, opts, progress=lambda msg: status.update(f"compare: {msg}"))
    for note in res.notes:
        if note not in res.warnings and not quiet:
            err.print(f"note: {note}", highlight=False, markup=False)
    for warning in res.warnings:
        typer.echo(f"warning: {warning}", err=True)  # one line, as every command's warnings
    st = res.settings
    if quiet:
        from ..layout import CompareDir

        cd = CompareDir(out)
        for path in (cd.compare_json, cd.html):
            if path in res.files:
                typer.echo(str(path))
        return
    from ..compare.terminal import print_comparison
    from ..compare.write import ordered_targets
    from ..evaluate.terminal import _console

    print_comparison(res.comparison, ordered_targets(st.targets), st.metric, st.ci, opts.correction, _console())
    typer.echo(f"compared {len(res.sources)} models ({', '.join(s.name for s in res.sources)}) on "
               f"{', '.join(st.targets)} x {', '.join(st.metrics)} in {res.timings['total_s']:.1f} s")
    html = out / "compare.html"
    removed = f" (removed {len(res.removed)} files of the previous compare it did not write again)" if res.removed else ""
    typer.echo(f"wrote {len(res.files)} files under {out}{removed}" + (f"; open {html}" if html in res.files else ""))
