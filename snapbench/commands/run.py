"""`snapbench run`: from a dataset and a model to the whole paired robustness report, one command."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..engines import ENGINES
from ..pipeline.options import RunOptions

_DEFAULT = RunOptions()  # the flags' defaults are the library's (snapbench.pipeline imports the run lazily)


def run(
    dataset: Path = typer.Argument(..., help="Dataset: snap_bench.json, a PhotoBench folder, an ImageFolder copy, or a JSONL query manifest (with --gallery/--qrels) or a folder holding queries.jsonl, gallery.jsonl, qrels.json."),
    encoder: list[str] = typer.Option(
        ..., "--encoder", "-e", metavar="SPEC",
        help="Encoder spec: toy, sentence-transformers:NAME_OR_PATH, hf:NAME_OR_PATH, open_clip:ARCH[:PRETRAINED], or "
             "package.module:attribute. Repeat it to run several encoders on one corruption pass (OUT/<name>/ each).",
    ),
    out: Path = typer.Option(..., "--out", help="Output folder (reports per mode, MOOR, report.html); rerun to resume."),
    name: Optional[list[str]] = typer.Option(
        None, "--name", metavar="NAME",
        help="With several --encoder: the folder name of each, in order (default: derived from the spec). Needed to give one spec twice.",
    ),
    format: Optional[str] = typer.Option(None, "--format", help="Force the dataset format (snapbench-json, hf-imagefolder, photobench, jsonl); default: detected."),
    images: Optional[Path] = typer.Option(None, "--images", help="Folder holding the dataset's images when they are not next to it."),
    gallery: Optional[Path] = typer.Option(None, "--gallery", help="Gallery JSONL for a JSONL query manifest."),
    qrels: Optional[Path] = typer.Option(None, "--qrels", help="Relevance labels (TREC or JSON) where the dataset has none of its own."),
    modes: Optional[str] = typer.Option(None, "--modes", help="Comma-separated modes among I2I, T2T, IT2IT, I2IT, T2IT (default: all the data and model allow)."),
    conditions: Optional[str] = typer.Option(
        None, "--conditions",
        help="Comma-separated condition ids, run exactly (plus the parts of joint ids; default: the 54 states and the 18 joint conditions).",
    ),
    joint: Optional[bool] = typer.Option(
        None, "--joint/--no-joint",
        help="Add the paper's 18 joint image+text conditions (default: yes, unless --conditions lists the conditions to run).",
    ),
    variants: str = typer.Option(_DEFAULT.variants, "--variants", help="generated (snapbench's seeded operators) or released (the variants the dataset ships)."),
    seed: int = typer.Option(_DEFAULT.seed, "--seed", help="Seed of the corruptions and the bootstrap."),
    device: Optional[str] = typer.Option(None, "--device", help="Encoder device: a torch device, e.g. cuda, cuda:1, mps, cpu; checked for every encoder (default: cuda when available, else cpu)."),
    batch_size: int = typer.Option(_DEFAULT.batch_size, "--batch-size", help="Encoder batch size."),
    workers: int = typer.Option(_DEFAULT.workers, "--workers", help="Parallel corruption tasks while the encoder runs: processes (local), CPUs of a local Ray instance, or tasks at once on a Ray cluster."),
    engine: str = typer.Option(_DEFAULT.engine, "--engine", help=f"Where queries are corrupted: {' or '.join(ENGINES)} (local: a process pool; ray: needs snapbench[ray])."),
    actors: int = typer.Option(_DEFAULT.encoder_actors, "--actors", help="With --engine ray: encode on this many Ray actors (one model load each, a GPU each when the cluster has them); 0 = encode in this process."),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster to use with --engine ray (auto, or ray://HOST:10001); default: start a local Ray with --workers CPUs."),
    resamples: int = typer.Option(_DEFAULT.resamples, "--resamples", help="Bootstrap resamples for the CIs."),
    k: str = typer.Option(",".join(map(str, _DEFAULT.ks)), "--k", help="Cut-offs of hit@k, recall@k, ndcg@k."),
    group_by: Optional[str] = typer.Option(None, "--group-by", help="Also report per value of this query field (e.g. domain, source)."),
    grid: Optional[Path] = typer.Option(None, "--grid", help="Severity grid override file (JSON/TOML)."),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="Embedding cache folder (default: $SNAPBENCH_CACHE or ~/.cache/snapbench); giving it caches cheap encoders (toy) too."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the embedding cache (default: every encoder with a fingerprint but cheap ones such as toy)."),
    force: bool = typer.Option(False, "--force", help="Discard an earlier run in --out made with another configuration."),
    no_report: bool = typer.Option(False, "--no-report", help="Skip the HTML/markdown/LaTeX report."),
    no_progress: bool = typer.Option(False, "--no-progress", help="Do not show progress bars."),
    block_queries: int = typer.Option(_DEFAULT.block_queries, "--block-queries", hidden=True, help="Queries per resume checkpoint."),
    traffic: Optional[Path] = typer.Option(
        None, "--traffic", help="A 'snapbench diagnose' output folder: also write OUT/traffic.json (expected R@k under that traffic mix), shown in the report."),
    severity_target: Optional[str] = typer.Option(None, "--severity-target", metavar="METRIC=V1,V2,...", help="Make s1, s2, ... a measured strength per image, e.g. ssim=0.90,0.75,0.60 or psnr=30,25,20 (one value per grid level, s1 first, each lower than the one before; each operator's knob searched per image, as in corrupt)."),
    no_measure: bool = typer.Option(False, "--no-measure", help="Leave out the per-query rows psnr, ssim, drift_image, drift_text (measured damage)."),
    gallery_shard_rows: Optional[int] = typer.Option(
        None, "--gallery-shard-rows",
        help="For galleries in the millions: keep the gallery embeddings as shards of N items (resumable per shard) and score shard by shard (no fixed-fusion baselines).",
    ),
    limit: Optional[int] = typer.Option(
        None, "--limit", metavar="N",
        help="Evaluate the first N queries only: a quick look before a long run (said on the terminal, in run.json and in the report)."),
    quiet: bool = typer.Option(
        False, "--quiet", "-q",
        help="For scripts: no progress, no messages, no table; stdout lists the result files (each report.json, "
             "headline.json, report.html), one path per line. Errors and warnings still go to stderr."),
) -> None:
    """Run the whole paired evaluation: load -> corrupt -> encode -> score -> fuse -> evaluate -> report.

    Writes OUT/<MODE>/report.json for each evaluated mode (I2I, T2T, IT2IT, I2IT, T2IT), OUT/MOOR/report.json,
    fixed-fusion baselines under OUT/fusion/, and OUT/report.html. A killed run resumes where it stopped.
    With several --encoder, OUT/<name>/ holds each encoder's run (the same files).

    When it is done it prints, per target, the clean R@1 and nDCG@10, the mean ΔR@1 over every corrupted
    condition with its CI, the worst and mildest operators, δ (joint conditions) and MOOR against the best
    fixed fusion: the numbers of OUT/headline.json.
    """
    from ..corruptions.target import parse_severity_target
    from ..errors import ConfigError
    from ..pipeline import run_benchmark, run_encoders
    from ..validate import comma_list, int_list

    if name and len(encoder) == 1:
        raise ConfigError("names the folders of a run of several encoders; with one encoder, OUT is the run folder",
                          param="name")
    opts = RunOptions(
        modes=comma_list(modes, "modes"), conditions=comma_list(conditions, "conditions"), joint=joint,
        variants=variants, seed=seed, grid=grid, device=device, batch_size=batch_size, workers=workers, engine=engine,
        address=address, encoder_actors=actors, resamples=resamples, ks=int_list(k, "ks"), group_by=group_by,
        cache_dir=cache_dir, use_cache=False if no_cache else None, dataset_format=format, images=images, qrels=qrels,
        gallery=gallery, force=force, report=not no_report, progress=not no_progress, block_queries=block_queries,
        gallery_shard_rows=gallery_shard_rows, traffic=traffic, measure=not no_measure,
        severity_target=parse_severity_target(severity_target), limit=limit,
    )
    if len(encoder) == 1:
        res = run_benchmark(dataset, encoder[0], out, opts, log=_logger(quiet))
        if quiet:
            _paths(res)
        else:
            _summary(res)
    else:
        _several(run_encoders(dataset, encoder, out, opts, names=name, log=_logger(quiet)), out, quiet)


def _several(result, out: Path, quiet: bool = False) -> None:
    for folder, res in result.runs.items():
        if quiet:
            _paths(res)
            continue
        typer.echo(f"{folder}:")
        _summary(res, title=f"snapbench run: {folder}")
    if not quiet:
        typer.echo(f"{len(result.runs)} encoders, one corruption pass, {result.elapsed_s:.1f} s -> {out}")


def _logger(quiet: bool = False):
    if quiet:
        return lambda msg: None
    return lambda msg: typer.echo(msg, err=True)


def _paths(result) -> None:
    """--quiet: the result files, one path per line (what a script reads next)."""
    from ..layout import RunDir

    for path in result.reports.values():
        typer.echo(str(path))
    for path in (RunDir(result.out_dir).headline, result.html):
        if path is not None and Path(path).is_file():
            typer.echo(str(path))


def _table(result, title: str) -> None:
    """The headline table of the run (OUT/headline.json, read back: the numbers the file holds)."""
    from ..evaluate.terminal import _console
    from ..layout import RunDir
    from ..report.headline import read_headline
    from ..report.terminal import headline_table

    if RunDir(result.out_dir).headline.is_file():
        _console().print(headline_table(read_headline(result.out_dir), title=title))


def _summary(result, title: str = "snapbench run") -> None:
    done = "complete already, read back" if result.reused else f"{result.elapsed_s:.1f} s"
    typer.echo(
        f"{result.n_queries} queries x {len(result.conditions)} conditions vs {result.n_gallery} gallery items; "
        f"modes: {', '.join(result.modes)}; {len(result.dropped)} dropped; {done}"
    )
    if result.target_outcome is not None:
        from ..corruptions.target import target_summary
        from ..report.damage import TARGET_FLAGGED

        typer.echo(target_summary(result.target_outcome, TARGET_FLAGGED))
    for target, path in result.reports.items():
        typer.echo(f"  {target:14s} {path}")
    _table(result, title)
    if result.html is not None:
        typer.echo(f"report: {result.html}")
