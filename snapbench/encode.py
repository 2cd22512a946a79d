"""The encode + score step: corrupted query set + gallery + encoder -> four path score matrices.

Reads the output of ``snapbench corrupt`` (``DIR/manifest.jsonl``) and a gallery manifest (JSONL or
JSON list of ``{"id", "image", "caption"}``, image paths relative to the manifest), encodes the gallery
once and every condition's query images and questions (each distinct image file and question is
encoded once: text conditions share the clean image, image conditions the clean question), and
writes::

    OUT/query_ids.txt, OUT/gallery_ids.txt
    OUT/embeddings/gallery.image.npy, gallery.text.npy        (N x d, float32)
    OUT/embeddings/<condition file name>.image.npy / .text.npy (Q x d, float32)
    OUT/paths/<condition file name>.{II,TT,IT,TI}.npy          (Q x N cosine scores, SPEC §6)
    OUT/paths/query_ids.txt, OUT/paths/gallery_ids.txt

``OUT/paths`` is what ``snapbench evaluate --mode IT2IT`` and ``snapbench moor --paths-dir`` read;
``OUT/embeddings`` is what exact MOOR (with whitening) needs.  Queries skipped under some condition
(a bad file, an entity not found) are dropped from every condition so all states stay paired on the
same queries; the summary lists them.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .atomic import save_npy_atomic, write_text_atomic
from .conditions import condition_to_filename, parse_condition
from .corruptions.io import load_image
from .models import Encoder, cosine_path_scores

__all__ = ["GalleryItem", "EncodeSummary", "load_gallery", "encode_corrupted"]


@dataclass(frozen=True)
class GalleryItem:
    id: str
    image: Path
    caption: str


@dataclass
class EncodeSummary:
    out_dir: Path
    conditions: list[str]
    n_queries: int
    n_gallery: int
    dropped_queries: dict[str, str] = field(default_factory=dict)  # id -> reason


def load_gallery(path: str | os.PathLike) -> list[GalleryItem]:
    """Read a gallery manifest: JSONL or a JSON list of objects with ``id``, ``image``, ``caption``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read gallery manifest ({exc.strerror})") from None
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            objs = [(f"record {i}", o) for i, o in enumerate(json.loads(text))]
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: invalid JSON: {exc}") from None
    else:
        objs = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    objs.append((f"line {n}", json.loads(line)))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}: line {n}: invalid JSON: {exc.msg}") from None
    items, seen = [], set()
    for where, o in objs:
        if not isinstance(o, dict) or "id" not in o or "image" not in o:
            raise ValueError(f"{path}: {where}: a gallery item needs 'id' and 'image'")
        caption = o.get("caption", o.get("text"))
        if not isinstance(caption, str) or not caption.strip():
            raise ValueError(f"{path}: {where}: gallery item {o['id']!r} has no 'caption'")
        gid = str(o["id"])
        if gid in seen:
            raise ValueError(f"{path}: {where}: duplicate gallery id {gid!r}")
        seen.add(gid)
        items.append(GalleryItem(gid, (path.parent / o["image"]).resolve(), caption))
    if not items:
        raise ValueError(f"{path}: the gallery is empty")
    return items


def _read_run_manifest(corrupt_dir: Path) -> list[dict]:
    manifest = corrupt_dir / "manifest.jsonl"
    if not manifest.is_file():
        raise ValueError(f"{corrupt_dir}: no manifest.jsonl (is this the --out folder of 'snapbench corrupt'?)")
    lines = []
    for n, line in enumerate(manifest.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            lines.append(json.loads(line))
        except json.JSONDecodeError:
            raise ValueError(f"{manifest}: line {n} is not JSON (an interrupted run? rerun 'snapbench corrupt')") from None
    return lines


def _write_ids(path: Path, ids: Sequence[str]) -> None:
    write_text_atomic(path, "".join(f"{i}\n" for i in ids))


def encode_corrupted(
    corrupt_dir: str | os.PathLike,
    gallery: str | os.PathLike | Sequence[GalleryItem],
    encoder: Encoder,
    out_dir: str | os.PathLike,
    *,
    conditions: Sequence[str] | None = None,
    batch_size: int = 64,
    progress: Callable[[str, int, int], None] | None = None,
) -> EncodeSummary:
    """Encode a corrupted query set and a gallery with ``encoder``; write embeddings and path scores.

    ``conditions`` restricts the conditions encoded (``clean`` is always included).
    ``progress(condition, done, total)`` is called after each condition.
    """
    corrupt_dir, out_dir = Path(corrupt_dir), Path(out_dir)
    lines = _read_run_manifest(corrupt_dir)
    items = load_gallery(gallery) if isinstance(gallery, (str, os.PathLike)) else list(gallery)

    by_cond: dict[str, dict[str, dict]] = {}
    for ln in lines:
        by_cond.setdefault(ln["condition"], {})[ln["id"]] = ln
    if "clean" not in by_cond:
        raise ValueError(f"{corrupt_dir}/manifest.jsonl: no 'clean' outputs")
    wanted = list(by_cond) if conditions is None else ["clean"] + [parse_condition(c).id for c in conditions if parse_condition(c).id != "clean"]
    missing = [c for c in wanted if c not in by_cond]
    if missing:
        raise ValueError(f"{corrupt_dir}: no outputs for condition(s) {', '.join(missing)}")

    query_ids = list(by_cond["clean"])
    dropped: dict[str, str] = {}
    for c in wanted:
        for q in query_ids:
            if q not in by_cond[c] and q not in dropped:
                dropped[q] = f"no output under {c} (see skips.jsonl)"
    query_ids = [q for q in query_ids if q not in dropped]
    if not query_ids:
        raise ValueError(f"{corrupt_dir}: no query has outputs under every selected condition")

    (out_dir / "embeddings").mkdir(parents=True, exist_ok=True)
    (out_dir / "paths").mkdir(parents=True, exist_ok=True)
    gallery_ids = [g.id for g in items]
    for d in (out_dir, out_dir / "paths"):
        _write_ids(d / "query_ids.txt", query_ids)
        _write_ids(d / "gallery_ids.txt", gallery_ids)

    def batched(fn, xs):
        return np.concatenate([fn(xs[i : i + batch_size]) for i in range(0, len(xs), batch_size)]).astype(np.float32)

    g_img = batched(encoder.encode_images, [load_image(g.image) for g in items])
    g_txt = batched(encoder.encode_texts, [g.caption for g in items])
    save_npy_atomic(out_dir / "embeddings" / "gallery.image.npy", g_img)
    save_npy_atomic(out_dir / "embeddings" / "gallery.text.npy", g_txt)

    image_cache: dict[str, np.ndarray] = {}  # sha256 of the variant file -> embedding
    text_cache: dict[str, np.ndarray] = {}
    for n, cond in enumerate(wanted, 1):
        rows = [by_cond[cond][q] for q in query_ids]
        todo_img = {r["sha256"]: corrupt_dir / r["path"] for r in rows if r["sha256"] not in image_cache}
        if todo_img:
            keys = list(todo_img)
            embs = batched(encoder.encode_images, [load_image(todo_img[k]) for k in keys])
            image_cache.update(zip(keys, embs))
        todo_txt = [t for t in dict.fromkeys(r["question"] for r in rows) if t not in text_cache]
        if todo_txt:
            text_cache.update(zip(todo_txt, batched(encoder.encode_texts, todo_txt)))
        q_img = np.stack([image_cache[r["sha256"]] for r in rows])
        q_txt = np.stack([text_cache[r["question"]] for r in rows])
        stem = condition_to_filename(cond)
        save_npy_atomic(out_dir / "embeddings" / f"{stem}.image.npy", q_img)
        save_npy_atomic(out_dir / "embeddings" / f"{stem}.text.npy", q_txt)
        for name, s in cosine_path_scores(q_img, q_txt, g_img, g_txt).items():
            save_npy_atomic(out_dir / "paths" / f"{stem}.{name}.npy", s)
        if progress:
            progress(cond, n, len(wanted))
    return EncodeSummary(out_dir, wanted, len(query_ids), len(items), dropped)
