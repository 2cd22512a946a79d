"""Stage 4, encode the queries: one stream of query variants feeds every encoder of the run.

Each query is corrupted once, into the union of the variant sources the encoders still need for its
block, and each encoder (a :class:`QueryJob`) takes the sources it asked for, exactly as a run of
that encoder alone would get them (:meth:`SourceResult.view`).  Per encoder, items are encoded in
batches that never cross a block of ``block_queries`` queries; a finished block's embeddings are
flushed to the per-source files and the block is appended to that encoder's resume log
(``blocks.jsonl``, fsynced).  So a killed run resumes per encoder: a block one encoder finished
is corrupted again only for the encoders that had not, and every encoder ends with the batches
(hence the numbers) of an uninterrupted run of it alone.  A block's line in the log also holds the
measured PSNR / SSIM of its queries' image sources (``"measured"``), so a resumed run still has them.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from ...core.errors import ConfigError, InputError
from ...core.jsonable import dumps
from ...store import RunDir
from ...store.atomic import write_json
from .encoders import RESUME_HINT, Batcher, ZeroRows
from .options import RunOptions
from .resume import read_block_measures
from .sources import SourceResult, SourceTask, iter_sources

__all__ = ["QueryEmbeddings", "QueryJob", "encode_queries"]


@dataclass
class QueryJob:
    """One encoder's share of the query phase: its sources, its run folder and its finished blocks
    (block -> the skips recorded with it; updated as blocks finish)."""

    encoder: Any
    image_sources: tuple[str, ...]
    text_sources: tuple[str, ...]
    dir: RunDir
    done: dict[int, list[dict[str, Any]]] = field(default_factory=dict)


@dataclass
class QueryEmbeddings:
    """One encoder's query embeddings: ``(side, source)`` -> one row per dataset query, the rows of the
    queries kept (produced under every source), those dropped (id -> reason), the time spent and the
    measured strength of the image sources (query id -> source -> {"psnr", "ssim"})."""

    embeddings: dict[tuple[str, str], np.ndarray]
    keep: np.ndarray
    dropped: dict[str, str]
    timings: dict[str, float] = field(default_factory=dict)
    measured: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    @property
    def dims(self) -> dict[str, int]:
        return {side: int(a.shape[1]) for (side, _), a in self.embeddings.items()}


class _QueryStore:
    """Per-source query embedding files (Q x d, float32) opened as memmaps, created on first use."""

    def __init__(self, rundir: RunDir, n_queries: int, modality: str):
        self.dir, self.n, self.modality = rundir, n_queries, modality
        self.maps: dict[str, np.memmap] = {}

    def path(self, source: str) -> Path:
        return self.dir.query_embedding(source, self.modality)

    def put(self, source: str, row: int, emb: np.ndarray) -> None:
        m = self.maps.get(source)
        if m is None:
            p = self.path(source)
            if p.exists():
                m = np.load(p, mmap_mode="r+", allow_pickle=False)
                if m.shape != (self.n, emb.shape[0]):
                    raise InputError(f"shape {m.shape} does not match this run ({self.n} x {emb.shape[0]}); "
                                     "use a new output folder, or force to discard it", path=p, param="force")
            else:
                m = np.lib.format.open_memmap(p, mode="w+", dtype=np.float32, shape=(self.n, emb.shape[0]))
            self.maps[source] = m
        m[row] = emb

    def flush(self) -> None:
        for m in self.maps.values():
            m.flush()

    def load(self, source: str) -> np.ndarray:
        return np.load(self.path(source), mmap_mode="r", allow_pickle=False)


class _Feeder:
    """Routes one encoder's sources from the stream into its batchers; checkpoints its blocks."""

    def __init__(self, job: QueryJob, n_queries: int, batch_size: int, log: IO[str]) -> None:
        self.job, self.log = job, log
        self.stores = {m: _QueryStore(job.dir, n_queries, m) for m in ("image", "text")}
        self.zeros = ZeroRows()  # said once, when the stream is done (pipeline.encoding)
        self.batchers = {m: Batcher(getattr(job.encoder, f"encode_{m}s"), batch_size, self.stores[m].put,
                                    what="query images" if m == "image" else "questions", hint=RESUME_HINT, zeros=self.zeros) for m in ("image", "text")}
        self.skips: list[dict[str, Any]] = []
        self.measured: dict[str, dict[str, Any]] = {}

    def add(self, res: SourceResult, query_id: str) -> None:
        view = res.view(self.job.image_sources, self.job.text_sources)
        for src in self.job.image_sources:
            if src in view.images:
                self.batchers["image"].add(res.index, src, view.images[src])
        for src in self.job.text_sources:
            if src in view.texts:
                self.batchers["text"].add(res.index, src, view.texts[src])
        self.skips += view.skips
        if view.measured:
            self.measured[query_id] = view.measured

    def finish_block(self, block: int) -> None:
        for m in ("image", "text"):
            self.batchers[m].flush()
            self.stores[m].flush()
        line: dict[str, Any] = {"block": block, "skips": self.skips}
        if self.measured:
            line["measured"] = self.measured
        self.log.write(dumps(line, indent=None) + "\n")
        self.log.flush()
        os.fsync(self.log.fileno())
        self.job.done[block] = self.skips
        self.skips, self.measured = [], {}

    @property
    def busy_s(self) -> float:
        return self.batchers["image"].busy_s + self.batchers["text"].busy_s


def _tasks(dataset: Any, jobs: Sequence[QueryJob], opts: RunOptions, grid: Any) -> list[SourceTask]:
    """The query tasks of every block some encoder still needs, each asking for the union of the
    sources of the encoders that need its block (in one order, so each encoder's sources keep theirs)."""
    from ...corruptions import parse_severity_target

    n_q, size = len(dataset.queries), int(opts.block_queries)
    target = parse_severity_target(opts.severity_target)
    tasks = []
    for b in range(-(-n_q // size)):
        need = [j for j in jobs if b not in j.done]
        if not need:
            continue
        img = tuple(dict.fromkeys(s for j in need for s in j.image_sources))
        txt = tuple(dict.fromkeys(s for j in need for s in j.text_sources))
        for i, q in enumerate(dataset.queries[b * size : (b + 1) * size], start=b * size):
            tasks.append(SourceTask(i, q.id, None if q.image is None else str(q.image), q.question, q.entity,
                                    int(opts.seed), img, txt, grid, bool(opts.measure), target))
    return tasks


def _stream(dataset: Any, feeders: list[_Feeder], tasks: list[SourceTask], opts: RunOptions, released: Any,
            bar: Any, task: Any, meanwhile: Callable[[], None] | None) -> dict[str, float]:
    """Feed every result of the variant stream to the encoders that need its block."""
    n_q, size = len(dataset.queries), int(opts.block_queries)
    timings = {"wait_s": 0.0, "meanwhile_s": 0.0}

    def timed_meanwhile() -> None:
        t = time.perf_counter()
        try:
            meanwhile()
        finally:
            timings["meanwhile_s"] += time.perf_counter() - t

    stream = iter_sources(tasks, opts.workers, released, engine=opts.engine, address=opts.address,
                          meanwhile=None if meanwhile is None else timed_meanwhile)
    with contextlib.closing(stream):
        while True:
            t_wait, before = time.perf_counter(), timings["meanwhile_s"]
            res = next(stream, None)
            waited = time.perf_counter() - t_wait - (timings["meanwhile_s"] - before)  # the caller's work is not waiting
            timings["wait_s"] += waited
            timings.setdefault("first_wait_s", waited)  # starting the workers, where the gallery took less
            if res is None:
                break
            b = res.index // size
            need = [f for f in feeders if b not in f.job.done]
            for f in need:
                f.add(res, dataset.queries[res.index].id)
            bar.advance(task)
            if res.index == min((b + 1) * size, n_q) - 1:  # last query of its block
                for f in need:
                    f.finish_block(b)
    return timings


def _collect(dataset: Any, job: QueryJob, timings: dict[str, float]) -> QueryEmbeddings:
    dropped: dict[str, str] = {}
    for b in sorted(job.done):
        for s in job.done[b]:
            dropped.setdefault(s["id"], f"{s['condition'] or 'all conditions'}: {s['reason']}")
    keep = np.array([i for i, q in enumerate(dataset.queries) if q.id not in dropped], dtype=np.int64)
    write_json(job.dir.dropped_queries, dropped, indent=2)  # first: the refusal below points at it
    if keep.size == 0:
        first = next(iter(dropped.items()))
        raise InputError(f"no query could be produced under every condition (each one's reason is in "
                         f"{job.dir.dropped_queries}; the first: {first[0]}: {first[1]})")
    n_q = len(dataset.queries)
    stores = {m: _QueryStore(job.dir, n_q, m) for m in ("image", "text")}
    emb = {("image", s): stores["image"].load(s) for s in job.image_sources}
    emb.update({("text", s): stores["text"].load(s) for s in job.text_sources})
    return QueryEmbeddings(emb, keep, dropped, timings, read_block_measures(job.dir.blocks_log))


def encode_queries(dataset: Any, jobs: Sequence[QueryJob], opts: RunOptions, grid: Any, bar: Any,
                   meanwhile: Callable[[], None] | None = None) -> list[QueryEmbeddings]:
    """Corrupt every query once and encode its sources with every job's encoder (see the module
    docstring); returns each job's :class:`QueryEmbeddings`, in the order of ``jobs``.

    ``grid``: the resolved severity grid; ``bar``: a :class:`snapbench.render.progress.ProgressDisplay`.
    ``meanwhile()``: the caller's own work (the run encodes the gallery there), run once while the
    workers start and generate the first queries (:func:`.sources.iter_sources`); its time is
    ``timings["meanwhile_s"]``, not part of ``wait_s``."""
    if not jobs:
        raise ConfigError("no encoder to feed")
    released = dataset.released if opts.variants == "released" else None
    n_q, size = len(dataset.queries), int(opts.block_queries)
    n_blocks = -(-n_q // size)
    task = bar.add("corrupt + encode queries", n_q)
    bar.advance(task, sum(min(size, n_q - b * size) for b in range(n_blocks) if all(b in j.done for j in jobs)))
    tasks = _tasks(dataset, jobs, opts, grid)
    with contextlib.ExitStack() as stack:
        logs = [stack.enter_context(open(j.dir.blocks_log, "a", encoding="utf-8")) for j in jobs]
        feeders = [_Feeder(j, n_q, int(opts.batch_size), log) for j, log in zip(jobs, logs)]
        timings = _stream(dataset, feeders, tasks, opts, released, bar, task, meanwhile)
    for f in feeders:
        f.zeros.warn()
    return [_collect(dataset, f.job, {**timings, "encode_s": f.busy_s}) for f in feeders]
