"""Condition groups: the columns of the paper's table, each the mean over its conditions.

* ``group:all``                   every corrupted condition the target reads (everything but ``clean``
                                  and the conditions that corrupt only a side of the query the mode
                                  does not read: :func:`snapbench.core.targets.target_reads`; T→T's
                                  mean leaves the image conditions out, a joint condition counts)
* ``group:img/<primitive>/s<N>``  the image conditions at severity N whose operator belongs to the
                                  primitive (degrade, transform, remove, add:
                                  :data:`snapbench.core.conditions.IMAGE_PRIMITIVES`)
* ``group:txt``                   the text conditions
* ``group:joint``                 the joint image+text conditions

A group value is the unweighted mean of its conditions' values (a mean of drops for a delta), so
every condition counts once whatever its number of queries.  Only groups with at least one
condition exist; an image operator outside the built-in taxonomy counts in ``group:all`` only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..core.conditions import IMAGE_PRIMITIVES, PRIMITIVE_OF, parse_condition
from ..core.targets import target_reads

__all__ = ["GROUP_ALL", "condition_groups", "exact_group_means", "group_means", "read_columns"]

GROUP_ALL = "group:all"


def condition_groups(conditions: Sequence[str], target: str | None = None) -> dict[str, list[int]]:
    """``{group id: positions in conditions}`` for the corrupted ``conditions`` (``clean`` is skipped);
    with ``target``, ``group:all`` holds only the conditions it reads (:func:`target_reads`), the
    rule of a run's headline mean Δ.

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
        if target is None or target_reads(target, cid):
            groups[GROUP_ALL].append(i)
        if c.kind == "image" and c.image_operator in PRIMITIVE_OF:
            img.setdefault((prims.index(PRIMITIVE_OF[c.image_operator]), int(c.severity)), []).append(i)
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


def read_columns(conditions: Sequence[str], groups: dict[str, list[int]], target: str) -> np.ndarray:
    """Per column (the corrupted ``conditions``, then ``groups`` of them): whether ``target`` reads it --
    a condition by :func:`target_reads`, a group when it reads at least one of its conditions.  A column
    it cannot read cannot move it (T→T under an image condition, or ``group:img/...``): such columns are
    outside the families of adjusted p-values and shown as "–" in the Δ tables."""
    read = [target_reads(target, c) for c in conditions]
    return np.array(read + [any(read[i] for i in idx) for idx in groups.values()], dtype=bool)


def group_means(x: np.ndarray, groups: dict[str, list[int]], axis: int = -1) -> np.ndarray:
    """Means over each group's entries of ``x`` along ``axis`` (of length n_conditions), which is
    replaced by one entry per group.

    Each group is summed in one fixed order (its conditions' order), by elementwise additions: two
    equal slices of ``x`` (two models with the same values) give bit-equal means wherever they sit
    (a BLAS matrix product need not: its rounding depends on the row's place in the blocks), and an
    undefined condition (NaN) makes only its own groups NaN.  For point estimates that must not
    depend on the order of the conditions either, see :func:`exact_group_means`."""
    x = np.asarray(x, dtype=np.float64)
    xs = np.moveaxis(x, axis, 0)  # a view: xs[i] is condition i of every other index
    out = np.empty((len(groups),) + xs.shape[1:], dtype=np.float64)
    for g, idx in enumerate(groups.values()):
        acc = out[g]
        np.copyto(acc, xs[idx[0]])
        for i in idx[1:]:
            acc += xs[i]
        acc /= len(idx)
    return np.moveaxis(out, 0, axis)


def exact_group_means(x: np.ndarray, groups: dict[str, list[int]]) -> np.ndarray:
    """:func:`group_means` along the last axis, each sum correctly rounded (:func:`math.fsum`): the
    same values give the same mean in any order, so two models whose conditions hold the same values
    in another order (equal scores) tie exactly.  For the point estimates (models x conditions)."""
    x = np.asarray(x, dtype=np.float64)
    flat = x.reshape(int(np.prod(x.shape[:-1])), x.shape[-1])
    out = np.empty((flat.shape[0], len(groups)), dtype=np.float64)
    for g, idx in enumerate(groups.values()):
        for r in range(flat.shape[0]):
            out[r, g] = math.fsum(flat[r, idx].tolist()) / len(idx)
    return out.reshape(x.shape[:-1] + (len(groups),))
