"""Query variants as encoder inputs: each query's variant *sources* generated in workers (or read from the
dataset's released files), streamed in query order to the query-encoding stage (:mod:`.queries`).

A source is ``clean`` or one image part (``img/<op>/s<N>``) or text part (``txt/<op>``); a condition's
query combines one image source and one text source, so each source is generated and encoded once
per query.  Local workers hand a query's images back in one shared-memory block, written variant by
variant and read by the encoders without a copy (:func:`generate_sources_shared`,
:mod:`snapbench.engines.shm`).
With ``measure``, each image source's measured strength (PSNR, SSIM against the clean image,
:mod:`snapbench.corruptions.measure`) is computed where the source is made and travels with it
(:attr:`SourceResult.measured`); with a severity ``target``, image sources are searched to it.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from ...core.conditions import parse_condition
from ...engines import ordered_map, runs_inline
from ...engines.shm import BlockWriter, Handoff, Offer, SharedBlocks, cleanup_shared

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
    measure: bool = False
    target: Any = None  # a snapbench.corruptions.SeverityTarget


@dataclass
class SourceResult:
    """One query's sources.  ``skips``: {"id", "condition" (a source, or None: the query's image could not
    be read, which concerns every image source), "reason"}.  ``measured``: image source -> {"psnr",
    "ssim"} (as the corrupt manifest records them), when measured; with a severity target also
    {"reached", "achieved"} (the manifest's ``"target"`` values)."""

    index: int
    images: dict[str, np.ndarray]
    texts: dict[str, str]
    skips: list[dict[str, Any]]
    image_failed: bool = field(default=False)
    measured: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: local pool only: the block its images were handed over in (see :mod:`snapbench.engines.shm`)
    shared: Handoff | None = None

    def view(self, image_sources: tuple[str, ...], text_sources: tuple[str, ...]) -> SourceResult:
        """This result as a run that asked for these sources only would have got it: when the query's
        image failed and images are asked for, the query is skipped as a whole (no item at all)."""
        if self.image_failed and image_sources:
            return SourceResult(self.index, {}, {}, [s for s in self.skips if s["condition"] is None], True)
        wanted = set(image_sources) | set(text_sources)
        return SourceResult(self.index, {k: v for k, v in self.images.items() if k in image_sources},
                            {k: v for k, v in self.texts.items() if k in text_sources},
                            [s for s in self.skips if s["condition"] in wanted], self.image_failed,
                            {k: v for k, v in self.measured.items() if k in image_sources})


def generate_sources(task: SourceTask, sink: BlockWriter | None = None) -> SourceResult:
    """Corrupt one query into its image and text sources (runs in a worker process).

    A query image that cannot be read skips the query for every image source (one skip, condition
    ``None``); its text sources are still generated, for the encoders of a run that read no images.
    With a ``sink``, each image is handed to it as soon as it is made (and not kept here): see
    :func:`generate_sources_shared`.
    """
    from ...corruptions import ImageLoadError, Skip, generate_variants, load_image, resolve_conditions

    images: dict[str, np.ndarray] = {}
    texts: dict[str, str] = {}
    skips: list[dict[str, Any]] = []
    measured: dict[str, dict[str, Any]] = {}
    image = None
    image_sources = task.image_sources
    if image_sources:
        try:
            if task.image is None:
                raise ImageLoadError("the query has no image")
            image = load_image(task.image)
        except ImageLoadError as exc:
            skips.append(Skip(None, str(exc)).record(task.query_id))
            image_sources = ()
    if sink is not None and image is not None:
        # every built-in variant is at most the input's size (cropping and downscale are smaller)
        sink.open(image.nbytes, len(image_sources))
    question = task.question if task.text_sources else None
    wanted = list(dict.fromkeys([*image_sources, *task.text_sources]))
    conds = [c for c in resolve_conditions(wanted, grid=task.grid) if c.id in wanted] if wanted else []
    for v in generate_variants(image, question, key=task.query_id, entity=task.entity, seed=task.seed,
                               conditions=conds, grid=task.grid, measure=task.measure, target=task.target):
        if isinstance(v, Skip):
            skips.append(v.record(task.query_id))
            continue
        if v.condition in image_sources and v.image is not None:
            images[v.condition] = v.image if sink is None else sink.put(v.image)
            if v.measured is not None and v.kind == "image":
                measured[v.condition] = {"psnr": v.measured["psnr"], "ssim": v.measured["ssim"]}
            if v.target is not None and v.kind == "image":  # only with a target: blocks logs stay as they were
                measured.setdefault(v.condition, {}).update(reached=bool(v.target["reached"]),
                                                            achieved=v.target["achieved"])
        if v.condition in task.text_sources and v.question is not None:
            texts[v.condition] = v.question
    return SourceResult(task.index, images, texts, skips, image_failed=bool(task.image_sources) and image is None,
                        measured=measured)


def _released_sources(task: SourceTask, released: Any) -> SourceResult:
    from ...corruptions import ImageLoadError, Skip, load_image

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
            skips.append(Skip(src, why).record(task.query_id))
            continue
        try:
            images[src] = load_image(path)
        except ImageLoadError as exc:
            skips.append(Skip(src, str(exc)).record(task.query_id))
    measured = _measure_released(images) if task.measure else {}
    for src in task.text_sources:
        text = task.question if src == "clean" else released.texts.get(task.query_id, {}).get(parse_condition(src).text_operator)
        if text is None:
            skips.append(Skip(src, "the dataset ships no perturbed question for it").record(task.query_id))
        else:
            texts[src] = text
    return SourceResult(task.index, images, texts, skips, measured=measured)


def _measure_released(images: dict[str, np.ndarray]) -> dict[str, dict[str, Any]]:
    """PSNR and SSIM of each released image variant against the query's clean image (when both were read)."""
    from ...corruptions import image_reference, measure_image

    if "clean" not in images:
        return {}
    ref = None
    out: dict[str, dict[str, Any]] = {}
    for src, img in images.items():
        if src != "clean":
            ref = ref or image_reference(images["clean"])
            js = measure_image(ref, img).to_json()
            out[src] = {"psnr": js["psnr"], "ssim": js["ssim"]}
    return out


@dataclass(frozen=True)
class SharedTask:
    """A task for a local pool worker and the shared-memory block the driver offers for its images."""

    task: SourceTask
    offer: Offer = Offer()


def generate_sources_shared(job: SharedTask) -> SourceResult:
    """:func:`generate_sources` for a local worker: the query's images travel back in one shared-memory
    block instead of being pickled through the pool's pipe.  Each image is copied into the block as
    soon as it is made and dropped, so the worker holds the block and one variant, not every
    variant.  The block is the one offered when it is large enough (a recycled block: its pages are
    already there), otherwise a new one.  The result holds ``(offset, shape)`` per image and the
    :class:`~snapbench.engines.shm.Handoff`; :func:`take_shared` makes the images arrays again."""
    sink = BlockWriter(job.offer)
    try:
        res = generate_sources(job.task, sink)
    finally:
        handoff = sink.close()
    res.shared = handoff
    return res


def take_shared(blocks: SharedBlocks, res: SourceResult) -> SourceResult:
    """A :func:`generate_sources_shared` result with its images as views into their block (the driver's
    side; the block is offered again once the last view is released)."""
    blocks.take(res.shared, res.images)
    return res


def iter_sources(
    tasks: list[SourceTask], workers: int, released: Any, *, engine: str = "local", address: str | None = None,
    meanwhile: Callable[[], None] | None = None,
) -> Iterator[SourceResult]:
    """Results in task order; generation runs ahead on ``engine`` (see :func:`snapbench.engines.ordered_map`)
    while the caller encodes.

    Released variants are files read here, in the driver.  Generation runs inline when there is
    nothing to parallelise (one task, or text-only sources: cheap next to starting workers), on
    either engine: results are the same wherever a task runs.  Encoding stays in the caller's
    process (or its Ray encoder actors).  Close the iterator when stopping early (the run does):
    that shuts a local pool down and frees the shared-memory blocks its workers still wrote.
    ``meanwhile()`` runs once, on the first ``next()``, while the first tasks are generated (see
    :func:`snapbench.engines.ordered_map`); before the first task where they run in this process.
    """
    if released is not None:  # files read here
        yield from ordered_map(functools.partial(_released_sources, released=released), tasks, meanwhile=meanwhile)
        return
    if not any(t.image_sources for t in tasks) or runs_inline(engine, workers, len(tasks)):
        # in this process: text sources are cheap next to starting workers, and a resumed run with
        # nothing left never starts a pool or a Ray instance
        yield from ordered_map(generate_sources, tasks, meanwhile=meanwhile)
        return
    from ...corruptions.workers import registrations_payload, restore_registrations

    # operators registered at run time (e.g. through the interop modules) are sent to the workers
    payload = registrations_payload(parse_condition(s) for t in tasks for s in {*t.image_sources, *t.text_sources})
    if engine != "local":
        yield from _engine_sources(tasks, engine, workers, address, payload, meanwhile)
        return
    with cleanup_shared(), SharedBlocks() as blocks:
        jobs = (SharedTask(t, blocks.offer()) for t in tasks)  # offered as the pool takes each task
        results = ordered_map(generate_sources_shared, jobs, engine=engine, workers=workers, address=address,
                              initializer=restore_registrations, initargs=(payload,), meanwhile=meanwhile)
        with contextlib.closing(results):  # an interrupted run shuts its pool down here, before the blocks are freed
            for res in results:
                yield take_shared(blocks, res)


def _engine_sources(tasks: list[SourceTask], engine: str, workers: int, address: str | None,
                    payload: Any, meanwhile: Callable[[], None] | None) -> Iterator[SourceResult]:
    """Generated on another engine than the local pool (Ray): images come back through its own transport."""
    from ...corruptions.workers import restore_registrations

    results = ordered_map(generate_sources, tasks, engine=engine, workers=workers, address=address,
                          initializer=restore_registrations, initargs=(payload,), meanwhile=meanwhile)
    with contextlib.closing(results):
        for res in results:
            # Ray hands numpy arrays back as read-only views into its object store; encoders get the same
            # writable arrays as with the local pool, and the store is freed as soon as the result is read.
            for key, img in res.images.items():
                if not img.flags.writeable:
                    res.images[key] = img.copy()
            yield res
