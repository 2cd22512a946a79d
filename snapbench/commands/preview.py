"""`snapbench preview`: one contact-sheet PNG of every image condition of one image."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer


def preview(
    image: Path = typer.Argument(..., help="Image file (JPEG/PNG/WebP/BMP/TIFF)."),
    out: Path = typer.Option(Path("sheet.png"), "--out", help="Contact sheet to write (PNG; an existing sheet is replaced)."),
    question: Optional[str] = typer.Option(None, "--question", help="Also show the 8 corrupted questions."),
    entity: Optional[str] = typer.Option(None, "--entity", help="Entity word of the question (targets the text operators)."),
    seed: int = typer.Option(0, "--seed", help="Global seed (as in corrupt)."),
    grid: Optional[Path] = typer.Option(None, "--grid", help="Severity grid override file (JSON/TOML)."),
    query_id: Optional[str] = typer.Option(
        None,
        "--id",
        "--key",
        help=(
            "Query id keying the randomness, as in corrupt: with the same id and --seed the variants are "
            "exactly those corrupt writes for that query (default: the file name without extension)."
        ),
    ),
    max_pixels: int = typer.Option(50_000_000, "--max-pixels", help="Largest image (width x height) to load."),
) -> None:
    """Write a contact sheet: clean + 15 operators x 3 severities, labelled; questions printed too."""
    from ..corruptions.io import load_image, save_png
    from ..corruptions.preview import contact_sheet
    from ..errors import ConfigError, OutputError, arg
    from ..validate import positive_int

    if out.suffix.lower() != ".png":
        raise ConfigError(f"must be a .png file, got {out}", param="out")
    if out.is_dir():
        raise OutputError(f"is a folder; {arg('out')} names the contact sheet file to write", path=out, param="out")
    folder = out.parent
    for parent in (folder, *folder.parents):
        if parent.exists():
            if not parent.is_dir():
                raise OutputError(f"is a file, not a folder (cannot write {out} there)", path=parent)
            if not os.access(parent, os.W_OK | os.X_OK):
                raise OutputError(f"folder is not writable (cannot write {out})", path=parent)
            break
    key = query_id if query_id is not None else image.stem
    img = load_image(image, max_pixels=positive_int(max_pixels, "max_pixels"))
    sheet = contact_sheet(img, question=question, entity=entity, seed=seed, key=key, grid=grid)
    save_png(out, sheet.image)
    for line in sheet.lines:
        typer.echo(line)
    h, w = sheet.image.shape[:2]
    typer.echo(f"seed key (query id): {key}{'' if query_id is not None else ' (the file name; use --id to match a manifest id)'}  seed: {seed}")
    typer.echo(f"wrote {out} ({w}x{h})")
