"""Stage 3, encode the gallery: its image and text embeddings, batch by batch (images decoded per batch).

:func:`encode_gallery` is the one gallery encoder of ``snapbench run`` and ``snapbench encode``.  Given
a run folder it saves each side once and reloads it on a rerun; with ``shard_rows`` it keeps the sides
as shards of that many items (``embeddings/gallery/<k>.<side>.npy``), each saved atomically as soon
as it is encoded, so a killed run re-encodes only unfinished shards and memory holds one shard.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...store import RunDir
from ...store.atomic import save_npy_atomic
from .encoders import RESUME_HINT, encode_batches

__all__ = ["GalleryEmbeddings", "ShardedArray", "encode_gallery"]


class ShardedArray:
    """A gallery side stored as row shards (:meth:`~snapbench.store.folders.RunDir.gallery_shard`; read as
    memmaps, in order)."""

    def __init__(self, paths: list[Path], n: int, dim: int):
        self.paths, self.shape = paths, (n, dim)

    def shards(self) -> Iterator[tuple[int, np.ndarray]]:
        off = 0
        for p in self.paths:
            arr = np.load(p, mmap_mode="r", allow_pickle=False)
            yield off, arr
            off += arr.shape[0]


@dataclass
class GalleryEmbeddings:
    """The gallery's embeddings per side (``"image"`` / ``"text"``): arrays, or shards."""

    sides: dict[str, np.ndarray | ShardedArray]

    @property
    def sharded(self) -> bool:
        return any(isinstance(a, ShardedArray) for a in self.sides.values())

    @property
    def dims(self) -> dict[str, int]:
        return {side: int(a.shape[1]) for side, a in self.sides.items()}


def _encode_side(items: Sequence[Any], encoder: Any, side: str, batch_size: int, bar: Any, task: Any,
                 hint: str) -> np.ndarray:
    from ...corruptions import load_image

    if side == "image":
        return encode_batches(encoder.encode_images, items, "gallery images", batch_size=batch_size,
                              load=lambda g: load_image(g.image), on_batch=lambda n: bar.advance(task, n), hint=hint)
    return encode_batches(encoder.encode_texts, [g.caption for g in items], "gallery captions", batch_size=batch_size,
                          on_batch=lambda n: bar.advance(task, n), hint=hint)


def _load_saved(path: Path, n: int, **kw: Any) -> np.ndarray | None:
    if path.exists():
        arr = np.load(path, allow_pickle=False, **kw)
        if arr.shape[0] == n:
            return arr
    return None


def _encode_shards(items: Sequence[Any], encoder: Any, side: str, rundir: RunDir, rows: int, batch_size: int,
                   bar: Any) -> ShardedArray:
    rundir.gallery_shards.mkdir(parents=True, exist_ok=True)
    task = bar.add(f"encode gallery {side}s (shards of {rows})", len(items))
    paths, dim = [], 0
    for k in range(0, -(-len(items) // rows)):
        part = items[k * rows : (k + 1) * rows]
        path = rundir.gallery_shard(k, side)
        arr = _load_saved(path, len(part), mmap_mode="r")
        if arr is not None:
            bar.advance(task, len(part))
        else:
            arr = _encode_side(part, encoder, side, batch_size, bar, task, RESUME_HINT)
            save_npy_atomic(path, arr)
        paths.append(path)
        dim = arr.shape[1]
    return ShardedArray(paths, len(items), dim)


def encode_gallery(items: Sequence[Any], encoder: Any, sides: Sequence[str] | Mapping[str, bool], *, batch_size: int,
                   bar: Any, rundir: RunDir | None = None, shard_rows: int | None = None) -> GalleryEmbeddings:
    """The embeddings of the gallery ``items`` (objects with ``image`` and ``caption``) for ``sides``.

    ``bar``: a :class:`snapbench.render.progress.ProgressDisplay` (or anything with ``add`` / ``advance``).
    ``rundir``: save (and on a rerun reload) the embeddings there; ``shard_rows`` (with ``rundir``):
    as shards of that many items.  Without ``rundir`` nothing is written.
    """
    wanted = [s for s in ("image", "text") if (sides.get(s) if isinstance(sides, Mapping) else s in sides)]
    out: dict[str, np.ndarray | ShardedArray] = {}
    for side in wanted:
        if rundir is not None and shard_rows:
            out[side] = _encode_shards(items, encoder, side, rundir, int(shard_rows), batch_size, bar)
            continue
        saved = None if rundir is None else _load_saved(rundir.gallery_embedding(side), len(items))
        if saved is not None:
            out[side] = saved
            continue
        task = bar.add(f"encode gallery {side}s", len(items))
        arr = _encode_side(items, encoder, side, batch_size, bar, task, RESUME_HINT if rundir is not None else "")
        if rundir is not None:
            save_npy_atomic(rundir.gallery_embedding(side), arr)
        out[side] = arr
    return GalleryEmbeddings(out)
