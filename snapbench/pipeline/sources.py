"""Query variants as encoder inputs: sources generated in workers or read from released files, encoded in
block-bounded batches into per-source memmaps, with the block resume log; the gallery encoded batch by batch."""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from ..conditions import condition_to_filename, parse_condition
from ..engines import ordered_map
from ..errors import InputError, SnapbenchError

# variant sources per query (generated in workers, or read from the dataset's released files)
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SourceTask:
    index: int
    query_id: str
    image: str | None
    question: str | None
    entity: str | None
    seed: int
    image_sources: tuple[str, ...]
    text_sources: tuple[str, ...]
    grid: Any


@dataclass
class SourceResult:
    index: int
    images: dict[str, np.ndarray]
    texts: dict[str, str]
    skips: list[dict[str, Any]]
    #: local pool only: (block the images are in, its size, block the driver offered) -- see SharedBlocks
    shared: tuple[str | None, int, str | None] | None = None


def generate_sources(task: SourceTask, sink: "_BlockWriter | None" = None) -> SourceResult:
    """Corrupt one query into its image and text sources (runs in a worker process).

    With a ``sink``, each image is handed to it as soon as it is made (and not kept here): see
    :func:`generate_sources_shared`.
    """
    from ..corruptions import ImageLoadError, Skip, generate_variants, load_image, resolve_conditions

    images: dict[str, np.ndarray] = {}
    texts: dict[str, str] = {}
    skips: list[dict[str, Any]] = []
    image = None
    if task.image_sources:
        if task.image is None:
            return SourceResult(task.index, {}, {}, [{"id": task.query_id, "condition": None, "reason": "the query has no image"}])
        try:
            image = load_image(task.image)
        except ImageLoadError as exc:
            return SourceResult(task.index, {}, {}, [{"id": task.query_id, "condition": None, "reason": str(exc)}])
    if sink is not None and image is not None:
        sink.open(image.nbytes, len(task.image_sources))
    question = task.question if task.text_sources else None
    wanted = list(dict.fromkeys([*task.image_sources, *task.text_sources]))
    conds = [c for c in resolve_conditions(wanted, grid=task.grid) if c.id in wanted]
    for v in generate_variants(image, question, key=task.query_id, entity=task.entity, seed=task.seed,
                               conditions=conds, grid=task.grid):
        if isinstance(v, Skip):
            skips.append({"id": task.query_id, "condition": v.condition, "reason": v.reason})
        elif v.condition in task.image_sources and v.image is not None:
            images[v.condition] = v.image if sink is None else sink.put(v.image)
        if not isinstance(v, Skip) and v.condition in task.text_sources and v.question is not None:
            texts[v.condition] = v.question
    return SourceResult(task.index, images, texts, skips)


def released_sources(task: SourceTask, released: Any) -> SourceResult:
    from ..corruptions import ImageLoadError, load_image

    images: dict[str, np.ndarray] = {}
    texts: dict[str, str] = {}
    skips: list[dict[str, Any]] = []
    for src in task.image_sources:
        if src == "clean":
            path = task.image
        else:
            c = parse_condition(src)
            path = released.images.get(task.query_id, {}).get((c.image_operator, c.severity))
        if path is None:
            why = "the query has no image" if src == "clean" else "the dataset ships no file for it"
            skips.append({"id": task.query_id, "condition": src, "reason": why})
            continue
        try:
            images[src] = load_image(path)
        except ImageLoadError as exc:
            skips.append({"id": task.query_id, "condition": src, "reason": str(exc)})
    for src in task.text_sources:
        text = task.question if src == "clean" else released.texts.get(task.query_id, {}).get(parse_condition(src).text_operator)
        if text is None:
            skips.append({"id": task.query_id, "condition": src, "reason": "the dataset ships no perturbed question for it"})
        else:
            texts[src] = text
    return SourceResult(task.index, images, texts, skips)


@dataclass(frozen=True)
class SharedTask:
    """A task for a local pool worker and the shared-memory block offered for its images (None: none
    free; the worker makes one)."""

    task: SourceTask
    block: str | None = None
    size: int = 0


# Blocks this worker has mapped, newest last: a recycled block is written through the same mapping
# again, without page faults (a fresh mapping of a 1024x768 query's block faults for ~35 ms).
_MAPPED: "dict[str, Any]" = {}
_MAPPED_MAX = 8  # the driver keeps about 2 x workers + 2 blocks in use


def _attach(name: str, create_size: int = 0) -> Any:
    from multiprocessing import resource_tracker, shared_memory

    block = _MAPPED.pop(name, None)
    if block is None:
        block = shared_memory.SharedMemory(name=name, create=create_size > 0, size=create_size)
        # the driver owns every block; this process must not unlink it at exit
        resource_tracker.unregister(block._name, "shared_memory")  # noqa: SLF001 - stdlib attribute
    _MAPPED[name] = block
    while len(_MAPPED) > _MAPPED_MAX:  # a block the driver no longer offers (replaced, or the run ended)
        _MAPPED.pop(next(iter(_MAPPED))).close()
    return block


class _BlockWriter:
    """A worker's side of the hand-off: images copied one by one into one shared-memory block."""

    def __init__(self, offered: str | None, offered_size: int):
        self.offered, self.offered_size = offered, offered_size
        self.block: Any = None
        self.used = 0

    def open(self, image_bytes: int, n_images: int) -> None:
        # every built-in variant is at most the input's size (cropping and downscale are smaller)
        need = n_images * _aligned(image_bytes)
        if self.offered is not None and need <= self.offered_size:
            self.block = _attach(self.offered)
        else:
            # named after the parent, so blocks a killed parent never freed can be found (remove_stale_shared)
            self.block = _attach(f"{_SHM_PREFIX}{os.getppid()}_{secrets.token_hex(6)}", max(need, 1))

    def put(self, img: np.ndarray) -> tuple[int, tuple[int, ...]] | np.ndarray:
        """Copy ``img`` into the block: its (offset, shape); the array itself if it does not fit (an
        operator of the user's that enlarges the image), which then travels through the pipe."""
        if self.used + img.nbytes > self.block.size:
            return img
        off = self.used
        np.ndarray(img.shape, dtype=np.uint8, buffer=self.block.buf, offset=off)[...] = img
        self.used += _aligned(img.nbytes)
        return off, tuple(img.shape)

    def close(self) -> tuple[str | None, int, str | None] | None:
        if self.block is None:  # no image made: the offered block goes back unused
            return None if self.offered is None else (None, 0, self.offered)
        return self.block.name.lstrip("/"), self.block.size, self.offered


def _aligned(n: int) -> int:
    return -(-int(n) // 64) * 64  # 64-byte aligned starts


def generate_sources_shared(job: SharedTask) -> SourceResult:
    """:func:`generate_sources` for a local worker: the query's images travel back in one shared-memory
    block instead of being pickled through the pool's pipe (a 1024x768 query's 46 images are ~108 MB;
    pickling them cost more than corrupting them).  Each image is copied into the block as soon as
    it is made and dropped, so the worker holds the block and one variant, not every variant.  The
    block is the one the driver offered when it is large enough -- a recycled block whose pages are
    already there: a fresh one costs a page fault per 4 KiB, which on a VM took longer than writing
    the images -- otherwise a new one.  The result holds ``(offset, shape)`` per image;
    :class:`SharedBlocks` hands them to the driver as views, without another copy."""
    sink = _BlockWriter(job.block, job.size)
    try:
        res = generate_sources(job.task, sink)
    finally:
        res_shared = sink.close()
    res.shared = res_shared
    return res


class _Lease:
    """The arrays of one result over a block: numpy views made through this object keep it alive, so
    its finalizer runs when the last of them is released (numpy collapses chains of ndarray bases,
    never past an object like this one)."""

    def __init__(self, whole: np.ndarray):
        self.__array_interface__ = whole.__array_interface__
        self.whole = whole


class SharedBlocks:
    """The driver's shared-memory blocks that local workers return query images in, recycled.

    Each task is offered a free block (:meth:`offer`); a result's images become arrays over its block
    (:meth:`take`).  Under /dev/shm (Linux) each block is mapped once, shared and writable, and the
    images are views into it: no copy, and after its first use no page faults either (a fresh
    mapping of a 1024x768 query's block faulted for ~35 ms).  The block is offered again once the last
    view of that result is released, so nothing the driver still holds is overwritten; a write into
    a view lands in the block, which only this process reads.  Elsewhere the images are copied out
    and the block is free at once.  :meth:`close` removes every block (views handed out stay valid).
    """

    def __init__(self) -> None:
        self.sizes: dict[str, int] = {}
        self.maps: dict[str, np.ndarray] = {}
        self.free: list[str] = []
        self.folder = Path("/dev/shm")

    def offer(self, task: SourceTask) -> SharedTask:
        name = self.free.pop() if self.free else None
        return SharedTask(task, name, self.sizes.get(name, 0) if name else 0)

    def take(self, res: SourceResult) -> SourceResult:
        if res.shared is None:
            return res
        used, size, offered = res.shared
        if used is None:
            self.free.append(offered)
            return res
        if offered is not None and offered != used:  # too small for this query: a larger one replaced it
            self._remove(offered)
        self.sizes[used] = size
        spans = {k: v for k, v in res.images.items() if isinstance(v, tuple)}  # the rest came by pipe
        if self.folder.is_dir():
            import weakref

            if used not in self.maps:
                import mmap

                with open(self.folder / used, "r+b") as fh:
                    self.maps[used] = np.frombuffer(mmap.mmap(fh.fileno(), size), np.uint8)
            lease = _Lease(self.maps[used])
            whole = np.asarray(lease)
            for key, (off, shape) in spans.items():
                res.images[key] = whole[off : off + int(np.prod(shape))].reshape(shape)
            weakref.finalize(lease, self.free.append, used)  # the last view gone: the block is free
            return res
        from multiprocessing import shared_memory

        block = shared_memory.SharedMemory(name=used)
        try:
            for key, (off, shape) in spans.items():
                res.images[key] = np.ndarray(shape, np.uint8, buffer=block.buf, offset=off).copy()
        finally:
            block.close()
        self.free.append(used)
        return res

    def _remove(self, name: str) -> None:
        self.sizes.pop(name, None)
        self.maps.pop(name, None)  # unmapped once no view is left
        if self.folder.is_dir():
            (self.folder / name).unlink(missing_ok=True)
            return
        from multiprocessing import shared_memory

        try:
            shared_memory.SharedMemory(name=name).unlink()
        except FileNotFoundError:
            pass

    def close(self) -> None:
        for name in list(self.sizes):
            self._remove(name)
        self.free.clear()


_SHM_PREFIX = "snapbench"
_SHM_RE = re.compile(rf"^{_SHM_PREFIX}(\d+)_[0-9a-f]{{12}}$")


def remove_stale_shared() -> int:
    """Free the shared-memory blocks of runs whose process no longer exists (a ``kill -9`` between a
    worker writing a block and the parent copying it); returns how many.  Linux (``/dev/shm``) only."""
    removed = 0
    folder = Path("/dev/shm")
    if not folder.is_dir():
        return 0
    for entry in folder.iterdir():
        m = _SHM_RE.match(entry.name)
        if not m:
            continue
        try:
            os.kill(int(m[1]), 0)
            continue  # its run is alive
        except ProcessLookupError:
            pass
        except PermissionError:
            continue  # alive, another user's
        try:
            entry.unlink()
            removed += 1
        except OSError:
            pass
    return removed


def _operators(sources: tuple[str, ...]) -> set[str]:
    out = set()
    for src in sources:
        c = parse_condition(src)
        out |= {op for op in (c.image_operator, c.text_operator) if op}
    return out


def iter_sources(
    tasks: list[SourceTask], workers: int, released: Any, *, engine: str = "local", address: str | None = None
) -> Iterator[SourceResult]:
    """Results in task order; generation runs ahead on ``engine`` (see :func:`snapbench.engines.ordered_map`)
    while the caller encodes.

    Released variants are files read here, in the driver.  Generation runs inline when there is
    nothing to parallelise (one task, or text-only sources: cheap next to starting workers), on
    either engine: results are the same wherever a task runs.  Encoding always stays in this
    (the driver's) process; a pool of GPU encoders (Ray actors) is the next step for clusters.
    """
    if released is not None:
        for t in tasks:
            yield released_sources(t, released)
        return
    if not tasks:
        return  # nothing to do (a resumed run): never start a pool or a Ray instance for it
    if len(tasks) <= 1 or not any(t.image_sources for t in tasks) or (engine == "local" and workers <= 1):
        for t in tasks:
            yield generate_sources(t)
        return
    from ..corruptions.workers import registrations_payload, restore_registrations

    # operators registered at run time (e.g. through the interop modules) are sent to the workers
    payload = registrations_payload({c for t in tasks for c in _operators(t.image_sources)},
                                    {c for t in tasks for c in _operators(t.text_sources)})
    if engine != "local":  # Ray hands images back through its object store
        for res in ordered_map(generate_sources, tasks, engine=engine, workers=workers, address=address,
                               initializer=restore_registrations, initargs=(payload,)):
            # Ray's numpy arrays are read-only views into its object store; encoders get the same
            # writable arrays as with the local pool, and the store is freed as soon as the result is read.
            for key, img in res.images.items():
                if not img.flags.writeable:
                    res.images[key] = img.copy()
            yield res
        return
    remove_stale_shared()
    blocks = SharedBlocks()
    try:
        for res in ordered_map(generate_sources_shared, (blocks.offer(t) for t in tasks), engine=engine,
                               workers=workers, address=address, initializer=restore_registrations,
                               initargs=(payload,)):
            yield blocks.take(res)
    finally:
        blocks.close()


# ------------------------------------------------------------------------------------------------
# encoding with a block-level resume log
# ------------------------------------------------------------------------------------------------


def call_encoder(fn: Callable[[list], Any], items: list, what: str) -> np.ndarray:
    """``fn(items)`` as float32; an exception of the user's model becomes an InputError saying so
    (the cause stays chained), so the command line reports it as ``error: ...`` instead of a traceback."""
    try:
        return np.asarray(fn(items), dtype=np.float32)
    except SnapbenchError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of the user's model
        raise InputError(f"the encoder failed on a batch of {len(items)} {what}: {type(exc).__name__}: {exc} "
                         "(finished work is kept; rerun to resume)") from exc


class Batcher:
    """Collect (row, source, item) triples and encode them ``batch_size`` at a time into memmaps."""

    def __init__(self, encode: Callable[[list], np.ndarray], batch_size: int, store: Callable[[str, int, np.ndarray], None]):
        self.encode, self.batch_size, self.store = encode, batch_size, store
        self.pending: list[tuple[int, str, Any]] = []
        self.busy_s = 0.0  # time spent inside the encoder

    def add(self, row: int, source: str, item: Any) -> None:
        self.pending.append((row, source, item))
        if len(self.pending) >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        t0 = time.perf_counter()
        embs = call_encoder(self.encode, [p[2] for p in self.pending], "query variants")
        self.busy_s += time.perf_counter() - t0
        if embs.ndim != 2 or embs.shape[0] != len(self.pending):
            raise InputError(f"the encoder returned an array of shape {embs.shape} for {len(self.pending)} items")
        for (row, source, _), e in zip(self.pending, embs):
            self.store(source, row, e)
        self.pending = []


class QueryStore:
    """Per-source query embedding files (Q x d, float32) opened as memmaps, created on first use."""

    def __init__(self, folder: Path, n_queries: int, modality: str):
        self.folder, self.n, self.modality = folder, n_queries, modality
        self.maps: dict[str, np.memmap] = {}

    def path(self, source: str) -> Path:
        return self.folder / f"{condition_to_filename(source)}.{self.modality}.npy"

    def put(self, source: str, row: int, emb: np.ndarray) -> None:
        m = self.maps.get(source)
        if m is None:
            p = self.path(source)
            if p.exists():
                m = np.load(p, mmap_mode="r+", allow_pickle=False)
                if m.shape != (self.n, emb.shape[0]):
                    raise InputError(f"{p}: shape {m.shape} does not match this run ({self.n} x {emb.shape[0]}); rerun with --force")
            else:
                m = np.lib.format.open_memmap(p, mode="w+", dtype=np.float32, shape=(self.n, emb.shape[0]))
            self.maps[source] = m
        m[row] = emb

    def flush(self) -> None:
        for m in self.maps.values():
            m.flush()

    def load(self, source: str) -> np.ndarray:
        return np.load(self.path(source), mmap_mode="r", allow_pickle=False)


def encode_gallery(dataset: Any, encoder: Any, emb_dir: Path, sides: Mapping[str, bool], batch_size: int, bar: Any) -> dict[str, np.ndarray]:
    """Gallery embeddings per side, encoded batch by batch (images decoded per batch) or reloaded."""
    from ..atomic import save_npy_atomic
    from ..corruptions import load_image

    out: dict[str, np.ndarray] = {}
    n = len(dataset.gallery)
    for side in ("image", "text"):
        if not sides[side]:
            continue
        path = emb_dir / f"gallery.{side}.npy"
        if path.exists():
            arr = np.load(path, allow_pickle=False)
            if arr.shape[0] == n:
                out[side] = arr
                continue
        rows = []
        task = bar.add(f"encode gallery {side}s", n)
        for i in range(0, n, batch_size):
            items = dataset.gallery[i : i + batch_size]
            if side == "image":
                batch = [load_image(g.image) for g in items]
                rows.append(call_encoder(encoder.encode_images, batch, "gallery images"))
            else:
                rows.append(call_encoder(encoder.encode_texts, [g.caption for g in items], "gallery captions"))
            bar.advance(task, len(items))
        arr = np.concatenate(rows)
        save_npy_atomic(path, arr)
        out[side] = arr
    return out


class ShardedArray:
    """A gallery side stored as row shards ``<folder>/<k>.<side>.npy`` (read as memmaps, in order)."""

    def __init__(self, paths: list[Path], n: int, dim: int):
        self.paths, self.shape = paths, (n, dim)

    def shards(self) -> Iterator[tuple[int, np.ndarray]]:
        off = 0
        for p in self.paths:
            arr = np.load(p, mmap_mode="r", allow_pickle=False)
            yield off, arr
            off += arr.shape[0]


def encode_gallery_shards(dataset: Any, encoder: Any, folder: Path, sides: Mapping[str, bool], batch_size: int,
                          rows: int, bar: Any) -> dict[str, ShardedArray]:
    """Gallery embeddings per side as shards of ``rows`` items, each saved atomically once encoded, so
    a killed run re-encodes only the shards it had not finished (memory: one shard, one batch)."""
    from ..atomic import save_npy_atomic
    from ..corruptions import load_image

    folder.mkdir(parents=True, exist_ok=True)
    n = len(dataset.gallery)
    n_shards = (n + rows - 1) // rows
    out: dict[str, ShardedArray] = {}
    for side in ("image", "text"):
        if not sides[side]:
            continue
        task = bar.add(f"encode gallery {side}s (shards of {rows})", n)
        paths, dim = [], 0
        for k in range(n_shards):
            items = dataset.gallery[k * rows : (k + 1) * rows]
            path = folder / f"{k:05d}.{side}.npy"
            if path.exists():
                arr = np.load(path, mmap_mode="r", allow_pickle=False)
                if arr.shape[0] == len(items):
                    paths.append(path)
                    dim = arr.shape[1]
                    bar.advance(task, len(items))
                    continue
            parts = []
            for i in range(0, len(items), batch_size):
                batch = items[i : i + batch_size]
                if side == "image":
                    parts.append(call_encoder(encoder.encode_images, [load_image(g.image) for g in batch], "gallery images"))
                else:
                    parts.append(call_encoder(encoder.encode_texts, [g.caption for g in batch], "gallery captions"))
                bar.advance(task, len(batch))
            arr = np.concatenate(parts)
            save_npy_atomic(path, arr)
            paths.append(path)
            dim = arr.shape[1]
        out[side] = ShardedArray(paths, n, dim)
    return out


def read_blocks(path: Path) -> dict[int, list[dict[str, Any]]]:
    """Finished blocks of the resume log (a line cut by a kill is ignored: that block is redone)."""
    done: dict[int, list[dict[str, Any]]] = {}
    if not path.exists():
        return done
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
            done[int(rec["block"])] = list(rec.get("skips", []))
        except (ValueError, KeyError, TypeError):
            continue
    return done


