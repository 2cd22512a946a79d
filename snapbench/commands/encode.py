"""`snapbench encode`: run an encoder over a corrupted query set and a gallery -> path score matrices."""

from __future__ import annotations

from pathlib import Path

import typer


def encode(
    corrupted: Path = typer.Argument(..., help="Output folder of 'snapbench corrupt' (holds manifest.jsonl)."),
    gallery: Path = typer.Option(..., "--gallery", help="Gallery manifest: JSONL/JSON list of {id, image, caption}."),
    out: Path = typer.Option(..., "--out", help="Output folder: embeddings/ and paths/ (a SCORES_DIR of per-path matrices)."),
    encoder: str = typer.Option("toy", "--encoder", help="Registered encoder name (snapbench.models.register_encoder)."),
    conditions: str | None = typer.Option(None, "--conditions", help="Comma-separated condition ids (default: all in the manifest)."),
    batch_size: int = typer.Option(64, "--batch-size", min=1, help="Items per encoder call."),
    no_progress: bool = typer.Option(False, "--no-progress", help="Do not show the progress bar."),
) -> None:
    """Encode every condition's queries and the gallery; write embeddings and the four path scores.

    Then: 'snapbench evaluate OUT/paths --mode IT2IT --qrels ...' (fixed joint fusion) or
    'snapbench moor --paths-dir OUT/paths --out fused/' (MOOR from scores).
    """
    import os

    from rich.progress import Progress

    from ..encode import encode_corrupted
    from ..errors import InputError, OutputError, SnapbenchError
    from ..models import get_encoder

    if out.exists() and not out.is_dir():
        raise OutputError("--out names a file, not a folder", path=out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create the output folder ({exc.strerror or exc})", path=out) from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise OutputError("the output folder is not writable", path=out)
    cond_list = [c.strip() for c in conditions.split(",") if c.strip()] if conditions else None
    try:
        enc = get_encoder(encoder)
        with Progress(disable=no_progress, transient=True) as bar:
            task = bar.add_task("encoding", total=None)

            def tick(cond: str, done: int, total: int) -> None:
                bar.update(task, completed=done, total=total, description=f"encoded {cond}")

            summary = encode_corrupted(corrupted, gallery, enc, out, conditions=cond_list, batch_size=batch_size, progress=tick)
    except SnapbenchError:
        raise
    except ValueError as exc:  # encode's internals still raise plain ValueError for bad inputs
        raise InputError(str(exc)) from None
    typer.echo(
        f"{summary.n_queries} queries x {len(summary.conditions)} conditions, {summary.n_gallery} gallery items -> {out}"
    )
    for qid, why in summary.dropped_queries.items():
        typer.echo(f"dropped query {qid}: {why}", err=True)
