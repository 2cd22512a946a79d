"""``snapbench run``: data -> variants -> encoder -> paths -> fusion -> evaluation -> report, one call.

:func:`run_benchmark` loads a dataset (:mod:`snapbench.data`), streams every query's variants from
the corruption API into an encoder (no image files; with ``workers > 1`` spawned processes corrupt
while the main process encodes), scores the four similarity paths, composes the retrieval modes,
fuses with MOOR and fixed-fusion baselines, and writes one report per mode in the schema of
``snapbench evaluate``::

    DIR/run.json                      what was run (dataset, encoder, seed, grid, conditions, modes)
    DIR/embeddings/gallery.{image,text}.npy
    DIR/embeddings/queries/<source>.{image,text}.npy   one row per query (all queries of the dataset)
    DIR/embeddings/queries/blocks.jsonl                finished query blocks (the resume log)
    DIR/dropped_queries.json          queries left out of every state, with the reason
    DIR/<MODE>/report.json            MODE in I2I, T2T, IT2IT, I2IT, T2IT (those the data + model allow)
    DIR/<MODE>/per_query.csv          query_id, condition, metric, value
    DIR/MOOR/report.json, DIR/MOOR/text_share.json
    DIR/fusion/<baseline>/report.json comb_sum, rrf over the available paths
    DIR/report.html (+ tables/, figures/) when the report extra is installed

Decisions:

* **Sources, not conditions, are encoded.**  A condition's query image comes from one *image
  source* (``clean`` for clean and text conditions, ``img/<op>/s<N>`` for image and joint ones) and
  its question from one *text source*; each source is generated and encoded once per query, so
  the 18 joint conditions cost no encoder time.
* **Resume at query-block granularity.**  Queries are processed in fixed blocks of
  :data:`BLOCK_QUERIES`; each finished block's embeddings are flushed to the per-source ``.npy``
  files and then recorded in ``blocks.jsonl`` (fsynced).  A killed run redoes only unfinished
  blocks; batches never cross block boundaries, so a resumed run encodes exactly the same batches
  as an uninterrupted one and ends with the same numbers.  Evaluation (seconds) is always redone.
* **Paired on the same queries.**  A query that cannot be produced under some evaluated condition
  (bad image, entity not found, a released file missing) is dropped from every state and listed.
* **Memory** is bounded by the batch and the embeddings: scores are computed per row block inside
  the evaluator (no Q x N matrix is ever held), gallery images are decoded batch by batch.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import multiprocessing
import os
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from .atomic import write_text_atomic
from .conditions import JOINT_PAIRS, Condition, condition_to_filename, parse_condition
from .errors import ConfigError, InputError

__all__ = ["RunOptions", "RunResult", "run_benchmark", "MODES", "BLOCK_QUERIES"]

MODES: tuple[str, ...] = ("I2I", "T2T", "IT2IT", "I2IT", "T2IT")
# Which side (query, gallery) each path reads: II = image vs image, IT = query image vs caption, ...
PATH_SIDES: dict[str, tuple[str, str]] = {
    "II": ("image", "image"),
    "TT": ("text", "text"),
    "IT": ("image", "text"),
    "TI": ("text", "image"),
}
BLOCK_QUERIES = 16
BASELINES: tuple[str, ...] = ("comb_sum", "rrf")
RUN_SCHEMA = 1


@dataclass
class RunOptions:
    """Everything ``snapbench run`` takes besides the dataset and the encoder (CLI flags in brackets)."""

    modes: Sequence[str] | None = None  # [--modes] default: every mode the data and the model allow
    conditions: Sequence[str] | None = None  # [--conditions] default: the 54 states
    joint: bool = True  # [--joint/--no-joint] the paper's 18 joint conditions
    variants: str = "generated"  # [--variants] generated | released
    seed: int = 0
    grid: str | os.PathLike | Mapping[str, Any] | None = None
    device: str | None = None
    batch_size: int = 32
    workers: int = 1
    resamples: int = 10_000
    ks: tuple[int, ...] = (1, 5, 10, 20)
    group_by: str | None = None
    cache_dir: str | os.PathLike | None = None
    use_cache: bool = True
    dataset_format: str | None = None
    images: str | os.PathLike | None = None
    qrels: str | os.PathLike | None = None
    gallery: str | os.PathLike | None = None
    force: bool = False
    report: bool = True
    progress: bool = True


@dataclass
class RunResult:
    """What :func:`run_benchmark` produced."""

    out_dir: Path
    modes: list[str]
    conditions: list[str]
    n_queries: int
    n_gallery: int
    dropped: dict[str, str]
    notes: list[str] = field(default_factory=list)
    reports: dict[str, Path] = field(default_factory=dict)
    html: Path | None = None
    elapsed_s: float = 0.0


# ------------------------------------------------------------------------------------------------
# planning: which modes, conditions and sources a run needs
# ------------------------------------------------------------------------------------------------


def _image_source(cond: Condition) -> str:
    return cond.image_part.id if cond.kind in ("image", "joint") else "clean"


def _text_source(cond: Condition) -> str:
    return cond.text_part.id if cond.kind in ("text", "joint") else "clean"


def _available_sides(dataset: Any, encoder: Any) -> tuple[dict[str, bool], dict[str, bool], list[str]]:
    """Which query sides and gallery sides can be encoded, and why the others cannot."""
    mods = set(getattr(encoder, "modalities", {"image", "text"}))
    why: list[str] = []
    q_has_img = bool(dataset.has_query_images)
    g_has_img = bool(dataset.has_gallery_images)
    q_has_txt = any(q.question for q in dataset.queries)
    g_has_txt = bool(dataset.gallery) and all(g.caption for g in dataset.gallery)
    if not q_has_img:
        why.append("the queries have no images")
    if not g_has_img:
        why.append("the gallery has no images")
    if not q_has_txt:
        why.append("the queries have no questions")
    if not g_has_txt:
        why.append("some gallery items have no caption")
    if "image" not in mods:
        why.append(f"the encoder {getattr(encoder, 'name', '?')} encodes no images")
    if "text" not in mods:
        why.append(f"the encoder {getattr(encoder, 'name', '?')} encodes no text")
    query = {"image": q_has_img and "image" in mods, "text": q_has_txt and "text" in mods}
    gallery = {"image": g_has_img and "image" in mods, "text": g_has_txt and "text" in mods}
    return query, gallery, why


def plan_modes(query: Mapping[str, bool], gallery: Mapping[str, bool], requested: Sequence[str] | None) -> tuple[list[str], list[str], bool]:
    """(modes to evaluate, paths needed, whether MOOR can run) given the sides that exist."""
    from .evaluate.modes import MODES as MODE_WEIGHTS

    paths_ok = {p: query[qs] and gallery[gs] for p, (qs, gs) in PATH_SIDES.items()}
    if requested is None:
        wanted = list(MODES)
    else:
        wanted = []
        for m in requested:
            key = str(m).strip().upper()
            if key not in MODES:
                raise ConfigError(f"unknown mode {m!r}; modes: {', '.join(MODES)}")
            if key not in wanted:
                wanted.append(key)
    modes = [m for m in wanted if all(paths_ok[p] for p in MODE_WEIGHTS[m])]
    moor_ok = all(paths_ok.values())
    needed = sorted({p for m in modes for p in MODE_WEIGHTS[m]} | (set(PATH_SIDES) if moor_ok else set()))
    return modes, needed, moor_ok


def plan_conditions(
    options: RunOptions, dataset: Any, *, use_query_images: bool, use_query_text: bool, grid: Mapping[str, Any]
) -> tuple[list[Condition], list[str]]:
    """The conditions of the run, in order (clean first), and notes on those left out."""
    from .corruptions.pipeline import resolve_conditions  # TODO(merge)

    notes: list[str] = []
    if options.variants == "released":
        rel = dataset.released
        if rel is None:
            raise ConfigError(f"dataset {dataset.name!r} ({dataset.format}) ships no variants; use variants='generated'")
        conds = [Condition("clean")]
        txt_ops = sorted({op for per in rel.texts.values() for op in per})
        img_parts = sorted({key for per in rel.images.values() for key in per})
        conds += [Condition("image", image_operator=op, severity=s) for op, s in img_parts]
        conds += [Condition("text", text_operator=op) for op in txt_ops]
        if options.joint:
            conds += [
                Condition("joint", image_operator=i, text_operator=t, severity=s)
                for i, t in JOINT_PAIRS
                for (op, s) in img_parts
                if op == i and t in txt_ops
            ]
        if options.conditions is not None:
            want = {parse_condition(c).id for c in options.conditions} | {"clean"}
            unknown = sorted(want - {c.id for c in conds})
            if unknown:
                raise ConfigError(f"the dataset ships no variants for {', '.join(unknown)}")
            conds = [c for c in conds if c.id in want]
    else:
        conds = resolve_conditions(options.conditions, joint=options.joint, grid=grid)
    kept = []
    for c in conds:
        if c.kind in ("image", "joint") and not use_query_images:
            continue
        if c.kind in ("text", "joint") and not use_query_text:
            continue
        kept.append(c)
    left = len(conds) - len(kept)
    if left:
        kinds = sorted({c.kind for c in conds if c not in kept})
        notes.append(f"{left} {'/'.join(kinds)} condition(s) left out: no evaluated mode reads that side of the query")
    return kept, notes


# ------------------------------------------------------------------------------------------------
# variant sources per query (generated in workers, or read from the dataset's released files)
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _SourceTask:
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
class _SourceResult:
    index: int
    images: dict[str, np.ndarray]
    texts: dict[str, str]
    skips: list[dict[str, Any]]


def _generate_sources(task: _SourceTask) -> _SourceResult:
    """Corrupt one query into its image and text sources (runs in a worker process)."""
    from .corruptions import ImageLoadError, iter_variants, load_image

    images: dict[str, np.ndarray] = {}
    texts: dict[str, str] = {}
    skips: list[dict[str, Any]] = []
    image = None
    if task.image_sources:
        try:
            image = load_image(task.image)
        except ImageLoadError as exc:
            return _SourceResult(task.index, {}, {}, [{"id": task.query_id, "condition": None, "reason": str(exc)}])
    question = task.question if task.text_sources else None
    wanted = list(dict.fromkeys(["clean", *task.image_sources, *task.text_sources]))
    produced = set()
    for v in iter_variants(
        image, question, key=task.query_id, entity=task.entity, seed=task.seed,
        conditions=wanted, grid=task.grid, errors="skip",
    ):
        produced.add(v.condition)
        if v.condition in task.image_sources and v.image is not None:
            images[v.condition] = v.image
        if v.condition in task.text_sources and v.question is not None:
            texts[v.condition] = v.question
    for cid in wanted:
        if cid not in produced:
            skips.append({"id": task.query_id, "condition": cid, "reason": "could not be produced (see snapbench corrupt's skips for the reason)"})
    return _SourceResult(task.index, images, texts, skips)


def _worker_init() -> None:
    import cv2

    cv2.setNumThreads(1)  # one process per core: OpenCV's own pool would oversubscribe


def _released_sources(task: _SourceTask, released: Any) -> _SourceResult:
    from .corruptions import ImageLoadError, load_image

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
            skips.append({"id": task.query_id, "condition": src, "reason": "the dataset ships no file for it"})
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
    return _SourceResult(task.index, images, texts, skips)


def _iter_sources(tasks: list[_SourceTask], workers: int, released: Any) -> Iterator[_SourceResult]:
    """Results in task order; generation runs ahead in ``workers`` processes while the caller encodes."""
    if released is not None:
        for t in tasks:
            yield _released_sources(t, released)
        return
    if workers <= 1 or len(tasks) <= 1 or not any(t.image_sources for t in tasks):
        for t in tasks:
            yield _generate_sources(t)
        return
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_init) as pool:
        window: deque[cf.Future] = deque()
        try:
            for t in tasks:
                window.append(pool.submit(_generate_sources, t))
                if len(window) >= 2 * workers:
                    yield window.popleft().result()
            while window:
                yield window.popleft().result()
        except BaseException:
            for fut in window:
                fut.cancel()
            raise


# ------------------------------------------------------------------------------------------------
# encoding with a block-level resume log
# ------------------------------------------------------------------------------------------------


class _Batcher:
    """Collect (row, source, item) triples and encode them ``batch_size`` at a time into memmaps."""

    def __init__(self, encode: Callable[[list], np.ndarray], batch_size: int, store: Callable[[str, int, np.ndarray], None]):
        self.encode, self.batch_size, self.store = encode, batch_size, store
        self.pending: list[tuple[int, str, Any]] = []
        self.waited = 0.0

    def add(self, row: int, source: str, item: Any) -> None:
        self.pending.append((row, source, item))
        if len(self.pending) >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        embs = np.asarray(self.encode([p[2] for p in self.pending]), dtype=np.float32)
        if embs.ndim != 2 or embs.shape[0] != len(self.pending):
            raise InputError(f"the encoder returned an array of shape {embs.shape} for {len(self.pending)} items")
        for (row, source, _), e in zip(self.pending, embs):
            self.store(source, row, e)
        self.pending = []


class _QueryStore:
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


def _encode_gallery(dataset: Any, encoder: Any, emb_dir: Path, sides: Mapping[str, bool], batch_size: int, bar: Any) -> dict[str, np.ndarray]:
    """Gallery embeddings per side, encoded batch by batch (images decoded per batch) or reloaded."""
    from .atomic import save_npy_atomic
    from .corruptions import load_image

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
                rows.append(np.asarray(encoder.encode_images(batch), dtype=np.float32))
            else:
                rows.append(np.asarray(encoder.encode_texts([g.caption for g in items]), dtype=np.float32))
            bar.advance(task, len(items))
        arr = np.concatenate(rows)
        save_npy_atomic(path, arr)
        out[side] = arr
    return out


class _Progress:
    """A rich progress display on stderr, or nothing."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.p = None

    def __enter__(self) -> "_Progress":
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

            self.p = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                              TimeElapsedColumn(), TimeRemainingColumn(), console=Console(stderr=True))
            self.p.__enter__()
        return self

    def add(self, description: str, total: int) -> Any:
        return self.p.add_task(description, total=total) if self.p else None

    def advance(self, task: Any, n: int = 1) -> None:
        if self.p is not None and task is not None:
            self.p.advance(task, n)

    def __exit__(self, *exc: Any) -> None:
        if self.p is not None:
            self.p.__exit__(*exc)


def _read_blocks(path: Path) -> dict[int, list[dict[str, Any]]]:
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


# ------------------------------------------------------------------------------------------------
# scores per row block (the evaluator slices them; nothing Q x N is held)
# ------------------------------------------------------------------------------------------------


class BlockScores:
    """A Q x N score matrix computed on demand for row slices: ``fn(r0, r1) -> (r1 - r0) x N``."""

    def __init__(self, fn: Callable[[int, int], np.ndarray], shape: tuple[int, int]):
        self.fn, self.shape = fn, shape

    def __getitem__(self, rows: slice) -> np.ndarray:
        r0, r1, step = rows.indices(self.shape[0])
        if step != 1:
            raise ValueError("BlockScores supports contiguous row slices only")
        return self.fn(r0, r1)


def _normalized(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(n > 0, n, 1.0)


# ------------------------------------------------------------------------------------------------
# the run
# ------------------------------------------------------------------------------------------------


def _run_fingerprint(dataset: Any, encoder: Any, options: RunOptions, grid_json: Any, conds: list[str], sources: dict) -> dict:
    import hashlib

    ids = hashlib.sha256("\x1f".join(q.id for q in dataset.queries).encode()).hexdigest()
    gids = hashlib.sha256("\x1f".join(g.id for g in dataset.gallery).encode()).hexdigest()
    return {
        "dataset_queries_sha256": ids,
        "dataset_gallery_sha256": gids,
        "encoder_fingerprint": str(getattr(encoder, "fingerprint", getattr(encoder, "name", type(encoder).__name__))),
        "seed": int(options.seed),
        "variants": options.variants,
        "grid": grid_json,
        "block_queries": BLOCK_QUERIES,
        "batch_size": int(options.batch_size),
        "sources": sources,
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
    from .corruptions.pipeline import resolve_grid  # TODO(merge): snapbench.corruptions public name

    opts = options or RunOptions()
    say = log or (lambda _msg: None)
    t0 = time.perf_counter()
    if opts.workers < 1:
        raise ConfigError(f"workers must be >= 1, got {opts.workers}")
    if opts.batch_size < 1:
        raise ConfigError(f"batch_size must be >= 1, got {opts.batch_size}")
    if opts.variants not in ("generated", "released"):
        raise ConfigError(f"variants must be 'generated' or 'released', got {opts.variants!r}")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"the output folder is an existing file: {out}")

    if hasattr(dataset, "queries"):
        ds = dataset
    else:
        from .data import load_dataset

        ds = load_dataset(dataset, format=opts.dataset_format, images=opts.images, qrels=opts.qrels, gallery=opts.gallery)
    enc = _load_encoder(encoder, opts)
    notes = list(getattr(ds, "notes", []))

    q_sides, g_sides, why = _available_sides(ds, enc)
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
    conds, cnotes = plan_conditions(opts, ds, use_query_images=use_q_img, use_query_text=use_q_txt, grid=table)
    notes += cnotes
    img_sources = tuple(dict.fromkeys(_image_source(c) for c in conds)) if use_q_img else ()
    txt_sources = tuple(dict.fromkeys(_text_source(c) for c in conds)) if use_q_txt else ()
    for n in notes:
        say(n)

    grid_json = {op: {f"s{s}": dict(v) for s, v in sorted(levels.items())} for op, levels in sorted(table.items())}
    fp = _run_fingerprint(ds, enc, opts, grid_json, [c.id for c in conds], {"image": list(img_sources), "text": list(txt_sources)})
    out.mkdir(parents=True, exist_ok=True)
    run_json = out / "run.json"
    emb_dir = out / "embeddings"
    qdir = emb_dir / "queries"
    if run_json.exists() and not opts.force:
        try:
            before = json.loads(run_json.read_text(encoding="utf-8")).get("fingerprint")
        except (OSError, ValueError):
            before = None
        if before != fp:
            diff = sorted(k for k in fp if not isinstance(before, dict) or before.get(k) != fp[k])
            raise ConfigError(
                f"{out} holds a run made with another {', '.join(diff) or 'configuration'}; "
                "use a new output folder, or force to discard it"
            )
    if opts.force and qdir.exists():
        for f in qdir.iterdir():
            f.unlink()
        for f in emb_dir.glob("gallery.*.npy"):
            f.unlink()
    qdir.mkdir(parents=True, exist_ok=True)
    from . import __version__

    first_img = next((q for q in ds.queries if q.image is not None and Path(q.image).exists()), None)
    meta = {
        "schema": RUN_SCHEMA,
        "snapbench_version": __version__,
        "dataset": {"name": ds.name, "format": ds.format, "root": str(ds.root), "n_queries": len(ds.queries), "n_gallery": len(ds.gallery)},
        "encoder": {"spec": encoder if isinstance(encoder, str) else type(encoder).__name__, "name": getattr(enc, "name", None)},
        "seed": int(opts.seed),
        "variants": opts.variants,
        "modes": modes + (["MOOR"] if moor_ok else []),
        "conditions": [c.id for c in conds],
        "fingerprint": fp,
        "status": "running",
        "contact_sheet": {"image": str(first_img.image), "key": first_img.id, "seed": int(opts.seed)} if first_img else None,
        "notes": notes,
    }
    write_text_atomic(run_json, json.dumps(meta, indent=2, ensure_ascii=False) + "\n")

    n_q = len(ds.queries)
    blocks_log = qdir / "blocks.jsonl"
    done = _read_blocks(blocks_log)
    n_blocks = (n_q + BLOCK_QUERIES - 1) // BLOCK_QUERIES
    img_store = _QueryStore(qdir, n_q, "image")
    txt_store = _QueryStore(qdir, n_q, "text")
    released = ds.released if opts.variants == "released" else None
    grid_arg = table if opts.grid is not None else None

    with _Progress(opts.progress) as bar:
        gallery = _encode_gallery(ds, enc, emb_dir, g_sides, opts.batch_size, bar)
        qtask = bar.add("corrupt + encode queries", n_q)
        bar.advance(qtask, sum(min(BLOCK_QUERIES, n_q - b * BLOCK_QUERIES) for b in done if b < n_blocks))
        todo = [b for b in range(n_blocks) if b not in done]
        tasks = [
            _SourceTask(i, q.id, None if q.image is None else str(q.image), q.question, q.entity, int(opts.seed),
                        img_sources, txt_sources, grid_arg)
            for b in todo
            for i, q in enumerate(ds.queries[b * BLOCK_QUERIES : (b + 1) * BLOCK_QUERIES], start=b * BLOCK_QUERIES)
        ]
        img_batch = _Batcher(enc.encode_images, opts.batch_size, img_store.put)
        txt_batch = _Batcher(enc.encode_texts, opts.batch_size, txt_store.put)
        block_skips: list[dict[str, Any]] = []
        with open(blocks_log, "a", encoding="utf-8") as logf:
            for res in _iter_sources(tasks, opts.workers, released):
                for src in img_sources:
                    if src in res.images:
                        img_batch.add(res.index, src, res.images[src])
                for src in txt_sources:
                    if src in res.texts:
                        txt_batch.add(res.index, src, res.texts[src])
                block_skips += res.skips
                bar.advance(qtask)
                b = res.index // BLOCK_QUERIES
                if res.index == min((b + 1) * BLOCK_QUERIES, n_q) - 1:  # last query of its block
                    img_batch.flush()
                    txt_batch.flush()
                    img_store.flush()
                    txt_store.flush()
                    logf.write(json.dumps({"block": b, "skips": block_skips}, ensure_ascii=False) + "\n")
                    logf.flush()
                    os.fsync(logf.fileno())
                    done[b] = block_skips
                    block_skips = []

        # ---- paired query set -------------------------------------------------------------------
        dropped: dict[str, str] = {}
        for skips in done.values():
            for s in skips:
                dropped.setdefault(s["id"], f"{s['condition'] or 'all conditions'}: {s['reason']}")
        keep = np.array([i for i, q in enumerate(ds.queries) if q.id not in dropped], dtype=np.int64)
        if keep.size == 0:
            raise InputError(f"no query could be produced under every condition (see {out / 'dropped_queries.json'})")
        write_text_atomic(out / "dropped_queries.json", json.dumps(dropped, indent=2, ensure_ascii=False) + "\n")
        if dropped:
            say(f"{len(dropped)} quer{'y' if len(dropped) == 1 else 'ies'} dropped from every state (listed in {out / 'dropped_queries.json'})")
        q_emb = {("image", s): img_store.load(s) for s in img_sources}
        q_emb.update({("text", s): txt_store.load(s) for s in txt_sources})

        reports = _evaluate_all(ds, out, conds, modes, moor_ok, gallery, q_emb, keep, opts, bar, say)

    meta["status"] = "complete"
    meta["n_queries_evaluated"] = int(keep.size)
    write_text_atomic(run_json, json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    html = None
    if opts.report:
        try:
            from .report import build_report

            html = build_report(out).html
        except ImportError as exc:
            say(f"no HTML report: {exc} (pip install 'snapbench[report]', then snapbench report {out})")
    return RunResult(out, modes + (["MOOR"] if moor_ok else []), [c.id for c in conds], int(keep.size), len(ds.gallery),
                     dropped, notes, reports, html, time.perf_counter() - t0)


def _load_encoder(encoder: str | Any, opts: RunOptions) -> Any:
    if not isinstance(encoder, str):
        return encoder
    from .models import CachedEncoder, load_encoder

    enc = load_encoder(encoder, device=opts.device, batch_size=opts.batch_size)
    if opts.use_cache:
        enc = CachedEncoder(enc, opts.cache_dir)
    return enc


def _evaluate_all(ds, out: Path, conds: list[Condition], modes: list[str], moor_ok: bool, gallery, q_emb, keep: np.ndarray,
                  opts: RunOptions, bar: _Progress, say: Callable[[str], None]) -> dict[str, Path]:
    """Evaluate every mode, MOOR and the baselines on the kept queries; write the reports."""
    from .evaluate import EvaluationConfig, evaluate_conditions, evaluate_matrix, write_report
    from .evaluate.metrics import Labels
    from .evaluate.modes import MODES as MODE_WEIGHTS

    qids = [ds.queries[i].id for i in keep]
    gids = [g.id for g in ds.gallery]
    gpos = {g: j for j, g in enumerate(gids)}
    gold = []
    for q in qids:
        rel = ds.qrels.get(q, {})
        unknown = [g for g in rel if g not in gpos]
        if unknown:
            raise InputError(f"qrels of query {q!r} name gallery id(s) not in the gallery: {', '.join(unknown[:5])}")
        gold.append({gpos[g]: float(r) for g, r in rel.items()})
    labels = Labels.from_lists(gold, len(gids))
    cfg = EvaluationConfig(ks=tuple(opts.ks), resamples=opts.resamples, seed=opts.seed)
    metrics = cfg.metric_list()
    groups = _groups(ds, keep, opts.group_by)
    N = len(gids)

    g_norm = {side: _normalized(arr) for side, arr in gallery.items()}
    q_norm: dict[tuple[str, str], np.ndarray] = {}

    def qside(side: str, source: str) -> np.ndarray:
        if (side, source) not in q_norm:
            q_norm[(side, source)] = _normalized(np.asarray(q_emb[(side, source)])[keep])
        return q_norm[(side, source)]

    def path_block(cond: Condition, path: str, r0: int, r1: int) -> np.ndarray:
        qs, gs = PATH_SIDES[path]
        src = _image_source(cond) if qs == "image" else _text_source(cond)
        return qside(qs, src)[r0:r1] @ g_norm[gs].T

    def mode_block(mode: str, cond: Condition) -> Callable[[int, int], np.ndarray]:
        weights = MODE_WEIGHTS[mode]

        def fn(r0: int, r1: int) -> np.ndarray:
            return sum(w * path_block(cond, p, r0, r1) for p, w in weights.items())

        return fn

    written: dict[str, Path] = {}
    evaluated: dict[str, dict[str, Any]] = {}  # target name -> its report
    targets: list[tuple[str, Callable[[Condition], Callable[[int, int], np.ndarray]]]] = [
        (m, (lambda mm: lambda c: mode_block(mm, c))(m)) for m in modes
    ]
    index = None
    shares: dict[str, float] = {}
    if moor_ok:
        from .fusion import MOORIndex

        index = MOORIndex().fit(gallery["image"], gallery["text"])

        def moor_fn(cond: Condition) -> Callable[[int, int], np.ndarray]:
            qi = np.asarray(q_emb[("image", _image_source(cond))])[keep]
            qt = np.asarray(q_emb[("text", _text_source(cond))])[keep]
            shares[cond.id] = float(np.mean(index.explain(qi, qt).text_share))
            return lambda r0, r1: index.scores(qi[r0:r1], qt[r0:r1])

        targets.append(("MOOR", moor_fn))
        from .fusion import comb_sum, rrf

        for name, fuse in (("comb_sum", comb_sum), ("rrf", rrf)):
            def base_fn(cond: Condition, fuse=fuse) -> Callable[[int, int], np.ndarray]:
                return lambda r0, r1: fuse([path_block(cond, p, r0, r1) for p in PATH_SIDES])

            targets.append((f"fusion/{name}", base_fn))

    task = bar.add("evaluate", len(targets) * len(conds))
    for name, make in targets:
        evals = {}
        for c in conds:
            evals[c.id] = evaluate_matrix(BlockScores(make(c), (keep.size, N)), labels, metrics, name=f"{name} {c.id}",
                                          query_ids=qids, block_rows=cfg.block_rows)
            bar.advance(task)
        report = evaluate_conditions(evals, labels, cfg, groups=groups)
        report["meta"].update({"mode": name, "dataset": ds.name, "n_dropped_queries": int(len(ds.queries) - keep.size)})
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        if name == "MOOR":
            write_text_atomic(folder / "text_share.json", json.dumps(shares, indent=2) + "\n")
        _write_per_query(folder / "per_query.csv", qids, evals, metrics)
        written[name] = folder / "report.json"
        report["_drag_stats"] = evals["clean"].stats.get("hit@1")
        evaluated[name] = report
    # coarse-text drag of every fused mode against I->I, with a paired CI over the same resamples
    if "I2I" in evaluated:
        from .evaluate.paired import bootstrap_counts, bootstrap_values, percentile_ci

        base = evaluated["I2I"]["_drag_stats"]
        counts = bootstrap_counts(labels.n_queries, cfg.resamples, cfg.seed)
        for name, report in evaluated.items():
            st = report["_drag_stats"]
            if name == "I2I" or st is None or base is None:
                continue
            boot = bootstrap_values([base, st], counts)
            lo, hi = percentile_ci(boot[:, 1] - boot[:, 0], cfg.ci)
            report["coarse_text_drag"] = {
                "metric": "hit@1", "value": float(st.value - base.value), "ci": [float(lo), float(hi)],
                "joint": name, "joint_value": float(st.value), "image_value": float(base.value),
            }
    for name, report in evaluated.items():
        report.pop("_drag_stats", None)
        write_report(report, written[name])
    return written


def _groups(ds: Any, keep: np.ndarray, group_by: str | None) -> dict[str, np.ndarray] | None:
    if group_by is None:
        return None
    rows: dict[str, list[int]] = {}
    for r, i in enumerate(keep):
        value = (ds.queries[i].tags or {}).get(group_by)
        if value is not None:
            rows.setdefault(str(value), []).append(r)
    if not rows:
        fields = sorted({k for q in ds.queries for k in (q.tags or {})})
        raise ConfigError(f"no query has the field {group_by!r} (fields: {', '.join(fields) or 'none'})")
    return {k: np.asarray(v, dtype=np.int64) for k, v in sorted(rows.items())}


def _write_per_query(path: Path, qids: Sequence[str], evals: Mapping[str, Any], metrics: Sequence[str]) -> None:
    """Long table ``query_id, condition, metric, value`` (value empty where undefined, e.g. zero-GT)."""
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["query_id", "condition", "metric", "value"])
    for cond, ev in evals.items():
        for m in metrics:
            st = ev.stats[m]
            num, den = np.asarray(st.num, dtype=np.float64), np.asarray(st.den, dtype=np.float64)
            vals = np.divide(num, den, out=np.full(num.shape, np.nan), where=den > 0)
            for q, v in zip(qids, vals):
                w.writerow([q, cond, m, "" if not np.isfinite(v) else repr(float(v))])
    write_text_atomic(path, buf.getvalue())
