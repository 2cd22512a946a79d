"""Condition groups: the columns of the paper's table, each the mean over its conditions.

* ``group:all``                   every corrupted condition (everything but ``clean``)
* ``group:img/<primitive>/s<N>``  the image conditions at severity N whose operator belongs to the
                                  primitive (degrade, transform, remove, add:
                                  :data:`snapbench.conditions.IMAGE_PRIMITIVES`)
* ``group:txt``                   the text conditions
* ``group:joint``                 the joint image+text conditions

A group value is the unweighted mean of its conditions' values (a mean of drops for a delta), so
every condition counts once whatever its number of queries.  Only groups with at least one
condition exist; an image operator outside the built-in taxonomy counts in ``group:all`` only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..conditions import IMAGE_PRIMITIVES, parse_condition

__all__ = ["GROUP_ALL", "condition_groups", "group_matrix", "group_means"]

GROUP_ALL = "group:all"
_PRIMITIVE_OF = {op: prim for prim, ops in IMAGE_PRIMITIVES.items() for op in ops}


def condition_groups(conditions: Sequence[str]) -> dict[str, list[int]]:
    """``{group id: positions in conditions}`` for the corrupted ``conditions`` (``clean`` is skipped).

    Order: ``group:all``, then the image groups by primitive (taxonomy order) and severity, then
    ``group:txt`` and ``group:joint``."""
    groups: dict[str, list[int]] = {GROUP_ALL: []}
    img: dict[tuple[int, int], list[int]] = {}
    txt: list[int] = []
    joint: list[int] = []
    prims = list(IMAGE_PRIMITIVES)
    for i, cid in enumerate(conditions):
        c = parse_condition(cid)
        if c.kind == "clean":
            continue
        groups[GROUP_ALL].append(i)
        if c.kind == "image" and c.image_operator in _PRIMITIVE_OF:
            img.setdefault((prims.index(_PRIMITIVE_OF[c.image_operator]), int(c.severity)), []).append(i)
        elif c.kind == "text":
            txt.append(i)
        elif c.kind == "joint":
            joint.append(i)
    for (p, s), idx in sorted(img.items()):
        groups[f"group:img/{prims[p]}/s{s}"] = idx
    if txt:
        groups["group:txt"] = txt
    if joint:
        groups["group:joint"] = joint
    if not groups[GROUP_ALL]:
        del groups[GROUP_ALL]
    return groups


def group_matrix(groups: dict[str, list[int]], n_conditions: int) -> np.ndarray:
    """(n_conditions, G) matrix whose product with per-condition columns gives the group means."""
    out = np.zeros((n_conditions, len(groups)), dtype=np.float64)
    for g, idx in enumerate(groups.values()):
        out[idx, g] = 1.0 / len(idx)
    return out


def group_means(x: np.ndarray, groups: dict[str, list[int]], axis: int = -1) -> np.ndarray:
    """Means over each group's entries of ``x`` along ``axis`` (of length n_conditions), which is
    replaced by one entry per group.  An undefined condition (NaN) makes only its own groups NaN
    (a plain matrix product would spread it to every group, 0 * NaN = NaN)."""
    x = np.asarray(x, dtype=np.float64)
    last = axis in (-1, x.ndim - 1)
    # the condition axis as the contracted axis of a matrix product, without copying x
    y = x if last else np.moveaxis(x, axis, -2)
    m = group_matrix(groups, y.shape[-1] if last else y.shape[-2])
    # np.matmul with a transposed (non-C-contiguous) left operand of a stack skips BLAS: ~6x slower
    prod = (lambda v, w: v @ w) if last else (lambda v, w: np.matmul(np.ascontiguousarray(w.T), v))
    bad = np.isnan(y)
    if bad.any():
        out = prod(np.where(bad, 0.0, y), m)
        out[prod(bad.astype(np.float64), (m > 0).astype(np.float64)) > 0] = np.nan
    else:
        out = prod(y, m)
    return out if last else np.moveaxis(out, -2, axis)
