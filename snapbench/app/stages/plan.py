"""Stage 1, plan: which sides, modes, conditions and variant sources a run of one encoder needs.

:func:`plan_run` (dataset + encoder + options -> :class:`RunPlan`) decides before any work, with the
one rule of :func:`snapbench.core.targets.plan_targets`; after the embeddings exist, the run stage
restricts the plan through the same function once the embedding sizes are known (image and text
embeddings of different sizes have no cross-modal paths, hence no MOOR).
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from ...core.conditions import Condition
from ...core.errors import ConfigError, InputError, arg
from ...core.targets import (
    DEFAULT_RUN_BASELINES,
    MODES,
    PATH_SIDES,
    TargetPlan,
    baseline_target,
    needs_paths,
    normalize_mode,
    plan_targets,
    query_sides,
)
from ...data.model import Sides
from ...evaluate.stability import whole_gallery_notes
from .options import RunOptions

__all__ = ["RunPlan", "DataWarning", "grid_json", "image_source", "plan_run", "text_source"]


class DataWarning(UserWarning):
    """The data allow less than they seem to (e.g. every query image path is wrong): the run goes on."""


@dataclass
class RunPlan:
    """What one encoder's run evaluates: the mode plan, the conditions (clean first), the variant
    sources to encode (each once per query), the resolved severity grid, notes for the user, and the
    ids of the planned conditions left out because no evaluated mode reads that side of the query
    (``left_out``, possibly empty; ``None`` when the modes read both sides, so nothing can be left
    out).  With ``conditions`` it is the run's whole condition plan: ``snapbench compare`` tells a
    text-only run of the same plan from a run of other conditions by it."""

    sides: Sides
    modes: TargetPlan
    conditions: list[Condition]
    image_sources: tuple[str, ...]
    text_sources: tuple[str, ...]
    grid: Mapping[str, Any]
    notes: list[str] = field(default_factory=list)
    left_out: list[str] | None = None

    @property
    def condition_ids(self) -> list[str]:
        return [c.id for c in self.conditions]

    @property
    def grid_json(self) -> dict[str, dict[str, dict[str, Any]]]:
        return grid_json(self.grid)


def grid_json(grid: Mapping[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """A resolved grid as run.json records it: ``{operator: {"s1": params, ...}}``, sorted."""
    return {op: {f"s{s}": dict(v) for s, v in sorted(levels.items())} for op, levels in sorted(grid.items())}


def image_source(cond: Condition) -> str:
    """The variant whose image a condition's query shows: ``clean`` or its image part."""
    return cond.image_part.id if "image" in cond.sides else "clean"


def text_source(cond: Condition) -> str:
    """The variant whose question a condition's query asks: ``clean`` or its text part."""
    return cond.text_part.id if "text" in cond.sides else "clean"


def _missing_files(paths: list[Path | None]) -> tuple[int, int, Path | None]:
    """(named, found, first named but missing) over the image paths of queries or gallery items."""
    named = [p for p in paths if p is not None]
    found = [Path(p).is_file() for p in named]
    first = next((p for p, ok in zip(named, found) if not ok), None)
    return len(named), sum(found), first


def _available_sides(dataset: Any, encoder: Any, requested: Sequence[str] | None = None) -> Sides:
    """Which query sides and gallery sides can be encoded, and why the others cannot: the dataset's
    rule (:meth:`snapbench.data.Dataset.sides`), after the run's own refusals.  The gallery is fixed, so
    its images are all or nothing: some missing is an error naming them when the run would read them
    (an encoder of images and a requested mode -- ``requested``, default all -- that compares gallery
    images); a text-only run goes on without them.  When image paths are named but none of the files
    exists, the run goes on without that side and a :class:`DataWarning` says so.
    """
    mods = set(getattr(encoder, "modalities", {"image", "text"}))
    who = getattr(encoder, "name", "?")
    q_named, q_found, q_first = _missing_files([q.image for q in dataset.queries])
    g_named, g_found, g_first = _missing_files([g.image for g in dataset.gallery])
    modes = list(MODES) if requested is None else [normalize_mode(m, param="modes") for m in requested]
    reads_gallery_images = "image" in mods and any(PATH_SIDES[p][1] == "image" for m in modes for p in MODES[m])
    if 0 < g_found < len(dataset.gallery) and reads_gallery_images:
        missing = [str(g.image) if g.image is not None else f"(item {g.id!r} names no image)"
                   for g in dataset.gallery if g.image is None or not Path(g.image).is_file()]
        raise InputError(
            f"{len(missing)} of {len(dataset.gallery)} gallery image files are missing (the gallery is fixed: every item "
            f"needs its image for the image modes; {arg('modes')} T2T runs without them): {', '.join(missing[:5])}"
            f"{' ...' if len(missing) > 5 else ''}")
    for what, named, found, first in (("query", q_named, q_found, q_first), ("gallery", g_named, g_found, g_first)):
        if named and not found and "image" in mods:
            warnings.warn(f"none of the {named} {what} image files exists (first: {first}): modes that need "
                          f"{what} images are skipped", DataWarning, stacklevel=3)
    return dataset.sides(mods, who)


def _released_space(dataset: Any) -> Any:
    """The conditions a dataset's released variants cover (a :class:`~snapbench.core.conditions.ConditionSpace`)."""
    from ...core.conditions import ConditionSpace

    rel = dataset.released
    if rel is None:
        raise ConfigError(f"dataset {dataset.name!r} ({dataset.format}) ships no variants; use generated variants",
                          param="variants")
    return ConditionSpace.from_parts({key for per in rel.images.values() for key in per},
                                     {op for per in rel.texts.values() for op in per},
                                     source=f"the variants dataset {dataset.name!r} ships")


def run_conditions(options: RunOptions, dataset: Any, *, use_query_images: bool, use_query_text: bool,
                   grid: Mapping[str, Any]) -> tuple[list[Condition], list[str], list[str]]:
    """The conditions of the run, in order (clean first), notes on those left out and their ids: the
    corrupt side's one builder (:func:`snapbench.corruptions.plan_conditions`), over the released
    variants' conditions when the run evaluates those."""
    from ...corruptions import plan_conditions

    want_joint = options.joint if options.joint is not None else options.conditions is None
    space = _released_space(dataset) if options.variants == "released" else None
    try:
        conds = plan_conditions(options.conditions, joint=want_joint, grid=grid, space=space).conditions
    except ConfigError as exc:
        if exc.param == "grid" and exc.path is None and isinstance(options.grid, (str, os.PathLike)):
            raise ConfigError(exc.problem, path=options.grid) from None  # name the grid file
        raise
    read = {side for side, used in (("image", use_query_images), ("text", use_query_text)) if used}
    kept = [c for c in conds if c.sides <= read]
    notes = []
    left_out = [c.id for c in conds if c not in kept]
    if left_out:
        kinds = sorted({c.kind for c in conds if c not in kept})
        notes.append(f"{len(conds) - len(kept)} {'/'.join(kinds)} condition(s) left out: no evaluated mode reads that "
                     "side of the query")
    return kept, notes, left_out


def _mode_notes(modes: TargetPlan) -> list[str]:
    """What the run leaves out and why, each reason said once: the skipped modes grouped by their
    reasons (a text-only encoder: one "the encoder ... encodes no images" for four modes), then MOOR
    and the fusion baselines with only the reasons not said yet."""
    skipped = [m for m in modes.skipped if m != "MOOR"]
    notes = []
    said: set[str] = set()
    if skipped:
        groups: dict[tuple[str, ...], list[str]] = {}
        for m in skipped:
            groups.setdefault(modes.reasons[m], []).append(m)
        notes.append("modes skipped: " + "; ".join(
            ", ".join(f"{m} ({needs_paths(modes.lacking[m])})" for m in ms) + (f": {' and '.join(why)}" if why else "")
            for why, ms in groups.items()))
        said = {r for why in groups for r in why}
    if not modes.moor:
        fused = list(map(baseline_target, DEFAULT_RUN_BASELINES))
        rest = [r for r in modes.reasons["MOOR"] if r not in said]
        notes.append(f"MOOR and the fusion baselines ({', '.join(fused)}) skipped: they need all four paths (query and "
                     f"gallery images and texts, and an encoder for both); missing: {', '.join(modes.lacking['MOOR'])}"
                     + (f" ({' and '.join(rest)})" if rest else ""))
    return notes


def plan_run(dataset: Any, encoder: Any, options: RunOptions) -> RunPlan:
    """The :class:`RunPlan` of ``encoder`` on ``dataset`` (ConfigError when no mode can run)."""
    from ...corruptions import resolve_grid

    sides = _available_sides(dataset, encoder, options.modes)
    modes = plan_targets(sides.query, sides.gallery, options.modes, why=sides.why)
    if not modes.targets:
        raise ConfigError("no retrieval mode can run: " + "; ".join(dict.fromkeys(sides.why.values()) or
                                                                     modes.skipped.values()))
    read = query_sides(modes.paths)
    use_img, use_txt = "image" in read, "text" in read
    table = resolve_grid(options.grid)
    conds, cnotes, left_out = run_conditions(options, dataset, use_query_images=use_img, use_query_text=use_txt,
                                             grid=table)
    if options.severity_target is not None:
        from ...corruptions.variants import checked_target

        checked_target(options.severity_target, conds, table)  # one target per grid level
    img_sources = tuple(dict.fromkeys(image_source(c) for c in conds)) if use_img else ()
    txt_sources = tuple(dict.fromkeys(text_source(c) for c in conds)) if use_txt else ()
    notes = (list(getattr(dataset, "notes", [])) + _mode_notes(modes) + cnotes
             + whole_gallery_notes(len(getattr(dataset, "gallery", ()) or ()), options.ks))
    return RunPlan(sides, modes, conds, img_sources, txt_sources, table, notes,
                   None if use_img and use_txt else left_out)
