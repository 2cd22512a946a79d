"""`snapbench corrupt`: write the corrupted variants of a query set (lossless PNG + manifest.jsonl)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Optional

import typer


def corrupt(
    input: Path = typer.Argument(
        ...,
        help="Query manifest: JSONL / JSON list (id, image, question, entity) or the SnapBench release's snap_bench.json.",
    ),
    out: Path = typer.Option(..., "--out", help="Output directory (images/, manifest.jsonl, skips.jsonl, run.json)."),
    seed: int = typer.Option(0, "--seed", help="Global seed; all randomness is keyed by (seed, query id, operator, severity)."),
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
    engine: str = typer.Option("local", "--engine", help="Where the workers run: local (process pool) or ray (pip install 'snapbench[ray]')."),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address (with --engine ray; default: a local Ray started on demand)."),
    grid: Optional[Path] = typer.Option(None, "--grid", help="Severity grid override file (JSON/TOML)."),
    force: bool = typer.Option(False, "--force", help="Discard an earlier run in --out made with another seed/grid."),
    no_progress: bool = typer.Option(False, "--no-progress", help="Do not show the progress bar."),
    image_format: str = typer.Option(
        "png", "--format",
        help="Lossless file format of the variants: png (default), qoi, jxl, webp, npz (all but png: pip install 'snapbench[codecs]').",
    ),
) -> None:
    """Corrupt every query: clean + 45 image + 8 text conditions (and joint ones); resumable.

    Rerunning into the same --out keeps finished outputs (verified by sha256) and redoes the rest;
    after Ctrl-C the command to resume is printed.

    Bad image files and unfindable entities are recorded in skips.jsonl; the exit status is 0 unless nothing could be produced (1) or the input/options are invalid (2).
    """
    from ..corruptions.run import run_corruption
    from ..errors import ConfigError

    if workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {workers}")
    cond_list = None
    if conditions is not None:
        cond_list = [c.strip() for c in conditions.split(",") if c.strip()]
        if not cond_list:
            raise ConfigError("--conditions is empty (give comma-separated condition ids, or leave it out for all)")
    try:
        summary = run_corruption(
            input,
            out,
            seed=seed,
            conditions=cond_list,
            joint=joint,
            workers=workers,
            engine=engine,
            address=address,
            grid=grid,
            progress=not no_progress,
            force=force,
            image_format=image_format,
            log=lambda message: typer.echo(f"warning: {message}", err=True),
        )
    except KeyboardInterrupt:
        rerun = ["snapbench", "corrupt", str(input), "--out", str(out), "--seed", str(seed)]
        if conditions is not None:
            rerun += ["--conditions", ",".join(cond_list or [])]
        if joint:
            rerun.append("--joint")
        if workers != 1:
            rerun += ["--workers", str(workers)]
        if engine != "local":
            rerun += ["--engine", engine] + (["--address", address] if address else [])
        if grid is not None:
            rerun += ["--grid", str(grid)]
        if image_format != "png":
            rerun += ["--format", image_format]
        if no_progress:
            rerun.append("--no-progress")
        typer.echo(
            f"interrupted: the outputs finished so far are kept in {out}; to resume, run:\n  {shlex.join(rerun)}",
            err=True,
        )
        raise typer.Exit(130) from None

    n_cond = len(summary.conditions)
    typer.echo(
        f"{summary.n_queries} queries x {n_cond} conditions -> {summary.out_dir}\n"
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
    if summary.warnings:
        typer.echo(f"input warnings: {len(summary.warnings)} (printed above)")
    if summary.skipped:
        typer.echo(f"skip reasons: {summary.skips_path}")
    if summary.written + summary.reused == 0:
        typer.echo("error: nothing could be processed", err=True)
        raise typer.Exit(1)
