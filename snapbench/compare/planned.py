"""Which conditions each target is compared on: the same plan, read on different sides of the query.

A run evaluates the conditions it planned (``--conditions``, joint or not, the severity grid, the
released variants) on the sides of the query its modes read: a text-only encoder evaluates no image
or joint condition (``snapbench run`` leaves them out, and records their ids in run.json
``conditions_left_out``).  Such a run is the same experiment as an image+text run of the same plan:
the models are compared on the conditions every one of them has, and the others are named (a
warning and a note).  Runs whose plans really differ (other ``--conditions``, ``--no-joint``, other
released variants) are refused.

Per model and target: C = the target's conditions (its report).  Its plan P is known for

* every kind of condition (clean, image, text, joint) when run.json records ``conditions_left_out``:
  P = C + the conditions left out;
* otherwise (an image+text run, a run of an older snapbench, an evaluate report file) for the kinds
  its modes can read -- image when one of its targets reads the query image, text likewise, joint
  when both -- and the kinds C holds: P = C there.

The plan of each kind is that of the first model that knows the kind; every other model that knows
the kind must hold the same conditions of it.  Kinds no model evaluated are not compared: they add
no number to the comparison (two text-only runs, of generated and of released variants, plan other
image conditions and compare the same text ones).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.conditions import KIND_SIDES, KINDS, parse_condition
from ..core.targets import MODES, PATHS, query_sides
from .inputs import set_diff
from .sources import ModelSource

__all__ = ["TargetConditions", "compared_conditions", "targets_query_sides"]


@dataclass
class TargetConditions:
    """The conditions of one target every model has (the first model's order, clean first), the
    conditions of each model left out of the comparison, and a warning naming them (or ``None``)."""

    target: str
    conditions: list[str]
    left_out: dict[str, list[str]]
    warning: str | None = None


def targets_query_sides(targets: Sequence[str]) -> frozenset[str]:
    """The sides of the query (``image``, ``text``) the targets read: a mode its paths' query sides;
    MOOR, a fusion baseline or an unknown target every path."""
    return query_sides({p for t in targets for p in MODES.get(t, PATHS)})


def _kind(cid: str) -> str:
    return parse_condition(cid).kind


@dataclass
class _Plan:
    source: ModelSource
    conditions: list[str]
    planned: dict[str, set[str]]  # kind -> planned ids of that kind, for the kinds known
    sides: frozenset[str]


def _plan(source: ModelSource, target: str) -> _Plan:
    conds = list(source.report(target).conditions)
    sides = targets_query_sides(source.targets)
    left = source.run.get("conditions_left_out")
    if isinstance(left, list):
        ids, known = conds + [str(c) for c in left], set(KINDS)
    else:
        ids, known = conds, {k for k in KINDS if KIND_SIDES[k] <= sides} | {_kind(c) for c in conds}
    planned: dict[str, set[str]] = {k: set() for k in known}
    for c in ids:
        if _kind(c) in planned:
            planned[_kind(c)].add(c)
    return _Plan(source, conds, planned, sides)


def _plan_diffs(target: str, plans: list[_Plan]) -> list[str]:
    """'conditions of T2T: B lacks ...' for every model whose plan differs from the plan of a kind's
    first model (grouped per pair of models)."""
    # a kind no model evaluated adds no number to the comparison: plans of it may differ (two
    # text-only runs, one of generated and one of released variants, plan other image conditions)
    evaluated = {_kind(c) for p in plans for c in p.conditions}
    owner: dict[str, _Plan] = {}
    for p in plans:
        for k in p.planned.keys() & evaluated:
            owner.setdefault(k, p)
    out = []
    for p in plans:
        by_owner: dict[int, list[str]] = {}
        for k in p.planned.keys() & evaluated:
            if owner[k] is not p and owner[k].planned[k] != p.planned[k]:
                by_owner.setdefault(id(owner[k]), []).append(k)
        for o in (q for q in plans if id(q) in by_owner):
            kinds = by_owner[id(o)]
            a = sorted(c for k in kinds for c in o.planned[k])
            b = sorted(c for k in kinds for c in p.planned[k])
            out.append(f"conditions of {target}: {set_diff('conditions', o.source.label, a, p.source.label, b)}")
    return out


def _names(sources: Sequence[ModelSource]) -> str:
    return ", ".join(repr(s.name) for s in sources)


def _warning(target: str, common: list[str], plans: list[_Plan], left: dict[str, list[str]]) -> str:
    """'T2T: compared on the 9 conditions every model has; ...' naming what was left out, for whom and why."""
    groups: dict[tuple[str, ...], list[ModelSource]] = {}
    for p in plans:
        if left.get(p.source.name):
            groups.setdefault(tuple(left[p.source.name]), []).append(p.source)
    parts = []
    for ids, who in groups.items():
        kinds = "/".join(k for k in KINDS if any(_kind(c) == k for c in ids))
        parts.append(f"{len(ids)} {kinds} condition(s) of {_names(who)} (e.g. {', '.join(ids[:3])})")
    lacking = [p for p in plans if not left.get(p.source.name)]
    why = []
    for p in lacking:
        unread = sorted({"image", "text"} - p.sides)
        why.append(f"{p.source.name!r} evaluated none of them" + (
            f" (no mode of its run reads the query {' or the query '.join(unread)})" if unread else ""))
    counts = [f"{sum(_kind(c) == k for c in common)} {k}" for k in KINDS[1:] if any(_kind(c) == k for c in common)]
    return (f"{target}: compared on the {len(common)} conditions every model has (clean, {', '.join(counts)}); "
            f"left out: {'; '.join(parts)} -- {'; '.join(why)}")


def compared_conditions(sources: Sequence[ModelSource], target: str) -> tuple[TargetConditions, list[str]]:
    """The conditions of ``target`` the models are compared on, and the differences of their
    condition plans (texts for the refusal; empty when the plans agree)."""
    plans = [_plan(s, target) for s in sources]
    diffs = _plan_diffs(target, plans)
    shared = set(plans[0].conditions).intersection(*(p.conditions for p in plans[1:]))
    common = [c for c in plans[0].conditions if c in shared]
    left = {p.source.name: [c for c in p.conditions if c not in shared] for p in plans}
    left = {n: ids for n, ids in left.items() if ids}
    out = TargetConditions(target, common, left)
    if diffs:
        return out, diffs
    if len(common) < 2:
        return out, [f"conditions of {target}: no corrupted condition is in every run ("
                     + "; ".join(f"{p.source.label} has {len(p.conditions) - 1}" for p in plans) + ")"]
    if left:
        out.warning = _warning(target, common, plans, left)
    return out, []
