"""The in-memory form of a benchmark dataset, whatever file layout it came from.

A :class:`Dataset` is what every loader in :mod:`snapbench.data` returns: queries (the same
:class:`~snapbench.corruptions.QueryRecord` that ``snapbench corrupt`` reads), a fixed gallery,
graded qrels, the variants the release ships (if any) and human-readable notes.  Image paths are
kept even when the file is absent so a user can see where an image was expected; the
:meth:`Dataset.sides` says which query and gallery sides exist, hence which retrieval modes can run
(the rule ``snapbench run`` plans with).

``snapbench run --limit N``: a quick look at the first N queries before a long run.

The cut is made once, on the loaded dataset, so that everything downstream (corruption, encoding,
evaluation, the report) sees an ordinary, smaller dataset.  It is stated on every output: the
dataset's notes (printed by the run and recorded in run.json's ``notes``, which the report shows
next to the numbers), run.json's ``limit`` and the table printed after the run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.records import QueryRecord
from ..core.targets import MODE_LABELS, SIDES, plan_targets

__all__ = ['Dataset', 'GalleryItem', 'ReleasedVariants', 'Sides', 'limit_queries']

@dataclass(frozen=True)
class GalleryItem:
    """One gallery item.  ``image`` is the expected file (it may not exist); ``None`` when the
    format gives no image for the item, ``caption`` ``None`` when it has no caption."""

    id: str
    image: Path | None
    caption: str | None


@dataclass(frozen=True)
class ReleasedVariants:
    """Corrupted queries a dataset ships, so they can be used instead of being regenerated.

    ``texts``: query id -> {snapbench text operator: perturbed question}.
    ``images``: query id -> {(snapbench image operator, severity 1|2|3): image file}; only files
    that exist are listed (the SnapBench release does not ship them, its generator writes them).
    """

    texts: dict[str, dict[str, str]] = field(default_factory=dict)
    images: dict[str, dict[tuple[str, int], Path]] = field(default_factory=dict)


@dataclass(frozen=True)
class Sides:
    """The query and gallery sides (``"image"`` / ``"text"``) a run can encode, and why the others cannot
    (keys ``"query image"``, ``"gallery text"``..., as :func:`snapbench.core.targets.plan_targets` quotes them)."""

    query: frozenset[str]
    gallery: frozenset[str]
    why: dict[str, str] = field(default_factory=dict)


def _all_exist(paths: list[Path | None]) -> bool:
    return bool(paths) and all(p is not None and p.is_file() for p in paths)


@dataclass
class Dataset:
    """A loaded benchmark.

    ``qrels`` maps query id -> {gallery id: grade}; a query present with ``{}`` is a zero-GT query
    (it counts in the reject metrics).  ``qrels == {}`` as a whole means the dataset came without
    ground truth (PhotoBench without a ground-truth file): see :attr:`has_ground_truth`.
    ``format`` says which id space the ids belong to: ids from different formats of the same
    benchmark (the SnapBench JSON and its ImageFolder copy) are not interchangeable.
    """

    name: str
    format: str
    root: Path
    queries: list[QueryRecord]
    gallery: list[GalleryItem]
    qrels: dict[str, dict[str, float]]
    released: ReleasedVariants | None = None
    notes: list[str] = field(default_factory=list)
    # a dataset cut to its first queries (snapbench run --limit): how many queries it had before
    limited_from: int | None = None

    @property
    def has_query_images(self) -> bool:
        """True when every query names an image file and all of them exist."""
        return _all_exist([q.image for q in self.queries])

    @property
    def has_gallery_images(self) -> bool:
        """True when every gallery item names an image file and all of them exist."""
        return _all_exist([g.image for g in self.gallery])

    @property
    def has_ground_truth(self) -> bool:
        """False only for a dataset loaded without any ground truth (no qrels at all)."""
        return bool(self.qrels)

    def sides(self, modalities: Collection[str] = SIDES, encoder: str = "?") -> Sides:
        """The query and gallery sides a run of an encoder of ``modalities`` can encode, and why the
        others cannot: the one rule of the dataset's notes and of ``snapbench run``'s plan.

        A query side exists when some query has it (a query whose image file is missing, or that has no
        question, is left out of every state of a run that reads that side: each mode compares the same
        queries); the gallery is fixed, so a gallery side exists only when every item has it.
        """
        q_images = sum(1 for q in self.queries if q.image is not None and Path(q.image).is_file())
        g_images = sum(1 for g in self.gallery if g.image is not None and Path(g.image).is_file())
        n_cap = sum(1 for g in self.gallery if g.caption)
        have = {"query image": q_images > 0, "gallery image": bool(self.gallery) and g_images == len(self.gallery),
                "query text": any(q.question for q in self.queries),
                "gallery text": bool(self.gallery) and n_cap == len(self.gallery)}
        reasons = {"query image": "the queries have no images",
                   "gallery image": "the gallery has no images" if g_images == 0 else
                   f"{len(self.gallery) - g_images} of {len(self.gallery)} gallery image files are missing",
                   "query text": "the queries have no questions",
                   "gallery text": "the gallery has no captions" if n_cap == 0 else
                   f"{len(self.gallery) - n_cap} gallery items have no caption"}
        why: dict[str, str] = {}
        for key, ok in have.items():
            side = key.split()[1]
            no_encoder = None if side in modalities else f"the encoder {encoder} encodes no {side}s"
            if not ok or no_encoder:
                why[key] = " and ".join(r for r in (None if ok else reasons[key], no_encoder) if r)
        query = frozenset(k.split()[1] for k in have if k.startswith("query") and k not in why)
        gallery = frozenset(k.split()[1] for k in have if k.startswith("gallery") and k not in why)
        return Sides(query, gallery, why)

    @property
    def available_paths(self) -> tuple[str, ...]:
        """The similarity paths (of :data:`snapbench.core.targets.PATHS`) whose inputs are all present (:func:`snapbench.core.targets.plan_targets`)."""
        sides = self.sides()
        return plan_targets(sides.query, sides.gallery).available

    @property
    def runnable_modes(self) -> tuple[str, ...]:
        """The retrieval modes (their SnapBench labels, :data:`snapbench.core.targets.MODE_LABELS`) whose paths are all available (:func:`snapbench.core.targets.plan_targets`)."""
        sides = self.sides()
        return tuple(MODE_LABELS[m] for m in plan_targets(sides.query, sides.gallery).modes)

    @property
    def query_ids(self) -> list[str]:
        return [q.id for q in self.queries]

    @property
    def gallery_ids(self) -> list[str]:
        return [g.id for g in self.gallery]


def _limit_note(kept: int, total: int, limit: int) -> str:
    """The note that says a run saw only part of its dataset (recorded in run.json, so it names the
    flag as the command line spells it; the terminal summary words it as a line of its own from
    run.json's ``limit``: :mod:`snapbench.render.terminal`)."""
    return f"only the first {kept} of {total} queries (--limit {limit}): a quick look, not the dataset's result"


def limit_queries(dataset: Any, limit: int | None) -> Any:
    """``dataset`` cut to its first ``limit`` queries (their qrels only), with :func:`_limit_note` among
    its notes and :attr:`~snapbench.data.Dataset.limited_from` set; unchanged when ``limit`` is None.
    A limit at or above the number of queries keeps them all: the run is the dataset's result, so no
    cut is recorded (``limited_from`` stays None, no warning anywhere) and a plain note says that the
    limit kept every query (the user asked for a cut and must see that none was needed)."""
    if limit is None:
        return dataset
    total = len(dataset.queries)
    if int(limit) >= total:
        note = f"--limit {int(limit)} keeps all {total} queries of the dataset: nothing was cut"
        return dataclasses.replace(dataset, notes=[*dataset.notes, note])
    kept = dataset.queries[: int(limit)]
    ids = {q.id for q in kept}
    qrels = {q: rel for q, rel in dataset.qrels.items() if q in ids} if dataset.qrels else dataset.qrels
    note = _limit_note(len(kept), total, int(limit))
    return dataclasses.replace(dataset, queries=list(kept), qrels=qrels, notes=[*dataset.notes, note],
                               limited_from=total)
