"""The encode + score step: corrupted query set + gallery + encoder -> path score matrices.

Reads the output of ``snapbench corrupt`` (``DIR/manifest.jsonl``) and a gallery (a manifest file,
JSONL or JSON list of ``{"id", "image", "caption"}`` with image paths relative to the manifest, or
any sequence of objects with ``id``, ``image``, ``caption`` attributes, either of the last two
possibly ``None``), and writes::

    OUT/query_ids.txt, OUT/gallery_ids.txt
    OUT/embeddings/gallery.image.npy, gallery.text.npy          (N x d, float32)
    OUT/embeddings/<condition file name>.image.npy / .text.npy   (Q x d, float32)
    OUT/paths/<condition file name>.{II,TT,IT,TI}.npy            (Q x N cosine scores)
    OUT/paths/query_ids.txt, OUT/paths/gallery_ids.txt
    OUT/dropped_queries.json                                     {query id: reason}
    OUT/paths/<condition file name>.npy, OUT/embeddings/*.joint.npy   only for a native joint model

A model with a native joint embedding (``joint = True`` and ``encode_queries(images, texts)``)
also gets its own IT→IT scores: ``encode_queries`` embeds each query (image, question) and each
gallery item (image, caption), and ``paths/<condition>.npy`` holds their cosines, which
``snapbench evaluate OUT/paths`` (no ``--mode``) scores.

``OUT/paths`` is what ``snapbench evaluate --mode IT2IT`` and ``snapbench moor --paths-dir`` read;
``OUT/embeddings`` is what exact MOOR (with whitening) needs.

Decisions:

* Memory is bounded by the batch, not the gallery: images are decoded, encoded and dropped batch by
  batch; only embeddings are kept.  Each distinct variant image (manifest ``sha256``) and question
  is encoded once per run (text conditions share the clean image, image conditions the clean
  question); an :class:`~snapbench.models.CachedEncoder` makes that once per model across runs.
* A path is written only when both of its sides exist for *every* query and gallery item and the
  encoder encodes them: II needs query and gallery images, TT questions and captions, IT query
  images and captions, TI questions and gallery images.  Image-only queries give II (and IT with
  captions); a text-only model gives TT.  The paths left out, and why, are in
  :attr:`EncodeSummary.skipped_paths`.
* ``OUT/embeddings`` and ``OUT/paths`` hold exactly this run's matrices: ``.npy`` files an earlier
  run left there (other conditions, paths, or rows of other queries) are removed at the end, since
  they would be read with this run's id lists.
* Queries without an output under some selected condition are dropped from every condition so all
  states stay paired on the same queries; ``dropped_queries.json`` gives each one's reason.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .atomic import prepare_output_dir, save_npy_atomic, write_text_atomic
from .conditions import condition_to_filename, parse_condition
from .corruptions.io import load_image
from .data import GalleryItem
from .data.common import read_gallery_manifest
from .errors import ConfigError, InputError
from .layout import DROPPED_QUERIES, EMBEDDINGS_DIR, PATHS_DIR, read_manifest, read_skips, write_ids
from .models import Encoder, cosine_path_scores
from .modes import PATH_SIDES

__all__ = ["EncodeSummary", "GalleryItem", "encode_corrupted", "load_gallery", "prepare_out_dir"]



@dataclass
class EncodeSummary:
    out_dir: Path
    conditions: list[str]
    n_queries: int
    n_gallery: int
    dropped_queries: dict[str, str] = field(default_factory=dict)  # id -> reason
    paths: list[str] = field(default_factory=list)  # the paths written, e.g. ["II", "TT", "IT", "TI"]
    skipped_paths: dict[str, str] = field(default_factory=dict)  # path -> why it was not written
    joint: bool = False  # paths/<condition>.npy hold the encoder's native joint IT→IT scores


def load_gallery(path: str | os.PathLike) -> list[GalleryItem]:
    """Read a gallery manifest: JSONL or a JSON list of objects with ``id`` and ``image`` and/or
    ``caption`` (the one reader of :mod:`snapbench.data`)."""
    return read_gallery_manifest(Path(path))


def _read_skips(corrupt_dir: Path) -> dict[tuple[str, str | None], str]:
    """(query id, condition or None) -> reason, from ``skips.jsonl`` (empty when there is none)."""
    return {(str(s["id"]), s.get("condition")): str(s.get("reason")) for s in read_skips(corrupt_dir)}


def prepare_out_dir(out_dir: str | os.PathLike) -> None:
    """Create ``out_dir/embeddings`` and ``out_dir/paths``; raise :class:`OutputError` if ``out_dir``
    cannot hold the outputs — before any encoding is spent."""
    prepare_output_dir(out_dir, EMBEDDINGS_DIR, PATHS_DIR)


def _encode_stream(encode: Callable[[list], np.ndarray], items: Sequence[Any], load: Callable[[Any], Any],
                   batch_size: int, what: str, on_batch: Callable[[int], None] | None = None) -> np.ndarray:
    """Load, encode and drop ``items`` batch by batch; only the (n, d) float32 embeddings are kept.

    ``on_batch(n_done)`` is called after each batch.
    """
    chunks = []
    for i in range(0, len(items), batch_size):
        batch = [load(x) for x in items[i : i + batch_size]]
        emb = np.asarray(encode(batch), dtype=np.float32)
        if emb.ndim != 2 or emb.shape[0] != len(batch):
            raise ConfigError(f"the encoder returned shape {emb.shape} for a batch of {len(batch)} {what}")
        chunks.append(emb)
        del batch
        if on_batch:
            on_batch(i + emb.shape[0])
    if not chunks:
        raise ConfigError(f"no {what} to encode")
    return np.concatenate(chunks)


def _side_reason(side: str, queries: bool, missing: list[str], total: int) -> str:
    one, many = ("query", "queries") if queries else ("gallery item", "gallery items")
    noun = "image" if side == "image" else ("question" if queries else "caption")
    if len(missing) == total:
        return f"no {one} has a{'n' if noun[0] in 'aeiou' else ''} {noun}"
    ex = ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else "")
    return f"{len(missing)} of {total} {many} have no {noun} ({ex}); a path needs it for every one"


def encode_corrupted(
    corrupt_dir: str | os.PathLike,
    gallery: str | os.PathLike | Sequence[Any],
    encoder: Encoder,
    out_dir: str | os.PathLike,
    *,
    conditions: Sequence[str] | None = None,
    batch_size: int = 32,
    progress: Callable[[str, int, int], None] | None = None,
) -> EncodeSummary:
    """Encode a corrupted query set and a gallery with ``encoder``; write embeddings and path scores.

    ``gallery``: a manifest path or a sequence of objects with ``id``, ``image`` (path or ``None``)
    and ``caption`` (str or ``None``).  ``conditions`` restricts the conditions encoded (``clean``
    is always included).  ``batch_size``: images decoded (and passed to the encoder) at a time;
    memory grows with it, not with the gallery.  ``progress(stage, done, total)`` is called after
    each gallery batch (stage ``"gallery images"`` / ``"gallery captions"``, counting items) and
    after each condition (stage = the condition id, counting conditions).  The encoder's ``modalities``
    (default: both) decide, with the data, which paths are written (module docstring).
    """
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"batch_size must be a positive integer, got {batch_size!r}")
    corrupt_dir, out_dir = Path(corrupt_dir), Path(out_dir)
    lines = read_manifest(corrupt_dir)
    items = load_gallery(gallery) if isinstance(gallery, (str, os.PathLike)) else list(gallery)
    if not items:
        raise InputError("the gallery is empty")
    gallery_ids = [str(g.id) for g in items]
    if len(set(gallery_ids)) != len(gallery_ids):
        dup = next(i for i in gallery_ids if gallery_ids.count(i) > 1)
        raise InputError(f"duplicate gallery id {dup!r}")

    by_cond: dict[str, dict[str, dict]] = {}
    for ln in lines:
        by_cond.setdefault(ln["condition"], {})[str(ln["id"])] = ln
    if "clean" not in by_cond:
        raise InputError("manifest.jsonl has no 'clean' outputs", path=corrupt_dir)
    wanted = list(by_cond) if conditions is None else ["clean"] + [parse_condition(c).id for c in conditions if parse_condition(c).id != "clean"]
    wanted = list(dict.fromkeys(wanted))
    missing = [c for c in wanted if c not in by_cond]
    if missing:
        raise InputError(f"no outputs for condition(s) {', '.join(missing)}", path=corrupt_dir)

    skips = _read_skips(corrupt_dir)
    query_ids = list(by_cond["clean"])
    dropped: dict[str, str] = {}
    for c in wanted:
        for q in query_ids:
            if q not in by_cond[c] and q not in dropped:
                why = skips.get((q, c)) or skips.get((q, None)) or "see skips.jsonl"
                dropped[q] = f"no output under {c}: {why}"
    query_ids = [q for q in query_ids if q not in dropped]
    if not query_ids:
        raise InputError("no query has outputs under every selected condition", path=corrupt_dir)

    # Which sides exist for every query / gallery item, and which the encoder encodes.
    clean = by_cond["clean"]
    mods = frozenset(getattr(encoder, "modalities", None) or {"image", "text"})
    lacking = {
        ("q", "image"): [q for q in query_ids if not clean[q].get("path")],
        ("q", "text"): [q for q in query_ids if clean[q].get("question") is None],
        ("g", "image"): [g.id for g in items if g.image is None],
        ("g", "text"): [g.id for g in items if g.caption is None],
    }
    side_why: dict[tuple[str, str], str] = {}
    for (who, side), miss in lacking.items():
        if side not in mods:
            side_why[(who, side)] = f"encoder {getattr(encoder, 'name', '?')!r} does not encode {side}s"
        elif miss:
            side_why[(who, side)] = _side_reason(side, who == "q", miss, len(query_ids) if who == "q" else len(items))
    paths, skipped_paths = [], {}
    for p, (qs, gs) in PATH_SIDES.items():
        why = side_why.get(("q", qs)) or side_why.get(("g", gs))
        if why:
            skipped_paths[p] = why
        else:
            paths.append(p)
    joint = bool(getattr(encoder, "joint", False)) and callable(getattr(encoder, "encode_queries", None))
    if joint:
        why = next(iter(side_why.values()), None)
        if why:
            skipped_paths["joint"] = f"native joint scores need images and texts on both sides: {why}"
            joint = False
    if not paths and not joint:
        raise ConfigError("no path can be scored: " + "; ".join(f"{p}: {w}" for p, w in skipped_paths.items()))
    need = {("q", PATH_SIDES[p][0]) for p in paths} | {("g", PATH_SIDES[p][1]) for p in paths}

    prepare_out_dir(out_dir)
    for d in (out_dir, out_dir / PATHS_DIR):
        write_ids(d / "query_ids.txt", query_ids)
        write_ids(d / "gallery_ids.txt", gallery_ids)
    write_text_atomic(out_dir / DROPPED_QUERIES, json.dumps(dropped, indent=1, ensure_ascii=False) + "\n")

    written: set[Path] = set()

    def put(path: Path, arr: np.ndarray | None) -> None:
        if arr is not None:
            save_npy_atomic(path, arr)
            written.add(path)

    emb_dir, path_dir = out_dir / EMBEDDINGS_DIR, out_dir / PATHS_DIR
    g_emb: dict[str, np.ndarray | None] = {"image": None, "text": None}
    def gallery_tick(stage: str) -> Callable[[int], None] | None:
        return None if progress is None else (lambda done: progress(stage, done, len(items)))

    if ("g", "image") in need:
        g_emb["image"] = _encode_stream(encoder.encode_images, items, lambda g: load_image(g.image), batch_size,
                                        "gallery images", gallery_tick("gallery images"))
    if ("g", "text") in need:
        g_emb["text"] = _encode_stream(encoder.encode_texts, [g.caption for g in items], lambda t: t, batch_size,
                                       "gallery captions", gallery_tick("gallery captions"))
    for side, arr in g_emb.items():
        put(emb_dir / f"gallery.{side}.npy", arr)
    g_joint = None
    if joint:
        g_joint = _encode_stream(lambda b: encoder.encode_queries([x[0] for x in b], [x[1] for x in b]), items,
                                 lambda g: (load_image(g.image), g.caption), batch_size, "gallery items (joint)",
                                 gallery_tick("gallery items (joint)"))
    put(emb_dir / "gallery.joint.npy", g_joint)

    image_memo: dict[str, np.ndarray] = {}  # sha256 of the variant file -> embedding
    text_memo: dict[str, np.ndarray] = {}
    for n, cond in enumerate(wanted, 1):
        rows = [by_cond[cond][q] for q in query_ids]
        stem = condition_to_filename(cond)
        q_emb: dict[str, np.ndarray | None] = {"image": None, "text": None}
        if ("q", "image") in need:
            for r in rows:
                if not r.get("path") or not r.get("sha256"):
                    raise InputError(f"query {r['id']!r} under {cond} has no image file in manifest.jsonl", path=corrupt_dir)
            todo = list(dict.fromkeys(r["sha256"] for r in rows if r["sha256"] not in image_memo))
            files = {r["sha256"]: corrupt_dir / r["path"] for r in rows}
            if todo:
                todo_files = [files[k] for k in todo]
                embs = _encode_stream(encoder.encode_images, todo_files, load_image, batch_size, "query images")
                image_memo.update(zip(todo, embs))
            q_emb["image"] = np.stack([image_memo[r["sha256"]] for r in rows])
        if ("q", "text") in need:
            for r in rows:
                if r.get("question") is None:
                    raise InputError(f"query {r['id']!r} under {cond} has no question in manifest.jsonl", path=corrupt_dir)
            todo_txt = [t for t in dict.fromkeys(r["question"] for r in rows) if t not in text_memo]
            if todo_txt:
                text_memo.update(zip(todo_txt, _encode_stream(encoder.encode_texts, todo_txt, lambda t: t, batch_size, "questions")))
            q_emb["text"] = np.stack([text_memo[r["question"]] for r in rows])
        for side, arr in q_emb.items():
            put(emb_dir / f"{stem}.{side}.npy", arr)
        scores = cosine_path_scores(q_emb["image"], q_emb["text"], g_emb["image"], g_emb["text"])
        for p in PATH_SIDES:
            put(path_dir / f"{stem}.{p}.npy", scores.get(p) if p in paths else None)
        q_joint = None
        if joint:
            pairs = list(dict.fromkeys((r["path"], r["question"]) for r in rows))
            emb = _encode_stream(lambda b: encoder.encode_queries([x[0] for x in b], [x[1] for x in b]), pairs,
                                 lambda k: (load_image(corrupt_dir / k[0]), k[1]), batch_size, "queries (joint)")
            memo = dict(zip(pairs, emb))
            q_joint = np.stack([memo[(r["path"], r["question"])] for r in rows])
        put(emb_dir / f"{stem}.joint.npy", q_joint)
        # the cosine of the joint embeddings: the same formula as the II path, on joint vectors
        put(path_dir / f"{stem}.npy", None if q_joint is None else cosine_path_scores(q_joint, None, g_joint, None)["II"])
        if progress:
            progress(cond, n, len(wanted))
    # Files an earlier run left (other conditions, paths or sides, other query rows) would be read
    # with this run's id lists: remove them.
    for d in (emb_dir, path_dir):
        for f in d.glob("*.npy"):
            if f not in written:
                f.unlink()
    return EncodeSummary(out_dir, wanted, len(query_ids), len(items), dropped, paths, skipped_paths, joint)
