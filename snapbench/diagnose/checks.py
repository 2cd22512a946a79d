"""Query-set checks for benchmark builders: the reasons an operator would skip a query, or a record
would fail the paper's construction filters, before any corruption is run.

* ``entity_missing``: the record's entity is not in its question (or, without an entity, the
  question has no candidate word) -- the entity finder of the text operators
  (:func:`snapbench.corruptions.entity.find_entity`) fails, so all eight text conditions would be skipped;
* ``few_content_tokens``: questions with fewer than two content tokens (the paper's filter);
* ``duplicate_images``: query images whose files are byte-identical;
* ``near_duplicate_images``: query images whose 64-bit perceptual hashes are at most
  ``near_duplicate_bits`` apart (and that are not all byte-identical);
  both across queries: the variants of one query in a 'snapbench corrupt' output (which share or
  resemble its image by design) are one query, listed by its first variant;
* ``small_images``: images whose shorter side is below ``min_side`` pixels;
* ``unreadable_images``: image files that are missing, cannot be read, are too large or cannot be
  decoded; each entry's ``problem`` says which (also listed as skips, with the full reason).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.errors import EntityNotFoundError
from ..corruptions.entity import find_entity
from .detect import QueryResult
from .thresholds import is_flagged

__all__ = ["entity_problem", "run_checks"]


def entity_problem(question: str, entity: str | None) -> str | None:
    """Why the text operators could not find the entity of ``question`` (``None`` when they can)."""
    try:
        find_entity(question, entity)
    except EntityNotFoundError as exc:
        return str(exc)
    return None


def _near_duplicate_pairs(hashes: Sequence[int], max_bits: int, *, block: int = 2048) -> list[tuple[int, int]]:
    """Index pairs ``(i, j)``, ``i < j``, of 64-bit hashes at most ``max_bits`` bits apart.

    Exact all-pairs comparison in blocks (XOR + popcount on uint64): ~n²/2 comparisons, a few seconds
    for 50,000 images."""
    h = np.array([x & 0xFFFFFFFFFFFFFFFF for x in hashes], dtype=np.uint64)
    pairs: list[tuple[int, int]] = []
    for a in range(0, h.size, block):
        rows = h[a:a + block]
        dist = np.bitwise_count(rows[:, None] ^ h[None, a:])  # only columns >= a: each pair once
        ii, jj = np.nonzero(dist <= max_bits)
        keep = jj + a > ii + a
        pairs.extend(zip((ii[keep] + a).tolist(), (jj[keep] + a).tolist()))
    return pairs


def _hash_groups(n: int, pairs: Sequence[tuple[int, int]]) -> list[list[int]]:
    """Connected groups (size >= 2) of ``n`` items linked by ``pairs`` (union-find), each sorted,
    ordered by their first item."""
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j in pairs:
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    return sorted((g for g in groups.values() if len(g) > 1), key=lambda g: g[0])


def _ids(results: Sequence["QueryResult"], idx: Sequence[int]) -> list[str]:
    return [results[i].id for i in idx]


def _source(r: "QueryResult") -> str:
    """The query a record stands for: a variant of 'snapbench corrupt' output carries its source id."""
    return str(r.record.tags.get("source_id", r.id))


def _across_queries(results: Sequence["QueryResult"], idx: Sequence[int]) -> list[int] | None:
    """A duplicate group as it matters: one record per source query (the first), ``None`` when every
    record is a variant of one query (an image variant of a text condition is its query's image)."""
    firsts: dict[str, int] = {}
    for i in idx:
        firsts.setdefault(_source(results[i]), i)
    return list(firsts.values()) if len(firsts) > 1 else None


def run_checks(results: Sequence["QueryResult"], thresholds: dict[str, dict[str, float]]) -> dict[str, Any]:
    """The query-set checks over diagnosed queries: ``{check: {"rule", "count", "ids" | "groups"}}``."""
    from .text import _few_content_tokens_score

    min_side = int(thresholds["checks"]["min_side"])
    bits = int(thresholds["checks"]["near_duplicate_bits"])
    min_tokens = thresholds["few_content_tokens"]["threshold"]
    entity_missing = [{"id": r.id, "reason": why} for r in results if r.record.question is not None
                      and (why := entity_problem(r.record.question, r.record.entity)) is not None]
    # the detector's own score and flagged side (diagnose.thresholds.DETECTORS), over the whole set
    few = [r.id for r in results if r.record.question is not None
           and is_flagged("few_content_tokens", _few_content_tokens_score(r.record.question), thresholds)]
    small = [{"id": r.id, "width": r.width, "height": r.height} for r in results
             if r.width is not None and r.height is not None and min(r.width, r.height) < min_side]
    with_img = [i for i, r in enumerate(results) if r.digest is not None]
    by_digest: dict[str, list[int]] = {}
    for i in with_img:
        by_digest.setdefault(results[i].digest or "", []).append(i)
    # variants of one query (corrupt's output) sharing or resembling its image are not duplicates
    dups = [_ids(results, a) for g in by_digest.values() if len(g) > 1 and (a := _across_queries(results, g))]
    pairs = _near_duplicate_pairs([results[i].phash or 0 for i in with_img], bits)
    near = [[with_img[k] for k in g] for g in _hash_groups(len(with_img), pairs)]
    near = [_ids(results, a) for g in near if len({results[i].digest for i in g}) > 1
            and (a := _across_queries(results, g)) and len({results[i].digest for i in a}) > 1]
    unreadable = [{"id": r.id, "problem": r.image_problem or "cannot be decoded", "reason": r.image_skip}
                  for r in results if r.image_skip is not None]
    return {
        "entity_missing": {"rule": "the text operators' entity finder finds no entity in the question",
                           "count": len(entity_missing), "ids": entity_missing},
        "few_content_tokens": {"rule": f"fewer than {min_tokens:g} content tokens", "count": len(few), "ids": few},
        "duplicate_images": {"rule": "byte-identical image files", "count": len(dups), "groups": dups},
        "near_duplicate_images": {"rule": f"perceptual hashes at most {bits} of 64 bits apart",
                                  "count": len(near), "groups": near},
        "small_images": {"rule": f"shorter side below {min_side} px", "count": len(small), "ids": small},
        "unreadable_images": {"rule": "the image file is missing, cannot be read, is too large or cannot be decoded", "count": len(unreadable),
                              "ids": unreadable},
    }
