"""The in-memory form of a benchmark dataset, whatever file layout it came from.

A :class:`Dataset` is what every loader in :mod:`snapbench.data` returns: queries (the same
:class:`~snapbench.corruptions.QueryRecord` that ``snapbench corrupt`` reads), a fixed gallery,
graded qrels, the variants the release ships (if any) and human-readable notes.  Image paths are
kept even when the file is absent so a user can see where an image was expected; the
``has_*_images`` properties say whether retrieval modes that need pixels can run.

``snapbench run --limit N``: a quick look at the first N queries before a long run.

The cut is made once, on the loaded dataset, so that everything downstream (corruption, encoding,
evaluation, the report) sees an ordinary, smaller dataset.  It is stated on every output: the
dataset's notes (printed by the run and recorded in run.json's ``notes``, which the report shows
next to the numbers), run.json's ``limit`` and the table printed after the run.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.records import QueryRecord
from ..core.targets import MODE_LABELS, MODES, PATHS, plan_targets

__all__ = ['MODE_PATHS', 'PATHS', 'Dataset', 'GalleryItem', 'ReleasedVariants', 'limit_queries']

#: The retrieval modes (SnapBench names) and the paths each one needs, from :mod:`snapbench.core.targets`;
#: used to tell users which modes a dataset supports.
MODE_PATHS: dict[str, tuple[str, ...]] = {MODE_LABELS[m]: tuple(w) for m, w in MODES.items()}


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
    def has_questions(self) -> bool:
        return bool(self.queries) and all(q.question for q in self.queries)

    @property
    def has_captions(self) -> bool:
        return bool(self.gallery) and all(g.caption for g in self.gallery)

    @property
    def has_ground_truth(self) -> bool:
        """False only for a dataset loaded without any ground truth (no qrels at all)."""
        return bool(self.qrels)

    @property
    def query_sides(self) -> frozenset[str]:
        """The sides every query has (``"image"``: all image files exist; ``"text"``: all have a question)."""
        return frozenset(s for s, ok in (("image", self.has_query_images), ("text", self.has_questions)) if ok)

    @property
    def gallery_sides(self) -> frozenset[str]:
        """The sides every gallery item has (``"image"`` / ``"text"``: a caption)."""
        return frozenset(s for s, ok in (("image", self.has_gallery_images), ("text", self.has_captions)) if ok)

    @property
    def available_paths(self) -> tuple[str, ...]:
        """The similarity paths (of :data:`PATHS`) whose inputs are all present (:func:`snapbench.core.targets.plan_targets`)."""
        return plan_targets(self.query_sides, self.gallery_sides).available

    @property
    def runnable_modes(self) -> tuple[str, ...]:
        """The retrieval modes (keys of :data:`MODE_PATHS`) whose paths are all available (:func:`snapbench.core.targets.plan_targets`)."""
        return tuple(MODE_LABELS[m] for m in plan_targets(self.query_sides, self.gallery_sides).modes)

    @property
    def query_ids(self) -> list[str]:
        return [q.id for q in self.queries]

    @property
    def gallery_ids(self) -> list[str]:
        return [g.id for g in self.gallery]


def _limit_note(kept: int, total: int, limit: int) -> str:
    """The one sentence that says a run saw only part of its dataset (recorded in run.json, so it
    names the flag as the command line spells it)."""
    return f"only the first {kept} of {total} queries (--limit {limit}): a quick look, not the dataset's result"


def limit_queries(dataset: Any, limit: int | None) -> Any:
    """``dataset`` cut to its first ``limit`` queries (their qrels only), with :func:`_limit_note` among
    its notes and :attr:`~snapbench.data.Dataset.limited_from` set; unchanged when ``limit`` is None.
    A limit at or above the number of queries keeps them all and says so too (the user asked for a
    cut and must see that none was needed)."""
    if limit is None:
        return dataset
    total = len(dataset.queries)
    kept = dataset.queries[: int(limit)]
    ids = {q.id for q in kept}
    qrels = {q: rel for q, rel in dataset.qrels.items() if q in ids} if dataset.qrels else dataset.qrels
    note = _limit_note(len(kept), total, int(limit))
    return dataclasses.replace(dataset, queries=list(kept), qrels=qrels, notes=[*dataset.notes, note],
                               limited_from=total)
