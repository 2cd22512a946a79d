"""The run itself: plan, resume check, encode, evaluate, report."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..atomic import prepare_output_dir, write_text_atomic
from ..engines import check_engine
from ..errors import ConfigError, InputError
from ..layout import DROPPED_QUERIES, EMBEDDINGS_DIR, RUN_CONFIG
from ..modes import MODES as MODE_WEIGHTS
from ..progress import ProgressDisplay
from .plan import (
    MODES,
    PATH_SIDES,
    RUN_SCHEMA,
    RunOptions,
    RunResult,
    available_sides,
    image_source,
    plan_conditions,
    plan_modes,
    text_source,
)
from .scoring import evaluate_all
from .sources import (
    Batcher,
    QueryStore,
    SourceTask,
    encode_gallery,
    encode_gallery_shards,
    iter_sources,
    read_blocks,
)

# ------------------------------------------------------------------------------------------------
# the run
# ------------------------------------------------------------------------------------------------


def run_fingerprint(dataset: Any, encoder: Any, options: RunOptions, grid_json: Any, conds: list[str], sources: dict) -> dict:
    import hashlib

    from ..conditions import parse_condition
    from ..corruptions.image import image_operator_revisions

    ids = hashlib.sha256("\x1f".join(q.id for q in dataset.queries).encode()).hexdigest()
    gids = hashlib.sha256("\x1f".join(g.id for g in dataset.gallery).encode()).hexdigest()
    return {
        "dataset_queries_sha256": ids,
        "dataset_gallery_sha256": gids,
        "encoder_fingerprint": str(getattr(encoder, "fingerprint", getattr(encoder, "name", type(encoder).__name__))),
        "seed": int(options.seed),
        "variants": options.variants,
        "grid": grid_json,
        "block_queries": int(options.block_queries),
        "gallery_shard_rows": options.gallery_shard_rows,
        "batch_size": int(options.batch_size),
        "sources": sources,
        # generated image variants depend on each operator's algorithm revision (released ones do not)
        "operator_revisions": image_operator_revisions(
            parse_condition(c).image_operator for c in sources.get("image", []) if parse_condition(c).image_operator
        ) if options.variants == "generated" else {},
    }


def run_benchmark(
    dataset: str | os.PathLike | Any,
    encoder: str | Any,
    out_dir: str | os.PathLike,
    options: RunOptions | None = None,
    *,
    log: Callable[[str], None] | None = None,
) -> RunResult:
    """From a dataset and an encoder to the paired robustness reports (layout in the module docstring).

    ``dataset`` is a path (any format :func:`snapbench.data.load_dataset` reads) or a loaded
    :class:`snapbench.data.Dataset`; ``encoder`` a spec string (``toy``,
    ``sentence-transformers:NAME``, ``hf:NAME``, ``open_clip:ARCH[:PRETRAINED]``, ``module:attr``)
    or an encoder object.  Rerunning into the same ``out_dir`` resumes; a run made with another
    dataset, encoder, seed, grid or variants is refused unless ``options.force``.
    """
    opts = options or RunOptions()
    say = log or (lambda _msg: None)
    t0 = time.perf_counter()
    if opts.workers < 1:
        raise ConfigError(f"workers must be >= 1, got {opts.workers}")
    check_engine(opts.engine, opts.workers, opts.address)
    if not opts.ks or any(int(k) < 1 for k in opts.ks):
        raise ConfigError(f"the cut-offs k must be positive integers, got {list(opts.ks)}")
    if opts.gallery_shard_rows is not None and int(opts.gallery_shard_rows) < 1:
        raise ConfigError(f"gallery_shard_rows must be >= 1, got {opts.gallery_shard_rows}")
    if opts.block_queries < 1:
        raise ConfigError(f"block_queries must be >= 1, got {opts.block_queries}")
    if opts.batch_size < 1:
        raise ConfigError(f"batch_size must be >= 1, got {opts.batch_size}")
    if opts.variants not in ("generated", "released"):
        raise ConfigError(f"variants must be 'generated' or 'released', got {opts.variants!r}")
    out = prepare_output_dir(out_dir)

    if hasattr(dataset, "queries"):
        ds = dataset
    else:
        from ..data import load_dataset

        ds = load_dataset(dataset, format=opts.dataset_format, images=opts.images, qrels=opts.qrels, gallery=opts.gallery)
    enc = load_encoder(encoder, opts)
    try:
        return _run_loaded(ds, enc, encoder, out, opts, say, t0)
    finally:
        close = getattr(enc, "close", None) or getattr(getattr(enc, "encoder", None), "close", None)
        if callable(close):
            close()  # a Ray encoder pool: its actors (and a private Ray instance)


def _run_loaded(ds: Any, enc: Any, encoder: str | Any, out: Path, opts: RunOptions, say: Callable[[str], None],
                t0: float) -> RunResult:
    """:func:`run_benchmark` once the dataset and the encoder are loaded."""
    from ..corruptions import resolve_grid

    notes = list(getattr(ds, "notes", []))

    q_sides, g_sides, why = available_sides(ds, enc)
    modes, paths, moor_ok = plan_modes(q_sides, g_sides, opts.modes)
    if not modes and not moor_ok:
        raise ConfigError(
            "no retrieval mode can run: " + "; ".join(why or ["the requested modes need sides that are missing"])
        )
    skipped_modes = [m for m in (opts.modes or MODES) if str(m).upper() not in modes]
    if skipped_modes:
        notes.append(f"modes skipped: {', '.join(str(m).upper() for m in skipped_modes)} ({'; '.join(why) or 'not requested'})")
    if not moor_ok:
        notes.append("MOOR skipped: it needs query and gallery images and texts, and an encoder for both")
    use_q_img = any(PATH_SIDES[p][0] == "image" for p in paths)
    use_q_txt = any(PATH_SIDES[p][0] == "text" for p in paths)
    table = resolve_grid(opts.grid)
    try:
        conds, cnotes = plan_conditions(opts, ds, use_query_images=use_q_img, use_query_text=use_q_txt, grid=table)
    except ConfigError as exc:
        if isinstance(opts.grid, (str, os.PathLike)) and "severity grid entry" in str(exc):
            raise ConfigError(str(exc), path=opts.grid) from None  # name the grid file that holds the bad level
        raise
    notes += cnotes
    img_sources = tuple(dict.fromkeys(image_source(c) for c in conds)) if use_q_img else ()
    txt_sources = tuple(dict.fromkeys(text_source(c) for c in conds)) if use_q_txt else ()
    for n in notes:
        say(n)

    grid_json = {op: {f"s{s}": dict(v) for s, v in sorted(levels.items())} for op, levels in sorted(table.items())}
    fp = run_fingerprint(ds, enc, opts, grid_json, [c.id for c in conds], {"image": list(img_sources), "text": list(txt_sources)})
    out.mkdir(parents=True, exist_ok=True)
    run_json = out / RUN_CONFIG
    emb_dir = out / EMBEDDINGS_DIR
    qdir = emb_dir / "queries"
    if run_json.exists():
        try:
            previous = json.loads(run_json.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            previous = None
        before = previous.get("fingerprint") if isinstance(previous, dict) else None
        if before is None:  # never overwrite another command's output folder, even when forced
            raise ConfigError(
                f"{out} is not the output folder of a snapbench run (its run.json was written by something else); "
                "use a new output folder"
            )
        if "operator_revisions" not in before:  # run.json from before revisions existed: all were 1
            before = {**before, "operator_revisions": {op: 1 for op in fp["operator_revisions"]}}
        if before != fp and not opts.force:
            diff = sorted(k for k in fp if before.get(k) != fp[k])
            revs = [f"{op} revision {before['operator_revisions'].get(op, 1)} (this run: {r})"
                    for op, r in fp["operator_revisions"].items() if before["operator_revisions"].get(op, 1) != r]
            raise ConfigError(
                f"{out} holds a run made with another {', '.join(diff) or 'configuration'}"
                + (f" (image operators: {', '.join(revs)})" if revs else "")
                + "; use a new output folder, or force (--force) to discard it"
            )
    if opts.force and qdir.exists():
        for f in qdir.iterdir():
            f.unlink()
        for f in emb_dir.glob("gallery.*.npy"):
            f.unlink()
    qdir.mkdir(parents=True, exist_ok=True)
    from .. import __version__

    first_img = next((q for q in ds.queries if q.image is not None and Path(q.image).exists()), None)
    meta = {
        "schema": RUN_SCHEMA,
        "snapbench_version": __version__,
        "dataset": f"{ds.name} ({ds.format})",
        "dataset_info": {"name": ds.name, "format": ds.format, "root": str(Path(ds.root).resolve()), "n_queries": len(ds.queries),
                         "n_gallery": len(ds.gallery)},
        "encoder": encoder if isinstance(encoder, str) else str(getattr(enc, "name", type(encoder).__name__)),
        "seed": int(opts.seed),
        "variants": opts.variants,
        "modes": modes + (["MOOR"] if moor_ok else []),
        "conditions": [c.id for c in conds],
        "fingerprint": fp,
        "status": "running",
        "contact_sheet": {"image": str(Path(first_img.image).resolve()), "key": first_img.id, "seed": int(opts.seed),
                          "question": first_img.question, "entity": first_img.entity} if first_img else None,
        "notes": notes,
    }
    write_text_atomic(run_json, json.dumps(meta, indent=2, ensure_ascii=False) + "\n")

    n_q = len(ds.queries)
    blocks_log = qdir / "blocks.jsonl"
    done = read_blocks(blocks_log)
    B = int(opts.block_queries)
    n_blocks = (n_q + B - 1) // B
    if done:
        say(f"resuming: {sum(1 for b in done if b < n_blocks)} of {n_blocks} query blocks already done in {out}")
    img_store = QueryStore(qdir, n_q, "image")
    txt_store = QueryStore(qdir, n_q, "text")
    released = ds.released if opts.variants == "released" else None
    grid_arg = table

    with ProgressDisplay(opts.progress) as bar:
        if opts.gallery_shard_rows:
            gallery = encode_gallery_shards(ds, enc, emb_dir / "gallery", g_sides, opts.batch_size,
                                            int(opts.gallery_shard_rows), bar)
        else:
            gallery = encode_gallery(ds, enc, emb_dir, g_sides, opts.batch_size, bar)
        if {"image", "text"} <= set(gallery) and gallery["image"].shape[1] != gallery["text"].shape[1]:
            # separate image and text spaces: no cross-modal paths (IT, TI), hence no MOOR
            dims = f"{gallery['image'].shape[1]} vs {gallery['text'].shape[1]}"
            cross = [m for m in modes if {"IT", "TI"} & set(MODE_WEIGHTS[m])]
            modes = [m for m in modes if m not in cross]
            line = (f"the encoder's image and text embeddings differ in size ({dims}): modes {', '.join(cross + ['MOOR'])} "
                    "need a shared space and are skipped")
            say(line)
            notes.append(line)
            moor_ok = False
            meta["modes"] = modes
        qtask = bar.add("corrupt + encode queries", n_q)
        bar.advance(qtask, sum(min(B, n_q - b * B) for b in done if b < n_blocks))
        todo = [b for b in range(n_blocks) if b not in done]
        tasks = [
            SourceTask(i, q.id, None if q.image is None else str(q.image), q.question, q.entity, int(opts.seed),
                        img_sources, txt_sources, grid_arg)
            for b in todo
            for i, q in enumerate(ds.queries[b * B : (b + 1) * B], start=b * B)
        ]
        timings = {"wait_s": 0.0, "encode_s": 0.0}
        img_batch = Batcher(enc.encode_images, opts.batch_size, img_store.put)
        txt_batch = Batcher(enc.encode_texts, opts.batch_size, txt_store.put)
        block_skips: list[dict[str, Any]] = []
        with open(blocks_log, "a", encoding="utf-8") as logf:
            sources = iter_sources(tasks, opts.workers, released, engine=opts.engine, address=opts.address)
            while True:
                t_wait = time.perf_counter()
                res = next(sources, None)
                waited = time.perf_counter() - t_wait
                timings["wait_s"] += waited
                timings.setdefault("first_wait_s", waited)  # includes starting the workers
                if res is None:
                    break
                for src in img_sources:
                    if src in res.images:
                        img_batch.add(res.index, src, res.images[src])
                for src in txt_sources:
                    if src in res.texts:
                        txt_batch.add(res.index, src, res.texts[src])
                block_skips += res.skips
                bar.advance(qtask)
                b = res.index // B
                if res.index == min((b + 1) * B, n_q) - 1:  # last query of its block
                    img_batch.flush()
                    txt_batch.flush()
                    img_store.flush()
                    txt_store.flush()
                    logf.write(json.dumps({"block": b, "skips": block_skips}, ensure_ascii=False) + "\n")
                    logf.flush()
                    os.fsync(logf.fileno())
                    done[b] = block_skips
                    block_skips = []

        timings["encode_s"] = img_batch.busy_s + txt_batch.busy_s
        # ---- paired query set -------------------------------------------------------------------
        dropped: dict[str, str] = {}
        for skips in done.values():
            for s in skips:
                dropped.setdefault(s["id"], f"{s['condition'] or 'all conditions'}: {s['reason']}")
        keep = np.array([i for i, q in enumerate(ds.queries) if q.id not in dropped], dtype=np.int64)
        if keep.size == 0:
            raise InputError(f"no query could be produced under every condition (see {out / 'dropped_queries.json'})")
        write_text_atomic(out / DROPPED_QUERIES, json.dumps(dropped, indent=2, ensure_ascii=False) + "\n")
        if dropped:
            say(f"{len(dropped)} quer{'y' if len(dropped) == 1 else 'ies'} dropped from every state (listed in {out / 'dropped_queries.json'})")
        q_emb = {("image", s): img_store.load(s) for s in img_sources}
        q_emb.update({("text", s): txt_store.load(s) for s in txt_sources})

        reports = evaluate_all(ds, out, conds, modes, moor_ok, gallery, q_emb, keep, opts, bar, say)

    if dropped:
        notes.append(f"{len(dropped)} of {len(ds.queries)} queries dropped from every state (dropped_queries.json)")
    meta["notes"] = notes
    meta["status"] = "complete"
    meta["n_queries_evaluated"] = int(keep.size)
    write_text_atomic(run_json, json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    html = None
    if opts.report:
        from ..report import build_report

        rep = build_report(out)
        for topic, lines in rep.notes.items():
            for line in lines:
                say(f"report ({topic}): {line}")
        html = out / "report.html" if (out / "report.html").exists() else None
    return RunResult(out, modes + (["MOOR"] if moor_ok else []), [c.id for c in conds], int(keep.size), len(ds.gallery),
                     dropped, notes, reports, html, time.perf_counter() - t0, timings)


def load_encoder(encoder: str | Any, opts: RunOptions) -> Any:
    if not isinstance(encoder, str):
        return encoder
    from ..models import CachedEncoder, load_encoder

    if opts.engine == "ray" and opts.encoder_actors > 0:
        from ..engines.ray_encode import RayEncoderPool

        enc = RayEncoderPool(encoder, actors=opts.encoder_actors, device=opts.device, batch_size=opts.batch_size,
                             address=opts.address, workers=opts.workers)
    else:
        enc = load_encoder(encoder, device=opts.device, batch_size=opts.batch_size)
    if opts.use_cache and getattr(enc, "fingerprint", None):
        enc = CachedEncoder(enc, opts.cache_dir)
    return enc


