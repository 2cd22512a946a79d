"""`snapbench preview`: one contact-sheet PNG of every image condition of one image."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def preview(
    image: Path = typer.Argument(..., help="Image file (JPEG/PNG/WebP/BMP/TIFF)."),
    out: Path = typer.Option(Path("sheet.png"), "--out", help="Contact sheet to write (PNG)."),
    question: Optional[str] = typer.Option(None, "--question", help="Also show the 8 corrupted questions."),
    entity: Optional[str] = typer.Option(None, "--entity", help="Entity word of the question (targets the text operators)."),
    seed: int = typer.Option(0, "--seed", help="Global seed."),
    grid: Optional[Path] = typer.Option(None, "--grid", help="Severity grid override file (JSON/TOML)."),
    key: Optional[str] = typer.Option(
        None, "--key", help="Query id keying the randomness (default: the file name without extension)."
    ),
) -> None:
    """Write a contact sheet: clean + 15 operators x 3 severities, labelled; questions printed too."""
    from ..corruptions.io import load_image, save_png
    from ..corruptions.preview import contact_sheet

    if out.suffix.lower() != ".png":
        typer.echo(f"error: --out must be a .png file, got {out}", err=True)
        raise typer.Exit(2)
    try:
        img = load_image(image)
        sheet = contact_sheet(
            img, question=question, entity=entity, seed=seed, key=key if key is not None else image.stem, grid=grid
        )
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    save_png(out, sheet.image)
    for line in sheet.lines:
        typer.echo(line)
    h, w = sheet.image.shape[:2]
    typer.echo(f"wrote {out} ({w}x{h})")
