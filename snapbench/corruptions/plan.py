"""What a run produces: the severity grid it uses and the ordered list of its conditions.

Everything here is checked before any query is processed, so a typo in a condition id or a grid
file fails the run at once (with the closest valid names) instead of becoming one skip per query.

:func:`plan_conditions` is the one call that turns (requested ids, joint, grid) into a run's
conditions: ``corrupt``, ``run``, ``preview``, ``conditions`` and the streaming APIs use it.  The
ordering rules live in :func:`snapbench.core.conditions.build_conditions`; this module supplies the
space of the registered operators at the grid's severities (or takes another space, such as a
dataset's released variants).  Joint conditions bring their parts: additivity (the
super-additivity gap of ``joint/A+B/sN``) needs ``img/A/sN`` and ``txt/B`` of the same queries,
so a plan that names a joint condition without them gets them added
(:attr:`~snapbench.core.conditions.ConditionPlan.added_parts` says which).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

from ..core.conditions import Condition, ConditionPlan, ConditionSpace, build_conditions
from ..core.errors import ConfigError
from ..core.seeding import derive_generator
from .image import default_grid, get_image_operator, image_aliases, image_operators, load_grid, merge_grid
from .plugins import IMAGE_GROUP, TEXT_GROUP, plugin_failures
from .text import text_aliases, text_operators

__all__ = ["ConditionPlan", "generated_space", "grid_json", "plan_conditions", "plan_grid", "resolve_conditions",
           "resolve_grid"]

Table = Mapping[str, Mapping[int, Mapping[str, Any]]]
GridArg = str | os.PathLike | Mapping[str, Any] | None


def resolve_grid(grid: GridArg = None) -> dict[str, dict[int, dict[str, Any]]]:
    """The full severity table for a run: defaults, updated by a grid file path or an override mapping.

    Operator names the override gives must be registered (typos raise :class:`ConfigError` with
    the closest names, naming the file); see :func:`~snapbench.corruptions.image.merge_grid`.
    """
    if grid is None:
        return default_grid()
    if isinstance(grid, (str, os.PathLike)):
        return load_grid(grid, base=default_grid())
    return merge_grid(default_grid(), grid)


def plan_grid(grid: GridArg) -> GridArg:
    """A user's ``grid`` (a file, an override mapping or None) as :func:`plan_conditions` takes it: a
    file stays a path (so errors about its levels name it), an override is merged over the defaults."""
    return grid if grid is None or isinstance(grid, (str, os.PathLike)) else resolve_grid(grid)


def grid_json(table: Table) -> dict[str, dict[str, Any]]:
    """The grid as written to run.json: ``{operator: {"s1": params, ...}}``, sorted."""
    return {op: {f"s{s}": dict(table[op][s]) for s in sorted(table[op])} for op in sorted(table)}


def generated_space(table: Table) -> ConditionSpace:
    """The conditions that can be generated: every registered operator at the severities of ``table``."""
    img_ops = list(image_operators())
    missing = [op for op in img_ops if op not in table]
    if missing:
        # Every registered operator has levels in default_grid(); a hand-made table lacking some
        # would otherwise drop them from every run without a word.
        raise ConfigError(f"the severity grid has no levels for image operator(s) {', '.join(missing)}; "
                          "build it with resolve_grid() (defaults + your overrides)", param="grid")
    return ConditionSpace({op: sorted(table[op]) for op in img_ops}, list(text_operators()),
                          image_aliases=image_aliases(), text_aliases=text_aliases(),
                          unavailable={**plugin_failures(TEXT_GROUP), **plugin_failures(IMAGE_GROUP)})


def plan_conditions(
    conditions: Iterable[str | Condition] | None = None,
    *,
    joint: bool = False,
    grid: GridArg = None,
    space: ConditionSpace | None = None,
) -> ConditionPlan:
    """The conditions of a run, in run order, with the joint parts added and the resolved grid.

    ``grid``: a grid file (merged over the defaults; errors name the file), an already resolved
    table (:func:`resolve_grid`), or ``None`` for the defaults.  ``space``: the conditions that
    can exist (default: the registered operators at the grid's severities, see
    :func:`generated_space`); pass another one (e.g.
    ``ConditionSpace.from_parts(...)`` for a dataset's released variants) to plan a run that
    generates nothing -- its grid levels are then not checked.  Ordering and validation rules:
    :func:`snapbench.core.conditions.build_conditions`.  For generated variants every image level the
    plan uses is tried once on a stand-in frame, so a level its operator rejects (a typo, an
    out-of-range value) is a :class:`ConfigError` before any query is processed.
    """
    path = grid if isinstance(grid, (str, os.PathLike)) else None
    table = load_grid(path, base=default_grid()) if path is not None else (default_grid() if grid is None else grid)
    plan = build_conditions(conditions, joint=joint, space=space or generated_space(table))
    if space is None:
        _check_grid_levels(plan.conditions, table, path)
    return dataclasses.replace(plan, grid=table)


def resolve_conditions(
    conditions: Iterable[str | Condition] | None = None,
    *,
    joint: bool = False,
    grid: GridArg = None,
) -> list[Condition]:
    """The conditions of :func:`plan_conditions` (``clean`` first).

    ``conditions=None`` means clean + every registered image operator at every severity of the grid
    + every registered text operator (54 states by default); ``joint=True`` adds the paper's 18
    joint conditions.  Explicit ids may include any ``joint/<image op>+<text op>/s<N>`` pair; its
    image and text parts are added (before it) when not listed, since additivity needs them.
    Unknown ids raise :class:`ConfigError` naming the id, the closest valid ids, and the valid
    forms; so does a grid level of the chosen conditions that its operator rejects.
    """
    return plan_conditions(conditions, joint=joint, grid=grid).conditions


_CHECKED_LEVELS: set[tuple[str, int, int, str]] = set()


def _check_grid_levels(conds: list[Condition], table: Table, path: str | os.PathLike | None) -> None:
    """Run each image level's ``sample`` once on a stand-in frame so that a level the operator rejects
    (unknown key, bad value) fails the run up front instead of becoming one skip per query."""
    for op, sev in dict.fromkeys((c.image_operator, c.severity) for c in conds if c.image_operator is not None):
        sample = get_image_operator(op).sample
        level = table[op][sev]
        # iter_variants resolves per query: check each distinct level once per process
        memo = (op, sev, id(sample), json.dumps(level, sort_keys=True, default=repr))
        if memo in _CHECKED_LEVELS:
            continue
        try:
            sample(derive_generator("grid-check", op, sev), level, (480, 640))
        except (ValueError, TypeError, KeyError) as exc:
            problem = exc.problem if isinstance(exc, ConfigError) else str(exc)
            raise ConfigError(f"severity grid entry for {Condition.image(op, sev).id} is invalid: {problem}",
                              path=path, param=None if path is not None else "grid") from None
        _CHECKED_LEVELS.add(memo)
