"""`snapbench corrupt`: write the corrupted variants of a query set (lossless image files, PNG by default or
any of `corruptions.codecs.FORMATS`, + manifest.jsonl)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Optional

import typer

from ..defaults import DEFAULT_MAX_PIXELS, DEFAULT_SEED
from ..image_formats import DEFAULT_IMAGE_FORMAT, IMAGE_FORMATS
from ..install_hint import install_hint


def _format_help() -> str:
    """``--format``'s help from the format table: the names, the default, what each needs."""
    names = [f"{n} (default)" if n == DEFAULT_IMAGE_FORMAT else n for n in IMAGE_FORMATS]
    by_extra: dict[str | None, list[str]] = {}
    for name, fmt in IMAGE_FORMATS.items():
        by_extra.setdefault(fmt.extra, []).append(name)
    needs = [f"{', '.join(ns)}: {install_hint(x)}" for x, ns in by_extra.items() if x is not None]
    needs += [f"{', '.join(by_extra[None])}: nothing extra"] if None in by_extra else []
    return f"Lossless file format of the variants: {', '.join(names)} ({'; '.join(needs)})."


def corrupt(
    input: Path = typer.Argument(
        ...,
        help="Query manifest: JSONL / JSON list (id, image, question, entity) or the SnapBench release's snap_bench.json.",
    ),
    out: Path = typer.Option(..., "--out", help="Output directory (images/, manifest.jsonl, skips.jsonl, run.json)."),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Global seed; all randomness is keyed by (seed, query id, operator, severity)."),
    conditions: Optional[str] = typer.Option(
        None,
        "--conditions",
        help=(
            "Comma-separated condition ids (default: all 54 states). Any joint/<image op>+<text op>/s<N> works; "
            "its image and text parts are added."
        ),
    ),
    joint: bool = typer.Option(False, "--joint", help="Add the paper's 18 joint image+text conditions."),
    workers: int = typer.Option(1, "--workers", help="Worker processes, at least 1 (one query per work unit)."),
    engine: str = typer.Option("local", "--engine", help="Where the workers run: local (process pool) or ray (needs snapbench[ray])."),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address (with --engine ray; default: a local Ray started on demand)."),
    grid: Optional[Path] = typer.Option(None, "--grid", help="Severity grid override file (JSON/TOML)."),
    force: bool = typer.Option(
        False, "--force", help="Discard an earlier run in --out made with another seed, grid, format or library versions."),
    max_pixels: int = typer.Option(
        DEFAULT_MAX_PIXELS, "--max-pixels", help="Largest input image (width x height) to load; larger ones are skipped."),
    no_progress: bool = typer.Option(False, "--no-progress", help="Do not show the progress bar."),
    image_format: str = typer.Option(DEFAULT_IMAGE_FORMAT, "--format", help=_format_help()),
    severity_target: Optional[str] = typer.Option(
        None, "--severity-target", metavar="METRIC=V1,V2,...",
        help="Make s1, s2, ... a measured strength per image, e.g. ssim=0.90,0.75,0.60 or psnr=30,25,20 (one value "
             "per grid level, s1 first, each lower than the one before): each operator's knob is searched until the "
             "variant measures the target (within 0.01 SSIM / 0.5 dB).",
    ),
    no_measure: bool = typer.Option(
        False, "--no-measure", help="Do not record each variant's measured strength (manifest \"measured\": PSNR, SSIM, edits)."),
) -> None:
    """Corrupt every query: clean + 45 image + 8 text conditions (and joint ones); resumable.

    Rerunning into the same --out keeps finished outputs (verified by sha256) and redoes the rest;
    after Ctrl-C the command to resume is printed. Each manifest line records the variant's measured
    strength ("measured"; --no-measure turns it off) and, with --severity-target, how close the search came
    ("target").

    Bad image files and unfindable entities are recorded in skips.jsonl and the run goes on; the exit status is 0
    unless the input or the options are invalid, or no query could be read at all (2, with the first reason).
    """
    from ..corruptions.run import CorruptOptions, run_corruption
    from ..corruptions.skipped import nothing_written_error
    from ..corruptions.target import parse_severity_target
    from ..signals import Terminated, exit_status
    from ..validate import comma_list, positive_int

    opts = CorruptOptions(
        seed=seed, conditions=comma_list(conditions, "conditions"), joint=joint,
        workers=positive_int(workers, "workers"), engine=engine, address=address, grid=grid,
        progress=not no_progress, force=force, image_format=image_format,
        max_pixels=positive_int(max_pixels, "max_pixels"), measure=not no_measure,
        severity_target=parse_severity_target(severity_target))
    try:
        summary = run_corruption(input, out, opts, log=lambda message: typer.echo(f"warning: {message}", err=True))
    except (KeyboardInterrupt, Terminated) as exc:  # Ctrl-C, SIGTERM, SIGHUP
        typer.echo(f"interrupted: the outputs finished so far are kept in {out}; to resume, run:\n  "
                   f"{shlex.join(_rerun(input, out, opts, no_progress))}", err=True)
        raise typer.Exit(exit_status(exc)) from None
    _report(summary)
    if summary.written + summary.reused == 0:
        raise nothing_written_error(input, summary.out_dir, summary.n_queries, opts.max_pixels)


def _rerun(input: Path, out: Path, opts, no_progress: bool) -> list[str]:
    """The command line that resumes an interrupted run (the options that differ from the defaults)."""
    from ..corruptions.run import CorruptOptions

    default = CorruptOptions()  # the flags' defaults (tests/test_cli_defaults.py holds them equal)
    rerun = ["snapbench", "corrupt", str(input), "--out", str(out), "--seed", str(opts.seed)]
    if opts.conditions is not None:
        rerun += ["--conditions", ",".join(opts.conditions)]
    if opts.joint:  # --joint and --no-measure are switches: their off state is the default
        rerun.append("--joint")
    if opts.workers != default.workers:
        rerun += ["--workers", str(opts.workers)]
    if opts.engine != default.engine:
        rerun += ["--engine", opts.engine] + (["--address", opts.address] if opts.address else [])
    if opts.grid is not None:
        rerun += ["--grid", str(opts.grid)]
    if opts.image_format != default.image_format:
        rerun += ["--format", opts.image_format]
    if opts.max_pixels != default.max_pixels:
        rerun += ["--max-pixels", str(opts.max_pixels)]
    if opts.severity_target is not None:
        rerun += ["--severity-target", opts.severity_target.spec]
    if not opts.measure:
        rerun.append("--no-measure")
    if no_progress:
        rerun.append("--no-progress")
    return rerun

def _report(summary) -> None:
    typer.echo(
        f"{summary.n_queries} queries x {len(summary.conditions)} conditions -> {summary.out_dir}\n"
        f"written: {summary.written}  reused: {summary.reused}  skipped: {summary.skipped}"
        f" ({summary.skipped_queries} whole queries)  time: {summary.elapsed_s:.1f} s"
    )
    if summary.added_conditions:
        typer.echo(f"added joint parts (for additivity): {', '.join(summary.added_conditions)}")
    if summary.guessed_entities:
        typer.echo(
            f"entity guessed for {summary.guessed_entities} queries (no entity field): their text conditions "
            "edit the last non-stopword word of the question"
        )
    if summary.unguessed_entities:
        typer.echo(f"no entity for {summary.unguessed_entities} queries (no entity field, no non-stopword word in the "
                   "question): their text conditions are skipped")
    if summary.targeted:
        from ..corruptions.target import target_summary

        typer.echo(target_summary(summary.target_outcome, '"reached": false in manifest.jsonl'))
    if summary.warnings:
        typer.echo(f"input warnings: {len(summary.warnings)} (printed above)")
    if summary.skipped:
        typer.echo(f"skip reasons: {summary.skips_path}")
