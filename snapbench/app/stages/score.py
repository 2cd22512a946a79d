"""Stage 5, score: where each target's scores come from, per condition, without ever holding Q x N.

A *target* is a retrieval mode (the weighted sum of its paths: :func:`snapbench.core.targets.compose`), MOOR, or
a fixed-fusion baseline.  :func:`score_targets` gives, for each target, a function of the condition
returning its scores as the evaluator consumes them: row blocks ``fn(r0, r1) -> (r1 - r0) x N`` for a
gallery in memory, or an iterator factory of ``(offset, Q x shard)`` column chunks for a sharded one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...core.conditions import Condition
from ...core.targets import DEFAULT_RUN_BASELINES, PATH_SIDES, baseline_target, compose
from ...core.targets import MODES as MODE_WEIGHTS
from ...core.vectors import l2_normalize
from .gallery import ShardedArray
from .plan import image_source, text_source

__all__ = ["BlockScores", "Scores", "score_targets"]


class BlockScores:
    """A Q x N score matrix computed on demand for row slices: ``fn(r0, r1) -> (r1 - r0) x N``."""

    def __init__(self, fn: Callable[[int, int], np.ndarray], shape: tuple[int, int]):
        self.fn, self.shape = fn, shape

    def __getitem__(self, rows: slice) -> np.ndarray:
        r0, r1, step = rows.indices(self.shape[0])
        if step != 1:
            raise ValueError("BlockScores supports contiguous row slices only")
        return self.fn(r0, r1)


@dataclass
class Scores:
    """Each target's scores per condition (module docstring), whether they come in gallery shards, and
    MOOR's mean text share per condition (filled as MOOR's conditions are scored)."""

    targets: list[tuple[str, Callable[[Condition], Any]]]
    sharded: bool
    shares: dict[str, float] = field(default_factory=dict)


class _Paths:
    """The four cosine paths of the kept queries against the gallery, normalised once per source."""

    def __init__(self, gallery: Mapping[str, Any], q_emb: Mapping[tuple[str, str], np.ndarray], keep: np.ndarray) -> None:
        self.gallery, self.q_emb, self.keep = gallery, q_emb, keep
        self.sharded = any(isinstance(arr, ShardedArray) for arr in gallery.values())
        self.g_norm = {} if self.sharded else {side: l2_normalize(arr) for side, arr in gallery.items()}
        self.q_norm: dict[tuple[str, str], np.ndarray] = {}

    def query_of(self, cond: Condition, path: str) -> np.ndarray:
        side = PATH_SIDES[path][0]
        key = (side, image_source(cond) if side == "image" else text_source(cond))
        if key not in self.q_norm:
            self.q_norm[key] = l2_normalize(np.asarray(self.q_emb[key])[self.keep])
        return self.q_norm[key]

    def block(self, cond: Condition, path: str, r0: int, r1: int) -> np.ndarray:
        return self.query_of(cond, path)[r0:r1] @ self.g_norm[PATH_SIDES[path][1]].T

    def mode(self, mode: str, cond: Condition) -> Any:
        """A mode's scores: row blocks, or (sharded gallery) all queries against one shard at a time."""
        weights = MODE_WEIGHTS[mode]
        if not self.sharded:
            return lambda r0, r1: compose(mode, {p: self.block(cond, p, r0, r1) for p in weights})
        sides = sorted({PATH_SIDES[p][1] for p in weights})

        def chunks() -> Iterator[tuple[int, np.ndarray]]:
            for parts in zip(*(self.gallery[side].shards() for side in sides)):
                off = parts[0][0]
                shard = {side: l2_normalize(arr) for side, (_, arr) in zip(sides, parts)}
                yield off, compose(mode, {p: self.query_of(cond, p) @ shard[PATH_SIDES[p][1]].T for p in weights})

        return chunks


def _moor(paths: _Paths, shares: dict[str, float]) -> Callable[[Condition], Any]:
    """MOOR (whitened, Bell-gated fusion of the four paths) fitted on the gallery; records the text share."""
    from ...fusion import MOORIndex

    gallery, q_emb, keep = paths.gallery, paths.q_emb, paths.keep
    if paths.sharded:
        def gallery_pairs() -> Iterator[tuple[np.ndarray, np.ndarray]]:
            for (_, gi), (_, gt) in zip(gallery["image"].shards(), gallery["text"].shards()):
                yield np.asarray(gi), np.asarray(gt)

        index = MOORIndex(keep_gallery=False)  # streams the shards: the whitened gallery is never held
        index.fit(gallery_pairs)
    else:
        index = MOORIndex().fit(gallery["image"], gallery["text"])

    def moor_fn(cond: Condition) -> Any:
        qi = np.asarray(q_emb[("image", image_source(cond))])[keep]
        qt = np.asarray(q_emb[("text", text_source(cond))])[keep]
        if paths.sharded:
            u, res = index.query_vectors(qi, qt)
            shares[cond.id] = float(np.mean(res.text_share))
            return lambda: index.score_chunks(u)
        shares[cond.id] = float(np.mean(index.explain(qi, qt).text_share))
        return lambda r0, r1: index.scores(qi[r0:r1], qt[r0:r1])

    return moor_fn


def _baselines(paths: _Paths) -> list[tuple[str, Callable[[Condition], Any]]]:
    """The fixed-fusion baselines a run computes (:data:`snapbench.core.targets.DEFAULT_RUN_BASELINES`, looked up
    in ``ROW_BASELINES``) over the four paths (row-wise: whole gallery rows)."""
    from ...fusion.baselines import ROW_BASELINES

    out = []
    for name in DEFAULT_RUN_BASELINES:
        def base_fn(cond: Condition, fuse=ROW_BASELINES.get(name)) -> Callable[[int, int], np.ndarray]:
            return lambda r0, r1: fuse([paths.block(cond, p, r0, r1) for p in PATH_SIDES])

        out.append((baseline_target(name), base_fn))
    return out


def score_targets(gallery: Mapping[str, Any], q_emb: Mapping[tuple[str, str], np.ndarray], keep: np.ndarray,
                  modes: list[str], moor_ok: bool, say: Callable[[str], None]) -> Scores:
    """The :class:`Scores` of the modes, then MOOR and the baselines when ``moor_ok``.

    ``gallery``: side -> embeddings (array or :class:`~.gallery.ShardedArray`); ``q_emb``: (side, source)
    -> one row per dataset query; ``keep``: the rows evaluated.
    """
    paths = _Paths(gallery, q_emb, keep)
    scores = Scores([(m, (lambda mm: lambda c: paths.mode(mm, c))(m)) for m in modes], paths.sharded)
    if moor_ok:
        scores.targets.append(("MOOR", _moor(paths, scores.shares)))
        if paths.sharded:
            say(f"fixed-fusion baselines ({', '.join(DEFAULT_RUN_BASELINES)}) are not computed on a sharded gallery: "
                "they normalise whole rows")
        else:
            scores.targets += _baselines(paths)
    return scores
