"""`snapbench diagnose`: signal-level issues of real queries (images and questions), and their mix."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

#: what a detector of each side needs: said when the query set has none ("n/a (no questions)")
_SIDE_NOUN = {"image": "readable images", "text": "questions"}


def diagnose(
    queries: Path = typer.Argument(
        ...,
        help=(
            "Query set: any dataset snapbench reads (snap_bench.json, ImageFolder copy, PhotoBench album, JSONL "
            "manifest), a 'snapbench corrupt' output folder, a folder of images, or a .txt file of questions (one per line)."
        ),
    ),
    out: Path = typer.Option(..., "--out", help="Output folder: diagnose.csv, summary.json, diagnose.html."),
    questions: Optional[Path] = typer.Option(
        None, "--questions", help="With a folder of images: JSONL or CSV with 'image' (relative path) and 'question' (+ 'entity', 'id')."
    ),
    format: Optional[str] = typer.Option(
        None, "--format",
        help="Force the input kind: snapbench-json, hf-imagefolder, photobench, jsonl, corrupt-output, image-folder, questions.",
    ),
    thresholds: Optional[Path] = typer.Option(
        None, "--thresholds", help="TOML/JSON file replacing shipped thresholds (same sections as snapbench/diagnose/thresholds.toml)."
    ),
    words: Optional[Path] = typer.Option(None, "--words", help="Extra known words for the oov detector (whitespace-separated)."),
    examples: int = typer.Option(8, "--examples", help="Flagged examples per detector shown in diagnose.html."),
    no_progress: bool = typer.Option(False, "--no-progress", help="Do not show the progress bar."),
) -> None:
    """Diagnose real queries: blur, low light, overexposure, compression, low resolution; out-of-vocabulary
    words, few content tokens, no entity; plus query-set checks (missing entities, duplicates, small images).

    Unreadable images are recorded as skips; the run goes on. Thresholds: snapbench/diagnose/thresholds.toml.
    """
    from ..diagnose import run_diagnose

    res = run_diagnose(queries, out, questions=questions, format=format, thresholds=thresholds, words=words,
                       examples=examples, progress=not no_progress,
                       # what the loader says about the input (a manifest found next to it, a field read
                       # under another name) is information, not a warning
                       log=lambda m: typer.echo(f"note: {m}", err=True))
    s = res.summary

    def pct(x: dict) -> str:
        if x.get("not_applicable"):
            return f"n/a ({x['not_applicable']})"
        lo, hi = x["ci"]
        return "n/a" if x["n"] == 0 else f"{100 * x['share']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"

    typer.echo(f"{s['n_queries']} queries ({s['n_images']} images, {s['n_questions']} questions) -> {res.out_dir}"
               f"  time: {res.elapsed_s:.1f} s")
    typer.echo(f"any issue {pct(s['any'])}  image only {pct(s['image_only'])}  text only {pct(s['text_only'])}"
               f"  both {pct(s['both'])}")
    typer.echo("  ".join(f"{d} {pct(v)}" if v["n"] else f"{d} n/a (no {_SIDE_NOUN[v['side']]})"
                         for d, v in s["shares"].items()))
    checks = {k: v["count"] for k, v in s["checks"].items() if v["count"]}
    if checks:
        typer.echo("query-set checks: " + ", ".join(f"{k} {v}" for k, v in checks.items()))
    if s["skips"]:
        typer.echo(f"skipped images: {len(s['skips'])} (listed in summary.json)")
