"""Query variants as encoder inputs: each query's variant *sources* generated in workers (or read from the
dataset's released files), streamed in query order to the query-encoding stage (:mod:`.queries`).

A source is ``clean`` or one image part (``img/<op>/s<N>``) or text part (``txt/<op>``); a condition's
query combines one image source and one text source, so each source is generated and encoded once
per query.  Local workers hand images back through shared memory (:mod:`snapbench.engines.shm`).
With ``measure``, each image source's measured strength (PSNR, SSIM against the clean image,
:mod:`snapbench.corruptions.measure`) is computed where the source is made and travels with it
(:attr:`SourceResult.measured`); with a severity ``target``, image sources are searched to it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from ..conditions import parse_condition
from ..engines import ordered_map
from ..engines.shm import block_name, cleanup_shared

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
    "ssim"} (as the corrupt manifest records them), when measured."""

    index: int
    images: dict[str, np.ndarray]
    texts: dict[str, str]
    skips: list[dict[str, Any]]
    image_failed: bool = field(default=False)
    measured: dict[str, dict[str, Any]] = field(default_factory=dict)

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


def generate_sources(task: SourceTask) -> SourceResult:
    """Corrupt one query into its image and text sources (runs in a worker process).

    A query image that cannot be read skips the query for every image source (one skip, condition
    ``None``); its text sources are still generated, for the encoders of a run that read no images.
    """
    from ..corruptions import ImageLoadError, Skip, generate_variants, load_image, resolve_conditions

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
            skips.append({"id": task.query_id, "condition": None, "reason": str(exc)})
            image_sources = ()
    question = task.question if task.text_sources else None
    wanted = list(dict.fromkeys([*image_sources, *task.text_sources]))
    conds = [c for c in resolve_conditions(wanted, grid=task.grid) if c.id in wanted] if wanted else []
    for v in generate_variants(image, question, key=task.query_id, entity=task.entity, seed=task.seed,
                               conditions=conds, grid=task.grid, measure=task.measure, target=task.target):
        if isinstance(v, Skip):
            skips.append({"id": task.query_id, "condition": v.condition, "reason": v.reason})
            continue
        if v.condition in image_sources and v.image is not None:
            images[v.condition] = v.image
            if v.measured is not None and v.kind == "image":
                measured[v.condition] = {"psnr": v.measured["psnr"], "ssim": v.measured["ssim"]}
        if v.condition in task.text_sources and v.question is not None:
            texts[v.condition] = v.question
    return SourceResult(task.index, images, texts, skips, image_failed=bool(task.image_sources) and image is None,
                        measured=measured)


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
    measured = _measure_released(images) if task.measure else {}
    for src in task.text_sources:
        text = task.question if src == "clean" else released.texts.get(task.query_id, {}).get(parse_condition(src).text_operator)
        if text is None:
            skips.append({"id": task.query_id, "condition": src, "reason": "the dataset ships no perturbed question for it"})
        else:
            texts[src] = text
    return SourceResult(task.index, images, texts, skips, measured=measured)


def _measure_released(images: dict[str, np.ndarray]) -> dict[str, dict[str, Any]]:
    """PSNR and SSIM of each released image variant against the query's clean image (when both were read)."""
    from ..corruptions import image_reference, measure_image

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


def generate_sources_shared(task: SourceTask) -> SourceResult:
    """:func:`generate_sources` for a local worker: each image travels back through a shared-memory
    block instead of being pickled through the pool's pipe (a 1024x768 query's 46 images are ~108
    MB; pickling them cost more than corrupting them).  The result holds ``(block name, shape)``
    pairs that :func:`take_shared` turns back into arrays in the parent."""
    from multiprocessing import resource_tracker, shared_memory

    res = generate_sources(task)
    for key, img in res.images.items():
        # named after the parent, so blocks a killed parent never freed can be found (remove_stale_shared)
        name = block_name(os.getppid(), secrets.token_hex(6))
        block = shared_memory.SharedMemory(name=name, create=True, size=max(img.nbytes, 1))
        np.ndarray(img.shape, dtype=np.uint8, buffer=block.buf)[...] = img
        # the parent unlinks the block once it has copied it; this process must not do it at exit
        resource_tracker.unregister(block._name, "shared_memory")  # noqa: SLF001 - stdlib attribute
        block.close()
        res.images[key] = (block.name, tuple(img.shape))
    return res


def take_shared(res: SourceResult) -> SourceResult:
    """Copy the images of a :func:`generate_sources_shared` result out of shared memory and free it."""
    from multiprocessing import shared_memory

    for key, (name, shape) in list(res.images.items()):
        block = shared_memory.SharedMemory(name=name)
        try:
            res.images[key] = np.array(np.ndarray(shape, dtype=np.uint8, buffer=block.buf))
        finally:
            block.close()
            block.unlink()
    return res


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
    either engine: results are the same wherever a task runs.  Encoding stays in the caller's
    process (or its Ray encoder actors).  Close the iterator when stopping early (the run does):
    that shuts a local pool down and frees the shared-memory blocks its workers still wrote.
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
    # a local pool hands images back through shared memory; Ray through its object store
    shared = engine == "local"
    fn = generate_sources_shared if shared else generate_sources
    with cleanup_shared() if shared else contextlib.nullcontext():
        results = ordered_map(fn, tasks, engine=engine, workers=workers, address=address,
                              initializer=restore_registrations, initargs=(payload,))
        with contextlib.closing(results):  # an interrupted run shuts its pool down here, before the blocks are freed
            for res in results:
                if shared:
                    res = take_shared(res)
                # Ray hands numpy arrays back as read-only views into its object store; encoders get the same
                # writable arrays as with the local pool, and the store is freed as soon as the result is read.
                for key, img in res.images.items():
                    if not img.flags.writeable:
                        res.images[key] = img.copy()
                yield res
