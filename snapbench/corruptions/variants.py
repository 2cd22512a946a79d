"""Variants of one query, in memory: the generator shared by the batch run, the streaming API and
the preview contact sheet.

:func:`generate_variants` is the one place that turns (image, question, key, entity, seed) and a
list of conditions into :class:`Variant` objects (or :class:`Skip` records for conditions that
cannot be produced).  Each image part ``(operator, severity)`` and each text part is computed once
per query and shared by the conditions that use it (a joint condition reuses its image and text
conditions' parts), so a joint variant is byte-identical to its single parts.  (One caller decides
some skips before it: the torch datasets of :mod:`snapbench.interop.torch` list their
(query, condition) pairs up front, without reading images, and leave out a text condition whose
operator fails on the question, giving the operator's own message as the reason.)

With ``measure``, each part's measured strength (:mod:`.measure`) is computed once with it and
carried by the variant (:attr:`Variant.measured`, the manifest's ``"measured"``); with a
:class:`~.target.SeverityTarget`, each image part is searched to its level's target
(:func:`~.target.target_variant`) and the outcome carried too (:attr:`Variant.target`).
Measuring only observes: the pixels are those of an unmeasured run.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..core.conditions import Condition
from ..core.errors import ConfigError, ImageLoadError, InputError, in_words
from ..core.jsonable import to_json
from ..core.records import QueryRecord
from .image import corrupt_image_with_params
from .image.base import sample_image_params
from .io import DEFAULT_MAX_PIXELS, load_image
from .manifest import load_manifest
from .measure import ImageReference, image_reference, measure_image, measure_text
from .plan import plan_conditions, plan_grid, resolve_grid
from .target import SeverityTarget, parse_severity_target, target_variant
from .text import corrupt_text_with_params

__all__ = ["Skip", "Variant", "checked_target", "generate_variants", "iter_variants", "record_variants",
           "stream_corruptions"]

Table = Mapping[str, Mapping[int, Mapping[str, Any]]]


@dataclass(frozen=True)
class Variant:
    """One condition of one query, as a complete query.

    ``image`` is the image an encoder should see (the clean image for text conditions) and
    ``question`` the question (the clean one for image conditions); either is ``None`` only when
    the query has no image / no question.  ``image_from`` / ``text_from`` name the single condition
    whose image / question this variant shares (e.g. a text condition's image comes from
    ``"clean"``, ``joint/mosaic+sent_add/s2``'s from ``"img/mosaic/s2"``), so an encoder can cache
    embeddings.  ``params`` holds ``"image"`` and/or ``"text"``: the parameters actually applied.
    ``measured`` is the measured strength as the manifest records it (image keys ``psnr``, ``ssim``,
    ``changed``, ``area_kept``; text keys ``char_edits``, ``word_edits``, ``entity_intact``; a joint
    variant has both; None for ``clean`` or when not measured); ``target`` the outcome of a severity
    target's search (``metric``, ``value``, ``achieved``, ``reached``, ``knob``, ``knob_value``).
    """

    condition: str
    kind: str
    image: np.ndarray | None
    question: str | None
    params: dict[str, Any]
    image_from: str | None = None
    text_from: str | None = None
    measured: dict[str, Any] | None = None
    target: dict[str, Any] | None = None


@dataclass(frozen=True)
class Skip:
    """A condition of one query that could not be produced, and why (what ``skips.jsonl`` records);
    ``condition`` None: the whole query (its image could not be read)."""

    condition: str | None
    reason: str

    def record(self, query_id: str) -> dict[str, Any]:
        """The skip as ``skips.jsonl`` (and every list of skips) holds it: ``{"id", "condition", "reason"}``."""
        return {"id": query_id, "condition": self.condition, "reason": self.reason}


class _Parts:
    """The image parts ``(operator, severity)`` and text parts of one query, each computed once and
    shared by the conditions that use it; a failure is kept as its reason (a string).  An image part
    is (image, params, measured, target), a text part (question, params, measured)."""

    def __init__(self, image: np.ndarray | None, question: str | None, *, key: str, entity: str | None, seed: int,
                 grid: Table, conditions: Sequence[Condition], measure: bool = False,
                 target: SeverityTarget | None = None) -> None:
        self.image, self.question, self.key, self.entity, self.seed, self.grid = image, question, key, entity, seed, grid
        self.measure, self.target = measure, target
        self._ref: ImageReference | None = None
        self.images: dict[tuple[str, int], tuple[np.ndarray, dict, dict | None, dict | None] | str] = {}
        self.texts: dict[str, tuple[str, dict, dict | None] | str] = {}
        self.uses = Counter((c.image_operator, c.severity) for c in conditions if "image" in c.sides)

    @property
    def reference(self) -> ImageReference:
        if self._ref is None:  # the clean side of every comparison of this query, once
            self._ref = image_reference(self.image)
        return self._ref

    def _make_image(self, op: str, sev: int) -> tuple[np.ndarray, dict, dict | None, dict | None]:
        if self.target is None:
            res = corrupt_image_with_params(self.image, op, sev, seed=self.seed, key=self.key, grid=self.grid)
            measured = (measure_image(self.reference, res.image, operator=res.operator, params=res.params).to_json()
                        if self.measure else None)
            return res.image, to_json(res.params), measured, None
        record, image, params = sample_image_params(self.image, op, sev, seed=self.seed, key=self.key, grid=self.grid)
        t = self.target
        found = target_variant(record, image, params, t.value_at(sev), t.metric, tol=t.tol, max_evals=t.max_evals,
                               reference=self.reference)
        return found.image, to_json(found.params), found.strength.to_json() if self.measure else None, found.to_json()

    def image_part(self, op: str, sev: int) -> tuple[np.ndarray, dict, dict | None, dict | None] | str:
        if (op, sev) not in self.images:
            try:
                self.images[(op, sev)] = self._make_image(op, sev)
            except Exception as exc:  # noqa: BLE001 - one failing operator must not stop the query
                self.images[(op, sev)] = f"image operator {op} s{sev} failed: {type(exc).__name__}: {exc}"
        return self.images[(op, sev)]

    def text_part(self, op: str) -> tuple[str, dict, dict | None] | str:
        if op not in self.texts:
            try:
                res = corrupt_text_with_params(self.question, op, entity=self.entity, seed=self.seed, key=self.key)
                measured = (measure_text(self.question, res.text, res.params.get("entity")).to_json()
                            if self.measure else None)
                self.texts[op] = (res.text, to_json(dict(res.params)), measured)
            except NotImplementedError:
                self.texts[op] = f"text operator {op} is not implemented"
            except ValueError as exc:  # EntityNotFoundError / TextCorruptionError (both ValueError)
                self.texts[op] = f"text operator {op}: {exc}"
        return self.texts[op]

    def done(self, cond: Condition) -> None:
        """The consumer is done with ``cond``'s variant: drop its image part after its last use."""
        if "image" in cond.sides:
            part = (cond.image_operator, cond.severity)
            self.uses[part] -= 1
            if self.uses[part] <= 0:
                self.images.pop(part, None)

    def variant(self, cond: Condition) -> Variant | Skip:
        cid = cond.id
        image, question = self.image, self.question
        if cond.kind == "clean":
            return Variant(cid, "clean", image, question, {}, "clean" if image is not None else None,
                           "clean" if question is not None else None)
        if "image" in cond.sides and image is None:
            return Skip(cid, "query has no image")
        if "text" in cond.sides and question is None:
            return Skip(cid, "query has no question")
        params: dict[str, Any] = {}
        measured: dict[str, Any] | None = {} if self.measure else None
        target = None
        img_from = "clean" if image is not None else None
        txt_from = "clean" if question is not None else None
        if "image" in cond.sides:
            part = self.image_part(cond.image_operator, cond.severity)
            if isinstance(part, str):
                return Skip(cid, part)
            image, params["image"], img_measured, target = part
            img_from = cond.image_part.id
            if measured is not None:
                measured.update(img_measured or {})
        if "text" in cond.sides:
            tpart = self.text_part(cond.text_operator)
            if isinstance(tpart, str):
                return Skip(cid, tpart)
            question, params["text"], txt_measured = tpart
            txt_from = cond.text_part.id
            if measured is not None:
                measured.update(txt_measured or {})
        return Variant(cid, cond.kind, image, question, params, img_from, txt_from, measured, target)


def checked_target(spec: str | SeverityTarget | None, conditions: Iterable[Condition],
                   grid: Table | None = None) -> SeverityTarget | None:
    """``spec`` parsed (:func:`~.target.parse_severity_target`) and checked against the run's
    conditions: every image part's severity needs a target value, and with the resolved ``grid``
    there must be exactly one value per level the grid gives the run's image operators (its highest
    severity among them; :class:`ConfigError` otherwise)."""
    target = parse_severity_target(spec)
    if target is None:
        return None
    conditions = list(conditions)
    ops = {c.image_operator for c in conditions if "image" in c.sides and c.image_operator}
    levels = [int(sev) for op in ops for sev in (grid or {}).get(op, {})]
    if levels:
        target.check_levels(max(levels))
    for c in conditions:
        if "image" in c.sides:
            target.value_at(c.severity)
    return target


def _resolved(conditions: Sequence[Condition] | None, grid: Table | None) -> tuple[Sequence[Condition], Table]:
    """generate_variants' defaults (the 54 states, the default grid) and its check that ``conditions``
    are Condition objects (a bare TypeError from deep inside otherwise)."""
    table = resolve_grid(None) if grid is None else grid
    if conditions is None:
        return plan_conditions(None, grid=table).conditions, table
    if isinstance(conditions, (str, Condition)) or not isinstance(conditions, Iterable):
        raise ConfigError(f"must be a list of Condition objects (plan_conditions(...).conditions), got "
                          f"{type(conditions).__name__}", param="conditions")
    bad = [c for c in conditions if not isinstance(c, Condition)]
    if bad:
        raise ConfigError(f"must be Condition objects (plan_conditions(...).conditions; iter_variants takes condition "
                          f"ids), got {bad[0]!r}", param="conditions")
    return conditions, table


def generate_variants(
    image: np.ndarray | None,
    question: str | None,
    *,
    key: str,
    entity: str | None,
    seed: int,
    conditions: Sequence[Condition] | None = None,
    grid: Table | None = None,
    measure: bool = False,
    target: SeverityTarget | None = None,
) -> Iterator[Variant | Skip]:
    """Yield a :class:`Variant` or a :class:`Skip` for each of ``conditions``, in order.

    ``conditions`` are :class:`~snapbench.core.conditions.Condition` objects and ``grid`` a resolved
    severity table, as :func:`~.plan.plan_conditions` gives them (``plan.conditions``,
    ``plan.grid``): this is the low-level generator, it never raises for one condition -- a failing
    operator, a missing entity or a query without image / question becomes a Skip naming the
    reason.  ``conditions=None`` means the 54 states of :func:`~.plan.plan_conditions` (clean, 45
    image, 8 text) and ``grid=None`` the default grid; anything else than Condition objects (condition
    ids: use :func:`iter_variants`) is a :class:`~snapbench.core.errors.ConfigError`.  ``key`` is the query id: with ``seed`` it keys all randomness, so the variants equal
    those ``run_corruption`` writes for that id.  ``measure`` fills :attr:`Variant.measured`;
    ``target`` (a parsed :class:`~.target.SeverityTarget`) searches each image part to its level's
    target and fills :attr:`Variant.target`.

    Memory: an image part is kept only until the last condition that uses it (a query's 45
    variants of a 12 Mpx photo would hold ~1.6 GB); a consumer should finish with a variant before
    asking for the next.
    """
    conditions, grid = _resolved(conditions, grid)
    parts = _Parts(image, question, key=str(key), entity=entity, seed=seed, grid=grid, conditions=conditions,
                   measure=measure, target=target)
    prev: Condition | None = None
    for cond in conditions:
        if prev is not None:  # resumed: the consumer is done with the previous condition's variant
            parts.done(prev)
        prev = cond
        yield parts.variant(cond)


def record_variants(rec: QueryRecord, *, seed: int, conditions: Sequence[Condition], grid: Table, max_pixels: int,
                    measure: bool = False, target: SeverityTarget | None = None) -> Iterator[Variant | Skip]:
    """:func:`generate_variants` of a manifest record, its image loaded with :func:`~.io.load_image`
    (``max_pixels``): an image that cannot be read is one :class:`Skip` of the whole query (condition
    None) and nothing else.  What ``corrupt`` writes and :func:`stream_corruptions` yields."""
    image = None
    if rec.image is not None:
        try:
            image = load_image(rec.image, max_pixels=max_pixels)
        except ImageLoadError as exc:
            yield Skip(None, exc.render(in_words))
            return
    yield from generate_variants(image, rec.question, key=rec.id, entity=rec.entity, seed=seed, conditions=conditions,
                                 grid=grid, measure=measure, target=target)


def iter_variants(
    image: np.ndarray | None,
    question: str | None = None,
    *,
    key: str,
    entity: str | None = None,
    seed: int = 0,
    conditions: Iterable[str | Condition] | None = None,
    joint: bool = False,
    grid: str | os.PathLike | Mapping[str, Any] | None = None,
    errors: Literal["raise", "skip"] = "raise",
    measure: bool = False,
    severity_target: str | SeverityTarget | None = None,
) -> Iterator[Variant]:
    """Yield the variants of one query in memory, without touching the disk.

    ``image`` is an HxWx3 uint8 RGB array (e.g. from :func:`~snapbench.corruptions.io.load_image`),
    ``key`` the query id (it keys all randomness, so variants equal those of
    :func:`~snapbench.app.corrupt.run_corruption` for the same id and seed).
    ``conditions``/``joint``/``grid`` (a grid file or an override mapping) as in
    :func:`~.plan.plan_conditions` (a joint condition brings its parts); ``clean`` comes first.  With
    ``errors="raise"`` a condition that cannot be produced (entity not found, no question...)
    raises :class:`~snapbench.core.errors.InputError`; with ``"skip"`` it is left out.  ``measure`` and
    ``severity_target`` (``"ssim=0.9,0.75,0.6"``) as in :func:`generate_variants`.
    """
    if image is None and question is None:
        raise InputError(f"query {key!r}: needs an image or a question")
    plan = plan_conditions(conditions, joint=joint, grid=plan_grid(grid))
    target = checked_target(severity_target, plan.conditions, plan.grid)
    for item in generate_variants(image, question, key=str(key), entity=entity, seed=seed, conditions=plan.conditions,
                                  grid=plan.grid, measure=measure, target=target):
        if isinstance(item, Skip):
            if errors == "raise":
                raise InputError(f"query {key!r}, condition {item.condition}: {item.reason}")
            continue
        yield item


def stream_corruptions(
    records: str | os.PathLike | Iterable[QueryRecord],
    *,
    seed: int = 0,
    conditions: Iterable[str | Condition] | None = None,
    joint: bool = False,
    grid: str | os.PathLike | Mapping[str, Any] | None = None,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    skips: list[dict[str, Any]] | None = None,
    measure: bool = False,
    severity_target: str | SeverityTarget | None = None,
) -> Iterator[tuple[QueryRecord, Variant]]:
    """Yield ``(record, variant)`` for every query of a manifest (path or records) and condition.

    Images are loaded with :func:`load_image`; nothing is written.  Queries whose image cannot be
    loaded and conditions that cannot be produced are skipped; pass a list as ``skips`` to collect
    ``{"id", "condition", "reason"}`` dicts (``condition`` None = the whole query), the same
    records ``run_corruption`` writes to ``skips.jsonl``.  ``measure`` and ``severity_target`` as in
    :func:`iter_variants`.
    """
    recs = load_manifest(records) if isinstance(records, (str, os.PathLike)) else records
    plan = plan_conditions(conditions, joint=joint, grid=plan_grid(grid))
    table, conds = plan.grid, plan.conditions
    target = checked_target(severity_target, conds, table)
    for rec in recs:
        for item in record_variants(rec, seed=seed, conditions=conds, grid=table, max_pixels=max_pixels,
                                    measure=measure, target=target):
            if isinstance(item, Skip):
                if skips is not None:
                    skips.append(item.record(rec.id))
                continue
            yield rec, item
