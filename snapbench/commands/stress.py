"""`snapbench stress`: the record-field stress suite on a dataset of albums (PAL-Bench's Realism Stress Suite)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..defaults import DEFAULT_KS, DEFAULT_RESAMPLES, DEFAULT_SEED
from .encode import ENCODER_HELP


def stress(
    dataset: Path = typer.Argument(..., help="A PhotoBench folder (album*/ folders, one album, or a Hugging Face copy with --split), or a JSONL query manifest / folder holding queries.jsonl, gallery.jsonl, qrels.json."),
    encoder: str = typer.Option(..., "--encoder", "-e", metavar="SPEC", help=ENCODER_HELP),
    out: Path = typer.Option(..., "--out", help="Output folder: records/<condition>.jsonl, per_query.csv, stress.json, report.html; rerun to resume."),
    stress: str = typer.Option(..., "--stress", help="Comma-separated stress conditions: operators (caption_truncate=F, ocr_dropout=P, location_sparsify=P, time_dropout=P, face_dropout=P, owner_face_dropout=P, drop=FIELD, caption_swap), combined with '+', or presets (combined-mild, faces-mild)."),
    k: str = typer.Option(",".join(map(str, DEFAULT_KS)), "--k", help="Cut-offs of hit@k, recall@k, ndcg@k."),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Seed of the stress operators and the bootstrap."),
    resamples: int = typer.Option(DEFAULT_RESAMPLES, "--resamples", help="Bootstrap resamples for the CIs."),
    resample_by: str = typer.Option("album", "--resample-by", help="album (PAL-Bench's user-level bootstrap; needs at least 10 albums, else queries are resampled and the report says so) or query."),
    record_template: Optional[str] = typer.Option(None, "--record-template", help="Template of the text indexed per record, e.g. '[{caption}.] [Place: {place}.]' (default: caption, OCR, time words, place, people; see docs/albums.md)."),
    split: Optional[str] = typer.Option(None, "--split", help="Hugging Face PhotoBench copy: the query file of protected/album*/ (validation, test, query)."),
    language: str = typer.Option("en", "--language", help="PhotoBench: the queries' language, en (query_en) or cn (query_cn)."),
    gallery: Optional[Path] = typer.Option(None, "--gallery", help="Gallery JSONL for a JSONL query manifest."),
    qrels: Optional[Path] = typer.Option(None, "--qrels", help="Relevance labels (TREC or JSON) where the dataset has none of its own."),
    set_threshold: Optional[float] = typer.Option(None, "--set-threshold", help="Score that admits a record into a query's answer set: adds the reject metrics (zero-GT queries) under stress."),
    device: Optional[str] = typer.Option(None, "--device", help="Encoder device (default: cuda when available, else cpu)."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Encoder batch size."),
    force: bool = typer.Option(False, "--force", help="Discard an earlier run in --out made with another configuration."),
    no_report: bool = typer.Option(False, "--no-report", help="Skip report.html."),
    no_progress: bool = typer.Option(False, "--no-progress", help="Do not print progress lines."),
) -> None:
    """Perturb only the gallery records' fields and report paired deltas against the clean records.

    Each query searches only its own album; results per album, micro (over queries) and macro (over albums).
    Writes OUT/records/<condition>.jsonl, OUT/per_query.csv, OUT/stress.json and OUT/report.html.
    """
    from ..albums.suite import StressOptions, run_stress
    from ..albums.template import DEFAULT_TEMPLATE
    from ..validate import int_list

    opts = StressOptions(stress=stress, ks=int_list(k, "ks"), seed=seed, resamples=resamples, resample_by=resample_by,
                         template=record_template if record_template is not None else DEFAULT_TEMPLATE, split=split,
                         language=language, gallery=gallery, qrels=qrels, set_threshold=set_threshold, device=device,
                         batch_size=batch_size, force=force, report=not no_report)
    log = None if no_progress else (lambda m: typer.echo(m, err=True))
    res = run_stress(dataset, encoder, out, opts, log=log)
    s = res.summary
    typer.echo(f"{res.n_queries} queries in {len(res.albums)} album(s), {res.n_records} records; "
               f"{len(res.conditions) - 1} stress condition(s); {res.elapsed_s:.1f} s -> {out}")
    from ..report.stress_page import stress_findings

    for _id, sentence in stress_findings(s):
        typer.echo(f"  {sentence}")
    for n in s["notes"]:
        typer.echo(f"note: {n}", err=True)
    if res.html is not None:
        typer.echo(f"report: {res.html}")
