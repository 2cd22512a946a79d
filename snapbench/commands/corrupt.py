"""`snapbench corrupt`: write the corrupted variants of a query set (lossless PNG + manifest.jsonl)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def corrupt(
    input: Path = typer.Argument(..., help="Query manifest: JSONL / JSON list (id, image, question, entity) or snap_bench.json."),
    out: Path = typer.Option(..., "--out", help="Output directory (images/, manifest.jsonl, skips.jsonl, run.json)."),
    seed: int = typer.Option(0, "--seed", help="Global seed; all randomness is keyed by (seed, query id, operator, severity)."),
    conditions: Optional[str] = typer.Option(
        None,
        "--conditions",
        help="Comma-separated condition ids (default: all 54 states). Any joint/<image op>+<text op>/s<N> works.",
    ),
    joint: bool = typer.Option(False, "--joint", help="Add the paper's 18 joint image+text conditions."),
    workers: int = typer.Option(1, "--workers", min=1, help="Worker processes (one query per work unit)."),
    grid: Optional[Path] = typer.Option(None, "--grid", help="Severity grid override file (JSON/TOML)."),
    force: bool = typer.Option(False, "--force", help="Discard an earlier run in --out made with another seed/grid."),
    no_progress: bool = typer.Option(False, "--no-progress", help="Do not show the progress bar."),
) -> None:
    """Corrupt every query: clean + 45 image + 8 text conditions (and joint ones); resumable.

    Rerunning into the same --out keeps finished outputs (verified by sha256) and redoes the rest.

    Bad image files and unfindable entities are recorded in skips.jsonl; the exit status is 0 unless nothing could be produced (1) or the input/options are invalid (2).
    """
    from ..corruptions.pipeline import run_corruption

    cond_list = None
    if conditions is not None:
        cond_list = [c.strip() for c in conditions.split(",") if c.strip()]
        if not cond_list:
            _fail("--conditions is empty")
    try:
        summary = run_corruption(
            input,
            out,
            seed=seed,
            conditions=cond_list,
            joint=joint,
            workers=workers,
            grid=grid,
            progress=not no_progress,
            force=force,
        )
    except ValueError as exc:  # bad manifest, unknown condition, seed/grid mismatch, bad grid file
        _fail(str(exc))
    except OSError as exc:  # --out not a writable directory (or the disk fails mid-run)
        _fail(f"{exc.filename or out}: {exc.strerror or exc}")

    n_cond = len(summary.conditions)
    typer.echo(
        f"{summary.n_queries} queries x {n_cond} conditions -> {summary.out_dir}\n"
        f"written: {summary.written}  reused: {summary.reused}  skipped: {summary.skipped}"
        f" ({summary.skipped_queries} whole queries)  time: {summary.elapsed_s:.1f} s"
    )
    if summary.skipped:
        typer.echo(f"skip reasons: {summary.skips_path}")
    if summary.written + summary.reused == 0:
        typer.echo("error: nothing could be processed", err=True)
        raise typer.Exit(1)


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)
