"""What a run produces: the severity grid it uses and the ordered list of its conditions.

Everything here is checked before any query is processed, so a typo in a condition id or a grid
file fails the run at once (with the closest valid names) instead of becoming one skip per query.

Joint conditions bring their parts: additivity (the super-additivity gap of ``joint/A+B/sN``)
needs ``img/A/sN`` and ``txt/B`` of the same queries, so a plan that names a joint condition
without them gets them added (:attr:`ConditionPlan.added_parts` says which).
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..conditions import JOINT_PAIRS, Condition, list_conditions, parse_condition
from ..errors import ConfigError
from ..seeding import derive_generator
from .image import (
    default_grid,
    get_image_operator,
    image_operators,
    load_grid,
    merge_grid,
)
from .text import text_operators

__all__ = ["ConditionPlan", "grid_json", "plan_conditions", "resolve_conditions", "resolve_grid"]

Table = Mapping[str, Mapping[int, Mapping[str, Any]]]


def resolve_grid(grid: str | os.PathLike | Mapping[str, Any] | None = None) -> dict[str, dict[int, dict[str, Any]]]:
    """The full severity table for a run: defaults, updated by a grid file path or an override mapping.

    Operator names the override gives must be registered (typos raise :class:`ConfigError` with
    the closest names); see :func:`~snapbench.corruptions.image.grid.merge_grid`.
    """
    if grid is None:
        return default_grid()
    if isinstance(grid, (str, os.PathLike)):
        return load_grid(grid, base=default_grid())
    return merge_grid(default_grid(), grid)


def grid_json(table: Table) -> dict[str, dict[str, Any]]:
    """The grid as written to run.json: ``{operator: {"s1": params, ...}}``, sorted."""
    return {op: {f"s{s}": dict(table[op][s]) for s in sorted(table[op])} for op in sorted(table)}


@dataclass(frozen=True)
class ConditionPlan:
    """The conditions of a run, in run order (``clean`` first), and the joint parts that were added."""

    conditions: list[Condition]
    added_parts: list[Condition]


def _operators(table: Table) -> tuple[list[str], list[str], dict[str, list[int]]]:
    img_ops = list(image_operators())
    missing = [op for op in img_ops if op not in table]
    if missing:
        # Every registered operator has levels in default_grid(); a hand-made table lacking some
        # would otherwise drop them from every run without a word.
        raise ConfigError(
            f"the severity grid has no levels for image operator(s) {', '.join(missing)}; "
            "build it with resolve_grid() (defaults + your overrides)"
        )
    txt_ops = list(text_operators())
    return img_ops, txt_ops, {op: sorted(table[op]) for op in img_ops}


def plan_conditions(
    conditions: Iterable[str | Condition] | None = None,
    *,
    joint: bool = False,
    grid: Table | None = None,
) -> ConditionPlan:
    """Validate and order the conditions of a run (see :func:`resolve_conditions`), reporting the
    joint parts added."""
    table = resolve_grid(None) if grid is None else grid
    img_ops, txt_ops, sevs = _operators(table)

    if conditions is None:
        pairs = [(i, t) for i, t in JOINT_PAIRS if i in img_ops and t in txt_ops]
        conds = list_conditions(
            joint=joint, image_operators=img_ops, text_operators=txt_ops, severities=sevs, joint_pairs=pairs
        )
        return ConditionPlan(_check_grid_levels(conds, table), [])

    valid_single = [c.id for c in list_conditions(image_operators=img_ops, text_operators=txt_ops, severities=sevs)]
    valid_joint = [
        Condition("joint", image_operator=i, text_operator=t, severity=s).id
        for i in img_ops
        for t in txt_ops
        for s in sevs[i]
    ]

    def problem(c: Condition) -> str | None:
        if c.image_operator is not None:
            if c.image_operator not in img_ops:
                return f"unknown image operator {c.image_operator!r}"
            if c.severity not in sevs[c.image_operator]:
                return f"image operator {c.image_operator!r} has no severity s{c.severity} (levels: {sevs[c.image_operator]})"
        if c.text_operator is not None and c.text_operator not in txt_ops:
            return f"unknown text operator {c.text_operator!r}"
        return None

    requested: list[Condition] = [Condition("clean")]
    for item in conditions:
        raw = item.id if isinstance(item, Condition) else str(item).strip()
        if not raw:
            continue
        try:
            cond = item if isinstance(item, Condition) else parse_condition(raw)
            why = problem(cond)
        except ValueError:
            cond, why = None, "not a condition id"
        if why is not None:
            close = difflib.get_close_matches(raw, valid_single + valid_joint, n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ConfigError(
                f"unknown condition {raw!r} ({why}){hint}\nvalid forms: clean, img/<op>/s<N>, txt/<op>, "
                f"joint/<image op>+<text op>/s<N>\nimage operators: {', '.join(img_ops) or '(none registered)'}\n"
                f"text operators: {', '.join(txt_ops)}\n(`snapbench conditions --joint` lists the ids)"
            )
        if cond not in requested:
            requested.append(cond)
    if joint:
        extra = [
            Condition("joint", image_operator=i, text_operator=t, severity=s)
            for i, t in JOINT_PAIRS
            if i in img_ops and t in txt_ops
            for s in sevs[i]
        ]
        requested += [c for c in extra if c not in requested]

    # Each joint condition's parts go right before it unless already planned earlier.
    wanted = set(requested)
    out: list[Condition] = []
    added: list[Condition] = []
    for cond in requested:
        if cond in out:
            continue
        if cond.kind == "joint":
            for part in (cond.image_part, cond.text_part):
                if part not in out:
                    out.append(part)
                    if part not in wanted:
                        added.append(part)
        out.append(cond)
    return ConditionPlan(_check_grid_levels(out, table), added)


def resolve_conditions(
    conditions: Iterable[str | Condition] | None = None,
    *,
    joint: bool = False,
    grid: Table | None = None,
) -> list[Condition]:
    """Validate and order the conditions of a run; ``clean`` always comes first.

    ``conditions=None`` means clean + every registered image operator at every severity of the grid
    + every registered text operator (54 states by default); ``joint=True`` adds the paper's 18
    joint conditions.  Explicit ids may include any ``joint/<image op>+<text op>/s<N>`` pair; its
    image and text parts are added (before it) when not listed, since additivity needs them.
    Unknown ids raise :class:`ConfigError` naming the id, the closest valid ids, and the valid
    forms; so does a grid level of the chosen conditions that its operator rejects (a typo or an
    out-of-range value), before any query is processed.
    """
    return plan_conditions(conditions, joint=joint, grid=grid).conditions


_CHECKED_LEVELS: set[tuple[str, int, int, str]] = set()


def _check_grid_levels(conds: list[Condition], table: Table) -> list[Condition]:
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
            raise ConfigError(f"severity grid entry for img/{op}/s{sev} is invalid: {exc}", param="grid") from None
        _CHECKED_LEVELS.add(memo)
    return conds
