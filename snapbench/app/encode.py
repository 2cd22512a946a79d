"""`snapbench encode`: run an encoder over a corrupted query set and a gallery -> path score matrices."""

from __future__ import annotations

import warnings
from pathlib import Path

import typer

from ..core.defaults import DEFAULT_BATCH_SIZE
from ..engines import ENGINES

ENCODER_HELP = (
    "Encoder spec: 'toy', 'hf:NAME_OR_PATH' (transformers CLIP/SigLIP), 'sentence-transformers:NAME_OR_PATH', "
    "'open_clip:ARCH[:PRETRAINED_OR_FILE]', 'package.module:attribute' (your own), or a plugin name."
)


def encode(
    corrupted: Path = typer.Argument(..., help="Output folder of 'snapbench corrupt' (holds manifest.jsonl)."),
    gallery: Path = typer.Option(..., "--gallery", help="Gallery manifest: JSONL/JSON list of {id, image, caption} (either may be missing)."),
    out: Path = typer.Option(..., "--out", help="Output folder: embeddings/, paths/ (a SCORES_DIR of per-path matrices), dropped_queries.json."),
    encoder: str = typer.Option("toy", "--encoder", "-e", help=ENCODER_HELP),
    device: str | None = typer.Option(None, "--device", help="Encoder device: a torch device, e.g. cuda, cuda:1, mps, cpu; checked for every encoder (default: cuda when available, else cpu)."),
    conditions: str | None = typer.Option(None, "--conditions", help="Comma-separated condition ids (default: all in the manifest)."),
    batch_size: int = typer.Option(DEFAULT_BATCH_SIZE, "--batch-size", help="Images decoded and encoded at a time (memory grows with it, not with the gallery)."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Embedding cache folder (default: $SNAPBENCH_CACHE or ~/.cache/snapbench); giving it caches cheap encoders (toy) too."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the embedding cache (default: every encoder with a fingerprint but cheap ones such as toy)."),
    no_progress: bool = typer.Option(False, "--no-progress", help="Do not show the progress bar."),
    engine: str = typer.Option("local", "--engine", help=f"{' or '.join(ENGINES)}: local encodes in this process, ray on a pool of Ray actors (one model load each; needs snapbench[ray])."),
    actors: int = typer.Option(1, "--actors", help="With --engine ray: encoder actors (a GPU each when the cluster has them)."),
    address: str | None = typer.Option(None, "--address", help="With --engine ray: the Ray cluster (auto, ray://HOST:10001); default: a local Ray."),
) -> None:
    """Encode every condition's queries and the gallery; write embeddings and the path scores.

    Writes the paths the data and the encoder allow (II, TT, IT, TI; a text-only model: TT only)
    and says which were skipped and why.  Queries missing under some condition are dropped from all
    (listed in OUT/dropped_queries.json).  Then: 'snapbench evaluate OUT/paths --mode IT2IT --qrels ...'
    or 'snapbench moor --paths-dir OUT/paths --out fused/'.
    """
    from ..core.validate import comma_list, positive_int
    from ..engines import check_engine
    from ..models.device import check_device
    from ..store.cache import CachedEncoder, check_cache_dir
    from .encoding import check_conditions, load_gallery, prepare_out_dir
    from .stages.encoders import close_encoder, open_encoder

    cond_list = comma_list(conditions, "conditions")
    positive_int(batch_size, "batch_size")
    check_engine(engine, 1, address)
    positive_int(actors, "actors")
    check_device(device)
    if cache_dir is not None:
        check_cache_dir(cache_dir)
    # Inputs and the output folder are checked before a (possibly multi-GB) model is loaded.
    prepare_out_dir(out)  # outputs first: a wrong --out is said before anything is read
    check_conditions(corrupted, cond_list)  # a folder that is not a corrupt output; ids it has no outputs for
    items = load_gallery(gallery)
    enc, note = open_encoder(encoder, device=device, batch_size=batch_size, engine=engine,
                             actors=actors if engine == "ray" else 0, address=address,
                             use_cache=False if no_cache else None, cache_dir=cache_dir, progress=not no_progress)
    try:
        if note:
            warnings.warn(note, stacklevel=1)
        if isinstance(enc, CachedEncoder):
            typer.echo(f"embedding cache: {enc.cache_dir}", err=True)
        _encode_with(enc, corrupted, out, encoder, cond_list, batch_size, no_progress, items)
    finally:
        close_encoder(enc)


def _encode_with(enc, corrupted, out, encoder, cond_list, batch_size, no_progress, items) -> None:
    """The encode command once the encoder is open (in this process or as a Ray actor pool)."""
    from ..core.targets import modes_for_paths
    from ..render.progress import ProgressDisplay
    from ..store.cache import CachedEncoder
    from .encoding import encode_corrupted

    with ProgressDisplay(not no_progress) as bar:
        tasks: dict[str, object] = {}
        seen: dict[str, int] = {}

        def tick(stage: str, done: int, total: int) -> None:
            key = stage if stage.startswith("gallery") else "conditions"
            if key not in tasks:
                tasks[key] = bar.add(f"encoding {key}", total)
            bar.advance(tasks[key], done - seen.get(key, 0))
            seen[key] = done

        summary = encode_corrupted(corrupted, items, enc, out, conditions=cond_list, batch_size=batch_size, progress=tick)
    typer.echo(
        f"{summary.n_queries} queries x {len(summary.conditions)} conditions, {summary.n_gallery} gallery items, "
        f"paths {', '.join(summary.paths)} -> {out}"
    )
    usable = modes_for_paths(summary.paths)
    typer.echo(f"retrieval modes these paths give: {', '.join(usable) or 'none'} "
               f"(snapbench evaluate {out / 'paths'} --mode MODE --qrels ...)")
    if summary.joint:
        typer.echo(f"native joint IT→IT scores of {getattr(enc, 'name', encoder)!r}: {out / 'paths'}/<condition>.npy "
                   "(what 'snapbench evaluate OUT/paths' scores without --mode)")
    if summary.skipped_paths:
        by_reason: dict[str, list[str]] = {}
        for p, why in summary.skipped_paths.items():
            by_reason.setdefault(why, []).append(p)
        typer.echo("skipped paths: " + "; ".join(f"{', '.join(ps)} ({why})" for why, ps in by_reason.items()), err=True)
    if summary.dropped_queries:
        typer.echo(
            f"dropped {len(summary.dropped_queries)} queries not produced under every condition "
            f"(kept paired; reasons in {out / 'dropped_queries.json'})",
            err=True,
        )
    if isinstance(enc, CachedEncoder):
        typer.echo(f"embedding cache: {enc.hits} hits, {enc.misses} encoded", err=True)
