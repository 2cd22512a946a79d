"""`snapbench preview`: one contact-sheet PNG of every image condition of one image."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..core.defaults import DEFAULT_MAX_PIXELS


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
    max_pixels: int = typer.Option(DEFAULT_MAX_PIXELS, "--max-pixels", help="Largest image (width x height) to load."),
    severity_target: Optional[str] = typer.Option(
        None, "--severity-target", metavar="METRIC=V1,V2,...",
        help="Show s1, s2, ... at a measured strength, e.g. ssim=0.90,0.75,0.60 or psnr=30,25,20 (as corrupt makes them).",
    ),
    no_measure: bool = typer.Option(False, "--no-measure", help="Do not measure the variants (no SSIM/PSNR in the labels)."),
) -> None:
    """Write a contact sheet: clean + 15 operators x 3 severities, labelled with their measured SSIM and PSNR;
    questions and measured values printed too."""
    from ..core.errors import ConfigError
    from ..core.validate import positive_int
    from ..corruptions.io import load_image
    from ..corruptions.preview import contact_sheet
    from ..corruptions.target import parse_severity_target
    from ..store.atomic import check_output_file, save_png

    if out.suffix.lower() != ".png":
        raise ConfigError(f"must be a .png file, got {out}", param="out")
    check_output_file(out, param="out")
    key = query_id if query_id is not None else image.stem
    img = load_image(image, max_pixels=positive_int(max_pixels, "max_pixels"))
    target = parse_severity_target(severity_target)
    sheet = contact_sheet(img, question=question, entity=entity, seed=seed, key=key, grid=grid, measure=not no_measure,
                          severity_target=target)
    save_png(out, sheet.image)
    for line in sheet.lines:
        typer.echo(line)
    _print_measured(sheet)
    h, w = sheet.image.shape[:2]
    typer.echo(f"seed key (query id): {key}{'' if query_id is not None else ' (the file name; use --id to match a manifest id)'}  seed: {seed}")
    typer.echo(f"wrote {out} ({w}x{h})")


def _print_measured(sheet) -> None:
    """One line per image condition: measured SSIM, PSNR, changed share (and the target's outcome)."""
    if not sheet.measured:
        return
    typer.echo(f"{'condition':28s} {'ssim':>8s} {'psnr':>8s} {'changed':>8s}" + ("  target" if sheet.targets else ""))
    for cid, m in sheet.measured.items():
        ssim = "-" if m.get("ssim") is None else f"{m['ssim']:.4f}"
        psnr = "inf" if m.get("psnr") is None else f"{m['psnr']:.2f}"
        line = f"{cid:28s} {ssim:>8s} {psnr:>8s} {m['changed']:>8.4f}"
        t = sheet.targets.get(cid)
        if t is not None:
            knob = "" if t["knob"] is None else f" ({t['knob']} {t['knob_value']:.6g})"
            line += f"  {t['metric']} {t['value']:g}: {'reached' if t['reached'] else 'not reached'}{knob}"
        typer.echo(line)
