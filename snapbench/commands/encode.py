"""`snapbench encode`: run an encoder over a corrupted query set and a gallery -> path score matrices."""

from __future__ import annotations

from pathlib import Path

import typer

ENCODER_HELP = (
    "Encoder spec: 'toy', 'hf:NAME_OR_PATH' (transformers CLIP/SigLIP), 'sentence-transformers:NAME_OR_PATH', "
    "'open_clip:ARCH[:PRETRAINED_OR_FILE]', 'package.module:attribute' (your own), or a plugin name."
)


def encode(
    corrupted: Path = typer.Argument(..., help="Output folder of 'snapbench corrupt' (holds manifest.jsonl)."),
    gallery: Path = typer.Option(..., "--gallery", help="Gallery manifest: JSONL/JSON list of {id, image, caption} (either may be missing)."),
    out: Path = typer.Option(..., "--out", help="Output folder: embeddings/, paths/ (a SCORES_DIR of per-path matrices), dropped_queries.json."),
    encoder: str = typer.Option("toy", "--encoder", help=ENCODER_HELP),
    device: str | None = typer.Option(None, "--device", help="torch device, e.g. cuda, cuda:1, cpu (default: cuda if available, else cpu)."),
    conditions: str | None = typer.Option(None, "--conditions", help="Comma-separated condition ids (default: all in the manifest)."),
    batch_size: int = typer.Option(32, "--batch-size", min=1, help="Images decoded and encoded at a time (memory grows with it, not with the gallery)."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Embedding cache folder (default: $SNAPBENCH_CACHE or ~/.cache/snapbench)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the embedding cache."),
    no_progress: bool = typer.Option(False, "--no-progress", help="Do not show the progress bar."),
    engine: str = typer.Option("local", "--engine", help="local (encode in this process) or ray (a pool of Ray actors, one model load each; needs snapbench[ray])."),
    actors: int = typer.Option(1, "--actors", help="With --engine ray: encoder actors (a GPU each when the cluster has them)."),
    address: str | None = typer.Option(None, "--address", help="With --engine ray: the Ray cluster (auto, ray://HOST:10001); default: a local Ray."),
) -> None:
    """Encode every condition's queries and the gallery; write embeddings and the path scores.

    Writes the paths the data and the encoder allow (II, TT, IT, TI; a text-only model: TT only)
    and says which were skipped and why.  Queries missing under some condition are dropped from all
    (listed in OUT/dropped_queries.json).  Then: 'snapbench evaluate OUT/paths --mode IT2IT --qrels ...'
    or 'snapbench moor --paths-dir OUT/paths --out fused/'.
    """

    from ..encode import load_gallery, prepare_out_dir
    from ..errors import ConfigError
    from ..layout import read_manifest
    from ..models import load_encoder

    cond_list = [c.strip() for c in conditions.split(",") if c.strip()] if conditions else None
    # Inputs and the output folder are checked before a (possibly multi-GB) model is loaded.
    read_manifest(corrupted)  # one check (and message) for a folder that is not a corrupt output
    prepare_out_dir(out)
    items = load_gallery(gallery)
    if engine not in ("local", "ray"):
        raise ConfigError(f"--engine must be 'local' or 'ray', got {engine!r}")
    if engine != "ray" and address is not None:
        raise ConfigError("--address needs --engine ray")
    if actors < 1:
        raise ConfigError(f"--actors must be >= 1, got {actors}")
    if engine == "ray":
        from ..engines.ray_encode import RayEncoderPool

        pool = RayEncoderPool(encoder, actors=actors, device=device, batch_size=batch_size, address=address)
        try:
            _encode_with(pool, corrupted, gallery, out, encoder, cond_list, batch_size, cache_dir, no_cache, no_progress, items)
        finally:
            pool.close()
        return
    enc = load_encoder(encoder, device=device, batch_size=batch_size)
    _encode_with(enc, corrupted, gallery, out, encoder, cond_list, batch_size, cache_dir, no_cache, no_progress, items)


def _encode_with(enc, corrupted, gallery, out, encoder, cond_list, batch_size, cache_dir, no_cache, no_progress, items) -> None:
    """The encode command once the encoder is loaded (in this process or as a Ray actor pool)."""
    from rich.progress import Progress

    from ..encode import encode_corrupted
    from ..evaluate.modes import MODES
    from ..models import CachedEncoder

    cache_note = None
    if not no_cache:
        if getattr(enc, "fingerprint", None):
            enc = CachedEncoder(enc, cache_dir)
        else:
            cache_note = f"encoder {encoder!r} has no fingerprint: its embeddings are not cached"
    with Progress(disable=no_progress, transient=True) as bar:
        task = bar.add_task("encoding the gallery", total=None)

        def tick(stage: str, done: int, total: int) -> None:
            what = f"encoding {stage}" if stage.startswith("gallery") else f"encoded {stage}"
            bar.update(task, completed=done, total=total, description=what)

        summary = encode_corrupted(corrupted, items, enc, out, conditions=cond_list, batch_size=batch_size, progress=tick)
    typer.echo(
        f"{summary.n_queries} queries x {len(summary.conditions)} conditions, {summary.n_gallery} gallery items, "
        f"paths {', '.join(summary.paths)} -> {out}"
    )
    usable = [m for m, weights in MODES.items() if all(p in summary.paths for p in weights)]
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
    if cache_note:
        typer.echo(cache_note, err=True)
    if isinstance(enc, CachedEncoder):
        typer.echo(f"embedding cache {enc.root}: {enc.hits} hits, {enc.misses} encoded", err=True)
